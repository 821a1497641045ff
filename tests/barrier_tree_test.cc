// The step barrier's relay tree (issue 29 item 2) with real processes: 7 agents (1 accelerator each) with fan-out 3
// forced by dlio_ext.barrier_fanout and dlio_ext.barrier_tree_min_agents (relays at placement 0, 3 and 6, groups of
// 3, 3 and 1). The tree runs the same steps and samples as the star and keeps its AU (announce and after_compute); a
// relay killed mid-epoch (kill -9) fails the job naming the relay and its group; a bad fan-out is refused naming the
// key. Run alone: it measures timing.
#include <signal.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "gtest/gtest.h"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kAgents = 7;
const char kTree[] = "dlio_ext:\n  barrier_fanout: 3\n  barrier_tree_min_agents: 2\n";

std::string JobIdIn(const std::string& text) {
  std::smatch m;
  static const std::regex id(R"(job (\d{8}-\d{6}-\d+-[0-9a-f]{4}))");
  return std::regex_search(text, m, id) ? m[1].str() : "";
}

// A relay's log line of a job: "agent 'agent-3': relays the step barrier of job J phase P for 3 agent(s): a,b,c".
struct RelayLine {
  std::string relay, phase, members;
  int group_size = 0;
};

std::vector<RelayLine> RelayLines(Fleet& fleet, const std::string& job) {
  std::vector<RelayLine> out;
  static const std::regex line(R"(agent '(agent-\d)': relays the step barrier of job (\S+) phase (\S+) for (\d) )"
                               R"(agent\(s\): ([a-z0-9,-]+))");
  for (int i = 0; i < kAgents; ++i) {
    const std::string log = fleet.agent(i).Log();
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      if (m[2].str() == job) out.push_back({m[1].str(), m[3].str(), m[5].str(), std::stoi(m[4].str())});
    }
  }
  return out;
}

json RunJob(Fleet& fleet, const TempDir& dir, const std::string& name, const std::string& extra) {
  const std::string job = dir.str() + "/" + name + ".yaml";
  // world 7 x batch 2 x 12 steps = 168 single-sample files, 2 epochs of 50 ms steps.
  WriteFile(job, Workload("npz", 168, 1, 16384, 2, 0.05, 2, true, extra));
  const std::string out = dir.str() + "/out-" + name;
  const CommandResult r = Submit(fleet, job, out, kAgents);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << fleet.Logs();
  if (r.exit_code != 0) return json();
  json metric = LoadJson(out + "/summary.json")["metric"];
  metric["job"] = JobIdIn(r.out + r.err);
  return metric;
}

TEST(BarrierTree, TheTreeRunsTheStarsStepsAndSamplesAndKeepsItsAu) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  Fleet fleet(dir, kAgents, 1);
  const json star = RunJob(fleet, dir, "star", "");  // 7 agents: below the default threshold of 33
  const json tree = RunJob(fleet, dir, "tree", kTree);
  const json after = RunJob(fleet, dir, "after", std::string(kTree) + "  barrier: after_compute\n");
  ASSERT_FALSE(star.is_null());
  ASSERT_FALSE(tree.is_null());
  ASSERT_FALSE(after.is_null());
  EXPECT_TRUE(RelayLines(fleet, star["job"].get<std::string>()).empty()) << "the star has no relays";
  for (const json* m : {&tree, &after}) {
    const std::vector<RelayLine> relays = RelayLines(fleet, (*m)["job"].get<std::string>());
    // 3 relays per training epoch, 2 epochs; groups of 3, 3 and 1.
    EXPECT_EQ(relays.size(), 6u) << fleet.Logs();
    for (const char* k : {"train_read_bytes", "train_au_mean_percentage"}) ASSERT_TRUE(m->contains(k)) << k;
    EXPECT_EQ((*m)["train_read_bytes"], star["train_read_bytes"]);
    EXPECT_NEAR((*m)["train_au_mean_percentage"].get<double>(), star["train_au_mean_percentage"].get<double>(), 5.0)
        << m->dump(1) << star.dump(1);
    EXPECT_NEAR((*m)["train_throughput_mean_samples_per_second"].get<double>(),
                star["train_throughput_mean_samples_per_second"].get<double>(),
                0.05 * star["train_throughput_mean_samples_per_second"].get<double>());
  }
  std::printf("AU star %.2f %%, tree %.2f %%, tree after_compute %.2f %%\n",
              star["train_au_mean_percentage"].get<double>(), tree["train_au_mean_percentage"].get<double>(),
              after["train_au_mean_percentage"].get<double>());
}

