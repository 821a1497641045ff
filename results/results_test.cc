#include "results/results.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "plan/epoch_plan.h"
#include "results/verdict.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

std::string TestData() {
  const char* env = std::getenv("DLIO_TESTDATA");
  return env != nullptr ? env : "/work/main/../shared/testdata";
}

// A figure the test expects to be measured: its value, or NaN (which fails every comparison) when it is not.
double V(const std::optional<double>& x) { return x.value_or(std::nan("")); }

double RelErr(double got, double want) {
  if (want == 0) return std::fabs(got);
  return std::fabs(got - want) / std::fabs(want);
}

MetricWindow Window(int64_t epoch_steps, int64_t start, int64_t end, int64_t batch) {
  MetricWindow w;
  w.epoch_steps = epoch_steps;
  w.exclude_start = start;
  w.exclude_end = end;
  w.batch = batch;
  return w;
}

// ---------------------------------------------------------------------------------------------------------------
// The formulas on small hand-computed cases.

TEST(TrainMetrics, BlockFormulaAsDlio) {
  // 4 steps, first excluded: total = 1.2 - 0.5 = 0.7; AU = 0.3 / 0.7; samples/s = (4 - 2) * 2 / 0.7.
  const BlockMetric m = ComputeTrainBlock({0.5, 0.2, 0.2, 0.2}, {0.1, 0.1, 0.1, 0.1}, 1.2, Window(4, 1, 0, 2));
  EXPECT_EQ(m.steps, 4);
  EXPECT_DOUBLE_EQ(m.timed_seconds, 0.7);
  EXPECT_DOUBLE_EQ(V(m.au_percent), 100 * 0.3 / 0.7);
  EXPECT_DOUBLE_EQ(V(m.samples_per_second), 2 * 2 / 0.7);
}

TEST(TrainMetrics, ExcludeEndUsesTheEpochStepCount) {
  // window_end = 4 - 1 - 1 = 2: compute[1:3]; total = 1.0 - proc[0] - proc[3:].
  const BlockMetric m = ComputeTrainBlock({0.4, 0.1, 0.1, 0.3}, {0.05, 0.1, 0.1, 0.2}, 1.0, Window(4, 1, 1, 1));
  EXPECT_DOUBLE_EQ(m.timed_seconds, 1.0 - 0.4 - 0.3);
  EXPECT_DOUBLE_EQ(V(m.au_percent), 100 * 0.2 / 0.3);
}

TEST(TrainMetrics, BlockIndicesAreTheBlocksOwnButTheWindowIsTheEpochs) {
  // Second block of 8 steps in a 16-step epoch (a step checkpoint split it): DLIO excludes its first step too,
  // and the window end (15) lies past the block, so nothing is cut at the end.
  std::vector<double> proc(8, 0.02), compute(8, 0.01);
  proc[0] = 0.1;
  const BlockMetric m = ComputeTrainBlock(proc, compute, 0.3, Window(16, 1, 0, 2));
  EXPECT_DOUBLE_EQ(m.timed_seconds, 0.3 - 0.1);
  EXPECT_NEAR(V(m.au_percent), 100 * 0.07 / 0.2, 1e-12);
  EXPECT_NEAR(V(m.samples_per_second), 6 * 2 / 0.2, 1e-9);
}

TEST(TrainMetrics, PythonSliceSemanticsForTinyEpochs) {
  // epoch_steps 2 with exclude_end 3: window_end + 1 = -1, so numpy reads compute[1:-1] and proc[-1:].
  const BlockMetric m = ComputeTrainBlock({0.1, 0.2, 0.3}, {0.01, 0.02, 0.03}, 1.0, Window(2, 1, 3, 1));
  EXPECT_DOUBLE_EQ(m.timed_seconds, 1.0 - 0.1 - 0.3);
  EXPECT_DOUBLE_EQ(V(m.au_percent), 100 * 0.02 / 0.6);
}

TEST(TrainMetrics, ZeroComputeGivesZeroAuAndEmptyBlocksWeighNothing) {
  EXPECT_EQ(ComputeTrainBlock({0.1, 0.1, 0.1}, {0, 0, 0}, 1.0, Window(3, 1, 0, 1)).au_percent, 0.0);
  // DLIO writes (0 - 2) * batch / time for an empty block; here it is not measured, and weighs nothing.
  const BlockMetric empty = ComputeTrainBlock({}, {}, 0.001, Window(16, 1, 0, 2));
  EXPECT_EQ(empty.steps, 0);
  EXPECT_FALSE(empty.samples_per_second.has_value());
  EXPECT_FALSE(empty.au_percent.has_value());
  RankEpochResult r;
  BlockTimings b1;
  b1.block = 1;
  b1.proc = {0.5, 0.2, 0.2, 0.2};
  b1.compute = {0.1, 0.1, 0.1, 0.1};
  b1.duration_s = 1.2;
  BlockTimings b2;
  b2.block = 2;
  b2.duration_s = 0.001;
  r.blocks = {b1, b2};
  const RankEpochMetric m = ComputeRankEpoch(r, Window(4, 1, 0, 2));
  EXPECT_DOUBLE_EQ(V(m.au_percent), 100 * 0.3 / 0.7);
  EXPECT_DOUBLE_EQ(V(m.samples_per_second), 4 / 0.7);
  EXPECT_FALSE(ComputeRankEpoch(RankEpochResult{}, Window(4, 1, 0, 2)).au_percent.has_value());
}

TEST(TrainMetrics, ShortBlocksAreNotMeasuredAndLeftOutOfTheEpoch) {
  // DLIO: a 1-step block has AU 0 (its window is empty) and samples/s (1 - 2) x batch / time < 0; a 2-step block
  // samples/s 0. Neither is a measurement.
  const MetricWindow w = Window(8, 1, 0, 2);
  const BlockMetric one = ComputeTrainBlock({0.1}, {0.05}, 0.11, w);
  EXPECT_FALSE(one.au_percent.has_value());
  EXPECT_FALSE(one.samples_per_second.has_value());
  const BlockMetric two = ComputeTrainBlock({0.1, 0.1}, {0.05, 0.05}, 0.22, w);
  EXPECT_NEAR(V(two.au_percent), 100 * 0.05 / 0.12, 1e-9);
  EXPECT_FALSE(two.samples_per_second.has_value());
  // An epoch of 8 steps split 7 + 1 by a step checkpoint: the epoch's figures are the 7-step block's.
  RankEpochResult r;
  BlockTimings a, b;
  a.block = 1;
  a.proc = std::vector<double>(7, 0.1);
  a.compute = std::vector<double>(7, 0.05);
  a.duration_s = 0.75;
  b.block = 2;
  b.proc = {0.1};
  b.compute = {0.05};
  b.duration_s = 0.11;
  r.blocks = {a, b};
  const BlockMetric ma = ComputeTrainBlock(a.proc, a.compute, a.duration_s, w);
  const RankEpochMetric m = ComputeRankEpoch(r, w);
  EXPECT_DOUBLE_EQ(V(m.au_percent), V(ma.au_percent));
  EXPECT_DOUBLE_EQ(V(m.samples_per_second), V(ma.samples_per_second));
  // More than 100 % (timings that do not belong together) is not a measurement either.
  EXPECT_FALSE(ComputeTrainBlock({0.1, 0.1, 0.1}, {0.5, 0.5, 0.5}, 0.3, Window(3, 1, 0, 1)).au_percent.has_value());
}

