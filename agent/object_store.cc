#include "agent/object_store.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "spdlog/spdlog.h"

namespace dlio {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// The --s3-credentials file's lines into `d`.
absl::Status ReadCredentialsFile(const std::string& file, S3AgentDefaults* d) {
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
    if (key == "AWS_ACCESS_KEY_ID") d->access_key_id = value;
    else if (key == "AWS_SECRET_ACCESS_KEY") d->secret_access_key = S3Secret(value);
    else if (key == "AWS_ENDPOINT_URL") d->endpoint = value;
    else if (key == "S3_ENDPOINT_URIS") d->endpoints = SplitS3Endpoints(value);
    else if (key == "AWS_REGION" || key == "AWS_DEFAULT_REGION") d->region = value;
    else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--s3-credentials: ", file, ":", n, ": unknown key '", key,
          "' (allowed: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, S3_ENDPOINT_URIS, AWS_REGION)"));
    }
  }
  return absl::OkStatus();
}

bool IsHostChar(char ch) { return absl::ascii_isalnum(ch) || ch == '-' || ch == '.'; }
bool IsIpv6Char(char ch) { return absl::ascii_isxdigit(ch) || ch == ':' || ch == '.'; }
bool IsPathChar(char ch) {
  return absl::ascii_isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '/';
}

