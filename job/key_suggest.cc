// Unknown keys: the known key a typo most likely meant, for "KEY: unknown key (did you mean ...?)".
#include "absl/strings/match.h"
#include "base/nearest.h"
#include "job/key_table.h"

namespace dlio::workload_internal {
namespace {

std::string LastComponent(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// The known key a typo most likely meant: a key the path is a suffix of (a missing section), else the closest by
// edit distance, else a key with the same last name in another section; "" when nothing is close.
std::string Suggest(const std::string& canon) {
  const KeyTable& t = Keys();
  for (const std::string& n : t.names) {
    if (absl::EndsWith(n, "." + canon)) return n;
  }
  if (std::string near = NearestName(canon, t.names); !near.empty()) return near;
  const std::string leaf = LastComponent(canon);
  for (const KeyInfo& k : t.keys) {
    if (LastComponent(k.path) == leaf) return k.path;
  }
  return "";
}

}  // namespace

absl::Status UnknownKey(const std::string& shown, const std::string& canon, const std::string& context) {
  std::string s = Suggest(canon);
  if (absl::StartsWith(shown, "data_reader") && absl::StartsWith(s, "reader")) s = "data_" + s;
  std::string msg = s.empty() ? fmt::format("{}: unknown key", shown)
                              : fmt::format("{}: unknown key (did you mean {}?)", shown, s);
  if (!context.empty()) msg += " " + context;
  return absl::InvalidArgumentError(msg);
}

}  // namespace dlio::workload_internal