TEST(TrainMetrics, EpochIsTheStepWeightedMeanOfBlocks) {
  RankEpochResult r;
  BlockTimings a, b;
  a.block = 1;
  a.proc = std::vector<double>(6, 0.1);
  a.compute = std::vector<double>(6, 0.05);
  a.duration_s = 0.6;
  b.block = 2;
  b.proc = std::vector<double>(3, 0.1);
  b.compute = std::vector<double>(3, 0.08);
  b.duration_s = 0.3;
  r.blocks = {a, b};
  const MetricWindow w = Window(9, 1, 0, 1);
  const BlockMetric ma = ComputeTrainBlock(a.proc, a.compute, a.duration_s, w);
  const BlockMetric mb = ComputeTrainBlock(b.proc, b.compute, b.duration_s, w);
  const RankEpochMetric m = ComputeRankEpoch(r, w);
  EXPECT_DOUBLE_EQ(V(m.au_percent), (V(ma.au_percent) * 6 + V(mb.au_percent) * 3) / 9);
  EXPECT_DOUBLE_EQ(V(m.samples_per_second), (V(ma.samples_per_second) * 6 + V(mb.samples_per_second) * 3) / 9);
  EXPECT_DOUBLE_EQ(m.timed_seconds, ma.timed_seconds + mb.timed_seconds);
}

// ---------------------------------------------------------------------------------------------------------------
// The aggregation and the files, on a synthetic two-host job.

BlockTimings Block(int64_t steps, double load, double compute, int64_t start_us) {
  BlockTimings b;
  b.block = 1;
  for (int64_t i = 0; i < steps; ++i) {
    b.load.push_back(load);
    b.compute.push_back(compute);
    b.proc.push_back(load + compute);
    b.barrier.push_back(0.001);
  }
  b.duration_s = static_cast<double>(steps) * (load + compute + 0.001);
  b.start_unix_us = start_us;
  b.end_unix_us = start_us + static_cast<int64_t>(b.duration_s * 1e6);
  return b;
}

std::string Duration2(const BlockTimings& b) {
  return fmt::format("{:.2f}", static_cast<double>(b.end_unix_us - b.start_unix_us) / 1e6);
}

JobResult SyntheticJob() {
  JobResult job;
  job.job_id = "job-1";
  job.spec.format = "npz";
  job.spec.num_files_train = 64;
  job.spec.num_samples_per_file = 1;
  job.spec.batch_size = 2;
  job.spec.record_length_bytes = 65536;
  job.spec.epochs = 2;
  job.spec.au_threshold = 0.5;
  job.spec.num_files_eval = 5;
  job.world = 4;  // 64 / 2 / 4 = 8 steps
  job.agents = {{"a0", "host-a", 16.0, 8, 0, 2, "", "", "", {{"vendor_id", "AuthenticAMD"}}, {{"MemTotal", "16 kB"}}, "EPYC", {}, "", "", "", {}},
                {"a1", "host-b", 32.0, 4, 2, 1, "", "", "", {}, {}, "", {}, "", "", "", {}},
                {"a2", "host-b", 32.0, 4, 3, 1, "", "", "", {}, {}, "", {}, "", "", "", {}}};
  job.start_unix_us = 1'800'000'000'000'000;
  job.end_unix_us = job.start_unix_us + 5'000'000;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    for (int rank = 0; rank < 4; ++rank) {
      RankEpochResult r;
      r.rank = rank;
      r.epoch = epoch;
      r.start_unix_us = job.start_unix_us + epoch * 1'000'000;
      r.blocks = {Block(8, 0.001 * (rank + epoch), 0.01, r.start_unix_us + 100)};
      r.end_unix_us = r.blocks[0].end_unix_us + 50;
      r.io.bytes = 16 * 65536 + static_cast<uint64_t>(rank);
      r.io.ops = 16;
      r.io.samples = 16;
      r.io.files = 16;
      for (int i = 0; i < 16; ++i) r.io.latency.Record(100000 * static_cast<uint64_t>(rank + 1));
      r.dropped_samples = rank == 0 ? 3 : 0;
      job.train.push_back(r);
    }
  }
  return job;
}

TEST(Aggregator, FleetIsMeanAuSumThroughputThenMeanAndPopulationStdevOverEpochs) {
  const JobResult job = SyntheticJob();
  const FleetSummary s = Aggregator(job).Summarize();
  const MetricWindow w = TrainWindow(job.spec, 8);
  ASSERT_EQ(s.epochs.size(), 2u);
  std::vector<double> au, tp;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    double au_sum = 0, tp_sum = 0, timed = 0;
    uint64_t bytes = 0;
    for (const RankEpochResult& r : job.train) {
      if (r.epoch != epoch) continue;
      const RankEpochMetric m = ComputeRankEpoch(r, w);
      au_sum += V(m.au_percent);
      tp_sum += V(m.samples_per_second);
      timed = std::max(timed, m.duration_seconds);
      bytes += r.io.bytes;
    }
    const EpochMetric& e = s.epochs[static_cast<size_t>(epoch - 1)];
    EXPECT_EQ(e.epoch, epoch);
    EXPECT_DOUBLE_EQ(V(e.au_percent), au_sum / 4);
    EXPECT_DOUBLE_EQ(V(e.samples_per_second), tp_sum);
    EXPECT_DOUBLE_EQ(V(e.mib_per_second), tp_sum * 65536 / 1024 / 1024);
    EXPECT_EQ(e.read_bytes, bytes);
    EXPECT_DOUBLE_EQ(V(e.actual_mb_per_second), static_cast<double>(bytes) / timed / 1e6);
    EXPECT_EQ(e.dropped_samples, 3u);
    au.push_back(au_sum / 4);
    tp.push_back(tp_sum);
  }
  EXPECT_DOUBLE_EQ(V(s.au_mean), (au[0] + au[1]) / 2);
  EXPECT_DOUBLE_EQ(V(s.au_stdev), std::fabs(au[0] - au[1]) / 2);  // population stdev of two values
  EXPECT_DOUBLE_EQ(V(s.throughput_mean), (tp[0] + tp[1]) / 2);
  EXPECT_DOUBLE_EQ(V(s.throughput_stdev), std::fabs(tp[0] - tp[1]) / 2);
  EXPECT_DOUBLE_EQ(V(s.io_mean_mib), V(s.throughput_mean) * 65536 / 1024 / 1024);
  EXPECT_DOUBLE_EQ(V(s.io_stdev_mib), V(s.throughput_stdev) * 65536 / 1024 / 1024);
  EXPECT_DOUBLE_EQ(V(s.actual_mb_mean), (V(s.epochs[0].actual_mb_per_second) + V(s.epochs[1].actual_mb_per_second)) / 2);
  EXPECT_EQ(s.read_bytes, s.epochs[0].read_bytes + s.epochs[1].read_bytes);
  EXPECT_EQ(s.dropped_samples, 3u);
  EXPECT_EQ(s.au_meets_expectation, V(s.au_mean) >= 50);
  EXPECT_EQ(s.io.ops, 8u * 16);
  EXPECT_EQ(s.io.latency.count(), 8u * 16);
}

