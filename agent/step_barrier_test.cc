#include "agent/step_barrier.h"

#include <atomic>
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

}  // namespace
}  // namespace dlio
