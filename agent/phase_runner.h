// PhaseRunner: runs one phase of a job on this agent's local ranks, with no knowledge of gRPC.
//
// Generate: first DLIO's folder layout (readers/format.h DatasetFolders: train/, valid/, subfolders, the tfrecord
//   index folders, empty ones too, so DLIO's own reader accepts the dataset); then file i of a split belongs to
//   global rank i % world (DLIO's round-robin); each local rank writes its files through the format library, with
//   a few worker threads (the cores shared among the local ranks, so one file's fdatasync overlaps the next one's
//   generation), under a temporary name renamed when the file is complete.
// Train epoch: per local rank, a Loader (read_threads x prefetch queue) feeds the step loop:
//   wait for a batch (load) -> sleep computation_time (compute, measured) -> step barrier (local ranks, then the
//   coordinator through `barrier`) -> record load, proc = load + compute, compute and barrier wait.
// Eval (after chosen epochs): the same loop over valid/ with batch_size_eval and eval_time, and no step barrier,
//   as in DLIO.
// Checkpoints (plan/checkpoint_schedule.h): a checkpoint phase saves or loads one checkpoint per local rank
//   (checkpoint-only mode first sleeps time_between_checkpoints), between a barrier before and, with rank_sync,
//   one after (inside the timing). Step-based checkpoints happen inside the training phase: after the barrier of
//   a checkpoint step every rank closes its block, saves, and opens the next block, in lockstep with the fleet
//   because every barrier (step or checkpoint) has its own sequence number, the same on every rank. Files live
//   under checkpoint.checkpoint_folder resolved inside the data root, written through agent/checkpointer.h.
// Cache hygiene (dlio_ext.evict_cache): before the first (or every) training epoch each local rank drops the page
//   cache of the files it reads this epoch (posix_fadvise POSIX_FADV_DONTNEED; dirty pages are written first).
// Tracing (dlio_ext.trace): per-thread TraceBuffers record wait/compute/barrier (step thread) and open/read (loader
//   threads); each rank's events travel in its RankEpochResult.
// Every error names agent, rank, job and phase. Cancel (the flag passed to Run) stops everything within ~50 ms.
// Thread-safety: one Run() at a time; progress() may be read from any thread while it runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/metrics.h"
#include "agent/object_store.h"
#include "agent/worker_pool.h"
#include "base/confined_dir.h"
#include "job/phase.h"
#include "results/results.h"
#include "results/trace_buffer.h"
#include "job/workload_spec.h"

namespace dlio {

// A phase order as the agent runs it: the coordinator's order (job/phase.h) and its workload, parsed. The job's
// S3 secret, which travels beside the workload, is in spec.s3_secret_access_key as well.
struct PhaseCommand : PhaseOrder {
  WorkloadSpec spec;
};

struct PhaseProgress {
  std::atomic<uint64_t> done{0};     // steps done by the slowest local rank, or files written
  std::atomic<uint64_t> total{0};
  std::atomic<uint64_t> samples{0};
  std::atomic<uint64_t> bytes{0};
  // Live AU of a training epoch: the local ranks' compute time and wall time after each rank's first step (DLIO's
  // default exclude_start_steps), summed over ranks, in ns; one relaxed add each per rank and step.
  std::atomic<uint64_t> compute_ns{0};
  std::atomic<uint64_t> wall_ns{0};
};

class PhaseRunner {
 public:
  // Blocks until the coordinator released `step` for every agent of the job.
  using BarrierFn = std::function<absl::Status(uint64_t step)>;

  // Opens `data_root` (base/confined_dir.h): every file of every phase is opened, created, renamed and listed
  // below it, without following symbolic links. A root that cannot be opened fails every phase naming it.
  PhaseRunner(const std::filesystem::path& data_root, std::string agent_name, AgentMetrics* metrics)
      : root_(ConfinedDir::OpenRoot(data_root.string())), agent_(std::move(agent_name)), metrics_(metrics) {}
  // The data root every path is confined to.
  const absl::StatusOr<std::shared_ptr<const ConfinedDir>>& root() const { return root_; }

