// PhaseDriver and PhaseProgress alone, with fake links and explicit time points: the barrier, the progress over
// the fleet, and the failures' messages. No coordinator, no threads.
#include "coordinator/phase_driver.h"

#include "gtest/gtest.h"

namespace dlio {
namespace {

using Clock = PhaseDriver::Clock;

class CountingLink : public AgentLink {
 public:
  void Accepted(std::chrono::milliseconds, std::chrono::milliseconds) override {}
  void RunPhase(const PhaseOrder& o) override {
    ++orders;
    last = o;
  }
  PhaseOrder last;
  void ReleaseBarrier(const std::string&, const std::string&, uint64_t step) override { releases.push_back(step); }
  void ReleaseBarrierTimed(const std::string& j, const std::string& p, uint64_t step,
                           const barrier_timing::Release& t) override {
    timings.push_back(t);
    ReleaseBarrier(j, p, step);
  }
  std::vector<barrier_timing::Release> timings;
  void Cancel(const std::string&, const std::string&) override {}
  void Drop(const std::string&) override {}
  int orders = 0;
  std::vector<uint64_t> releases;
};

struct Fleet {
  explicit Fleet(int n) {
    for (int i = 0; i < n; ++i) {
      AgentInfo a;
      a.name = std::string(1, static_cast<char>('a' + i));
      a.first_rank = 2 * i;
      a.ranks = 2;
      index[a.name] = agents.size();
      agents.push_back(a);
      links.push_back(std::make_shared<CountingLink>());
    }
  }
  void Start(PhaseDriver& d, PhaseKind kind, Clock::time_point now) {
    d.Begin({"job", "train-epoch-1", kind, 1, &agents, &index}, now);
    for (size_t i = 0; i < agents.size(); ++i) d.Order(i, links[i], PhaseOrder());
  }
  std::vector<AgentInfo> agents;
  std::unordered_map<std::string, size_t> index;
  std::vector<std::shared_ptr<CountingLink>> links;
};

// dlio_ext.barrier: announce (issue 29): each agent's release says how long after its own compute end to wait, so
// that every agent ends at the slowest estimated compute end (receipt + compute left, coordinator clock), and how
// long its announce was held.
TEST(PhaseDriverTest, TheReleaseTellsEachAgentHowLongAfterItsComputeEndToWait) {
  Fleet f(3);
  PhaseDriver d;
  const Clock::time_point t0{};
  f.Start(d, PhaseKind::kTrainEpoch, t0);
  Clock::duration wait{};
  using std::chrono::milliseconds;
  const int64_t ms = 1000000;
  // a: received at 0, computes 10 ms more (ends 10); b: at 2 ms, 30 ms more (ends 32, the slowest); c: at 5 ms,
  // arriving after its compute (ends 5).
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0, &wait, 10 * ms), PhaseDriver::Arrival::kCounted);
  EXPECT_EQ(d.Arrive("b", "job", "train-epoch-1", 0, t0 + milliseconds(2), &wait, 30 * ms),
            PhaseDriver::Arrival::kCounted);
  EXPECT_EQ(d.Arrive("c", "job", "train-epoch-1", 0, t0 + milliseconds(5), &wait, 0), PhaseDriver::Arrival::kReleased);
  ASSERT_EQ(f.links[0]->timings.size(), 1u);
  EXPECT_EQ(f.links[0]->timings[0].wait_after_end_ns, 22 * ms);
  EXPECT_EQ(f.links[0]->timings[0].held_ns, 5 * ms);
  EXPECT_EQ(f.links[1]->timings[0].wait_after_end_ns, 0);
  EXPECT_EQ(f.links[1]->timings[0].held_ns, 3 * ms);
  EXPECT_EQ(f.links[2]->timings[0].wait_after_end_ns, 27 * ms);
  EXPECT_EQ(f.links[2]->timings[0].held_ns, 0);
  // The next step starts afresh: a repeat of step 0 counts for nothing.
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0 + milliseconds(40), &wait, 1 * ms), PhaseDriver::Arrival::kStale);
}

