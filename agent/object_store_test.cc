// Where an S3 job's endpoint and credentials come from (agent/object_store.h): the job, the agent's file, the
// environment; the file's errors, which name the file and line but never a value; and the endpoint rule (which
// endpoints get the agent's own credentials, and which the agent reaches at all).
#include "agent/object_store.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
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
                                  "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, S3_ENDPOINT_URIS, "
                                  "AWS_REGION)");
  EXPECT_EQ(LoadS3Defaults("/nonexistent/creds").status().message(), "--s3-credentials: cannot read '/nonexistent/creds'");
  WorkloadSpec spec;
  spec.storage_type = "s3";
  spec.storage_root = "bkt";
  EXPECT_EQ(S3ConfigFor(spec, S3AgentDefaults{}).status().message(),
            "storage.storage_options.endpoint_url: no S3 endpoint (set it in the job, in the agent's --s3-credentials "
            "file as AWS_ENDPOINT_URL or S3_ENDPOINT_URIS, or in the agent's environment as AWS_ENDPOINT_URL or "
            "S3_ENDPOINT_URIS)");
}

// Endpoints are compared in one form: scheme and host lower case, the default port explicit, no trailing '/'.
TEST(S3Endpoints, NormalisedForComparison) {
  EXPECT_EQ(*NormalizeS3Endpoint("HTTP://Rgw.Example/"), "http://rgw.example:80");
  EXPECT_EQ(*NormalizeS3Endpoint("https://rgw.example"), "https://rgw.example:443");
  EXPECT_EQ(*NormalizeS3Endpoint("http://127.0.0.1:8080//"), "http://127.0.0.1:8080");
  EXPECT_EQ(*NormalizeS3Endpoint("http://[::1]:9000"), "http://[::1]:9000");
  EXPECT_EQ(*NormalizeS3Endpoint("https://[FE80::1]"), "https://[fe80::1]:443");
  EXPECT_EQ(*NormalizeS3Endpoint("http://h:80/Gw/"), "http://h:80/Gw");
  // A user-info part is refused and its secret never repeated in the error.
  const absl::StatusOr<std::string> userinfo = NormalizeS3Endpoint("http://KEY:SECRET@rgw.example/");
  ASSERT_FALSE(userinfo.ok());
  EXPECT_EQ(userinfo.status().message().find("SECRET"), std::string::npos) << userinfo.status();
  EXPECT_EQ(NormalizeS3Endpoint("ftp://h").status().message(),
            "s3 endpoint 'ftp://h': not http:// or https:// (expected http(s)://host[:port][/path])");
  // What could make a URL reach another host than the one it seems to name is refused.
  for (const char* bad : {"http://", "http://own@evil", "http://own\\@evil", "http://h:0", "http://h:65536",
                          "http://h:99999999999", "http://h:", "http://h:8o", "http://h?x=1", "http://h/p?x",
                          "http://h#f", "http://[::1", "http://[]:80", "http://[::1]x", "http://h%2e", "http://h /"}) {
    absl::StatusOr<std::string> n = NormalizeS3Endpoint(bad);
    EXPECT_FALSE(n.ok()) << bad << " -> " << *n;
    if (!n.ok()) {
      EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    }
  }
}

S3AgentDefaults Agent(const std::string& endpoint, std::vector<std::string> allowed = {}) {
  S3AgentDefaults d;
  d.endpoint = endpoint;
  d.access_key_id = "AGENTKEY";
  d.secret_access_key = S3Secret("agentsecret");
  d.allowed_endpoints = std::move(allowed);
  return d;
}

WorkloadSpec S3Job(const std::string& endpoint) {
  WorkloadSpec spec;
  spec.storage_type = "s3";
  spec.storage_root = "bkt";
  spec.s3_endpoint_url = endpoint;
  return spec;
}

