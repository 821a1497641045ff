#include "client/scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;

MemberRun ARun(std::optional<double> au, double read_p99, VerdictStatus v, json checkpoints = json::array()) {
  MemberRun r;
  r.outcome.ok = true;
  r.outcome.au = au;
  r.outcome.samples_per_second = au ? *au * 2 : 0;
  r.outcome.mb_per_second = 10;
  r.outcome.verdict.status = v;
  r.outcome.summary = {{"dlio_ext",
                        {{"train_read_latency_seconds", {{"p50", read_p99 / 2}, {"p99", read_p99}}},
                         {"generate", {{"write_latency_seconds", {{"p50", 0.001}, {"p99", nullptr}}}}},
                         {"checkpoints", checkpoints}}}};
  return r;
}

TEST(ScenarioFigures, MeanOverRunsWorstVerdictUntilStoppedRunsLeftOut) {
  const json saves = json::array({{{"operation", "save"}, {"max_duration_seconds", 2.0}},
                                  {{"operation", "save"}, {"max_duration_seconds", 4.0}},
                                  {{"operation", "load"}, {"max_duration_seconds", 1.0}}});
  std::vector<MemberRun> runs = {ARun(80, 0.010, VerdictStatus::kFail, saves), ARun(90, 0.030, VerdictStatus::kPass)};
  MemberRun stopped = ARun(10, 9, VerdictStatus::kIncomplete);
  stopped.stopped_by_until = true;
  runs.push_back(stopped);
  const json f = FiguresOf(runs);
  EXPECT_DOUBLE_EQ(f["au_percentage"].get<double>(), 85);
  EXPECT_DOUBLE_EQ(f["samples_per_second"].get<double>(), 170);
  EXPECT_DOUBLE_EQ(f["read_latency_p99_seconds"].get<double>(), 0.020);
  EXPECT_DOUBLE_EQ(f["read_latency_p50_seconds"].get<double>(), 0.010);
  EXPECT_DOUBLE_EQ(f["write_latency_p50_seconds"].get<double>(), 0.001);
  EXPECT_TRUE(f["write_latency_p99_seconds"].is_null());  // unmeasured in every run
  EXPECT_DOUBLE_EQ(f["checkpoint_write_seconds"].get<double>(), 3);  // the only run with saves
  EXPECT_DOUBLE_EQ(f["checkpoint_read_seconds"].get<double>(), 1);
  EXPECT_EQ(f["verdict"], "FAIL");
  MemberRun failed;
  failed.outcome.ok = false;
  EXPECT_EQ(FiguresOf({ARun(95, 0.01, VerdictStatus::kPass), failed})["verdict"], "INCOMPLETE");
  EXPECT_TRUE(FiguresOf({})["verdict"].is_null());
}

TEST(ScenarioFigures, DeltaDirectionFollowsWhichWayIsBetter) {
  const json alone = {{"au_percentage", 90.0}, {"samples_per_second", 100.0}, {"mb_per_second", 50.0},
                      {"read_latency_p99_seconds", 0.010}, {"read_latency_p50_seconds", 0.0},
                      {"checkpoint_write_seconds", 2.0}};
  const json together = {{"au_percentage", 45.0}, {"samples_per_second", 100.5}, {"mb_per_second", 60.0},
                         {"read_latency_p99_seconds", 0.020}, {"read_latency_p50_seconds", 0.001},
                         {"checkpoint_write_seconds", 1.0}};
  const json rows = InterferenceRows(alone, together);
  ASSERT_EQ(rows.size(), ScenarioFigures().size());
  std::map<std::string, json> by;
  for (const json& r : rows) by[r["figure"].get<std::string>()] = r;
  EXPECT_DOUBLE_EQ(by["au_percentage"]["delta_percent"].get<double>(), -50);
  EXPECT_EQ(by["au_percentage"]["direction"], "worse");
  EXPECT_EQ(by["samples_per_second"]["direction"], "same");  // +0.5 %: within noise
  EXPECT_EQ(by["mb_per_second"]["direction"], "better");
  EXPECT_DOUBLE_EQ(by["read_latency_p99_seconds"]["delta_percent"].get<double>(), 100);
  EXPECT_EQ(by["read_latency_p99_seconds"]["direction"], "worse");  // lower is better
  EXPECT_EQ(by["checkpoint_write_seconds"]["direction"], "better");
  EXPECT_TRUE(by["read_latency_p50_seconds"]["direction"].is_null());  // alone 0: no ratio
  EXPECT_TRUE(by["checkpoint_read_seconds"]["delta_percent"].is_null());  // unmeasured on both sides
}

