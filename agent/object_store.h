// Object storage on the agent side: where a job's S3 settings and credentials come from, and the per-job preflight
// (docs/object-storage.md). DLIO's file discovery over a bucket is agent/dataset_files.h's, as over a folder.
//
// Credentials and endpoint, first found wins, per setting: the job's storage.storage_options; the file named by
// `dlio-agent --s3-credentials FILE` (KEY=VALUE lines: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL,
// AWS_REGION; '#' comments; the file scripts/ceph-rgw.sh writes is one); the agent's environment (the same names).
// The region defaults to us-east-1. The secret stays in S3Secret (storage/s3/client.h): never logged, never in a message.
// Preflight (once per job on every agent, before its first phase touches the bucket): the bucket answers a HEAD with
// these credentials, and for reading, the first data object answers a HEAD; a failure is one line naming the
// endpoint, the bucket and the access key id.
// Thread-safety: pure functions; S3AgentDefaults is a value.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "job/workload_spec.h"
#include "storage/s3/client.h"

namespace dlio {

struct S3AgentDefaults {
  std::string endpoint;
  std::string region;
  std::string access_key_id;
  S3Secret secret_access_key;
};

// Reads `file` ("" = none) and fills what it leaves empty from the environment. Errors name the file and line
// (never a value).
absl::StatusOr<S3AgentDefaults> LoadS3Defaults(const std::string& file);

// The bucket configuration of an s3 job: the job's storage options over the agent's defaults. An error (naming
// the missing setting and where it can come from) when the endpoint or the credentials are nowhere.
absl::StatusOr<std::shared_ptr<const S3Config>> S3ConfigFor(const WorkloadSpec& spec, const S3AgentDefaults& d);

// The preflight (see above). `first_object`: a key to HEAD ("" = none, e.g. before generation).
absl::Status S3Preflight(const std::shared_ptr<const S3Config>& config, const std::string& first_object);

}  // namespace dlio
