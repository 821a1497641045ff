// Fleet acceptance tests (issue 6) with real processes over loopback: faults (kill -9 of an agent and of the
// coordinator, a stopped agent losing its lease), the job store across restarts, cancel, Ctrl-C of submit and
// run, token and (mutual) TLS, data-root confinement, the free-space check, and the safe default of serve.
#include <dirent.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "coordinator/job_store.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

// 2 ranks x 20 steps x 0.05 s: about 1 s per epoch.
std::string EpochsJob(int epochs, int files = 40, double compute = 0.05) {
  return Workload("npz", files, 1, 4096, 1, compute, epochs, true);
}

std::string JobIdIn(const std::string& text) {
  std::smatch m;
  static const std::regex id(R"(job (\d{8}-\d{6}-\d+-[0-9a-f]{4}))");
  return std::regex_search(text, m, id) ? m[1].str() : "";
}

// Processes (other than zombies) whose command line mentions `needle` (e.g. a test's temporary folder) and `also`.
std::vector<int> ProcessesMentioning(const std::string& needle, const std::string& also = "") {
  std::vector<int> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(e.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos && cmdline.find(also) != std::string::npos) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Faults, KillNineOfAnAgentMidEpochFailsTheJobNamingAgentAndPhaseAndKeepsCompletedEpochs) {
  TempDir dir;
  Fleet fleet(dir);
  fleet.AddAgent("agent-0");
  Process& victim = fleet.AddAgent("agent-1");
  WriteFile(dir.str() + "/job.yaml", EpochsJob(4));
  Process submit({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", fleet.address(),
                  "--wait-for-agents", "30", "--agents", "2", "--output", dir.str() + "/out"},
                 dir.str() + "/submit.out");
  std::string job;
  ASSERT_TRUE(Eventually([&] { return !(job = JobIdIn(submit.Log())).empty(); }, seconds(30))) << fleet.Logs();
  // In a later epoch: epoch 1's results are on disk.
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = fleet.Status(job);
        return s.is_object() && s["epochs_done"] >= 1 && s["epochs_done"] <= 2;
      },
      seconds(60)))
      << fleet.Logs();
  victim.Signal(SIGKILL);
  const auto killed = SteadyClock::now();
  const int rc = submit.Wait(milliseconds(15000));
  ASSERT_NE(rc, -1) << "submit did not exit within 15 s of the kill\n" << fleet.Logs();
  EXPECT_LT(SteadyClock::now() - killed, seconds(15));
  EXPECT_EQ(rc, 1);
  const std::string out = submit.Log();
  // Killed during an epoch (or, rarely, in the moment between two).
  const std::regex lost("agent 'agent-1' \\(rank 1\\) (lost during|detached before) job " + job +
                        " phase train-epoch-[234]");
  EXPECT_TRUE(std::regex_search(out, lost)) << out;
  const int epochs_done = fleet.Status(job)["epochs_done"].get<int>();
  EXPECT_GE(epochs_done, 1);
  // The completed epochs' summary, on the coordinator and fetched by submit.
  for (const std::string& d : {dir.str() + "/out", dir.str() + "/coord-results/" + job}) {
    ASSERT_TRUE(fs::exists(d + "/summary.json")) << d;
    const json summary = LoadJson(d + "/summary.json");
    EXPECT_EQ(summary["epochs"], epochs_done) << d;
    EXPECT_EQ(summary["dlio_ext"]["job_state"], "failed") << d;
    EXPECT_EQ(summary["num_hosts"], 1) << "two agents on this one node";
  }
  // No process left behind: the surviving agent is idle and attached, and leaves when the coordinator goes.
  const json list = fleet.ClientJson({"list"});
  ASSERT_EQ(list["agents"].size(), 1u) << list.dump();
  EXPECT_EQ(list["agents"][0]["name"], "agent-0");
  EXPECT_EQ(list["agents"][0]["job_id"], "");
  fleet.coordinator().Signal(SIGTERM);
  EXPECT_EQ(fleet.coordinator().Wait(milliseconds(10000)), 0) << fleet.Logs();
  // It gives up after its reconnect window: exit 3, "coordinator unreachable" (issue 24: it used to exit 0).
  EXPECT_EQ(fleet.agent(0).Wait(milliseconds(15000)), 3) << "the agent must exit after its reconnect window";
  EXPECT_TRUE(ProcessesMentioning(dir.str()).empty());
}

