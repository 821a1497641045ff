// Where an S3 job's endpoint and credentials come from (agent/object_store.h): the job, the agent's file, the
// environment; and the file's errors, which name the file and line but never a value.
#include "agent/object_store.h"

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"

namespace dlio {
namespace {

TEST(S3Credentials, FileThenEnvironmentAndTheJobWins) {
  const std::string path = ::testing::TempDir() + "/creds.env";
  std::ofstream(path) << "# from ceph-rgw.sh\nexport AWS_ACCESS_KEY_ID=FILEKEY\nAWS_SECRET_ACCESS_KEY='filesecret'\n"
                         "AWS_ENDPOINT_URL=http://file:1\n";
  ::setenv("AWS_REGION", "eu-1", 1);
  ::setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
  absl::StatusOr<S3AgentDefaults> d = LoadS3Defaults(path);
  ::unsetenv("AWS_REGION");
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->access_key_id, "FILEKEY");  // the file before the environment
  EXPECT_EQ(d->secret_access_key.reveal(), "filesecret");
  EXPECT_EQ(d->region, "eu-1");            // what the file leaves out comes from the environment

  WorkloadSpec spec;
  spec.storage_type = "s3";
  spec.storage_root = "bkt";
  absl::StatusOr<std::shared_ptr<const S3Config>> c = S3ConfigFor(spec, *d);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->endpoint, "http://file:1");
  EXPECT_EQ((*c)->access_key_id, "FILEKEY");
  EXPECT_EQ((*c)->region, "eu-1");

  // A job naming another key id does not borrow the agent's secret.
  spec.s3_access_key_id = "JOBKEY";
  c = S3ConfigFor(spec, *d);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "s3 endpoint http://file:1 bucket 'bkt': no secret key for access key id 'JOBKEY' (storage.storage_options, "
            "the agent's --s3-credentials file, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)");
  spec.s3_secret_access_key = "jobsecret";
  spec.s3_endpoint_url = "https://job:2/";
  c = S3ConfigFor(spec, *d);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->endpoint, "https://job:2");
  EXPECT_EQ((*c)->secret_access_key.reveal(), "jobsecret");
}

TEST(S3Credentials, BadFilesNameTheLineNotTheValue) {
  const std::string path = ::testing::TempDir() + "/bad.env";
  std::ofstream(path) << "AWS_ACCESS_KEY_ID=K\nAWS_SECRET=hunter2\n";
  absl::StatusOr<S3AgentDefaults> d = LoadS3Defaults(path);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "--s3-credentials: " + path + ":2: unknown key 'AWS_SECRET' (allowed: "
                                  "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_REGION)");
  EXPECT_EQ(LoadS3Defaults("/nonexistent/creds").status().message(), "--s3-credentials: cannot read '/nonexistent/creds'");
  WorkloadSpec spec;
  spec.storage_type = "s3";
  spec.storage_root = "bkt";
  EXPECT_EQ(S3ConfigFor(spec, S3AgentDefaults{}).status().message(),
            "storage.storage_options.endpoint_url: no S3 endpoint (set it in the job, in the agent's --s3-credentials "
            "file as AWS_ENDPOINT_URL, or in the agent's environment as AWS_ENDPOINT_URL)");
}

}  // namespace
}  // namespace dlio
