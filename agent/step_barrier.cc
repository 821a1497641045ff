#include "agent/step_barrier.h"

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/sleep.h"

namespace dlio {

absl::Status StepBarrier::Arrive(uint64_t step) {
  MutexLock lk(&mu_);
  if (!error_.ok()) return error_;
  const uint64_t gen = generation_;
  if (++arrived_ < parties_) {
    cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return generation_ != gen || !error_.ok(); });
    return error_;
  }
  // Last local arrival: talk to the coordinator without holding the lock, so Cancel() can get in.
  lk.Unlock();
  absl::Status s = global_ ? global_(step) : absl::OkStatus();
  lk.Lock();
  if (!s.ok() && error_.ok()) error_ = s;
  arrived_ = 0;
  ++generation_;
  cv_.notify_all();
  return s.ok() ? error_ : s;
}

void StepBarrier::Cancel(absl::Status why) {
  MutexLock lk(&mu_);
  if (error_.ok()) error_ = std::move(why);
  cv_.notify_all();
}

namespace {

// The calling thread's timer slack at 1 ns, once per thread (the rank threads sleep through Steady() every step).
void TightenTimerSlack() {
  thread_local bool done = false;
  if (done) return;
  done = true;
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // best effort: a refusal leaves the default slack
}

}  // namespace

AnnounceBarrier::Clock AnnounceBarrier::Steady(const std::atomic<bool>* cancel) {
  static_assert(std::chrono::steady_clock::is_steady);  // libstdc++'s steady_clock reads CLOCK_MONOTONIC
  Clock c;
  c.now = barrier_timing::SteadyNs;
  c.sleep_until = [cancel](int64_t until_ns) {
    TightenTimerSlack();
    const int64_t slice = std::chrono::duration_cast<std::chrono::nanoseconds>(kCancelSlice).count();
    for (;;) {  // base/sleep.h's slices: a cancel is seen within kCancelSlice
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return false;
      const int64_t now = barrier_timing::SteadyNs();
      if (now >= until_ns) return true;
      const int64_t to = std::min(until_ns, now + slice);
      const timespec at{static_cast<time_t>(to / 1'000'000'000), static_cast<long>(to % 1'000'000'000)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr);  // EINTR: the loop sleeps again
    }
  };
  return c;
}

absl::Status AnnounceBarrier::Start(uint64_t step, int64_t compute_end_ns) {
  MutexLock lk(&mu_);
  // The ranks go in lockstep: a rank that ended the previous step first waits here (microseconds) until the last
  // one has read that step's end instant.
  cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return step_ >= step || !error_.ok(); });
  if (!error_.ok()) return error_;
  if (step != step_) return absl::InternalError(absl::StrCat("step barrier: step ", step, " started after ", step_));
  agent_step_.compute_end_ns = started_ == 0 ? compute_end_ns : std::max(agent_step_.compute_end_ns, compute_end_ns);
  if (++started_ < parties_) return absl::OkStatus();
  // The last local rank to start: announce the agent's step, without holding the lock.
  const int64_t now = clock_.now();
  agent_step_.announced_ns = now;
  const int64_t left = agent_step_.compute_end_ns - now;
  // The compute end placed in the coordinator's clock by the offsets of the recent steps (none on the first).
  const std::optional<barrier_timing::EndInterval> end = offsets_->PlaceEnd(agent_step_.compute_end_ns);
  if (barrier_timing::HopsOn()) {
    barrier_timing::Hop("compute_end", step, agent_step_.compute_end_ns);
    barrier_timing::Hop("announce", step, now);
  }
  lk.Unlock();
  absl::Status s = announce_ ? announce_(step, left, end ? &*end : nullptr) : absl::OkStatus();
  lk.Lock();
  if (!s.ok() && error_.ok()) error_ = s;
  cv_.notify_all();
  return s.ok() ? error_ : s;
}

absl::Status AnnounceBarrier::Finish(uint64_t step) {
  MutexLock lk(&mu_);
  if (!error_.ok()) return error_;
  if (step != step_) return absl::InternalError(absl::StrCat("step barrier: step ", step, " finished at ", step_));
  if (!released_ && !awaiting_) {
    // The first rank past its compute waits for the release, without the lock (Cancel() must get in).
    awaiting_ = true;
    lk.Unlock();
    absl::StatusOr<Received> r = await_ ? await_(step) : Received{};
    if (barrier_timing::HopsOn()) barrier_timing::Hop("awaited", step, clock_.now());
    lk.Lock();
    if (!r.ok()) {
      if (error_.ok()) error_ = r.status();
    } else {
      released_ = true;
      end_ns_ = barrier_timing::StepEnd(agent_step_, r->release, r->received_ns);
      last_bound_ns_ = barrier_timing::PlacedBound(r->release, offsets_->Add(agent_step_, r->release, r->received_ns));
      max_bound_ns_ = std::max(max_bound_ns_, last_bound_ns_);
      if (barrier_timing::HopsOn()) {
        barrier_timing::Hop("bound", step, last_bound_ns_);
        barrier_timing::Hop("slack", step, r->release.slack_ns);
        barrier_timing::Hop("placed_early", step, r->release.placed_early_ns);
      }
      bounds_.Add(last_bound_ns_);
    }
    cv_.notify_all();
  } else {
    cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return released_ || !error_.ok(); });
  }
  if (!error_.ok()) return error_;
  const int64_t end = end_ns_;
  if (++finished_ == parties_) {  // every rank read the instant: the next step may start
    ++step_;
    started_ = finished_ = 0;
    awaiting_ = released_ = false;
    agent_step_ = barrier_timing::AgentStep();
    cv_.notify_all();
  }
  lk.Unlock();
  if (!clock_.sleep_until(end)) {
    return absl::CancelledError(absl::StrCat("step barrier: cancelled waiting for the end of step ", step));
  }
  if (barrier_timing::HopsOn()) {
    barrier_timing::Hop("end_at", step, end);
    barrier_timing::Hop("ended", step, clock_.now());
  }
  return absl::OkStatus();
}

absl::Status AnnounceBarrier::Arrive(uint64_t step) {
  if (absl::Status s = Start(step, clock_.now()); !s.ok()) return s;
  return Finish(step);
}

void AnnounceBarrier::Cancel(absl::Status why) {
  MutexLock lk(&mu_);
  if (error_.ok()) error_ = std::move(why);
  cv_.notify_all();
}

int64_t AnnounceBarrier::last_error_bound_ns() const {
  MutexLock lk(&mu_);
  return last_bound_ns_;
}

int64_t AnnounceBarrier::max_error_bound_ns() const {
  MutexLock lk(&mu_);
  return max_bound_ns_;
}

int64_t AnnounceBarrier::p50_error_bound_ns() const {
  MutexLock lk(&mu_);
  return bounds_.Quantile(0.5);
}

void ReleaseBoard::Start(const std::string& job_id, const std::string& phase_id) {
  job_id_ = job_id;
  phase_id_ = phase_id;
  any_ = false;
  released_ = 0;
  last_ = AnnounceBarrier::Received();
}

bool ReleaseBoard::Release(const std::string& job_id, const std::string& phase_id, uint64_t step,
                           const barrier_timing::Release& timing, int64_t received_ns) {
  if (job_id != job_id_ || phase_id != phase_id_ || job_id.empty()) return false;
  if (!any_ || step > released_) {
    released_ = step;
    last_ = AnnounceBarrier::Received{timing, received_ns};
  }
  any_ = true;
  return true;
}

}  // namespace dlio
