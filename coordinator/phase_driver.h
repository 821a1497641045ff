// PhaseDriver: the running phase of the coordinator's running job, the part of the coordinator every step goes
// through: the orders out to the job's agents, the step barrier, each agent's progress (PhaseProgress), the results
// that came back, and the phase's first failure, with the one-line messages that name agent, ranks, job, phase and
// step. The Coordinator (coordinator.h) owns one, starts a phase on it (Begin), feeds it the agents' events and
// waits on its own condition variable until the phase settled; coordinator/job_runner.cc drives it.
//
// One phase at a time: Begin() starts one over the job's agents (placement order), End() clears it when the job
// ends. The previous phase stays until the next Begin(), so late events of a finished phase are recognised (by job
// and phase id) and ignored. Agents are named as the job knows them (Job::agent_index gives their place).
// Barrier: arrivals are counted for the current step only, one per agent (an O(1) hash lookup and a flag); the last
// arrival releases the step on every agent's link with one pass over the links captured when the orders went out
// (a link whose agent left is closed and does nothing; the phase fails through Lost()). A training phase over
// Setup::barrier_tree_min_agents agents or more, every one of them with a relay listener, meets through a relay tree
// (base/barrier_tree.h BuildTree, relays of relays until at most the fan-out are under the coordinator): each agent's
// order names its parent relay, the relays' name their groups (every level they relay), only the arrivals of the
// relays under the coordinator count (one per top group) and only they are released; a relay lost, at any level,
// fails the phase naming its subtree.
// Thread-safety: none of its own: it is the coordinator's state, held as `PhaseDriver driver_ ABSL_GUARDED_BY(mu_)`,
// so clang's analysis checks that every call is made under the coordinator's lock. (Annotations here naming the
// coordinator's mutex through a reference could not be checked: the analysis does not follow aliases.) It never
// blocks and never waits: AgentLink calls only queue (agent_link.h), and the waits are the coordinator's.
// Time: steady-clock points passed in (Coordinator::Options::now, injectable).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/barrier_timing.h"
#include "base/barrier_tree.h"
#include "results/results.h"
#include "coordinator/agent_link.h"

namespace dlio {

// The progress of the running phase: each agent's latest report (the Progress messages) and the fleet's figures
// made of them. A step phase is as far as its slowest agent (done: the minimum, total: the maximum); a generate
// phase counts files (both summed). Samples, bytes, compute and wall time are summed.
class PhaseProgress {
 public:
  PhaseProgress() = default;
  PhaseProgress(size_t agents, bool files) : files_(files), latest_(agents) {}

  void Report(size_t agent, const AgentProgress& p) { latest_.at(agent) = p; }
  // The agent's latest report; null before its first.
  const AgentProgress* Of(size_t agent) const { return latest_.at(agent) ? &*latest_[agent] : nullptr; }
  // The fleet's progress; nullopt until an agent reported.
  std::optional<AgentProgress> Fleet() const;
  // The furthest step (done) and the largest total any agent reported, (0, 0) before any report: where a step phase
  // stopped as far as one agent can tell (a single-agent job has no barrier at the coordinator).
  std::pair<uint64_t, uint64_t> Furthest() const;
  // True, and remembered, when `fleet` differs from the figures last published: progress events say something new.
  bool Publish(const AgentProgress& fleet);
  // The fleet's AU so far, percent: its ranks' compute over their wall time; nullopt before any wall time.
  static std::optional<double> LiveAuPercent(const AgentProgress& fleet);
  // The fleet's AU over about the last kLiveAuWindow, percent: the compute and wall time its ranks added since the
  // newest figures at least that old (since the phase's start while it is younger), barrier waits included as in
  // DLIO's AU. A figure since the start would read 99 % while the prefetch queue drains and lag the epoch for
  // minutes after. Call it with each published `fleet`, `now` on the coordinator's steady clock; nullopt before any
  // wall time was added.
  std::optional<double> WindowedAuPercent(const AgentProgress& fleet, std::chrono::steady_clock::time_point now);
  // 10 s: several steps of any real workload (so one slow step does not swing it) and short enough to show an epoch
  // turning I/O-bound within the progress line's next few refreshes.
  static constexpr std::chrono::seconds kLiveAuWindow{10};