TEST(Aggregator, SummaryJsonHasDliosKeysAndOurs) {
  const JobResult job = SyntheticJob();
  const json j = Aggregator(job).SummaryJson();
  for (const char* k : {"start", "end", "num_accelerators", "num_hosts", "hostname", "num_files_train",
                        "num_files_eval", "num_samples_per_file", "host_cpu_count", "host_memory_GB",
                        "potential_caching", "data_size_per_host_GB", "epochs", "metric"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["num_accelerators"], 4);
  EXPECT_EQ(j["num_hosts"], 2);
  EXPECT_EQ(j["hostname"], "host-a");
  EXPECT_EQ(j["host_cpu_count"], json({8, 4}));
  EXPECT_EQ(j["host_memory_GB"], json({16.0, 32.0}));
  EXPECT_EQ(j["epochs"], 2);
  // DLIO: ranks per node (2 on rank 0's host) * 64 samples // 4 ranks * 65536 bytes, in GiB.
  EXPECT_DOUBLE_EQ(j["data_size_per_host_GB"].get<double>(), 32.0 * 65536 / 1024 / 1024 / 1024);
  EXPECT_EQ(j["potential_caching"], json({1, 1}));
  EXPECT_TRUE(std::regex_match(j["start"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})")));
  const json& m = j["metric"];
  for (const char* k : {"train_au_percentage", "train_au_mean_percentage", "train_au_stdev_percentage",
                        "train_au_meet_expectation", "train_throughput_samples_per_second",
                        "train_throughput_mean_samples_per_second", "train_throughput_stdev_samples_per_second",
                        "train_io_mean_MB_per_second", "train_io_stdev_MB_per_second", "train_read_bytes",
                        "train_io_actual_mean_MB_per_second", "train_dropped_samples_per_epoch"}) {
    EXPECT_TRUE(m.contains(k)) << k;
  }
  const FleetSummary s = Aggregator(job).Summarize();
  EXPECT_EQ(m["train_au_percentage"].size(), 2u);
  EXPECT_DOUBLE_EQ(m["train_au_mean_percentage"].get<double>(), V(s.au_mean));
  EXPECT_EQ(m["train_au_meet_expectation"], s.au_meets_expectation ? "success" : "fail");
  EXPECT_EQ(m["train_read_bytes"], s.read_bytes);
  EXPECT_EQ(m["train_dropped_samples_per_epoch"], 3);
  // DLIO's host keys, from rank 0's agent.
  EXPECT_EQ(j["host_processor_name"], "EPYC");
  EXPECT_EQ(j["host_cpuinfo"]["vendor_id"], "AuthenticAMD");
  EXPECT_EQ(j["host_meminfo"]["MemTotal"], "16 kB");
  EXPECT_EQ(j["num_files_eval"], 5);
  const json& ext = j["dlio_ext"];
  EXPECT_EQ(ext["job_id"], "job-1");
  EXPECT_EQ(ext["epoch_steps"], 8);
  EXPECT_EQ(ext["train_epochs"].size(), 2u);
  EXPECT_EQ(ext["train_read_latency_seconds"]["count"], 128);
  // Percentiles after the merge: half the reads took 100-200 us, the slowest 400 us.
  EXPECT_LE(ext["train_read_latency_seconds"]["p50"].get<double>(), 250e-6);
  EXPECT_GE(ext["train_read_latency_seconds"]["p99"].get<double>(), 400e-6);
  EXPECT_LE(ext["train_read_latency_seconds"]["p99"].get<double>(), 500e-6);
}

TEST(Aggregator, RankFilesHaveDliosLayout) {
  const JobResult job = SyntheticJob();
  const Aggregator agg(job);
  const json out = agg.RankOutputJson(1);
  EXPECT_EQ(out["hostname"], "host-a");
  EXPECT_EQ(out["host_cpu_count"], 8);
  EXPECT_EQ(out["host_cpuinfo"]["vendor_id"], "AuthenticAMD");
  EXPECT_EQ(out["host_meminfo"]["MemTotal"], "16 kB");
  ASSERT_TRUE(out.contains("1"));
  ASSERT_TRUE(out.contains("2"));
  const json& e = out["1"];
  for (const char* k : {"start", "end", "load", "proc", "compute", "au", "throughput", "barrier"}) {
    EXPECT_TRUE(e.contains(k)) << k;
  }
  EXPECT_EQ(e["load"]["block1"].size(), 8u);
  EXPECT_EQ(e["barrier"]["block1"].size(), 8u);
  const RankEpochResult& r = job.train[1];
  ASSERT_EQ(r.rank, 1);
  const BlockMetric bm = ComputeTrainBlock(r.blocks[0].proc, r.blocks[0].compute, r.blocks[0].duration_s,
                                           TrainWindow(job.spec, 8));
  EXPECT_DOUBLE_EQ(e["au"]["block1"].get<double>(), V(bm.au_percent));
  EXPECT_DOUBLE_EQ(e["throughput"]["block1"].get<double>(), V(bm.samples_per_second));

  const json stats = agg.RankPerEpochStatsJson(1);
  ASSERT_TRUE(stats.contains("2"));
  EXPECT_TRUE(stats["2"]["duration"].is_string());
  EXPECT_TRUE(std::regex_match(stats["2"]["duration"].get<std::string>(), std::regex(R"(\d+\.\d\d)")));
  EXPECT_EQ(stats["1"]["block1"]["duration"], Duration2(job.train[1].blocks[0]));
}

TEST(Results, WriteResultFilesWritesEveryFileAtomically) {
  const std::string dir = ::testing::TempDir() + "/results_" + std::to_string(::getpid()) + "/job-1";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const absl::StatusOr<std::shared_ptr<const ConfinedDir>> folder = ConfinedDir::OpenRoot(dir);
  ASSERT_TRUE(folder.ok()) << folder.status();
  JobResult job = SyntheticJob();
  ASSERT_TRUE(WriteResultFiles(**folder, job).ok());
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"0_output.json", "0_per_epoch_stats.json", "1_output.json",
                                             "1_per_epoch_stats.json", "2_output.json", "2_per_epoch_stats.json",
                                             "3_output.json", "3_per_epoch_stats.json", "job.yaml", "summary.json"}));
  std::ifstream in(dir + "/summary.json");
  const json summary = json::parse(in);
  EXPECT_EQ(summary["num_accelerators"], 4);
  std::ifstream y(dir + "/job.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(y)), std::istreambuf_iterator<char>());
  absl::StatusOr<WorkloadSpec> back = LoadWorkload(yaml, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, job.spec);
  // Rewriting replaces the files in place.
  job.job_id = "job-1-again";
  ASSERT_TRUE(WriteResultFiles(**folder, job).ok());
  std::ifstream in2(dir + "/summary.json");
  EXPECT_EQ(json::parse(in2)["dlio_ext"]["job_id"], "job-1-again");
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

// Issue 24 item 5: a job folder renamed away and replaced by a link to an outside folder between two writes. The
// files go to the folder that was opened (now "moved"); nothing at all, not even a temporary, appears outside.
TEST(Results, WriteResultFilesIntoAFolderSwappedForALinkWriteNothingOutside) {
  const std::filesystem::path base = ::testing::TempDir() + "/results_swap_" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base / "results" / "job-1");
  std::filesystem::create_directories(base / "outside");
  const absl::StatusOr<std::shared_ptr<const ConfinedDir>> folder =
      ConfinedDir::OpenRoot((base / "results" / "job-1").string());
  ASSERT_TRUE(folder.ok()) << folder.status();
  std::filesystem::rename(base / "results" / "job-1", base / "results" / "moved");
  std::filesystem::create_directory_symlink(base / "outside", base / "results" / "job-1");
  ASSERT_TRUE(WriteResultFiles(**folder, SyntheticJob()).ok());
  EXPECT_TRUE(std::filesystem::is_empty(base / "outside"));
  EXPECT_TRUE(std::filesystem::exists(base / "results" / "moved" / "summary.json"));
  EXPECT_TRUE(std::filesystem::exists(base / "results" / "moved" / "3_per_epoch_stats.json"));
  std::filesystem::remove_all(base);
}

