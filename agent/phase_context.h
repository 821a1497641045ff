// PhaseContext: what one phase of a job gets from its PhaseRunner (agent/phase_runner.h), and the small parts every
// phase kind shares: FirstError (the first error of a phase's threads), ForEachLocalRank (every phase's ranks run
// through it), Annotate (an error prefixed with where it happened) and the clocks of the phases' records.
//
// The phase kinds live in files of their own and see the runner only through the context: generate
// (agent/generate_phase.h), a training epoch or an evaluation (agent/steps_phase.h), a checkpoint
// (agent/checkpoint_phase.h). What outlives a phase (progress, loader threads, the job's S3 configuration) stays in
// the PhaseRunner; the context refers to it.
// Every error a phase returns names agent, rank, job and phase (Where).
// Thread-safety: a PhaseContext is made by PhaseRunner::Run for one phase and read by that phase's threads (progress
// is atomic; s3() is called by the phase thread only, before the ranks start). FirstError is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/metrics.h"
#include "agent/phase_runner.h"
#include "base/confined_dir.h"
#include "base/mutex.h"
#include "storage/s3/client.h"

namespace dlio {

struct PhaseContext {
  const PhaseCommand& cmd;
  // The coordinator's step barrier (training epochs and checkpoints; an evaluation and generate use none).
  const PhaseRunner::BarrierFn& barrier;
  const std::atomic<bool>* cancel;  // the phase's cancel flag; may be null
  const std::string& agent;         // this agent's name, for Where
  // The data root every path is confined to (base/confined_dir.h); an error when it could not be opened.
  const absl::StatusOr<std::shared_ptr<const ConfinedDir>>& root;
  AgentMetrics* metrics;  // may be null
  PhaseProgress& progress;
  // s3 jobs: the job's bucket configuration, made (and preflighted) at the job's first phase on this agent; null
  // for POSIX jobs. A phase calls it once, where its set-up needs the bucket.
  std::function<absl::StatusOr<std::shared_ptr<const S3Config>>()> s3;
  // dlio_ext.barrier: announce: the announce and the release wait of a training epoch's step barrier (null: none,
  // the ranks meet after compute through `barrier`).
  const PhaseRunner::AnnounceFns* announce = nullptr;

  // "agent 'A' rank R job J phase P": the prefix of every error of the phase.
  std::string Where(int rank) const;
  bool CancelAsked() const { return cancel && *cancel; }
};

// Records the first error of a group of threads (the caller then cancels the rest).
class FirstError {
 public:
  void Set(absl::Status s) {
    MutexLock lk(&mu_);
    if (status_.ok()) status_ = std::move(s);
  }
  absl::Status Get() {
    MutexLock lk(&mu_);
    return status_;
  }

 private:
  Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

// Runs body(local, rank) for every local rank of the phase (local = 0 .. local_ranks-1, rank = first_rank + local),
// each on a thread of its own, and returns when all are done. Every phase's ranks run through here.
// A single local rank (one accelerator per agent, the common case) runs on the calling (phase) thread: no thread to
// create at an epoch's start and none to join at its end, a wake-up that on a busy host delayed the PhaseDone by up
// to several ms per epoch boundary (bench/RESULTS.md, case f).
void ForEachLocalRank(const PhaseCommand& cmd, const std::function<void(int local, int rank)>& body);

// `s` with its message prefixed by "<where>: ".
absl::Status Annotate(const absl::Status& s, const std::string& where);

// The clocks of the phases' records: wall-clock microseconds for start/end stamps (system_clock), steady_clock
// for every duration. In a namespace of their own: the coordinator has a NowUnixUs of its own in namespace dlio.
namespace phase_clock {

using Steady = std::chrono::steady_clock;

inline int64_t NowUnixUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
inline double Seconds(Steady::duration d) { return std::chrono::duration<double>(d).count(); }
inline int64_t Nanos(Steady::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

}  // namespace phase_clock
}  // namespace dlio