TEST(Faults, StoppedAgentLosesItsLeaseAndTheJobFailsWithinTheLease) {
  TempDir dir;
  Fleet fleet(dir, {"--lease", "2", "--heartbeat-interval", "0.25"});
  fleet.AddAgent("agent-0");
  Process& frozen = fleet.AddAgent("agent-1");
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 400));  // 200 steps: about 10 s
  Process submit({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", fleet.address(),
                  "--wait-for-agents", "30", "--agents", "2"},
                 dir.str() + "/submit.out");
  std::string job;
  ASSERT_TRUE(Eventually([&] { return !(job = JobIdIn(submit.Log())).empty(); }, seconds(30)));
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = fleet.Status(job);
        return s.is_object() && s["phase_id"] == "train-epoch-1" && s["done"] > 2;
      },
      seconds(60)))
      << fleet.Logs();
  // SIGSTOP keeps the connection open: only the lease can tell the agent is gone.
  frozen.Signal(SIGSTOP);
  const auto stopped = SteadyClock::now();
  const int rc = submit.Wait(milliseconds(10000));
  frozen.Signal(SIGCONT);
  ASSERT_EQ(rc, 1) << fleet.Logs();
  // Lease 2 s + the watchdog's 250 ms period; the rest is margin for a loaded test machine.
  EXPECT_LT(SteadyClock::now() - stopped, milliseconds(2000 + 3000));
  const std::string out = submit.Log();
  EXPECT_TRUE(Contains(out, "agent 'agent-1' (rank 1) lost during job " + job + " phase train-epoch-1")) << out;
  EXPECT_TRUE(Contains(out, "lease 2 s")) << out;
  // Awake again, the agent finds its session gone and attaches anew.
  EXPECT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 2; }, seconds(15))) << fleet.Logs();
}

TEST(Store, CoordinatorKilledMidJobIsRestartedTheJobShowsInterruptedAgentsReattachAndANewJobRuns) {
  TempDir dir;
  Fleet fleet(dir, {"--store", dir.str() + "/jobs.db"});
  fleet.AddAgent("agent-0", {}, 30);
  fleet.AddAgent("agent-1", {}, 30);
  WriteFile(dir.str() + "/job.yaml", EpochsJob(4));
  CommandResult r =
      fleet.Client({"submit", dir.str() + "/job.yaml", "--wait-for-agents", "30", "--agents", "2", "--detach"});
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const std::string job = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = fleet.Status(job);
        return s.is_object() && s["epochs_done"] >= 1 && s["epochs_done"] <= 2;
      },
      seconds(60)))
      << fleet.Logs();
  fleet.coordinator().Signal(SIGKILL);
  ASSERT_NE(fleet.coordinator().Wait(milliseconds(5000)), -1);
  fleet.StartCoordinator();

  json list;
  ASSERT_TRUE(Eventually([&] { return (list = fleet.ClientJson({"list"})).is_object(); }, seconds(20)));
  ASSERT_EQ(list["jobs"].size(), 1u) << list.dump(1);
  const json& j = list["jobs"][0];
  EXPECT_EQ(j["job_id"], job);
  EXPECT_EQ(j["state"], "interrupted");
  EXPECT_EQ(j["has_results"], true);
  const int epochs_done = j["epochs_done"].get<int>();
  EXPECT_GE(epochs_done, 1);
  EXPECT_TRUE(Contains(j["message"].get<std::string>(), "phase train-epoch-")) << j.dump();
  const json summary = LoadJson(dir.str() + "/coord-results/" + job + "/summary.json");
  EXPECT_EQ(summary["epochs"], epochs_done);
  EXPECT_EQ(summary["dlio_ext"]["job_state"], "interrupted");
  // `results` serves the partial files, and exits 1: the job did not succeed (its verdict is INCOMPLETE).
  r = fleet.Client({"results", job, "--output", dir.str() + "/partial"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("INCOMPLETE"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir.path() / "partial" / "summary.json"));

  // The agents come back by themselves; a new job runs to completion.
  EXPECT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 2; }, seconds(20))) << fleet.Logs();
  WriteFile(dir.str() + "/job2.yaml", EpochsJob(1, 8, 0.01));
  r = fleet.Client({"submit", dir.str() + "/job2.yaml", "--wait-for-agents", "30", "--agents", "2"});
  EXPECT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
}

