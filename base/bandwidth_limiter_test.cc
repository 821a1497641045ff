#include "base/bandwidth_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <thread>
#include <vector>

namespace dlio {
namespace {

TEST(BandwidthLimiter, FakeClockHoldsTheRate) {
  int64_t now = 1'000'000'000;
  BandwidthLimiter::Options o;
  o.bytes_per_second = 100e6;  // 100 MB/s: 10 ns per byte
  o.now_ns = [&] { return now; };
  o.sleep_ns = [&](int64_t ns) { now += ns; };
  BandwidthLimiter lim(o);
  // 100 reads of 1 MB back to back (the reads themselves take no time): 100 MB at 100 MB/s is 1 s, less the 20 ms
  // burst the bucket allows.
  const int64_t start = now;
  for (int i = 0; i < 100; ++i) lim.Acquire(1'000'000);
  EXPECT_EQ(now - start, 1'000'000'000 - BandwidthLimiter::kBurstNs);
}

TEST(BandwidthLimiter, IdleTimeEarnsNoCredit) {
  int64_t now = 1'000'000'000;
  BandwidthLimiter::Options o;
  o.bytes_per_second = 1e6;
  o.now_ns = [&] { return now; };
  o.sleep_ns = [&](int64_t ns) { now += ns; };
  BandwidthLimiter lim(o);
  EXPECT_EQ(lim.Acquire(10'000), 0);  // 10 ms of budget fits in the burst
  now += 10'000'000'000;              // 10 s idle
  // 1 MB after the idle time: 1 s of budget, minus only the burst.
  EXPECT_EQ(lim.Acquire(1'000'000), 1'000'000'000 - BandwidthLimiter::kBurstNs);
}

// Issue 24 item 7: the arithmetic is bounded. At a rate below 1 B/s (or a huge read at 1 B/s) bytes x ns-per-byte
// left int64_t, and the wrapped cost made the wait negative: no cap at all. Every wait is now positive and bounded,
// however many bytes and whatever the rate, and later acquires saturate instead of wrapping.
TEST(BandwidthLimiter, TinyRatesAndHugeReadsNeitherWrapNorLiftTheCap) {
  for (double rate : {1e-9, 0.001, 0.0, -5.0, 1.0}) {
    int64_t now = 1'000'000'000;
    BandwidthLimiter::Options o;
    o.bytes_per_second = rate;
    o.now_ns = [&] { return now; };
    o.sleep_ns = [](int64_t) {};
    BandwidthLimiter lim(o);
    EXPECT_EQ(lim.bytes_per_second(), BandwidthLimiter::kMinRate) << rate;
    // 1 KiB at (at least) 1 s per byte: 1024 s less the burst.
    EXPECT_EQ(lim.Acquire(1024), int64_t{1024} * 1'000'000'000 - BandwidthLimiter::kBurstNs) << rate;
    for (uint64_t bytes : {uint64_t{1} << 40, uint64_t{1} << 63, ~uint64_t{0}}) {
      for (int i = 0; i < 12; ++i) {  // beyond the 8 maximal costs that reach int64's end
        const int64_t wait = lim.Acquire(bytes);
        EXPECT_GT(wait, 0) << "rate " << rate << ", " << bytes << " bytes: the cap was lifted";
        EXPECT_LE(wait, std::numeric_limits<int64_t>::max() - now) << rate;
      }
    }
  }
  BandwidthLimiter::Options fast;
  fast.bytes_per_second = 1e300;
  EXPECT_EQ(BandwidthLimiter(fast).bytes_per_second(), BandwidthLimiter::kMaxRate);
}

// Issue 24 item 3: a 64 MiB checkpoint chunk under a 1 MiB/s cap asks for a minute's sleep; the job's cancel ends
// it within a sleep slice (base/sleep.h), well inside the coordinator's 2 s stop grace.
TEST(BandwidthLimiter, ACancelWakesALongSleep) {
  BandwidthLimiter::Options o;
  o.bytes_per_second = 1 << 20;
  BandwidthLimiter lim(o);
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t asked = lim.Acquire(uint64_t{64} << 20, &cancel);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  canceller.join();
  EXPECT_GT(asked, 60'000'000'000);  // the wait the cap asked for: about 64 s
  EXPECT_GE(took, 0.19);
  EXPECT_LT(took, 1.0);
  // Already cancelled: no sleep at all.
  const auto t1 = std::chrono::steady_clock::now();
  lim.Acquire(uint64_t{64} << 20, &cancel);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 0.1);
}

TEST(BandwidthLimiter, RealThreadsShareTheCap) {
  BandwidthLimiter::Options o;
  o.bytes_per_second = 50e6;  // 50 MB/s over 4 threads
  BandwidthLimiter lim(o);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> th;
  for (int t = 0; t < 4; ++t) {
    th.emplace_back([&] {
      for (int i = 0; i < 50; ++i) lim.Acquire(100'000);  // 4 x 50 x 100 kB = 20 MB -> 0.4 s
    });
  }
  for (auto& t : th) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(s, 0.37);
  EXPECT_LT(s, 1.5);  // generous: a loaded machine only makes it slower
}

// D5 of issue 13: a cancel must not wait for the cap. 10 MB at 1 MB/s asks for a 10 s sleep; the flag set after
// 100 ms ends it within a slice.
TEST(BandwidthLimiter, ACancelCutsTheSleepShort) {
  BandwidthLimiter::Options o;
  o.bytes_per_second = 1e6;
  BandwidthLimiter lim(o);
  std::atomic<bool> cancel{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_GT(lim.Acquire(10'000'000, &cancel), 9'000'000'000);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  setter.join();
  EXPECT_LT(s, 1.0) << "the limiter slept through the cancel";
}

TEST(ParseByteRate, Units) {
  EXPECT_DOUBLE_EQ(*ParseByteRate("1048576"), 1048576);
  EXPECT_DOUBLE_EQ(*ParseByteRate("100MiB/s"), 100.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*ParseByteRate("1.5GB"), 1.5e9);
  EXPECT_DOUBLE_EQ(*ParseByteRate("20 kb/s"), 20e3);
  EXPECT_DOUBLE_EQ(*ParseByteRate("0"), 0);
  EXPECT_FALSE(ParseByteRate("fast").ok());
  EXPECT_FALSE(ParseByteRate("10 parsecs").ok());
  EXPECT_FALSE(ParseByteRate("-5MB").ok());
}

}  // namespace
}  // namespace dlio