TEST(Results, WriteFileAtomicNamesThePathOnError) {
  const absl::Status s = WriteFileAtomic("/nonexistent-dir/x/summary.json", "{}");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "/nonexistent-dir/x/summary.json: cannot write (No such file or directory)");
}

// ---------------------------------------------------------------------------------------------------------------
// 1 to 4 steps per epoch: no figure is ever negative or above 100 %; what DLIO's window cannot give is null with a
// reason, said before the run too (UnmeasuredFigureWarnings).

// Every number in the document is >= 0, and every AU figure <= 100.
void ExpectNoImpossibleFigure(const json& j, const std::string& path = "") {
  if (j.is_number()) {
    EXPECT_GE(j.get<double>(), 0) << path;
    if (path.find("au") != std::string::npos && path.find("stdev") == std::string::npos) {
      EXPECT_LE(j.get<double>(), 100) << path;
    }
    return;
  }
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) ExpectNoImpossibleFigure(v, path + "." + k);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) ExpectNoImpossibleFigure(j[i], path + "[" + std::to_string(i) + "]");
  }
}

// A job of `steps` steps per epoch over 2 ranks and 2 epochs (8 files of 1 sample, batch 4 / steps).
JobResult StepsJob(int64_t steps) {
  JobResult job = SyntheticJob();
  job.world = 2;
  job.spec.num_files_train = 8 * steps;
  job.spec.batch_size = 4;  // 8 x steps samples / 4 / 2 ranks = steps
  job.spec.au_threshold = 0.9;
  job.spec.computation_time.a = 0.05;  // what its blocks measured (a job with 0 is a read-rate test)
  job.agents.resize(1);
  job.train.clear();
  for (int epoch = 1; epoch <= 2; ++epoch) {
    for (int rank = 0; rank < 2; ++rank) {
      RankEpochResult r;
      r.rank = rank;
      r.epoch = epoch;
      r.start_unix_us = job.start_unix_us + epoch * 1'000'000;
      r.blocks = {Block(steps, 0.002, 0.05, r.start_unix_us + 100)};
      r.end_unix_us = r.blocks[0].end_unix_us + 50;
      r.io.bytes = static_cast<uint64_t>(steps) * 4 * 65536;
      job.train.push_back(r);
    }
  }
  return job;
}

TEST(NotMeasured, OneToFourStepsPerEpochGiveNoImpossibleFigure) {
  for (int64_t steps = 1; steps <= 4; ++steps) {
    SCOPED_TRACE(fmt::format("{} step(s) per epoch", steps));
    JobResult job = StepsJob(steps);
    job.job_state = "succeeded";
    ASSERT_EQ(*EpochPlan::Steps(TrainPlanParams(job.spec, job.world)), steps);
    const FleetSummary s = Aggregator(job).Summarize();
    const json summary = Aggregator(job).SummaryJson();
    ExpectNoImpossibleFigure(summary["metric"], "metric");
    ExpectNoImpossibleFigure(summary["dlio_ext"]["train_epochs"], "train_epochs");
    for (int rank = 0; rank < 2; ++rank) ExpectNoImpossibleFigure(Aggregator(job).RankOutputJson(rank));
    const std::vector<std::string> warnings = UnmeasuredFigureWarnings(job.spec, steps, 0);
    const json& m = summary["metric"];
    const json& verdict = summary["dlio_ext"]["verdict"];
    if (steps == 1) {  // the window (step 1 onwards) is empty, and (1 - 2) x batch is negative
      EXPECT_FALSE(s.au_mean.has_value());
      EXPECT_TRUE(m["train_au_mean_percentage"].is_null());
      EXPECT_TRUE(m["train_au_percentage"][0].is_null());
      EXPECT_EQ(m["train_au_meet_expectation"], "not measured");
      EXPECT_EQ(verdict["status"], "NOT_MEASURED");
      EXPECT_THAT(summary["dlio_ext"]["not_measured"]["train_au"].get<std::string>(), HasSubstr("1 step(s)"));
      ASSERT_EQ(warnings.size(), 2u);
      EXPECT_THAT(warnings[0], HasSubstr("AU will not be measured"));
    } else {
      EXPECT_TRUE(s.au_mean.has_value());
      EXPECT_EQ(verdict["status"], "PASS");  // 0.05 s of compute in steps of 0.053 s: about 94 % >= 90 %
    }
    if (steps <= 2) {  // (steps - 2) x batch is 0 or negative
      EXPECT_FALSE(s.throughput_mean.has_value());
      EXPECT_TRUE(m["train_throughput_mean_samples_per_second"].is_null());
      EXPECT_TRUE(m["train_io_mean_MB_per_second"].is_null());
      EXPECT_THAT(summary["dlio_ext"]["not_measured"]["train_throughput"].get<std::string>(),
                  HasSubstr("at least 3 steps"));
      EXPECT_THAT(warnings.back(), HasSubstr("samples/s will not be measured"));
    } else {
      EXPECT_GT(V(s.throughput_mean), 0);
      EXPECT_TRUE(warnings.empty());
      EXPECT_FALSE(summary["dlio_ext"].contains("not_measured"));
    }
  }
}

