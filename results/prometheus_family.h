// The one builder of Prometheus metric families for the agent's and the coordinator's exporters: a family by name,
// HELP text and type, and its samples (a counter or gauge value, or a LatencyHistogram in seconds), each with its
// labels. Header-only so that common/ need not link prometheus-cpp; include it only from code that does.
// Thread-safety: pure functions of their arguments (a family is filled by one thread).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "results/latency_histogram.h"
#include "results/prometheus_histogram.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace dlio {

using MetricLabels = std::vector<prometheus::ClientMetric::Label>;

// An empty family. HELP texts are copied verbatim into docs/metrics.md (a test compares them).
inline prometheus::MetricFamily MetricFamily(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

// One sample of a counter or gauge family (by the family's type).
inline void AddSample(prometheus::MetricFamily& f, MetricLabels labels, double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (f.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

// One sample of a histogram family: `h` (nanoseconds) in seconds (ToPrometheusHistogram).
inline void AddHistogram(prometheus::MetricFamily& f, MetricLabels labels, const LatencyHistogram& h) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.histogram = ToPrometheusHistogram(h);
  f.metric.push_back(std::move(m));
}

}  // namespace dlio
