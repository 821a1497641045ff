// The answer of a run, over real processes (client/client.h, results/verdict.h, docs/results.md): every verb
// prints one verdict line and exits with the documented status, and no figure is ever negative or above 100 %,
// however few steps an epoch has. Timed (a capped and an uncapped job): the tests run alone (RUN_SERIAL).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::seconds;

// 1 MiB samples, batch 1, 50 ms of compute per step: each accelerator needs ~21 MB/s at 100 % AU.
std::string DemandingJob(int files) {
  return Workload("npz", files, 1, 1 << 20, 1, 0.05, 1, true, "metric:\n  au: 0.90\n");
}

CommandResult RunJob(const TempDir& dir, const std::string& job, std::vector<std::string> extra, int agents = 1) {
  std::vector<std::string> argv = {Bin("dlio-coordinator"), "run", job, "--local-agents", std::to_string(agents),
                                   "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunCommand(argv, seconds(180), dir.str());
}

// Every number of a JSON document is >= 0 and every AU figure <= 100 (paths name the offender).
void ExpectPossible(const json& j, const std::string& path = "") {
  if (j.is_number()) {
    EXPECT_GE(j.get<double>(), 0) << path;
    if (path.find("au") != std::string::npos && path.find("stdev") == std::string::npos &&
        path.find("threshold") == std::string::npos) {
      EXPECT_LE(j.get<double>(), 100) << path;
    }
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) ExpectPossible(v, path + "." + k);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) ExpectPossible(j[i], path + "[" + std::to_string(i) + "]");
  }
}

// The text tables hold no negative number.
void ExpectNoNegativeInText(const std::string& text) {
  static const std::regex negative(R"((^|\s)-[0-9])");
  EXPECT_FALSE(std::regex_search(text, negative)) << text;
}

TEST(Verdict, AJobHeldTo10MBpsFailsWithBothFiguresAndExits5TheSameJobUncappedPassesAndExits0) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  WriteFile(dir.str() + "/job.yaml", DemandingJob(24));
  CommandResult capped = RunJob(dir, "job.yaml", {"--set", "dlio_ext.read_bandwidth_limit=10MB"});
  std::cout << capped.out;
  EXPECT_EQ(capped.exit_code, 5) << capped.out << capped.err;
  EXPECT_TRUE(std::regex_search(capped.out, std::regex(R"(\nverdict: AU [0-9.]+ % \(min rank [0-9.]+ %, sd [0-9.]+\) < )"
                                                       R"(target 90\.0 %: FAIL\n)")))
      << capped.out;
  // The live answer: one line per epoch with its AU against the target.
  EXPECT_TRUE(std::regex_search(capped.out, std::regex(R"(epoch 1 of 1: AU [0-9.]+ % .*< target 90\.0 %)")))
      << capped.out;

  CommandResult uncapped = RunJob(dir, "job.yaml", {"--set", "workflow.generate_data=false"});
  std::cout << uncapped.out;
  EXPECT_EQ(uncapped.exit_code, 0) << uncapped.out << uncapped.err;
  EXPECT_TRUE(std::regex_search(uncapped.out, std::regex(R"(\nverdict: AU [0-9.]+ % \(min rank [0-9.]+ %, sd [0-9.]+\) >= )"
                                                         R"(target 90\.0 %: PASS\n)")))
      << uncapped.out;

  // --json carries the same verdict and status.
  CommandResult j = RunJob(dir, "job.yaml",
                        {"--json", "--set", "workflow.generate_data=false", "--set", "dlio_ext.read_bandwidth_limit=10MB"});
  EXPECT_EQ(j.exit_code, 5) << j.out << j.err;
  const json doc = json::parse(j.out);
  EXPECT_EQ(doc["verdict"]["status"], "FAIL");
  EXPECT_EQ(doc["exit_status"], 5);
  EXPECT_LT(doc["verdict"]["au_percent"].get<double>(), 90);
  EXPECT_DOUBLE_EQ(doc["verdict"]["target_percent"].get<double>(), 90);
}

