#include "results/limit.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "results/host_telemetry.h"
#include "results/verdict.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using json = nlohmann::json;

// A comfortable host: 20 % busy, its NIC at 12 % of 25 Gb/s, and the storage delivering what was read.
LimitFigures Figures(double wait, double barrier) {
  LimitFigures f;
  f.timed = true;
  f.batch_wait_share = wait;
  f.barrier_share = barrier;
  f.read_p99_s = 0.038;
  f.first_epoch_read_p99_s = 0.038 / 6;
  f.host_known = true;
  f.cpu_busy_percent = 23;
  f.process_cpu_percent_of_cores = 10;
  f.nic_percent = 12;
  f.nic_speed_mbps = 25000;
  f.asked_bytes = 1ull << 30;
  f.delivered_bytes = 1ull << 30;
  f.delivered_known = true;
  return f;
}

TEST(Limit, StorageWhenRanksWaitAndTheHostIsNotTheLimit) {
  const Limit l = ClassifyLimit(Figures(0.41, 0.02));
  EXPECT_EQ(l.cls, LimitClass::kStorage);
  EXPECT_EQ(l.line,
            "storage: ranks waited 41 % of each step for data; agents' CPU 23 %, NIC 12 % of 25 Gb/s; read p99 38 ms "
            "(x6 of the first epoch)");
  EXPECT_DOUBLE_EQ(l.evidence["batch_wait_share"].get<double>(), 0.41);
}

TEST(Limit, ClientCpuWhenTheHostOrTheProcessIsBusy) {
  LimitFigures f = Figures(0.4, 0.0);
  f.cpu_busy_percent = 95;
  f.process_share_of_busy = 0.8;  // the agent is the one keeping the host busy
  EXPECT_EQ(ClassifyLimit(f).cls, LimitClass::kClientCpu);
  f.process_share_of_busy = 0.1;  // other processes keep it busy: quoted, not named
  EXPECT_EQ(ClassifyLimit(f).cls, LimitClass::kStorage);
  EXPECT_THAT(ClassifyLimit(f).line, HasSubstr("agents' CPU 95 %"));
  f.cpu_busy_percent = 50;
  f.process_cpu_percent_of_cores = 92;
  const Limit l = ClassifyLimit(f);
  EXPECT_EQ(l.cls, LimitClass::kClientCpu);
  EXPECT_THAT(l.line, StartsWith("client CPU: ranks waited 40 % of each step for data; agents' CPU 92 %"));
}

TEST(Limit, NetworkWhenAnInterfaceIsAtItsLinkSpeed) {
  LimitFigures f = Figures(0.5, 0.0);
  f.nic_percent = 93;
  f.nic_speed_mbps = 100;
  f.cpu_busy_percent = 95;  // the network rule comes first: a saturated link also costs CPU in interrupts
  const Limit l = ClassifyLimit(f);
  EXPECT_EQ(l.cls, LimitClass::kNetwork);
  EXPECT_THAT(l.line, HasSubstr("NIC 93 % of 100 Mb/s"));
}

TEST(Limit, PageCacheWhenTheStorageDeliveredLittleOfWhatWasRead) {
  LimitFigures f = Figures(0.02, 0.0);
  f.passed = true;  // a PASS served from memory is still not a storage measurement
  f.delivered_bytes = (1ull << 30) / 10;
  const Limit l = ClassifyLimit(f);
  EXPECT_EQ(l.cls, LimitClass::kPageCache);
  EXPECT_THAT(l.line, StartsWith("page cache: 90 % of the 1.07 GB read came from memory (the storage delivered "
                                 "107.4 MB): the run did not measure the storage"));
  f.asked_bytes = kPageCacheMinBytes - 1;  // too few bytes to say
  f.delivered_bytes = 0;
  EXPECT_EQ(ClassifyLimit(f).cls, LimitClass::kNone);
}

TEST(Limit, HarnessWhenTheBarrierNotTheDataDominates) {
  const Limit l = ClassifyLimit(Figures(0.01, 0.35));
  EXPECT_EQ(l.cls, LimitClass::kHarness);
  EXPECT_THAT(l.line, StartsWith("harness: ranks waited 35 % of each step at the step barrier and 1 % for data"));
}

