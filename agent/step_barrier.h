// StepBarrier: the local half of the per-step barrier (the emulated allreduce).
//
// The agent's local ranks meet here; the last one to arrive calls `global(step)` (one BarrierArrive to the
// coordinator, blocking until its BarrierRelease), then releases the local ranks. So the coordinator sees one
// arrival per agent and step, whatever the number of local ranks.
// Cancel() wakes every waiter with Cancelled (a failed rank must not leave the others hanging).
// Thread-safety: Arrive() from the rank threads, Cancel() from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
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

// The coordinator's barrier releases as one agent sees them, for the phase it runs. A release counts only when it
// carries that phase's job and phase ids (BarrierRelease names both): every job's first training phase is
// "train-epoch-1", so a late release of an earlier job (or phase) matched by name and step would let the next one's
// ranks run past its barriers. Start() forgets everything of the previous phase.
// Thread-safety: none; the agent's session lock guards it.
class ReleaseBoard {
 public:
  void Start(const std::string& job_id, const std::string& phase_id);
  // Records the release of `step`; false (and nothing changes) when it is not of the running phase: stale.
  bool Release(const std::string& job_id, const std::string& phase_id, uint64_t step);
  // True once the running phase's barrier `step` was released.
  bool Released(uint64_t step) const { return any_ && released_ >= step; }

 private:
  std::string job_id_, phase_id_;
  bool any_ = false;
  uint64_t released_ = 0;
};

}  // namespace dlio
