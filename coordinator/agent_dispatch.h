// The coordinator's handling of what an agent sends on its Attach stream, apart from the stream itself, so that the
// facade (coordinator_server.cc) and the message-handler fuzz target (fuzz/fuzz_coordinator.cc) run the same code.
// Part of the facade: it speaks the wire types (only the facade and the fuzz target include this header).
//
// CheckHello(): everything in a Hello ends up in logs, result files, file_sd targets and metric labels, so every
// text field must be one line of bounded UTF-8 and the accelerator count one an agent can run.
// AgentInbox::Deliver(): dispatches one message to the Coordinator (heartbeats, barrier arrivals, progress, errors),
// merging PhaseDone parts (PhaseDone.more) into one result per phase; parts of one phase beyond
// kMaxPhaseResultBytes are dropped, and the phase then fails (the core finds the result incomplete).
// Thread-safety: an AgentInbox belongs to one stream's reading thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "results/results.h"
#include "coordinator/coordinator.h"
#include "dlio/v1/coordinator.pb.h"

namespace dlio {

// The most an agent may send for one phase (all its parts): far above any real phase result.
inline constexpr uint64_t kMaxPhaseResultBytes = uint64_t{1} << 30;

absl::Status CheckHello(const v1::Hello& hello);
// The registry entry of an accepted Hello.
AgentInfo AgentInfoFromHello(const v1::Hello& hello);

class AgentInbox {
 public:
  // `echo` answers a heartbeat (the facade queues the echo on the agent's stream): the agent's send time and the
  // heartbeat's receipt (steady clock, ns).
  AgentInbox(Coordinator* core, std::string agent, std::function<void(int64_t, int64_t)> echo)
      : core_(core), agent_(std::move(agent)), echo_(std::move(echo)) {}
  // `received`: when gRPC handed `m` over (steady clock; the barrier's estimate of an agent's end starts there).
  void Deliver(const v1::AgentMessage& m, Coordinator::Clock::time_point received = {});

 private:
  Coordinator* const core_;
  const std::string agent_;
  const std::function<void(int64_t, int64_t)> echo_;
  std::vector<RankEpochResult> parts_;  // PhaseDone parts received so far, of (parts_job_, parts_phase_)
  std::string parts_job_, parts_phase_;
  uint64_t parts_bytes_ = 0;
  bool parts_overflow_ = false;
};

}  // namespace dlio
