// Overrides: the command line's `++workload.a.b=v`, `+workload.a.b=v`, `workload.a.b=v` or `a.b=v` over a job
// file's keys (document.h).
#include "absl/strings/match.h"
#include "fmt/format.h"
#include "job/document.h"
#include "job/key_table.h"

namespace dlio::workload_internal {
namespace {

// Splits an override into its canonical key path and value; `hydra.*` gives an empty path (ignored).
absl::Status ParseOverride(const std::string& ov, std::string* path, YAML::Node* value) {
  const size_t eq = ov.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        fmt::format("override '{}': expected KEY=VALUE (e.g. ++workload.dataset.num_files_train=8)", ov));
  }
  std::string key = ov.substr(0, eq);
  if (absl::StartsWith(key, "~")) {
    return absl::InvalidArgumentError(fmt::format("override '{}': deleting keys (~) is not supported", ov));
  }
  if (absl::StartsWith(key, "++")) key = key.substr(2);
  else if (absl::StartsWith(key, "+")) key = key.substr(1);
  if (absl::StartsWith(key, "workload.")) key = key.substr(9);
  if (key == "hydra" || absl::StartsWith(key, "hydra.")) {
    path->clear();
    return absl::OkStatus();
  }
  if (key.empty() || absl::StrContains(key, "..") || absl::EndsWith(key, ".") || absl::StartsWith(key, ".")) {
    return absl::InvalidArgumentError(fmt::format("override '{}': '{}' is not a key path", ov, key));
  }
  absl::StatusOr<YAML::Node> v = ParseYaml(ov.substr(eq + 1), fmt::format("override '{}'", ov));
  if (!v.ok()) return v.status();
  *path = key;
  *value = *v;
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyOverrides(const std::vector<std::string>& overrides, LeafSet* leaves_ptr) {
  LeafSet& leaves = *leaves_ptr;
  for (const std::string& ov : overrides) {
    std::string key;
    YAML::Node value;
    if (absl::Status s = ParseOverride(ov, &key, &value); !s.ok()) return s;
    if (key.empty()) continue;  // hydra.*
    const std::string canon = CanonicalPath(key);
    const std::string context = fmt::format("in override '{}'", ov);
    if (Keys().index.count(canon)) {
      leaves.Set(canon, key, value);
    } else if (Keys().sections.count(canon)) {
      if (!value.IsMap()) return MustBe(key, "a mapping of keys", value);
      if (absl::Status s = Walk(value, canon, key, true, &leaves); !s.ok()) {
        return absl::Status(s.code(), std::string(s.message()) + " " + context);
      }
    } else {
      return UnknownKey(key, canon, context);
    }
  }
  return absl::OkStatus();
}

}  // namespace dlio::workload_internal