// A scenario file beside a workload file, loaded as `run` would: the relative path from the scenario's folder, an
// inline workload, the member's overrides before the command's.
class ScenarioLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("scenario_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "w");
    std::ofstream(dir_ / "w/train.yaml") << kWorkload;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& text) {
    std::ofstream(dir_ / "s.yaml") << text;
    return (dir_ / "s.yaml").string();
  }
  static constexpr const char* kWorkload =
      "model: {name: t}\nworkflow: {generate_data: True, train: True}\ndataset: {data_folder: data/t, format: npz, "
      "num_files_train: 4, num_samples_per_file: 1, record_length_bytes: 4096}\nreader: {batch_size: 1}\n"
      "train: {epochs: 1, computation_time: 0.01}\n";
  fs::path dir_;
};

TEST_F(ScenarioLoad, ResolvesWorkloadsBesideTheFileAndInline) {
  SubmitOptions opt;
  opt.job_path = Write(absl::StrCat(
      "scenario:\n  members:\n    - {name: a, workload: w/train.yaml, overrides: [train.epochs=3], placement: "
      "{agents: 2, accelerators: 4}}\n    - name: b\n      placement: {agents: 1}\n      inline:\n",
      "        model: {name: inl}\n        workflow: {generate_data: True, train: False}\n"
      "        dataset: {data_folder: data/i, format: npz, num_files_train: 2, num_samples_per_file: 1, "
      "record_length_bytes: 4096}\n"));
  opt.overrides = {"dataset.num_files_train=8"};
  absl::StatusOr<std::optional<LoadedScenario>> s = LoadScenarioSubmission(opt);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->has_value());
  const LoadedScenario& sc = **s;
  EXPECT_EQ(sc.spec.name, "s");  // the file's stem when the scenario has no name
  ASSERT_EQ(sc.jobs.size(), 2u);
  EXPECT_EQ(sc.jobs[0].path(), (dir_ / "w/train.yaml").string());
  EXPECT_EQ(sc.jobs[0].spec().epochs, 3);
  EXPECT_EQ(sc.jobs[0].spec().num_files_train, 8);  // the command's override applies to every member
  EXPECT_EQ(sc.jobs[1].spec().model_name, "inl");
  EXPECT_FALSE(sc.jobs[1].spec().train);
  EXPECT_EQ(sc.agents_needed, 3);
  EXPECT_EQ(sc.accelerators_needed, 4);
  int agents = 1, accelerators = 8;
  sc.GrowLocalFleet(&agents, &accelerators);
  EXPECT_EQ(agents, 3);
  EXPECT_EQ(accelerators, 8);
}