TEST(Store, QueuedJobsSurviveACoordinatorKillAndRunLater) {
  TempDir dir;
  Fleet fleet(dir, {"--store", dir.str() + "/jobs.db"});
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 8, 0.01));
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    const CommandResult r = fleet.Client({"submit", dir.str() + "/job.yaml", "--wait-for-agents", "60", "--detach"});
    ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
    ids.push_back(r.out.substr(0, r.out.find('\n')));
  }
  fleet.coordinator().Signal(SIGKILL);
  ASSERT_NE(fleet.coordinator().Wait(milliseconds(5000)), -1);
  fleet.StartCoordinator();
  json list;
  ASSERT_TRUE(Eventually([&] { return (list = fleet.ClientJson({"list"})).is_object(); }, seconds(20)));
  ASSERT_EQ(list["jobs"].size(), 2u);
  EXPECT_EQ(list["jobs"][0]["state"], "queued");
  EXPECT_EQ(list["jobs"][1]["state"], "queued");
  fleet.AddAgent("late-agent");
  for (const std::string& id : ids) {
    // Status() is not an object while the client cannot reach the coordinator (it was restarting): keep polling.
    EXPECT_TRUE(Eventually(
        [&] {
          const json s = fleet.Status(id);
          return s.is_object() && s.value("state", "") == "succeeded";
        },
        seconds(60)))
        << id << fleet.Logs();
  }
}

