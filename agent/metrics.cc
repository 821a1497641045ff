#include "agent/metrics.h"

#include "agent/loader.h"
#include "prometheus/metric_family.h"
#include <limits>

namespace dlio {

void RankMetrics::AttachLoader(const Loader* l) {
  std::lock_guard<std::mutex> lk(mu);
  live = l;
}

void RankMetrics::DetachLoader() {
  std::lock_guard<std::mutex> lk(mu);
  if (live != nullptr) retired += live->Snapshot();
  live = nullptr;
}

void RankMetrics::AddWritten(const IoSnapshot& s) {
  std::lock_guard<std::mutex> lk(mu);
  written += s;
}

RankMetrics* AgentMetrics::Rank(const std::string& job_id, int rank) {
  std::lock_guard<std::mutex> lk(mu_);
  auto& slot = ranks_[{job_id, rank}];
  if (!slot) slot = std::make_unique<RankMetrics>();
  return slot.get();
}

namespace {

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

}  // namespace

std::vector<prometheus::MetricFamily> AgentMetrics::Collect() const {
  using prometheus::MetricType;
  auto read_bytes = Family("dlio_read_bytes_total", "Bytes returned by read calls on data files.", MetricType::Counter);
  auto read_ops = Family("dlio_read_ops_total", "Read calls issued on data files.", MetricType::Counter);
  auto samples = Family("dlio_samples_total", "Samples delivered by the loader.", MetricType::Counter);
  auto latency = Family("dlio_read_latency_seconds", "Latency of read calls on data files.", MetricType::Histogram);
  auto written = Family("dlio_write_bytes_total", "Bytes written while generating the dataset.", MetricType::Counter);
  auto steps = Family("dlio_steps_total", "Training steps completed.", MetricType::Counter);
  auto epoch = Family("dlio_epoch", "Current (or last) training epoch, 1-based.", MetricType::Gauge);
  auto au = Family("dlio_accelerator_utilization_ratio",
                   "Accelerator utilisation of the running block: compute time over wall time (DLIO's AU / 100).",
                   MetricType::Gauge);

  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& [key, rm] : ranks_) {
    IoSnapshot io, wr;
    {
      std::lock_guard<std::mutex> rl(rm->mu);
      io = rm->retired;
      if (rm->live != nullptr) io += rm->live->Snapshot();
      wr = rm->written;
    }
    std::vector<prometheus::ClientMetric::Label> labels = {
        {"agent", agent_}, {"job_id", key.first}, {"rank", std::to_string(key.second)}};
    auto add = [&](prometheus::MetricFamily& f, double v, bool counter) {
      prometheus::ClientMetric m;
      m.label = labels;
      if (counter) m.counter.value = v; else m.gauge.value = v;
      f.metric.push_back(std::move(m));
    };
    add(read_bytes, static_cast<double>(io.bytes), true);
    add(read_ops, static_cast<double>(io.ops), true);
    add(samples, static_cast<double>(io.samples), true);
    add(written, static_cast<double>(wr.bytes), true);
    add(steps, static_cast<double>(rm->steps.load()), true);
    add(epoch, rm->epoch.load(), false);
    add(au, rm->au_ratio.load(), false);

    prometheus::ClientMetric h;
    h.label = labels;
    h.histogram.sample_count = io.latency.count();
    h.histogram.sample_sum = static_cast<double>(io.latency.sum_ns()) * 1e-9;
    // Export only the power-of-two boundaries (every kSubBuckets-th bucket): 31 series instead of 126.
    uint64_t cumulative = io.latency.bucket(0);
    h.histogram.bucket.push_back({cumulative, 1e-9 * static_cast<double>(LatencyHistogram::UpperBoundNs(0))});
    for (int i = 1; i < LatencyHistogram::kNumBuckets - 1; ++i) {
      cumulative += io.latency.bucket(i);
      if (i % LatencyHistogram::kSubBuckets == 0) {
        h.histogram.bucket.push_back({cumulative, 1e-9 * static_cast<double>(LatencyHistogram::UpperBoundNs(i))});
      }
    }
    h.histogram.bucket.push_back({io.latency.count(), std::numeric_limits<double>::infinity()});
    latency.metric.push_back(std::move(h));
  }
  return {read_bytes, read_ops, samples, latency, written, steps, epoch, au};
}

}  // namespace dlio