TEST(Limit, NoneWhenTheTargetWasMetWithItsHeadroom) {
  LimitFigures f = Figures(0.03, 0.01);
  f.passed = true;
  const Limit l = ClassifyLimit(f);
  EXPECT_EQ(l.cls, LimitClass::kNone);
  EXPECT_THAT(l.line, StartsWith("none: target met; ranks waited 3 % of each step for data, barrier 1 %"));
}

TEST(Limit, UndeterminedSaysTheFiguresNeverAGuess) {
  EXPECT_EQ(ClassifyLimit(LimitFigures{}).line, "undetermined: no training step was timed");
  // Waiting, but without host telemetry storage cannot be told from the client.
  LimitFigures f = Figures(0.4, 0.0);
  f.host_known = false;
  f.delivered_known = false;
  Limit l = ClassifyLimit(f);
  EXPECT_EQ(l.cls, LimitClass::kUndetermined);
  EXPECT_THAT(l.line, HasSubstr("ranks waited 40 % of each step for data, barrier 0 %; no host telemetry"));
  // Failed, but neither waiting for data nor at the barrier (slow compute, jitter).
  l = ClassifyLimit(Figures(0.06, 0.1));
  EXPECT_EQ(l.cls, LimitClass::kUndetermined);
}

// A job of two agents (one rank each), one epoch: rank 0 waits 0.4 s of each 1 s step.
JobResult TwoAgentJob(bool with_host) {
  JobResult job;
  job.world = 2;
  job.agents = {AgentInfo{}, AgentInfo{}};
  job.agents[0].name = "a0";
  job.agents[0].ranks = 1;
  job.agents[1].name = "a1";
  job.agents[1].first_rank = 1;
  job.agents[1].ranks = 1;
  for (int rank = 0; rank < 2; ++rank) {
    RankEpochResult r;
    r.rank = rank;
    BlockTimings b;
    b.load = {5.0, 0.4, 0.4};  // the first step (the loader warming up) is left out
    b.compute = {0.5, 0.5, 0.5};
    b.proc = {5.5, 0.9, 0.9};
    b.barrier = {0.1, 0.1, 0.1};
    r.blocks = {b};
    r.io.bytes = 100 << 20;
    for (int i = 0; i < 100; ++i) r.io.latency.Record(rank == 0 ? 1'000'000 : 30'000'000);
    if (with_host) {
      HostSample s;
      s.seconds = 2;
      s.cpu_busy = rank == 0 ? 30 : 40;
      s.cores = 4;
      s.core_busy = {40, 40, 40, 40};
      s.process_cpu = 100;  // one core of four: 25 %
      s.process_read_bytes = 90 << 20;
      s.nics = {NicRate{"eth0", 1.25e8, 0, 0, 0, 10000, 10}};
      r.host.phase = s;
      r.host.series = {s};
    }
    job.train.push_back(r);
  }
  return job;
}