// The agent's own credentials go to its own endpoint only (however the job spells it); a job naming another endpoint
// brings its own key id and secret, or is refused before any connection, naming the endpoint, the rule and the flag.
TEST(S3Endpoints, AgentCredentialsGoOnlyToTheAgentsOwnEndpoint) {
  const S3AgentDefaults agent = Agent("http://rgw.local:8080");
  absl::StatusOr<std::shared_ptr<const S3Config>> c = S3ConfigFor(S3Job(""), agent);
  ASSERT_TRUE(c.ok()) << c.status();
  c = S3ConfigFor(S3Job("http://RGW.local:8080/"), agent);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->access_key_id, "AGENTKEY");

  const std::string refusal =
      "s3 endpoint http://evil.example:80 is not this agent's own (AWS_ENDPOINT_URL http://rgw.local:8080): an "
      "agent's own credentials go only to its own endpoint or to one it allows; give the job its own "
      "storage.storage_options.access_key_id and secret_access_key, or start the agent with --s3-allow-endpoint "
      "http://evil.example:80";
  c = S3ConfigFor(S3Job("http://evil.example"), agent);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(), refusal);
  // Another port of the same host is another endpoint.
  EXPECT_FALSE(S3ConfigFor(S3Job("http://rgw.local:8081"), agent).ok());
  // Half of the pair from the agent is still the agent's: its key id with the job's secret, or the agent's key id
  // named by the job without a secret (which borrows the agent's secret).
  WorkloadSpec half = S3Job("http://evil.example");
  half.s3_secret_access_key = "jobsecret";
  EXPECT_EQ(S3ConfigFor(half, agent).status().message(), refusal);
  half.s3_secret_access_key = "";
  half.s3_access_key_id = "AGENTKEY";
  EXPECT_EQ(S3ConfigFor(half, agent).status().message(), refusal);
  // The job's own pair goes anywhere (no --s3-allow-endpoint list).
  WorkloadSpec own = S3Job("http://evil.example");
  own.s3_access_key_id = "JOBKEY";
  own.s3_secret_access_key = "jobsecret";
  c = S3ConfigFor(own, agent);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->access_key_id, "JOBKEY");
  EXPECT_EQ((*c)->endpoint, "http://evil.example");
  // An agent without an endpoint of its own sends its credentials nowhere but where it allows.
  EXPECT_EQ(S3ConfigFor(S3Job("http://rgw.local:8080"), Agent("")).status().message(),
            "s3 endpoint http://rgw.local:8080 is not this agent's own (this agent has no AWS_ENDPOINT_URL): an "
            "agent's own credentials go only to its own endpoint or to one it allows; give the job its own "
            "storage.storage_options.access_key_id and secret_access_key, or start the agent with "
            "--s3-allow-endpoint http://rgw.local:8080");
  EXPECT_TRUE(S3ConfigFor(S3Job("http://rgw.local:8080"), Agent("", {"http://rgw.local:8080"})).ok());
}

// --s3-allow-endpoint: the agent's credentials may go to the listed endpoints too, and no endpoint outside the list
// (and the agent's own) is reached, whoever's keys the job brings.
TEST(S3Endpoints, AnAllowListIsAllTheAgentReaches) {
  const S3AgentDefaults agent = Agent("http://rgw.local:8080", {"https://backup.local:443", "http://[::1]:9000"});
  EXPECT_TRUE(S3ConfigFor(S3Job("https://BACKUP.local/"), agent).ok());  // the agent's keys to a listed endpoint
  EXPECT_TRUE(S3ConfigFor(S3Job("http://[::1]:9000"), agent).ok());
  EXPECT_TRUE(S3ConfigFor(S3Job(""), agent).ok());                      // its own endpoint stays allowed
  WorkloadSpec own = S3Job("http://evil.example:9");
  own.s3_access_key_id = "JOBKEY";
  own.s3_secret_access_key = "jobsecret";
  absl::StatusOr<std::shared_ptr<const S3Config>> c = S3ConfigFor(own, agent);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(),
            "s3 endpoint http://evil.example:9 is neither this agent's own (AWS_ENDPOINT_URL http://rgw.local:8080) "
            "nor in its --s3-allow-endpoint list (https://backup.local:443, http://[::1]:9000): an agent with that "
            "list reaches no other endpoint, whoever's keys the job brings; to allow it, start the agent with "
            "--s3-allow-endpoint http://evil.example:9");
}

