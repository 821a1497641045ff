// The document of a job: its YAML text parsed (one document), unwrapped from Hydra's `workload:` key, and its keys
// collected as leaves (canonical dotted path, the spelling as written, the value), first from the file (Walk), then
// from the command line's overrides (ApplyOverrides, overrides.cc). Internal to dlio::job (the loader,
// workload_spec.cc, applies the leaves through the key table).
//
// Contract: every error is one line naming the key as written (or the source, for YAML syntax): a key the table does
// not know is "KEY: unknown key (did you mean ...?)", a key given twice in one mapping "KEY: given twice". An error
// about a key of the file starts with the file and the key's line, as a YAML syntax error does
// ("job.yaml:12: train.epochs: must be ..."; AtLine); one about an override names the override instead.
// Thread-safety: plain values and free functions; a LeafSet is used by one thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace dlio::workload_internal {

struct Leaf {
  std::string path;   // canonical
  std::string shown;  // as written, for messages
  YAML::Node node;
  int line = 0;       // 1-based line of the key in the job file; 0 = set by an override
};

class LeafSet {
 public:
  // Adds or replaces (an override) the value of a key.
  void Set(const std::string& path, const std::string& shown, const YAML::Node& node, int line = 0) {
    auto it = pos_.find(path);
    if (it != pos_.end()) {
      leaves_[it->second] = Leaf{path, shown, node, line};
      return;
    }
    pos_[path] = leaves_.size();
    leaves_.push_back(Leaf{path, shown, node, line});
  }
  const Leaf* Find(const std::string& path) const {
    auto it = pos_.find(path);
    return it == pos_.end() ? nullptr : &leaves_[it->second];
  }
  const std::vector<Leaf>& leaves() const { return leaves_; }

 private:
  std::vector<Leaf> leaves_;
  std::map<std::string, size_t> pos_;
};

// One YAML document (a second one, after ---, is refused); `source` names the file in syntax errors
// ("SOURCE:LINE:COLUMN: YAML syntax error: ...").
absl::StatusOr<YAML::Node> ParseYaml(const std::string& text, const std::string& source);
// Hydra form: the workload under `workload:`, possibly beside Hydra's own `hydra:` and `defaults:`; *root becomes
// the workload itself (unchanged when there is no `workload:` key).
absl::Status UnwrapHydra(YAML::Node* root);
// The canonical spelling of a dotted path (data_reader.x is reader.x, dataset.record_length is
// dataset.record_length_bytes).
std::string CanonicalPath(const std::string& path);
// Collects the leaves under `node` (a mapping at section `canon_prefix`, written `shown_prefix`). In document mode
// a repeated key is an error, and every leaf and error carries the key's line in `source` (the job file's name); in
// override mode values replace earlier ones and `source` is unused.
absl::Status Walk(const YAML::Node& node, const std::string& canon_prefix, const std::string& shown_prefix,
                  bool override_mode, LeafSet* out, const std::string& source = "");
// The 1-based line of `node` in its document; 0 when yaml-cpp knows none.
int LineOf(const YAML::Node& node);
// `s` prefixed with "SOURCE:LINE: " (the form of a YAML syntax error) when `line` > 0 and `s` is an error; `s` as it
// is otherwise (a key set by an override, whose error names the override).
absl::Status AtLine(const std::string& source, int line, absl::Status s);
// The overrides (`++workload.a.b=v`, `+workload.a.b=v`, `workload.a.b=v`, `a.b=v`; v a YAML scalar or flow
// collection) over the leaves; `hydra.*` overrides are ignored. Errors name the override.
absl::Status ApplyOverrides(const std::vector<std::string>& overrides, LeafSet* leaves);

}  // namespace dlio::workload_internal
