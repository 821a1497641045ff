// Confinement of every path an agent touches to its --data-root.
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace dlio {

// Resolves `path` (relative paths are taken under `root`; absolute ones must already lie inside it) after
// following symlinks and "..", and refuses anything that escapes `root`. `key` names the setting in the error,
// e.g. "dataset.data_folder: '/etc' is outside the agent's data root '/data'".
absl::StatusOr<std::filesystem::path> ResolveUnderRoot(const std::filesystem::path& root, const std::string& path,
                                                       const std::string& key);

}  // namespace dlio