// The estimate of an agent's end starts when gRPC handed its announce over (`received`), not when the coordinator's
// lock was taken; each release's hold runs to its own queueing (`release_clock`, read once per release), so an
// agent late in the fan-out is not told that the writes before its own were its link's latency.
TEST(PhaseDriverTest, TheEstimateStartsAtTheReceiptAndEachHoldEndsAtItsOwnRelease) {
  Fleet f(3);
  PhaseDriver d;
  using std::chrono::milliseconds;
  const Clock::time_point t0 = Clock::time_point{} + milliseconds(1000);  // an unset receipt is the epoch
  f.Start(d, PhaseKind::kTrainEpoch, t0);
  Clock::duration wait{};
  const int64_t ms = 1000000;
  Clock::time_point release_at = t0 + milliseconds(7);
  const std::function<Clock::time_point()> release_clock = [&] {
    release_at += milliseconds(1);
    return release_at - milliseconds(1);  // 7, 8, 9 ms: a, b, c in placement order
  };
  // a: received at 0 but the lock taken at 4 ms, 10 ms left (ends 10); b: received at 2, locked at 3, 30 ms left
  // (ends 32, the slowest); c: received at 5, locked at 6, compute over (ends 5).
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0 + milliseconds(4), &wait, 10 * ms, t0, release_clock),
            PhaseDriver::Arrival::kCounted);
  EXPECT_EQ(d.Arrive("b", "job", "train-epoch-1", 0, t0 + milliseconds(3), &wait, 30 * ms, t0 + milliseconds(2),
                     release_clock),
            PhaseDriver::Arrival::kCounted);
  EXPECT_EQ(d.Arrive("c", "job", "train-epoch-1", 0, t0 + milliseconds(6), &wait, 0, t0 + milliseconds(5),
                     release_clock),
            PhaseDriver::Arrival::kReleased);
  ASSERT_EQ(f.links[0]->timings.size(), 1u);
  EXPECT_EQ(f.links[0]->timings[0].wait_after_end_ns, 22 * ms);  // read at the lock: 33 - 14 = 19
  EXPECT_EQ(f.links[0]->timings[0].announce_received_ns, 1000 * ms);
  EXPECT_EQ(f.links[0]->timings[0].held_ns, 7 * ms);
  EXPECT_EQ(f.links[1]->timings[0].wait_after_end_ns, 0);
  EXPECT_EQ(f.links[1]->timings[0].held_ns, 6 * ms);
  EXPECT_EQ(f.links[1]->timings[0].announce_received_ns, 1002 * ms);
  EXPECT_EQ(f.links[2]->timings[0].wait_after_end_ns, 27 * ms);
  EXPECT_EQ(f.links[2]->timings[0].held_ns, 4 * ms);  // one release clock for all: 7 - 5 = 2
  EXPECT_EQ(f.links[2]->timings[0].announce_received_ns, 1005 * ms);
}

// Each release also carries when its agent's announce was received, in the coordinator's clock, so that the agent can
// place the clock offset in an interval (base/barrier_timing.h OffsetWindow).
TEST(PhaseDriverTest, TheReleaseCarriesWhenTheAgentsAnnounceWasReceived) {
  Fleet f(2);
  PhaseDriver d;
  const Clock::time_point t0{std::chrono::seconds(100)};
  f.Start(d, PhaseKind::kTrainEpoch, t0);
  Clock::duration wait{};
  const int64_t ms = 1000000, at0 = 100'000 * ms;
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0, &wait, 10 * ms), PhaseDriver::Arrival::kCounted);
  EXPECT_EQ(d.Arrive("b", "job", "train-epoch-1", 0, t0 + std::chrono::milliseconds(3), &wait, 10 * ms),
            PhaseDriver::Arrival::kReleased);
  ASSERT_EQ(f.links[0]->timings.size(), 1u);
  EXPECT_EQ(f.links[0]->timings[0].announce_received_ns, at0);
  EXPECT_EQ(f.links[0]->timings[0].held_ns, 3 * ms);
  EXPECT_EQ(f.links[1]->timings[0].announce_received_ns, at0 + 3 * ms);
  EXPECT_EQ(f.links[1]->timings[0].held_ns, 0);
}