// A redirect's target passes the same rule as the endpoint (the client asks S3Config::redirect_check before a hop):
// the agent's own and its listed endpoints are fine, another host is refused naming it and the flag.
TEST(S3Endpoints, RedirectTargetsPassTheSameRule) {
  const S3AgentDefaults agent = Agent("http://rgw.local:8080", {"http://proxy.local:8081"});
  absl::StatusOr<std::shared_ptr<const S3Config>> c = S3ConfigFor(S3Job("http://proxy.local:8081"), agent);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE((*c)->redirect_check);
  EXPECT_TRUE((*c)->redirect_check("http://RGW.local:8080").ok());
  EXPECT_TRUE((*c)->redirect_check("http://proxy.local:8081").ok());
  const absl::Status refused = (*c)->redirect_check("http://target.local:9000");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(),
            "s3 endpoint http://target.local:9000 is neither this agent's own (AWS_ENDPOINT_URL "
            "http://rgw.local:8080) nor in its --s3-allow-endpoint list (http://proxy.local:8081): an agent with that "
            "list reaches no other endpoint, whoever's keys the job brings; to allow it, start the agent with "
            "--s3-allow-endpoint http://target.local:9000");
  // Without a list, the agent's own keys do not follow a redirect to another host.
  c = S3ConfigFor(S3Job(""), Agent("http://rgw.local:8080"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE((*c)->redirect_check("http://target.local:9000").ok());
}

// The rule is a function over every endpoint a job would reach: the first that breaks it is the one named.
TEST(S3Endpoints, TheRuleCoversEveryEndpointOfAJob) {
  const S3AgentDefaults agent = Agent("http://rgw.local:8080");
  EXPECT_TRUE(CheckS3Endpoints({}, agent).ok());
  EXPECT_TRUE(CheckS3Endpoints({{"http://rgw.local:8080", true}, {"http://other:1", false}}, agent).ok());
  absl::Status s = CheckS3Endpoints(
      {{"http://rgw.local:8080", true}, {"http://other:1", false}, {"http://third:2", true}, {"http://x:3", true}},
      agent);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), ::testing::StartsWith("s3 endpoint http://third:2 is not this agent's own"));
  EXPECT_EQ(CheckS3Endpoints({{"http://ok:1", false}, {"http://u@h", false}}, agent).code(),
            absl::StatusCode::kInvalidArgument);
  // An agent endpoint that does not parse matches nothing (and the job's endpoint still has to).
  EXPECT_FALSE(CheckS3Endpoints({{"http://a@b", true}}, Agent("http://a@b")).ok());
  EXPECT_THAT(std::string(CheckS3Endpoints({{"http://b", true}}, Agent("http://a@b")).message()),
              ::testing::StartsWith("s3 endpoint http://b:80 is not this agent's own (AWS_ENDPOINT_URL 'http://a@b' "
                                    "does not parse): "));
}

// --s3-allow-endpoint values are normalised (and repeated ones kept once) when the agent starts; one that does not
// parse stops the agent, naming the flag.
TEST(S3Endpoints, AllowListIsReadAtStartNamingTheFlag) {
  absl::StatusOr<S3AgentDefaults> d = LoadS3Defaults("", {"HTTP://A.example/", "http://a.example:80", "https://b"});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->allowed_endpoints, (std::vector<std::string>{"http://a.example:80", "https://b:443"}));
  EXPECT_EQ(LoadS3Defaults("", {"http://ok", "rgw:8080"}).status().message(),
            "--s3-allow-endpoint: s3 endpoint 'rgw:8080': not http:// or https:// (expected "
            "http(s)://host[:port][/path])");
}

