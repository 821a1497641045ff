// ToYaml(): the normalised YAML of a spec, written from the key table (the keys WorkloadSpec keeps, in table
// order), and FlattenWorkload(), the same as dotted keys.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "job/key_table.h"
#include "job/workload_spec.h"

namespace dlio {

using workload_internal::KeyInfo;
using workload_internal::Keys;

std::string ToYaml(const WorkloadSpec& spec) {
  std::string out =
      "# Normalised workload: DLIO keys, every key this version applies (see docs/workload-keys.md).\n";
  // The key table keeps the stored keys of a section together, so no section is opened twice (the round-trip
  // test would catch a repeated key).
  std::vector<std::string> open;  // the sections of the previous key
  for (const KeyInfo& k : Keys().keys) {
    if (!k.get) continue;
    std::vector<std::string> parts = absl::StrSplit(k.path, '.');
    const std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    size_t common = 0;
    while (common < open.size() && common < sections.size() && open[common] == sections[common]) ++common;
    for (size_t i = common; i < sections.size(); ++i) out += std::string(2 * i, ' ') + sections[i] + ":\n";
    out += std::string(2 * sections.size(), ' ') + parts.back() + ": " + k.get(spec) + "\n";
    open = sections;
  }
  return out;
}

namespace {

void FlattenNode(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>* out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      FlattenNode(kv.second, prefix.empty() ? key : absl::StrCat(prefix, ".", key), out);
    }
  } else if (n.IsSequence()) {
    YAML::Emitter e;
    e << YAML::Flow << n;
    (*out)[prefix] = e.c_str();
  } else {
    (*out)[prefix] = n.IsScalar() ? n.Scalar() : "";
  }
}

}  // namespace

std::map<std::string, std::string> FlattenWorkload(const WorkloadSpec& spec) {
  std::map<std::string, std::string> flat;
  FlattenNode(YAML::Load(ToYaml(spec)), "", &flat);
  return flat;
}

}  // namespace dlio