TEST_F(ScenarioLoad, AWorkloadIsNoScenarioAndBadMembersAreNamed) {
  SubmitOptions opt;
  opt.job_path = (dir_ / "w/train.yaml").string();
  absl::StatusOr<std::optional<LoadedScenario>> w = LoadScenarioSubmission(opt);
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->has_value());
  absl::StatusOr<std::optional<LoadedScenario>> job = LoadScenarioCommand(opt, false);  // a job: run as one
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->has_value());
  opt.job_path = Write("scenario:\n  members:\n    - {name: a, workload: w/train.yaml, overrides: [train.epochs=x]}\n");
  EXPECT_THAT(std::string(LoadScenarioSubmission(opt).status().message()),
              HasSubstr("s.yaml: scenario member 'a': "));
  opt.job_path = Write("scenario:\n  members:\n    - {name: a, workload: no_such_workload_zz}\n");
  EXPECT_THAT(std::string(LoadScenarioSubmission(opt).status().message()),
              HasSubstr("scenario member 'a': no_such_workload_zz"));
  opt.job_path = Write("scenario:\n  members:\n    - {name: a, workload: w/train.yaml}\n");
  EXPECT_THAT(std::string(LoadScenarioCommand(opt, /*one_job_mode=*/true).status().message()),
              HasSubstr("a scenario runs on its own, not with --mlperf"));
  opt.detach = true;
  EXPECT_THAT(std::string(LoadScenarioSubmission(opt).status().message()), HasSubstr("--detach: a scenario"));
}

// The shipped examples (configs/scenarios/) load: their members' shipped workloads resolve and their overrides are
// keys the loader knows.
TEST(ScenarioExamples, EveryShippedScenarioLoads) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(DLIO_SOURCE_DIR) / "configs/scenarios")) {
    SubmitOptions opt;
    opt.job_path = e.path().string();
    absl::StatusOr<std::optional<LoadedScenario>> s = LoadScenarioSubmission(opt);
    ASSERT_TRUE(s.ok()) << opt.job_path << ": " << s.status();
    ASSERT_TRUE(s->has_value()) << opt.job_path;
    EXPECT_EQ((*s)->spec.members.size(), 2u) << opt.job_path;
    EXPECT_EQ((*s)->agents_needed, 2) << opt.job_path;  // one agent per member: --local-agents 2
    ++n;
  }
  EXPECT_EQ(n, 3);
}

TEST(ScenarioTable, AloneTogetherDeltaDirectionAndVerdicts) {
  LoadedScenario s;
  absl::StatusOr<ScenarioSpec> spec = ParseScenario("scenario:\n  members:\n    - {name: t, workload: w}\n", "x");
  ASSERT_TRUE(spec.ok());
  s.spec = *spec;
  absl::StatusOr<LoadedJob> job = LoadedJob::FromText(
      "w", "model: {name: t}\nworkflow: {train: True}\ndataset: {format: npz, num_files_train: 1}\n", {});
  ASSERT_TRUE(job.ok()) << job.status();
  s.jobs.push_back(*job);
  const json doc = ScenarioJson(s, true, 0, {{ARun(90, 0.01, VerdictStatus::kPass)}},
                                {{ARun(45, 0.02, VerdictStatus::kFail)}});
  EXPECT_EQ(doc["members"][0]["interference"][0]["direction"], "worse");
  EXPECT_EQ(doc["members"][0]["together"]["runs"][0]["verdict"], "FAIL");
  const std::string t = InterferenceTable(doc);
  EXPECT_THAT(t, HasSubstr("t (1 run together)"));
  EXPECT_THAT(t, ::testing::ContainsRegex("AU % +90.00 +45.00 +-50.00 worse"));
  EXPECT_THAT(t, ::testing::ContainsRegex("read p99 ms +10.00 +20.00 +100.00 worse"));
  EXPECT_THAT(t, HasSubstr("verdict: alone PASS, together FAIL"));
  EXPECT_THAT(t, ::testing::Not(HasSubstr("ckpt write")));  // never measured: no row
  const json solo = ScenarioJson(s, false, 0, {}, {{ARun(45, 0.02, VerdictStatus::kFail)}});
  EXPECT_TRUE(solo["members"][0]["interference"].is_null());
  EXPECT_THAT(InterferenceTable(solo), ::testing::ContainsRegex("AU % +45.00"));
}

}  // namespace
}  // namespace dlio
