#include "job/document.h"

#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "job/key_table.h"
#include "yaml-cpp/eventhandler.h"

namespace dlio::workload_internal {
namespace {

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// The canonical name of `name` inside section `canon_prefix` (aliases: data_reader, dataset.record_length).
std::string CanonicalName(const std::string& canon_prefix, const std::string& name) {
  if (canon_prefix.empty() && name == "data_reader") return "reader";
  if (canon_prefix == "dataset" && name == "record_length") return "record_length_bytes";
  return name;
}

}  // namespace

int LineOf(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() || mark.line < 0 ? 0 : mark.line + 1;
}

absl::Status AtLine(const std::string& source, int line, absl::Status s) {
  if (s.ok() || line <= 0) return s;
  return absl::Status(s.code(), fmt::format("{}:{}: {}", source, line, std::string(s.message())));
}

std::string CanonicalPath(const std::string& path) {
  std::string canon;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    canon = Join(canon, CanonicalName(canon, std::string(part)));
  }
  return canon;
}

// Collects the leaves under `node` (a mapping at section `canon_prefix`). In document mode a repeated key is an
// error, and leaves and errors carry the key's line; in override mode values replace earlier ones.
absl::Status Walk(const YAML::Node& node, const std::string& canon_prefix, const std::string& shown_prefix,
                  bool override_mode, LeafSet* out, const std::string& source) {
  const KeyTable& t = Keys();
  std::map<std::string, std::string> here;  // canonical name -> as written, in this mapping
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies (cheap handles): `it->` yields a temporary, so a reference to its members would dangle (found by
    // fuzz/fuzz_workload.cc under ASan).
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    const int line = override_mode ? 0 : LineOf(key);
    if (!key.IsScalar()) {
      return AtLine(source, line, absl::InvalidArgumentError(fmt::format(
                                      "{}: keys must be names, got {}",
                                      shown_prefix.empty() ? "workload" : shown_prefix, Describe(key))));
    }
    const std::string name = key.Scalar();
    const std::string shown = Join(shown_prefix, name);
    const std::string canon = Join(canon_prefix, CanonicalName(canon_prefix, name));
    const std::string cname = CanonicalName(canon_prefix, name);
    if (auto h = here.find(cname); h != here.end() && !override_mode) {
      if (h->second == name) return AtLine(source, line, absl::InvalidArgumentError(fmt::format("{}: given twice", shown)));
      return AtLine(source, line,
                    absl::InvalidArgumentError(fmt::format("{}: given twice (also as {}; DLIO reads only one of them)",
                                                           shown, Join(shown_prefix, h->second))));
    }
    here[cname] = name;
    if (t.index.count(canon)) {
      out->Set(canon, shown, value, line);
    } else if (t.sections.count(canon)) {
      if (value.IsNull()) continue;  // an empty section
      if (!value.IsMap()) return AtLine(source, line, MustBe(shown, "a mapping of keys", value));
      if (absl::Status s = Walk(value, canon, shown, override_mode, out, source); !s.ok()) return s;
    } else {
      return AtLine(source, line, UnknownKey(shown, canon));
    }
  }
  return absl::OkStatus();
}

namespace {

// Counts documents without building them (a YAML::EventHandler that ignores every event).
class NoEvents : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

// One YAML document (a second one would be ignored silently by a plain Load: refused instead). Not YAML::LoadAll:
// yaml-cpp 0.7's loop never ends on some malformed input (found by fuzz/fuzz_workload.cc); the parser is asked for
// at most two documents instead.
absl::StatusOr<YAML::Node> ParseYaml(const std::string& text, const std::string& source) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    NoEvents none;
    int docs = 0;
    while (docs < 2 && parser.HandleNextDocument(none)) ++docs;
    if (docs > 1) {
      return absl::InvalidArgumentError(
          fmt::format("{}: holds more than one YAML document (separated by ---); a workload is one document", source));
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(fmt::format("{}: YAML syntax error: {}", source, e.msg));
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: YAML syntax error: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

// Hydra form: the workload under `workload:`, possibly beside Hydra's own `hydra:` and `defaults:`; *root becomes
// the workload itself.
absl::Status UnwrapHydra(YAML::Node* root_ptr) {
  YAML::Node& root = *root_ptr;
  if (!root.IsMap()) return absl::OkStatus();
  bool wrapped = false;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == "workload") wrapped = true;
  }
  if (wrapped) {
    YAML::Node inner;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (k == "workload") {
        inner = it->second;
      } else if (k != "hydra" && k != "defaults") {
        return absl::InvalidArgumentError(fmt::format(
            "{}: unexpected top-level key beside workload: (only hydra and defaults may sit beside it)", k));
      }
    }
    if (!inner.IsNull() && !inner.IsMap()) return MustBe("workload", "a mapping of DLIO keys", inner);
    root = inner;
  }
  return absl::OkStatus();
}

}  // namespace dlio::workload_internal
