#include "results/latency_histogram.h"

#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "results/io_stats.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

TEST(LatencyHistogram, BucketLayoutIsLogLinear) {
  EXPECT_EQ(LatencyHistogram::kNumBuckets, 126);
  EXPECT_EQ(LatencyHistogram::BucketOf(0), 0);
  EXPECT_EQ(LatencyHistogram::BucketOf(1023), 0);
  EXPECT_EQ(LatencyHistogram::BucketOf(1024), 1);
  EXPECT_EQ(LatencyHistogram::BucketOf(1279), 1);
  EXPECT_EQ(LatencyHistogram::BucketOf(1280), 2);
  EXPECT_EQ(LatencyHistogram::BucketOf(2047), 4);
  EXPECT_EQ(LatencyHistogram::BucketOf(2048), 5);
  EXPECT_EQ(LatencyHistogram::BucketOf(std::numeric_limits<uint64_t>::max()), LatencyHistogram::kNumBuckets - 1);
  EXPECT_EQ(LatencyHistogram::BucketOf(uint64_t{1} << 41), LatencyHistogram::kNumBuckets - 1);
  EXPECT_EQ(LatencyHistogram::BucketOf((uint64_t{1} << 41) - 1), LatencyHistogram::kNumBuckets - 2);
  EXPECT_EQ(LatencyHistogram::UpperBoundNs(0), 1024u);
  EXPECT_EQ(LatencyHistogram::UpperBoundNs(1), 1280u);
  EXPECT_EQ(LatencyHistogram::UpperBoundNs(LatencyHistogram::kNumBuckets - 1), std::numeric_limits<uint64_t>::max());
}

// Every value lies below its bucket's upper bound and at or above the previous one; relative error <= 25 %.
TEST(LatencyHistogram, EveryValueFallsInsideItsBucket) {
  uint64_t previous_bound = 0;
  for (int i = 0; i + 1 < LatencyHistogram::kNumBuckets; ++i) {
    const uint64_t ub = LatencyHistogram::UpperBoundNs(i);
    ASSERT_GT(ub, previous_bound);
    EXPECT_EQ(LatencyHistogram::BucketOf(ub - 1), i);
    EXPECT_EQ(LatencyHistogram::BucketOf(ub), i + 1);
    if (i > 0) {
      EXPECT_LE(static_cast<double>(ub - previous_bound) / static_cast<double>(previous_bound), 0.25);
    }
    previous_bound = ub;
  }
}

TEST(LatencyHistogram, QuantilesAfterMerge) {
  LatencyHistogram a, b;
  EXPECT_EQ(a.QuantileNs(0.5), 0u);
  for (int i = 0; i < 90; ++i) a.Record(1000);      // bucket 0
  for (int i = 0; i < 10; ++i) b.Record(1000000);   // ~1 ms
  LatencyHistogram m = a;
  m += b;
  EXPECT_EQ(m.count(), 100u);
  EXPECT_EQ(m.sum_ns(), 90u * 1000 + 10u * 1000000);
  EXPECT_EQ(m.QuantileNs(0.5), 1024u);
  EXPECT_EQ(m.QuantileNs(0.89), 1024u);
  const uint64_t p99 = m.QuantileNs(0.99);
  EXPECT_GT(p99, 1000000u);
  EXPECT_LE(p99, 1250000u);
  EXPECT_EQ(m.QuantileNs(2.0), p99);   // clamped to 1
  EXPECT_EQ(m.QuantileNs(-1.0), 1024u);
  m.Reset();
  EXPECT_EQ(m.count(), 0u);
}

TEST(IoStats, SnapshotsMergeAcrossThreads) {
  std::vector<IoStats> stats(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < stats.size(); ++t) {
    threads.emplace_back([&stats, t] {
      for (int i = 0; i < 1000; ++i) stats[t].AddOp(4096, 2000 + t);
      stats[t].AddSamples(10);
      stats[t].AddFile();
    });
  }
  for (std::thread& t : threads) t.join();
  IoSnapshot total;
  for (const IoStats& s : stats) total += s.Snapshot();
  EXPECT_EQ(total.bytes, 4u * 1000 * 4096);
  EXPECT_EQ(total.ops, 4000u);
  EXPECT_EQ(total.samples, 40u);
  EXPECT_EQ(total.files, 4u);
  EXPECT_EQ(total.latency.count(), 4000u);
  stats[0].Reset();
  EXPECT_EQ(stats[0].Snapshot().ops, 0u);
  EXPECT_EQ(stats[0].Snapshot().latency.count(), 0u);
}

}  // namespace
}  // namespace dlio
