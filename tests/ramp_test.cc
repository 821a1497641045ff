// Process tests of `run --ramp` (client/ramp.h, docs/results.md): a scaled-down ramp over 1, 2 and 4 accelerators
// on one machine, its table and ramp.json, the agents axis, bad --ramp values (exit 2, one line), and a scaled-down
// unet3d whose ramp knee agrees with --find-max-accelerators (whose probes land in ramp.json's form).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

// Per accelerator: batch 2 x ~65.8 KB every 50 ms = ~2.6 MB/s, 15 steps per rank: 4 accelerators need ~10.5 MB/s,
// which two cores give easily, so the demand (samples/s, MB/s) grows with the accelerators.
std::string RampJob() { return Workload("npz", 260, 1, 65536, 2, 0.05, 1, true, "  total_training_steps: 15\n"); }

TEST(Ramp, AcceleratorsOneTwoFourPrintsTheCurveAndWritesRampJson) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  WriteFile(dir.str() + "/job.yaml", RampJob());
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--ramp", "accelerators=1,2,4",
                                "--data-root", dir.str() + "/root", "--results-dir", dir.str() + "/results",
                                "--output", dir.str() + "/ramp"},
                               seconds(180), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("accelerators +AU % +samples/s +MB/s +wait % +wait p99 ms +limit +verdict")))
      << r.out;
  for (const char* n : {"1", "2", "4"}) {
    EXPECT_TRUE(std::regex_search(
        r.out, std::regex(std::string("\n") + n + "( <- knee)? +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ ")))
        << n << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("knee: "), std::string::npos) << r.out;
  const nlohmann::json ramp = LoadJson(dir.str() + "/ramp/ramp.json");
  EXPECT_EQ(ramp["axis"], "accelerators");
  ASSERT_EQ(ramp["points"].size(), 3u);
  double last_sps = 0, last_mbps = 0;
  for (const nlohmann::json& p : ramp["points"]) {
    // One job per point, its result files in its own folder beside ramp.json.
    EXPECT_TRUE(fs::exists(dir.path() / "ramp" / p["folder"].get<std::string>() / "summary.json")) << p.dump();
    EXPECT_FALSE(p["job_id"].get<std::string>().empty());
    EXPECT_TRUE(p["verdict"].is_string());
    // Monotone demand: more accelerators ask for, and on this light load get, more samples and bytes.
    EXPECT_GT(p["samples_per_second"].get<double>(), last_sps) << ramp.dump(2);
    EXPECT_GT(p["mb_per_second"].get<double>(), last_mbps) << ramp.dump(2);
    EXPECT_TRUE(p["batch_wait_p99_seconds"].is_number()) << p.dump();  // the table's "wait p99 ms"
    last_sps = p["samples_per_second"].get<double>();
    last_mbps = p["mb_per_second"].get<double>();
  }
  // The knee is the last point whose AU is at or above the target.
  std::optional<int> knee;
  for (const nlohmann::json& p : ramp["points"]) {
    if (p["au_percentage"].is_number() && p["au_percentage"].get<double>() >= 90.0) knee = p["n"].get<int>();
  }
  if (knee) {
    EXPECT_EQ(ramp["knee"], *knee);
  } else {
    EXPECT_TRUE(ramp["knee"].is_null());
  }
  // The dataset is generated once, by the first point: the others run with generate_data off.
  const std::string job2 = ReadFile((dir.path() / "ramp/accelerators-2/job.yaml").string());
  EXPECT_NE(job2.find("generate_data: false"), std::string::npos) << job2;
}

// A scaled-down unet3d: the shipped unet3d_h100 workload (npz, one sample per file, AU target 90 %) with 64 KiB
// samples, batch 2 and 50 ms of compute: each accelerator asks ~2.6 MB/s, and the agent's cap of 11.3 MB/s feeds
// about 4 of them (2 keep AU near 100 %, 8 get about half). 10 steps per rank per job.
std::vector<std::string> ScaledUnet3d() {
  std::vector<std::string> v;
  for (const char* o : {"workflow.generate_data=True", "workflow.checkpoint=False", "dataset.data_folder=data",
                        "dataset.num_files_train=260", "dataset.record_length_bytes=65536",
                        "dataset.record_length_bytes_stdev=0", "reader.batch_size=2", "reader.read_threads=2",
                        "reader.file_shuffle=off", "reader.sample_shuffle=off", "train.epochs=1",
                        "train.computation_time=0.05", "train.total_training_steps=10",
                        "dlio_ext.read_bandwidth_limit=11300000"}) {
    v.push_back("--set");
    v.push_back(o);
  }
  return v;
}

