// The rows of the key table (key_table.h) for the storage section (object storage: docs/object-storage.md).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/text.h"
#include "job/format_traits.h"
#include "job/key_table.h"

namespace dlio::workload_internal {

// storage.*: where the dataset and checkpoints live. local_fs (and parallel_fs) are POSIX paths under the agent's
// --data-root; s3 is a bucket (storage_root) reached through storage_options (docs/object-storage.md). Kept apart
// from the other sections: object storage bypasses the POSIX path confinement (agent/paths.h) altogether.
void AddForkStorageKeys(std::vector<KeyInfo>& v);

namespace {

// storage.storage_options.endpoint_url: one endpoint, a list of them, or a comma-separated string of them (the
// MLCommons fork's CSV); stored comma-separated, written back as a list when there are several.
KeyInfo EndpointUrlKey() {
  return Custom(
      "storage.storage_options.endpoint_url", KeyStatus::kImplemented,
      "s3: http(s)://host[:port] of the S3 service, or a list of endpoints of one store (or them comma-separated, "
      "as the MLCommons fork takes them), used as dlio_ext.s3_endpoint_policy says; empty = the agent's "
      "S3_ENDPOINT_URIS or AWS_ENDPOINT_URL (S3_ENDPOINT_URIS wins over this key, as in the fork; "
      "docs/object-storage.md)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (n.IsNull()) {
          s.s3_endpoint_url.clear();
          return absl::OkStatus();
        }
        std::vector<std::string> parts;
        if (n.IsScalar()) {
          parts.push_back(n.Scalar());
        } else if (n.IsSequence()) {
          for (const YAML::Node& e : n) {
            if (!e.IsScalar() || e.Scalar().empty()) return MustBe(p, "a list of http(s):// endpoints", n);
            parts.push_back(e.Scalar());
          }
        } else {
          return MustBe(p, "an http(s):// endpoint or a list of them", n);
        }
        std::string joined;
        for (const std::string& part : parts) {
          if (absl::Status t = CheckKeyText(part, p, kMaxPathBytes); !t.ok()) return t;
          for (absl::string_view e : absl::StrSplit(part, ',', absl::SkipWhitespace())) {
            e = absl::StripAsciiWhitespace(e);
            absl::StrAppend(&joined, joined.empty() ? "" : ",", e);
          }
        }
        s.s3_endpoint_url = joined;
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) {
        if (s.s3_endpoint_url.find(',') == std::string::npos) return Quote(s.s3_endpoint_url);
        std::vector<std::string> quoted;
        for (absl::string_view e : absl::StrSplit(s.s3_endpoint_url, ',')) quoted.push_back(Quote(std::string(e)));
        return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
      });
}

}  // namespace

