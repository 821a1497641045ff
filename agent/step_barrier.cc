#include "agent/step_barrier.h"

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

void ReleaseBoard::Start(const std::string& job_id, const std::string& phase_id) {
  job_id_ = job_id;
  phase_id_ = phase_id;
  any_ = false;
  released_ = 0;
}

bool ReleaseBoard::Release(const std::string& job_id, const std::string& phase_id, uint64_t step) {
  if (job_id != job_id_ || phase_id != phase_id_ || job_id.empty()) return false;
  if (!any_ || step > released_) released_ = step;
  any_ = true;
  return true;
}

}  // namespace dlio
