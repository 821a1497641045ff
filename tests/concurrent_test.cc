// Concurrent jobs on one fleet (issue 30 item 1) with real coordinator and agent processes over loopback: two jobs
// on disjoint agents at once, a third one queued with its reason in `status`, a later job that fits now not
// overtaking the waiting first one (no backfill), an agent killed failing only the job it served, and a coordinator
// restart with two running jobs and one queued.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>
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

// 1 rank x `files` steps x `compute` s per epoch.
std::string EpochsJob(int epochs, int files, double compute, const std::string& folder) {
  std::string w = Workload("npz", files, 1, 4096, 1, compute, epochs, true);
  const std::string from = "data_folder: data\n";
  return w.replace(w.find(from), from.size(), "data_folder: " + folder + "\n");
}

// Client flags of every test: the suite's 2-core machine may be loaded far beyond its cores, and a client that
// cannot complete its connection within the default 10 s exits 3 before the test saw anything.
const std::vector<std::string> kClient = {"--connect-timeout", "60"};

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// `submit --detach` of `job` with `flags`; the job id (empty, and a test failure, when it was not queued).
std::string Detach(const Fleet& fleet, const std::string& job, std::vector<std::string> flags) {
  std::vector<std::string> args = {"submit", job, "--detach"};
  args.insert(args.end(), flags.begin(), flags.end());
  const CommandResult r = fleet.Client(args);
  EXPECT_EQ(r.exit_code, 0) << Dump(r);
  return r.exit_code == 0 ? r.out.substr(0, r.out.find('\n')) : "";
}

// `status --json` of `job`, asked again while a loaded machine's client cannot reach the coordinator in time (its
// output is then no JSON); null after 30 s.
json StatusOf(const Fleet& fleet, const std::string& job) {
  json s;
  Eventually([&] { return (s = fleet.Status(job)).is_object(); }, seconds(30));
  return s;
}

std::string StateOf(const Fleet& fleet, const std::string& job) {
  const json s = StatusOf(fleet, job);
  return s.is_object() ? s.value("state", "") : "";
}

bool Ended(const Fleet& fleet, const std::string& job) {
  const std::string s = StateOf(fleet, job);
  return s == "succeeded" || s == "failed" || s == "cancelled" || s == "interrupted";
}

// A fleet of `n` one-accelerator agents "agent-0".., all attached.
void AddAgents(Fleet& fleet, int n, double reconnect_window = 3) {
  for (int i = 0; i < n; ++i) fleet.AddAgent("agent-" + std::to_string(i), {}, reconnect_window);
  ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == static_cast<size_t>(n); }, seconds(30)))
      << fleet.Logs();
}

TEST(Concurrent, TwoJobsOnDisjointAgentsRunAtOnceAndEachKeepsItsOwnResults) {
  TempDir dir;
  Fleet fleet(dir, {}, kClient);
  AddAgents(fleet, 2);
  // About 3 s each: long enough to overlap on a loaded machine.
  WriteFile(dir.str() + "/a.yaml", EpochsJob(1, 60, 0.05, "data-a"));
  WriteFile(dir.str() + "/b.yaml", EpochsJob(1, 40, 0.05, "data-b"));
  const std::string a = Detach(fleet, dir.str() + "/a.yaml", {"--agents", "1"});
  const std::string b = Detach(fleet, dir.str() + "/b.yaml", {"--agents", "1"});
  ASSERT_FALSE(a.empty() || b.empty());
  // Both run at the same time, each on an agent of its own.
  json list;
  ASSERT_TRUE(Eventually(
      [&] {
        list = fleet.ClientJson({"list"});
        if (!list.is_object()) return false;
        int running = 0;
        for (const json& j : list["jobs"]) running += j["state"] == "running" ? 1 : 0;
        return running == 2;
      },
      seconds(60)))
      << list.dump(1) << fleet.Logs();
  std::set<std::string> serving;
  for (const json& ag : list["agents"]) serving.insert(ag["job_id"].get<std::string>());
  EXPECT_EQ(serving, (std::set<std::string>{a, b})) << list.dump(1);
  ASSERT_TRUE(Eventually([&] { return Ended(fleet, a) && Ended(fleet, b); }, seconds(120))) << fleet.Logs();
  const json sa = StatusOf(fleet, a), sb = StatusOf(fleet, b);
  EXPECT_EQ(sa["state"], "succeeded") << sa.dump(1);
  EXPECT_EQ(sb["state"], "succeeded") << sb.dump(1);
  ASSERT_EQ(sa["agents"].size(), 1u);
  ASSERT_EQ(sb["agents"].size(), 1u);
  EXPECT_NE(sa["agents"][0], sb["agents"][0]);
  // They overlapped: each started before the other ended.
  EXPECT_LT(sa["started_unix_us"].get<int64_t>(), sb["ended_unix_us"].get<int64_t>());
  EXPECT_LT(sb["started_unix_us"].get<int64_t>(), sa["ended_unix_us"].get<int64_t>());
  // Each job's results are its own: its world, its dataset's samples.
  const json ra = LoadJson(dir.str() + "/coord-results/" + a + "/summary.json");
  const json rb = LoadJson(dir.str() + "/coord-results/" + b + "/summary.json");
  EXPECT_EQ(ra["num_accelerators"], 1);
  EXPECT_EQ(rb["num_accelerators"], 1);
  EXPECT_EQ(ra["epochs"], 1);
  EXPECT_EQ(rb["epochs"], 1);
  EXPECT_GT(DataBytes(dir.path() / "root" / "data-a", "npz"), 0u);
  EXPECT_GT(DataBytes(dir.path() / "root" / "data-b", "npz"), 0u);
}

