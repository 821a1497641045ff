// The acceptance check of the emulation (run alone: it measures timing).
// 2 agents x 2 accelerators, batch 4, computation_time 0.05 s, 20 steps per epoch, data in page cache (generated
// just before): AU >= 90 %, samples/s within 10 % of DLIO's formula for ideal steps,
// world x batch x (steps - 2) / ((steps - 1) x 0.05) = 303, and the bytes read equal the bytes of the data files.
#include <filesystem>

#include "gtest/gtest.h"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;

TEST(Emulation, AuAndThroughputMatchTheIdealStepsAndBytesAreReal) {
  TempDir dir;
  const std::string job = dir.str() + "/job.yaml";
  // world 4 x batch 4 x 20 steps = 320 single-sample files; 2 epochs.
  WriteFile(job, Workload("npz", 320, 1, 16384, 4, 0.05, 2, true));
  fs::create_directories(dir.path() / "root");
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", job, "--local-agents", "2", "--accelerators", "2",
                         "--data-root", dir.str() + "/root", "--output", dir.str() + "/out"},
                        std::chrono::seconds(180), dir.str());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json summary = LoadJson(dir.str() + "/out/summary.json");
  const nlohmann::json& m = summary["metric"];
  EXPECT_GE(m["train_au_mean_percentage"].get<double>(), 90.0) << m.dump(1);
  const double ideal = 4 * 4 * (20.0 - 2) / ((20.0 - 1) * 0.05);  // 303.2
  EXPECT_NEAR(m["train_throughput_mean_samples_per_second"].get<double>(), ideal, 0.10 * ideal) << m.dump(1);
  // npz is read whole for each sample: every file once per epoch, 2 epochs.
  const uint64_t file_bytes = DataBytes(dir.path() / "root" / "data" / "train", "npz");
  ASSERT_GT(file_bytes, 320u * 16384u);
  EXPECT_EQ(m["train_read_bytes"].get<uint64_t>(), 2 * file_bytes);
}

}  // namespace
}  // namespace dlio::testing
