// The seam between the coordinator's core and its agents: the interface it reaches an attached agent through
// (AgentLink, implemented by the gRPC facade over the Attach stream, and by fake links in the unit tests), and what
// an agent reports about a running phase (AgentProgress, AgentErrorKind). What it orders an agent to run, a
// PhaseOrder, is shared with the agent (job/phase.h).
// Thread-safety: plain data; AgentLink's contract is below.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/barrier_timing.h"
#include "job/phase.h"

namespace dlio {

// The coordinator's way to talk to one attached agent (implemented by the facade over the Attach stream). Every
// call is made under the coordinator's lock: it must only queue the message, never block.
class AgentLink {
 public:
  virtual ~AgentLink() = default;
  // The agent was registered: greet it. Called under the coordinator's lock before any order can reach the link,
  // so the greeting is always the first message the agent receives.
  virtual void Accepted(std::chrono::milliseconds heartbeat_interval, std::chrono::milliseconds lease) = 0;
  virtual void RunPhase(const PhaseOrder& order) = 0;
  virtual void ReleaseBarrier(const std::string& job_id, const std::string& phase_id, uint64_t step) = 0;
  // The release of `step` with this agent's timing (dlio_ext.barrier: announce, base/barrier_timing.h); links that
  // carry no timing (the unit tests' fakes) send the plain release.
  virtual void ReleaseBarrierTimed(const std::string& job_id, const std::string& phase_id, uint64_t step,
                                   const barrier_timing::Release& timing) {
    (void)timing;
    ReleaseBarrier(job_id, phase_id, step);
  }
  virtual void Cancel(const std::string& job_id, const std::string& reason) = 0;
  // The coordinator dropped the agent (lease expired, replaced by a new session): close the session.
  virtual void Drop(const std::string& reason) = 0;
};

// What an agent's Error says about its phase: a confirmation of a stop the coordinator asked for (the phase was
// cancelled, or its session ended), or a failure of the job.
// kRefused: the agent refused the phase before it touched anything (what the job asks does not fit it).
enum class AgentErrorKind { kFailure, kCancelled, kRefused };

// One agent's progress report of a running phase (the Progress message): steps (files for a generate phase) done of
// total, samples and bytes read so far.
struct AgentProgress {
  uint64_t done = 0, total = 0, samples = 0, bytes = 0;
  uint64_t compute_ns = 0, wall_ns = 0;  // live AU: the agent's ranks' summed compute over their summed wall time
};

}  // namespace dlio
