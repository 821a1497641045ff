// Object storage on the agent side: where a job's S3 settings and credentials come from, which endpoints an agent
// may reach with whose keys, and the per-job preflight (docs/object-storage.md). DLIO's file discovery over a bucket
// is agent/dataset_files.h's, as over a folder.
//
// Credentials and endpoint, first found wins, per setting: the job's storage.storage_options; the file named by
// `dlio-agent --s3-credentials FILE` (KEY=VALUE lines: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL,
// AWS_REGION, S3_ENDPOINT_URIS; '#' comments; the file scripts/ceph-rgw.sh writes is one); the agent's environment
// (the same names). The region defaults to us-east-1.
// Many endpoints (storage/s3/endpoints.h): the agent's S3_ENDPOINT_URIS (comma-separated, as the MLCommons fork reads
// it) wins over the job's storage.storage_options.endpoint_url (a list, or comma-separated), which wins over the
// agent's AWS_ENDPOINT_URL: the fork lets S3_ENDPOINT_URIS replace the YAML's endpoint, and NVIDIA's v3.0 runs set
// it beside files naming one endpoint (the agent logs it when it replaces the job's). The agent's own endpoints
// (where its own credentials may go) are its AWS_ENDPOINT_URL and every S3_ENDPOINT_URIS entry. The secret stays in S3Secret (storage/s3/client.h): never logged, never in a message.
// The endpoint rule (CheckS3Endpoints), endpoints compared normalised (NormalizeS3Endpoint):
//  - the agent's own credentials (its key id or its secret) go only to its own endpoint (its AWS_ENDPOINT_URL) or to
//    one listed by `dlio-agent --s3-allow-endpoint`; a job naming any other endpoint brings its own access key id
//    and secret, or is refused;
//  - with an --s3-allow-endpoint list, the agent reaches only its own endpoint and the listed ones, whoever's keys
//    the job brings.
// A refusal is one line naming the endpoint, the rule and the option that would allow it; it comes before any
// connection is made. A redirect (301/302/307/308, e.g. AIStore's proxy naming the target node) is followed only to
// an endpoint the same rule allows (S3Config::redirect_check, storage/s3/client.h), re-signed for that host.
// Preflight (once per job on every agent, before its first phase touches the bucket): the bucket answers a HEAD with
// these credentials, and for reading, the first data object answers a HEAD; a failure is one line naming the
// endpoint, the bucket and the access key id.
// Thread-safety: pure functions; S3AgentDefaults is a value.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "job/workload_spec.h"
#include "storage/s3/client.h"

namespace dlio {

struct S3AgentDefaults {
  std::string endpoint;
  std::vector<std::string> endpoints;  // S3_ENDPOINT_URIS, split (storage/s3/endpoints.h); empty = none
  std::string region;
  std::string access_key_id;
  S3Secret secret_access_key;
  // `--s3-allow-endpoint`, normalised (NormalizeS3Endpoint); empty = no list (see the endpoint rule above).
  std::vector<std::string> allowed_endpoints;
};

// Reads `file` ("" = none) and fills what it leaves empty from the environment; `allow` (--s3-allow-endpoint) is
// normalised into allowed_endpoints. Errors name the file and line (never a value), or the flag and the endpoint.
absl::StatusOr<S3AgentDefaults> LoadS3Defaults(const std::string& file, const std::vector<std::string>& allow = {});

// `url` in the form endpoints are compared in: lower-case scheme (http or https) and host, an explicit port (80 or
// 443 by default), the path without trailing '/' ("HTTP://Rgw.Example/" -> "http://rgw.example:80"). An error
// naming the endpoint when it is not http(s)://host[:port][/path] (no user info, query or fragment; host letters,
// digits, '-', '.', or a bracketed IPv6 address).
absl::StatusOr<std::string> NormalizeS3Endpoint(absl::string_view url);

// One endpoint a job would reach, and whether anything of the agent's own credentials (key id or secret) would be
// sent there.
struct S3EndpointUse {
  std::string endpoint;
  bool agent_credentials = false;
};

// The endpoint rule (see above) over every endpoint a job would reach: OK, or the refusal of the first one that
// breaks it (FailedPrecondition; InvalidArgument for an endpoint that does not parse).
absl::Status CheckS3Endpoints(const std::vector<S3EndpointUse>& uses, const S3AgentDefaults& agent);

// The bucket configuration of an s3 job: the job's storage options over the agent's defaults, its endpoints and
// dlio_ext.s3_endpoint_policy (`agent_index`: this agent's index among the job's, for per_agent). An error (naming
// the missing setting and where it can come from) when the endpoint or the credentials are nowhere, or the endpoint
// rule's refusal (CheckS3Endpoints) of the first endpoint that breaks it.
absl::StatusOr<std::shared_ptr<const S3Config>> S3ConfigFor(const WorkloadSpec& spec, const S3AgentDefaults& d,
                                                            int64_t agent_index = 0);

// The preflight (see above), on every endpoint of the config. `first_object`: a key to HEAD ("" = none, e.g.
// before generation).
absl::Status S3Preflight(const std::shared_ptr<const S3Config>& config, const std::string& first_object);

}  // namespace dlio
