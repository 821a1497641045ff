// StepBarrier: the local half of the per-step barrier (the emulated allreduce).
//
// The agent's local ranks meet here; the last one to arrive calls `global(step)` (one BarrierArrive to the
// coordinator, blocking until its BarrierRelease), then releases the local ranks. So the coordinator sees one
// arrival per agent and step, whatever the number of local ranks.
// Cancel() wakes every waiter with Cancelled (a failed rank must not leave the others hanging).
// Thread-safety: Arrive() from the rank threads, Cancel() from any thread.
//
// AnnounceBarrier: the same meeting for dlio_ext.barrier: announce (the default; docs/architecture.md, "Step
// barrier"). Each rank calls Start(step, compute_end) as its compute starts (a rank that waited for data starts late,
// so the announce is late: batch waits still count); the last local rank to start sends one announce for the agent
// (`announce`: the step and how long from now the latest local compute end is; it must not block). After its compute
// each rank calls Finish(step): the first one waits for the coordinator's release (`await`), and every rank sleeps
// until the instant base/barrier_timing.h StepEnd gives (the slowest compute end of the fleet, in this agent's clock;
// never before its own compute end, and at once if already past). Arrive(step) is Start(step, now) + Finish(step),
// for barriers with no compute before them (step-based checkpoints). Time is injected (Clock), so the unit tests run
// it on a fake clock. Thread-safety: Start/Finish/Arrive from the rank threads, Cancel() and the getters from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/barrier_timing.h"
#include "base/mutex.h"

namespace dlio {

class StepBarrier {
 public:
  using Global = std::function<absl::Status(uint64_t step)>;
  StepBarrier(int parties, Global global) : parties_(parties), global_(std::move(global)) {}

  absl::Status Arrive(uint64_t step);
  void Cancel(absl::Status why);

 private:
  const int parties_;
  const Global global_;
  Mutex mu_;
  CondVar cv_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// ClockSync: the agent's clock offset to its coordinator (base/barrier_timing.h OffsetWindow), shared by the
// session, which feeds it every heartbeat's echo, and the phases' announce barriers, which feed it every step's
// release and place their compute ends by it. Reset() at each connection: a new coordinator (or the same one
// restarted elsewhere) is a new offset, related to this agent's clock as Welcome.clock_domain says
// (base/barrier_timing.h RelateClocks): one clock, the offset is exactly 0; one boot, it is estimated with no drift
// allowance; else with OffsetWindow::kDriftPpm. Before the first Reset(): unrelated.
// Thread-safety: every method from any thread.
class ClockSync {
 public:
  void Reset(barrier_timing::ClockRelation relation) {
    MutexLock lk(&mu_);
    switch (relation) {
      case barrier_timing::ClockRelation::kSame:
        window_ = barrier_timing::OffsetWindow::Exact(0);
        break;
      case barrier_timing::ClockRelation::kSameBoot:
        window_ = barrier_timing::OffsetWindow(0);
        break;
      case barrier_timing::ClockRelation::kUnrelated:
        window_ = barrier_timing::OffsetWindow();
        break;
    }
  }
  // The offset known exactly (one clock).
  bool exact() const {
    MutexLock lk(&mu_);
    return window_.exact();
  }
  // OffsetWindow::Exchange, ::Add and ::PlaceEnd under the lock.
  void Exchange(int64_t t1, int64_t t2, int64_t t3, int64_t t4) {
    MutexLock lk(&mu_);
    window_.Exchange(t1, t2, t3, t4);
  }
  int64_t Add(const barrier_timing::AgentStep& s, const barrier_timing::Release& r, int64_t received_ns) {
    MutexLock lk(&mu_);
    return window_.Add(s, r, received_ns);
  }
  std::optional<barrier_timing::EndInterval> PlaceEnd(int64_t end_ns) const {
    MutexLock lk(&mu_);
    return window_.PlaceEnd(end_ns);
  }

 private:
  mutable Mutex mu_;
  barrier_timing::OffsetWindow window_ ABSL_GUARDED_BY(mu_);
};

class AnnounceBarrier {
 public:
  // The agent's steady clock (ns) and a sleep until an instant of it; false when the sleep was cancelled.
  struct Clock {
    std::function<int64_t()> now;
    std::function<bool(int64_t until_ns)> sleep_until;
  };
  // A release as the agent received it: the coordinator's durations, and its arrival in this agent's clock.
  struct Received {
    barrier_timing::Release release;
    int64_t received_ns = 0;
  };
  // Sends the agent's announce of `step`: its latest compute end is `compute_left_ns` after now and, once the offset
  // window holds a step, in `end` of the coordinator's clock (base/barrier_timing.h OffsetWindow::Offset; null
  // before). Must not block.
  using Announce =
      std::function<absl::Status(uint64_t step, int64_t compute_left_ns, const barrier_timing::EndInterval* end)>;
  // Blocks until the release of `step` came (or the phase stops: an error).
  using Await = std::function<absl::StatusOr<Received>(uint64_t step)>;

