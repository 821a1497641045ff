#include "agent/checkpoint_phase.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "agent/phase_context.h"
#include "agent/step_barrier.h"
#include "base/sleep.h"
#include "plan/checkpoint_schedule.h"
#include "results/trace_buffer.h"

namespace dlio {

using phase_clock::NowUnixUs;
using phase_clock::Seconds;
using SteadyClock = phase_clock::Steady;

absl::StatusOr<CheckpointSetup> MakeCheckpointSetup(const WorkloadSpec& spec, int world,
                                                    const absl::StatusOr<std::shared_ptr<const ConfinedDir>>& root,
                                                    const std::shared_ptr<const S3Config>& s3) {
  absl::StatusOr<CheckpointModel> model = CheckpointModelFor(spec);
  if (!model.ok()) return model.status();
  absl::StatusOr<CheckpointPlan> plan = MakeCheckpointPlan(*model, world);
  if (!plan.ok()) return plan.status();
  if (s3) return CheckpointSetup{std::move(*plan), nullptr, spec.S3CheckpointPrefix(), s3};
  if (!root.ok()) return root.status();
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> folder =
      (*root)->Sub(spec.checkpoint_folder, ConfinedDir::Mode::kCreate, "checkpoint.checkpoint_folder");
  if (!folder.ok()) return folder.status();
  return CheckpointSetup{std::move(*plan), std::move(*folder), "", nullptr};
}

std::unique_ptr<BandwidthLimiter> CheckpointLimiter(const WorkloadSpec& spec) {
  if (spec.checkpoint_bandwidth_limit <= 0) return nullptr;
  BandwidthLimiter::Options lo;
  lo.bytes_per_second = static_cast<double>(spec.checkpoint_bandwidth_limit);
  return std::make_unique<BandwidthLimiter>(lo);
}

uint64_t CheckpointSeed(const WorkloadSpec& spec, int rank) {
  return static_cast<uint64_t>(spec.seed) * 0x2545F4914F6CDD1Dull ^ (static_cast<uint64_t>(rank) << 24);
}

absl::StatusOr<RankCheckpointResult> TakeCheckpoint(const WorkloadSpec& spec, const CheckpointSetup& setup,
                                                    Checkpointer& io, int rank, int world, int ranks_per_agent,
                                                    bool load, int index, int epoch, int64_t step,
                                                    const std::function<absl::Status()>& rank_sync,
                                                    RankMetrics* rm) {
  const int source = load ? LoadSourceRank(spec, rank, world, ranks_per_agent) : rank;
  const std::vector<CheckpointFile>& files = setup.plan.ranks[static_cast<size_t>(source)].files;
  const std::string dir = CheckpointDirName(epoch, step);
  if (load && spec.checkpoint_evict_cache) {
    if (absl::Status s = io.Evict(dir, files); !s.ok()) return s;
  }
  RankCheckpointResult r;
  r.rank = rank;
  r.index = index;
  r.load = load;
  r.epoch = epoch;
  r.start_unix_us = NowUnixUs();
  const auto t0 = SteadyClock::now();
  absl::StatusOr<CheckpointIo> done = load ? io.Load(dir, files) : io.Save(dir, files);
  if (!done.ok()) return done.status();
  if (spec.checkpoint_rank_sync) {
    if (absl::Status s = rank_sync(); !s.ok()) return s;
  }
  const auto t1 = SteadyClock::now();
  r.duration_s = Seconds(t1 - t0);
  r.end_unix_us = NowUnixUs();
  r.bytes = static_cast<uint64_t>(done->bytes);
  if (rm) {
    rm->RecordCheckpoint(load, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()),
                         r.bytes);
  }
  return r;
}

