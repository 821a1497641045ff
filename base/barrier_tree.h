// The relay tree of the step barrier (issue 29 item 2; docs/architecture.md, "Step barrier"), as pure code: which
// agents relay and who is in which group (TreePlan, GroupAgents), and a relay's aggregation of its group
// (RelayAggregator), with no gRPC in it, so the coordinator, the agent's relay (agent/relay.h) and the swarm
// (bench/agent_swarm.cc) run the same arithmetic and one unit test drives it with fake clocks.
//
// Grouping: the job's agents, in placement order, are cut into consecutive groups of `fanout`; each group's relay
// is its first agent that can relay (it has a relay listener). Below `min_agents` agents (or with no relay possible
// in some group) there is no tree: the flat star. Defaults from bench/RESULTS.md, "Fan-out and crossover": fan-out
// 16 (within 0.05-0.25 ms of the best from 256 to 10,000 agents, the coordinator's CPU at most 16 x 30 us per step)
// and the star up to 32 agents (at 32 the tree's release p99 already matches the star's, at 64 it is half).
//
// Aggregation (option (b) of the announce barrier, base/barrier_timing.h: no clock is shared). A relay receives
// each member's arrival at received_j (its own clock) with compute_left_j; it estimates the member's compute end
// E_j = received_j + compute_left_j, and once every member arrived it forwards one arrival for the group with
// compute_left = max_j E_j - now ("remaining" at the send). The coordinator answers the relay as any agent:
// wait_up (after the group's end) and held_up. The relay then releases member j with
// wait_j = max_j' E_j' + wait_up - E_j (>= 0) and held_j = (send - received_j), so the member ends at the same
// instant as the slowest member of the slowest group, up to the one-way latencies of its two hops. Error bound: the
// member's own hop gives (release arrival - announce send) - held_j (ErrorBound, as in the star), the relay's hop
// adds b_up = (its release arrival - its forward) - held_up. The relay sends held_j less b_up (what it held, less
// the part of the hold that may be the upstream hop's latency), so the member's own ErrorBound is the sum of both
// hops' bounds with no new field on the wire: held_j - b_up >= 0, since held_j spans the upstream round trip.
// Relays that are members of their own group arrive with a latency of 0 (local).
//
// Levels (BuildTree): the relays of the agents' groups are grouped again, fan-out by fan-out, until at most `fanout`
// relays are under the coordinator; each upper group is relayed by its first member, so an agent relaying level l
// relays every level below l too (its own arrival climbs its levels locally, latency 0), and a relay's parent is the
// coordinator or the relay of the upper group it is a plain member of. Aggregation composes: a mid-level relay is
// a member of its parent's group like any agent, forwarding its subtree's remaining compute; its parent's release
// feeds its top level's Release and each level's own release feeds the level below, so every hop's bound adds up
// in the held times and a leaf's ErrorBound covers every hop of its path (docs/architecture.md, "Step barrier").
// Thread-safety: GroupAgents and the helpers are pure; a RelayAggregator is plain data (its owner locks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/barrier_timing.h"