// What a job read, as its result files say: the fleet's training I/O and steps per epoch, and per rank and epoch
// the samples, bytes and files it read and the steps it ran.
json ReadFigures(const std::string& result_dir) {
  const json summary = LoadJson(result_dir + "/summary.json");
  json out = {{"train_io", summary["dlio_ext"]["train_io"]},
              {"epoch_steps", summary["dlio_ext"]["epoch_steps"]},
              {"epochs", summary["epochs"]},
              {"ranks", json::array()}};
  for (int rank = 0; rank < summary["num_accelerators"].get<int>(); ++rank) {
    const json output = LoadJson(result_dir + "/" + std::to_string(rank) + "_output.json");
    json epochs = json::object();
    for (const auto& [epoch, e] : output.items()) {
      if (!e.is_object() || !e.contains("compute")) continue;
      size_t steps = 0;
      for (const auto& [block, times] : e["compute"].items()) steps += times.size();
      const json& io = e["dlio_ext"]["io"];
      epochs[epoch] = {{"samples", io["samples"]}, {"bytes", io["bytes"]}, {"files", io["files"]}, {"steps", steps}};
    }
    out["ranks"].push_back(epochs);
  }
  return out;
}

TEST(Concurrent, TwoJobsSharingAgentsEachReadWhatTheyReadAlone) {
  TempDir dir;
  Fleet fleet(dir, {}, kClient);
  fleet.AddAgent("agent-0", {"--accelerators", "2"});
  fleet.AddAgent("agent-1", {"--accelerators", "2"});
  ASSERT_TRUE(Eventually([&] { return fleet.AttachedAgents() == 2; }, seconds(30))) << fleet.Logs();
  // Different datasets and step counts: a sample or a barrier of one crossing into the other shows.
  WriteFile(dir.str() + "/a.yaml", EpochsJob(2, 48, 0.03, "data-a"));
  WriteFile(dir.str() + "/b.yaml", EpochsJob(2, 32, 0.04, "data-b"));
  const std::vector<std::string> shared = {"--agents", "2", "--accelerators-per-agent", "1", "--share-agents"};
  const std::string a = Detach(fleet, dir.str() + "/a.yaml", shared);
  const std::string b = Detach(fleet, dir.str() + "/b.yaml", shared);
  ASSERT_FALSE(a.empty() || b.empty());
  json list;
  ASSERT_TRUE(Eventually(
      [&] {
        list = fleet.ClientJson({"list"});
        if (!list.is_object() || list["agents"].size() != 2u) return false;
        for (const json& ag : list["agents"]) {
          const std::string serving = ag["job_id"].get<std::string>();
          if (!Contains(serving, a) || !Contains(serving, b)) return false;
        }
        return true;
      },
      seconds(60)))
      << "both jobs must run on both agents at once\n"
      << list.dump(1) << fleet.Logs();
  ASSERT_TRUE(Eventually([&] { return Ended(fleet, a) && Ended(fleet, b); }, seconds(180))) << fleet.Logs();
  ASSERT_EQ(StateOf(fleet, a), "succeeded") << StatusOf(fleet, a).dump(1) << fleet.Logs();
  ASSERT_EQ(StateOf(fleet, b), "succeeded") << StatusOf(fleet, b).dump(1) << fleet.Logs();
  // Each alone, on the same placement: the same samples, bytes, files and steps, rank by rank.
  for (const auto& [job, file] : {std::make_pair(a, "a"), std::make_pair(b, "b")}) {
    const std::string alone = Detach(fleet, dir.str() + "/" + file + ".yaml", shared);
    ASSERT_TRUE(Eventually([&] { return Ended(fleet, alone); }, seconds(180))) << fleet.Logs();
    ASSERT_EQ(StateOf(fleet, alone), "succeeded");
    const json together = ReadFigures(dir.str() + "/coord-results/" + job);
    const json by_itself = ReadFigures(dir.str() + "/coord-results/" + alone);
    EXPECT_EQ(together, by_itself) << file << " together:\n" << together.dump(1) << "\nalone:\n" << by_itself.dump(1);
    EXPECT_EQ(together["ranks"].size(), 2u);
  }
}