// D6 of issue 13: a job queued behind a running one, submitted without --wait-for-agents, survives a coordinator
// kill: the restarted coordinator waits for its agents to reattach before it places it (before, it failed ~20 ms
// after the restart with "none attached").
TEST(Store, ARestartedCoordinatorWaitsForItsAgentsBeforePlacingQueuedJobs) {
  TempDir dir;
  Fleet fleet(dir, {"--store", dir.str() + "/jobs.db"});
  fleet.AddAgent("agent-0", {}, 30);
  fleet.AddAgent("agent-1", {}, 30);
  WriteFile(dir.str() + "/long.yaml", EpochsJob(20));
  WriteFile(dir.str() + "/queued.yaml", EpochsJob(1, 8, 0.01));
  CommandResult r =
      fleet.Client({"submit", dir.str() + "/long.yaml", "--wait-for-agents", "30", "--agents", "2", "--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string running = r.out.substr(0, r.out.find('\n'));
  r = fleet.Client({"submit", dir.str() + "/queued.yaml", "--agents", "2", "--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string queued = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(Eventually([&] { return fleet.Status(running)["phase_id"] == "train-epoch-1"; }, seconds(60)))
      << fleet.Logs();
  fleet.coordinator().Signal(SIGKILL);
  ASSERT_NE(fleet.coordinator().Wait(milliseconds(5000)), -1);
  fleet.StartCoordinator();
  json s;
  ASSERT_TRUE(Eventually([&] { return (s = fleet.Status(queued)).is_object() && s["state"] == "succeeded"; },
                         seconds(60)))
      << s.dump() << fleet.Logs();
  EXPECT_EQ(fleet.Status(running)["state"], "interrupted");
}

// Issue 24 item 7: the store and `list` had no retention and no paging (60,000 jobs with long names made one answer
// pass the client's 256 MiB limit). A store of 1,200 finished jobs (written with the store's own code, job N
// submitted and ended N-th): `serve --keep-jobs 1000` keeps the 1,000 that ended last, deleting the other rows at
// start, and `list` pages through them (at most 500 a page), newest first.
TEST(Store, KeepJobsTrimsTheStoreAtStartAndListPagesNewestFirstAcrossPages) {
  TempDir dir;
  const std::string db = dir.str() + "/jobs.db";
  auto id_of = [](int seq) { return "20260101-000000-" + std::to_string(seq) + "-abcd"; };
  {
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(db);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int seq = 1; seq <= 1200; ++seq) {
      JobRecord rec;
      rec.id = id_of(seq);
      rec.seq = seq;
      rec.state = seq % 2 ? JobState::kFailed : JobState::kCancelled;
      rec.source_name = "jobs/" + std::string(200, 'n') + ".yaml";
      rec.submitted_unix_us = rec.ended_unix_us = 1767225600000000 + seq;
      rec.message = "job " + rec.id + " ended";
      ASSERT_TRUE((*store)->Put(rec).ok());
    }
  }
  Fleet fleet(dir, {"--store", db, "--keep-jobs", "1000"});
  auto ids = [](const json& list) {
    std::vector<std::string> v;
    for (const json& j : list["jobs"]) v.push_back(j["job_id"].get<std::string>());
    return v;
  };
  auto newest = [&](int n) {
    std::vector<std::string> v;
    for (int seq = 1200; seq > 1200 - n; --seq) v.push_back(id_of(seq));
    return v;
  };
  json all;
  ASSERT_TRUE(Eventually([&] { return (all = fleet.ClientJson({"list", "--limit", "0"})).is_object(); }, seconds(20)))
      << fleet.Logs();
  EXPECT_EQ(ids(all), newest(1000)) << "two pages of 500, newest first, jobs 1..200 dropped";
  EXPECT_FALSE(all.contains("more"));
  const json some = fleet.ClientJson({"list", "--limit", "600"});
  EXPECT_EQ(ids(some), newest(600));
  EXPECT_EQ(some["more"], true);
  // Without --limit: the newest 50, and a line saying there are more.
  const CommandResult r = fleet.Client({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> rows;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("20260101-", 0) == 0) rows.push_back(line.substr(0, line.find(' ')));
  }
  EXPECT_EQ(rows, newest(50)) << r.out;
  EXPECT_TRUE(Contains(r.out, "(the newest 50 jobs; the coordinator keeps older ones: --limit N")) << r.out;
  const CommandResult gone = fleet.Client({"status", id_of(200)});
  EXPECT_EQ(gone.exit_code, 1) << gone.out << gone.err;
  EXPECT_TRUE(Contains(gone.err, "no such job")) << gone.err;
  fleet.coordinator().Signal(SIGTERM);
  ASSERT_EQ(fleet.coordinator().Wait(milliseconds(10000)), 0) << fleet.Logs();
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<JobRecord>> rows_left = (*store)->LoadAll();
  ASSERT_TRUE(rows_left.ok()) << rows_left.status();
  ASSERT_EQ(rows_left->size(), 1000u);
  EXPECT_EQ(rows_left->front().id, id_of(201));
}

// D1 of issue 13: every job's first training phase is "train-epoch-1"; the agents must not take a late barrier
// release of the previous job for the next job's. 20 detached submissions of one small job (4 files x 20 samples,
// batch 1, no compute) plus 20 clients each submitting and waiting at the same time, on one fleet of two agents
// with a 5 s barrier timeout: all 40 succeed (before the fix 16 of 20 failed at the barrier). metric.au=0: the jobs'
// AU on a shared machine is not the subject (the verdict would otherwise make `submit` exit 5).
TEST(Load, TwentyClientsAndTwentyDetachedJobsOnOneFleetAllSucceed) {
  TempDir dir;
  const int metrics_port = FreePort();
  Fleet fleet(dir, {"--barrier-timeout", "5", "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)});
  fleet.AddAgent("agent-0");
  fleet.AddAgent("agent-1");
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 4, 20, 4096, 1, 0, 1, true));
  std::vector<std::string> detached;
  for (int i = 0; i < 20; ++i) {
    const CommandResult r =
        fleet.Client({"submit", dir.str() + "/job.yaml", "--wait-for-agents", "60", "--agents", "2", "--detach",
                      "metric.au=0"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    detached.push_back(r.out.substr(0, r.out.find('\n')));
  }
  std::vector<CommandResult> results(20);
  std::vector<std::thread> clients;
  for (int i = 0; i < 20; ++i) {
    clients.emplace_back([&, i] {
      results[static_cast<size_t>(i)] = fleet.Client(
          {"submit", dir.str() + "/job.yaml", "--wait-for-agents", "60", "--agents", "2", "metric.au=0"}, seconds(280));
    });
  }
  for (auto& t : clients) t.join();
  int ok = 0;
  for (const CommandResult& r : results) {
    ok += r.exit_code == 0;
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  EXPECT_EQ(ok, 20);
  for (const std::string& id : detached) {
    const json st = fleet.Status(id);
    EXPECT_EQ(st["state"], "succeeded") << id << ": " << st.dump();
  }
  // A job can also "succeed" with agents that ran past their barriers on a stale release: then their arrivals reach
  // the coordinator ahead of its barrier and are dropped. None may be: every step was a real barrier.
  const std::string metrics = HttpGet(metrics_port, "/metrics");
  EXPECT_TRUE(Contains(metrics, "dlio_coordinator_stale_barrier_arrivals_total 0\n")) << metrics;
  if (HasFailure()) ADD_FAILURE() << fleet.Logs();
}

TEST(Faults, CancelStopsEveryAgentWithinTwoSeconds) {
  TempDir dir;
  Fleet fleet(dir);
  fleet.AddAgent("agent-0", {"--accelerators", "2"});
  fleet.AddAgent("agent-1", {"--accelerators", "2"});
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 800));  // 4 ranks x 200 steps: about 10 s
  CommandResult r =
      fleet.Client({"submit", dir.str() + "/job.yaml", "--wait-for-agents", "30", "--agents", "2", "--detach"});
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const std::string job = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(Eventually(
      [&] {
        const json s = fleet.Status(job);
        return s.is_object() && s["phase_id"] == "train-epoch-1" && s["done"] > 2;
      },
      seconds(60)))
      << fleet.Logs();
  const auto t0 = SteadyClock::now();
  r = fleet.Client({"cancel", job});
  const auto took = SteadyClock::now() - t0;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "cancelled during phase train-epoch-1")) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(every agent stopped within ([0-9.]+) s)"))) << r.out;
  EXPECT_LT(std::stod(m[1].str()), 2.0);
  EXPECT_LT(took, seconds(5)) << "cancel returns once the agents confirmed (client start-up included)";
  EXPECT_EQ(fleet.Status(job)["state"], "cancelled");
  for (const char* name : {"agent-0", "agent-1"}) {
    EXPECT_TRUE(Contains(ReadFile(dir.str() + "/" + name + ".log"), "stopped")) << name;
  }
}

// D5 of issue 13: a cancel during a 20 s emulated compute step frees the agents at once; the next job runs on them
// (before, the agents slept out the step while the coordinator took them for free after 2 s, and the next job
// failed with "agent 'a1' is still running job ...").
TEST(Faults, CancelDuringALongComputeStepFreesTheAgentsForTheNextJob) {
  TempDir dir;
  Fleet fleet(dir);
  fleet.AddAgent("agent-0");
  fleet.AddAgent("agent-1");
  WriteFile(dir.str() + "/long.yaml", EpochsJob(1, 8, 20.0));
  CommandResult r =
      fleet.Client({"submit", dir.str() + "/long.yaml", "--wait-for-agents", "30", "--agents", "2", "--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string job = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(Eventually([&] { return fleet.Status(job)["phase_id"] == "train-epoch-1"; }, seconds(60)))
      << fleet.Logs();
  std::this_thread::sleep_for(milliseconds(500));  // inside the first compute step
  r = fleet.Client({"cancel", job});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Contains(r.out, "every agent stopped within")) << r.out;
  WriteFile(dir.str() + "/next.yaml", EpochsJob(1, 8, 0.01));
  r = fleet.Client({"submit", dir.str() + "/next.yaml", "--agents", "2", "metric.au=0"}, seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << fleet.Logs();
}

TEST(Cli, CtrlCOfSubmitCancelsTheJobAndSaysSo) {
  TempDir dir;
  Fleet fleet(dir);
  fleet.AddAgent("agent-0");
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 400));
  Process submit({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", fleet.address(),
                  "--wait-for-agents", "30"},
                 dir.str() + "/submit.out");
  ASSERT_TRUE(Eventually([&] { return Contains(submit.Log(), "phase train-epoch-1 started"); }, seconds(30)))
      << fleet.Logs();
  const std::string job = JobIdIn(submit.Log());
  submit.Signal(SIGINT);
  EXPECT_EQ(submit.Wait(milliseconds(10000)), 1) << submit.Log();
  EXPECT_TRUE(Contains(submit.Log(), "interrupted: cancelling job " + job)) << submit.Log();
  EXPECT_TRUE(Contains(submit.Log(), "cancelled because this command was interrupted")) << submit.Log();
  EXPECT_EQ(fleet.Status(job)["state"], "cancelled");
}

TEST(Cli, CtrlCOfRunCancelsKeepsCompletedEpochsAndLeavesNoAgentProcess) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  WriteFile(dir.str() + "/job.yaml", EpochsJob(4));
  Process run({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--local-agents", "2", "--data-root",
               dir.str() + "/root", "--results-dir", dir.str() + "/results"},
              dir.str() + "/run.out");
  ASSERT_TRUE(Eventually([&] { return Contains(run.Log(), "phase train-epoch-2 started"); }, seconds(60)))
      << run.Log();
  EXPECT_EQ(ProcessesMentioning(dir.str(), "dlio-agent").size(), 2u) << "two local agents";
  run.Signal(SIGINT);
  EXPECT_EQ(run.Wait(milliseconds(15000)), 1) << run.Log();
  const std::string job = JobIdIn(run.Log());
  EXPECT_TRUE(Contains(run.Log(), "cancelled during phase train-epoch-2")) << run.Log();
  const json summary = LoadJson(dir.str() + "/results/" + job + "/summary.json");
  EXPECT_GE(summary["epochs"].get<int>(), 1);
  EXPECT_EQ(summary["dlio_ext"]["job_state"], "cancelled");
  EXPECT_TRUE(ProcessesMentioning(dir.str()).empty()) << "an agent outlived `run`";
}

TEST(Security, WrongOrMissingTokenIsRefusedClearlyAndNoJobIsCreated) {
  TempDir dir;
  WriteFile(dir.str() + "/token", "correct-horse-battery\n");
  WriteFile(dir.str() + "/wrong", "not-the-token\n");
  Fleet fleet(dir, {"--token-file", dir.str() + "/token"});
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 8, 0.01));
  const std::vector<std::string> submit = {Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml",
                                           "--coordinator", fleet.address()};
  std::vector<std::string> wrong = submit;
  wrong.insert(wrong.end(), {"--token-file", dir.str() + "/wrong"});
  CommandResult r = RunCommand(wrong, seconds(30));
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "refused the token")) << r.err;
  r = RunCommand(submit, seconds(30));
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "requires a token: pass --token-file")) << r.err;
  // An agent with the wrong token is refused too and exits.
  Process& bad = fleet.AddAgent("intruder", {"--token-file", dir.str() + "/wrong"});
  EXPECT_EQ(bad.Wait(milliseconds(10000)), 3) << bad.Log();
  EXPECT_TRUE(Contains(bad.Log(), "refused the token")) << bad.Log();
  // Nothing was created; with the right token everything works.
  r = fleet.Client({"list", "--json", "--token-file", dir.str() + "/token"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["jobs"].size(), 0u) << r.out;
  fleet.AddAgent("agent-0", {"--token-file", dir.str() + "/token"});
  r = fleet.Client(
      {"submit", dir.str() + "/job.yaml", "--wait-for-agents", "30", "--token-file", dir.str() + "/token"});
  EXPECT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
}