namespace dlio::barrier_tree {

// bench/RESULTS.md, "Fan-out and crossover": fan-out 16, the star up to 32 agents (the tree from 33).
inline constexpr int kDefaultFanout = 16;
inline constexpr int kDefaultMinAgents = 33;

// One relay's group: agent indices in placement order (consecutive), the relay among them.
struct Group {
  size_t relay = 0;
  std::vector<size_t> members;  // the relay included
};

// The job's tree; no groups = the flat star.
struct TreePlan {
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<Group> groups;     // level 0: the agents' groups
  std::vector<size_t> group_of;  // per agent (placement order): its level-0 group; empty for the star
  // The levels above (BuildTree): upper[0] groups the relays of `groups`, each next level the relays of the one
  // below (members are agent indices, the relay first); the last level (or `groups`) is under the coordinator.
  std::vector<std::vector<Group>> upper;
  // Per agent, filled by GroupAgents and BuildTree: how many levels it relays (0: a plain member; levels 0..n-1),
  // its parent (the relay it sends its arrivals to; kNone: the coordinator), the top-level group it relays (kNone:
  // none), and the agents under its highest group, [subtree_begin, subtree_end) in placement order.
  std::vector<size_t> relay_levels, parent, top_unit, subtree_begin, subtree_end;
  bool tree() const { return !groups.empty(); }
  // True when agent `i` relays its (level-0) group.
  bool IsRelay(size_t i) const { return tree() && groups[group_of[i]].relay == i; }
  size_t levels() const { return tree() ? 1 + upper.size() : 0; }
  const std::vector<Group>& Level(size_t l) const { return l == 0 ? groups : upper[l - 1]; }
  // The groups under the coordinator.
  const std::vector<Group>& top() const { return upper.empty() ? groups : upper.back(); }
  // The group agent `i` relays at level l (< relay_levels[i]).
  const Group& RelayedAt(size_t i, size_t l) const;
  // The agents under relay `i`'s highest group (all of them, as a group relayed by `i`), for messages.
  Group Subtree(size_t i) const;
};

// The tree for `agents` agents (placement order); can_relay[i]: agent i has a relay listener (size `agents`).
// The star when agents < min_agents, fanout < 2, agents <= fanout (one group would be the star with a hop more), or
// some group has no agent that can relay. One level: the coordinator talks to every group's relay.
TreePlan GroupAgents(size_t agents, const std::vector<bool>& can_relay, int fanout, int min_agents);
// GroupAgents's groups, then relays of relays (TreePlan::upper) until at most `fanout` are under the coordinator:
// its CPU per step bounded by the fan-out, not by the fleet (bench/RESULTS.md, "Fan-out and crossover").
TreePlan BuildTree(size_t agents, const std::vector<bool>& can_relay, int fanout, int min_agents);

// "agent-3..agent-18" (the group's first and last names), or the one name of a group of one.
std::string GroupText(const Group& g, const std::vector<std::string>& names);

// A relay's aggregation of one phase's barrier over its group (members indexed 0..n-1 as the group lists them).
class RelayAggregator {
 public:
  explicit RelayAggregator(size_t members = 0) { Reset(members); }
  void Reset(size_t members);
  // Member k's arrival at `step`, received at received_ns (relay clock) with compute_left_ns. True when it was the
  // group's last for `step` (the group is then ready to forward); false for a repeat, another step, or an arrival
  // before the group's previous step was released.
  bool Arrive(size_t k, uint64_t step, int64_t received_ns, int64_t compute_left_ns);
  // The step being collected (= the steps released so far).
  uint64_t step() const { return step_; }
  size_t arrived() const { return arrived_; }
  size_t members() const { return announces_.size(); }
  // The members that did not arrive at the current step (indices into the group).
  std::vector<size_t> Missing() const;
  // The group's arrival, forwarded at now_ns: its compute_left_ns (the latest estimated member end less now,
  // >= 0). Records the forward's instant for the upstream error bound.
  int64_t Forward(int64_t now_ns);
  // The relay hop's error bound of the latest released step, ns (-1 before the first).
  int64_t upstream_bound_ns() const { return upstream_bound_ns_; }
  // The coordinator's release of the current step reached the relay at received_ns: each member's release, sent at
  // now_ns (waits >= 0; held times less the relay hop's error bound, see above). Advances to the next step.
  std::vector<barrier_timing::Release> Release(const barrier_timing::Release& up, int64_t received_ns,
                                               int64_t now_ns);

 private:
  uint64_t step_ = 0;
  size_t arrived_ = 0;
  bool forwarded_ = false;
  int64_t forwarded_ns_ = 0;
  int64_t upstream_bound_ns_ = -1;
  std::vector<char> arrived_flag_;
  std::vector<barrier_timing::Announce> announces_;  // relay clock
};

}  // namespace dlio::barrier_tree
