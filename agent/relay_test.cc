// RelayHub (agent/relay.h) alone: a relay's group over fake replies, no gRPC: arrivals before the relay's phase
// opened wait for it, the group's last arrival forwards one, the coordinator's release reaches every member with its
// own wait, and a member whose stream broke is reported while the phase runs (not after).
#include "agent/relay.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dlio {
namespace {

struct Sent {
  std::string member;
  uint64_t step;
  barrier_timing::Release release;
};

TEST(RelayHubTest, EarlyMembersWaitForTheOpenAndEachGetsItsOwnRelease) {
  RelayHub hub;
  std::vector<Sent> sent;
  auto reply_to = [&sent](const std::string& m) {
    return [&sent, m](uint64_t step, const barrier_timing::Release& r) {
      sent.push_back({m, step, r});
      return true;
    };
  };
  const int64_t ms = 1000000;
  // Members b and c joined and announced before the relay a's own order came.
  hub.Join("j", "train-epoch-1", "b", reply_to("b"));
  hub.Join("j", "train-epoch-1", "c", reply_to("c"));
  hub.Arrive("j", "train-epoch-1", "b", 0, 30 * ms, 0);      // ends at 30 ms (relay clock)
  hub.Arrive("j", "train-epoch-1", "c", 0, 10 * ms, 2 * ms);  // ends at 12 ms
  std::vector<std::pair<uint64_t, int64_t>> forwarded;
  std::vector<std::string> lost;
  hub.Open(
      "j", "train-epoch-1", {"a", "b", "c"}, "a",
      [&](uint64_t step, int64_t left) { forwarded.emplace_back(step, left); },
      [&](const std::string& m, const std::string&) { lost.push_back(m); });
  EXPECT_TRUE(forwarded.empty());  // a has not arrived
  hub.Arrive("j", "train-epoch-1", "a", 0, 5 * ms, 1 * ms);  // ends at 6 ms
  ASSERT_EQ(forwarded.size(), 1u);
  EXPECT_EQ(forwarded[0].first, 0u);
  EXPECT_GE(forwarded[0].second, 0);
  // The coordinator: this group waits 4 ms more after its end; held 1 ms.
  const std::optional<barrier_timing::Release> own =
      hub.Released("j", "train-epoch-1", 0, {4 * ms, 1 * ms}, 40 * ms, 40 * ms);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->wait_after_end_ns, (30 + 4 - 6) * ms);
  ASSERT_EQ(sent.size(), 2u);
  for (const Sent& s : sent) {
    EXPECT_EQ(s.step, 0u);
    EXPECT_EQ(s.release.wait_after_end_ns, s.member == "b" ? 4 * ms : (30 + 4 - 12) * ms) << s.member;
    EXPECT_GE(s.release.held_ns, 0);
  }
  // Not relayed here: another job's release.
  EXPECT_FALSE(hub.Released("other", "train-epoch-1", 0, {}, 0, 0).has_value());
  // A broken stream is reported while the phase is open, a clean end or one after Close() is not.
  hub.Leave("j", "train-epoch-1", "c", /*broken=*/false, "");
  hub.Leave("j", "train-epoch-1", "b", /*broken=*/true, "gone");
  EXPECT_EQ(lost, std::vector<std::string>({"b"}));
  hub.Close("j", "train-epoch-1");
  hub.Leave("j", "train-epoch-1", "a", /*broken=*/true, "gone");
  EXPECT_EQ(lost.size(), 1u);
  // The job's next phase replaces the closed one; a late arrival of the old one is dropped.
  hub.Arrive("j", "train-epoch-2", "b", 0, 0, 0);
  hub.Arrive("j", "train-epoch-1", "b", 1, 0, 0);
  forwarded.clear();
  hub.Open(
      "j", "train-epoch-2", {"a", "b"}, "a", [&](uint64_t step, int64_t left) { forwarded.emplace_back(step, left); },
      nullptr);
  hub.Arrive("j", "train-epoch-2", "a", 0, 0, 0);
  EXPECT_EQ(forwarded.size(), 1u);
}

// A relay of relays: a relays level 0 {a, b} and level 1 {a, c}, c being a mid-level relay (a plain member here).
// Its own arrival climbs locally; one forward for the subtree; the release goes down both levels.
TEST(RelayHubTest, ARelayOfRelaysForwardsOnceForItsSubtreeAndReleasesEveryLevel) {
  RelayHub hub;
  std::vector<Sent> sent;
  auto reply_to = [&sent](const std::string& m) {
    return [&sent, m](uint64_t step, const barrier_timing::Release& r) {
      sent.push_back({m, step, r});
      return true;
    };
  };
  const int64_t ms = 1000000;
  PhaseOrder order;
  order.barrier_group = {"a", "b"};
  order.barrier_upper = {{"a", "c"}};
  const std::vector<std::vector<std::string>> levels = RelayHub::LevelsOf(order);
  ASSERT_EQ(levels.size(), 2u);
  std::vector<std::pair<uint64_t, int64_t>> forwarded;
  std::vector<std::string> lost;
  hub.OpenLevels(
      "j", "train-epoch-1", levels, "a", [&](uint64_t step, int64_t left) { forwarded.emplace_back(step, left); },
      [&](const std::string& m, const std::string&) { lost.push_back(m); });
  hub.Join("j", "train-epoch-1", "b", reply_to("b"));
  hub.Join("j", "train-epoch-1", "c", reply_to("c"));
  hub.Arrive("j", "train-epoch-1", "c", 0, 40 * ms, 10 * ms);  // at 10 ms: c's subtree ends at 50 ms
  hub.Arrive("j", "train-epoch-1", "b", 0, 18 * ms, 12 * ms);  // at 12 ms: ends at 30 ms
  EXPECT_TRUE(forwarded.empty());
  hub.Arrive("j", "train-epoch-1", "a", 0, 5 * ms, 20 * ms);   // at 20 ms: ends at 25 ms; both levels complete
  ASSERT_EQ(forwarded.size(), 1u);  // one arrival for the whole subtree
  EXPECT_EQ(forwarded[0].second, (50 - 20) * ms);
  // The coordinator: 2 ms more after the subtree's end, held 1 ms; it reached a at 60 ms.
  const std::optional<barrier_timing::Release> own =
      hub.Released("j", "train-epoch-1", 0, {2 * ms, 1 * ms}, 60 * ms, 60 * ms);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->wait_after_end_ns, (50 + 2 - 25) * ms);
  ASSERT_EQ(sent.size(), 2u);
  for (const Sent& s : sent) {
    EXPECT_EQ(s.release.wait_after_end_ns, s.member == "c" ? 2 * ms : (50 + 2 - 30) * ms) << s.member;
    EXPECT_GE(s.release.held_ns, 0) << s.member;
  }
  // The bound of the hops above (60 - 20 - 1 ms) reaches the lowest level, and a plain member of any level is
  // reported lost.
  EXPECT_EQ(hub.upstream_bound_ns("j"), 39 * ms);
  hub.Leave("j", "train-epoch-1", "c", /*broken=*/true, "gone");
  EXPECT_EQ(lost, std::vector<std::string>({"c"}));
}

}  // namespace
}  // namespace dlio