TEST(Security, MutualTlsRunWorksAndPlaintextOrCertificateLessClientsAreRefused) {
  TempDir dir;
  const std::string d = dir.str();
  // A CA, a server certificate for 127.0.0.1 and a client certificate, made with the openssl CLI.
  CommandResult ssl = MakeTestCertificates(d);
  ASSERT_EQ(ssl.exit_code, 0) << ssl.out << ssl.err;
  const std::vector<std::string> client_tls = {"--tls-ca", d + "/ca.pem", "--tls-cert", d + "/client.pem",
                                               "--tls-key", d + "/client.key"};
  Fleet fleet(dir, {"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key", "--tls-ca", d + "/ca.pem"},
              client_tls);
  fleet.AddAgent("agent-0", client_tls);
  WriteFile(d + "/job.yaml", EpochsJob(1, 8, 0.01));
  CommandResult r = fleet.Client({"submit", d + "/job.yaml", "--wait-for-agents", "30", "--output", d + "/out"});
  EXPECT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
  EXPECT_TRUE(fs::exists(d + "/out/summary.json"));
  // Plaintext, and TLS without a client certificate: refused at the connection, no job created.
  const std::vector<std::string> base = {Bin("dlio-coordinator"), "submit", d + "/job.yaml", "--coordinator",
                                         fleet.address(), "--connect-timeout", "2"};
  r = RunCommand(base, seconds(30));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "cannot reach the coordinator")) << r.err;
  EXPECT_TRUE(Contains(r.err, "TLS")) << r.err;
  std::vector<std::string> no_cert = base;
  no_cert.insert(no_cert.end(), {"--tls-ca", d + "/ca.pem"});
  r = RunCommand(no_cert, seconds(30));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  // A certificate that does not hold the expected name: the line names --tls-server-name.
  std::vector<std::string> wrong_name = no_cert;
  wrong_name.insert(wrong_name.end(), {"--tls-server-name", "not-the-coordinator.example"});
  r = RunCommand(wrong_name, seconds(30));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "does not hold the name 'not-the-coordinator.example'")) << r.err;
  EXPECT_TRUE(Contains(r.err, "--tls-server-name")) << r.err;
  const json list = fleet.ClientJson({"list"});
  ASSERT_TRUE(list.is_object());
  EXPECT_EQ(list["jobs"].size(), 1u) << "only the TLS run created a job";
  EXPECT_TRUE(Contains(fleet.coordinator().Log(), "mutual TLS"));
}