TEST(Limit, FiguresFromAJob) {
  LimitFigures f = LimitFiguresOf(TwoAgentJob(true), false);
  EXPECT_TRUE(f.timed);
  EXPECT_DOUBLE_EQ(f.batch_wait_share, 0.4);
  EXPECT_DOUBLE_EQ(f.barrier_share, 0.1);
  EXPECT_TRUE(f.host_known);
  EXPECT_DOUBLE_EQ(f.cpu_busy_percent, 40);
  EXPECT_DOUBLE_EQ(f.process_cpu_percent_of_cores, 25);
  EXPECT_DOUBLE_EQ(f.process_share_of_busy, 1.0 / 1.6);  // 1 core of the 1.6 busy
  // Confined to half a core by a cgroup quota, the same process uses all it may.
  JobResult confined = TwoAgentJob(true);
  confined.train[0].host.phase->cpu_limit_cores = 1.0;
  confined.train[0].host.phase->process_cpu = 95;
  EXPECT_DOUBLE_EQ(LimitFiguresOf(confined, false).process_cpu_percent_of_cores, 95);
  const Limit cl = ClassifyLimit(LimitFiguresOf(confined, false));
  EXPECT_EQ(cl.cls, LimitClass::kClientCpu);
  EXPECT_THAT(cl.line, HasSubstr("agents' CPU 95 % (of the 1 cores an agent may use)"));
  confined.train[0].host.phase->process_cpu = 104;  // a quota's burst: at most 100 %
  EXPECT_DOUBLE_EQ(LimitFiguresOf(confined, false).process_cpu_percent_of_cores, 100);
  EXPECT_DOUBLE_EQ(f.nic_percent, 10);
  EXPECT_EQ(f.asked_bytes, 200u << 20);
  EXPECT_DOUBLE_EQ(f.delivered_bytes, 180 << 20);
  ASSERT_TRUE(f.read_p99_s.has_value());
  EXPECT_GT(*f.read_p99_s, 0.02);
  EXPECT_EQ(ClassifyLimit(f).cls, LimitClass::kStorage);
  // One agent without telemetry: the host is not known.
  JobResult partial = TwoAgentJob(true);
  partial.train[1].host = HostTelemetry{};
  EXPECT_FALSE(LimitFiguresOf(partial, false).host_known);
}

TEST(Limit, BatchWaitP99IsTheNearestRankOfTheTimedStepsWaits) {
  JobResult job = TwoAgentJob(false);
  // 100 timed steps on rank 0: waits 0.01 .. 1.00 s; the first step (5 s) is left out as the AU leaves it out.
  BlockTimings& b = job.train[0].blocks[0];
  b.load = {5.0};
  b.proc = {5.5};
  b.barrier = {0.1};
  for (int i = 1; i <= 100; ++i) {
    b.load.push_back(i / 100.0);
    b.proc.push_back(1.0 + i / 100.0);
    b.barrier.push_back(0.0);
  }
  job.train[1].blocks.clear();
  const LimitFigures f = LimitFiguresOf(job, false);
  ASSERT_TRUE(f.batch_wait_p99_s.has_value());
  EXPECT_DOUBLE_EQ(*f.batch_wait_p99_s, 0.99);
  EXPECT_DOUBLE_EQ(ClassifyLimit(f).evidence["batch_wait_p99_seconds"].get<double>(), 0.99);
  EXPECT_FALSE(LimitFiguresOf(JobResult{}, false).batch_wait_p99_s.has_value());
}

TEST(Limit, EpochsThatDifferGetTheirOwnLimit) {
  JobResult job = TwoAgentJob(true);
  json epochs = json::array({{{"epoch", 1}, {"au_percentage", 50.0}}});
  AddEpochLimits(job, &epochs);
  EXPECT_FALSE(epochs[0].contains("limit"));  // one epoch: the job's limit says it
  // Epoch 2 waits for nothing: the two epochs differ, each is named.
  for (RankEpochResult r : TwoAgentJob(true).train) {
    r.epoch = 2;
    r.blocks[0].load = {0, 0, 0};
    r.blocks[0].proc = {0.5, 0.5, 0.5};
    job.train.push_back(r);
  }
  job.spec.au_threshold = 0.5;
  epochs = json::array({{{"epoch", 1}, {"au_percentage", 40.0}}, {{"epoch", 2}, {"au_percentage", 80.0}}});
  AddEpochLimits(job, &epochs);
  EXPECT_EQ(epochs[0]["limit"]["class"], "storage");
  EXPECT_EQ(epochs[1]["limit"]["class"], "none");
}

TEST(Limit, TheVerdictCarriesTheLimitIntoItsJsonAndBack) {
  Verdict v;
  v.status = VerdictStatus::kFail;
  v.au_percent = 60;
  AddLimit(TwoAgentJob(true), &v);
  EXPECT_EQ(v.limit_class, "storage");
  EXPECT_THAT(LimitLine(v), StartsWith("limit: storage: ranks waited 40 % of each step for data"));
  const json j = VerdictJson(v);
  EXPECT_EQ(j["limit"]["class"], "storage");
  const Verdict back = VerdictFromJson(j);
  EXPECT_EQ(back.limit_line, v.limit_line);
  EXPECT_EQ(back.limit_evidence, v.limit_evidence);
  Verdict none;
  AddLimit(JobResult{}, &none);  // no training: not classified
  EXPECT_TRUE(LimitLine(none).empty());
  EXPECT_FALSE(VerdictJson(none).contains("limit"));
}