namespace {

// What the ranks of one checkpoint phase share.
struct CheckpointGroup {
  const CheckpointSetup& setup;
  BandwidthLimiter* limiter;  // null when uncapped
  StepBarrier& barrier;       // the local ranks, then the coordinator
  FirstError& first_error;
};

// One rank of a checkpoint phase: the optional sleep, the barrier before, the save or load (with the rank_sync
// barrier after it), its trace event; errors go to the group's FirstError and cancel the other ranks' barrier.
void CheckpointRank(const PhaseContext& ctx, CheckpointGroup& group, int rank, RankEpochResult& r) {
  const PhaseCommand& cmd = ctx.cmd;
  const WorkloadSpec& spec = cmd.spec;
  r.rank = rank;
  r.epoch = cmd.epoch;
  r.start_unix_us = NowUnixUs();
  const std::shared_ptr<RankMetrics> rm = ctx.metrics ? ctx.metrics->Rank(cmd.job_id, rank) : nullptr;
  if (rm) rm->SetPhase(RankPhase::kCheckpoint);
  auto fail = [&](const absl::Status& s) {
    group.first_error.Set(s.code() == absl::StatusCode::kCancelled ? s : Annotate(s, ctx.Where(rank)));
    group.barrier.Cancel(absl::CancelledError(absl::StrCat(ctx.Where(rank), ": another rank failed")));
  };
  // Checkpoint-only mode: DLIO's "compute" between checkpoints; a cancel cuts it short (base/sleep.h).
  if (!spec.train && spec.time_between_checkpoints > 0) SleepFor(spec.time_between_checkpoints, ctx.cancel);
  uint64_t barrier_seq = 0;
  absl::Status s = ctx.CancelAsked() ? absl::CancelledError(absl::StrCat(ctx.Where(rank), ": cancelled"))
                                     : group.barrier.Arrive(barrier_seq++);
  if (s.ok()) {
    Checkpointer io(group.setup.folder, spec.checkpoint_fsync, CheckpointSeed(spec, rank),
                    Checkpointer::kDefaultBufferBytes, group.setup.s3, group.setup.s3_prefix);
    io.set_limiter(group.limiter);
    io.set_cancel(ctx.cancel);  // a cancel stops the save between chunks and wakes the cap's sleep
    io.set_randomize(spec.checkpoint_randomize_tensor);
    const int64_t ck0 = SteadyNs();
    absl::StatusOr<RankCheckpointResult> c =
        TakeCheckpoint(spec, group.setup, io, rank, cmd.world, cmd.local_ranks, cmd.checkpoint_load,
                       cmd.checkpoint_index, cmd.epoch, cmd.checkpoint_step,
                       [&] { return group.barrier.Arrive(barrier_seq++); }, rm.get());
    if (c.ok() && spec.trace) {
      // --trace: the save or load as one event on the rank's step track (its bytes the rank's files).
      const std::unique_ptr<TraceBuffer> t = TraceBuffer::Make(StepTrackId(rank), 1);
      t->Record(c->load ? TraceKind::kCheckpointRead : TraceKind::kCheckpointWrite, ck0,
                static_cast<uint64_t>(SteadyNs() - ck0), c->bytes);
      t->Pack(TraceClockOffsetNs(), &r.trace_events);
    }
    if (c.ok()) {
      r.checkpoints.push_back(*c);
      ctx.progress.bytes += c->bytes;
    } else {
      s = c.status();
    }
  }
  if (!s.ok()) fail(s);
  r.end_unix_us = NowUnixUs();
  if (rm) rm->SetPhase(RankPhase::kIdle);
}

}  // namespace

absl::StatusOr<std::vector<RankEpochResult>> RunCheckpoint(const PhaseContext& ctx) {
  const PhaseCommand& cmd = ctx.cmd;
  absl::StatusOr<std::shared_ptr<const S3Config>> s3 = ctx.s3();
  if (!s3.ok()) return s3.status();
  absl::StatusOr<CheckpointSetup> setup = MakeCheckpointSetup(cmd.spec, cmd.world, ctx.root, *s3);
  if (!setup.ok()) return Annotate(setup.status(), ctx.Where(cmd.first_rank));
  ctx.progress.total = 1;
  const std::unique_ptr<BandwidthLimiter> limiter = CheckpointLimiter(cmd.spec);
  StepBarrier local_barrier(cmd.local_ranks, ctx.barrier);
  FirstError first_error;
  CheckpointGroup group{*setup, limiter.get(), local_barrier, first_error};
  std::vector<RankEpochResult> results(cmd.local_ranks);
  ForEachLocalRank(cmd, [&](int l, int rank) { CheckpointRank(ctx, group, rank, results[static_cast<size_t>(l)]); });
  if (absl::Status s = first_error.Get(); !s.ok()) return s;
  if (ctx.CancelAsked()) return absl::CancelledError(absl::StrCat(ctx.Where(cmd.first_rank), ": cancelled"));
  ctx.progress.done = 1;
  return results;
}

}  // namespace dlio