TEST(Confinement, DataFolderOutsideTheRootAndAnEscapingSymlinkAreRefusedNamingThePath) {
  TempDir dir, outside;
  const fs::path root = dir.path() / "a" / "root";
  fs::create_directories(root);
  fs::create_directory_symlink(outside.path(), root / "escape");
  struct Case {
    std::string data_folder;
    std::string why;
  };
  const std::string canon_root = fs::canonical(root).string();
  // "../../etc" is refused before anything runs (it leaves any root); tests/hostile_test.cc has it.
  const std::vector<Case> cases = {
      {"escape/data", "'escape/data' passes through 'escape', a symbolic link; the agent follows none below its data "
                      "root ('" + canon_root + "')"},
      {"zz/../escape", "'zz/../escape' passes through 'escape', a symbolic link"},  // D3 of issue 13
      {outside.str() + "/data", "'" + outside.str() + "/data' is outside '" + canon_root + "'"},
  };
  for (const Case& c : cases) {
    std::string job = EpochsJob(1, 8, 0.01);
    job.replace(job.find("data_folder: data"), std::string("data_folder: data").size(),
                "data_folder: " + c.data_folder);
    WriteFile(dir.str() + "/job.yaml", job);
    const CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--data-root",
                                        root.string(), "--results-dir", dir.str() + "/results"},
                                       seconds(60));
    EXPECT_EQ(r.exit_code, 1) << c.data_folder << ": " << r.out << r.err;
    EXPECT_TRUE(Contains(r.err, "dataset.data_folder: " + c.why)) << c.data_folder << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, "agent 'local-0'")) << r.err;
  }
  EXPECT_TRUE(fs::is_empty(outside.path())) << "something was written outside the data root";
}

