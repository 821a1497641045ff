// StepBarrier: the local half of the per-step barrier (the emulated allreduce).
//
// The agent's local ranks meet here; the last one to arrive calls `global(step)` (one BarrierArrive to the
// coordinator, blocking until its BarrierRelease), then releases the local ranks. So the coordinator sees one
// arrival per agent and step, whatever the number of local ranks.
// Cancel() wakes every waiter with Cancelled (a failed rank must not leave the others hanging).
// Thread-safety: Arrive() from the rank threads, Cancel() from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

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
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dlio
