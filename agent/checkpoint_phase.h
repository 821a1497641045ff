// The checkpoint phase (PhaseKind::kCheckpoint, plan/checkpoint_schedule.h) and the checkpoint helpers it shares
// with the step-based checkpoints of a training epoch (agent/steps_phase.h).
//
// A checkpoint phase saves or loads one checkpoint per local rank: checkpoint-only mode first sleeps
// time_between_checkpoints (DLIO's "compute" between checkpoints; a cancel cuts it short), then a barrier before
// (the local ranks, then the coordinator), the save or load, and with rank_sync one more barrier after it, inside
// the timing. Every barrier of a phase has its own sequence number, the same on every rank. Files live under
// checkpoint.checkpoint_folder resolved inside the data root (or under the job's checkpoint key prefix in its
// bucket), written and read through agent/checkpointer.h; dlio_ext.checkpoint_bandwidth_limit caps the agent's
// ranks together. With --trace each save or load is one event on the rank's step track.
// Thread-safety: RunCheckpoint runs one phase (its ranks on threads of their own, ForEachLocalRank); the helpers
// are pure functions, TakeCheckpoint on the calling rank's own Checkpointer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/checkpointer.h"
#include "agent/metrics.h"
#include "base/bandwidth_limiter.h"
#include "base/confined_dir.h"
#include "job/workload_spec.h"
#include "plan/checkpoint_plan.h"
#include "results/results.h"
#include "storage/s3/client.h"

namespace dlio {

struct PhaseContext;

// A checkpoint phase (see above): one RankEpochResult per local rank, each with its one checkpoint.
absl::StatusOr<std::vector<RankEpochResult>> RunCheckpoint(const PhaseContext& ctx);

// What every rank of a phase needs to checkpoint: the job's plan and the folder inside the data root.
struct CheckpointSetup {
  CheckpointPlan plan;
  std::shared_ptr<const ConfinedDir> folder;  // POSIX: inside the data root
  std::string s3_prefix;                      // s3: the key prefix of the checkpoints in the bucket
  std::shared_ptr<const S3Config> s3;         // s3 jobs
};

// The plan for `world` ranks and, for POSIX jobs, checkpoint.checkpoint_folder made (if needed) inside `root`.
absl::StatusOr<CheckpointSetup> MakeCheckpointSetup(const WorkloadSpec& spec, int world,
                                                    const absl::StatusOr<std::shared_ptr<const ConfinedDir>>& root,
                                                    const std::shared_ptr<const S3Config>& s3);

// dlio_ext.checkpoint_bandwidth_limit: one limiter for every rank of this agent, for one phase; null when uncapped.
std::unique_ptr<BandwidthLimiter> CheckpointLimiter(const WorkloadSpec& spec);

// Random checkpoint bytes that differ between ranks and jobs' seeds.
uint64_t CheckpointSeed(const WorkloadSpec& spec, int rank);

// One save or load by one rank: (evict the files' pages before a load when asked), write or read the files, then
// the rank_sync barrier when set, all inside the timing except the eviction. A load reads the files of
// LoadSourceRank (plan/checkpoint_schedule.h). `rm` (may be null) records the checkpoint.
absl::StatusOr<RankCheckpointResult> TakeCheckpoint(const WorkloadSpec& spec, const CheckpointSetup& setup,
                                                    Checkpointer& io, int rank, int world, int ranks_per_agent,
                                                    bool load, int index, int epoch, int64_t step,
                                                    const std::function<absl::Status()>& rank_sync,
                                                    RankMetrics* rm);

}  // namespace dlio