// The agent's own endpoints (AWS_ENDPOINT_URL and S3_ENDPOINT_URIS), normalised; one that does not parse is left
// out (nothing matches it).
std::vector<std::string> OwnEndpoints(const S3AgentDefaults& agent) {
  std::vector<std::string> own;
  std::vector<std::string> all = agent.endpoints;
  if (!agent.endpoint.empty()) all.insert(all.begin(), agent.endpoint);
  for (const std::string& e : all) {
    absl::StatusOr<std::string> n = NormalizeS3Endpoint(e);
    if (n.ok()) own.push_back(*n);
  }
  return own;
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

absl::StatusOr<S3AgentDefaults> LoadS3Defaults(const std::string& file, const std::vector<std::string>& allow) {
  S3AgentDefaults d;
  if (!file.empty()) {
    if (absl::Status s = ReadCredentialsFile(file, &d); !s.ok()) return s;
  }
  if (d.access_key_id.empty()) d.access_key_id = Env("AWS_ACCESS_KEY_ID");
  if (d.secret_access_key.empty()) d.secret_access_key = S3Secret(Env("AWS_SECRET_ACCESS_KEY"));
  if (d.endpoint.empty()) d.endpoint = Env("AWS_ENDPOINT_URL");
  if (d.endpoints.empty()) d.endpoints = SplitS3Endpoints(Env("S3_ENDPOINT_URIS"));
  if (d.region.empty()) d.region = Env("AWS_REGION");
  if (d.region.empty()) d.region = Env("AWS_DEFAULT_REGION");
  for (const std::string& a : allow) {
    absl::StatusOr<std::string> e = NormalizeS3Endpoint(a);
    if (!e.ok()) return absl::InvalidArgumentError(absl::StrCat("--s3-allow-endpoint: ", e.status().message()));
    if (std::find(d.allowed_endpoints.begin(), d.allowed_endpoints.end(), *e) == d.allowed_endpoints.end()) {
      d.allowed_endpoints.push_back(*e);
    }
  }
  return d;
}

absl::StatusOr<std::string> NormalizeS3Endpoint(absl::string_view url) {
  const auto bad = [url](absl::string_view why) {
    // A user-info part (user:secret@) is never repeated: errors reach logs, the job's message and the store.
    std::string shown(url);
    const size_t start = shown.find("://") == std::string::npos ? 0 : shown.find("://") + 3;
    const size_t at = shown.find('@', start);
    if (at != std::string::npos && at < shown.find('/', start)) shown.replace(start, at - start, "...");
    return absl::InvalidArgumentError(
        absl::StrCat("s3 endpoint '", shown, "': ", why, " (expected http(s)://host[:port][/path])"));
  };
  absl::string_view rest = url;
  std::string scheme;
  if (absl::StartsWithIgnoreCase(rest, "http://")) scheme = "http";
  else if (absl::StartsWithIgnoreCase(rest, "https://")) scheme = "https";
  else return bad("not http:// or https://");
  rest.remove_prefix(scheme.size() + 3);
  const size_t slash = std::min(rest.find('/'), rest.size());
  absl::string_view authority = rest.substr(0, slash);
  absl::string_view path = rest.substr(slash);
  std::string host;
  if (absl::ConsumePrefix(&authority, "[")) {  // [IPv6]
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos || close == 0) return bad("an unclosed or empty [IPv6] host");
    host = absl::StrCat("[", absl::AsciiStrToLower(authority.substr(0, close)), "]");
    if (!std::all_of(host.begin() + 1, host.end() - 1, IsIpv6Char)) return bad("a character an IPv6 host has not");
    authority.remove_prefix(close + 1);
  } else {
    const size_t colon = std::min(authority.find(':'), authority.size());
    host = absl::AsciiStrToLower(authority.substr(0, colon));
    if (host.empty()) return bad("no host");
    if (!std::all_of(host.begin(), host.end(), IsHostChar)) {
      return bad("a host of letters, digits, '-' and '.' only (no user info, query or fragment)");
    }
    authority.remove_prefix(colon);
  }
  uint32_t port = scheme == "http" ? 80 : 443;
  if (absl::ConsumePrefix(&authority, ":")) {
    if (authority.empty() || !std::all_of(authority.begin(), authority.end(), absl::ascii_isdigit) ||
        authority.size() > 5 || !absl::SimpleAtoi(authority, &port) || port == 0 || port > 65535) {
      return bad("a port of 1 to 65535");
    }
  } else if (!authority.empty()) {
    return bad("a character after the host");
  }
  if (!std::all_of(path.begin(), path.end(), IsPathChar)) {
    return bad("a path of letters, digits, '-', '.', '_', '~' and '/' only (no query or fragment)");
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return absl::StrCat(scheme, "://", host, ":", port, path);
}

absl::Status CheckS3Endpoints(const std::vector<S3EndpointUse>& uses, const S3AgentDefaults& agent) {
  const std::vector<std::string> own = OwnEndpoints(agent);
  const absl::StatusOr<std::string> own_url = NormalizeS3Endpoint(agent.endpoint);
  std::string own_text = agent.endpoint.empty() ? "this agent has no AWS_ENDPOINT_URL"
                         : !own_url.ok()        ? absl::StrCat("AWS_ENDPOINT_URL '", agent.endpoint, "' does not parse")
                                                : absl::StrCat("AWS_ENDPOINT_URL ", *own_url);
  if (!agent.endpoints.empty()) absl::StrAppend(&own_text, "; S3_ENDPOINT_URIS ", absl::StrJoin(agent.endpoints, ","));
  const std::vector<std::string>& allowed = agent.allowed_endpoints;
  for (const S3EndpointUse& use : uses) {
    absl::StatusOr<std::string> e = NormalizeS3Endpoint(use.endpoint);
    if (!e.ok()) return e.status();
    if (Contains(own, *e) || Contains(allowed, *e)) continue;
    if (!allowed.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "s3 endpoint ", *e, " is neither this agent's own (", own_text, ") nor in its --s3-allow-endpoint list (",
          absl::StrJoin(allowed, ", "), "): an agent with that list reaches no other endpoint, whoever's keys the "
          "job brings; to allow it, start the agent with --s3-allow-endpoint ", *e));
    }
    if (use.agent_credentials) {
      return absl::FailedPreconditionError(absl::StrCat(
          "s3 endpoint ", *e, " is not this agent's own (", own_text, "): an agent's own credentials go only to its "
          "own endpoint or to one it allows; give the job its own storage.storage_options.access_key_id and "
          "secret_access_key, or start the agent with --s3-allow-endpoint ", *e));
    }
  }
  return absl::OkStatus();
}

