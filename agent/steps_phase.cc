#include "agent/steps_phase.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/cache_drop.h"
#include "agent/checkpoint_phase.h"
#include "agent/dataset_files.h"
#include "agent/loader.h"
#include "agent/phase_context.h"
#include "agent/split_listing.h"
#include "agent/step_barrier.h"
#include "base/random.h"
#include "base/sleep.h"
#include "plan/checkpoint_schedule.h"
#include "plan/epoch_plan.h"
#include "readers/format.h"
#include "spdlog/spdlog.h"

namespace dlio {

using phase_clock::Nanos;
using phase_clock::NowUnixUs;
using phase_clock::Seconds;
using SteadyClock = phase_clock::Steady;

void LoaderThreads::Prepare(const PhaseCommand& cmd) {
  const WorkloadSpec& spec = cmd.spec;
  // The job's loader threads, made at its first epoch and reused by the next ones.
  const int loader_threads = static_cast<int>(std::max<int64_t>(1, spec.read_threads));
  if (pools_job_ != cmd.job_id || pools_.size() != static_cast<size_t>(cmd.local_ranks) ||
      pools_[0]->size() != loader_threads) {
    pools_.clear();
    for (int l = 0; l < cmd.local_ranks; ++l) pools_.push_back(std::make_unique<WorkerPool>(loader_threads));
    pools_job_ = cmd.job_id;
  }
  if (!spec.trace) return;
  // Tracing: one buffer per rank's step thread and per loader thread, kept from phase to phase.
  const size_t per_rank = 1 + static_cast<size_t>(loader_threads);
  if (trace_.size() != static_cast<size_t>(cmd.local_ranks) || trace_[0].size() != per_rank ||
      trace_capacity_ != spec.trace_events_per_thread) {
    trace_.clear();
    trace_capacity_ = spec.trace_events_per_thread;
    for (int l = 0; l < cmd.local_ranks; ++l) {
      std::vector<std::unique_ptr<TraceBuffer>> v;
      for (size_t k = 0; k < per_rank; ++k) v.push_back(std::make_unique<TraceBuffer>(0, trace_capacity_));
      trace_.push_back(std::move(v));
    }
  }
  for (int l = 0; l < cmd.local_ranks; ++l) {
    const int rank = cmd.first_rank + l;
    for (size_t k = 0; k < trace_[l].size(); ++k) {
      trace_[l][k]->Clear();
      trace_[l][k]->set_tid(k == 0 ? StepTrackId(rank) : LoaderTrackId(rank, static_cast<int>(k - 1)));
    }
  }
}

namespace {

// What every rank of a training epoch or an evaluation shares, made once per phase by SetUpSteps.
struct StepsSetup {
  bool eval = false;
  EpochPlan plan;                                // the epoch's samples per rank; its batch is the loader's
  std::shared_ptr<const ConfinedDir> data_dir;   // POSIX: the data folder; null for s3
  std::unique_ptr<Format> format;
  std::vector<int64_t> ckpt_steps;               // step-based checkpoints of this epoch (none for evaluations)
  std::unique_ptr<CheckpointSetup> ckpt;         // set when ckpt_steps is not empty
  std::unique_ptr<BandwidthLimiter> ckpt_limiter;  // dlio_ext.checkpoint_bandwidth_limit, for step checkpoints
  std::unique_ptr<BandwidthLimiter> limiter;     // dlio_ext.read_bandwidth_limit: shared by the agent's ranks
  LoaderConfig cfg;                              // per rank, its pool and trace buffers are added
  std::string cache_drop;                        // dlio_ext.evict_cache this epoch: "drop_caches", "fadvise" or ""
  std::optional<dev_t> device;                   // the data root's device, when the cache was cleared
  std::optional<uint64_t> device_bytes_before;   // its /proc/diskstats read bytes after the clearing
};

// Drops the page cache of `paths` (posix_fadvise DONTNEED after an fdatasync-free flush: the files are read-only
// here, so there are no dirty pages to lose). Errors name the file.
absl::Status EvictFiles(const ConfinedDir& dir, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    const int fd = dir.Open(path, O_RDONLY);
    if (fd < 0) return absl::InternalError(absl::StrCat("dlio_ext.evict_cache: open '", path, "': ", std::strerror(errno)));
    const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (rc != 0) {
      return absl::InternalError(absl::StrCat("dlio_ext.evict_cache: posix_fadvise '", path, "': ", std::strerror(rc)));
    }
  }
  return absl::OkStatus();
}

// The phase's data folder inside the data root (POSIX), or null for s3; a missing folder says how to make it.
absl::StatusOr<std::shared_ptr<const ConfinedDir>> ExistingDataDir(
    const WorkloadSpec& spec, const absl::StatusOr<std::shared_ptr<const ConfinedDir>>& root, bool objects,
    const std::string& hint) {
  if (objects) return std::shared_ptr<const ConfinedDir>();
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> d =
      root.ok() ? (*root)->Sub(spec.data_folder, ConfinedDir::Mode::kExisting, "dataset.data_folder")
                : absl::StatusOr<std::shared_ptr<const ConfinedDir>>(root.status());
  if (!d.ok() && d.status().code() == absl::StatusCode::kNotFound) {
    return absl::NotFoundError(
        absl::StrCat(d.status().message(), " (generate the dataset with workflow.generate_data: true)", hint));
  }
  return d;
}

// The files of the phase's split: DLIO's file discovery (agent/dataset_files.h), a directory listing or
// ListObjectsV2 over the bucket. The hint is for a data folder only: every agent sees the same bucket.
// With the job's listing of the split in the order (agent/split_listing.h), its names: nothing is listed here.
absl::StatusOr<DataFileNames> PhaseFiles(const PhaseCommand& cmd, bool eval, const ConfinedDir* data_dir,
                                         const std::shared_ptr<const S3Config>& s3, const Format& format,
                                         const std::string& hint, std::string* ignored) {
  const WorkloadSpec& spec = cmd.spec;
  const char* split = eval ? "valid" : "train";
  const int64_t count = eval ? spec.num_files_eval : spec.num_files_train;
  const char* key = eval ? "dataset.num_files_eval" : "dataset.num_files_train";
  if (const SplitListing* shared = SharedListingOf(cmd, split)) {
    *ignored = shared->note;
    const DatasetLocation where =
        s3 ? DatasetLocation::Bucket(s3, spec.S3DataPrefix()) : DatasetLocation::Folder(*data_dir);
    return ListingNames(*shared, where, count, key);
  }
  DataFileNaming naming;  // dataset.skip_listing (issue 27 item 3): derived names, or listed
  naming.derive = spec.SkipsListing(count);
  naming.list_if_other_names = spec.skip_listing < 0;
  naming.subfolders = eval ? spec.num_subfolders_eval : spec.num_subfolders_train;
  naming.interval = spec.listing_validation_interval;
  if (s3) {
    return FindDataFiles(DatasetLocation::Bucket(s3, spec.S3DataPrefix()), split, format.extension(), count, naming,
                         key, "", spec.file_prefix, ignored);
  }
  return FindDataFiles(DatasetLocation::Folder(*data_dir), split, format.extension(), count, naming, key, hint,
                       spec.file_prefix, ignored);
}

// Cache hygiene: drops the page cache of the files this agent's ranks read this epoch.
absl::Status EvictEpochFiles(const PhaseCommand& cmd, const EpochPlan& plan, const ConfinedDir& data_dir,
                             const DataFileNames& files) {
  std::vector<char> mine(files.size(), 0);
  for (int rank = cmd.first_rank; rank < cmd.first_rank + cmd.local_ranks; ++rank) {
    if (AccessModeFor(cmd.spec) == AccessMode::kStream) {
      for (const ThreadStream& ts : plan.RankStream(rank).threads) {
        for (uint32_t f : ts.files) mine[f] = 1;
      }
    } else {
      std::vector<SampleRef> slice(4096);  // the plan a slice at a time: nothing held per sample
      const int64_t per_rank = plan.steps() * plan.params().batch;
      for (int64_t first = 0; first < per_rank; first += static_cast<int64_t>(slice.size())) {
        const int64_t count = std::min<int64_t>(static_cast<int64_t>(slice.size()), per_rank - first);
        plan.RankSlice(rank, first, count, slice.data());
        for (int64_t j = 0; j < count; ++j) mine[slice[static_cast<size_t>(j)].file] = 1;
      }
    }
  }
  std::vector<std::string> evict;
  for (size_t f = 0; f < mine.size(); ++f) {
    if (mine[f]) evict.push_back(files[f]);  // only this agent's files: its shard
  }
  return EvictFiles(data_dir, evict);
}

// Cache hygiene before a training epoch (agent/cache_drop.h): the files this agent's ranks read this epoch are
// advised away; as root the whole page cache is dropped too. Then the data root's device counter is read, so the
// epoch's device bytes show whether it read the storage.
absl::Status ClearEpochCache(const PhaseCommand& cmd, StepsSetup& setup) {
  if (absl::Status s = EvictEpochFiles(cmd, setup.plan, *setup.data_dir, setup.cfg.files); !s.ok()) return s;
  setup.cache_drop = ChooseCacheDrop();
  if (setup.cache_drop == kDropCachesMethod) {
    if (absl::Status s = DropPageCache(); !s.ok()) return s;
  }
  setup.device = DeviceOfFd(setup.data_dir->fd());
  if (setup.device) setup.device_bytes_before = DeviceReadBytes(*setup.device);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<StepsSetup>> SetUpSteps(const PhaseContext& ctx) {
  const PhaseCommand& cmd = ctx.cmd;
  const WorkloadSpec& spec = cmd.spec;
  auto setup = std::make_unique<StepsSetup>();
  setup->eval = cmd.kind == PhaseKind::kEval;
  const bool eval = setup->eval;
  absl::StatusOr<EpochPlan> plan =
      EpochPlan::Make(eval ? EvalPlanParams(spec, cmd.world) : TrainPlanParams(spec, cmd.world), cmd.epoch);
  if (!plan.ok()) return Annotate(plan.status(), ctx.Where(cmd.first_rank));
  setup->plan = std::move(*plan);
  absl::StatusOr<std::shared_ptr<const S3Config>> s3 = ctx.s3();
  if (!s3.ok()) return s3.status();
  // Agents of one job read one dataset: without a shared data folder each agent finds only the share it generated.
  const std::string hint =
      cmd.world > cmd.local_ranks
          ? "; with several agents every agent must see the whole dataset: give them one shared data folder (a "
            "parallel file system or NFS mounted below each --data-root), see docs/fleet.md"
          : "";
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> data_dir = ExistingDataDir(spec, ctx.root, *s3 != nullptr, hint);
  if (!data_dir.ok()) return Annotate(data_dir.status(), ctx.Where(cmd.first_rank));
  setup->data_dir = std::move(*data_dir);
  absl::StatusOr<std::unique_ptr<Format>> format =
      MakeFormat(spec.format, FormatOptionsFor(spec, setup->data_dir, eval ? "valid" : "train", *s3));
  if (!format.ok()) return format.status();
  setup->format = std::move(*format);
  std::string ignored;  // files of other layouts left out: said once per job, at its first phase of the split
  absl::StatusOr<DataFileNames> files =
      PhaseFiles(cmd, eval, setup->data_dir.get(), *s3, *setup->format, hint, &ignored);
  if (!files.ok()) return Annotate(files.status(), ctx.Where(cmd.first_rank));
  if (!ignored.empty() && cmd.epoch == (eval ? spec.eval_after_epoch : 1)) {
    spdlog::warn("{}: {}", ctx.Where(cmd.first_rank), ignored);
  }
  if (!eval) setup->ckpt_steps = CheckpointStepsInEpoch(spec, setup->plan.steps());
  if (!setup->ckpt_steps.empty()) {
    absl::StatusOr<CheckpointSetup> c = MakeCheckpointSetup(spec, cmd.world, ctx.root, *s3);
    if (!c.ok()) return Annotate(c.status(), ctx.Where(cmd.first_rank));
    setup->ckpt = std::make_unique<CheckpointSetup>(std::move(*c));
  }
  LoaderConfig& cfg = setup->cfg;
  cfg.format = setup->format.get();
  cfg.files = std::move(*files);
  cfg.batch = setup->plan.params().batch;  // one batch size: the plan's (batch_size, or batch_size_eval)
  cfg.threads = spec.read_threads;
  cfg.prefetch = spec.prefetch_size;
  cfg.preprocess = spec.preprocess_time;
  cfg.seed = static_cast<uint64_t>(spec.seed) ^ (static_cast<uint64_t>(cmd.epoch) << 32);
  cfg.cancel = ctx.cancel;
  setup->ckpt_limiter = CheckpointLimiter(spec);
  if (spec.read_bandwidth_limit > 0) {  // one limiter for every rank of this agent, living as long as this phase
    BandwidthLimiter::Options lo;
    lo.bytes_per_second = static_cast<double>(spec.read_bandwidth_limit);
    setup->limiter = std::make_unique<BandwidthLimiter>(lo);
    cfg.limiter = setup->limiter.get();
  }
  if (!eval && (spec.evict_cache == "every_epoch" || (spec.evict_cache == "before_training" && cmd.epoch == 1))) {
    if (absl::Status s = ClearEpochCache(cmd, *setup); !s.ok()) return Annotate(s, ctx.Where(cmd.first_rank));
  }
  return setup;
}

// One rank's step loop of a training epoch or an evaluation:
//   wait for a batch (load) -> sleep the compute time -> step barrier (training) -> record the step,
// with the epoch's step-based checkpoints between blocks. The ranks of the phase share `group`.
class RankSteps {
 public:
  // What the phase's ranks share while they run.
  struct Group {
    std::atomic<bool> stop{false};
    FirstError first_error;
    StepBarrier barrier;
    // dlio_ext.barrier: announce over several agents (agent/step_barrier.h); null: the ranks meet after compute.
    std::unique_ptr<AnnounceBarrier> announce;
    std::vector<std::atomic<uint64_t>> rank_steps;  // steps done per local rank
    Group(const PhaseContext& ctx)
        // When every rank of the job is on this agent, the local barrier is the whole barrier: no round trip to
        // the coordinator per step (it knows, and does not expect arrivals from a single-agent job).
        : barrier(ctx.cmd.local_ranks, ctx.cmd.local_ranks == ctx.cmd.world ? StepBarrier::Global() : ctx.barrier),
          rank_steps(static_cast<size_t>(ctx.cmd.local_ranks)) {
      const PhaseCommand& cmd = ctx.cmd;
      if (ctx.announce != nullptr && cmd.kind == PhaseKind::kTrainEpoch && cmd.local_ranks < cmd.world &&
          cmd.spec.barrier == "announce") {
        announce = std::make_unique<AnnounceBarrier>(cmd.local_ranks, AnnounceBarrier::Steady(ctx.cancel),
                                                     ctx.announce->announce, ctx.announce->await,
                                                     ctx.announce->offsets);
      }
    }
    // A barrier with no compute before it (step-based checkpoints).
    absl::Status Arrive(uint64_t seq) { return announce ? announce->Arrive(seq) : barrier.Arrive(seq); }
    void Cancel(const absl::Status& why) {
      barrier.Cancel(why);
      if (announce) announce->Cancel(why);
    }
  };

  RankSteps(const PhaseContext& ctx, const LoaderThreads& threads, const StepsSetup& setup, Group& group, int local,
            RankEpochResult& r)
      : ctx_(ctx), threads_(threads), cmd_(ctx.cmd), spec_(ctx.cmd.spec), setup_(setup), group_(group),
        progress_(ctx.progress), local_(local), rank_(ctx.cmd.first_rank + local), cancel_(ctx.cancel), r_(r),
        rm_(ctx.metrics ? ctx.metrics->Rank(ctx.cmd.job_id, rank_) : nullptr),
        // Per rank and epoch: reproducible compute draws that differ between ranks and epochs.
        compute_rng_(static_cast<uint64_t>(spec_.seed) * 0x9E3779B97F4A7C15ull ^
                     (static_cast<uint64_t>(rank_) << 20) ^ static_cast<uint64_t>(ctx.cmd.epoch) ^
                     (setup.eval ? 0x5bd1e995ull << 32 : 0)) {}

  void Run() {
    Start();
    const int64_t steps = setup_.plan.steps();
    for (int64_t step = 0; step < steps; ++step) {
      if (!Step(step)) break;
      if (next_ckpt_ < setup_.ckpt_steps.size() && setup_.ckpt_steps[next_ckpt_] == step + 1 && !Checkpoint(step)) {
        break;
      }
    }
    Finish();
  }

 private:
  void Fail(const absl::Status& s) {
    group_.first_error.Set(s.code() == absl::StatusCode::kCancelled ? s : Annotate(s, ctx_.Where(rank_)));
    group_.stop = true;
    group_.Cancel(absl::CancelledError(absl::StrCat(ctx_.Where(rank_), ": another rank failed")));
  }
  absl::Status Cancelled(const char* where, int64_t step) const {
    return absl::CancelledError(absl::StrCat(ctx_.Where(rank_), ": cancelled", where, step));
  }
  bool CancelAsked() const { return cancel_ && *cancel_; }

  // The rank's loader, metrics and first block.
  void Start() {
    const int64_t steps = setup_.plan.steps();
    r_.rank = rank_;
    r_.epoch = cmd_.epoch;
    r_.dropped_samples = rank_ == 0 && !setup_.eval ? static_cast<uint64_t>(setup_.plan.DroppedSamples()) : 0;
    LoaderConfig cfg = setup_.cfg;
    cfg.pool = threads_.pool(local_);
    cfg.rank = rank_;
    if (spec_.trace) {
      const std::vector<std::unique_ptr<TraceBuffer>>& trace = threads_.trace(local_);
      step_trace_ = trace[0].get();
      for (size_t k = 1; k < trace.size(); ++k) cfg.trace.push_back(trace[k].get());
    }
    block_.block = 1;
    block_.load.reserve(steps);
    block_.proc.reserve(steps);
    block_.compute.reserve(steps);
    block_.barrier.reserve(steps);
    // The epoch starts before the loader does (as a torch DataLoader's iteration starts its workers' epoch): its
    // start-up and first reads belong to the first step's load time, not to the time before the epoch.
    r_.start_unix_us = block_.start_unix_us = NowUnixUs();
    block_start_ = window_start_ = prev_step_end_ = SteadyClock::now();
    loader_ = AccessModeFor(spec_) == AccessMode::kStream
                  ? Loader::StartStream(cfg, setup_.plan.RankStream(rank_), steps, &group_.stop)
                  : Loader::StartIndex(cfg, setup_.plan, rank_, steps, &group_.stop);
    if (rm_) {
      rm_->AttachLoader(loader_.get(), setup_.eval);
      rm_->epoch = cmd_.epoch;
      rm_->au_target_ratio = spec_.au_threshold;
      rm_->demand_bytes_per_second = DemandBytesPerSecondPerAccelerator(spec_).value_or(0);
      rm_->SetPhase(setup_.eval ? RankPhase::kEval : RankPhase::kTrain);
    }
    if (setup_.ckpt) {
      ckpt_io_ = std::make_unique<Checkpointer>(setup_.ckpt->folder, spec_.checkpoint_fsync,
                                                CheckpointSeed(spec_, rank_), Checkpointer::kDefaultBufferBytes,
                                                setup_.ckpt->s3, setup_.ckpt->s3_prefix);
      ckpt_io_->set_limiter(setup_.ckpt_limiter.get());
      ckpt_io_->set_cancel(cancel_);  // a cancel stops the save between chunks and wakes the cap's sleep
      ckpt_io_->set_randomize(spec_.checkpoint_randomize_tensor);
    }
  }

  // Load, compute and (training) the step barrier of one step, then its records; false when the rank stops.
  bool Step(int64_t step) {
    if (group_.stop || CancelAsked()) {
      Fail(Cancelled(" at step ", step));
      return false;
    }
    const auto t0 = SteadyClock::now();
    if (absl::Status s = loader_->Next(); !s.ok()) {
      Fail(s.code() == absl::StatusCode::kCancelled && CancelAsked() ? Cancelled(" at step ", step) : s);
      return false;
    }
    const auto t1 = SteadyClock::now();
    if (!Compute(step, t1)) return false;
    const auto t2 = SteadyClock::now();
    // DLIO's evaluation has no per-step barrier.
    absl::Status s = setup_.eval      ? absl::OkStatus()
                     : group_.announce ? group_.announce->Finish(barrier_seq_++)
                                       : group_.barrier.Arrive(barrier_seq_++);
    if (!s.ok()) {
      Fail(s);
      return false;
    }
    Record(step, t0, t1, t2, SteadyClock::now());
    return true;
  }

  // The step's compute, a sleep of the drawn time from t1. With the announce barrier the rank announces its compute
  // (and when it ends) first, and sleeps to that instant. False when the rank stops.
  bool Compute(int64_t step, SteadyClock::time_point t1) {
    const Distribution& compute = setup_.eval ? spec_.eval_time : spec_.computation_time;
    const double seconds = compute.IsZero() ? 0 : compute.Sample(compute_rng_);
    if (group_.announce && !setup_.eval) {
      const auto end = t1 + std::chrono::duration_cast<SteadyClock::duration>(
                                std::chrono::duration<double>(std::min(seconds, kMaxSleepSeconds)));
      const int64_t end_ns = static_cast<int64_t>(Nanos(end.time_since_epoch()));
      if (absl::Status s = group_.announce->Start(barrier_seq_, end_ns); !s.ok()) {
        Fail(s);
        return false;
      }
      if (AnnounceBarrier::Steady(cancel_).sleep_until(end_ns)) return true;
    } else if (compute.IsZero() || SleepFor(seconds, cancel_)) {
      return true;
    }
    Fail(Cancelled(" in the compute of step ", step));
    return false;
  }

  // The step's times: trace events, the block's timings, the live AU, the rank's metrics and the phase's progress.
  void Record(int64_t step, SteadyClock::time_point t0, SteadyClock::time_point t1, SteadyClock::time_point t2,
              SteadyClock::time_point t3) {
    if (step_trace_ != nullptr) {
      auto ns = [](SteadyClock::time_point t) { return static_cast<int64_t>(Nanos(t.time_since_epoch())); };
      // steady_clock is CLOCK_MONOTONIC on Linux, the TraceBuffer's clock.
      step_trace_->Record(TraceKind::kWait, ns(t0), static_cast<uint64_t>(ns(t1) - ns(t0)), 0);
      step_trace_->Record(TraceKind::kCompute, ns(t1), static_cast<uint64_t>(ns(t2) - ns(t1)), 0);
      if (!setup_.eval) step_trace_->Record(TraceKind::kBarrier, ns(t2), static_cast<uint64_t>(ns(t3) - ns(t2)), 0);
    }
    block_.load.push_back(Seconds(t1 - t0));
    block_.compute.push_back(Seconds(t2 - t1));
    block_.proc.push_back(Seconds(t2 - t0));
    block_.barrier.push_back(Seconds(t3 - t2));
    group_.rank_steps[static_cast<size_t>(local_)] = step + 1;
    // Live AU for the gauge: compute over wall time after the first step's load and compute (DLIO leaves out the
    // first step's proc, not its barrier wait: a fleet whose agents start apart waits there, and DLIO's AU counts it).
    if (setup_.eval) {
    } else if (step == 0) {
      window_start_ = t2;
      progress_.wall_ns.fetch_add(static_cast<uint64_t>(Nanos(t3 - t2)), std::memory_order_relaxed);
    } else {
      window_compute_ += Seconds(t2 - t1);
      const double wall = Seconds(t3 - window_start_);
      if (rm_ && wall > 0) rm_->au_ratio = window_compute_ / wall;
      // The fleet's live AU (Progress): this step's compute and wall time, from the previous step's end.
      progress_.compute_ns.fetch_add(static_cast<uint64_t>(Nanos(t2 - t1)), std::memory_order_relaxed);
      progress_.wall_ns.fetch_add(static_cast<uint64_t>(Nanos(t3 - prev_step_end_)), std::memory_order_relaxed);
    }
    prev_step_end_ = t3;
    if (local_ == 0 && group_.announce && ctx_.metrics) {  // the barrier's error bound so far, live
      ctx_.metrics->SetBarrierErrorBound(group_.announce->max_error_bound_ns());
      ctx_.metrics->SetBarrierErrorBoundP50(group_.announce->p50_error_bound_ns());
    }
    if (rm_) {
      // Per-rank histograms, one short lock per step; the scrape reads copies (never a Prometheus call here).
      rm_->RecordStep(static_cast<uint64_t>(Nanos(t1 - t0)), static_cast<uint64_t>(Nanos(t3 - t0)),
                      static_cast<uint64_t>(Nanos(t3 - t2)));
      if (!setup_.eval) {
        rm_->steps += 1;
        rm_->last_step_unix_ms = NowUnixUs() / 1000;
      }
    }
    progress_.samples += static_cast<uint64_t>(setup_.cfg.batch);  // the batch the loader delivered
    AddReadBytes(loader_->BytesRead());
    uint64_t slowest = group_.rank_steps[0];
    for (auto& s : group_.rank_steps) slowest = std::min<uint64_t>(slowest, s);
    progress_.done = slowest;
  }

  // A step-based checkpoint after `step`: the block ends here, the checkpoint runs outside it, the next block starts
  // after it (DLIO's end_block / start_save_ckpt / start_block). False when it failed.
  bool Checkpoint(int64_t step) {
    block_.duration_s = Seconds(SteadyClock::now() - block_start_);
    block_.end_unix_us = NowUnixUs();
    const int number = block_.block;
    r_.blocks.push_back(std::move(block_));
    block_ = BlockTimings();
    block_.block = number + 1;
    if (rm_) rm_->SetPhase(RankPhase::kCheckpoint);
    const int64_t ck0 = step_trace_ != nullptr ? SteadyNs() : 0;
    absl::StatusOr<RankCheckpointResult> c = TakeCheckpoint(
        spec_, *setup_.ckpt, *ckpt_io_, rank_, cmd_.world, cmd_.local_ranks, false,
        cmd_.checkpoint_index + static_cast<int>(next_ckpt_), cmd_.epoch, step + 1,
        [&] { return group_.Arrive(barrier_seq_++); }, rm_.get());
    if (rm_) rm_->SetPhase(RankPhase::kTrain);
    if (!c.ok()) {
      Fail(c.status().code() == absl::StatusCode::kCancelled && CancelAsked()
               ? Cancelled(" in the checkpoint after step ", step + 1)
               : c.status());
      return false;
    }
    if (step_trace_ != nullptr) {  // one event per rank and save, its bytes the rank's files
      step_trace_->Record(TraceKind::kCheckpointWrite, ck0, static_cast<uint64_t>(SteadyNs() - ck0), c->bytes);
    }
    r_.checkpoints.push_back(*c);
    ++next_ckpt_;
    block_.start_unix_us = NowUnixUs();
    block_start_ = SteadyClock::now();
    prev_step_end_ = block_start_;  // checkpoint time stays out of the live AU, as out of DLIO's
    window_start_ = block_start_;
    window_compute_ = 0;
    return true;
  }

  // The rank's bytes read so far: the part the phase's progress has not counted yet is added to it.
  void AddReadBytes(uint64_t read) {
    if (read <= bytes_counted_) return;
    progress_.bytes.fetch_add(read - bytes_counted_, std::memory_order_relaxed);
    bytes_counted_ = read;
  }

  // Closes the last block, stops the loader and collects the rank's I/O counters and trace events.
  void Finish() {
    block_.duration_s = Seconds(SteadyClock::now() - block_start_);
    r_.end_unix_us = block_.end_unix_us = NowUnixUs();
    r_.io = loader_->Snapshot();
    AddReadBytes(r_.io.bytes);  // the rest (reads after the last step's count)
    if (rm_) {
      rm_->DetachLoader();
      rm_->SetPhase(RankPhase::kIdle);
    }
    loader_.reset();  // joins the loader threads' work: their trace buffers are complete now
    if (spec_.trace) {
      const int64_t offset = TraceClockOffsetNs();
      for (const auto& b : threads_.trace(local_)) {
        b->Pack(offset, &r_.trace_events);
        r_.trace_dropped += b->dropped();
      }
    }
    // A checkpoint at the epoch's last step leaves an empty block, which DLIO does not record either.
    if (!block_.proc.empty() || r_.blocks.empty()) r_.blocks.push_back(std::move(block_));
  }

  const PhaseContext& ctx_;
  const LoaderThreads& threads_;
  const PhaseCommand& cmd_;
  const WorkloadSpec& spec_;
  const StepsSetup& setup_;
  Group& group_;
  PhaseProgress& progress_;
  const int local_;
  const int rank_;
  const std::atomic<bool>* cancel_;
  RankEpochResult& r_;
  const std::shared_ptr<RankMetrics> rm_;
  Xoshiro256 compute_rng_;
  std::unique_ptr<Loader> loader_;
  TraceBuffer* step_trace_ = nullptr;
  std::unique_ptr<Checkpointer> ckpt_io_;
  BlockTimings block_;
  uint64_t barrier_seq_ = 0;  // every barrier of the phase gets the next number, the same on every rank
  size_t next_ckpt_ = 0;
  SteadyClock::time_point block_start_, window_start_, prev_step_end_;
  double window_compute_ = 0;
  uint64_t bytes_counted_ = 0;  // of the loader's bytes read, those already in progress_.bytes
};

}  // namespace

absl::StatusOr<std::vector<RankEpochResult>> RunSteps(const PhaseContext& ctx, LoaderThreads& threads) {
  const PhaseCommand& cmd = ctx.cmd;
  absl::StatusOr<std::unique_ptr<StepsSetup>> setup = SetUpSteps(ctx);
  if (!setup.ok()) return setup.status();
  ctx.progress.total = (*setup)->plan.steps();
  threads.Prepare(cmd);
  RankSteps::Group group(ctx);
  std::vector<RankEpochResult> results(cmd.local_ranks);
  ForEachLocalRank(cmd, [&](int l, int) {
    RankSteps(ctx, threads, **setup, group, l, results[static_cast<size_t>(l)]).Run();
  });
  if (absl::Status s = group.first_error.Get(); !s.ok()) return s;
  const StepsSetup& done = **setup;
  std::optional<uint64_t> after;
  if (done.device_bytes_before) after = DeviceReadBytes(*done.device);
  for (auto& r : results) {
    r.cache_drop = done.cache_drop;
    if (after && *after >= *done.device_bytes_before) {
      r.device_read_bytes = static_cast<int64_t>(*after - *done.device_bytes_before);
    }
  }
  return results;
}

}  // namespace dlio