TEST(PhaseDriverTest, TheLastArrivalReleasesTheStepOnEveryLinkAndStaleOnesAreTold) {
  Fleet f(3);
  PhaseDriver d;
  const Clock::time_point t0{};
  f.Start(d, PhaseKind::kTrainEpoch, t0);
  Clock::duration wait{};
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0, &wait), PhaseDriver::Arrival::kCounted);
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0, &wait), PhaseDriver::Arrival::kCounted);  // a repeat
  EXPECT_EQ(d.Arrive("b", "job", "train-epoch-1", 1, t0, &wait), PhaseDriver::Arrival::kStale);    // wrong step
  EXPECT_EQ(d.Arrive("b", "job", "eval-epoch-1", 0, t0, &wait), PhaseDriver::Arrival::kStale);     // wrong phase
  EXPECT_EQ(d.Arrive("x", "job", "train-epoch-1", 0, t0, &wait), PhaseDriver::Arrival::kStale);    // not its agent
  EXPECT_EQ(d.Arrive("b", "job", "train-epoch-1", 0, t0, &wait), PhaseDriver::Arrival::kCounted);
  EXPECT_TRUE(f.links[0]->releases.empty());
  EXPECT_EQ(d.Arrive("c", "job", "train-epoch-1", 0, t0 + std::chrono::milliseconds(7), &wait),
            PhaseDriver::Arrival::kReleased);
  EXPECT_EQ(wait, std::chrono::milliseconds(7));
  for (const auto& l : f.links) EXPECT_EQ(l->releases, std::vector<uint64_t>{0});
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0, &wait), PhaseDriver::Arrival::kStale);  // released
}

TEST(PhaseDriverTest, ProgressIsTheSlowestAgentsStepOrTheSummedFiles) {
  PhaseProgress steps(2, /*files=*/false);
  EXPECT_FALSE(steps.Fleet());
  steps.Report(0, {5, 10, 50, 500, 3, 4});
  steps.Report(1, {3, 12, 30, 300, 1, 4});
  const AgentProgress s = *steps.Fleet();
  EXPECT_EQ(s.done, 3u);
  EXPECT_EQ(s.total, 12u);
  EXPECT_EQ(s.samples, 80u);
  EXPECT_EQ(s.bytes, 800u);
  EXPECT_DOUBLE_EQ(*PhaseProgress::LiveAuPercent(s), 50.0);
  EXPECT_EQ(steps.Furthest(), std::make_pair(uint64_t{5}, uint64_t{12}));
  EXPECT_TRUE(steps.Publish(s));
  EXPECT_FALSE(steps.Publish(s));  // nothing new: no event

  PhaseProgress files(2, /*files=*/true);
  files.Report(0, {2, 4, 0, 0, 0, 0});
  files.Report(1, {1, 4, 0, 0, 0, 0});
  EXPECT_EQ(files.Fleet()->done, 3u);
  EXPECT_EQ(files.Fleet()->total, 8u);
  EXPECT_FALSE(PhaseProgress::LiveAuPercent(*files.Fleet()));
}

// The live AU of the progress line: over the last kLiveAuWindow, not since the epoch's start. An epoch that ran at
// 100 % for 20 s (its prefetch queue full) and then at 25 % for 10 s reads 25 %, where the figure since the start
// still says 75 %.
TEST(PhaseDriverTest, LiveAuIsWindowedOverTheLastSeconds) {
  PhaseProgress p(1, /*files=*/false);
  const Clock::time_point t0{};
  auto at = [&](int s) { return t0 + std::chrono::seconds(s); };
  const uint64_t sec = 1'000'000'000;
  AgentProgress a;
  EXPECT_FALSE(p.WindowedAuPercent(a, at(0)));  // no wall time yet
  for (int s = 1; s <= 20; ++s) {  // 100 %: one second of compute per second
    a.compute_ns = s * sec;
    a.wall_ns = s * sec;
    EXPECT_DOUBLE_EQ(*p.WindowedAuPercent(a, at(s)), 100.0) << s;
  }
  for (int s = 21; s <= 30; ++s) {  // 25 %
    a.compute_ns = 20 * sec + (s - 20) * sec / 4;
    a.wall_ns = s * sec;
    p.WindowedAuPercent(a, at(s));
  }
  EXPECT_DOUBLE_EQ(*PhaseProgress::LiveAuPercent(a), 75.0);  // since the start
  EXPECT_DOUBLE_EQ(*p.WindowedAuPercent(a, at(30)), 25.0);    // the last 10 s
  // No new wall time (a long barrier wait): the last figure's window, not nothing.
  EXPECT_DOUBLE_EQ(*p.WindowedAuPercent(a, at(35)), 25.0);
}

