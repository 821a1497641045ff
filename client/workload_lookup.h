// The job argument of `run` and `submit`, as DLIO users write it: a job file's path, DLIO's `workload=NAME` form
// (`dlio_benchmark workload=unet3d_h100`, with ++workload.KEY=VALUE overrides after it), or a bare NAME, the last two
// resolved from the folder of shipped workloads (configs/workloads/ as installed).
//
// Contract:
//  - ShippedWorkloadFolders(): where that folder may be, first match wins: PREFIX/share/dlio/configs/workloads
//    beside an installed binary (PREFIX/bin/dlio-coordinator, /proc/self/exe; the path from bin to share is the
//    one `cmake --install` uses), then the source tree's configs/workloads (a binary run from its build tree).
//  - ResolveJobArgument(): `workload=NAME` is NAME.yaml in the first existing folder; an argument that names an
//    existing file, or holds a '/', is a path and returned as it is (reading it reports its own problems); a bare
//    NAME that is no file here is NAME (NAME.yaml, unless it ends in .yaml or .yml) in that folder.
//  - Errors are InvalidArgument (bad input, exit 2), one line naming the argument and the folder looked in, with the
//    workloads whose names are near ("did you mean"), e.g.
//      "unet3d_h10: cannot read the job file (No such file or directory), nor is it a workload in
//       /opt/dlio/share/dlio/configs/workloads (near names: unet3d_h100, unet3d_a100, unet3d_v100)"
// Thread-safety: free functions over the file system; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dlio {

// The folders where the shipped workloads may be, in the order they are tried (they need not exist).
std::vector<std::string> ShippedWorkloadFolders();

// The job file `arg` stands for, the workloads searched in the first existing folder of `folders` (the paths are
// the folder's joined with the file name).
absl::StatusOr<std::string> ResolveJobArgument(const std::string& arg, const std::vector<std::string>& folders);

// The names of the workloads in `folder` (its *.yaml files without the extension), sorted; empty when unreadable.
std::vector<std::string> WorkloadNames(const std::string& folder);

}  // namespace dlio