TEST(Concurrent, AJobThatDoesNotFitNowIsQueuedWithItsReasonAndRunsOnceAgentsAreFree) {
  TempDir dir;
  Fleet fleet(dir, {}, kClient);
  AddAgents(fleet, 2);
  WriteFile(dir.str() + "/long.yaml", EpochsJob(1, 60, 0.05, "data-long"));
  WriteFile(dir.str() + "/short.yaml", EpochsJob(1, 8, 0.01, "data-short"));
  const std::string a = Detach(fleet, dir.str() + "/long.yaml", {"--agents", "1"});
  const std::string b = Detach(fleet, dir.str() + "/long.yaml", {"--agents", "1"});
  ASSERT_TRUE(Eventually([&] { return StateOf(fleet, a) == "running" && StateOf(fleet, b) == "running"; },
                         seconds(60)))
      << fleet.Logs();
  const std::string c = Detach(fleet, dir.str() + "/short.yaml", {"--agents", "1"});
  json s;
  ASSERT_TRUE(Eventually(
      [&] {
        s = StatusOf(fleet, c);
        return s.is_object() && Contains(s.value("message", ""), "waiting for");
      },
      seconds(20)))
      << s.dump(1);
  EXPECT_EQ(s["state"], "queued");
  const std::string msg = s["message"].get<std::string>();
  EXPECT_TRUE(Contains(msg, "job " + c + " queued: waiting for 1 agent(s): 0 free, ")) << msg;
  EXPECT_TRUE(std::regex_search(msg, std::regex("job " + a + " holds agent-[01]"))) << msg;
  EXPECT_TRUE(std::regex_search(msg, std::regex("job " + b + " holds agent-[01]"))) << msg;
  // `list` shows the same line.
  const json list = fleet.ClientJson({"list"});
  bool listed = false;
  for (const json& j : list["jobs"]) listed = listed || (j["job_id"] == c && j["message"] == msg);
  EXPECT_TRUE(listed) << list.dump(1);
  ASSERT_TRUE(Eventually([&] { return Ended(fleet, c); }, seconds(120))) << fleet.Logs();
  EXPECT_EQ(StateOf(fleet, c), "succeeded");
  // It started only once one of the others had ended.
  const json sc = StatusOf(fleet, c), sa = StatusOf(fleet, a), sb = StatusOf(fleet, b);
  EXPECT_GE(sc["started_unix_us"].get<int64_t>(),
            std::min(sa["ended_unix_us"].get<int64_t>(), sb["ended_unix_us"].get<int64_t>()));
}

