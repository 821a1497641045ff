// The content-addressed code-image pool of MLPerf Storage v3.0 (validator CHECK-01..03, Rules.md 2.1.6), as our
// tool fills it: what produced each run, stored once per distinct content and pointed at from every run folder
// (docs/mlperf.md "The code image").
//
// What "code" is for us: not a source tree (mlpstorage copies its Python package) but the binary that ran the set
// and what it judged the runs by: build_info.json (tool, version, git commit, the MD5 of the dlio-coordinator
// executable that ran the set) and workloads/<stem>.yaml, the reference workload files the runs were classified
// against (the shipped ones of the round, or --mlperf-references). A rebuilt binary or other references make a new
// image; the runs' own configs stay in their folders (dlio_config/), as upstream keeps them.
//
// Layout, as upstream's:
//   <pool>/.mlps-image-pool                 sentinel: this folder is a pool
//   <pool>/code-<hash[0:8]>/.code-hash.json {hash, algorithm, captured_at, tool_version, git_sha, files{path: md5}}
//   <pool>/code-<hash[0:8]>/build_info.json, workloads/*.yaml
//   <run folder>/.mlps-code-image           "<algorithm>:<32 hex>"
// <pool> is the rehearsal tree's root (`--mlperf-results-dir`); `mlperf report` copies the images into the v3.0
// tree's <org>/ folder (`<out>/<org>/code-<hash8>/`), as upstream places its pool.
// The hash (algorithm kCodeImageAlgorithm): MD5 over "<relative path>\n<MD5 of the file>\n" for every file of the
// image but .code-hash.json, in path order.
//
// Contract:
//  - CaptureCodeImage(pool, refs): the image for this process's binary and `refs`, created when absent (written to
//    a temporary folder, then renamed: concurrent sets converge on one image), reused when present. Returns its hash.
//  - WriteCodePointer(run_dir, hash): the pointer file.
//  - CopyPointedImages(from_pool, runs_below, to_pool): every image of `from_pool` a pointer below `runs_below`
//    names, and the sentinel, copied into `to_pool` (`mlperf report` placing a v3.0 tree's pool).
//  - PruneUnpointedImages(pool, runs_below): removes the images of `pool` (folders code-* with a .code-hash.json;
//    only in a folder with the pool's sentinel) that no pointer below `runs_below` names, and returns their names,
//    sorted: `mlperf report` into a tree an earlier report filled leaves no orphan (CHECK-03) behind.
//  - CheckCodeImages(root, pools, runs, shipped): the findings of CHECK-01 (a run folder without a pointer, a
//    malformed one, one that resolves to no image), CHECK-02 (an image that does not re-hash to its .code-hash.json,
//    or whose name is not its hash), CHECK-03 (an image no run points at) and 2.1.6 (a workload file of an image
//    whose MD5 is not the reference checksum, the MD5 of the shipped file of that name; only when `shipped` is given).
// Thread-safety: free functions, no shared state (the executable's MD5 is computed once, under a static's lock).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "mlperf/rules.h"

namespace dlio {

inline constexpr char kCodeImageAlgorithm[] = "dlio-md5-tree-v1";
inline constexpr char kCodePointerFile[] = ".mlps-code-image";
inline constexpr char kCodePoolSentinel[] = ".mlps-image-pool";
inline constexpr char kCodeHashFile[] = ".code-hash.json";

std::string Md5Hex(std::string_view data);

absl::StatusOr<std::string> CaptureCodeImage(const std::filesystem::path& pool,
                                             const std::vector<MlperfReference>& refs);

absl::Status WriteCodePointer(const std::filesystem::path& run_dir, const std::string& hash);

absl::Status CopyPointedImages(const std::filesystem::path& from_pool, const std::filesystem::path& runs_below,
                               const std::filesystem::path& to_pool);

absl::StatusOr<std::vector<std::string>> PruneUnpointedImages(const std::filesystem::path& pool,
                                                              const std::filesystem::path& runs_below);

struct CodeImageFinding {
  std::string file;  // relative to the checked root
  std::string rule;  // "CHECK-01", "CHECK-02", "CHECK-03", "Rules.md 2.1.6"
  std::string message;
};
// `runs`: each run folder (relative to `root`) and the pool (relative to `root`) its pointer resolves in. `pools`:
// every pool of the tree. `shipped`: the reference checksums (file stem -> MD5), or null when the tree is judged
// against other references than the shipped ones.
std::vector<CodeImageFinding> CheckCodeImages(const std::filesystem::path& root,
                                              const std::vector<std::filesystem::path>& pools,
                                              const std::vector<std::pair<std::filesystem::path,
                                                                          std::filesystem::path>>& runs,
                                              const std::map<std::string, std::string>* shipped);

// stem ("unet3d_b200") -> MD5 of the file's text: the reference checksums of a set of references.
std::map<std::string, std::string> ReferenceChecksums(const std::vector<MlperfReference>& refs);

}  // namespace dlio