TEST(NotMeasured, StepCheckpointBlocksAndEvaluationAreWarnedAbout) {
  WorkloadSpec spec;
  spec.checkpoint = true;
  spec.steps_between_checkpoints = 1;  // every block is one step: nothing is measured
  const std::vector<std::string> w = UnmeasuredFigureWarnings(spec, 4, 0);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_THAT(w[0], HasSubstr("blocks of 1/1/1/1"));
  spec.steps_between_checkpoints = 3;  // blocks of 3 and 1: the short one is left out
  const std::vector<std::string> w2 = UnmeasuredFigureWarnings(spec, 4, 0);
  ASSERT_EQ(w2.size(), 2u);
  EXPECT_THAT(w2[0], HasSubstr("left out of the epoch's AU"));
  WorkloadSpec eval;
  eval.evaluation = true;
  eval.num_files_eval = 1;
  EXPECT_THAT(UnmeasuredFigureWarnings(eval, 8, 1), ::testing::Contains(HasSubstr("evaluation AU")));
}

// ---------------------------------------------------------------------------------------------------------------
// The verdict.

TEST(Verdict, PassFailAndTheLine) {
  JobResult job = StepsJob(8);
  job.job_state = "succeeded";
  job.spec.au_threshold = 0.5;
  Verdict v = JudgeJob(Aggregator(job).Summarize(), job.spec, job.job_state);
  EXPECT_EQ(v.status, VerdictStatus::kPass);
  EXPECT_THAT(VerdictLine(v), ::testing::MatchesRegex(
                                  R"(AU [0-9.]+ % \(min rank [0-9.]+ %, sd [0-9.]+\) >= target 50\.0 %: PASS)"));
  job.spec.au_threshold = 0.99;
  v = JudgeJob(Aggregator(job).Summarize(), job.spec, job.job_state);
  EXPECT_EQ(v.status, VerdictStatus::kFail);
  EXPECT_THAT(VerdictLine(v), ::testing::EndsWith("< target 99.0 %: FAIL"));
  // The JSON form round-trips (results reads it back from summary.json).
  const Verdict back = VerdictFromJson(VerdictJson(v));
  EXPECT_EQ(back.status, v.status);
  EXPECT_DOUBLE_EQ(V(back.au_percent), V(v.au_percent));
  EXPECT_EQ(VerdictLine(back), VerdictLine(v));
}

TEST(Verdict, NotApplicableIncompleteAndNotMeasured) {
  JobResult job = StepsJob(8);
  job.spec.train = false;
  job.train.clear();
  EXPECT_EQ(JudgeJob(Aggregator(job).Summarize(), job.spec, "succeeded").status, VerdictStatus::kNotApplicable);
  JobResult partial = StepsJob(8);
  const Verdict inc = JudgeJob(Aggregator(partial).Summarize(), partial.spec, "failed");
  EXPECT_EQ(inc.status, VerdictStatus::kIncomplete);
  EXPECT_THAT(VerdictLine(inc), HasSubstr("the job failed after 2 of 2 epoch(s)"));
  JobResult one = StepsJob(1);
  const Verdict nm = JudgeJob(Aggregator(one).Summarize(), one.spec, "succeeded");
  EXPECT_EQ(nm.status, VerdictStatus::kNotMeasured);
  EXPECT_THAT(VerdictLine(nm), HasSubstr("NOT_MEASURED"));
  EXPECT_FALSE(VerdictJson(nm)["au_percent"].is_number());
}

// train.computation_time 0 is a pure read-rate test: AU has nothing to hide I/O behind, so it is not judged (no FAIL,
// exit 5); the read rate is the answer, in the reason. Without a measured read rate the answer is missing.
TEST(Verdict, AReadRateTestIsNotApplicableWithItsReadRate) {
  JobResult job = StepsJob(8);
  job.spec.computation_time = Distribution{};
  for (RankEpochResult& r : job.train) r.blocks = {Block(8, 0.002, 0, r.start_unix_us + 100)};
  const FleetSummary s = Aggregator(job).Summarize();
  const Verdict v = JudgeJob(s, job.spec, "succeeded");
  EXPECT_EQ(v.status, VerdictStatus::kNotApplicable);
  const std::string rate = fmt::format("read rate {:.1f} MiB/s, {:.1f} samples/s", V(s.io_mean_mib),
                                       V(s.throughput_mean));
  EXPECT_THAT(v.reason, ::testing::StartsWith(rate));
  EXPECT_THAT(VerdictLine(v), ::testing::StartsWith("no AU to judge: NOT_APPLICABLE (" + rate +
                                                    ": train.computation_time is 0, a read-rate test"));
  EXPECT_EQ(VerdictLine(VerdictFromJson(VerdictJson(v))), VerdictLine(v));
  // The same job with its compute given is judged on AU as before (0 % < 90 %).
  job.spec.computation_time.a = 0.05;
  EXPECT_EQ(JudgeJob(Aggregator(job).Summarize(), job.spec, "succeeded").status, VerdictStatus::kFail);
  // 2 steps per epoch: no read rate (DLIO's "-2"), so nothing answers the test.
  JobResult two = StepsJob(2);
  two.spec.computation_time = Distribution{};
  const Verdict nm = JudgeJob(Aggregator(two).Summarize(), two.spec, "succeeded");
  EXPECT_EQ(nm.status, VerdictStatus::kNotMeasured);
  EXPECT_THAT(nm.reason, HasSubstr("train.computation_time is 0, so the read rate is the answer"));
  // A job that did not succeed stays INCOMPLETE.
  EXPECT_EQ(JudgeJob(s, job.spec, "failed").status, VerdictStatus::kIncomplete);
}

