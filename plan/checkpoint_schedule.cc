#include "plan/checkpoint_schedule.h"

namespace dlio {

bool CheckpointAfterEpoch(const WorkloadSpec& spec, int64_t epoch) {
  if (!spec.checkpoint || !spec.train || spec.steps_between_checkpoints >= 0) return false;
  return epoch >= spec.checkpoint_after_epoch &&
         (epoch - spec.checkpoint_after_epoch) % spec.epochs_between_checkpoints == 0;
}

std::vector<int64_t> CheckpointStepsInEpoch(const WorkloadSpec& spec, int64_t steps) {
  std::vector<int64_t> out;
  if (!spec.checkpoint || !spec.train || spec.steps_between_checkpoints <= 0) return out;
  for (int64_t s = spec.steps_between_checkpoints; s <= steps; s += spec.steps_between_checkpoints) out.push_back(s);
  return out;
}

std::vector<CheckpointOp> CheckpointOnlySequence(const WorkloadSpec& spec) {
  std::vector<CheckpointOp> out;
  if (!spec.checkpoint || spec.train) return out;
  for (int64_t i = 1; i <= spec.num_checkpoints_write; ++i) out.push_back({false, static_cast<int>(i), 1, i});
  for (int64_t i = 1; i <= spec.num_checkpoints_read; ++i) out.push_back({true, static_cast<int>(i), 1, i});
  return out;
}

int LoadSourceRank(const WorkloadSpec& spec, int rank, int world, int ranks_per_agent) {
  if (!spec.recovery_rank_shift || world <= 0) return rank;
  return (rank + ranks_per_agent) % world;
}

}  // namespace dlio
