// Process tests of the coordinator's results folder (issue 24 item 5, docs/fleet.md "Security", Results): a job's
// folder is opened once and every file of the job goes through that descriptor, so a user who can write to
// --results-dir and swaps a running job's folder for a symbolic link (job ids are public) gets nothing written
// through the link: no summary.json, no trace.json, no temporary.
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string JobIdIn(const std::string& text) {
  std::smatch m;
  static const std::regex id(R"(job (\d{8}-\d{6}-\d+-[0-9a-f]{4}))");
  return std::regex_search(text, m, id) ? m[1].str() : "";
}

// Every entry below `dir`, recursively (links listed, not followed).
std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(fs::relative(e.path(), dir).string());
  return out;
}

TEST(ResultsFolder, AJobFolderSwappedForALinkMidJobGetsNothingWrittenThroughTheLink) {
  TempDir dir;
  Fleet fleet(dir, 1, 1);
  const fs::path results = dir.path() / "coord-results";
  const fs::path outside = dir.path() / "outside";
  fs::create_directories(outside);
  // 1 rank x 20 steps x 0.05 s: about 1 s per epoch; the trace makes the coordinator write trace.json at the end.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 20, 1, 4096, 1, 0.05, 5, true, "dlio_ext:\n  trace: true\n"));
  Process submit({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", fleet.address(),
                  "--wait-for-agents", "30", "--agents", "1"},
                 dir.str() + "/submit.out");
  std::string job;
  ASSERT_TRUE(Eventually([&] { return !(job = JobIdIn(submit.Log())).empty(); }, seconds(30))) << fleet.Logs();
  // Epoch 1's files are written: the job holds its folder (and its trace's events file) from here on.
  ASSERT_TRUE(Eventually([&] { return fs::exists(results / job / "summary.json"); }, seconds(60))) << fleet.Logs();
  const json before = fleet.Status(job);
  ASSERT_EQ(before["state"], "running") << before.dump() << "\n" << fleet.Logs();
  fs::rename(results / job, results / "moved");
  fs::create_directory_symlink(outside, results / job);

  ASSERT_NE(submit.Wait(milliseconds(120000)), -1) << fleet.Logs();
  const json after = fleet.Status(job);
  // Nothing at all appears outside: no summary.json, no trace.json, no temporary.
  EXPECT_EQ(Entries(outside), std::vector<std::string>{}) << fleet.Logs();
  // The files went to the folder that was opened, wherever it went, and no temporary is left there either.
  EXPECT_EQ(after["state"], "succeeded") << after.dump() << "\n" << fleet.Logs();
  ASSERT_TRUE(fs::exists(results / "moved" / "summary.json")) << fleet.Logs();
  const json summary = LoadJson((results / "moved" / "summary.json").string());
  EXPECT_EQ(summary["epochs"], 5);
  EXPECT_EQ(summary["dlio_ext"]["job_state"], "succeeded");
  EXPECT_TRUE(fs::exists(results / "moved" / "trace.json"));
  for (const std::string& e : Entries(results / "moved")) EXPECT_EQ(e.find(".tmp"), std::string::npos) << e;
  // `results` serves nothing through the link either: the folder now resolves outside the results folder.
  const CommandResult r = fleet.Client({"results", job, "--output", dir.str() + "/fetched"});
  EXPECT_NE(r.exit_code, 0) << Dump(r);
  EXPECT_NE((r.out + r.err).find("outside the results folder"), std::string::npos) << Dump(r);
  EXPECT_FALSE(fs::exists(dir.path() / "fetched" / "summary.json"));
}

}  // namespace
}  // namespace dlio::testing
