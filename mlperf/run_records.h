// What `--mlperf` (and `--mlperf-datagen`) writes into a run folder beside the job's files and the metadata, for
// `mlperf check` to read back (docs/mlperf.md "Checks"):
//  - capacity_gate.json, the capacity gate's record (CAP-01, mlperf/capacity_record.h): probed on the data root
//    when the agents are local (`run`); with remote agents (`submit`, no local data root) each agent applied the gate
//    before writing (agent/preflight.h) and the record says so (`probed` false, `checked_by`);
//  - .mlps-code-image, the pointer to the tree's code image (mlperf/code_image.h), captured into the tree's root.
// Thread-safety: one call per run folder; CaptureCodeImage makes concurrent sets converge on one image.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "job/workload_spec.h"
#include "mlperf/rules.h"

namespace dlio {

// `world`: the job's ranks (the checkpoint plan's), `tree_root`: the results tree (the pool), `refs`: the references
// the set is classified against. An error names the file it could not write.
absl::Status WriteRunRecords(const std::filesystem::path& dir, const WorkloadSpec& spec, const std::string& data_root,
                             int64_t world, const std::filesystem::path& tree_root,
                             const std::vector<MlperfReference>& refs);

}  // namespace dlio