// Lower item of issue 13: agents with separate data roots each generate only their share; training then fails at
// once saying that the agents of a job need one shared data folder (docs/fleet.md).
TEST(Confinement, AgentsWithSeparateDataRootsAreToldTheyNeedASharedDataFolder) {
  TempDir dir;
  Fleet fleet(dir);
  std::vector<std::unique_ptr<Process>> agents;
  for (const std::string name : {"agent-0", "agent-1"}) {
    const std::string root = dir.str() + "/own-" + name;
    fs::create_directories(root);
    agents.push_back(std::make_unique<Process>(
        std::vector<std::string>{Bin("dlio-agent"), "--coordinator", fleet.address(), "--data-root", root, "--name",
                                 name},
        dir.str() + "/" + name + ".log"));
  }
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 8, 0.01));
  const CommandResult r =
      fleet.Client({"submit", dir.str() + "/job.yaml", "--wait-for-agents", "30", "--agents", "2"}, seconds(60));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Contains(r.err, "dataset.num_files_train: 8 .npz files expected")) << r.err;
  EXPECT_TRUE(Contains(r.err, "found 4")) << r.err;
  EXPECT_TRUE(Contains(r.err, "with several agents every agent must see the whole dataset: give them one shared "
                              "data folder"))
      << r.err;
}

TEST(Preflight, DatasetLargerThanTheFreeSpaceIsRefusedBeforeAnyFileIsWritten) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // 10^6 files x 10^9 bytes = 10^15 bytes declared.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 1000000, 1, 1000000000, 1, 0, 1, true));
  const CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--data-root",
                                      dir.str() + "/root", "--results-dir", dir.str() + "/results"},
                                     seconds(60));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;  // refused (bad input for this storage), not a failed run
  // floor(sqrt(10^9)) = 31622: 10^6 x 31622^2 bytes.
  EXPECT_TRUE(Contains(r.err, "needs about 999950884000000 bytes")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(has only \d+ bytes \([0-9.]+ [kMGTP]?B\) available)"))) << r.err;
  EXPECT_TRUE(Contains(r.err, "phase generate")) << r.err;
  EXPECT_TRUE(fs::is_empty(dir.path() / "root")) << "a file was written";
}

