// base/barrier_timing.h: the error bound tightened over recent steps (OffsetWindow) and the per-step bounds'
// histogram (BoundHistogram). The barrier arithmetic itself is tested with both halves on fake clocks in
// agent/step_barrier_test.cc.
#include "base/barrier_timing.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dlio::barrier_timing {
namespace {

constexpr int64_t kUs = 1000, kMs = 1000 * kUs;

// One exchange in true time t1 (the agent's clock reads true time): the announce takes `up`, the coordinator (its
// clock: true + offset) holds it `held`, the release takes `down`. Returns the step as the agent saw it, the release
// and its arrival.
struct Exchange {
  AgentStep step;
  Release release;
  int64_t received = 0;
};
Exchange At(int64_t t1, int64_t offset, int64_t up, int64_t held, int64_t down) {
  Exchange e;
  e.step.announced_ns = t1;
  e.step.compute_end_ns = t1 + 20 * kMs;
  e.release.announce_received_ns = t1 + up + offset;
  e.release.held_ns = held;
  e.received = t1 + up + held + down;
  return e;
}

TEST(OffsetWindow, ASlowReleaseIsHiddenByTheRecentStepsButASlowAnnounceIsNot) {
  OffsetWindow w;
  const int64_t offset = 5000 * kMs;  // the coordinator's clock is 5 s ahead
  int64_t t = 1000 * kMs;
  for (int k = 0; k < 5; ++k, t += 20 * kMs) {
    const Exchange e = At(t, offset, 20 * kUs, 2 * kMs, 20 * kUs);
    EXPECT_EQ(w.Add(e.step, e.release, e.received), 40 * kUs) << "step " << k;  // round trip less the hold
  }
  // A release 3 ms late: the step's own bound would be 3.02 ms; the window knows the offset to within the last
  // step's 20 us downlink plus 200 ppm of its age (25 ms: 5 us).
  Exchange e = At(t, offset, 20 * kUs, 2 * kMs, 3 * kMs);
  EXPECT_EQ(ErrorBound(e.step, e.release, e.received), 3 * kMs + 20 * kUs);
  const int64_t tight = w.Add(e.step, e.release, e.received);
  EXPECT_GE(tight, 20 * kUs) << "never below the announce's own latency";
  EXPECT_LE(tight, 50 * kUs);
  // An announce 3 ms late: that is a real error (the coordinator's estimate of this agent's end is 3 ms late), and
  // the bound keeps it.
  t += 20 * kMs;
  e = At(t, offset, 3 * kMs, 2 * kMs, 20 * kUs);
  EXPECT_GE(w.Add(e.step, e.release, e.received), 3 * kMs);
}

TEST(OffsetWindow, TheBoundCoversTheAnnounceLatencyUnderDriftAndRandomLinks) {
  OffsetWindow w;
  uint64_t rng = 12345;
  auto draw = [&rng](int64_t lo, int64_t hi) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<int64_t>((rng >> 33) % static_cast<uint64_t>(hi - lo));
  };
  int64_t t = 1000 * kMs;
  for (int k = 0; k < 2000; ++k, t += 20 * kMs) {
    // The coordinator's clock runs 150 ppm slow (within the 200 ppm allowance): its offset shrinks with true time,
    // so an older interval, unwidened, would sit above the offset of now and cut the bound below the latency.
    const int64_t up = draw(10 * kUs, 2 * kMs), down = draw(10 * kUs, 2 * kMs);
    const int64_t offset_at_receipt = 7000 * kMs - (t + up) * 150 / 1'000'000;
    Exchange e = At(t, 0, up, 0, down);
    e.release.announce_received_ns += offset_at_receipt;
    const int64_t bound = w.Add(e.step, e.release, e.received);
    ASSERT_GE(bound, up) << "step " << k;
    ASSERT_LE(bound, ErrorBound(e.step, e.release, e.received)) << "step " << k;
  }
}

TEST(OffsetWindow, AnOffsetThatJumpsRestartsTheWindowAndAReleaseWithoutReceiptKeepsTheStepsBound) {
  OffsetWindow w;
  int64_t t = 1000 * kMs;
  for (int k = 0; k < 5; ++k, t += 20 * kMs) {
    const Exchange e = At(t, 0, 20 * kUs, 0, 20 * kUs);
    w.Add(e.step, e.release, e.received);
  }
  // The offset jumps back 1 ms (beyond any drift allowance): the intervals no longer meet, so the window restarts at
  // this step and its own bound stands.
  const Exchange jump = At(t, -1 * kMs, 20 * kUs, 0, 500 * kUs);
  EXPECT_EQ(w.Add(jump.step, jump.release, jump.received), 520 * kUs);
  // A relay's release carries no receipt: the step's own bound.
  Exchange relayed = At(t + 20 * kMs, 0, 20 * kUs, 0, 700 * kUs);
  relayed.release.announce_received_ns = 0;
  EXPECT_EQ(w.Add(relayed.step, relayed.release, relayed.received), 720 * kUs);
}

TEST(BoundHistogram, EmptyHasNoQuantile) {
  BoundHistogram h;
  EXPECT_EQ(h.Quantile(0.5), -1);
  EXPECT_EQ(h.count(), 0u);
}

TEST(BoundHistogram, EveryBucketEdgeIsAtOrAboveItsValuesAndWithinNinePercent) {
  for (int64_t ns : {0L, 1L, 999L, 1000L, 1001L, 1090L, 1091L, 2000L, 40'000L, 99'999L, 123'457L, 3'000'000L,
                     1'000'000'000L}) {
    const int b = BoundHistogram::BucketOf(ns);
    EXPECT_GE(BoundHistogram::UpperEdge(b), ns) << ns;
    if (b > 0) {
      EXPECT_LT(BoundHistogram::UpperEdge(b - 1), ns) << ns;
      EXPECT_LE(static_cast<double>(BoundHistogram::UpperEdge(b)), 1.0905 * static_cast<double>(ns) + 1) << ns;
    }
  }
  // Beyond the last edge: the last bucket, and the quantile is the largest value seen.
  BoundHistogram h;
  h.Add(int64_t{1} << 50);
  EXPECT_EQ(BoundHistogram::BucketOf(int64_t{1} << 50), BoundHistogram::kBuckets - 1);
  EXPECT_EQ(h.Quantile(0.5), int64_t{1} << 50);
}

TEST(BoundHistogram, TheMedianIsTheTypicalStepAndTheTopIsTheLargest) {
  BoundHistogram h;
  for (int i = 0; i < 99; ++i) h.Add(50'000 + i);  // 50.0-50.1 us
  h.Add(4'000'000);                                // one 4 ms spike
  EXPECT_EQ(h.count(), 100u);
  EXPECT_GE(h.Quantile(0.5), 50'049);
  EXPECT_LE(h.Quantile(0.5), 54'600);
  EXPECT_EQ(h.Quantile(1.0), 4'000'000);  // capped by the largest seen, so the maximum is exact
  EXPECT_LE(h.Quantile(0.99), 54'600);
  h.Add(-5);  // a negative bound counts as 0: the first bucket, read as its edge (1 us)
  EXPECT_EQ(h.count(), 101u);
  EXPECT_EQ(h.Quantile(0.001), 1000);
}

// The coordinator places an end by the agent's interval, cut at the receipt's estimate (never early), at the middle;
// without an interval, or with one the receipt contradicts, by the receipt.
TEST(Place, TheMiddleOfTheAgentsIntervalCutAtTheReceiptOrElseTheReceipt) {
  Announce a{100 * kMs, 10 * kMs};  // received at 100 ms, 10 ms left: by the receipt 110 ms
  Placed p = Place(a);
  EXPECT_EQ(p.at_ns, 110 * kMs);
  EXPECT_EQ(p.early_ns, -1);
  EXPECT_EQ(p.late_ns, 0);
  a.end = EndInterval{109 * kMs + 900 * kUs, 109 * kMs + 960 * kUs};
  p = Place(a);
  EXPECT_EQ(p.at_ns, 109 * kMs + 930 * kUs);
  EXPECT_EQ(p.early_ns, 30 * kUs);
  EXPECT_EQ(p.late_ns, 30 * kUs);
  a.end = EndInterval{109 * kMs + 980 * kUs, 110 * kMs + 500 * kUs};  // above the receipt's estimate: cut there
  p = Place(a);
  EXPECT_EQ(p.at_ns, 109 * kMs + 990 * kUs);
  EXPECT_EQ(p.early_ns, 10 * kUs);
  EXPECT_EQ(p.late_ns, 10 * kUs);
  a.end = EndInterval{110 * kMs + 1, 111 * kMs};  // the offset moved: the receipt contradicts the interval
  p = Place(a);
  EXPECT_EQ(p.at_ns, 110 * kMs);
  EXPECT_EQ(p.early_ns, -1);
  // The release: the wait to the slowest placed end, the step's slack, this end's own uncertainty; and the bound.
  a.end = EndInterval{109 * kMs + 900 * kUs, 109 * kMs + 960 * kUs};
  const Release r = ReleaseFor(a, 112 * kMs, 115 * kMs, 25 * kUs);
  EXPECT_EQ(r.wait_after_end_ns, 2 * kMs + 70 * kUs);
  EXPECT_EQ(r.held_ns, 15 * kMs);
  EXPECT_EQ(PlacedBound(r, 400 * kUs), 55 * kUs);
  EXPECT_EQ(PlacedBound(ReleaseFor(Announce{100 * kMs, 10 * kMs}, 112 * kMs, 115 * kMs, 25 * kUs), 400 * kUs),
            425 * kUs);
}

// The window's offset interval, for placing an end: none before a step; then the intersection of the steps'
// intervals [t3 - t4, t2 - t1], each widened by 200 ppm of its age at the instant placed.
TEST(OffsetWindow, TheOffsetIntervalIsTheIntersectionWidenedToTheInstantPlaced) {
  OffsetWindow w;
  EXPECT_FALSE(w.Offset(0).has_value());
  const int64_t offset = 7 * kMs;
  Exchange e = At(0, offset, 30 * kUs, 1 * kMs, 50 * kUs);  // [offset - 50 us, offset + 30 us]
  w.Add(e.step, e.release, e.received);
  e = At(100 * kMs, offset, 80 * kUs, 1 * kMs, 10 * kUs);  // [offset - 10 us, offset + 80 us]
  w.Add(e.step, e.release, e.received);
  std::optional<EndInterval> o = w.Offset(100 * kMs);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->lo_ns, offset - 10 * kUs);             // the second step's, age 0
  EXPECT_EQ(o->hi_ns, offset + 30 * kUs + 20 * kUs);  // the first step's, 100 ms old: + 20 us
  o = w.Offset(1100 * kMs);  // a second later: both widened by 200 ppm of their ages
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->lo_ns, offset - 10 * kUs - 200 * kUs);
  EXPECT_EQ(o->hi_ns, offset + 30 * kUs + 220 * kUs);
  // PlaceEnd: the end itself in the coordinator's clock, the interval at that instant shifted by it.
  const std::optional<EndInterval> end = w.PlaceEnd(1100 * kMs);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->lo_ns, 1100 * kMs + o->lo_ns);
  EXPECT_EQ(end->hi_ns, 1100 * kMs + o->hi_ns);
  EXPECT_FALSE(OffsetWindow().PlaceEnd(5).has_value());
}

// The anchors: the exchange with the highest lower end and the one with the lowest upper end stay in the
// intersection after the 16-step ring has moved on. With no drift (one boot) they hold for good; with the 200 ppm
// allowance they widen with age, and still cut slower exchanges.
TEST(OffsetWindow, TheFastestExchangeOfEachDirectionOutlivesTheRingWidenedByItsDrift) {
  const int64_t offset = -3 * kMs;
  for (const int64_t ppm : {int64_t{0}, OffsetWindow::kDriftPpm}) {
    OffsetWindow w(ppm);
    EXPECT_EQ(w.drift_ppm(), ppm);
    int64_t t = 1000 * kMs;
    Exchange e = At(t, offset, 20 * kUs, 0, 30 * kUs);  // the fast one: [offset - 30 us, offset + 20 us]
    w.Add(e.step, e.release, e.received);
    for (int k = 0; k < 40; ++k) {  // 40 slow ones, 20 ms apart: [offset - 500 us, offset + 400 us]
      t += 20 * kMs;
      e = At(t, offset, 400 * kUs, 0, 500 * kUs);
      w.Add(e.step, e.release, e.received);
    }
    const std::optional<EndInterval> o = w.Offset(t);
    ASSERT_TRUE(o.has_value());
    const int64_t age = t - 1000 * kMs, drift = (age * ppm + 999'999) / 1'000'000;  // 800 ms: 160 us at 200 ppm
    EXPECT_EQ(o->lo_ns, offset - 30 * kUs - drift) << ppm << " ppm";
    EXPECT_EQ(o->hi_ns, offset + 20 * kUs + drift) << ppm << " ppm";
  }
}

// A heartbeat's exchange (t1, t4 agent clock; t2 receipt, t3 echo's queueing, coordinator clock) places the offset
// as a step's does; one that cannot have happened (an echo before its heartbeat, a hold longer than the round trip)
// is ignored.
TEST(OffsetWindow, AHeartbeatsExchangePlacesTheOffsetAndAnImpossibleOneIsIgnored) {
  OffsetWindow w(0);
  const int64_t offset = 42 * kMs;
  w.Exchange(100 * kMs, 100 * kMs + 5 * kUs, 100 * kMs + offset, 100 * kMs - 1);  // answer before the send
  w.Exchange(100 * kMs, 100 * kMs + offset, 100 * kMs + offset + 2 * kMs, 100 * kMs + 1 * kMs);  // held > RTT
  EXPECT_FALSE(w.Offset(100 * kMs).has_value());
  // Sent at 100 ms, received 30 us later (+ offset), held 1 ms, back 40 us later: [offset - 40 us, offset + 30 us].
  w.Exchange(100 * kMs, 100 * kMs + 30 * kUs + offset, 100 * kMs + 1030 * kUs + offset, 100 * kMs + 1070 * kUs);
  const std::optional<EndInterval> o = w.Offset(101 * kMs);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->lo_ns, offset - 40 * kUs);
  EXPECT_EQ(o->hi_ns, offset + 30 * kUs);
  // A step's bound then uses it: the announce took 25 us, its release was slow (2 ms).
  const Exchange e = At(200 * kMs, offset, 25 * kUs, 0, 2 * kMs);
  EXPECT_EQ(w.Add(e.step, e.release, e.received), 25 * kUs + 40 * kUs);  // its upper end less the window's lower
}

// One clock: the offset is known, every end is placed at its own instant and exchanges change nothing; a step's
// Add() is the announce's latency itself.
TEST(OffsetWindow, AnExactOffsetPlacesEveryEndAtItsInstant) {
  OffsetWindow w = OffsetWindow::Exact(0);
  EXPECT_TRUE(w.exact());
  EXPECT_FALSE(OffsetWindow().exact());
  const std::optional<EndInterval> end = w.PlaceEnd(5 * kMs);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->lo_ns, 5 * kMs);
  EXPECT_EQ(end->hi_ns, 5 * kMs);
  w.Exchange(0, 1 * kMs, 1 * kMs, 3 * kMs);  // a wrong exchange (it says the offset is in [-2 ms, 1 ms]) is ignored
  EXPECT_EQ(w.Offset(7 * kMs)->lo_ns, 0);
  const Exchange e = At(10 * kMs, 0, 70 * kUs, 1 * kMs, 3 * kMs);
  EXPECT_EQ(w.Add(e.step, e.release, e.received), 70 * kUs);
  // The coordinator then places the end exactly: no early or late margin.
  const Announce a{e.release.announce_received_ns, e.step.compute_end_ns - e.step.announced_ns,
                   w.PlaceEnd(e.step.compute_end_ns)};
  const Placed p = Place(a);
  EXPECT_EQ(p.at_ns, e.step.compute_end_ns);
  EXPECT_EQ(p.early_ns, 0);
  EXPECT_EQ(p.late_ns, 0);
}

// ClockDomain: this boot and time namespace; RelateClocks: one clock, one boot (another time namespace), or not.
TEST(ClockDomain, TwoDomainsAreOneClockOneBootOrUnrelated) {
  const std::string mine = ClockDomain();
  ASSERT_FALSE(mine.empty()) << "no /proc/sys/kernel/random/boot_id";
  EXPECT_EQ(mine.find('/'), 36u) << mine;  // a boot id is a 36-character UUID
  EXPECT_EQ(RelateClocks(mine, mine), ClockRelation::kSame);
  EXPECT_EQ(RelateClocks("b00t/time:[1]", "b00t/time:[2]"), ClockRelation::kSameBoot);
  EXPECT_EQ(RelateClocks("b00t/time:[1]", "other/time:[1]"), ClockRelation::kUnrelated);
  EXPECT_EQ(RelateClocks("", ""), ClockRelation::kUnrelated);
  EXPECT_EQ(RelateClocks(mine, ""), ClockRelation::kUnrelated);
  EXPECT_EQ(RelateClocks("elsewhere-1", mine), ClockRelation::kUnrelated);
  EXPECT_EQ(RelateClocks("/x", "/y"), ClockRelation::kUnrelated);  // no boot id: nothing shared
}

// DLIO_BARRIER_HOPS (read once per process, at the first call: no other test of this binary stamps a hop) names a
// folder; every hop is one line of <pid>.hops there.
TEST(Hop, EachHopIsOneLineOfThePidsFileInTheNamedFolder) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dlio-hops-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  setenv("DLIO_BARRIER_HOPS", dir.c_str(), 1);
  ASSERT_TRUE(HopsOn());
  Hop("announce", 7, 123456789);
  Hop("read", 7, SteadyNs(), "agent-3");
  std::ifstream in(dir / (std::to_string(getpid()) + ".hops"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  EXPECT_EQ(all.rfind("announce 7 123456789 \nread 7 ", 0), 0u) << all;
  EXPECT_NE(all.find(" agent-3\n"), std::string::npos) << all;
  unsetenv("DLIO_BARRIER_HOPS");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlio::barrier_timing