// No backfill (docs/concurrency.md, "Why the queue does not backfill"): the queue's first job waits for both agents
// while one runs a long job; a later 1-agent job whose agent is free waits behind it, and starts only once the first
// one has.
TEST(Concurrent, ALaterJobThatFitsNowDoesNotOvertakeTheWaitingFirstOne) {
  TempDir dir;
  Fleet fleet(dir, {}, kClient);
  AddAgents(fleet, 2);
  WriteFile(dir.str() + "/long.yaml", EpochsJob(1, 60, 0.05, "data-long"));
  WriteFile(dir.str() + "/short.yaml", EpochsJob(1, 4, 0.01, "data-short"));
  const std::string a = Detach(fleet, dir.str() + "/long.yaml", {"--agents", "1"});
  ASSERT_TRUE(Eventually([&] { return StateOf(fleet, a) == "running"; }, seconds(60))) << fleet.Logs();
  const std::string head = Detach(fleet, dir.str() + "/short.yaml", {"--agents", "2"});
  const std::string later = Detach(fleet, dir.str() + "/short.yaml", {"--agents", "1"});
  ASSERT_FALSE(head.empty() || later.empty());
  json s;
  ASSERT_TRUE(Eventually(
      [&] {
        s = StatusOf(fleet, head);
        return s.is_object() && Contains(s.value("message", ""), "waiting for 2 agent(s): 1 free");
      },
      seconds(20)))
      << s.dump(1);
  // A free agent and a job that fits on it, and still it waits while the first one does (a second's look: the
  // placement runs on every change and at least once a second).
  std::this_thread::sleep_for(seconds(1));
  const json sl = StatusOf(fleet, later);
  const bool long_still_running = StateOf(fleet, a) == "running";
  EXPECT_EQ(sl["state"], "queued") << sl.dump(1);
  ASSERT_TRUE(long_still_running) << "the long job ended before the check: it proves nothing on this machine";
  ASSERT_TRUE(Eventually([&] { return Ended(fleet, later) && Ended(fleet, head); }, seconds(120))) << fleet.Logs();
  const json sa = StatusOf(fleet, a), sh = StatusOf(fleet, head), sd = StatusOf(fleet, later);
  EXPECT_EQ(sh["state"], "succeeded") << sh.dump(1);
  EXPECT_EQ(sd["state"], "succeeded") << sd.dump(1);
  EXPECT_GE(sh["started_unix_us"].get<int64_t>(), sa["ended_unix_us"].get<int64_t>());
  EXPECT_GE(sd["started_unix_us"].get<int64_t>(), sh["started_unix_us"].get<int64_t>());
}

TEST(Concurrent, NamedAgentsThatAreNotAttachedOrDisagreeWithAgentsAreRefusedNamingThem) {
  TempDir dir;
  Fleet fleet(dir, {}, kClient);
  AddAgents(fleet, 1);
  WriteFile(dir.str() + "/job.yaml", EpochsJob(1, 8, 0.01, "data"));
  CommandResult r = fleet.Client({"submit", dir.str() + "/job.yaml", "--agent-names", "agent-0,agent-9"});
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_TRUE(Contains(r.err, "--agent-names agent-0, agent-9: agent-9 not attached")) << r.err;
  r = fleet.Client({"submit", dir.str() + "/job.yaml", "--agent-names", "agent-0", "--agents", "2"});
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_TRUE(Contains(r.err, "--agents 2 and --agent-names (1 name(s)) disagree")) << r.err;
  r = fleet.Client({"submit", dir.str() + "/job.yaml", "--agent-names", "agent-0,agent-0"});
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_TRUE(Contains(r.err, "--agent-names: 'agent-0' is named twice")) << r.err;
  r = fleet.Client({"submit", dir.str() + "/job.yaml", "--agent-names", "agent-0", "--output", dir.str() + "/out"});
  EXPECT_PRED1(JobRan, r.exit_code) << Dump(r);
}

