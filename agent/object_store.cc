#include "agent/object_store.h"

#include <cstdlib>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace dlio {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

}  // namespace

absl::StatusOr<S3AgentDefaults> LoadS3Defaults(const std::string& file) {
  S3AgentDefaults d;
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) return absl::NotFoundError(absl::StrCat("--s3-credentials: cannot read '", file, "'"));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      absl::string_view l = absl::StripAsciiWhitespace(line);
      if (l.empty() || l.front() == '#') continue;
      absl::ConsumePrefix(&l, "export ");
      const size_t eq = l.find('=');
      if (eq == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("--s3-credentials: ", file, ":", n, ": expected KEY=VALUE"));
      }
      const std::string key(absl::StripAsciiWhitespace(l.substr(0, eq)));
      std::string value(absl::StripAsciiWhitespace(l.substr(eq + 1)));
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      if (key == "AWS_ACCESS_KEY_ID") d.access_key_id = value;
      else if (key == "AWS_SECRET_ACCESS_KEY") d.secret_access_key = S3Secret(value);
      else if (key == "AWS_ENDPOINT_URL") d.endpoint = value;
      else if (key == "AWS_REGION" || key == "AWS_DEFAULT_REGION") d.region = value;
      else {
        return absl::InvalidArgumentError(absl::StrCat(
            "--s3-credentials: ", file, ":", n, ": unknown key '", key,
            "' (allowed: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_REGION)"));
      }
    }
  }
  if (d.access_key_id.empty()) d.access_key_id = Env("AWS_ACCESS_KEY_ID");
  if (d.secret_access_key.empty()) d.secret_access_key = S3Secret(Env("AWS_SECRET_ACCESS_KEY"));
  if (d.endpoint.empty()) d.endpoint = Env("AWS_ENDPOINT_URL");
  if (d.region.empty()) d.region = Env("AWS_REGION");
  if (d.region.empty()) d.region = Env("AWS_DEFAULT_REGION");
  return d;
}

absl::StatusOr<std::shared_ptr<const S3Config>> S3ConfigFor(const WorkloadSpec& spec, const S3AgentDefaults& d) {
  auto c = std::make_shared<S3Config>();
  c->bucket = spec.storage_root;
  c->endpoint = !spec.s3_endpoint_url.empty() ? spec.s3_endpoint_url : d.endpoint;
  while (!c->endpoint.empty() && c->endpoint.back() == '/') c->endpoint.pop_back();
  c->region = !spec.s3_region.empty() ? spec.s3_region : !d.region.empty() ? d.region : "us-east-1";
  // The key id and its secret come as a pair from one place: a job that names its key id uses its own secret (or,
  // without one, the agent's secret only if the agent's key id is the same).
  if (!spec.s3_access_key_id.empty()) {
    c->access_key_id = spec.s3_access_key_id;
    c->secret_access_key = !spec.s3_secret_access_key.empty()        ? S3Secret(spec.s3_secret_access_key)
                           : d.access_key_id == spec.s3_access_key_id ? d.secret_access_key
                                                                      : S3Secret();
  } else {
    c->access_key_id = d.access_key_id;
    c->secret_access_key = !spec.s3_secret_access_key.empty() ? S3Secret(spec.s3_secret_access_key)
                                                              : d.secret_access_key;
  }
  c->force_path_style = spec.s3_force_path_style;
  c->max_attempts = static_cast<int>(spec.s3_max_attempts);
  if (c->endpoint.empty()) {
    return absl::FailedPreconditionError(
        "storage.storage_options.endpoint_url: no S3 endpoint (set it in the job, in the agent's --s3-credentials "
        "file as AWS_ENDPOINT_URL, or in the agent's environment as AWS_ENDPOINT_URL)");
  }
  if (!absl::StartsWith(c->endpoint, "http://") && !absl::StartsWith(c->endpoint, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("s3 endpoint '", c->endpoint, "' must start with http:// or https://"));
  }
  if (c->access_key_id.empty() || c->secret_access_key.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "s3 ", c->Describe(), ": no ", c->access_key_id.empty() ? "access key id" : "secret key",
        c->access_key_id.empty() ? "" : absl::StrCat(" for access key id '", c->access_key_id, "'"),
        " (storage.storage_options, the agent's --s3-credentials file, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"));
  }
  return std::shared_ptr<const S3Config>(std::move(c));
}

absl::Status S3Preflight(const std::shared_ptr<const S3Config>& config, const std::string& first_object) {
  S3Client client(config);
  const std::string who = absl::StrCat("s3 preflight (", config->Describe(), ", access key id '",
                                       config->access_key_id, "')");
  if (absl::Status s = client.HeadBucket(); !s.ok()) {
    // A HEAD answer has no body: say what its status means.
    std::string why(s.message());
    if (s.code() == absl::StatusCode::kNotFound) why = "the bucket does not exist (storage.storage_root)";
    if (s.code() == absl::StatusCode::kPermissionDenied) {
      why = "the credentials are not accepted (storage.storage_options, the agent's --s3-credentials file, or "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)";
    }
    if (s.code() == absl::StatusCode::kUnavailable) why = absl::StrCat("the endpoint does not answer: ", s.message());
    return absl::Status(s.code(), absl::StrCat(who, ": ", why));
  }
  if (!first_object.empty()) {
    if (absl::StatusOr<uint64_t> h = client.Head(first_object); !h.ok()) {
      return absl::Status(h.status().code(), absl::StrCat(who, ": ", h.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace dlio
