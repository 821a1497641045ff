// CheckpointSchedule: when a job checkpoints, as pure functions of the workload (DLIO's main.py, §1.9 and §5 of
// ../shared/reference/dlio.md). The coordinator and the agents compute it independently.
//
//  - Epoch-based (steps_between_checkpoints < 0): after training epoch checkpoint_after_epoch, then every
//    epochs_between_checkpoints epochs; one CHECKPOINT phase after the epoch's training phase and before its
//    evaluation (DLIO checkpoints at the end of _train). Directory global_epoch{E}_step{S+1} with S the epoch's
//    steps: DLIO passes its step counter after the loop has incremented it once more.
//  - Step-based (steps_between_checkpoints >= 1): after steps N, 2N, ... (1-based, counted from 1 in every epoch,
//    as DLIO resets next_checkpoint_step per epoch), inside the training phase: every rank stops after that step's
//    barrier, closes its block, saves global_epoch{E}_step{s}, and opens the next block (so checkpoint time stays
//    outside AU). No end-of-epoch checkpoint then. 0 means never (DLIO compares the step with 0).
//  - Checkpoint-only (workflow.checkpoint with workflow.train false): saves global_epoch1_step1..W, then loads
//    global_epoch1_step1..R (W = num_checkpoints_write, R = num_checkpoints_read; negative = 0), each after
//    sleeping time_between_checkpoints and a barrier.
//  - Loads with recovery_rank_shift: rank r reads the files of rank (r + ranks per agent) % world (DLIO's ppn
//    shift, which DLIO parses and never applies).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job/workload_spec.h"

namespace dlio {

// True when training epoch `epoch` (1-based) ends with a CHECKPOINT phase.
bool CheckpointAfterEpoch(const WorkloadSpec& spec, int64_t epoch);

// The 1-based steps of an epoch of `steps` steps after which every rank checkpoints inside the training phase.
std::vector<int64_t> CheckpointStepsInEpoch(const WorkloadSpec& spec, int64_t steps);

// The step number in the directory name of an end-of-epoch checkpoint (DLIO's: steps + 1).
inline int64_t EpochCheckpointStep(int64_t steps) { return steps + 1; }

// One save or load of the job.
struct CheckpointOp {
  bool load = false;
  int index = 1;       // 1-based among the job's saves (or loads): save_ckptN / load_ckptN
  int epoch = 1;       // global_epoch{epoch}
  int64_t step = 1;    // _step{step}
  bool operator==(const CheckpointOp& o) const {
    return load == o.load && index == o.index && epoch == o.epoch && step == o.step;
  }
};

// Checkpoint-only mode's sequence (empty unless workflow.checkpoint and not workflow.train).
std::vector<CheckpointOp> CheckpointOnlySequence(const WorkloadSpec& spec);

// The rank whose files `rank` loads.
int LoadSourceRank(const WorkloadSpec& spec, int rank, int world, int ranks_per_agent);

}  // namespace dlio