TEST(Safety, ServeWarnsWhenItListensBeyondLoopbackWithoutAToken) {
  TempDir dir;
  const std::string listen = "0.0.0.0:" + std::to_string(FreePort());
  Process serve({Bin("dlio-coordinator"), "serve", "--listen", listen, "--results-dir", dir.str() + "/r"},
                dir.str() + "/serve.log");
  ASSERT_TRUE(Eventually([&] { return Contains(serve.Log(), "listening"); }, seconds(10))) << serve.Log();
  EXPECT_TRUE(Contains(serve.Log(), "without --token-file: anyone who can reach this port can run jobs and write "
                                    "files under every agent's data root"))
      << serve.Log();
  TempDir quiet;
  Process loopback({Bin("dlio-coordinator"), "serve", "--listen", "127.0.0.1:" + std::to_string(FreePort()),
                    "--results-dir", quiet.str() + "/r"},
                   quiet.str() + "/serve.log");
  ASSERT_TRUE(Eventually([&] { return Contains(loopback.Log(), "listening"); }, seconds(10)));
  EXPECT_FALSE(Contains(loopback.Log(), "warn")) << loopback.Log();
}

TEST(Placement, NumHostsCountsDistinctNodeNamesAndAcceleratorCountsMustMatch) {
  TempDir dir;
  Fleet fleet(dir);
  fleet.AddAgent("agent-0", {"--node-name", "node-a"});
  fleet.AddAgent("agent-1", {"--node-name", "node-a"});
  fleet.AddAgent("agent-2", {"--node-name", "node-b", "--accelerators", "2"});
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 12, 0.01));
  ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 3; }, seconds(20))) << fleet.Logs();
  CommandResult r = fleet.Client({"submit", dir.str() + "/job.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "agent-0: 1, agent-1: 1, agent-2: 2")) << r.err;
  EXPECT_TRUE(Contains(r.err, "MLPerf")) << r.err;
  // A placement the attached fleet cannot satisfy is refused at submit, never queued (issue 26 item 6): exit 2.
  r = fleet.Client({"submit", dir.str() + "/job.yaml", "--agents", "2", "--accelerators-per-agent", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "needs 2 agent(s) with at least 2 accelerator(s) each")) << r.err;
  EXPECT_TRUE(Contains(r.err, "job not queued")) << r.err;
  r = fleet.Client({"submit", dir.str() + "/job.yaml", "--accelerators-per-agent", "1", "--output",
                    dir.str() + "/out"});
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const json summary = LoadJson(dir.str() + "/out/summary.json");
  EXPECT_EQ(summary["num_accelerators"], 3);
  EXPECT_EQ(summary["num_hosts"], 2) << "agent-0 and agent-1 share node-a";
}

TEST(Metrics, CoordinatorMetricsPassPromtool) {
  TempDir dir;
  const int mport = FreePort();
  Fleet fleet(dir, {"--metrics-listen", "127.0.0.1:" + std::to_string(mport)});
  fleet.AddAgent("agent-0");
  fleet.AddAgent("agent-1");
  // Two agents of one rank each: 16 files, 8 steps per rank, 8 barriers through the coordinator (a single-agent
  // job's barrier stays inside the agent).
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 16, 0.01));
  const CommandResult r =
      fleet.Client({"submit", dir.str() + "/job.yaml", "--agents", "2", "--wait-for-agents", "30"});
  ASSERT_PRED1(JobRan, r.exit_code) << r.out << r.err;
  const std::string metrics = HttpGet(mport, "/metrics");
  for (const char* line : {"dlio_coordinator_agents 2", "dlio_coordinator_jobs{state=\"succeeded\"} 1",
                           "dlio_coordinator_leases_expired_total 0",
                           "dlio_coordinator_barrier_wait_seconds_count{job_id=\""}) {
    EXPECT_TRUE(Contains(metrics, line)) << line << "\n" << metrics;
  }
  // The job's barrier histogram (labelled by job, for the dashboards) counted its 8 released steps.
  EXPECT_TRUE(std::regex_search(metrics, std::regex(R"(dlio_coordinator_barrier_wait_seconds_count\{job_id="[^"]+"\} 8\b)")))
      << metrics;
  WriteFile(dir.str() + "/metrics.txt", metrics);
  const CommandResult lint = RunCommand({"sh", "-c", "promtool check metrics < " + dir.str() + "/metrics.txt"});
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
}

}  // namespace
}  // namespace dlio::testing
