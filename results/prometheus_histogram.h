// ToPrometheusHistogram: a LatencyHistogram (nanoseconds) as a prometheus-cpp histogram in seconds.
//
// Bucket bounds: only the power-of-two boundaries of LatencyHistogram's layout (every kSubBuckets-th bucket),
// 2^10 ns (~1 us) to 2^41 ns (~37 min), plus +Inf: 33 series per histogram instead of 126, which is plenty for
// dashboards and keeps a scrape small. Header-only so that common/ need not link prometheus-cpp; include it only
// from code that does (the agent's and the coordinator's exporters).
// Thread-safety: a pure function of its argument.
#pragma once

#include <limits>

#include "results/latency_histogram.h"
#include "prometheus/client_metric.h"

namespace dlio {

inline prometheus::ClientMetric::Histogram ToPrometheusHistogram(const LatencyHistogram& h) {
  prometheus::ClientMetric::Histogram out;
  out.sample_count = h.count();
  out.sample_sum = static_cast<double>(h.sum_ns()) * 1e-9;
  uint64_t cumulative = h.bucket(0);
  out.bucket.push_back({cumulative, 1e-9 * static_cast<double>(LatencyHistogram::UpperBoundNs(0))});
  for (int i = 1; i < LatencyHistogram::kNumBuckets - 1; ++i) {
    cumulative += h.bucket(i);
    if (i % LatencyHistogram::kSubBuckets == 0) {
      out.bucket.push_back({cumulative, 1e-9 * static_cast<double>(LatencyHistogram::UpperBoundNs(i))});
    }
  }
  out.bucket.push_back({h.count(), std::numeric_limits<double>::infinity()});
  return out;
}

}  // namespace dlio
