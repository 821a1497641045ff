// PhaseRunner: runs one phase of a job on this agent's local ranks, with no knowledge of gRPC. Run() dispatches
// on the phase's kind; each kind lives in files of its own and sees the runner through a PhaseContext
// (agent/phase_context.h):
// - generate (agent/generate_phase.h): DLIO's folder layout, then file i of a split written by global rank
//   i % world, each local rank with a few worker threads, under a temporary name renamed when complete.
// - a training epoch or an evaluation (agent/steps_phase.h): per local rank a Loader (read_threads x prefetch
//   queue) feeds the step loop: load -> compute -> step barrier (training only, local ranks then the coordinator
//   through `barrier`) -> record; the epoch's step-based checkpoints between blocks; cache hygiene
//   (dlio_ext.evict_cache) and tracing (dlio_ext.trace).
// - a checkpoint (agent/checkpoint_phase.h): one save or load per local rank between a barrier before and, with
//   rank_sync, one after (inside the timing); checkpoint-only mode first sleeps time_between_checkpoints.
// The dataset's files are found as DLIO finds them, in a data folder or a bucket alike (agent/dataset_files.h).
// What outlives one phase stays here: the progress, the job's loader threads and trace buffers (kept from epoch to
// epoch, dropped after the job's last phase), the job's S3 configuration and its once-per-job preflight.
// Host facts (results/host_facts_json.h) before the job's first phase and after every phase, on the first local
// rank's result. Every error names agent, rank, job and phase. Cancel (the flag passed to Run) stops everything
// within ~50 ms.
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
#include "agent/step_barrier.h"
#include "agent/steps_phase.h"
#include "base/confined_dir.h"
#include "job/phase.h"
#include "results/results.h"
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
  // Bytes read (training and evaluation: after every step, so the progress line's MB/s is live; generation and
  // checkpoints: as files complete).
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
  // dlio_ext.barrier: announce (agent/step_barrier.h AnnounceBarrier): the agent's announce of a step and its wait
  // for the release, for the running phase. Without them (null) a job over several agents meets after compute.
  struct AnnounceFns {
    AnnounceBarrier::Announce announce;
    AnnounceBarrier::Await await;
    ClockSync* offsets = nullptr;  // the session's clock offset (null: the barrier keeps its own)
  };

  // Opens `data_root` (base/confined_dir.h): every file of every phase is opened, created, renamed and listed
  // below it, without following symbolic links. A root that cannot be opened fails every phase naming it.
  PhaseRunner(const std::filesystem::path& data_root, std::string agent_name, AgentMetrics* metrics)
      : root_(ConfinedDir::OpenRoot(data_root.string())),
        data_root_(data_root.string()),
        agent_(std::move(agent_name)),
        metrics_(metrics) {}
  // The data root every path is confined to.
  const absl::StatusOr<std::shared_ptr<const ConfinedDir>>& root() const { return root_; }

  // One RankEpochResult per local rank (epoch 0 and no blocks for generate).
  // `announce` (may be null): how the step barrier of a training epoch announces (dlio_ext.barrier: announce).
  absl::StatusOr<std::vector<RankEpochResult>> Run(const PhaseCommand& cmd, const BarrierFn& barrier,
                                                   const std::atomic<bool>* cancel,
                                                   const AnnounceFns* announce = nullptr);
  const PhaseProgress& progress() const { return progress_; }
  // Object storage: the agent's own endpoint and credentials (agent/object_store.h), used where an s3 job's
  // storage_options leave them out. Call before Run().
  void set_s3_defaults(S3AgentDefaults d) { s3_defaults_ = std::move(d); }

 private:
  // s3 jobs: the bucket configuration of the phase's job (made once per job) and, at the job's first phase on this
  // agent, the preflight (agent/object_store.h). Null for POSIX jobs. The phases reach it through PhaseContext::s3.
  absl::StatusOr<std::shared_ptr<const S3Config>> S3For(const PhaseContext& ctx);

  // Host facts (base/host_facts.h, results/host_facts_json.h): collected before the job's first phase here (the
  // start) and after every phase (the end); the end travels in the phase's result when it differs from the facts
  // sent last (facts_sent_, their JSON text; empty before the first phase). Touched by Run() only.
  std::string HostFactsWire(const std::string& start);

  const absl::StatusOr<std::shared_ptr<const ConfinedDir>> root_;
  const std::string data_root_;
  const std::string agent_;
  AgentMetrics* metrics_;
  PhaseProgress progress_;
  // The job's loader threads and trace buffers per local rank (agent/steps_phase.h), kept from epoch to epoch;
  // the threads are dropped after the job's last phase. Touched by Run() only (one at a time).
  LoaderThreads loader_threads_;
  // Object storage (touched by Run() only).
  S3AgentDefaults s3_defaults_;
  std::string s3_job_;                       // the job s3_config_ belongs to
  std::shared_ptr<const S3Config> s3_config_;
  std::string facts_sent_;  // HostFactsWire
};

}  // namespace dlio
