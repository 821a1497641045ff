#include "agent/metrics.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <mutex>

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace dlio {
namespace {

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& fs, const std::string& name) {
  for (const auto& f : fs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Label(const prometheus::ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "";
}

TEST(AgentMetrics, StepHistogramsAreExportedPerRankInSeconds) {
  AgentMetrics metrics("agent-a");
  const std::shared_ptr<RankMetrics> r = metrics.Rank("job-1", 3);
  r->RecordStep(2'000'000, 10'000'000, 1'000'000);  // 2 ms wait, 10 ms step, 1 ms barrier
  r->RecordStep(4'000'000, 12'000'000, 3'000'000);
  r->SetPhase(RankPhase::kTrain);
  const auto families = metrics.Collect();
  const auto* wait = Find(families, "dlio_batch_wait_seconds");
  ASSERT_NE(wait, nullptr);
  ASSERT_EQ(wait->metric.size(), 1u);
  const auto& h = wait->metric[0].histogram;
  EXPECT_EQ(h.sample_count, 2u);
  EXPECT_NEAR(h.sample_sum, 0.006, 1e-12);
  EXPECT_EQ(Label(wait->metric[0], "rank"), "3");
  EXPECT_EQ(Label(wait->metric[0], "job_id"), "job-1");
  EXPECT_EQ(Label(wait->metric[0], "agent"), "agent-a");
  // Cumulative buckets in increasing bounds, ending with +Inf = count.
  ASSERT_EQ(h.bucket.size(), 33u);  // 2^10 .. 2^41 ns, + +Inf
  for (size_t i = 1; i < h.bucket.size(); ++i) {
    EXPECT_GE(h.bucket[i].cumulative_count, h.bucket[i - 1].cumulative_count);
    EXPECT_GT(h.bucket[i].upper_bound, h.bucket[i - 1].upper_bound);
  }
  EXPECT_TRUE(std::isinf(h.bucket.back().upper_bound));
  EXPECT_EQ(h.bucket.back().cumulative_count, 2u);
  EXPECT_EQ(Find(families, "dlio_step_duration_seconds")->metric[0].histogram.sample_count, 2u);
  EXPECT_NEAR(Find(families, "dlio_barrier_wait_seconds")->metric[0].histogram.sample_sum, 0.004, 1e-12);
  EXPECT_EQ(Find(families, "dlio_checkpoint_duration_seconds")->metric[0].histogram.sample_count, 0u);
  const auto* phase = Find(families, "dlio_phase");
  ASSERT_NE(phase, nullptr);
  EXPECT_EQ(Label(phase->metric[0], "phase"), "train");
  EXPECT_EQ(phase->metric[0].gauge.value, 1);
  EXPECT_EQ(Find(families, "dlio_prefetch_queue_depth")->metric[0].gauge.value, 0);
  EXPECT_EQ(Label(Find(families, "dlio_read_bytes_total")->metric[0], "phase"), "train");
  EXPECT_EQ(Label(Find(families, "dlio_write_bytes_total")->metric[0], "phase"), "generate");
}

// Issue 29: the announce barrier's error bound, a gauge in seconds (NaN, not measured, until set: 0 is a measured
// bound); promtool-clean.
TEST(AgentMetrics, TheBarrierErrorBoundIsAGaugeInSecondsNotMeasuredUntilSet) {
  AgentMetrics metrics("agent-a");
  const auto before = metrics.Collect();
  ASSERT_NE(Find(before, "dlio_barrier_error_bound_seconds"), nullptr);
  EXPECT_TRUE(std::isnan(Find(before, "dlio_barrier_error_bound_seconds")->metric[0].gauge.value))
      << "no announce barrier yet";
  metrics.SetBarrierErrorBound(0);  // every end placed exactly (one clock)
  EXPECT_EQ(Find(metrics.Collect(), "dlio_barrier_error_bound_seconds")->metric[0].gauge.value, 0);
  metrics.SetBarrierErrorBound(42'000);
  const auto families = metrics.Collect();
  const auto* b = Find(families, "dlio_barrier_error_bound_seconds");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, prometheus::MetricType::Gauge);
  ASSERT_EQ(b->metric.size(), 1u);
  EXPECT_NEAR(b->metric[0].gauge.value, 42e-6, 1e-12);
  EXPECT_EQ(Label(b->metric[0], "agent"), "agent-a");
  const std::string text = prometheus::TextSerializer().Serialize(families);
  const std::string path = ::testing::TempDir() + "/barrier_metrics.txt";
  std::ofstream(path) << text;
  if (std::system("command -v promtool >/dev/null") == 0) {
    EXPECT_EQ(std::system(("promtool check metrics < " + path).c_str()), 0) << text;
  }
}

// The median per-step bound beside the largest: its own gauge in seconds, NaN until set, the largest unchanged.
TEST(AgentMetrics, TheBarrierErrorBoundMedianIsAGaugeBesideTheLargest) {
  AgentMetrics metrics("agent-a");
  const auto before = metrics.Collect();
  const auto* none = Find(before, "dlio_barrier_error_bound_p50_seconds");
  ASSERT_NE(none, nullptr);
  EXPECT_TRUE(std::isnan(none->metric[0].gauge.value)) << "no announce barrier yet";
  metrics.SetBarrierErrorBound(900'000);
  metrics.SetBarrierErrorBoundP50(30'000);
  const auto families = metrics.Collect();
  const auto* p50 = Find(families, "dlio_barrier_error_bound_p50_seconds");
  ASSERT_NE(p50, nullptr);
  EXPECT_EQ(p50->type, prometheus::MetricType::Gauge);
  EXPECT_NEAR(p50->metric[0].gauge.value, 30e-6, 1e-12);
  EXPECT_EQ(Label(p50->metric[0], "agent"), "agent-a");
  EXPECT_NEAR(Find(families, "dlio_barrier_error_bound_seconds")->metric[0].gauge.value, 900e-6, 1e-12);
}

TEST(AgentMetrics, EvaluationReadsAreLabelledPhaseEvalApartFromTraining) {
  AgentMetrics metrics("agent-a");
  const std::shared_ptr<RankMetrics> r = metrics.Rank("job-1", 0);
  {
    // Before any evaluation: no eval series.
    const auto families = metrics.Collect();
    for (const auto& m : Find(families, "dlio_read_bytes_total")->metric) EXPECT_NE(Label(m, "phase"), "eval");
  }
  {
    MutexLock lk(&r->mu);
    r->retired.bytes = 1000;
    r->retired.ops = 10;
    r->retired_eval.bytes = 300;
    r->retired_eval.ops = 3;
    r->retired_eval.samples = 6;
  }
  const auto families = metrics.Collect();
  std::map<std::string, double> bytes, ops, samples;
  for (const auto& m : Find(families, "dlio_read_bytes_total")->metric) bytes[Label(m, "phase")] = m.counter.value;
  for (const auto& m : Find(families, "dlio_read_ops_total")->metric) ops[Label(m, "phase")] = m.counter.value;
  for (const auto& m : Find(families, "dlio_samples_total")->metric) samples[Label(m, "phase")] = m.counter.value;
  EXPECT_EQ(bytes["train"], 1000);
  EXPECT_EQ(bytes["eval"], 300);
  EXPECT_EQ(ops["train"], 10);
  EXPECT_EQ(ops["eval"], 3);
  EXPECT_EQ(samples["eval"], 6);
}

TEST(AdvertisedMetricsEndpoint, KeepsTheListenHostWithTheBoundPort) {
  EXPECT_EQ(AdvertisedMetricsEndpoint("127.0.0.1:0", 41234), "127.0.0.1:41234");
  EXPECT_EQ(AdvertisedMetricsEndpoint("0.0.0.0:9464", 9464), "0.0.0.0:9464");
  EXPECT_EQ(AdvertisedMetricsEndpoint("9464", 9464), ":9464");
}

}  // namespace
}  // namespace dlio

namespace dlio {
namespace {

std::set<std::string> JobIds(const AgentMetrics& metrics) {
  std::set<std::string> ids;
  for (const auto& f : metrics.Collect()) {
    for (const auto& m : f.metric) {
      if (const std::string id = Label(m, "job_id"); !id.empty()) ids.insert(id);  // per-agent series have none
    }
  }
  return ids;
}

TEST(AgentMetrics, KeepsTheSeriesOfTheLastJobsOnly) {
  AgentMetrics metrics("agent-a", 3);
  std::shared_ptr<RankMetrics> first = metrics.Rank("job-1", 0);
  for (int j = 1; j <= 5; ++j) {
    for (int rank = 0; rank < 2; ++rank) metrics.Rank("job-" + std::to_string(j), rank)->steps += 1;
  }
  EXPECT_EQ(JobIds(metrics), (std::set<std::string>{"job-3", "job-4", "job-5"}));
  // A phase still holding an evicted job's state keeps working on it; it is just no longer exported.
  first->RecordStep(1, 2, 3);
  first->SetPhase(RankPhase::kTrain);
  // Recency, not age: the job used last stays.
  metrics.Rank("job-3", 0);
  metrics.Rank("job-6", 0);
  EXPECT_EQ(JobIds(metrics), (std::set<std::string>{"job-3", "job-5", "job-6"}));
  EXPECT_EQ(AgentMetrics::kJobsKept, 16u);
}

}  // namespace
}  // namespace dlio
