#include "results/latency_histogram.h"

#include <limits>

namespace dlio {

int LatencyHistogram::BucketOf(uint64_t ns) {
  if (ns < (uint64_t{1} << kMinPow)) return 0;
  const int pow = 63 - __builtin_clzll(ns);  // floor(log2(ns)) >= kMinPow
  if (pow >= kMaxPow) return kNumBuckets - 1;
  // Two bits below the leading one pick the linear sub-bucket.
  const int sub = static_cast<int>((ns >> (pow - 2)) & (kSubBuckets - 1));
  return 1 + (pow - kMinPow) * kSubBuckets + sub;
}

uint64_t LatencyHistogram::UpperBoundNs(int i) {
  if (i <= 0) return uint64_t{1} << kMinPow;
  if (i >= kNumBuckets - 1) return std::numeric_limits<uint64_t>::max();
  const int pow = kMinPow + (i - 1) / kSubBuckets;
  const int sub = (i - 1) % kSubBuckets;
  return (uint64_t{1} << pow) + (static_cast<uint64_t>(sub + 1) << (pow - 2));
}

LatencyHistogram& LatencyHistogram::operator+=(const LatencyHistogram& o) {
  for (int i = 0; i < kNumBuckets; ++i) buckets_[i] += o.buckets_[i];
  sum_ns_ += o.sum_ns_;
  count_ += o.count_;
  return *this;
}

uint64_t LatencyHistogram::QuantileNs(double q) const {
  if (count_ == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  const uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count_ - 1)) + 1;
  uint64_t seen = 0;
  for (int i = 0; i < kNumBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return UpperBoundNs(i);
  }
  return UpperBoundNs(kNumBuckets - 1);
}

}  // namespace dlio
