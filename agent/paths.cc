#include "agent/paths.h"

#include <system_error>

#include "absl/strings/str_cat.h"

namespace dlio {

namespace fs = std::filesystem;

absl::StatusOr<fs::path> ResolveUnderRoot(const fs::path& root, const std::string& path, const std::string& key) {
  std::error_code ec;
  const fs::path canon_root = fs::weakly_canonical(fs::absolute(root), ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--data-root '", root.string(), "': ", ec.message()));
  fs::path p(path);
  if (p.is_relative()) p = canon_root / p;
  // weakly_canonical follows the symlinks of the existing prefix and normalises the rest ("..", ".").
  const fs::path canon = fs::weakly_canonical(p, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(key, ": '", path, "': ", ec.message()));
  auto r = canon_root.begin();
  auto c = canon.begin();
  for (; r != canon_root.end() && !r->empty(); ++r, ++c) {
    if (c == canon.end() || *r != *c) {
      return absl::PermissionDeniedError(absl::StrCat(key, ": '", path, "' resolves to '", canon.string(),
                                                      "', outside the agent's data root '", canon_root.string(), "'"));
    }
  }
  return canon;
}

}  // namespace dlio