TEST(Concurrent, AnAgentKilledFailsOnlyTheJobItServed) {
  TempDir dir;
  Fleet fleet(dir, {}, kClient);
  AddAgents(fleet, 2);
  WriteFile(dir.str() + "/victim.yaml", EpochsJob(3, 60, 0.05, "data-v"));
  WriteFile(dir.str() + "/other.yaml", EpochsJob(2, 40, 0.05, "data-o"));
  const std::string victim = Detach(fleet, dir.str() + "/victim.yaml", {"--agent-names", "agent-1"});
  const std::string other = Detach(fleet, dir.str() + "/other.yaml", {"--agent-names", "agent-0"});
  ASSERT_TRUE(Eventually(
      [&] {
        const json v = StatusOf(fleet, victim), o = StatusOf(fleet, other);
        return v.is_object() && o.is_object() && v["state"] == "running" && o["state"] == "running" &&
               Contains(v.value("phase_id", ""), "train-epoch-");
      },
      seconds(60)))
      << fleet.Logs();
  fleet.agent(1).Signal(SIGKILL);
  ASSERT_TRUE(Eventually([&] { return Ended(fleet, victim); }, seconds(20))) << fleet.Logs();
  const json v = StatusOf(fleet, victim);
  EXPECT_EQ(v["state"], "failed") << v.dump(1);
  EXPECT_TRUE(Contains(v["message"].get<std::string>(), "agent 'agent-1'")) << v.dump(1);
  // The other job goes on to the end, on its own agent.
  ASSERT_TRUE(Eventually([&] { return Ended(fleet, other); }, seconds(120))) << fleet.Logs();
  const json o = StatusOf(fleet, other);
  EXPECT_EQ(o["state"], "succeeded") << o.dump(1);
  EXPECT_EQ(LoadJson(dir.str() + "/coord-results/" + other + "/summary.json")["epochs"], 2);
}

TEST(Concurrent, RestartMarksEveryRunningJobInterruptedAndKeepsTheQueuedOneQueued) {
  TempDir dir;
  Fleet fleet(dir, {"--store", dir.str() + "/jobs.db"}, kClient);
  AddAgents(fleet, 2, 30);
  WriteFile(dir.str() + "/long.yaml", EpochsJob(20, 40, 0.05, "data-long"));
  WriteFile(dir.str() + "/short.yaml", EpochsJob(1, 8, 0.01, "data-short"));
  const std::string a = Detach(fleet, dir.str() + "/long.yaml", {"--agents", "1"});
  const std::string b = Detach(fleet, dir.str() + "/long.yaml", {"--agents", "1"});
  ASSERT_TRUE(Eventually(
      [&] {
        const json sa = StatusOf(fleet, a), sb = StatusOf(fleet, b);
        return sa.is_object() && sb.is_object() && sa["epochs_done"] >= 1 && sb["epochs_done"] >= 1;
      },
      seconds(90)))
      << fleet.Logs();
  const std::string c = Detach(fleet, dir.str() + "/short.yaml", {"--agents", "2"});
  ASSERT_TRUE(Eventually([&] { return Contains(StatusOf(fleet, c).value("message", ""), "waiting for"); }, seconds(20)));
  fleet.coordinator().Signal(SIGKILL);
  ASSERT_NE(fleet.coordinator().Wait(milliseconds(5000)), -1);
  fleet.StartCoordinator();
  json list;
  ASSERT_TRUE(Eventually([&] { return (list = fleet.ClientJson({"list"})).is_object(); }, seconds(20)));
  ASSERT_EQ(list["jobs"].size(), 3u) << list.dump(1);
  for (const json& j : list["jobs"]) {
    if (j["job_id"] == c) continue;
    EXPECT_EQ(j["state"], "interrupted") << j.dump(1);
    EXPECT_EQ(j["has_results"], true) << j.dump(1);
    const json summary = LoadJson(dir.str() + "/coord-results/" + j["job_id"].get<std::string>() + "/summary.json");
    EXPECT_EQ(summary["dlio_ext"]["job_state"], "interrupted");
  }
  // The queued job stayed queued: restored as queued (or, the agents back already, placed since), never interrupted.
  int64_t interrupted_at = 0;
  for (const json& j : list["jobs"]) {
    if (j["job_id"] == c) {
      EXPECT_TRUE(j["state"] == "queued" || j["state"] == "running" || j["state"] == "succeeded") << j.dump(1);
    } else {
      interrupted_at = std::max(interrupted_at, j["ended_unix_us"].get<int64_t>());
    }
  }
  // Once the agents are back, the queued job runs on both, after the restart ended the others.
  json s;
  ASSERT_TRUE(Eventually([&] { return (s = StatusOf(fleet, c)).is_object() && s["state"] == "succeeded"; },
                         seconds(90)))
      << s.dump(1) << fleet.Logs();
  EXPECT_EQ(s["agents"].size(), 2u);
  EXPECT_GE(s["started_unix_us"].get<int64_t>(), interrupted_at) << s.dump(1);
  EXPECT_TRUE(Contains(fleet.coordinator().Log(), "1 queued job(s) restored")) << fleet.Logs();
}

}  // namespace
}  // namespace dlio::testing