TEST(BarrierTree, ARelayKilledMidEpochFailsTheJobNamingTheRelayAndItsGroup) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  Fleet fleet(dir, kAgents, 1);
  // 7 x 120 files, batch 1: 120 steps of 50 ms, about 6 s of training.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 7 * 120, 1, 4096, 1, 0.05, 1, true, kTree));
  Process submit({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", fleet.address(),
                  "--wait-for-agents", "30", "--agents", std::to_string(kAgents), "--output", dir.str() + "/out"},
                 dir.str() + "/submit.out");
  std::string job;
  ASSERT_TRUE(Eventually([&] { return !(job = JobIdIn(submit.Log())).empty(); }, seconds(30))) << fleet.Logs();
  std::string relay, group;
  ASSERT_TRUE(Eventually(
      [&] {
        for (const RelayLine& m : RelayLines(fleet, job)) {
          if (m.group_size == 3) {
            relay = m.relay;
            const std::string& members = m.members;
            group = members.substr(0, members.find(',')) + ".." + members.substr(members.rfind(',') + 1);
            return true;
          }
        }
        return false;
      },
      seconds(60)))
      << fleet.Logs();
  // Mid-epoch: the steps are running (1 s of the epoch's ~6).
  std::this_thread::sleep_for(seconds(1));
  fleet.agent(std::stoi(relay.substr(relay.find('-') + 1))).Signal(SIGKILL);
  const int rc = submit.Wait(milliseconds(20000));
  ASSERT_NE(rc, -1) << "submit did not exit within 20 s of the kill\n" << fleet.Logs();
  EXPECT_EQ(rc, 1);
  const std::string out = submit.Log();
  EXPECT_NE(out.find("relay " + relay + " lost: group " + group + "; agent '" + relay + "'"), std::string::npos)
      << out << fleet.Logs();
  EXPECT_NE(out.find("phase train-epoch-1"), std::string::npos) << out;
}

// The relay hop has no TLS of its own yet: the agents of a TLS fleet offer no relay listener, so a job that asks for
// the tree keeps the star and runs, rather than its members failing their handshakes with the relays.
TEST(BarrierTree, ATlsFleetKeepsTheStar) {
  TempDir dir;
  const std::string d = dir.str();
  CommandResult ssl = MakeTestCertificates(d);
  ASSERT_EQ(ssl.exit_code, 0) << ssl.out << ssl.err;
  const std::vector<std::string> client_tls = {"--tls-ca", d + "/ca.pem", "--tls-cert", d + "/client.pem",
                                               "--tls-key", d + "/client.key"};
  fs::create_directories(dir.path() / "root");
  Fleet fleet(dir, {"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key", "--tls-ca", d + "/ca.pem"},
              client_tls);
  for (int i = 0; i < 4; ++i) fleet.AddAgent("agent-" + std::to_string(i), client_tls);  // groups of 3 and 1
  WriteFile(d + "/job.yaml", Workload("npz", 4 * 8, 1, 4096, 1, 0.02, 1, true, kTree));
  const CommandResult r = fleet.Client({"submit", d + "/job.yaml", "--wait-for-agents", "30", "--agents", "4",
                                        "--barrier-timeout", "20", "--output", d + "/out"},
                                       seconds(90));
  EXPECT_PRED1(JobRan, r.exit_code) << r.out << r.err << fleet.Logs();
  const std::string logs = fleet.Logs();
  EXPECT_NE(logs.find("no barrier relay listener under TLS"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("relays the step barrier"), std::string::npos) << logs;
}

TEST(BarrierTree, ABadFanoutIsRefusedNamingTheKeyAndTheRange) {
  TempDir dir;
  const std::string job = dir.str() + "/job.yaml";
  WriteFile(job, Workload("npz", 8, 1, 4096, 1, 0.01, 1, true, "dlio_ext:\n  barrier_fanout: 1\n"));
  fs::create_directories(dir.path() / "root");
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", job, "--local-agents", "2", "--accelerators", "1",
                                "--data-root", dir.str() + "/root", "--output", dir.str() + "/out"},
                               std::chrono::seconds(60), dir.str());
  EXPECT_NE(r.exit_code, 0);
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("dlio_ext.barrier_fanout"), std::string::npos) << all;
  EXPECT_NE(all.find("[2, 4096]"), std::string::npos) << all;
}

}  // namespace
}  // namespace dlio::testing
