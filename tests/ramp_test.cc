// Process tests of `run --ramp` (client/ramp.h, docs/results.md): a scaled-down ramp over 1, 2 and 4 accelerators
// on one machine, its table and ramp.json, the agents axis, and bad --ramp values (exit 2, one line).

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
  EXPECT_TRUE(std::regex_search(r.out, std::regex("accelerators +AU % +samples/s +MB/s +wait % +limit +verdict")))
      << r.out;
  for (const char* n : {"1", "2", "4"}) {
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string("\n") + n + "( <- knee)? +[0-9.]+ +[0-9.]+ +[0-9.]+")))
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