TEST(PhaseDriverTest, FailuresNameAgentRanksJobPhaseAndStepAndTheFirstOneWins) {
  Fleet f(2);
  PhaseDriver d;
  const Clock::time_point t0{};
  f.Start(d, PhaseKind::kTrainEpoch, t0);
  Clock::duration wait{};
  d.Arrive("a", "job", "train-epoch-1", 0, t0, &wait);
  d.Arrive("b", "job", "train-epoch-1", 0, t0, &wait);
  d.Report("a", "job", "train-epoch-1", {1, 8, 0, 0, 0, 0});
  EXPECT_FALSE(d.BarrierTimedOut(t0 + std::chrono::seconds(5), std::chrono::seconds(5)));
  d.Arrive("a", "job", "train-epoch-1", 1, t0, &wait);
  ASSERT_TRUE(d.BarrierTimedOut(t0 + std::chrono::seconds(6), std::chrono::seconds(5)));
  EXPECT_EQ(d.error(),
            "job job phase train-epoch-1: no step barrier released for 5 s (barrier timeout) at step 1: 1 of 2 "
            "agent(s) arrived; waiting for b (ranks 2-3)");
  d.Lost("b", "stream closed");
  EXPECT_EQ(d.Unsettled(), std::vector<std::string>{"a"});
  EXPECT_NE(d.error().find("barrier timeout"), std::string::npos);  // the first failure is kept

  f.Start(d, PhaseKind::kTrainEpoch, t0);
  EXPECT_TRUE(d.error().empty());
  d.Report("a", "job", "train-epoch-1", {3, 8, 0, 0, 0, 0});
  d.Lost("b", "stream closed");
  EXPECT_EQ(d.error(), "agent 'b' (ranks 2-3) lost during job job phase train-epoch-1 after step 0 of 8: stream closed");
  EXPECT_FALSE(d.settled());
  EXPECT_TRUE(d.Done("a", "job", "train-epoch-1", {}));  // no results for its 2 ranks: invalid, but settled
  EXPECT_FALSE(d.Done("a", "job", "train-epoch-1", {}));  // a repeat
  EXPECT_TRUE(d.settled());
}

