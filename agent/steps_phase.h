// The step phases: a training epoch (PhaseKind::kTrainEpoch) or an evaluation (PhaseKind::kEval), and the loader
// threads the PhaseRunner keeps for them from epoch to epoch.
//
// Set-up, once per phase: the epoch plan (plan/epoch_plan.h), the split's files (agent/dataset_files.h, from the
// data folder or the bucket), the loader configuration, the epoch's step-based checkpoints, the read bandwidth cap,
// and cache hygiene (dlio_ext.evict_cache: before the first, or every, training epoch the files this agent's ranks
// read this epoch lose their page cache, posix_fadvise POSIX_FADV_DONTNEED, and as root the whole page cache is
// dropped; the epoch's results then carry how, and the bytes the data root's device delivered: agent/cache_drop.h).
// Then per local rank (ForEachLocalRank), a Loader (read_threads x prefetch queue) feeds the step loop:
//   wait for a batch (load) -> sleep computation_time (compute, measured) -> step barrier (local ranks, then the
//   coordinator through ctx.barrier; none when the job's ranks are all here) -> record load, proc = load + compute,
//   compute and barrier wait. With dlio_ext.barrier: announce (the default, over several agents) the ranks announce
//   the step as their compute starts and end it at the coordinator's one instant (agent/step_barrier.h
//   AnnounceBarrier, through ctx.announce); the barrier wait is then the time from compute end to that instant.
// An evaluation runs the same loop over valid/ with batch_size_eval and eval_time, and no step barrier, as in DLIO.
// Step-based checkpoints (plan/checkpoint_schedule.h): after the barrier of a checkpoint step every rank closes its
// block, saves (agent/checkpoint_phase.h TakeCheckpoint), and opens the next block, in lockstep with the fleet
// because every barrier (step or checkpoint) has its own sequence number, the same on every rank.
// Tracing (dlio_ext.trace): the step thread records wait/compute/barrier, the loader threads open/read, into the
// LoaderThreads' buffers; each rank's events travel in its RankEpochResult.
// Hot path: per sample only the Loader's work (agent/loader.h); per step a few clock reads, the records (vectors
// reserved for the epoch), relaxed atomic adds to the progress and one short lock in the rank's metrics.
// Cancel (ctx.cancel) stops every rank within ~50 ms, inside a compute sleep or a capped read too.
// Thread-safety: RunSteps runs one phase; LoaderThreads is touched by the PhaseRunner's Run() only (one at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/worker_pool.h"
#include "results/results.h"
#include "results/trace_buffer.h"

namespace dlio {

struct PhaseCommand;
struct PhaseContext;

// Loader threads per local rank, kept from epoch to epoch of one job (torch's persistent_workers), and with --trace
// per local rank its step thread's TraceBuffer then one per loader thread (results/trace_buffer.h), allocated at the
// first traced phase and reused (cleared) by the next ones.
class LoaderThreads {
 public:
  // The job's loader threads, made at its first epoch and reused by the next ones (made anew when the job, the
  // number of local ranks or read_threads changed), and with --trace the buffers, cleared and named for cmd's ranks.
  void Prepare(const PhaseCommand& cmd);
  // Drops the threads (after the job's last phase or a failure: an idle agent keeps none). The trace buffers stay.
  void Clear() {
    pools_.clear();
    pools_job_.clear();
  }
  // Local rank `local`'s pool and trace buffers (step thread first); valid after Prepare for its local ranks.
  WorkerPool* pool(int local) const { return pools_[static_cast<size_t>(local)].get(); }
  const std::vector<std::unique_ptr<TraceBuffer>>& trace(int local) const {
    return trace_[static_cast<size_t>(local)];
  }

 private:
  std::string pools_job_;
  std::vector<std::unique_ptr<WorkerPool>> pools_;
  std::vector<std::vector<std::unique_ptr<TraceBuffer>>> trace_;
  int64_t trace_capacity_ = 0;
};

// A training epoch, or an evaluation when ctx.cmd.kind is kEval (see above): one RankEpochResult per local rank.
absl::StatusOr<std::vector<RankEpochResult>> RunSteps(const PhaseContext& ctx, LoaderThreads& threads);

}  // namespace dlio
