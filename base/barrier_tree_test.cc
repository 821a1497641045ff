// The relay tree's grouping and aggregation (base/barrier_tree.h) against fake clocks and links: every side has its
// own clock (an offset from true time) and every hop a one-way latency each way, as the real processes would.
#include "base/barrier_tree.h"

#include <algorithm>
#include <limits>
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

}  // namespace
}  // namespace dlio::barrier_tree