 private:
  struct AuMark {
    std::chrono::steady_clock::time_point at;
    uint64_t compute_ns = 0, wall_ns = 0;
  };
  bool files_ = false;
  std::vector<std::optional<AgentProgress>> latest_;  // per agent of the job, in placement order
  AgentProgress published_;
  std::deque<AuMark> au_marks_;  // the fleet's sums as published, oldest first; the first is the window's base
};

// What an agent reports for a phase must be about its own ranks, each once, with timings that are numbers.
absl::Status CheckPhaseResults(const AgentInfo& a, const std::vector<RankEpochResult>& ranks);

class PhaseDriver {
 public:
  using Clock = std::chrono::steady_clock;

  struct Setup {
    std::string job_id, phase_id;
    PhaseKind kind = PhaseKind::kTrainEpoch;
    int epoch = 0;
    // The job's agents in placement order (their ranks) and the place of each name: the job's own, which must
    // outlive the phase (until the next Begin() or End()).
    const std::vector<AgentInfo>* agents = nullptr;
    const std::unordered_map<std::string, size_t>* index = nullptr;
    // The step barrier's relay tree (dlio_ext.barrier_fanout, dlio_ext.barrier_tree_min_agents).
    int barrier_fanout = barrier_tree::kDefaultFanout;
    int barrier_tree_min_agents = barrier_tree::kDefaultMinAgents;
  };

  // A new phase: nothing sent, nothing arrived, no failure; `now` starts the barrier timeout.
  void Begin(Setup setup, Clock::time_point now);
  // No phase: every event is ignored until the next Begin().
  void End() { active_ = false; }
  bool active() const { return active_; }
  // The running phase is `phase_id` of job `job_id`.
  bool Is(const std::string& job_id, const std::string& phase_id) const {
    return active_ && setup_.phase_id == phase_id && setup_.job_id == job_id;
  }
  const std::string& id() const { return setup_.phase_id; }
  bool generate() const { return setup_.kind == PhaseKind::kGenerate; }
  bool train() const { return setup_.kind == PhaseKind::kTrainEpoch; }
  int epoch() const { return setup_.epoch; }

  // Agent `i` (placement order) gets its order on `link` (with its place in the relay tree, if any); the phase then
  // waits for its PhaseDone.
  void Order(size_t i, std::shared_ptr<AgentLink> link, const PhaseOrder& order);
  // Agent `i` was not attached when the orders went out: the phase fails naming it.
  void Detached(size_t i);

  // Events. Each is ignored unless it is about this phase (job and phase id) and from one of its agents.
  enum class Arrival { kStale, kCounted, kReleased };
  // An arrival at the barrier of `step`. kStale: not for the current step (a late arrival of an earlier phase, a
  // repeat of a released step). kReleased: it completed the step, which went out on every link; *wait is the time
  // from the step's first arrival to its release. `compute_left_ns` (dlio_ext.barrier: announce; 0 after compute):
  // how long after the agent sent it its compute ends; each agent's release says how long after its own compute
  // end to wait, so that all end at the slowest estimated end (base/barrier_timing.h), and how long it was held.
  // `received`: when gRPC handed the announce over (the estimate of the agent's end starts there, so waits for the
  // coordinator's lock are not in it); `now` when none was stamped. `release_clock`: read once per release as it is
  // queued, so each agent's hold runs to its own release (a release queued late in the fan-out does not count the
  // writes before it as its link's latency); null: `now` for all. `end`: the agent's compute end in this clock as
  // its offset window places it (base/barrier_timing.h Place: the end is then placed independently of the
  // announce's latency, and every release carries the step's slack).
  Arrival Arrive(const std::string& agent, const std::string& job_id, const std::string& phase_id, uint64_t step,
                 Clock::time_point now, Clock::duration* wait, int64_t compute_left_ns = 0,
                 Clock::time_point received = {}, const std::function<Clock::time_point()>& release_clock = nullptr,
                 std::optional<barrier_timing::EndInterval> end = std::nullopt);
  void Report(const std::string& agent, const std::string& job_id, const std::string& phase_id,
              const AgentProgress& progress);
  // The agent's PhaseDone: its results are kept, or (not about its own ranks, malformed) the phase fails. False for
  // a repeat or an agent that owes none.
  bool Done(const std::string& agent, const std::string& job_id, const std::string& phase_id,
            std::vector<RankEpochResult> ranks);
  // The agent's phase ended without results (its Error): it owes no PhaseDone any more.
  void Settle(const std::string& agent);
  // The agent is gone (closed, expired, replaced): it owes nothing, and the phase fails naming it and how far it got
  // (a relay at any level: "relay agent-3 lost: group agent-3..agent-18; ...", the agents under it).
  void Lost(const std::string& agent, const std::string& why);
  // Relay `relay` reports that `member` of its group broke its barrier stream: the member is lost. False (nothing
  // done) when it is not about this phase, or `relay` is not `member`'s parent (at any level).
  bool MemberLost(const std::string& relay, const std::string& job_id, const std::string& phase_id,
                  const std::string& member, const std::string& why);
  // The running phase's relay tree (no groups: the star).
  const barrier_tree::TreePlan& tree() const { return tree_; }
  // The phase failed; the first failure is the one kept (one line). `refused`: an agent refused the phase before it
  // touched anything (the job then ends refused).
  void Fail(const std::string& message, bool refused = false) {
    if (!error_.empty()) return;
    error_ = message;
    refused_ = refused;
  }
  // A training phase over several agents fails when its barrier released no step for `timeout` (0: never), naming
  // the agents that did not arrive. True when it failed now.
  bool BarrierTimedOut(Clock::time_point now, std::chrono::milliseconds timeout);

