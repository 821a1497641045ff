// MLPerf Storage v3.0's checkpointing rules that `--mlperf` checks before a checkpointing set writes anything
// (Rules.md 4.x; docs/mlperf.md "Checkpointing v3.0"), as mlpstorage's run checker does before it launches DLIO:
//   4.6.2  more than kV3CheckpointMinRanksPerHost (4) ranks on every host of a CLOSED run (storage #866 asks
//          whether exactly 4 is enough; the published text says "more than 4");
//   4.3.4  accelerator memory x ranks >= the checkpoint's size (MlperfAcceleratorMemoryGb, decimal GB; checked
//          when the accelerator is known: --accelerator-type);
//   4.3.5  checkpoint.mode: subset only for llama3-8b (storage #841: the published text lacked a "not");
//   4.3.1  checkpoint data per host > 3x the host's RAM, or the cache flushed between the writes and the reads.
// `mlperf check` also applies 4.7.2 (at most kV3CheckpointMaxPauseSeconds between the write invocation's end and
// the read invocation's start, from their summary.json).
// Contract: CheckpointV3Problems() and CheckpointV3InputFor() are pure; each problem is one line starting with the rule ("Rules.md 4.6.2: ...")
// and naming the figures it compared. An empty list: the set may run.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/explain.h"
#include "job/workload_spec.h"
#include "mlperf/rules.h"

namespace dlio {

inline constexpr int64_t kV3CheckpointMinRanksPerHost = 4;  // Rules.md 4.6.2: "more than 4" per host
inline constexpr double kV3CheckpointRamMultiple = 3;        // Rules.md 4.3.1: data per host > 3x its RAM
inline constexpr double kV3CheckpointMaxPauseSeconds = 30;   // Rules.md 4.7.2: write invocation end -> read start

struct CheckpointV3Input {
  const MlperfCheckpointWorkload* workload = nullptr;
  int64_t world = 0;                 // ranks of the job
  int64_t hosts = 0;                 // distinct hosts they run on (0 = unknown: 4.6.2 and 4.3.1 not checked)
  std::string accelerator;           // "b200", ...; empty = not declared (4.3.4 not checked)
  uint64_t checkpoint_bytes = 0;     // one checkpoint of every rank (plan/checkpoint_plan.h TotalBytes)
  uint64_t host_memory_bytes = 0;    // the smallest host's RAM (0 = unknown: 4.3.1 not checked)
  bool cache_flush = true;           // the read job clears the cache first (dlio_ext.checkpoint_evict_cache)
  bool subset = false;               // checkpoint.mode: subset
};
std::vector<std::string> CheckpointV3Problems(const CheckpointV3Input& in);

// The input for `spec` on `fleet` (client/explain.h: ranks = agents x accelerators per agent, hosts = its nodes,
// the smallest node's RAM), the checkpoint's bytes from its plan (plan/checkpoint_plan.h; 0 when it has none).
CheckpointV3Input CheckpointV3InputFor(const WorkloadSpec& spec, const ExplainFleet& fleet,
                                       const std::string& accelerator, bool cache_flush);

}  // namespace dlio
