// The step barrier (issue 29 item 1) with real processes: a job over 3 agents (1 accelerator each) with
// dlio_ext.barrier announce (the default) and after_compute. Both read the same bytes at the ideal steps' throughput
// and keep AU at the emulation's 90 % (data in page cache, 50 ms compute); a bad mode is refused naming the key and
// the allowed values. Run alone: it measures timing.
#include <filesystem>

#include "gtest/gtest.h"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;

struct BarrierRun {
  nlohmann::json metric;
  std::string log;
};

// world 3 x batch 4 x 20 steps = 240 single-sample files, 2 epochs of 50 ms steps, over 3 local agents.
BarrierRun RunWith(const TempDir& dir, const std::string& mode) {
  const std::string job = dir.str() + "/" + mode + ".yaml";
  WriteFile(job, Workload("npz", 240, 1, 16384, 4, 0.05, 2, true,
                          mode.empty() ? "" : "dlio_ext:\n  barrier: " + mode + "\n"));
  fs::create_directories(dir.path() / "root");
  const std::string out = dir.str() + "/out-" + (mode.empty() ? "default" : mode);
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", job, "--local-agents", "3", "--accelerators", "1",
                                "--data-root", dir.str() + "/root", "--output", out},
                               std::chrono::seconds(180), dir.str());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  if (r.exit_code != 0) return {};
  return {LoadJson(out + "/summary.json")["metric"], r.out + r.err};
}

TEST(Barrier, AnnounceAndAfterComputeRunTheSameStepsAndKeepAu) {
  TempDir dir;
  const BarrierRun announce = RunWith(dir, "");  // the default
  const BarrierRun after = RunWith(dir, "after_compute");
  ASSERT_FALSE(announce.metric.is_null());
  ASSERT_FALSE(after.metric.is_null());
  for (const BarrierRun* r : {&announce, &after}) {
    EXPECT_GE(r->metric["train_au_mean_percentage"].get<double>(), 90.0) << r->metric.dump(1);
  }
  // The same work either way: samples and bytes read, and throughput near DLIO's ideal for 20 steps of 50 ms,
  // world x batch x (steps - 2) / ((steps - 1) x 0.05) = 227.
  EXPECT_EQ(announce.metric["train_read_bytes"], after.metric["train_read_bytes"]);
  const double ideal = 3 * 4 * (20.0 - 2) / ((20.0 - 1) * 0.05);
  for (const BarrierRun* r : {&announce, &after}) {
    EXPECT_NEAR(r->metric["train_throughput_mean_samples_per_second"].get<double>(), ideal, 0.10 * ideal)
        << r->metric.dump(1);
  }
  std::printf("AU announce %.2f %%, after_compute %.2f %%\n", announce.metric["train_au_mean_percentage"].get<double>(),
              after.metric["train_au_mean_percentage"].get<double>());
}

TEST(Barrier, ABadModeIsRefusedNamingTheKeyAndTheAllowedValues) {
  TempDir dir;
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Workload("npz", 8, 1, 4096, 1, 0.01, 1, true, "dlio_ext:\n  barrier: tree\n"));
  fs::create_directories(dir.path() / "root");
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", job, "--local-agents", "2", "--accelerators", "1",
                                "--data-root", dir.str() + "/root", "--output", dir.str() + "/out"},
                               std::chrono::seconds(60), dir.str());
  EXPECT_NE(r.exit_code, 0);
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("dlio_ext.barrier"), std::string::npos) << all;
  EXPECT_NE(all.find("announce"), std::string::npos) << all;
  EXPECT_NE(all.find("after_compute"), std::string::npos) << all;
}

}  // namespace
}  // namespace dlio::testing