// DLIO leaves the first step of each epoch out of AU and takes 2 steps off samples/s: with 1 to 4 steps per epoch
// nothing printed, written or reported is negative or above 100 %; what cannot be measured says so, before the run
// (--explain and the run's own warning) and after (n/m, null, NOT_MEASURED and exit 6).
TEST(Verdict, OneToFourStepsPerEpochNeverGiveAnImpossibleFigure) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  for (int steps = 1; steps <= 4; ++steps) {
    SCOPED_TRACE(std::to_string(steps) + " step(s) per epoch");
    const std::string job = "job" + std::to_string(steps) + ".yaml";
    // 2 agents x 1 rank, batch 1: 2 x steps files; 20 ms of compute per step keeps AU high.
    WriteFile(dir.str() + "/" + job, Workload("npz", 2 * steps, 1, 4096, 1, 0.02, 2, true, "metric:\n  au: 0.10\n"));
    const std::string folder = "dataset.data_folder=data" + std::to_string(steps);
    CommandResult explain = RunJob(dir, job, {"--explain"}, 2);
    ASSERT_EQ(explain.exit_code, 0) << explain.err;
    const bool au_measurable = steps >= 2, rate_measurable = steps >= 3;
    EXPECT_EQ(explain.out.find("warning: AU will not be measured") != std::string::npos, !au_measurable)
        << explain.out;
    EXPECT_EQ(explain.out.find("warning: samples/s will not be measured") != std::string::npos, !rate_measurable)
        << explain.out;

    const std::string out = dir.str() + "/out" + std::to_string(steps);
    CommandResult r = RunJob(dir, job, {"--output", out, "--set", folder}, 2);
    std::cout << r.out;
    EXPECT_EQ(r.exit_code, au_measurable ? 0 : 6) << r.out << r.err;
    ExpectNoNegativeInText(r.out);
    EXPECT_EQ(r.out.find("warning: job ") != std::string::npos, !rate_measurable) << r.out;
    EXPECT_NE(r.out.find(au_measurable ? ": PASS" : ": NOT_MEASURED"), std::string::npos) << r.out;
    if (!rate_measurable) {
      EXPECT_NE(r.out.find("n/m"), std::string::npos) << r.out;
    }

    const json summary = LoadJson(out + "/summary.json");
    ExpectPossible(summary["metric"], "metric");
    ExpectPossible(summary["dlio_ext"]["train_epochs"], "train_epochs");
    ExpectPossible(summary["dlio_ext"]["verdict"], "verdict");
    for (int rank = 0; rank < 2; ++rank) ExpectPossible(LoadJson(out + "/" + std::to_string(rank) + "_output.json"));
    EXPECT_EQ(summary["metric"]["train_throughput_mean_samples_per_second"].is_null(), !rate_measurable);
    EXPECT_EQ(summary["metric"]["train_au_mean_percentage"].is_null(), !au_measurable);

    CommandResult js = RunJob(dir, job, {"--json", "--set", "workflow.generate_data=false", "--set", folder}, 2);
    const json doc = json::parse(js.out, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << js.out << js.err;
    ExpectPossible(doc["epochs"], "epochs");
    ExpectPossible(doc["mean"], "mean");

    // The report of those files: its data holds no impossible figure either.
    const std::string html = dir.str() + "/report" + std::to_string(steps) + ".html";
    CommandResult rep = RunCommand({Bin("dlio-coordinator"), "report", out, "-o", html});
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    std::smatch m;
    const std::string page = ReadFile(html);
    ASSERT_TRUE(std::regex_search(page, m, std::regex(R"(id="dlio-data">([^<]*)</script>)")));
    const json data = json::parse(m[1].str());
    for (const char* k : {"summary", "epochs", "ranks"}) ExpectPossible(data[0][k], k);
  }
}