TEST(Results, TimestampsRoundTripInLocalTime) {
  const int64_t us = 1'795'000'000'123'456;
  const std::string text = FormatTimestamp(us);
  EXPECT_TRUE(std::regex_match(text, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.123456)"))) << text;
  EXPECT_EQ(*ParseTimestamp(text), us);
  EXPECT_EQ(*ParseTimestamp("2026-11-22T02:03:49.5") - *ParseTimestamp("2026-11-22T02:03:48"), 1'500'000);
  EXPECT_FALSE(ParseTimestamp("2026-11-22").ok());
  EXPECT_FALSE(ParseTimestamp("2026-13-22T02:03:49.804834").ok());
  EXPECT_FALSE(ParseTimestamp("2026-11-22T02:03:49.804834Z").ok());
}

// ---------------------------------------------------------------------------------------------------------------
// Golden: DLIO's own result files (../shared/testdata/dlio-outputs). From DLIO's per-step timings our formulas must
// give DLIO's per-block AU and throughput, and through the one aggregation path DLIO's summary metrics.

json ReadJson(const std::filesystem::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  return json::parse(in);
}

int64_t IntOr(const YAML::Node& n, int64_t def) { return n ? n.as<int64_t>() : def; }

struct DlioRun {
  std::string name;
  WorkloadSpec spec;  // the parts the metrics use
  int world = 1;
  json summary;
  std::vector<json> output, stats;
};

std::vector<DlioRun> DlioRuns() {
  std::vector<DlioRun> runs;
  const std::filesystem::path root = std::filesystem::path(TestData()) / "dlio-outputs";
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    if (!std::filesystem::exists(e.path() / "summary.json")) continue;
    DlioRun run;
    run.name = e.path().filename().string();
    // DLIO's workload files use features this version rejects (checkpoints, npy): read the few keys directly.
    const YAML::Node w = YAML::LoadFile((e.path() / "workload.yaml").string());
    const YAML::Node reader = w["data_reader"] ? w["data_reader"] : w["reader"];
    run.spec.format = "npz";  // index mode, as DLIO's pytorch loader
    run.spec.num_files_train = IntOr(w["dataset"]["num_files_train"], 8);
    run.spec.num_samples_per_file = IntOr(w["dataset"]["num_samples_per_file"], 1);
    run.spec.record_length_bytes = w["dataset"]["record_length_bytes"].as<double>();
    run.spec.batch_size = IntOr(reader["batch_size"], 1);
    run.spec.batch_size_eval = IntOr(reader["batch_size_eval"], 1);
    run.spec.num_files_eval = IntOr(w["dataset"]["num_files_eval"], 0);
    run.spec.evaluation = w["workflow"] && w["workflow"]["evaluation"] && w["workflow"]["evaluation"].as<bool>();
    if (w["output"] && w["output"]["metric"]) {
      run.spec.exclude_start_steps = IntOr(w["output"]["metric"]["exclude_start_steps"], 1);
      run.spec.exclude_end_steps = IntOr(w["output"]["metric"]["exclude_end_steps"], 0);
    }
    if (w["metric"] && w["metric"]["au"]) run.spec.au_threshold = w["metric"]["au"].as<double>();
    run.summary = ReadJson(e.path() / "summary.json");
    run.world = run.summary["num_accelerators"].get<int>();
    for (int r = 0; r < run.world; ++r) {
      run.output.push_back(ReadJson(e.path() / (std::to_string(r) + "_output.json")));
      run.stats.push_back(ReadJson(e.path() / (std::to_string(r) + "_per_epoch_stats.json")));
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

double Seconds(const json& start, const json& end) {
  return static_cast<double>(*ParseTimestamp(end.get<std::string>()) - *ParseTimestamp(start.get<std::string>())) /
         1e6;
}

double Sum(const std::vector<double>& v, size_t a, size_t b) {
  double s = 0;
  for (size_t i = a; i < std::min(b, v.size()); ++i) s += v[i];
  return s;
}

// Compares one run; `exact` derives each block's wall time from DLIO's own throughput (pins the formula),
// otherwise from the block's start/end timestamps in <rank>_per_epoch_stats.json (what DLIO's clock saw).
void CheckRun(const DlioRun& run, bool exact) {
  SCOPED_TRACE(run.name + (exact ? " (block time derived from DLIO's throughput)" : " (block time from timestamps)"));
  JobResult job;
  job.spec = run.spec;
  job.world = run.world;
  const int64_t steps = run.spec.num_files_train * run.spec.num_samples_per_file / run.spec.batch_size / run.world;
  ASSERT_EQ(*EpochPlan::Steps(TrainPlanParams(run.spec, run.world)), steps);
  const MetricWindow w = TrainWindow(run.spec, steps);
  const double block_tol = exact ? 1e-9 : 0.005;
  int blocks_checked = 0;
  for (int rank = 0; rank < run.world; ++rank) {
    const json& out = run.output[static_cast<size_t>(rank)];
    for (const auto& [epoch_key, epoch] : out.items()) {
      if (epoch_key.empty() || !std::isdigit(static_cast<unsigned char>(epoch_key[0]))) continue;
      RankEpochResult r;
      r.rank = rank;
      r.epoch = std::stoi(epoch_key);
      // Evaluation: the formula is pinned with DLIO's own wall time (n x batch_eval / its throughput); DLIO's eval
      // timestamps are not taken at its timer's instants, which is up to 3 % of a 20 ms evaluation.
      if (epoch["proc"].contains("eval") && exact) {
        BlockTimings b;
        b.proc = epoch["proc"]["eval"].get<std::vector<double>>();
        b.compute = epoch["compute"]["eval"].get<std::vector<double>>();
        b.load = epoch["load"]["eval"].get<std::vector<double>>();
        const double dlio_tp = epoch["throughput"]["eval"].get<double>();
        b.duration_s = static_cast<double>(b.compute.size()) * static_cast<double>(run.spec.batch_size_eval) / dlio_tp;
        const int64_t eval_steps = *EpochPlan::Steps(EvalPlanParams(run.spec, run.world));
        const BlockMetric em = ComputeEvalBlock(b.proc, b.compute, b.duration_s, EvalWindow(run.spec, eval_steps));
        EXPECT_LE(RelErr(V(em.au_percent), epoch["au"]["eval"].get<double>()), 1e-9)
            << "rank " << rank << " epoch " << epoch_key << " eval AU";
        RankEpochResult er;
        er.rank = rank;
        er.epoch = std::stoi(epoch_key);
        er.blocks.push_back(std::move(b));
        job.eval.push_back(std::move(er));
      }
      for (const auto& [block_key, proc_json] : epoch["proc"].items()) {
        if (block_key.rfind("block", 0) != 0) continue;
        BlockTimings b;
        b.block = std::stoi(block_key.substr(5));
        b.proc = proc_json.get<std::vector<double>>();
        b.compute = epoch["compute"][block_key].get<std::vector<double>>();
        b.load = epoch["load"][block_key].get<std::vector<double>>();
        const double dlio_au = epoch["au"][block_key].get<double>();
        const double dlio_tp = epoch["throughput"][block_key].get<double>();
        const auto n = static_cast<int64_t>(b.compute.size());
        const json& st = run.stats[static_cast<size_t>(rank)][epoch_key][block_key];
        b.duration_s = Seconds(st["start"], st["end"]);
        if (exact && n != 2) {
          const double total = static_cast<double>(n - 2) * static_cast<double>(run.spec.batch_size) / dlio_tp;
          const auto start = static_cast<size_t>(w.exclude_start);
          const auto end = static_cast<size_t>(std::max<int64_t>(0, w.epoch_steps - w.exclude_end));
          b.duration_s = total + Sum(b.proc, 0, start) + Sum(b.proc, end, b.proc.size());
        }
        const BlockMetric m = ComputeTrainBlock(b.proc, b.compute, b.duration_s, w);
        // An empty block has weight 0 (DLIO writes a negative throughput for it); with 2 steps DLIO's throughput is
        // 0 and cannot give the block time back.
        if (n > 0 && !(exact && n == 2)) {
          EXPECT_LE(RelErr(V(m.au_percent), dlio_au), block_tol)
              << "rank " << rank << " epoch " << epoch_key << " " << block_key << ": AU " << V(m.au_percent) << " vs "
              << dlio_au;
          EXPECT_LE(RelErr(V(m.samples_per_second), dlio_tp), block_tol)
              << "rank " << rank << " epoch " << epoch_key << " " << block_key << ": samples/s "
              << V(m.samples_per_second) << " vs " << dlio_tp;
          ++blocks_checked;
        }
        r.blocks.push_back(std::move(b));
      }
      job.train.push_back(std::move(r));
    }
  }
  EXPECT_GE(blocks_checked, 2);

  const FleetSummary s = Aggregator(job).Summarize();
  const json& m = run.summary["metric"];
  const double tol = exact ? 1e-9 : 0.005;
  const std::vector<double> au = m["train_au_percentage"].get<std::vector<double>>();
  const std::vector<double> tp = m["train_throughput_samples_per_second"].get<std::vector<double>>();
  ASSERT_EQ(s.epochs.size(), au.size());
  EXPECT_EQ(run.summary["epochs"].get<size_t>(), s.epochs.size());
  for (size_t i = 0; i < au.size(); ++i) {
    EXPECT_LE(RelErr(V(s.epochs[i].au_percent), au[i]), tol) << "epoch " << i + 1;
    EXPECT_LE(RelErr(V(s.epochs[i].samples_per_second), tp[i]), tol) << "epoch " << i + 1;
  }
  EXPECT_LE(RelErr(V(s.au_mean), m["train_au_mean_percentage"].get<double>()), tol);
  EXPECT_LE(RelErr(V(s.throughput_mean), m["train_throughput_mean_samples_per_second"].get<double>()), tol);
  EXPECT_LE(RelErr(V(s.io_mean_mib), m["train_io_mean_MB_per_second"].get<double>()), tol);
  // A stdev over few epochs magnifies per-epoch error; it is bounded by the per-epoch error of the mean's size.
  auto stdev_ok = [&](double got, double want, double mean) {
    return RelErr(got, want) <= tol || std::fabs(got - want) <= 1e-6 || (!exact && std::fabs(got - want) <= tol * mean);
  };
  EXPECT_TRUE(stdev_ok(V(s.au_stdev), m["train_au_stdev_percentage"].get<double>(), V(s.au_mean)))
      << V(s.au_stdev) << " vs " << m["train_au_stdev_percentage"];
  EXPECT_TRUE(stdev_ok(V(s.throughput_stdev), m["train_throughput_stdev_samples_per_second"].get<double>(),
                       V(s.throughput_mean)))
      << V(s.throughput_stdev) << " vs " << m["train_throughput_stdev_samples_per_second"];
  EXPECT_TRUE(stdev_ok(V(s.io_stdev_mib), m["train_io_stdev_MB_per_second"].get<double>(), V(s.io_mean_mib)))
      << V(s.io_stdev_mib) << " vs " << m["train_io_stdev_MB_per_second"];
  EXPECT_EQ(s.au_meets_expectation ? "success" : "fail", m["train_au_meet_expectation"].get<std::string>());
  if (exact && m.contains("eval_au_percentage")) {
    // DLIO's eval lists are an MPI allreduce of Python lists, i.e. the ranks' lists concatenated (rank-major), with
    // AU divided by the world size (statscounter.py end_run). Our per-rank formula must reproduce every entry...
    const std::vector<double> eau = m["eval_au_percentage"].get<std::vector<double>>();
    const std::vector<double> etp = m["eval_throughput_samples_per_second"].get<std::vector<double>>();
    const int64_t eval_steps = *EpochPlan::Steps(EvalPlanParams(run.spec, run.world));
    const MetricWindow ew = EvalWindow(run.spec, eval_steps);
    std::vector<const RankEpochResult*> rank_major;
    for (const RankEpochResult& r : job.eval) rank_major.push_back(&r);
    std::stable_sort(rank_major.begin(), rank_major.end(), [](auto* x, auto* y) {
      return std::make_pair(x->rank, x->epoch) < std::make_pair(y->rank, y->epoch);
    });
    ASSERT_EQ(rank_major.size(), eau.size());
    for (size_t i = 0; i < eau.size(); ++i) {
      const BlockTimings& b = rank_major[i]->blocks[0];
      const BlockMetric bm = ComputeEvalBlock(b.proc, b.compute, b.duration_s, ew);
      EXPECT_LE(RelErr(V(bm.au_percent) / run.world, eau[i]), 1e-9) << "eval entry " << i;
      EXPECT_LE(RelErr(V(bm.samples_per_second), etp[i]), 1e-9) << "eval entry " << i;
    }
    // ... while our fleet figures are the corrected ones: per evaluation, AU = mean over ranks and samples/s = sum
    // over ranks, exactly as for training.
    ASSERT_EQ(s.eval.size(), eau.size() / static_cast<size_t>(run.world));
    for (size_t e = 0; e < s.eval.size(); ++e) {
      double au = 0, tp = 0;
      for (int r = 0; r < run.world; ++r) {
        au += eau[static_cast<size_t>(r) * s.eval.size() + e];  // already divided by the world size
        tp += etp[static_cast<size_t>(r) * s.eval.size() + e];
      }
      EXPECT_LE(RelErr(V(s.eval[e].au_percent), au), 1e-9) << "eval " << e;
      EXPECT_LE(RelErr(V(s.eval[e].samples_per_second), tp), 1e-9) << "eval " << e;
    }
  }
}

TEST(DlioGolden, BlocksAndSummaryFromTimestamps) {
  const std::vector<DlioRun> runs = DlioRuns();
  ASSERT_GE(runs.size(), 2u) << "no DLIO runs under " << TestData() << "/dlio-outputs (set DLIO_TESTDATA)";
  for (const DlioRun& run : runs) CheckRun(run, false);
}

TEST(DlioGolden, FormulaIsExactWithDliosOwnBlockTime) {
  for (const DlioRun& run : DlioRuns()) CheckRun(run, true);
}

// Our files carry DLIO's key names: every key DLIO wrote (bar host details we do not collect and the eval and
// checkpoint keys out of scope) is in ours.
TEST(DlioGolden, OurFilesUseDliosKeys) {
  for (const DlioRun& run : DlioRuns()) {
    JobResult job;
    job.spec = run.spec;
    job.world = 1;
    job.agents = {{"a0", "vm", 23.5, 2, 0, 1, "", "", "", {}, {}, "", {}, "", "", "", {}}};
    RankEpochResult r;
    r.blocks = {Block(4, 0.001, 0.01, 1'800'000'000'000'000)};
    job.train = {r};
    const json ours = Aggregator(job).SummaryJson();
    for (const auto& [k, v] : run.summary.items()) {
      if (k == "host_processor_name" || k == "host_cpuinfo" || k == "host_meminfo") continue;
      EXPECT_TRUE(ours.contains(k)) << run.name << ": summary." << k;
    }
    for (const auto& [k, v] : run.summary["metric"].items()) {
      if (k.rfind("train_", 0) != 0) continue;
      EXPECT_TRUE(ours["metric"].contains(k)) << run.name << ": metric." << k;
    }
    const json out = Aggregator(job).RankOutputJson(0);
    for (const auto& [k, v] : run.output[0]["1"].items()) {
      if (k == "host_meminfo") continue;
      EXPECT_TRUE(out["1"].contains(k)) << run.name << ": output.1." << k;
    }
    const json stats = Aggregator(job).RankPerEpochStatsJson(0);
    for (const char* k : {"start", "end", "duration", "block1"}) EXPECT_TRUE(stats["1"].contains(k)) << k;
  }
}

// Two ranks, 1 GiB each per checkpoint. Save 1: rank 0 takes 1 s, rank 1 takes 4 s; save 2: 2 s and 2 s;
// load 1: 0.5 s and 1 s. DLIO reports rank 0: 2 GiB / 1 s = 2 GiB/s and 2 GiB / 2 s = 1 GiB/s; MLPerf takes the
// slowest rank: 2 GiB / 4 s = 0.5 GiB/s and 1 GiB/s.
TEST(CheckpointMetrics, Rank0AsDlioAndSlowestRankAsMlperf) {
  const uint64_t gib = uint64_t{1} << 30;
  auto r = [&](int rank, int index, bool load, double d) {
    RankCheckpointResult x;
    x.rank = rank;
    x.index = index;
    x.load = load;
    x.duration_s = d;
    x.bytes = gib;
    x.start_unix_us = 1000 * rank;
    return x;
  };
  const std::vector<RankCheckpointResult> in = {r(1, 1, false, 4), r(0, 1, false, 1), r(0, 2, false, 2),
                                                r(1, 2, false, 2), r(1, 1, true, 1),  r(0, 1, true, 0.5)};
  const std::vector<CheckpointMetric> m = ComputeCheckpoints(in);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_FALSE(m[0].load);
  EXPECT_EQ(m[0].index, 1);
  EXPECT_EQ(m[0].bytes, 2 * gib);
  EXPECT_EQ(m[0].start_unix_us, 0);
  EXPECT_DOUBLE_EQ(m[0].rank0_duration_s, 1);
  EXPECT_DOUBLE_EQ(m[0].rank0_gib_per_second, 2);
  EXPECT_DOUBLE_EQ(m[0].max_duration_s, 4);
  EXPECT_DOUBLE_EQ(m[0].min_gib_per_second, 0.5);
  EXPECT_TRUE(m[2].load);
  EXPECT_DOUBLE_EQ(m[2].min_gib_per_second, 2);

  json metric = json::object();
  AddCheckpointSummary(m, &metric);
  EXPECT_DOUBLE_EQ(metric["save_checkpoint_io_mean_GB_per_second"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(metric["save_checkpoint_io_stdev_GB_per_second"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(metric["save_checkpoint_duration_mean_seconds"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(metric["save_checkpoint_mlperf_duration_mean_seconds"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(metric["save_checkpoint_mlperf_io_mean_GB_per_second"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(metric["load_checkpoint_io_mean_GB_per_second"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(metric["load_checkpoint_mlperf_io_mean_GB_per_second"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(metric["checkpoint_size_GB"].get<double>(), 2);

  json none = json::object();
  AddCheckpointSummary({}, &none);
  EXPECT_TRUE(none.empty());

  // per_epoch_stats: every rank lists its own timing, throughput = fleet GiB / its own duration (DLIO's).
  JobResult job;
  job.world = 2;
  job.checkpoints = in;
  job.checkpoints[0].epoch = 2;  // rank 1's save 1 listed under epoch 2
  const Aggregator agg(job);
  const json r1 = agg.RankPerEpochStatsJson(1);
  ASSERT_TRUE(r1.contains("2")) << r1.dump();
  EXPECT_DOUBLE_EQ(r1["2"]["save_ckpt1"]["duration"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(r1["2"]["save_ckpt1"]["throughput"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(r1["1"]["load_ckpt1"]["throughput"].get<double>(), 2);
  const json r0 = agg.RankPerEpochStatsJson(0);
  EXPECT_DOUBLE_EQ(r0["1"]["save_ckpt1"]["throughput"].get<double>(), 2);
  EXPECT_TRUE(r0["1"]["save_ckpt1"].contains("start"));
  EXPECT_FALSE(r0.contains("2"));
  const json summary = agg.SummaryJson();
  EXPECT_DOUBLE_EQ(summary["metric"]["checkpoint_size_GB"].get<double>(), 2);
}

}  // namespace
}  // namespace dlio
