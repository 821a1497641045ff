// Measurement guards: what would make a run measure something other than the storage, said before it runs (issue 26
// item 6). Each guard is one line naming the key and what to change; `--explain` lists them among its warnings and
// the coordinator sends them as "warning:" lines when a placed job starts (coordinator/job_runner.cc).
//  - loader threads: reader.read_threads x an agent's ranks above the cores of the agent's node: the loader competes
//    for CPU and the run measures the client (the `client CPU` limit, docs/results.md);
//  - checkpoint loads from the page cache: a checkpoint-only job (workflow.train off) that reads back checkpoints it
//    wrote seconds before, on a file system (not S3), a node's share of one checkpoint fitting in its RAM, and
//    dlio_ext.checkpoint_evict_cache off: the loads would come from memory; the line offers that key.
// Nodes whose cores or RAM are unknown (0) are not judged. Units: bytes.
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job/workload_spec.h"

namespace dlio {

// A node (host) of the fleet, its agents' ranks counted together, in rank order (the first node holds ranks
// 0..ranks-1, the next the following ones).
struct GuardNode {
  std::string name;
  int64_t cores = 0;           // CPUs online on the node (0 = unknown)
  uint64_t memory_bytes = 0;   // its RAM (0 = unknown)
  int64_t ranks = 0;           // the job's ranks on it
  int64_t agents = 1;          // the job's agents on it (its ranks shared evenly among them)
};

// The guards that apply to `spec` on `nodes` (`world` ranks in all), one line each, without a "warning: " prefix.
std::vector<std::string> MeasurementGuards(const WorkloadSpec& spec, const std::vector<GuardNode>& nodes,
                                           int64_t world);

}  // namespace dlio