// The relay tree (issue 29 item 2, base/barrier_tree.h): 7 agents with listeners, fan-out 3 forced: relays a, d, g;
// each order names its relay, the relays' their groups; only the relays' arrivals count, only they are released,
// and a relay lost fails the phase naming its group.
TEST(PhaseDriverTest, ATreeTalksToTheRelaysOnlyAndALostRelayNamesItsGroup) {
  Fleet f(7);
  for (AgentInfo& a : f.agents) a.relay_endpoint = "127.0.0.1:" + std::to_string(7000 + a.first_rank);
  f.agents[0].relay_tls_name = "relay-a.example";  // a TLS listener: its members verify this name
  PhaseDriver d;
  const Clock::time_point t0{};
  d.Begin({"job", "train-epoch-1", PhaseKind::kTrainEpoch, 1, &f.agents, &f.index, 3, 2}, t0);
  for (size_t i = 0; i < f.agents.size(); ++i) d.Order(i, f.links[i], PhaseOrder());
  ASSERT_TRUE(d.tree().tree());
  EXPECT_EQ(f.links[1]->last.barrier_relay, "a");
  EXPECT_EQ(f.links[1]->last.barrier_relay_endpoint, "127.0.0.1:7000");
  EXPECT_EQ(f.links[1]->last.barrier_relay_tls_name, "relay-a.example");
  EXPECT_EQ(f.links[4]->last.barrier_relay_tls_name, "");
  EXPECT_TRUE(f.links[1]->last.barrier_group.empty());
  EXPECT_EQ(f.links[3]->last.barrier_group, std::vector<std::string>({"d", "e", "f"}));
  EXPECT_EQ(f.links[6]->last.barrier_group, std::vector<std::string>({"g"}));
  Clock::duration wait{};
  EXPECT_EQ(d.Arrive("b", "job", "train-epoch-1", 0, t0, &wait, 0), PhaseDriver::Arrival::kStale);  // a member
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0, &wait, 0), PhaseDriver::Arrival::kCounted);
  EXPECT_EQ(d.Arrive("d", "job", "train-epoch-1", 0, t0, &wait, 0), PhaseDriver::Arrival::kCounted);
  EXPECT_TRUE(d.BarrierTimedOut(t0 + std::chrono::seconds(6), std::chrono::seconds(5)));
  EXPECT_NE(d.error().find("2 of 3 relay(s) arrived; waiting for relay g (group g)"), std::string::npos) << d.error();
  f.Start(d, PhaseKind::kTrainEpoch, t0);  // again, the tree at the default threshold: 7 agents keep the star
  EXPECT_FALSE(d.tree().tree());
  EXPECT_TRUE(f.links[1]->last.barrier_relay.empty());

  d.Begin({"job", "train-epoch-2", PhaseKind::kTrainEpoch, 2, &f.agents, &f.index, 3, 2}, t0);
  for (size_t i = 0; i < f.agents.size(); ++i) d.Order(i, f.links[i], PhaseOrder());
  for (const char* r : {"a", "d", "g"}) d.Arrive(r, "job", "train-epoch-2", 0, t0, &wait, 0);
  for (size_t i = 0; i < f.agents.size(); ++i) {
    EXPECT_EQ(f.links[i]->releases.size(), i % 3 == 0 ? 1u : 0u) << i;  // the relays only
  }
  EXPECT_FALSE(d.MemberLost("a", "job", "train-epoch-2", "e", "gone"));  // not a's member
  d.Lost("d", "stream closed");
  EXPECT_EQ(d.error().rfind("relay d lost: group d..f; agent 'd' (ranks 6-7) lost during job job phase "
                            "train-epoch-2 after step 1", 0), 0u) << d.error();
}

TEST(PhaseDriverTest, AMemberLostIsReportedByItsRelay) {
  Fleet f(4);
  for (AgentInfo& a : f.agents) a.relay_endpoint = "127.0.0.1:7000";
  PhaseDriver d;
  d.Begin({"job", "train-epoch-1", PhaseKind::kTrainEpoch, 1, &f.agents, &f.index, 2, 2}, Clock::time_point{});
  for (size_t i = 0; i < f.agents.size(); ++i) d.Order(i, f.links[i], PhaseOrder());
  EXPECT_TRUE(d.MemberLost("c", "job", "train-epoch-1", "d", "its barrier stream to the relay broke"));
  EXPECT_EQ(d.error(), "agent 'd' (ranks 6-7) lost during job job phase train-epoch-1 after step 0: reported by its "
                       "relay c: its barrier stream to the relay broke");
}

