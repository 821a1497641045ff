// The relay tree's grouping and aggregation (base/barrier_tree.h) against fake clocks and links: every side has its
// own clock (an offset from true time) and every hop a one-way latency each way, as the real processes would.
#include "base/barrier_tree.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace dlio::barrier_tree {
namespace {

TEST(BarrierTreeGroupTest, StarBelowTheThresholdTreeAtIt) {
  EXPECT_FALSE(GroupAgents(32, std::vector<bool>(32, true), kDefaultFanout, kDefaultMinAgents).tree());
  const TreePlan p = GroupAgents(33, std::vector<bool>(33, true), kDefaultFanout, kDefaultMinAgents);
  ASSERT_TRUE(p.tree());
  ASSERT_EQ(p.groups.size(), 3u);  // 16 + 16 + 1
  EXPECT_EQ(p.groups[0].relay, 0u);
  EXPECT_EQ(p.groups[1].relay, 16u);
  EXPECT_EQ(p.groups[2].members, std::vector<size_t>({32}));
  EXPECT_EQ(p.group_of[17], 1u);
  EXPECT_TRUE(p.IsRelay(16));
  EXPECT_FALSE(p.IsRelay(17));
}

TEST(BarrierTreeGroupTest, ForcedSmallFanoutAndRelaysOnlyWhereTheyCan) {
  std::vector<bool> can(7, true);
  can[0] = false;  // no listener: the group's next agent relays
  const TreePlan p = GroupAgents(7, can, 3, 1);
  ASSERT_EQ(p.groups.size(), 3u);
  EXPECT_EQ(p.groups[0].relay, 1u);
  EXPECT_EQ(p.groups[0].members, std::vector<size_t>({0, 1, 2}));
  EXPECT_EQ(p.groups[2].members, std::vector<size_t>({6}));
  const std::vector<std::string> names = {"a0", "a1", "a2", "a3", "a4", "a5", "a6"};
  EXPECT_EQ(GroupText(p.groups[1], names), "a3..a5");
  EXPECT_EQ(GroupText(p.groups[2], names), "a6");
  // A group with nobody to relay: the star; so is a fan-out that covers every agent, or below 2.
  can[3] = can[4] = can[5] = false;
  EXPECT_FALSE(GroupAgents(7, can, 3, 1).tree());
  EXPECT_FALSE(GroupAgents(7, std::vector<bool>(7, true), 7, 1).tree());
  EXPECT_FALSE(GroupAgents(7, std::vector<bool>(7, true), 1, 1).tree());
}

TEST(BarrierTreeAggregatorTest, RepeatsAndOtherStepsDoNotCount) {
  RelayAggregator g(2);
  EXPECT_FALSE(g.Arrive(0, 1, 0, 0));  // not the current step
  EXPECT_FALSE(g.Arrive(0, 0, 0, 0));
  EXPECT_FALSE(g.Arrive(0, 0, 0, 0));  // a repeat
  EXPECT_EQ(g.Missing(), std::vector<size_t>({1}));
  EXPECT_TRUE(g.Arrive(1, 0, 0, 0));
  g.Forward(0);
  EXPECT_EQ(g.Release({}, 0, 0).size(), 2u);
  EXPECT_EQ(g.step(), 1u);
  EXPECT_EQ(g.arrived(), 0u);
}

// One member of the fleet: its clock, its hop to its relay (a relay is its own group's member with no hop) and its
// compute (true times, ns).
struct Member {
  size_t group;
  int64_t clock_offset, up, down;  // its clock = true + offset; one-way latencies to and from its relay
  int64_t announce, compute_end;   // true instants
};
struct Relay {
  int64_t clock_offset, up, down;  // to and from the coordinator
};

struct Outcome {
  std::vector<barrier_timing::Release> releases;  // per member
  std::vector<int64_t> end_true, bound;
};

// The whole tree, one step: members announce to their relays, each relay forwards when its group is complete, the
// coordinator (clock offset 0) releases once both relays arrived (base/barrier_timing.h, as PhaseDriver), each
// relay releases its members, each member ends the step as AnnounceBarrier does.
Outcome RunStep(const std::vector<Member>& ms, const std::vector<Relay>& rs) {
  std::vector<RelayAggregator> agg;
  std::vector<std::vector<size_t>> members_of(rs.size());
  for (size_t i = 0; i < ms.size(); ++i) members_of[ms[i].group].push_back(i);
  for (size_t r = 0; r < rs.size(); ++r) agg.emplace_back(members_of[r].size());
  std::vector<int64_t> forward_true(rs.size(), 0);
  for (size_t r = 0; r < rs.size(); ++r) {
    for (size_t k = 0; k < members_of[r].size(); ++k) {
      const Member& m = ms[members_of[r][k]];
      const int64_t arrival_true = m.announce + m.up;
      forward_true[r] = std::max(forward_true[r], arrival_true);
      agg[r].Arrive(k, 0, arrival_true + rs[r].clock_offset, m.compute_end - m.announce);
    }
  }
  std::vector<barrier_timing::Announce> at_coord(rs.size());
  int64_t release_true = 0;
  for (size_t r = 0; r < rs.size(); ++r) {
    const int64_t left = agg[r].Forward(forward_true[r] + rs[r].clock_offset);
    at_coord[r] = {forward_true[r] + rs[r].up, left};
    release_true = std::max(release_true, at_coord[r].received_ns);
  }
  int64_t slowest = std::numeric_limits<int64_t>::min();
  for (const barrier_timing::Announce& a : at_coord) slowest = std::max(slowest, barrier_timing::EstimatedEnd(a));
  Outcome out;
  out.releases.resize(ms.size());
  out.end_true.resize(ms.size());
  out.bound.resize(ms.size());
  for (size_t r = 0; r < rs.size(); ++r) {
    const barrier_timing::Release up = barrier_timing::ReleaseFor(at_coord[r], slowest, release_true);
    const int64_t at_relay_true = release_true + rs[r].down;
    const std::vector<barrier_timing::Release> down =
        agg[r].Release(up, at_relay_true + rs[r].clock_offset, at_relay_true + rs[r].clock_offset);
    for (size_t k = 0; k < members_of[r].size(); ++k) {
      const size_t i = members_of[r][k];
      const Member& m = ms[i];
      const barrier_timing::AgentStep s{m.announce + m.clock_offset, m.compute_end + m.clock_offset};
      const int64_t received = at_relay_true + m.down + m.clock_offset;
      out.releases[i] = down[k];
      out.end_true[i] = barrier_timing::StepEnd(s, down[k], received) - m.clock_offset;
      out.bound[i] = barrier_timing::ErrorBound(s, down[k], received);
    }
  }
  return out;
}

int64_t SlowestEnd(const std::vector<Member>& ms) {
  int64_t e = 0;
  for (const Member& m : ms) e = std::max(e, m.compute_end);
  return e;
}

// Two groups: relay 0 (member 0) with member 1, relay 1 (member 2) with member 3; every clock skewed.
std::vector<Member> Fleet() {
  return {{0, 5'000'000, 0, 0, 1'000'000, 4'000'000},
          {0, -7'000'000, 0, 0, 1'000'000, 4'200'000},
          {1, 123'000, 0, 0, 1'000'000, 4'100'000},
          {1, 9'000'000, 0, 0, 1'000'000, 3'900'000}};
}

TEST(BarrierTreeAggregatorTest, ZeroLatencyEveryMemberEndsAtTheSlowestComputeEnd) {
  const std::vector<Member> ms = Fleet();
  const Outcome o = RunStep(ms, {{-3'000'000, 0, 0}, {11'000'000, 0, 0}});
  for (size_t i = 0; i < ms.size(); ++i) {
    EXPECT_GE(o.releases[i].wait_after_end_ns, 0) << i;
    EXPECT_EQ(o.end_true[i], SlowestEnd(ms)) << i;
    EXPECT_EQ(o.bound[i], 0) << i;
  }
  EXPECT_EQ(o.releases[1].wait_after_end_ns, 0);  // the slowest member waits for nobody
}

TEST(BarrierTreeAggregatorTest, LateMemberAndSlowLinksBoundedByBothHops) {
  std::vector<Member> ms = Fleet();
  ms[3].announce = ms[3].compute_end = 9'000'000;  // a late member: waited for data, computes nothing
  ms[3].compute_end += 2'000'000;
  ms[1].up = 40'000, ms[1].down = 25'000;          // a member's slow link to its relay
  ms[3].up = 10'000, ms[3].down = 70'000;
  const std::vector<Relay> rs = {{-3'000'000, 30'000, 5'000}, {11'000'000, 80'000, 60'000}};  // a late relay
  const Outcome o = RunStep(ms, rs);
  const int64_t slowest = SlowestEnd(ms);
  for (size_t i = 0; i < ms.size(); ++i) {
    EXPECT_GE(o.releases[i].wait_after_end_ns, 0) << i;
    EXPECT_GE(o.releases[i].held_ns, 0) << i;
    // Never before the slowest rank's compute end less the bound, and the bound is both hops' round trips.
    EXPECT_GE(o.end_true[i], slowest - o.bound[i]) << i;
    const Relay& r = rs[ms[i].group];
    EXPECT_EQ(o.bound[i], ms[i].up + ms[i].down + r.up + r.down) << i;
  }
  // The slowest member (3, late) ends at its own compute end: its wait is the hop's error, here 0.
  EXPECT_EQ(o.releases[3].wait_after_end_ns, 0);
  EXPECT_EQ(o.end_true[3], slowest);
  // The others end within their bound of it, late by their own hops' difference of one-way latencies.
  EXPECT_EQ(o.end_true[2], slowest + ms[3].up - ms[2].up);
  EXPECT_EQ(o.end_true[0], slowest + (ms[3].up + rs[1].up) - (ms[0].up + rs[0].up));
}

// --- the recursive tree (BuildTree): relays of relays ---

TEST(BarrierTreeLevelsTest, RelaysOfRelaysUntilAtMostTheFanoutAreUnderTheCoordinator) {
  // 9 agents, fan-out 2: groups {0,1} {2,3} {4,5} {6,7} {8}; relays 0 2 4 6 8 grouped {0,2} {4,6} {8}; then {0,4} {8}.
  const TreePlan p = BuildTree(9, std::vector<bool>(9, true), 2, 2);
  ASSERT_EQ(p.levels(), 3u);
  ASSERT_EQ(p.top().size(), 2u);
  EXPECT_EQ(p.top()[0].members, std::vector<size_t>({0, 4}));
  EXPECT_EQ(p.upper[0][1].members, std::vector<size_t>({4, 6}));
  EXPECT_EQ(p.relay_levels, std::vector<size_t>({3, 0, 1, 0, 2, 0, 1, 0, 3}));
  const size_t none = TreePlan::kNone;
  EXPECT_EQ(p.parent, std::vector<size_t>({none, 0, 0, 2, 0, 4, 4, 6, none}));
  EXPECT_EQ(p.top_unit, std::vector<size_t>({0, none, none, none, none, none, none, none, 1}));
  EXPECT_EQ(p.RelayedAt(4, 1).members, std::vector<size_t>({4, 6}));
  EXPECT_EQ(p.RelayedAt(0, 2).members, std::vector<size_t>({0, 4}));
  const std::vector<std::string> names = {"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"};
  EXPECT_EQ(GroupText(p.Subtree(4), names), "a4..a7");  // a mid-level relay takes its whole subtree with it
  EXPECT_EQ(GroupText(p.Subtree(2), names), "a2..a3");
  EXPECT_EQ(GroupText(p.Subtree(0), names), "a0..a7");
  // GroupAgents keeps one level: the coordinator under 5 relays.
  const TreePlan one = GroupAgents(9, std::vector<bool>(9, true), 2, 2);
  EXPECT_TRUE(one.upper.empty());
  EXPECT_EQ(one.top().size(), 5u);
  EXPECT_EQ(one.parent[2], none);
  EXPECT_EQ(one.top_unit[2], 1u);
}

TEST(BarrierTreeLevelsTest, TenThousandAgentsPutAtMostTheFanoutUnderTheCoordinator) {
  const size_t n = 10'000;
  const TreePlan p = BuildTree(n, std::vector<bool>(n, true), kDefaultFanout, kDefaultMinAgents);
  ASSERT_EQ(p.levels(), 3u);  // 625 relays, 40, then 3 under the coordinator
  EXPECT_EQ(p.top().size(), 3u);
  size_t tops = 0;
  for (size_t i = 0; i < n; ++i) {
    // Every agent's chain of parents ends at a relay under the coordinator, within `levels` hops.
    size_t at = i, hops = 0;
    while (p.parent[at] != TreePlan::kNone && hops <= p.levels()) at = p.parent[at], ++hops;
    EXPECT_NE(p.top_unit[at], TreePlan::kNone) << i;
    EXPECT_LE(hops, p.levels()) << i;
    tops += p.top_unit[i] != TreePlan::kNone;
  }
  EXPECT_EQ(tops, 3u);
  EXPECT_EQ(p.subtree_end[p.top()[2].relay], n);
}

// One agent of a tree of any depth: its clock, its hop to its parent (a relay or the coordinator) and its compute
// (true times, ns).
struct Node {
  int64_t clock_offset = 0, up = 0, down = 0;  // its clock = true + offset; one-way latencies to and from its parent
  int64_t announce = 0, compute_end = 0;       // true instants
};

struct DeepOutcome {
  std::vector<barrier_timing::Release> releases;  // per agent
  std::vector<int64_t> end_true, bound, path_latency;  // path_latency: the sum of the up-hops to the coordinator
};

// One step over BuildTree's plan: every level's aggregator of every relay, bottom-up arrivals (a relay's own
// arrival at its next level is local: latency 0), the coordinator (clock offset 0) as PhaseDriver, releases down
// the levels (each level's own release feeding the level below), each agent ending as AnnounceBarrier does.
class DeepStep {
 public:
  DeepStep(const TreePlan& p, const std::vector<Node>& ns) : p_(p), ns_(ns), agg_(ns.size()), fwd_(ns.size()) {
    for (size_t i = 0; i < ns.size(); ++i) {
      for (size_t l = 0; l < p.relay_levels[i]; ++l) agg_[i].emplace_back(p.RelayedAt(i, l).members.size());
      fwd_[i].assign(p.relay_levels[i], 0);
    }
  }

  DeepOutcome Run() {
    for (size_t l = 0; l < p_.levels(); ++l) {
      for (const Group& g : p_.Level(l)) Collect(g, l);
    }
    std::vector<barrier_timing::Announce> at_coord;
    int64_t release_true = 0;
    for (const Group& g : p_.top()) {
      const size_t r = g.relay;
      const int64_t f = fwd_[r].back();
      at_coord.push_back({f + ns_[r].up, left_.at({r, p_.relay_levels[r] - 1})});
      release_true = std::max(release_true, at_coord.back().received_ns);
    }
    int64_t slowest = std::numeric_limits<int64_t>::min();
    for (const barrier_timing::Announce& a : at_coord) slowest = std::max(slowest, barrier_timing::EstimatedEnd(a));
    out_.releases.resize(ns_.size());
    out_.end_true.resize(ns_.size());
    out_.bound.resize(ns_.size());
    out_.path_latency.assign(ns_.size(), 0);
    for (size_t u = 0; u < p_.top().size(); ++u) {
      const size_t r = p_.top()[u].relay;
      Down(r, p_.relay_levels[r] - 1, barrier_timing::ReleaseFor(at_coord[u], slowest, release_true),
           release_true + ns_[r].down, ns_[r].up + ns_[r].down);
    }
    return out_;
  }

 private:
  // Level l's group `g` collects its members' arrivals (leaves at level 0, relays' forwards above) and forwards.
  void Collect(const Group& g, size_t l) {
    const size_t r = g.relay;
    int64_t last = 0;
    for (size_t k = 0; k < g.members.size(); ++k) {
      const size_t m = g.members[k];
      const int64_t hop = m == r ? 0 : ns_[m].up;
      const int64_t sent = l == 0 ? ns_[m].announce : fwd_[m][l - 1];
      const int64_t left = l == 0 ? ns_[m].compute_end - ns_[m].announce : left_.at({m, l - 1});
      last = std::max(last, sent + hop);
      agg_[r][l].Arrive(k, 0, sent + hop + ns_[r].clock_offset, left);
    }
    fwd_[r][l] = last;
    left_[{r, l}] = agg_[r][l].Forward(last + ns_[r].clock_offset);
  }

  // Relay r's level-l release `up` reached it at true time t; `rtt` sums the round trips of the path above.
  void Down(size_t r, size_t l, const barrier_timing::Release& up, int64_t t, int64_t rtt) {
    const Group& g = p_.RelayedAt(r, l);
    const int64_t at = t + ns_[r].clock_offset;
    const std::vector<barrier_timing::Release> outs = agg_[r][l].Release(up, at, at);
    for (size_t k = 0; k < g.members.size(); ++k) {
      const size_t m = g.members[k];
      const Node& n = ns_[m];
      const int64_t tm = m == r ? t : t + n.down;
      const int64_t rm = m == r ? rtt : rtt + n.up + n.down;
      if (l > 0) {
        Down(m, l - 1, outs[k], tm, rm);
        continue;
      }
      const barrier_timing::AgentStep s{n.announce + n.clock_offset, n.compute_end + n.clock_offset};
      out_.releases[m] = outs[k];
      out_.end_true[m] = barrier_timing::StepEnd(s, outs[k], tm + n.clock_offset) - n.clock_offset;
      out_.bound[m] = barrier_timing::ErrorBound(s, outs[k], tm + n.clock_offset);
      out_.path_latency[m] = rm;
    }
  }

  const TreePlan& p_;
  const std::vector<Node>& ns_;
  std::vector<std::vector<RelayAggregator>> agg_;  // per agent, per level it relays
  std::vector<std::vector<int64_t>> fwd_;           // per agent, per level: its forward (true time)
  std::map<std::pair<size_t, size_t>, int64_t> left_;  // (relay, level): compute_left it forwarded
  DeepOutcome out_;
};

int64_t SlowestEnd(const std::vector<Node>& ns) {
  int64_t e = 0;
  for (const Node& n : ns) e = std::max(e, n.compute_end);
  return e;
}

// The sum of the one-way up-latencies from agent i to the coordinator (what the coordinator's estimate of its end
// is late by), following the plan's parents; a relay's own climb through its levels is local.
int64_t UpPath(const TreePlan& p, const std::vector<Node>& ns, size_t i) {
  int64_t u = 0;
  for (size_t at = i;; at = p.parent[at]) {
    u += ns[at].up;
    if (p.parent[at] == TreePlan::kNone) return u;
  }
}

// 9 agents, fan-out 2 (3 levels, see above); every clock skewed by milliseconds, computes of ~3 ms.
std::vector<Node> DeepFleet() {
  std::vector<Node> ns(9);
  const int64_t offsets[9] = {5'000'000, -7'000'000, 123'000, 9'000'000, -2'500'000, 44'000, -9'100'000, 3'000, 0};
  for (size_t i = 0; i < ns.size(); ++i) {
    ns[i].clock_offset = offsets[i];
    ns[i].announce = 1'000'000;
    ns[i].compute_end = 4'000'000 + static_cast<int64_t>(i) * 37'000;
  }
  return ns;
}

TEST(BarrierTreeLevelsTest, ZeroLatencyEveryAgentOfThreeLevelsEndsAtTheSlowestComputeEnd) {
  const TreePlan p = BuildTree(9, std::vector<bool>(9, true), 2, 2);
  const std::vector<Node> ns = DeepFleet();
  const DeepOutcome o = DeepStep(p, ns).Run();
  for (size_t i = 0; i < ns.size(); ++i) {
    EXPECT_GE(o.releases[i].wait_after_end_ns, 0) << i;
    EXPECT_EQ(o.end_true[i], SlowestEnd(ns)) << i;
    EXPECT_EQ(o.bound[i], 0) << i;
  }
  EXPECT_EQ(o.releases[8].wait_after_end_ns, 0);  // the slowest (agent 8) waits for nobody
}

TEST(BarrierTreeLevelsTest, SkewALateMemberAndALateMidLevelRelayStayWithinEveryHopsBound) {
  const TreePlan p = BuildTree(9, std::vector<bool>(9, true), 2, 2);
  std::vector<Node> ns = DeepFleet();
  ns[5].announce = 6'000'000, ns[5].compute_end = 8'000'000;  // a late member (waited for data) under relay 4
  ns[4].up = 400'000, ns[4].down = 250'000;  // a late mid-level relay: its hop to relay 0 is slow both ways
  ns[1].up = 40'000, ns[1].down = 25'000;    // a leaf's slow link
  ns[2].up = 10'000, ns[2].down = 70'000;    // a level-0 relay's hop to its parent
  ns[7].up = 5'000, ns[7].down = 90'000;
  ns[0].up = 30'000, ns[0].down = 5'000;     // the top relays' hops to the coordinator
  ns[8].up = 80'000, ns[8].down = 60'000;
  const DeepOutcome o = DeepStep(p, ns).Run();
  const int64_t slowest = SlowestEnd(ns);
  const int64_t slowest_up = UpPath(p, ns, 5);  // the coordinator's estimate of member 5's end is late by this
  for (size_t i = 0; i < ns.size(); ++i) {
    EXPECT_GE(o.releases[i].wait_after_end_ns, 0) << i;
    EXPECT_GE(o.releases[i].held_ns, 0) << i;
    // Never before the slowest compute end less the bound, and the bound is every hop's round trip on the path.
    EXPECT_GE(o.end_true[i], slowest - o.bound[i]) << i;
    EXPECT_EQ(o.bound[i], o.path_latency[i]) << i;
    // Each ends at the slowest end plus the difference of its path's one-way latencies and the slowest's.
    EXPECT_EQ(o.end_true[i], std::max(slowest + slowest_up - UpPath(p, ns, i), ns[i].compute_end)) << i;
  }
  EXPECT_EQ(o.end_true[5], slowest);  // the slowest member ends at its own compute end
  // Member 5's path: 5 -> 4 (level 0) -> 0 (level 1, 4 is a plain member) -> coordinator.
  EXPECT_EQ(o.path_latency[5], ns[5].up + ns[5].down + ns[4].up + ns[4].down + ns[0].up + ns[0].down);
}

}  // namespace
}  // namespace dlio::barrier_tree