  // One RankEpochResult per local rank (epoch 0 and no blocks for generate).
  absl::StatusOr<std::vector<RankEpochResult>> Run(const PhaseCommand& cmd, const BarrierFn& barrier,
                                                   const std::atomic<bool>* cancel);
  const PhaseProgress& progress() const { return progress_; }
  // Object storage: the agent's own endpoint and credentials (agent/object_store.h), used where an s3 job's
  // storage_options leave them out. Call before Run().
  void set_s3_defaults(S3AgentDefaults d) { s3_defaults_ = std::move(d); }

 private:
  // The rooms of a phase (agent/phase_runner.cc): each phase has a set-up (what its ranks share, made once), then
  // runs its per-rank work on every local rank through ForEachLocalRank (phase_runner.cc).
  struct GenerateSetup;  // generate: the data folder, the two splits' formats, this agent's share of the files
  class FileWriter;      // generate: one worker thread of one rank writing its files
  struct StepsSetup;     // train/eval: the plan, the file list, the loader configuration, step checkpoints
  class RankSteps;       // train/eval: one rank's step loop
  class FirstError;      // the first error of a phase's threads

  absl::StatusOr<std::vector<RankEpochResult>> Generate(const PhaseCommand& cmd, const std::atomic<bool>* cancel);
  absl::StatusOr<std::unique_ptr<GenerateSetup>> SetUpGenerate(const PhaseCommand& cmd);
  void GenerateRank(const PhaseCommand& cmd, const GenerateSetup& setup, int rank, RankEpochResult& r,
                    std::atomic<bool>& stop, FirstError& first_error, const std::atomic<bool>* cancel);
  // A training epoch, or an evaluation when cmd.kind is kEval (then `barrier` is not used).
  absl::StatusOr<std::vector<RankEpochResult>> Steps(const PhaseCommand& cmd, const BarrierFn& barrier,
                                                     const std::atomic<bool>* cancel);
  absl::StatusOr<std::unique_ptr<StepsSetup>> SetUpSteps(const PhaseCommand& cmd, const std::atomic<bool>* cancel);
  // The job's loader threads (pools_) and trace buffers (trace_) for this phase's local ranks.
  void PrepareLoaderThreads(const PhaseCommand& cmd);
  // A checkpoint phase (see above).
  absl::StatusOr<std::vector<RankEpochResult>> CheckpointPhase(const PhaseCommand& cmd, const BarrierFn& barrier,
                                                               const std::atomic<bool>* cancel);
  std::string Where(const PhaseCommand& cmd, int rank) const;
  // s3 jobs: the bucket configuration of cmd's job (made once per job) and, at the job's first phase on this
  // agent, the preflight (agent/object_store.h). Null for POSIX jobs.
  absl::StatusOr<std::shared_ptr<const S3Config>> S3For(const PhaseCommand& cmd);

  const absl::StatusOr<std::shared_ptr<const ConfinedDir>> root_;
  const std::string agent_;
  AgentMetrics* metrics_;
  PhaseProgress progress_;
  // Loader threads per local rank, kept from epoch to epoch of one job (torch's persistent_workers); dropped after
  // the job's last phase. Touched by Run() only (one at a time).
  std::string pools_job_;
  std::vector<std::unique_ptr<WorkerPool>> pools_;
  // --trace: per local rank, its step thread's buffer then one per loader thread (results/trace_buffer.h),
  // allocated at the first traced phase and reused (cleared) by the next ones. Touched by Run() only.
  std::vector<std::vector<std::unique_ptr<TraceBuffer>>> trace_;
  int64_t trace_capacity_ = 0;
  // Object storage (touched by Run() only).
  S3AgentDefaults s3_defaults_;
  std::string s3_job_;                       // the job s3_config_ belongs to
  std::shared_ptr<const S3Config> s3_config_;
};

// Lists the data files of `split` ("train" or "valid") under `data_dir` as DLIO does: files with the format's
// extension, directly in the split folder or in its subfolders, sorted, the first `count` of them (full paths). Error
// if fewer exist, naming `count_key` (dataset.num_files_train or dataset.num_files_eval), with `hint` appended; a
// symbolic link among them is refused.
absl::StatusOr<std::vector<std::string>> ListDataFiles(const ConfinedDir& data_dir, const std::string& split,
                                                       const std::string& ext, int64_t count,
                                                       const std::string& count_key = "dataset.num_files_train",
                                                       const std::string& hint = "");

}  // namespace dlio