// The recursive tree (base/barrier_tree.h BuildTree): 9 agents, fan-out 2 forced: groups ab cd ef gh i, their
// relays grouped (a c) (e g) (i), then (a e) (i): only a and i are under the coordinator. Each order names its parent
// and every group it relays; only a's and i's arrivals count; a mid-level relay lost names its whole subtree, and
// a member is reported lost by its own parent only.
TEST(PhaseDriverTest, ARecursiveTreePutsAtMostTheFanoutUnderTheCoordinator) {
  Fleet f(9);
  for (AgentInfo& a : f.agents) a.relay_endpoint = "127.0.0.1:" + std::to_string(7000 + a.first_rank);
  PhaseDriver d;
  const Clock::time_point t0{};
  d.Begin({"job", "train-epoch-1", PhaseKind::kTrainEpoch, 1, &f.agents, &f.index, 2, 2}, t0);
  for (size_t i = 0; i < f.agents.size(); ++i) d.Order(i, f.links[i], PhaseOrder());
  ASSERT_EQ(d.tree().levels(), 3u);
  using Names = std::vector<std::string>;
  const PhaseOrder& a = f.links[0]->last;
  EXPECT_EQ(a.barrier_relay, "a");  // under the coordinator
  EXPECT_EQ(a.barrier_group, Names({"a", "b"}));
  EXPECT_EQ(a.barrier_upper, std::vector<Names>({{"a", "c"}, {"a", "e"}}));
  const PhaseOrder& e = f.links[4]->last;  // a mid-level relay: its parent is a
  EXPECT_EQ(e.barrier_relay, "a");
  EXPECT_EQ(e.barrier_relay_endpoint, "127.0.0.1:7000");
  EXPECT_EQ(e.barrier_group, Names({"e", "f"}));
  EXPECT_EQ(e.barrier_upper, std::vector<Names>({{"e", "g"}}));
  EXPECT_EQ(f.links[6]->last.barrier_relay, "e");  // a level-0 relay under e
  EXPECT_TRUE(f.links[6]->last.barrier_upper.empty());
  EXPECT_EQ(f.links[7]->last.barrier_relay, "g");  // a plain member
  EXPECT_TRUE(f.links[7]->last.barrier_group.empty());
  Clock::duration wait{};
  for (const char* mid : {"b", "c", "e", "g"}) {
    EXPECT_EQ(d.Arrive(mid, "job", "train-epoch-1", 0, t0, &wait, 0), PhaseDriver::Arrival::kStale) << mid;
  }
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-1", 0, t0, &wait, 0), PhaseDriver::Arrival::kCounted);
  EXPECT_TRUE(d.BarrierTimedOut(t0 + std::chrono::seconds(6), std::chrono::seconds(5)));
  EXPECT_NE(d.error().find("1 of 2 relay(s) arrived; waiting for relay i (group i)"), std::string::npos) << d.error();

  d.Begin({"job", "train-epoch-2", PhaseKind::kTrainEpoch, 2, &f.agents, &f.index, 2, 2}, t0);
  for (size_t i = 0; i < f.agents.size(); ++i) d.Order(i, f.links[i], PhaseOrder());
  EXPECT_EQ(d.Arrive("i", "job", "train-epoch-2", 0, t0, &wait, 0), PhaseDriver::Arrival::kCounted);
  EXPECT_EQ(d.Arrive("a", "job", "train-epoch-2", 0, t0, &wait, 0), PhaseDriver::Arrival::kReleased);
  for (size_t i = 0; i < f.agents.size(); ++i) {
    EXPECT_EQ(f.links[i]->releases.size(), i == 0 || i == 8 ? 1u : 0u) << i;  // the top relays only
  }
  EXPECT_FALSE(d.MemberLost("c", "job", "train-epoch-2", "e", "gone"));  // e's parent is a, not c
  d.Lost("e", "stream closed");
  EXPECT_EQ(d.error().rfind("relay e lost: group e..h; agent 'e' (ranks 8-9) lost during job job phase "
                            "train-epoch-2 after step 1", 0), 0u) << d.error();
  d.Begin({"job", "train-epoch-3", PhaseKind::kTrainEpoch, 3, &f.agents, &f.index, 2, 2}, t0);
  for (size_t i = 0; i < f.agents.size(); ++i) d.Order(i, f.links[i], PhaseOrder());
  EXPECT_TRUE(d.MemberLost("a", "job", "train-epoch-3", "e", "its barrier stream to the relay broke"));
  EXPECT_EQ(d.error().rfind("relay e lost: group e..h; agent 'e' (ranks 8-9) lost during job job phase "
                            "train-epoch-3 after step 0: reported by its relay a", 0), 0u) << d.error();
}

}  // namespace
}  // namespace dlio