  // Every agent sent its PhaseDone (or settled otherwise).
  bool settled() const { return unsettled_ == 0; }
  // The agents still owing their PhaseDone, in placement order.
  std::vector<std::string> Unsettled() const;
  const std::string& error() const { return error_; }
  // The kept failure is an agent's refusal (see Fail).
  bool refused() const { return refused_; }
  // "after step N of M": how far the phase got (the barrier's step over several agents, else the agent's report).
  std::string StepText() const;
  PhaseProgress& progress() { return progress_; }
  // The results of every PhaseDone, handed over once the phase settled.
  std::vector<RankEpochResult> TakeResults() { return std::move(results_); }
  // "ranks 0-3" of the job's agent, "no ranks" for a name not in the job.
  std::string RanksOf(const std::string& agent) const;

 private:
  // The agent's place in the job, or nullopt for a name not in it.
  std::optional<size_t> IndexOf(const std::string& agent) const;
  void SettleAt(size_t i);
  const std::string& NameAt(size_t i) const { return (*setup_.agents)[i].name; }
  // The relay tree of a training phase whose every agent can relay, else the star (Begin).
  void PlanTree();
  // The agent whose link a barrier unit (an agent of the star, a top-level group of the tree) is released on.
  size_t UnitAgent(size_t u) const { return tree_.tree() ? tree_.top()[u].relay : u; }
  // "relay agent-3 (group agent-3..agent-18)" (the agents under it), or the agent and its ranks on the star.
  std::string UnitText(size_t u) const;

  bool active_ = false;
  Setup setup_;
  std::vector<char> owes_done_;   // per agent: its PhaseDone (or Error) is still missing
  size_t unsettled_ = 0;
  // The barrier: the step it collects arrivals for (= steps released so far), who arrived at it, and the links the
  // release goes out on (each agent's when the orders went out).
  uint64_t barrier_step_ = 0;
  std::vector<std::shared_ptr<AgentLink>> links_;
  barrier_tree::TreePlan tree_;   // the barrier's units: the agents (star) or the top level's groups (tree)
  std::vector<std::string> names_;  // the job's agents' names, placement order (for group names)
  std::vector<char> arrived_;     // per unit
  std::vector<barrier_timing::Announce> announces_;  // per unit: the current step's arrival (coordinator clock)
  size_t arrived_count_ = 0;
  Clock::time_point first_arrival_;  // of the current step
  Clock::time_point last_advance_;   // phase start or the last release
  PhaseProgress progress_;
  std::vector<RankEpochResult> results_;
  std::string error_;                // first failure, one line
  bool refused_ = false;             // the first failure is an agent's refusal
};

}  // namespace dlio
