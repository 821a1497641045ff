// Confinement of every path an agent touches to its --data-root.
//
// Every path that comes from a job goes through ResolveUnderRoot() before the agent opens, creates or lists
// anything: dataset.data_folder today (generate, train, the free-space preflight), and checkpoint.checkpoint_folder
// (and any later folder key) when those phases run, so a job can never make an agent read or write outside its
// data root, whatever the coordinator (or whoever holds its token) sends.
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
