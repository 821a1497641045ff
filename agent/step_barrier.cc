#include "agent/step_barrier.h"

namespace dlio {

absl::Status StepBarrier::Arrive(uint64_t step) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!error_.ok()) return error_;
  const uint64_t gen = generation_;
  if (++arrived_ < parties_) {
    cv_.wait(lk, [&] { return generation_ != gen || !error_.ok(); });
    return error_;
  }
  // Last local arrival: talk to the coordinator without holding the lock, so Cancel() can get in.
  lk.unlock();
  absl::Status s = global_ ? global_(step) : absl::OkStatus();
  lk.lock();
  if (!s.ok() && error_.ok()) error_ = s;
  arrived_ = 0;
  ++generation_;
  cv_.notify_all();
  return s.ok() ? error_ : s;
}

void StepBarrier::Cancel(absl::Status why) {
  std::lock_guard<std::mutex> lk(mu_);
  if (error_.ok()) error_ = std::move(why);
  cv_.notify_all();
}

}  // namespace dlio