TEST(HostTelemetry, SampleJsonRoundTripsAndTheWireFormToo) {
  HostSample s;
  s.unix_ms = 1700000000123;
  s.seconds = 10;
  s.cpu_user = 12.5;
  s.cpu_busy = 20;
  s.core_busy = {10, 30};
  s.cores = 2;
  s.process_cpu = 7;
  s.mem = MemCounters{1000, 800, 300, 5};
  s.disks = {DiskRate{"vda", 1e6, 2e6, 10, 20, 3, 45}};
  s.nics = {NicRate{"eth0", 5, 6, 7, 8, -1, -1}};
  s.process_rchar = 99;
  s.process_read_bytes = 42;
  const json j = HostSampleJson(s);
  EXPECT_TRUE(j["nics"][0]["speed_mbps"].is_null());
  absl::StatusOr<HostSample> back = HostSampleFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(HostSampleJson(*back), j);
  HostTelemetry t;
  t.series = {s, s};
  t.phase = s;
  absl::StatusOr<HostTelemetry> wire = ParseHostTelemetry(HostTelemetryText(t));
  ASSERT_TRUE(wire.ok()) << wire.status();
  EXPECT_EQ(wire->series.size(), 2u);
  EXPECT_TRUE(wire->phase.has_value());
  EXPECT_TRUE(ParseHostTelemetry("")->empty());
  EXPECT_FALSE(ParseHostTelemetry("[1]").ok());
}

TEST(HostTelemetry, SummaryWeighsPhasesByTheirLength) {
  HostSample a, b;
  a.seconds = 1;
  a.cpu_busy = 90;
  b.seconds = 3;
  b.cpu_busy = 10;
  a.nics = {NicRate{"eth0", 1e6, 0, 0, 0, 1000, 0.8}};
  b.nics = {NicRate{"eth0", 2e6, 0, 0, 0, 1000, 1.6}};
  const std::optional<HostSummary> h = SummarizeHost({a, b});
  ASSERT_TRUE(h.has_value());
  EXPECT_DOUBLE_EQ(h->seconds, 4);
  EXPECT_DOUBLE_EQ(h->cpu_busy_mean, 30);
  EXPECT_DOUBLE_EQ(h->cpu_busy_max, 90);
  EXPECT_DOUBLE_EQ(h->nic_utilisation_max, 1.6);
  EXPECT_EQ(h->nic_busiest, "eth0");
  EXPECT_DOUBLE_EQ(h->nic_rx_bytes, 7e6);
  EXPECT_FALSE(SummarizeHost({}).has_value());
}

TEST(HostTelemetry, ResultFilesHoldTheSeriesPerAgentAndTheSummary) {
  JobResult job = TwoAgentJob(true);
  job.job_id = "j1";
  job.host_series["a0"] = {HostLine{"train-epoch-1", job.train[0].host.series[0]}};
  job.host_series["we/ird"] = {HostLine{"train-epoch-1", job.train[1].host.series[0]}};
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("limit_files_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> d = ConfinedDir::OpenRoot(dir.string());
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(WriteResultFiles(**d, job).ok());
  std::ifstream in(dir / "a0_host.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const json j = json::parse(line);
  EXPECT_EQ(j["agent"], "a0");
  EXPECT_EQ(j["phase"], "train-epoch-1");
  EXPECT_EQ(j["seconds"], 2);
  EXPECT_TRUE(std::filesystem::exists(dir / "we_ird_host.jsonl"));
  std::ifstream sin(dir / "summary.json");
  std::stringstream ss;
  ss << sin.rdbuf();
  const json summary = json::parse(ss.str());
  EXPECT_DOUBLE_EQ(summary["dlio_ext"]["host"]["a1"]["cpu_busy_mean_percent"].get<double>(), 40);
  EXPECT_EQ(summary["dlio_ext"]["verdict"]["limit"]["class"], "storage");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlio
