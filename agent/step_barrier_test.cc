#include "agent/step_barrier.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace dlio {
namespace {

TEST(StepBarrierTest, LastLocalArrivalCallsGlobalOncePerStep) {
  std::atomic<int> global_calls{0};
  StepBarrier b(3, [&](uint64_t) {
    ++global_calls;
    return absl::OkStatus();
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&] {
      for (uint64_t s = 0; s < 100; ++s) ASSERT_TRUE(b.Arrive(s).ok());
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(global_calls.load(), 100);
}

TEST(StepBarrierTest, NoRankPassesBeforeTheGlobalRelease) {
  std::atomic<bool> released{false};
  std::atomic<int> passed_early{0};
  StepBarrier b(2, [&](uint64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    released = true;
    return absl::OkStatus();
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([&] {
      ASSERT_TRUE(b.Arrive(0).ok());
      if (!released) ++passed_early;
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(passed_early.load(), 0);
}

TEST(StepBarrierTest, CancelWakesWaitersWithTheError) {
  StepBarrier b(2, [](uint64_t) { return absl::OkStatus(); });
  absl::Status got;
  std::thread waiter([&] { got = b.Arrive(0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  b.Cancel(absl::CancelledError("rank 1 failed"));
  waiter.join();
  EXPECT_EQ(got.code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(b.Arrive(1).ok());
}

TEST(StepBarrierTest, GlobalFailureReachesEveryRank) {
  StepBarrier b(2, [](uint64_t) { return absl::UnavailableError("coordinator lost"); });
  absl::Status a, c;
  std::thread t1([&] { a = b.Arrive(0); });
  std::thread t2([&] { c = b.Arrive(0); });
  t1.join();
  t2.join();
  EXPECT_FALSE(a.ok());
  EXPECT_FALSE(c.ok());
}

// D1 of issue 13: the release of an earlier job's (or phase's) step must not satisfy the running phase's barrier,
// although every job's first training phase has the same name.
TEST(ReleaseBoardTest, AReleaseOfAnotherJobOrPhaseIsStaleAndStartForgetsThePreviousPhase) {
  ReleaseBoard b;
  b.Start("job-a", "train-epoch-1");
  EXPECT_TRUE(b.Release("job-a", "train-epoch-1", 19));
  EXPECT_TRUE(b.Released(19));
  b.Start("job-b", "train-epoch-1");
  EXPECT_FALSE(b.Released(0)) << "a new phase starts with nothing released";
  EXPECT_FALSE(b.Release("job-a", "train-epoch-1", 19)) << "a late release of the previous job is stale";
  EXPECT_FALSE(b.Release("job-b", "train-epoch-2", 0)) << "another phase of the same job is stale";
  EXPECT_FALSE(b.Released(0));
  EXPECT_TRUE(b.Release("job-b", "train-epoch-1", 0));
  EXPECT_TRUE(b.Released(0));
  EXPECT_FALSE(b.Released(1));
  EXPECT_TRUE(b.Release("job-b", "train-epoch-1", 0)) << "a repeat is harmless";
  EXPECT_FALSE(b.Released(1));
}

// --- AnnounceBarrier (dlio_ext.barrier: announce) on fake clocks ---
//
// A fleet of agents simulated in one thread, in true time (ns): agent i's clock reads true + skew_i, its announce
// takes up_i to reach the coordinator and the release down_i to come back. The coordinator's half is
// base/barrier_timing.h's, as PhaseDriver runs it. A step: each rank starts its compute at its true start (a rank
// that waited for data starts late), every agent announces, the coordinator releases at the last receipt, and each
// agent's Finish sleeps (on the fake clock) to the instant it computed, which the test records in true time.
struct SimAgent {
  int64_t skew = 0, up = 0, down = 0;  // ns
  std::vector<int64_t> start, compute;  // per local rank: true start of compute and its duration
  // Filled by the step:
  int64_t announced_true = 0, left = 0;
  std::optional<barrier_timing::EndInterval> end;  // its compute end placed in the coordinator's clock, once it can
  int64_t end_true = -1;  // when its ranks ended the step (the latest rank's wake-up)
  std::shared_ptr<AnnounceBarrier> barrier;  // made by Sim
  barrier_timing::Release release;
  int64_t release_true = 0;
};

class Sim {
 public:
  explicit Sim(std::vector<SimAgent> agents) : a_(std::move(agents)) {
    for (size_t i = 0; i < a_.size(); ++i) {
      SimAgent& g = a_[i];
      AnnounceBarrier::Clock c;
      c.now = [this, &g] { return now_ + g.skew; };
      c.sleep_until = [this, &g](int64_t until) {
        g.end_true = std::max({g.end_true, until - g.skew, now_});
        return true;
      };
      g.barrier = std::make_shared<AnnounceBarrier>(
          static_cast<int>(g.start.size()), c,
          [this, &g](uint64_t, int64_t left, const barrier_timing::EndInterval* end) {
            g.announced_true = now_;
            g.left = left;
            g.end = end ? std::optional<barrier_timing::EndInterval>(*end) : std::nullopt;
            return absl::OkStatus();
          },
          [&g](uint64_t) -> absl::StatusOr<AnnounceBarrier::Received> {
            return AnnounceBarrier::Received{g.release, g.release_true + g.down + g.skew};
          });
    }
  }

  // Runs step `step`; returns the slowest true compute end.
  int64_t Step(uint64_t step) {
    struct Ev { int64_t t; size_t agent, rank; };
    std::vector<Ev> starts;
    int64_t slowest = 0;
    for (size_t i = 0; i < a_.size(); ++i) {
      a_[i].end_true = -1;
      for (size_t r = 0; r < a_[i].start.size(); ++r) {
        starts.push_back({a_[i].start[r], i, r});
        slowest = std::max(slowest, a_[i].start[r] + a_[i].compute[r]);
      }
    }
    std::sort(starts.begin(), starts.end(), [](const Ev& x, const Ev& y) { return x.t < y.t; });
    for (const Ev& e : starts) {
      now_ = e.t;
      SimAgent& g = a_[e.agent];
      EXPECT_TRUE(g.barrier->Start(step, now_ + g.skew + g.compute[e.rank]).ok());
    }
    // The coordinator (its clock: true time), as PhaseDriver::Arrive.
    int64_t last = 0, est = std::numeric_limits<int64_t>::min(), slack = 0;
    std::vector<barrier_timing::Announce> ann;
    for (const SimAgent& g : a_) {
      ann.push_back({g.announced_true + g.up, g.left, offsets ? g.end : std::nullopt});
      last = std::max(last, g.announced_true + g.up);
      est = std::max(est, barrier_timing::Place(ann.back()).at_ns);
      slack = std::max(slack, barrier_timing::Place(ann.back()).late_ns);
    }
    for (size_t i = 0; i < a_.size(); ++i) {
      a_[i].release = barrier_timing::ReleaseFor(ann[i], est, last, slack);
      if (receipts) a_[i].release.announce_received_ns = ann[i].received_ns;  // as PhaseDriver sends it
      a_[i].release_true = last;
    }
    // Each rank finishes after its compute; the fake sleep records the end.
    for (SimAgent& g : a_) {
      for (size_t r = 0; r < g.start.size(); ++r) {
        now_ = std::max(g.start[r] + g.compute[r], g.release_true + g.down);
        EXPECT_TRUE(g.barrier->Finish(step).ok());
      }
    }
    return slowest;
  }
  SimAgent& operator[](size_t i) { return a_[i]; }
  size_t size() const { return a_.size(); }
  bool receipts = false;  // the releases carry the coordinator's receipt of each announce (its clock: true time)
  bool offsets = false;   // the coordinator places the ends by the agents' intervals (as the star does; relays do not)

 private:
  int64_t now_ = 0;
  std::vector<SimAgent> a_;
};

constexpr int64_t kMs = 1000000, kUs = 1000;

SimAgent Agent(int64_t start, int64_t compute, int64_t up = 20 * kUs, int64_t down = 20 * kUs, int64_t skew = 0) {
  SimAgent g;
  g.start = {start};
  g.compute = {compute};
  g.up = up;
  g.down = down;
  g.skew = skew;
  return g;
}

// The property every test checks: no agent ends before the slowest compute end minus its own bound, nor before its
// own compute end.
void ExpectBarrierHolds(Sim& sim, int64_t slowest) {
  for (size_t i = 0; i < sim.size(); ++i) {
    SimAgent& g = sim[i];
    const int64_t bound = g.barrier->last_error_bound_ns();
    EXPECT_GE(bound, 0);
    EXPECT_GE(g.end_true, slowest - bound) << "agent " << i;
    for (size_t r = 0; r < g.start.size(); ++r) EXPECT_GE(g.end_true, g.start[r] + g.compute[r]) << "agent " << i;
  }
}

TEST(AnnounceBarrierTest, ALateRankHoldsEveryAgentUntilItsComputeEnds) {
  // Agent 1 computes 47.5 ms, agent 0 3.5 ms: both end at agent 1's compute end, the release hidden under it.
  Sim sim({Agent(0, 3500 * kUs), Agent(0, 47500 * kUs)});
  const int64_t slowest = sim.Step(0);
  ExpectBarrierHolds(sim, slowest);
  EXPECT_EQ(sim[0].end_true, slowest);  // same one-way latencies: no error at all
  EXPECT_EQ(sim[1].end_true, slowest);
  // The bound: the announce's round trip less the coordinator's hold, i.e. up + down.
  EXPECT_EQ(sim[0].barrier->last_error_bound_ns(), 40 * kUs);
}

TEST(AnnounceBarrierTest, TheMedianBoundIgnoresARareSlowStepThatTheLargestKeeps) {
  // 9 steps with a 40 us round trip, then one whose downlink takes 3 ms: the largest bound is that step's, the median
  // the others' (to within the histogram's 9 %, never below).
  Sim sim({Agent(0, 10 * kMs), Agent(0, 20 * kMs)});
  EXPECT_EQ(sim[0].barrier->p50_error_bound_ns(), -1) << "before the first step";
  for (uint64_t step = 0; step < 10; ++step) {
    const int64_t t0 = static_cast<int64_t>(step) * 100 * kMs;
    sim[0].start = {t0};
    sim[1].start = {t0};
    sim[0].down = step == 9 ? 3 * kMs : 20 * kUs;
    ExpectBarrierHolds(sim, sim.Step(step));
  }
  EXPECT_EQ(sim[0].barrier->max_error_bound_ns(), 3 * kMs + 20 * kUs);
  EXPECT_GE(sim[0].barrier->p50_error_bound_ns(), 40 * kUs);
  EXPECT_LE(sim[0].barrier->p50_error_bound_ns(), 44 * kUs);
  EXPECT_EQ(sim[1].barrier->p50_error_bound_ns(), sim[1].barrier->max_error_bound_ns());
}

TEST(AnnounceBarrierTest, WithTheCoordinatorsReceiptASlowReleaseNoLongerWidensTheBoundAndTheBarrierHolds) {
  // Skewed clocks (agent 0 5 s ahead, agent 1 3 s behind the coordinator), 40 us round trips, then a step whose
  // release to agent 0 takes 3 ms and one whose announce from agent 0 takes 3 ms. The releases carry the
  // coordinator's receipt, so each agent intersects its clock-offset intervals (base/barrier_timing.h OffsetWindow).
  Sim sim({Agent(0, 10 * kMs, 20 * kUs, 20 * kUs, 5000 * kMs), Agent(0, 20 * kMs, 20 * kUs, 20 * kUs, -3000 * kMs)});
  sim.receipts = true;
  for (uint64_t step = 0; step < 7; ++step) {
    const int64_t t0 = static_cast<int64_t>(step) * 100 * kMs;
    sim[0].start = {t0};
    sim[1].start = {t0};
    sim[0].down = step == 5 ? 3 * kMs : 20 * kUs;
    sim[0].up = step == 6 ? 3 * kMs : 20 * kUs;
    const int64_t slowest = sim.Step(step);
    ExpectBarrierHolds(sim, slowest);
    if (step == 5) {  // the slow release: without the window the bound would be 3.02 ms
      EXPECT_LE(sim[0].barrier->last_error_bound_ns(), 100 * kUs);
      EXPECT_EQ(sim[0].end_true, slowest);
    }
    if (step == 6) {  // the slow announce: agent 0 really ends early by 3 ms less agent 1's 20 us, and says so
      EXPECT_EQ(sim[0].end_true, slowest - (3 * kMs - 20 * kUs));
      EXPECT_GE(sim[0].barrier->last_error_bound_ns(), 3 * kMs);
    }
  }
}

TEST(AnnounceBarrierTest, ALateReleaseEndsTheStepWhenItComes) {
  // The release comes 5 ms after the slowest compute end (a slow downlink): the step ends at its arrival, not before.
  Sim sim({Agent(0, 1 * kMs, 20 * kUs, 5 * kMs), Agent(0, 2 * kMs)});
  const int64_t slowest = sim.Step(0);
  ExpectBarrierHolds(sim, slowest);
  EXPECT_EQ(sim[0].end_true, sim[0].release_true + 5 * kMs);
  EXPECT_GT(sim[0].end_true, slowest);
  EXPECT_EQ(sim[1].end_true, slowest);
}

TEST(AnnounceBarrierTest, ASkewedClockChangesNothing) {
  // Agent 0's clock is 5 s ahead and agent 1's 3 s behind: only durations cross, so both end at the slowest end.
  Sim sim({Agent(0, 10 * kMs, 20 * kUs, 20 * kUs, 5000 * kMs), Agent(kMs, 30 * kMs, 20 * kUs, 20 * kUs, -3000 * kMs)});
  const int64_t slowest = sim.Step(0);
  ExpectBarrierHolds(sim, slowest);
  EXPECT_EQ(sim[0].end_true, slowest);
  EXPECT_EQ(sim[1].end_true, slowest);
}

TEST(AnnounceBarrierTest, ASlowLinkIsTheErrorAndTheBoundCoversIt) {
  // Agent 0's announce takes 3 ms, agent 1's (the slowest compute) 10 us: agent 0 ends early by the difference of
  // the one-way latencies, within its bound.
  Sim sim({Agent(0, 10 * kMs, 3 * kMs, 10 * kUs), Agent(0, 50 * kMs, 10 * kUs, 10 * kUs)});
  int64_t slowest = sim.Step(0);
  ExpectBarrierHolds(sim, slowest);
  EXPECT_EQ(sim[0].end_true, slowest - (3 * kMs - 10 * kUs));
  EXPECT_GE(sim[0].barrier->last_error_bound_ns(), 3 * kMs);
  EXPECT_EQ(sim[1].end_true, slowest);
  // The other way round, the slow link makes the others late: they wait for its (late) estimate.
  sim[0].start = {60 * kMs};
  sim[0].compute = {50 * kMs};
  sim[1].start = {60 * kMs};
  sim[1].compute = {10 * kMs};
  slowest = sim.Step(1);
  ExpectBarrierHolds(sim, slowest);
  EXPECT_EQ(sim[0].end_true, slowest);
  EXPECT_EQ(sim[1].end_true, slowest + (3 * kMs - 10 * kUs));
}

TEST(AnnounceBarrierTest, ARankWaitingForDataAnnouncesLateAndEveryoneEndsLater) {
  // Agent 0 has two local ranks; rank 1 waits 20 ms for its batch. The agent announces when rank 1 starts, and the
  // whole fleet ends at rank 1's compute end (batch waits count, as with DLIO's barrier after compute).
  SimAgent a0 = Agent(0, 10 * kMs);
  a0.start = {0, 20 * kMs};
  a0.compute = {10 * kMs, 10 * kMs};
  Sim sim({a0, Agent(0, 10 * kMs)});
  const int64_t slowest = sim.Step(0);
  EXPECT_EQ(slowest, 30 * kMs);
  EXPECT_EQ(sim[0].announced_true, 20 * kMs);
  EXPECT_EQ(sim[0].left, 10 * kMs);
  ExpectBarrierHolds(sim, slowest);
  EXPECT_EQ(sim[1].end_true, 30 * kMs);
}

// Random fleets: latencies 0-2 ms each way, skews of seconds, compute 0-60 ms, late starts; 50 steps each. With
// `offsets` the releases carry the receipts and the coordinator places the ends by the agents' offset intervals.
void RandomFleetsKeepTheBarrier(bool offsets) {
  std::mt19937_64 rng(7);
  auto u = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int fleet = 0; fleet < 20; ++fleet) {
    std::vector<SimAgent> agents;
    const int n = static_cast<int>(u(2, 6));
    for (int i = 0; i < n; ++i) agents.push_back(Agent(0, 0, 0, 0, u(-5000, 5000) * kMs));
    Sim sim(std::move(agents));
    sim.receipts = sim.offsets = offsets;
    int64_t t = 0;
    for (uint64_t step = 0; step < 50; ++step) {
      int64_t next = t;
      for (size_t i = 0; i < sim.size(); ++i) {
        sim[i].start = {t + u(0, 5 * kMs)};
        sim[i].compute = {u(0, 60 * kMs)};
        sim[i].up = u(0, 2 * kMs);
        sim[i].down = u(0, 2 * kMs);
      }
      const int64_t slowest = sim.Step(step);
      ExpectBarrierHolds(sim, slowest);
      for (size_t i = 0; i < sim.size(); ++i) {
        // Nor does it end later than the slowest end plus the largest bound, unless the release came later.
        int64_t max_bound = 0;
        for (size_t j = 0; j < sim.size(); ++j) max_bound = std::max(max_bound, sim[j].barrier->last_error_bound_ns());
        EXPECT_LE(sim[i].end_true, std::max(slowest + max_bound, sim[i].release_true + sim[i].down));
        next = std::max(next, sim[i].end_true);
      }
      if (::testing::Test::HasFailure()) return;
      t = next;
    }
  }
}

TEST(AnnounceBarrierTest, TheStepNeverEndsBeforeTheSlowestComputeEndMinusTheBound) {
  RandomFleetsKeepTheBarrier(false);
}

TEST(AnnounceBarrierTest, PlacedByTheOffsetsTheStepStillNeverEndsBeforeTheSlowestComputeEndMinusTheBound) {
  RandomFleetsKeepTheBarrier(true);
}

TEST(AnnounceBarrierTest, PlacedByTheOffsetsASlowAnnounceNoLongerMakesItsAgentEndEarly) {
  // As WithTheCoordinatorsReceipt... but the coordinator places the ends by the agents' offset intervals: the
  // announce that takes 3 ms at step 6 no longer makes agent 0 end 3 ms early (the receipt's estimate would), and
  // both bounds stay at the windows' uncertainty: a 40 us wide interval per agent (20 us each way), widened by the
  // 200 ppm drift allowance over its age (the previous step's, ~110 ms: 22 us).
  Sim sim({Agent(0, 10 * kMs, 20 * kUs, 20 * kUs, 5000 * kMs), Agent(0, 20 * kMs, 20 * kUs, 20 * kUs, -3000 * kMs)});
  sim.receipts = sim.offsets = true;
  for (uint64_t step = 0; step < 7; ++step) {
    const int64_t t0 = static_cast<int64_t>(step) * 100 * kMs;
    sim[0].start = {t0};
    sim[1].start = {t0};
    sim[0].up = step == 6 ? 3 * kMs : 20 * kUs;
    const int64_t slowest = sim.Step(step);
    ExpectBarrierHolds(sim, slowest);
    if (step == 0) continue;  // no interval yet: placed by the receipts
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_LE(std::abs(sim[i].end_true - slowest), 20 * kUs) << "agent " << i << " step " << step;
      EXPECT_LE(sim[i].barrier->last_error_bound_ns(), 90 * kUs) << "agent " << i << " step " << step;
    }
  }
}

TEST(AnnounceBarrierTest, ThreadsOnTheSteadyClockAnnounceOncePerStep) {
  std::atomic<int> announces{0};
  ReleaseBoard board;
  board.Start("j", "p");
  Mutex mu;
  CondVar cv;
  AnnounceBarrier b(
      3, AnnounceBarrier::Steady(nullptr),
      [&](uint64_t step, int64_t left, const barrier_timing::EndInterval*) {
        ++announces;
        // Never more than the longest compute any rank drew; below 0 when the last rank started after every
        // compute had ended (a thread preempted between drawing its end and Start: legal, not asserted).
        EXPECT_LE(left, 3 * 20 * kUs);
        MutexLock lk(&mu);
        board.Release("j", "p", step, barrier_timing::Release{left, 0},
                      AnnounceBarrier::Steady(nullptr).now());
        cv.notify_all();
        return absl::OkStatus();
      },
      [&](uint64_t step) -> absl::StatusOr<AnnounceBarrier::Received> {
        MutexLock lk(&mu);
        cv.Wait(&lk, [&] { return board.Released(step); });
        return board.last();
      });
  const AnnounceBarrier::Clock clock = AnnounceBarrier::Steady(nullptr);
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&, t] {
      for (uint64_t s = 0; s < 100; ++s) {
        const int64_t end = clock.now() + (t + 1) * 20 * kUs;
        ASSERT_TRUE(b.Start(s, end).ok());
        ASSERT_TRUE(clock.sleep_until(end));
        ASSERT_TRUE(b.Finish(s).ok());
        EXPECT_GE(clock.now(), end);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(announces.load(), 100);
  EXPECT_GE(b.max_error_bound_ns(), 0);
}

TEST(AnnounceBarrierTest, CancelWakesTheRanksWaitingForTheRelease) {
  std::atomic<bool> cancel{false};
  AnnounceBarrier* bp = nullptr;
  AnnounceBarrier b(
      2, AnnounceBarrier::Steady(&cancel),
      [](uint64_t, int64_t, const barrier_timing::EndInterval*) { return absl::OkStatus(); },
      [&](uint64_t) -> absl::StatusOr<AnnounceBarrier::Received> {
        while (!cancel) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return absl::CancelledError("phase cancelled");
      });
  bp = &b;
  absl::Status a, c;
  ASSERT_TRUE(b.Start(0, 0).ok());
  ASSERT_TRUE(b.Start(0, 0).ok());
  std::thread t1([&] { a = bp->Finish(0); });
  std::thread t2([&] { c = bp->Finish(0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  b.Cancel(absl::CancelledError("rank 1 failed"));
  cancel = true;
  t1.join();
  t2.join();
  EXPECT_EQ(a.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(c.code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(b.Start(1, 0).ok());
}

TEST(ReleaseBoardTest, KeepsTheNewestReleasesTiming) {
  ReleaseBoard b;
  b.Start("j", "p");
  EXPECT_TRUE(b.Release("j", "p", 0, barrier_timing::Release{5, 7}, 100));
  EXPECT_EQ(b.last().release.wait_after_end_ns, 5);
  EXPECT_EQ(b.last().release.held_ns, 7);
  EXPECT_EQ(b.last().received_ns, 100);
  EXPECT_TRUE(b.Release("j", "p", 0, barrier_timing::Release{9, 9}, 200)) << "a repeat";
  EXPECT_EQ(b.last().received_ns, 100) << "a repeat changes nothing";
  b.Start("j", "q");
  EXPECT_EQ(b.last().received_ns, 0);
}

}  // namespace
}  // namespace dlio