  // The steady clock (CLOCK_MONOTONIC), its sleeps cut short by `cancel` (may be null) within base/sleep.h's slice.
  // A sleep runs to its absolute instant (clock_nanosleep TIMER_ABSTIME: a preemption between reading the clock and
  // sleeping does not make it late) with the calling thread's timer slack at 1 ns (Linux lets a SCHED_OTHER
  // thread's timer expire up to 50 us late by default, and the step ends are what the barrier times).
  static Clock Steady(const std::atomic<bool>* cancel);

  // `offsets` (may be null: one of its own, with the default drift allowance) is the session's ClockSync; it must
  // outlive the barrier.
  AnnounceBarrier(int parties, Clock clock, Announce announce, Await await, ClockSync* offsets = nullptr)
      : parties_(parties), clock_(std::move(clock)), announce_(std::move(announce)), await_(std::move(await)),
        offsets_(offsets != nullptr ? offsets : &own_offsets_) {}

  // This rank's compute of `step` started and ends at `compute_end_ns` (this clock).
  absl::Status Start(uint64_t step, int64_t compute_end_ns);
  // After this rank's compute: blocks until the step ends for the agent.
  absl::Status Finish(uint64_t step);
  // A barrier with no compute before it: Start(step, now) then Finish(step).
  absl::Status Arrive(uint64_t step);
  void Cancel(absl::Status why);
  // The error bound of the latest released step (base/barrier_timing.h OffsetWindow: ErrorBound, tightened over
  // recent exchanges when the release carries the coordinator's receipt), ns; -1 before the first.
  int64_t last_error_bound_ns() const;
  // The largest error bound of the barrier's steps so far, ns; -1 before the first.
  int64_t max_error_bound_ns() const;
  // The median of the error bounds of the barrier's steps so far (base/barrier_timing.h BoundHistogram: at most 9 %
  // above the exact median), ns; -1 before the first.
  int64_t p50_error_bound_ns() const;

 private:
  const int parties_;
  const Clock clock_;
  const Announce announce_;
  const Await await_;
  mutable Mutex mu_;
  CondVar cv_;
  uint64_t step_ ABSL_GUARDED_BY(mu_) = 0;        // the step being collected (starts and finishes)
  int started_ ABSL_GUARDED_BY(mu_) = 0;          // local ranks that started step_
  int finished_ ABSL_GUARDED_BY(mu_) = 0;         // local ranks past the end of step_
  barrier_timing::AgentStep agent_step_ ABSL_GUARDED_BY(mu_);  // step_'s announce and latest compute end
  bool awaiting_ ABSL_GUARDED_BY(mu_) = false;     // a rank waits for step_'s release
  bool released_ ABSL_GUARDED_BY(mu_) = false;     // step_'s release came: end_ns_ is its instant
  int64_t end_ns_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_bound_ns_ ABSL_GUARDED_BY(mu_) = -1, max_bound_ns_ ABSL_GUARDED_BY(mu_) = -1;
  ClockSync own_offsets_;       // without the session's
  ClockSync* const offsets_;    // the bound, tightened over recent exchanges (its own lock)
  barrier_timing::BoundHistogram bounds_ ABSL_GUARDED_BY(mu_);  // every released step's bound
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// The coordinator's barrier releases as one agent sees them, for the phase it runs. A release counts only when it
// carries that phase's job and phase ids (BarrierRelease names both): every job's first training phase is
// "train-epoch-1", so a late release of an earlier job (or phase) matched by name and step would let the next one's
// ranks run past its barriers. Start() forgets everything of the previous phase.
// Thread-safety: none; the agent's session lock guards it.
class ReleaseBoard {
 public:
  void Start(const std::string& job_id, const std::string& phase_id);
  // Records the release of `step` (with its timing, dlio_ext.barrier: announce, and its arrival in the agent's
  // steady clock); false (and nothing changes) when it is not of the running phase: stale.
  bool Release(const std::string& job_id, const std::string& phase_id, uint64_t step,
               const barrier_timing::Release& timing = {}, int64_t received_ns = 0);
  // True once the running phase's barrier `step` was released.
  bool Released(uint64_t step) const { return any_ && released_ >= step; }
  // The newest release's timing and arrival (the ranks wait for one step at a time, so it is the one they await).
  const AnnounceBarrier::Received& last() const { return last_; }

 private:
  std::string job_id_, phase_id_;
  bool any_ = false;
  uint64_t released_ = 0;
  AnnounceBarrier::Received last_;
};

}  // namespace dlio