namespace {

// The endpoints of `c` (see the header: the agent's S3_ENDPOINT_URIS, else the job's endpoint_url, else the agent's
// AWS_ENDPOINT_URL), the policy, and the endpoint rule over every one of them.
absl::Status SetEndpoints(const WorkloadSpec& spec, const S3AgentDefaults& d, bool agent_credentials, S3Config* c) {
  c->endpoints = !d.endpoints.empty()             ? d.endpoints
                 : !spec.s3_endpoint_url.empty() ? SplitS3Endpoints(spec.s3_endpoint_url)
                                                 : SplitS3Endpoints(d.endpoint);
  if (c->endpoints.empty()) {
    return absl::FailedPreconditionError(
        "storage.storage_options.endpoint_url: no S3 endpoint (set it in the job, in the agent's --s3-credentials "
        "file as AWS_ENDPOINT_URL or S3_ENDPOINT_URIS, or in the agent's environment as AWS_ENDPOINT_URL or "
        "S3_ENDPOINT_URIS)");
  }
  if (!d.endpoints.empty() && !spec.s3_endpoint_url.empty() && SplitS3Endpoints(spec.s3_endpoint_url) != d.endpoints) {
    spdlog::info("s3: this agent's S3_ENDPOINT_URIS ({}) is used instead of the job's "
                 "storage.storage_options.endpoint_url ({}), as the MLCommons fork does",
                 absl::StrJoin(d.endpoints, ","), spec.s3_endpoint_url);
  }
  c->endpoint = c->endpoints[0];
  absl::StatusOr<S3EndpointPolicy> policy =
      ParseS3EndpointPolicy(spec.s3_endpoint_policy, "dlio_ext.s3_endpoint_policy");
  if (!policy.ok()) return policy.status();
  c->endpoint_policy = *policy;
  std::vector<S3EndpointUse> uses;
  for (const std::string& e : c->endpoints) {
    if (!absl::StartsWith(e, "http://") && !absl::StartsWith(e, "https://")) {
      return absl::InvalidArgumentError(absl::StrCat("s3 endpoint '", e, "' must start with http:// or https://"));
    }
    uses.push_back({e, agent_credentials});
  }
  return CheckS3Endpoints(uses, d);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const S3Config>> S3ConfigFor(const WorkloadSpec& spec, const S3AgentDefaults& d,
                                                            int64_t agent_index) {
  auto c = std::make_shared<S3Config>();
  c->bucket = spec.storage_root;
  c->agent_index = agent_index;
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
  // Anything of the agent's own credentials in the pair: its key id, or its secret.
  const bool agent_credentials = (spec.s3_access_key_id.empty() && !d.access_key_id.empty()) ||
                                 (spec.s3_secret_access_key.empty() && !c->secret_access_key.empty());
  c->force_path_style = spec.s3_force_path_style;
  c->max_attempts = static_cast<int>(spec.s3_max_attempts);
  c->requests_in_flight = static_cast<int>(spec.s3_requests_in_flight);
  if (absl::Status s = SetEndpoints(spec, d, agent_credentials, c.get()); !s.ok()) return s;
  // A redirect's target passes the same rule (the client asks before each hop). The rule needs the endpoints only:
  // no copy of the secret is kept in it.
  S3AgentDefaults rule;
  rule.endpoint = d.endpoint;
  rule.endpoints = d.endpoints;
  rule.allowed_endpoints = d.allowed_endpoints;
  c->redirect_check = [rule = std::move(rule), agent_credentials](const std::string& origin) {
    return CheckS3Endpoints({{origin, agent_credentials}}, rule);
  };
  if (c->access_key_id.empty() || c->secret_access_key.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "s3 ", c->Describe(), ": no ", c->access_key_id.empty() ? "access key id" : "secret key",
        c->access_key_id.empty() ? "" : absl::StrCat(" for access key id '", c->access_key_id, "'"),
        " (storage.storage_options, the agent's --s3-credentials file, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"));
  }
  return std::shared_ptr<const S3Config>(std::move(c));
}

absl::Status S3Preflight(const std::shared_ptr<const S3Config>& config, const std::string& first_object) {
  if (config->endpoints.size() > 1) {  // every endpoint answers, each asked on its own (an error names it)
    for (const std::string& e : config->endpoints) {
      auto one = std::make_shared<S3Config>(*config);
      one->endpoints = {e};
      one->endpoint = e;
      if (absl::Status s = S3Preflight(one, first_object); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
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