// Data table: the storage section.
void AddStorageKeys(std::vector<KeyInfo>& v) {
  {
    KeyInfo k = Custom(
        "storage.storage_type", KeyStatus::kImplementedDiffers,
        "local_fs; parallel_fs is a POSIX path here too (warns: DLIO's StorageFactory rejects it); s3: the dataset "
        "and checkpoints are objects of the bucket storage_root (docs/object-storage.md; warns for formats other "
        "than npz and npy, which DLIO refuses over s3); aistore is not supported yet",
        [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
          return ParseChoice(n, p, {"local_fs", "parallel_fs", "s3"}, {"aistore"}, "storage type", &s.storage_type);
        },
        [](const WorkloadSpec& s) { return Quote(s.storage_type); });
    k.differs = [](const YAML::Node& n, const WorkloadSpec& s) -> std::string {
      if (n.Scalar() == "parallel_fs") {
        return "parallel_fs reads and writes data_folder through POSIX here, as local_fs; DLIO's StorageFactory "
               "raises an error for parallel_fs";
      }
      const FormatTraits* f = FindFormatTraits(s.format);
      if (n.Scalar() == "s3" && f != nullptr && !f->dlio_s3) {
        return fmt::format("s3 with {} files works here ({}); DLIO allows only npz and npy over s3", s.format,
                           f->ranged_gets ? "ranged GETs" : "whole-object GETs");
      }
      return "";
    };
    v.push_back(k);
  }
  v.push_back(Custom(
      "storage.storage_root", KeyStatus::kImplemented,
      "s3: the bucket (at least 3 characters); local_fs: DLIO's ./ only (a path prefix is not supported yet: use "
      "dataset.data_folder)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (n.IsNull()) {
          s.storage_root = "./";
          return absl::OkStatus();
        }
        if (!n.IsScalar()) return MustBe(p, "a bucket name (s3) or ./", n);
        if (absl::Status t = CheckKeyText(n.Scalar(), p, kMaxPathBytes); !t.ok()) return t;
        s.storage_root = n.Scalar();
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) { return Quote(s.storage_root); }));
  v.push_back(EndpointUrlKey());
  v.push_back(StringKey("storage.storage_options.region", &WorkloadSpec::s3_region, true,
                        "s3: the SigV4 signing region; empty = the agent's AWS_REGION, else us-east-1"));
  v.push_back(StringKey("storage.storage_options.access_key_id", &WorkloadSpec::s3_access_key_id, true,
                        "s3: the access key id (named in credential errors); empty = the agent's credentials "
                        "(--s3-credentials FILE, else AWS_ACCESS_KEY_ID)"));
  {
    // The secret: stored for the run, never written back (no `get`), shown as *** by --explain.
    KeyInfo k = Custom(
        "storage.storage_options.secret_access_key", KeyStatus::kImplemented,
        "s3: the secret key, handled as a secret: never in logs, --explain, the job store, result files or "
        "metrics; better given to the agents (--s3-credentials FILE or AWS_SECRET_ACCESS_KEY)",
        [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
          if (n.IsNull()) {
            s.s3_secret_access_key.clear();
            return absl::OkStatus();
          }
          if (!n.IsScalar()) return absl::InvalidArgumentError(fmt::format("{}: must be a string", p));
          s.s3_secret_access_key = n.Scalar();
          return absl::OkStatus();
        },
        nullptr);
    k.dlio_default = "~";
    v.push_back(k);
  }
  v.push_back(BoolKey("storage.storage_options.s3_force_path_style", &WorkloadSpec::s3_force_path_style,
                      "s3: path-style URLs (endpoint/bucket/key); false = virtual-hosted (bucket.endpoint/key) except "
                      "for IP and localhost endpoints, as boto3 does"));
  v.push_back(IntKey("storage.storage_options.s3_max_attempts", &WorkloadSpec::s3_max_attempts, 1, 100,
                     "s3: attempts per request in all (retries with backoff on 5xx, SlowDown and timeouts, each "
                     "counted in dlio_s3_retries_total)"));
  AddForkStorageKeys(v);
}

// Data table: the MLCommons fork's storage rows (issue 27 item 5), after the section's own (AddStorageKeys).
void AddForkStorageKeys(std::vector<KeyInfo>& v) {
  // The MLCommons fork's keys (issue 27 item 5): its v3 object-storage workload files load and run here. The
  // storage_options rows first (ToYaml writes a section once, its rows together).
  v.push_back(Custom(
      "storage.storage_options.uri_scheme", KeyStatus::kImplemented,
      "the fork's s3dlio URI scheme: s3 only here (az, gs, file and direct are refused by name)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, {"s3"}, {"az", "gs", "file", "direct"}, "URI scheme", &s.s3_uri_scheme);
      },
      [](const WorkloadSpec& s) { return Quote(s.s3_uri_scheme); }));
  v.push_back(Label("storage.storage_options.secure", "~",
                    "the minio and s3torchconnector libraries' TLS switch: the endpoint_url's scheme (http or https) "
                    "decides here"));
  AddParquetStorageKeys(v);
  v.push_back(Custom(
      "storage.storage_library", KeyStatus::kImplementedDiffers,
      "the fork's S3 library (s3torchconnector, minio, s3dlio): a label here; our libcurl client does the work "
      "(--explain says so)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        if (n.IsNull()) {
          s.storage_library.clear();
          return absl::OkStatus();
        }
        return ParseChoice(n, p, {"s3torchconnector", "minio", "s3dlio"}, {}, "storage library", &s.storage_library);
      },
      [](const WorkloadSpec& s) { return s.storage_library.empty() ? std::string("~") : Quote(s.storage_library); }));
  v.back().differs = [](const YAML::Node&, const WorkloadSpec& s) -> std::string {
    if (s.storage_library.empty()) return "";
    return fmt::format("{} is a label here: the agents' own S3 client (libcurl, SigV4) makes every request",
                       s.storage_library);
  };
  v.push_back(NumberKey("storage.post_generation_settle_seconds", &WorkloadSpec::post_generation_settle_seconds, 0,
                        false, 3600,
                        "seconds every agent waits after generating its files, before the job goes on (eventually "
                        "consistent stores)"));
}

}  // namespace dlio::workload_internal
