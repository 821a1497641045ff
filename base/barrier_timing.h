// The arithmetic of the announce step barrier (dlio_ext.barrier: announce; docs/architecture.md, "Step barrier"),
// shared by the coordinator (coordinator/phase_driver.h) and the agent (agent/step_barrier.h), so that one unit test
// can run both halves against a fake clock, a skewed clock or a slow link.
//
// No clock is shared: every instant here is in the clock of the side that reads it (steady clocks, ns), and only
// durations cross the wire. An agent announces its step when its ranks' compute starts, with how long after the
// send its latest compute end is (`compute_left`). The coordinator estimates that end in its own clock as
// receipt + compute_left (late by the announce's one-way latency u); once every agent of the job announced, it
// tells each agent i how long after its own compute end to wait: wait_i = max_j(E_j) - E_i. Agent i ends the step at
// its compute end + wait_i, or when the release comes if that is later, and never before its own compute end. So
// agent i ends at (slowest compute end) + u_slowest - u_i: the only error is a difference of one-way latencies, and
// the step never ends before the slowest compute end minus u_i <= the round trip of this step's announce and release
// less the time the coordinator held the announce (ErrorBound: the agent computes it itself, from durations).
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>

namespace dlio::barrier_timing {

// --- the coordinator's half (its steady clock) ---

// One agent's announce as the coordinator received it.
struct Announce {
  int64_t received_ns = 0;      // coordinator clock
  int64_t compute_left_ns = 0;  // from the agent's send to its latest compute end (0: compute already over)
};

// The agent's compute end, estimated in the coordinator's clock (late by the announce's one-way latency).
inline int64_t EstimatedEnd(const Announce& a) { return a.received_ns + std::max<int64_t>(0, a.compute_left_ns); }

// What the release tells one agent: durations only.
struct Release {
  int64_t wait_after_end_ns = 0;  // how long after its own compute end the agent ends the step (>= 0)
  int64_t held_ns = 0;            // how long the coordinator held its announce (receipt to this release)
};

// The release for agent `a`, once the slowest estimated end of the step is known, sent at `now_ns`.
inline Release ReleaseFor(const Announce& a, int64_t slowest_end_ns, int64_t now_ns) {
  Release r;
  r.wait_after_end_ns = std::max<int64_t>(0, slowest_end_ns - EstimatedEnd(a));
  r.held_ns = std::max<int64_t>(0, now_ns - a.received_ns);
  return r;
}

// --- the agent's half (its steady clock) ---

// One agent's step as it announced it.
struct AgentStep {
  int64_t announced_ns = 0;   // when the announce was sent
  int64_t compute_end_ns = 0;  // the latest compute end of its local ranks
};

// The instant the agent ends the step: its compute end plus the wait, or the release's arrival if later; never
// before its own compute end.
inline int64_t StepEnd(const AgentStep& s, const Release& r, int64_t received_ns) {
  return std::max({s.compute_end_ns + std::max<int64_t>(0, r.wait_after_end_ns), received_ns, s.compute_end_ns});
}

// The bound on how early this agent may end the step against the slowest compute end of the fleet: its announce's
// one-way latency, at most the round trip from its send to the release's arrival less the coordinator's hold.
inline int64_t ErrorBound(const AgentStep& s, const Release& r, int64_t received_ns) {
  return std::max<int64_t>(0, received_ns - s.announced_ns - std::max<int64_t>(0, r.held_ns));
}

}  // namespace dlio::barrier_timing
