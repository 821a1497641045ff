// Refusals before the run, over real processes (issue 26 item 6; docs/fleet.md "Placement" and "Free space"):
//  - Refusals.Dataset*: a dataset the fleet cannot hold on its data root, or absent while workflow.generate_data is
//    off, is refused before anything is written or read: exit 2 and the reason once, however many agents refuse it;
//  - Refusals.Placement*: a placement the attached fleet cannot satisfy (more agents than attached, fewer attached
//    agents with --accelerators-per-agent than asked) is refused at submit, naming the numbers (exit 2), instead of
//    being queued; a job that fits still queues behind a running one and runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::seconds;

// How many lines of `text` contain `needle`.
size_t LinesWith(const std::string& text, const std::string& needle) {
  size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

// `run JOB --local-agents N` in `dir` (data root dir/root).
CommandResult RunLocal(const TempDir& dir, const std::string& job, int agents) {
  fs::create_directories(dir.path() / "root");
  return RunCommand({Bin("dlio-coordinator"), "run", job, "--local-agents", std::to_string(agents), "--data-root",
                     dir.str() + "/root", "--results-dir", dir.str() + "/results"},
                    seconds(120), dir.str());
}

TEST(Refusals, DatasetAbsentWithoutGenerationIsRefusedOnceForFourAgents) {
  TempDir dir;
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Workload("npz", 8, 1, 4096, 1, 0.001, 1, /*generate=*/false));
  const CommandResult r = RunLocal(dir, job, 4);
  EXPECT_EQ(r.exit_code, 2) << Dump(r);  // refused (bad input for this storage), not a failed run
  const std::string want = "dataset.data_folder '" + dir.str() + "/root/data/train': no .npz file of the dataset "
                           "there (8 expected by dataset.num_files_train) and workflow.generate_data is false";
  EXPECT_EQ(LinesWith(r.out + r.err, want), 1u) << Dump(r);
  EXPECT_EQ(LinesWith(r.out + r.err, "workflow.generate_data is false"), 1u) << "said more than once:\n" << Dump(r);
  EXPECT_TRUE(fs::is_empty(dir.path() / "root")) << "something was written";
}

TEST(Refusals, DatasetLargerThanTheFreeSpaceIsRefusedOnceForFourAgents) {
  TempDir dir;
  const std::string job = dir.str() + "/job.yaml";
  // 10^6 files x 10^9 bytes = 10^15 bytes declared.
  WriteFile(job, Workload("npz", 1000000, 1, 1000000000, 1, 0, 1, true));
  const CommandResult r = RunLocal(dir, job, 4);
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_EQ(LinesWith(r.out + r.err, "needs about 999950884000000 bytes"), 1u) << "not once:\n" << Dump(r);
  EXPECT_TRUE(fs::is_empty(dir.path() / "root")) << "a file was written";
}

TEST(Refusals, PlacementTheFleetCannotSatisfyIsRefusedAtSubmitAndAFittingJobQueuesBehindARunningOne) {
  TempDir dir;
  Fleet fleet(dir, 2, 1);
  ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 2; }, seconds(20))) << fleet.Logs();
  // A job of ~4 s on both agents holds the fleet while the others are submitted.
  const std::string slow = dir.str() + "/slow.yaml", quick = dir.str() + "/quick.yaml";
  WriteFile(slow, Workload("npy", 40, 1, 4096, 1, 0.2, 1, true));
  WriteFile(quick, Workload("npy", 8, 1, 4096, 1, 0.001, 1, true));
  Process first({Bin("dlio-coordinator"), "submit", slow, "--coordinator", fleet.address(), "--agents", "2",
                 "--output", dir.str() + "/out1"},
                dir.str() + "/submit1.log");
  ASSERT_TRUE(Eventually(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const json list = fleet.ClientJson({"list"});
        return list.is_object() && !list["jobs"].empty() && list["jobs"][0]["state"] == "running";
      },
      seconds(60)))
      << first.Log() << fleet.Logs();
  // More agents than attached: refused at once, before queueing.
  CommandResult r = fleet.Client({"submit", quick, "--agents", "3"}, seconds(30));
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_EQ(LinesWith(r.err, "job not queued: the attached fleet cannot place it: it needs 3 agent(s); 2 attached "
                             "(accelerators: agent-0: 1, agent-1: 1)"),
            1u)
      << Dump(r);
  // More accelerators per agent than any attached agent offers.
  r = fleet.Client({"submit", quick, "--accelerators-per-agent", "2"}, seconds(30));
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_EQ(LinesWith(r.err, "it needs at least 1 agent with at least 2 accelerator(s) each; 2 attached "
                             "(accelerators: agent-0: 1, agent-1: 1), 0 of them eligible"),
            1u)
      << Dump(r);
  // A job that fits the fleet queues behind the running one, and runs once it ended.
  Process second({Bin("dlio-coordinator"), "submit", quick, "--coordinator", fleet.address(), "--agents", "2",
                  "--output", dir.str() + "/out2"},
                 dir.str() + "/submit2.log");
  ASSERT_TRUE(Eventually(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const json list = fleet.ClientJson({"list"});
        return list.is_object() && list["jobs"].size() == 2 && list["jobs"][0]["state"] == "queued";
      },
      seconds(30)))
      << second.Log() << fleet.Logs();
  EXPECT_TRUE(JobRan(first.Wait(seconds(120)))) << first.Log();
  EXPECT_TRUE(JobRan(second.Wait(seconds(120)))) << second.Log();
  const json list = fleet.ClientJson({"list"});
  EXPECT_EQ(list["jobs"].size(), 2u) << "the refused jobs were never queued: " << list.dump(2);
  // Waiting for agents is still allowed: the job queues, then fails after its wait naming what was missing.
  r = fleet.Client({"submit", quick, "--agents", "3", "--wait-for-agents", "1"}, seconds(60));
  EXPECT_EQ(r.exit_code, 1) << Dump(r);
  EXPECT_EQ(LinesWith(r.err, "needs 3 agent(s); 2 attached"), 1u) << Dump(r);
  EXPECT_EQ(LinesWith(r.err, "after waiting 1 s"), 1u) << Dump(r);
}

}  // namespace
}  // namespace dlio::testing
