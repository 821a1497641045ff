// MLPerf mode over real processes (docs/mlperf.md): the 5-run mode with its verdicts and results layout, the
// per-agent read-bandwidth cap, the accelerator search, provenance in summary.json. Timed: every test runs alone
// (RUN_SERIAL in tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

TEST(MlperfMode, FiveRunsPrintTheMeanAndTheReplicationVerdictAndWriteTheLayout) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // 16 samples over 2 agents x 1 rank, batch 2: 4 steps per rank and run; 20 ms of compute per step.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 16, 1, 4096, 2, 0.02, 1, true));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--mlperf", "--local-agents", "2",
                                "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results",
                                "--mlperf-results-dir", dir.str() + "/mlperf", "--set", "reader.read_threads=1"},
                               seconds(240), dir.str());
  // 0 when every verdict passed, 5 when the AU or the replication verdict failed (a loaded machine decides which);
  // the status must match what was printed.
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 5) << r.exit_code << r.out << r.err;
  EXPECT_EQ(r.exit_code == 0, r.out.find("verdict: MLPerf test: AU PASS, replication PASS") != std::string::npos)
      << r.out;
  std::cout << r.out;
  EXPECT_NE(r.out.find("warmup   seed 123: AU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run-5    seed 128: AU"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("mean of 5 runs: AU [0-9.]+ %, throughput [0-9.]+ samples/s")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("replication \\(every run within 5 % of the mean\\): (PASS|FAIL) \\(max deviation")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("AU threshold 90 %: (PASS|FAIL)"))) << r.out;

  // Layout: <dir>/training/<model>/run/<datetime>/{warmup,run-1..5}/ + mlperf_result.json.
  const fs::path model_dir = dir.path() / "mlperf" / "training" / "test" / "run";
  ASSERT_TRUE(fs::is_directory(model_dir));
  fs::path root;
  for (const auto& e : fs::directory_iterator(model_dir)) root = e.path();
  const nlohmann::json res = LoadJson((root / "mlperf_result.json").string());
  ASSERT_EQ(res["runs"].size(), 6u);
  EXPECT_GT(res["mean_throughput_samples_per_second"].get<double>(), 0);
  std::set<std::string> jobs;
  for (const std::string run : {"warmup", "run-1", "run-2", "run-3", "run-4", "run-5"}) {
    const fs::path d = root / run;
    ASSERT_TRUE(fs::exists(d / "summary.json")) << d;
    EXPECT_TRUE(fs::exists(d / "dlio_config" / "config.yaml")) << d;
    bool meta = false;
    for (const auto& e : fs::directory_iterator(d)) meta |= e.path().string().find("_metadata.json") != std::string::npos;
    EXPECT_TRUE(meta) << d;
    const nlohmann::json s = LoadJson((d / "summary.json").string());
    jobs.insert(s["dlio_ext"]["job_id"].get<std::string>());
  }
  EXPECT_EQ(jobs.size(), 6u);
  // The seed changed per run, and the normalised job says so.
  EXPECT_NE(ReadFile((root / "run-3" / "dlio_config" / "config.yaml").string()).find("seed: 126"), std::string::npos);

  // Provenance in summary.json.
  const nlohmann::json p = LoadJson((root / "run-1" / "summary.json").string())["dlio_ext"]["provenance"];
  EXPECT_FALSE(p["version"].get<std::string>().empty());
  EXPECT_FALSE(p["git_commit"].get<std::string>().empty());
  EXPECT_EQ(p["job_sha256"].get<std::string>().size(), 64u);
  EXPECT_NE(p["job_yaml"].get<std::string>().find("seed: 124"), std::string::npos);
  ASSERT_EQ(p["agents"].size(), 2u);
  EXPECT_NE(p["agents"][0]["kernel"].get<std::string>().find("Linux"), std::string::npos);
  EXPECT_FALSE(p["agents"][0]["cpu_model"].get<std::string>().empty());
  EXPECT_FALSE(p["agents"][0]["data_root_fs"].get<std::string>().empty());
  EXPECT_GT(p["agents"][0]["memory_bytes"].get<uint64_t>(), 0u);
}

TEST(MlperfMode, ReadBandwidthCapHoldsTheAgentsReadRate) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // 300 npz files of ~64 KiB, no compute: uncapped this reads at hundreds of MB/s; capped at 10 MB/s it takes ~2 s.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 300, 1, 65536, 2, 0, 1, true,
                                              "dlio_ext:\n  read_bandwidth_limit: 10MB/s\n"));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "1", "--accelerators",
                                "2", "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results",
                                "--output", dir.str() + "/out"},
                               seconds(120), dir.str());
  // No compute time: AU 0 % against the default 90 % target, the job ran and missed it.
  ASSERT_EQ(r.exit_code, 5) << r.out << r.err;
  const nlohmann::json s = LoadJson(dir.str() + "/out/summary.json");
  const double mbps = s["metric"]["train_io_actual_mean_MB_per_second"].get<double>();
  std::cout << "capped at 10 MB/s, measured " << mbps << " MB/s\n";
  EXPECT_GT(mbps, 9.0);
  EXPECT_LT(mbps, 11.0);
}

TEST(MlperfMode, FindMaxAcceleratorsListsEveryTrialAndReportsAMaximumBetweenTwoAndEight) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // Per accelerator: batch 2 x ~65.8 KB every 50 ms = ~2.6 MB/s. The agent's cap of 11.3 MB/s feeds ~4.3 of them:
  // 2 accelerators keep AU near 100 %, 8 get about 54 %. 15 steps per rank per trial (total_training_steps).
  WriteFile(dir.str() + "/job.yaml",
            Workload("npz", 260, 1, 65536, 2, 0.05, 1, true,
                     "  total_training_steps: 15\ndlio_ext:\n  read_bandwidth_limit: 11300000\n"));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--find-max-accelerators",
                                "--max-accelerators", "8", "--local-agents", "1", "--data-root",
                                dir.str() + "/root", "--results-dir", dir.str() + "/results"},
                               seconds(240), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("trial [0-9]+: 2 accelerators per agent: AU [0-9.]+ %, [0-9.]+ "
                                                  "samples/s: pass")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("trial [0-9]+: 8 accelerators per agent: AU [0-9.]+ %, [0-9.]+ "
                                                  "samples/s: fail")))
      << r.out;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("maximum accelerators per agent with AU >= 90 %: ([0-9]+)")))
      << r.out;
  const int max = std::stoi(m[1]);
  EXPECT_GE(max, 2);
  EXPECT_LT(max, 8);
  // Exponential 1, 2, 4, 8 then a binary search between the last pass and 8: at least 5 trials, each listed.
  const std::regex trial_line("\ntrial [0-9]+:");
  const auto trials =
      std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), trial_line), std::sregex_iterator());
  EXPECT_GE(trials, 5);
}

}  // namespace
}  // namespace dlio::testing
