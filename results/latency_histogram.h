// LatencyHistogram: a fixed-layout, mergeable histogram of durations in nanoseconds.
//
// Layout (log-linear, like HdrHistogram with 2 significant bits): bucket 0 holds [0, 1 us); then for every power
// of two from 1 us (2^10 ns) up to 2^40 ns (~18 min) there are kSubBuckets = 4 linear sub-buckets, and the last
// bucket catches everything above. That is 1 + 31*4 + 1 = 126 buckets, relative error <= 25 %, 1 KiB of counters.
// Every histogram has the same layout, so merging is a bucket-wise sum (operator+=) and percentiles are computed
// only after the merge (Quantile()).
//
// Thread-safety: none. Record() is meant for one thread (a per-thread histogram on the hot path, no allocation,
// no lock); readers take a Snapshot() copy under the owner's synchronisation (see IoStats).
#pragma once

#include <array>
#include <cstdint>

namespace dlio {

class LatencyHistogram {
 public:
  static constexpr int kSubBuckets = 4;
  static constexpr int kMinPow = 10;   // 2^10 ns ~ 1 us: everything below lands in bucket 0
  static constexpr int kMaxPow = 41;   // 2^41 ns ~ 37 min: everything above lands in the last bucket
  static constexpr int kNumBuckets = 1 + (kMaxPow - kMinPow) * kSubBuckets + 1;

  void Record(uint64_t ns) {
    ++buckets_[BucketOf(ns)];
    sum_ns_ += ns;
    ++count_;
  }
  LatencyHistogram& operator+=(const LatencyHistogram& o);

  static int BucketOf(uint64_t ns);
  // Upper bound (exclusive) of bucket i in nanoseconds; the last bucket reports UINT64_MAX.
  static uint64_t UpperBoundNs(int i);

  // q in [0,1]; returns the upper bound of the bucket holding the q-quantile (0 when empty).
  uint64_t QuantileNs(double q) const;

  uint64_t count() const { return count_; }
  uint64_t sum_ns() const { return sum_ns_; }
  uint64_t bucket(int i) const { return buckets_[i]; }
  void set_bucket(int i, uint64_t v) { buckets_[i] = v; }
  void set_totals(uint64_t sum_ns, uint64_t count) { sum_ns_ = sum_ns; count_ = count; }
  void Reset() { *this = LatencyHistogram(); }

 private:
  std::array<uint64_t, kNumBuckets> buckets_{};
  uint64_t sum_ns_ = 0;
  uint64_t count_ = 0;
};

}  // namespace dlio