TEST(Verdict, StatusResultsAndListGiveTheVerdictAndStatusAFailedOrCancelledJobExits1) {
  TempDir dir;
  Fleet fleet(dir, 1, 1);
  WriteFile(dir.str() + "/job.yaml", DemandingJob(12));
  CommandResult sub = fleet.Client({"submit", dir.str() + "/job.yaml", "--detach", "--wait-for-agents", "30",
                                    "--set", "dlio_ext.read_bandwidth_limit=10MB"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = sub.out.substr(0, sub.out.find('\n'));
  ASSERT_TRUE(Eventually([&] { return fleet.Status(id).value("state", "") == "succeeded"; }, seconds(120)))
      << fleet.Logs();
  CommandResult status = fleet.Client({"status", id});
  EXPECT_EQ(status.exit_code, 5) << status.out << status.err;
  EXPECT_TRUE(std::regex_search(status.out, std::regex(R"(verdict: +AU [0-9.]+ % .* < target 90\.0 %: FAIL)")))
      << status.out;
  CommandResult results = fleet.Client({"results", id});
  EXPECT_EQ(results.exit_code, 5) << results.out << results.err;
  EXPECT_NE(results.out.find(": FAIL\n"), std::string::npos) << results.out;
  const json sj = fleet.Status(id);
  EXPECT_EQ(sj["verdict"]["status"], "FAIL");
  EXPECT_EQ(sj["exit_status"], 5);
  EXPECT_NE(fleet.Client({"list"}).out.find("FAIL"), std::string::npos);

  // A cancelled job: no verdict (INCOMPLETE), status exits 1.
  WriteFile(dir.str() + "/long.yaml", Workload("npz", 8, 1, 4096, 1, 2.0, 1, true));
  CommandResult long_job = fleet.Client({"submit", dir.str() + "/long.yaml", "--detach"});
  ASSERT_EQ(long_job.exit_code, 0) << long_job.err;
  const std::string long_id = long_job.out.substr(0, long_job.out.find('\n'));
  EXPECT_EQ(fleet.Client({"status", long_id}).exit_code, 0) << "queued or running: no verdict yet, exit 0";
  ASSERT_EQ(fleet.Client({"cancel", long_id}).exit_code, 0);
  CommandResult cancelled = fleet.Client({"status", long_id});
  EXPECT_EQ(cancelled.exit_code, 1) << cancelled.out;
  EXPECT_NE(cancelled.out.find("INCOMPLETE"), std::string::npos) << cancelled.out;
}

// Issue 26 item 7: train.computation_time 0 is a pure read-rate test (AU has nothing to hide I/O behind): the run
// is NOT_APPLICABLE with its read rate as the answer and exits 0, not FAIL and 5 (bench/s3_bench.py and scripts that
// ran DLIO with compute 0 stopped at their first case).
TEST(Verdict, AReadRateTestIsNotApplicableWithItsReadRateAndExits0) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 24, 1, 65536, 2, 0, 1, true, "metric:\n  au: 0.90\n"));
  CommandResult r = RunJob(dir, "job.yaml", {"--output", dir.str() + "/out"});
  std::cout << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\nverdict: no AU to judge: NOT_APPLICABLE \(read rate [0-9.]+ )"
                                                  R"(MiB/s, [0-9.]+ samples/s: train\.computation_time is 0, a )"
                                                  R"(read-rate test with no compute for I/O to hide behind)")))
      << r.out;
  const json summary = LoadJson(dir.str() + "/out/summary.json");
  EXPECT_EQ(summary["dlio_ext"]["verdict"]["status"], "NOT_APPLICABLE");
  EXPECT_EQ(summary["dlio_ext"]["verdict"]["reason"].get<std::string>().rfind("read rate ", 0), 0u);
  CommandResult j = RunJob(dir, "job.yaml", {"--json", "--set", "workflow.generate_data=false"});
  EXPECT_EQ(j.exit_code, 0) << j.out << j.err;
  const json doc = json::parse(j.out);
  EXPECT_EQ(doc["verdict"]["status"], "NOT_APPLICABLE");
  EXPECT_EQ(doc["exit_status"], 0);
}

TEST(Verdict, MlperfFailExitsFiveAndPrintsEveryVerdict) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  WriteFile(dir.str() + "/job.yaml", DemandingJob(12));
  CommandResult r = RunJob(dir, "job.yaml",
                        {"--mlperf", "--mlperf-runs", "1", "--mlperf-results-dir", dir.str() + "/mlperf", "--set",
                         "dlio_ext.read_bandwidth_limit=10MB"});
  std::cout << r.out;
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("run-1    seed 124: AU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("AU threshold 90 %: FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict: MLPerf test: AU FAIL"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dlio::testing