// Issue 27 item 1: the job's list of endpoints, the agent's S3_ENDPOINT_URIS (which wins, as in the MLCommons fork),
// AWS_ENDPOINT_URL last; the policy and the agent's index reach the config; every endpoint passes the endpoint rule,
// the agent's S3_ENDPOINT_URIS entries being its own.
TEST(S3ManyEndpoints, TheAgentsListWinsOverTheJobsWhichWinsOverItsEndpoint) {
  S3AgentDefaults d;
  d.endpoint = "http://own:1";
  d.access_key_id = "K";
  d.secret_access_key = S3Secret("s");
  WorkloadSpec spec;
  spec.storage_type = "s3";
  spec.storage_root = "bkt";
  absl::StatusOr<std::shared_ptr<const S3Config>> c = S3ConfigFor(spec, d);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT((*c)->endpoints, ::testing::ElementsAre("http://own:1"));

  d.allowed_endpoints = {"http://a:1", "http://b:2"};
  spec.s3_endpoint_url = "http://a:1,http://b:2/";
  spec.s3_endpoint_policy = "per_agent";
  c = S3ConfigFor(spec, d, 3);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT((*c)->endpoints, ::testing::ElementsAre("http://a:1", "http://b:2"));
  EXPECT_EQ((*c)->endpoint, "http://a:1");
  EXPECT_EQ((*c)->endpoint_policy, S3EndpointPolicy::kPerAgent);
  EXPECT_EQ((*c)->agent_index, 3);
  EXPECT_EQ((*c)->Describe(), "endpoints http://a:1, http://b:2 bucket 'bkt'");

  ::setenv("S3_ENDPOINT_URIS", "http://u1:7, http://u2:8", 1);
  absl::StatusOr<S3AgentDefaults> env = LoadS3Defaults("");
  ::unsetenv("S3_ENDPOINT_URIS");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_THAT(env->endpoints, ::testing::ElementsAre("http://u1:7", "http://u2:8"));
  env->access_key_id = "K";
  env->secret_access_key = S3Secret("s");
  spec.s3_endpoint_policy = "round_robin";
  c = S3ConfigFor(spec, *env);  // the job names a:1 and b:2; the agent's list wins
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT((*c)->endpoints, ::testing::ElementsAre("http://u1:7", "http://u2:8"));
}

TEST(S3ManyEndpoints, EveryEndpointPassesTheRuleAndABadOneIsNamed) {
  S3AgentDefaults d;
  d.endpoint = "http://own:1";
  d.endpoints = {"http://own2:2"};
  d.access_key_id = "K";
  d.secret_access_key = S3Secret("s");
  WorkloadSpec spec;
  spec.storage_type = "s3";
  spec.storage_root = "bkt";
  spec.s3_endpoint_url = "http://own:1,http://own2:2";
  d.endpoints.clear();
  // own2 is not the agent's own without its S3_ENDPOINT_URIS: the agent's credentials may not go there.
  absl::StatusOr<std::shared_ptr<const S3Config>> c = S3ConfigFor(spec, d);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              ::testing::StartsWith("s3 endpoint http://own2:2 is not this agent's own (AWS_ENDPOINT_URL "
                                    "http://own:1): "));
  d.endpoints = {"http://own:1", "http://own2:2"};
  EXPECT_TRUE(S3ConfigFor(spec, d).ok());
  spec.s3_endpoint_policy = "random";
  EXPECT_EQ(S3ConfigFor(spec, d).status().message(),
            "dlio_ext.s3_endpoint_policy: unknown endpoint policy 'random' (allowed: round_robin, per_agent, "
            "per_request)");
  d.endpoints = {"ftp://x:1"};
  spec.s3_endpoint_policy = "round_robin";
  EXPECT_EQ(S3ConfigFor(spec, d).status().message(), "s3 endpoint 'ftp://x:1' must start with http:// or https://");
}

}  // namespace
}  // namespace dlio