TEST(Ramp, KneeAgreesWithFindMaxAcceleratorsWithinOneStepOnAScaledDownUnet3d) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::string> ramp_argv = {Bin("dlio-coordinator"), "run", "workload=unet3d_h100", "--ramp",
                                        "accelerators=1,2,4,8", "--data-root", dir.str() + "/root", "--results-dir",
                                        dir.str() + "/results", "--output", dir.str() + "/ramp"};
  const std::vector<std::string> unet3d = ScaledUnet3d();
  ramp_argv.insert(ramp_argv.end(), unet3d.begin(), unet3d.end());
  CommandResult r = RunCommand(ramp_argv, seconds(120), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::cout << r.out;
  const nlohmann::json ramp = LoadJson(dir.str() + "/ramp/ramp.json");
  ASSERT_TRUE(ramp["knee"].is_number()) << ramp.dump(2);
  const int knee = ramp["knee"].get<int>();
  // A monotone demand curve: more accelerators ask for more samples.
  double last = 0;
  for (const nlohmann::json& p : ramp["points"]) {
    EXPECT_GT(p["samples_per_second"].get<double>(), last) << ramp.dump(2);
    last = p["samples_per_second"].get<double>();
  }

  std::vector<std::string> find_argv = {Bin("dlio-coordinator"), "run", "workload=unet3d_h100",
                                        "--find-max-accelerators", "--max-accelerators", "8", "--data-root",
                                        dir.str() + "/root", "--results-dir", dir.str() + "/results", "--output",
                                        dir.str() + "/find", "--json"};
  find_argv.insert(find_argv.end(), unet3d.begin(), unet3d.end());
  r = RunCommand(find_argv, seconds(120), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json found = nlohmann::json::parse(r.out);
  const int max = found["max_accelerators_per_agent"].get<int>();
  std::cout << "ramp knee " << knee << ", --find-max-accelerators " << max << "\n";
  // Within one step of the ramp: the ramp points next to the knee bound the maximum found.
  const std::vector<int> points = {1, 2, 4, 8};
  const size_t i = static_cast<size_t>(std::find(points.begin(), points.end(), knee) - points.begin());
  ASSERT_LT(i, points.size());
  EXPECT_GE(max, i > 0 ? points[i - 1] : 1) << ramp.dump(2) << found.dump(2);
  EXPECT_LE(max, i + 1 < points.size() ? points[i + 1] : 8) << ramp.dump(2) << found.dump(2);
  // The search's probes in ramp.json's form, for the ramp chart: in --json and in <output>/ramp.json.
  const nlohmann::json probes = LoadJson(dir.str() + "/find/ramp.json");
  EXPECT_EQ(probes, found["ramp"]);
  EXPECT_EQ(probes["find_max"], max);
  EXPECT_EQ(probes["probes"].size(), found["trials"].size());
  EXPECT_EQ(probes["probes"][0], 1);  // the search starts at 1
  int previous = 0;
  for (const nlohmann::json& p : probes["points"]) {
    EXPECT_GT(p["n"].get<int>(), previous) << probes.dump(2);  // one point per count, increasing
    previous = p["n"].get<int>();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::minutes(3));
}

TEST(Ramp, AgentsAxisRunsOneJobPerAgentCount) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  WriteFile(dir.str() + "/job.yaml", RampJob());
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--ramp", "agents=1,2", "--data-root",
                                dir.str() + "/root", "--results-dir", dir.str() + "/results", "--output",
                                dir.str() + "/ramp", "--json"},
                               seconds(180), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json ramp = nlohmann::json::parse(r.out);
  EXPECT_EQ(ramp["axis"], "agents");
  ASSERT_EQ(ramp["points"].size(), 2u);
  const nlohmann::json s2 = LoadJson(dir.str() + "/ramp/agents-2/summary.json");
  EXPECT_EQ(s2["num_accelerators"].get<int>(), 2) << s2.dump();  // two agents of one accelerator each
}

TEST(Ramp, BadValuesExitTwoWithOneLineNamingTheFlag) {
  TempDir dir;
  WriteFile(dir.str() + "/job.yaml", RampJob());
  for (const char* bad : {"accelerators=2,1", "gpus=1,2", "accelerators=0", "accelerators"}) {
    CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--ramp", bad}, seconds(30), dir.str());
    EXPECT_EQ(r.exit_code, 2) << bad << r.out << r.err;
    EXPECT_EQ(r.err.rfind("--ramp: '", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("expected accelerators=N1,N2,... or agents=N1,N2,..."), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  for (const char* other : {"--mlperf", "--find-max-accelerators", "--mlperf-datagen"}) {
    CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--ramp", "accelerators=1,2", other},
                                 seconds(30), dir.str());
    EXPECT_EQ(r.exit_code, 2) << other << r.out << r.err;
    EXPECT_EQ(r.err, "--ramp: cannot be combined with --mlperf, --mlperf-datagen or --find-max-accelerators\n")
        << other;
  }
}

}  // namespace
}  // namespace dlio::testing
