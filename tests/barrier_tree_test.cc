// The step barrier's relay tree (issue 29 item 2) with real processes: 7 agents (1 accelerator each) with fan-out 3
// forced by dlio_ext.barrier_fanout and dlio_ext.barrier_tree_min_agents (relays at placement 0, 3 and 6, groups of
// 3, 3 and 1). The tree runs the same steps and samples as the star and keeps its AU (announce and after_compute); a
// relay killed mid-epoch (kill -9) fails the job naming the relay and its group; a bad fan-out is refused naming the
// key. Under TLS: without relay certificates the star stays; with them the tree runs over TLS; a relay whose
// certificate lacks its announced name fails the job naming it; bad relay certificate flags are refused naming the
// flag. Run alone: it measures timing.
#include <signal.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
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

std::vector<RelayLine> RelayLines(Fleet& fleet, const std::string& job, int agents = kAgents,
                                  const std::string& level = "") {
  std::vector<RelayLine> out;
  // `level`: "level 1 of " for the relays of relays' lines of level 1 (a recursive tree; none at level 0).
  const std::regex line("agent '(agent-\\d)': relays " + level +
                        R"(the step barrier of job (\S+) phase (\S+) for (\d) agent\(s\): ([a-z0-9,-]+))");
  for (int i = 0; i < agents; ++i) {
    const std::string log = fleet.agent(i).Log();
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      if (m[2].str() == job) out.push_back({m[1].str(), m[3].str(), m[5].str(), std::stoi(m[4].str())});
    }
  }
  return out;
}

json RunJob(Fleet& fleet, const TempDir& dir, const std::string& name, const std::string& extra, int agents = kAgents) {
  const std::string job = dir.str() + "/" + name + ".yaml";
  // world N x batch 2 x 12 steps = 24 N single-sample files (168 for 7 agents), 2 epochs of 50 ms steps.
  WriteFile(job, Workload("npz", 24 * agents, 1, 16384, 2, 0.05, 2, true, extra));
  const std::string out = dir.str() + "/out-" + name;
  const CommandResult r = Submit(fleet, job, out, agents);
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
    // The announce tree keeps the star's AU within 5 points. after_compute waits for its release after compute, so
    // its step carries the release's trip down the three levels: 2.3-2.6 points below the star alone here, 5.4
    // points (93.2 % against 98.6 %) beside the 8-agent barrier test on the 2 cores; it keeps the star's within 10.
    const double points = m == &tree ? 5.0 : 10.0;
    EXPECT_NEAR((*m)["train_au_mean_percentage"].get<double>(), star["train_au_mean_percentage"].get<double>(),
                points)
        << m->dump(1) << star.dump(1);
    EXPECT_NEAR((*m)["train_throughput_mean_samples_per_second"].get<double>(),
                star["train_throughput_mean_samples_per_second"].get<double>(),
                points / 100 * star["train_throughput_mean_samples_per_second"].get<double>());
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

// Agents of a TLS fleet without relay certificates (--relay-tls-cert) offer no relay listener, so a job that asks for
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

// --- the recursive tree: relays of relays (base/barrier_tree.h BuildTree) ---
// 9 agents, fan-out 2 forced: groups {0,1} {2,3} {4,5} {6,7} {8}; their relays grouped {0,2} {4,6} {8}; then {0,4}
// {8}: the coordinator talks to agent-0 and agent-8 only; agent-4 relays levels 0 and 1 under agent-0.
constexpr int kDeep = 9;
const char kDeepTree[] = "dlio_ext:\n  barrier_fanout: 2\n  barrier_tree_min_agents: 2\n";

TEST(BarrierTree, ThreeLevelsRunTheStarsStepsAndSamplesAndKeepItsAu) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  Fleet fleet(dir, kDeep, 1);
  const json star = RunJob(fleet, dir, "star", "", kDeep);
  const json tree = RunJob(fleet, dir, "tree", kDeepTree, kDeep);
  const json after = RunJob(fleet, dir, "after", std::string(kDeepTree) + "  barrier: after_compute\n", kDeep);
  ASSERT_FALSE(star.is_null());
  ASSERT_FALSE(tree.is_null());
  ASSERT_FALSE(after.is_null());
  for (const json* m : {&tree, &after}) {
    const std::string job = (*m)["job"].get<std::string>();
    // Per training epoch (2): 5 relays of level 0, 3 of level 1 (agent-0, -4, -8), 2 of level 2 (agent-0, -8).
    EXPECT_EQ(RelayLines(fleet, job, kDeep).size(), 10u) << fleet.Logs();
    const std::vector<RelayLine> l1 = RelayLines(fleet, job, kDeep, "level 1 of ");
    const std::vector<RelayLine> l2 = RelayLines(fleet, job, kDeep, "level 2 of ");
    EXPECT_EQ(l1.size(), 6u) << fleet.Logs();
    ASSERT_EQ(l2.size(), 4u) << fleet.Logs();
    for (const RelayLine& r : l2) {
      EXPECT_TRUE(r.members == "agent-0,agent-4" || r.members == "agent-8") << r.relay << ": " << r.members;
    }
    for (const char* k : {"train_read_bytes", "train_au_mean_percentage"}) ASSERT_TRUE(m->contains(k)) << k;
    EXPECT_EQ((*m)["train_read_bytes"], star["train_read_bytes"]);
    // The announce tree keeps the star's AU within 5 points. after_compute waits for its release after compute, so
    // its step carries the release's trip down the three levels: 2.3-2.6 points below the star alone here, 5.4
    // points (93.2 % against 98.6 %) beside the 8-agent barrier test on the 2 cores; it keeps the star's within 10.
    const double points = m == &tree ? 5.0 : 10.0;
    EXPECT_NEAR((*m)["train_au_mean_percentage"].get<double>(), star["train_au_mean_percentage"].get<double>(),
                points)
        << m->dump(1) << star.dump(1);
    EXPECT_NEAR((*m)["train_throughput_mean_samples_per_second"].get<double>(),
                star["train_throughput_mean_samples_per_second"].get<double>(),
                points / 100 * star["train_throughput_mean_samples_per_second"].get<double>());
  }
  std::printf("9 agents: AU star %.2f %%, 3-level tree %.2f %%, tree after_compute %.2f %%\n",
              star["train_au_mean_percentage"].get<double>(), tree["train_au_mean_percentage"].get<double>(),
              after["train_au_mean_percentage"].get<double>());
}

// Starts a 9-agent job over the 3-level tree (120 steps of 50 ms, ~6 s), kills `victim` with kill -9 one second
// into its first epoch, and returns the submit's output (exit code 1 expected, within 20 s of the kill).
std::string KillMidEpoch(const TempDir& dir, Fleet& fleet, int victim) {
  WriteFile(dir.str() + "/job.yaml", Workload("npz", kDeep * 120, 1, 4096, 1, 0.05, 1, true, kDeepTree));
  Process submit({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", fleet.address(),
                  "--wait-for-agents", "30", "--agents", std::to_string(kDeep), "--output", dir.str() + "/out"},
                 dir.str() + "/submit.out");
  std::string job;
  EXPECT_TRUE(Eventually([&] { return !(job = JobIdIn(submit.Log())).empty(); }, seconds(30))) << fleet.Logs();
  // The tree is up: agent-0 relays its level 2.
  EXPECT_TRUE(Eventually([&] { return !RelayLines(fleet, job, kDeep, "level 2 of ").empty(); }, seconds(60)))
      << fleet.Logs();
  std::this_thread::sleep_for(seconds(1));  // mid-epoch: the steps are running (1 s of the epoch's ~6)
  fleet.agent(victim).Signal(SIGKILL);
  const int rc = submit.Wait(milliseconds(20000));
  EXPECT_NE(rc, -1) << "submit did not exit within 20 s of the kill\n" << fleet.Logs();
  EXPECT_EQ(rc, 1);
  return submit.Log();
}

TEST(BarrierTree, AMidLevelRelayKilledFailsTheJobNamingItAndItsSubtree) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  Fleet fleet(dir, kDeep, 1);
  const std::string out = KillMidEpoch(dir, fleet, 4);  // relays {4,5} and {4,6} under agent-0: agents 4..7
  EXPECT_NE(out.find("relay agent-4 lost: group agent-4..agent-7; agent 'agent-4'"), std::string::npos)
      << out << fleet.Logs();
  EXPECT_NE(out.find("phase train-epoch-1"), std::string::npos) << out;
}

// A plain member (no relay) lost mid-epoch: its relay's RelayMemberLost or its own session's end, whichever reaches
// the coordinator first, fails the job; both wordings name the member (and neither calls it a relay).
TEST(BarrierTree, AMemberKilledMidEpochFailsTheJobNamingTheMember) {
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  Fleet fleet(dir, kDeep, 1);
  const std::string out = KillMidEpoch(dir, fleet, 5);  // a plain member of agent-4's level-0 group
  const size_t at = out.find("agent 'agent-5' (rank 5) lost during job");
  ASSERT_NE(at, std::string::npos) << out << fleet.Logs();
  EXPECT_EQ(out.find("relay agent-5"), std::string::npos) << out;
  EXPECT_NE(out.find("phase train-epoch-1"), std::string::npos) << out;
  const bool by_relay = out.find("reported by its relay agent-4", at) != std::string::npos;
  std::printf("the member's loss reached the coordinator first through %s\n",
              by_relay ? "its relay's RelayMemberLost" : "its own session's end");
}

// --- TLS on the relay hop: 4 agents of a mutual-TLS fleet with fan-out 3 forced (relays agent-0 and agent-3,
// groups of 3 and 1) ---

// The TLS material in `d` (the CAs, the coordinator's and the agents' client certificates), the relay certificates
// `relays` (stem -> DNS names; signed by the test CA unless the stem starts with "untrusted") and a TLS fleet of 4
// agents, agent-i given `relay_flags(i)` beside its client TLS flags.
struct TlsTreeFleet {
  std::vector<std::string> client_tls;
  std::unique_ptr<Fleet> fleet;
};

TlsTreeFleet StartTlsTreeFleet(const TempDir& dir, const std::map<std::string, std::vector<std::string>>& relays,
                               const std::function<std::vector<std::string>(int)>& relay_flags) {
  const std::string d = dir.str();
  TlsTreeFleet out;
  const CommandResult ssl = MakeTestCertificates(d);
  EXPECT_EQ(ssl.exit_code, 0) << ssl.out << ssl.err;
  for (const auto& [stem, dns] : relays) {
    const CommandResult c = MakeRelayCertificate(d, stem, dns, stem.rfind("untrusted", 0) == 0 ? "other-ca" : "ca");
    EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  }
  out.client_tls = {"--tls-ca", d + "/ca.pem", "--tls-cert", d + "/client.pem", "--tls-key", d + "/client.key"};
  fs::create_directories(dir.path() / "root");
  out.fleet = std::make_unique<Fleet>(
      dir, std::vector<std::string>{"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key", "--tls-ca",
                                    d + "/ca.pem"},
      out.client_tls);
  for (int i = 0; i < 4; ++i) {
    std::vector<std::string> flags = out.client_tls;
    for (const std::string& f : relay_flags(i)) flags.push_back(f);
    out.fleet->AddAgent("agent-" + std::to_string(i), flags);
  }
  return out;
}

// Per-node relay certificates (agent-i holds agent-i.relay.test, announced with --relay-tls-name): the job asking for
// the tree runs through it over TLS (the relays log their groups; under the tree the coordinator counts only the
// relays' arrivals, so a job that completes had every step through them) with the star's steps and samples.
TEST(BarrierTree, ATlsFleetWithRelayCertificatesRunsTheTreeWithTheStarsSteps) {
  TempDir dir;
  const std::string d = dir.str();
  std::map<std::string, std::vector<std::string>> certs;
  for (int i = 0; i < 4; ++i) certs["relay-" + std::to_string(i)] = {"agent-" + std::to_string(i) + ".relay.test"};
  TlsTreeFleet tls = StartTlsTreeFleet(dir, certs, [&](int i) {
    const std::string stem = d + "/relay-" + std::to_string(i);
    return std::vector<std::string>{"--relay-tls-cert", stem + ".pem", "--relay-tls-key", stem + ".key",
                                    "--relay-tls-name", "agent-" + std::to_string(i) + ".relay.test"};
  });
  Fleet& fleet = *tls.fleet;
  json metric[2];
  std::string job[2];
  for (int t = 0; t < 2; ++t) {  // the star (4 agents: below the default threshold of 33), then the tree
    const std::string name = t == 0 ? "star" : "tree";
    WriteFile(d + "/" + name + ".yaml", Workload("npz", 4 * 12, 1, 4096, 1, 0.02, 2, true, t == 0 ? "" : kTree));
    const CommandResult r = fleet.Client({"submit", d + "/" + name + ".yaml", "--wait-for-agents", "30", "--agents",
                                          "4", "--barrier-timeout", "30", "--output", d + "/out-" + name},
                                         seconds(120));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << fleet.Logs();
    job[t] = JobIdIn(r.out + r.err);
    metric[t] = LoadJson(d + "/out-" + name + "/summary.json")["metric"];
  }
  EXPECT_TRUE(RelayLines(fleet, job[0], 4).empty()) << "the star has no relays";
  const std::vector<RelayLine> relays = RelayLines(fleet, job[1], 4);
  EXPECT_EQ(relays.size(), 4u) << fleet.Logs();  // relays agent-0 (3 agents) and agent-3 (1), 2 epochs
  for (const RelayLine& l : relays) EXPECT_TRUE(l.relay == "agent-0" || l.relay == "agent-3") << l.relay;
  const std::string logs = fleet.Logs();
  EXPECT_NE(logs.find("barrier relay listener on port"), std::string::npos) << logs;
  EXPECT_NE(logs.find("serves TLS as 'agent-0.relay.test'"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("TLS handshake with relay"), std::string::npos) << logs;
  EXPECT_EQ(metric[1]["train_read_bytes"], metric[0]["train_read_bytes"]);
  EXPECT_NEAR(metric[1]["train_throughput_mean_samples_per_second"].get<double>(),
              metric[0]["train_throughput_mean_samples_per_second"].get<double>(),
              0.1 * metric[0]["train_throughput_mean_samples_per_second"].get<double>())
      << metric[1].dump(1) << metric[0].dump(1);
}

// The relays share one wildcard certificate (*.relay.test), each announcing a name under it; agent-0 (a relay)
// announces one its certificate does not hold: its members' handshakes fail, and the job fails at its first training
// epoch with one line naming the relay and the certificate problem, long before the barrier timeout (120 s).
TEST(BarrierTree, ARelayWhoseCertificateLacksItsNameFailsTheJobNamingIt) {
  TempDir dir;
  const std::string d = dir.str();
  TlsTreeFleet tls = StartTlsTreeFleet(dir, {{"relay", {"*.relay.test"}}}, [&](int i) {
    const std::string name = i == 0 ? "agent-0.elsewhere.test" : "agent-" + std::to_string(i) + ".relay.test";
    return std::vector<std::string>{"--relay-tls-cert", d + "/relay.pem", "--relay-tls-key", d + "/relay.key",
                                    "--relay-tls-name", name};
  });
  Fleet& fleet = *tls.fleet;
  WriteFile(d + "/job.yaml", Workload("npz", 4 * 8, 1, 4096, 1, 0.02, 1, true, kTree));
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = fleet.Client({"submit", d + "/job.yaml", "--wait-for-agents", "30", "--agents", "4",
                                        "--barrier-timeout", "120", "--output", d + "/out"},
                                       seconds(110));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err << fleet.Logs();
  EXPECT_LT(took, seconds(60)) << "bounded by the handshake, not the barrier timeout";
  const std::string out = r.out + r.err;
  EXPECT_NE(out.find("TLS handshake with relay agent-0 (127.0.0.1:"), std::string::npos) << out << fleet.Logs();
  EXPECT_NE(out.find("its certificate does not hold the name 'agent-0.elsewhere.test' it announced"),
            std::string::npos) << out;
  EXPECT_NE(out.find("phase train-epoch-1"), std::string::npos) << out;
  // agent-0 said so at its start already.
  EXPECT_NE(fleet.agent(0).Log().find("the certificate holds DNS:*.relay.test, not 'agent-0.elsewhere.test'"),
            std::string::npos) << fleet.agent(0).Log();
}

// The relay certificate flags alone, before anything connects: each bad combination or file is one line naming its
// flag, exit 2.
TEST(BarrierTree, BadRelayTlsFlagsAreOneLineNamingTheFlag) {
  TempDir dir;
  const std::string d = dir.str();
  ASSERT_EQ(MakeTestCertificates(d).exit_code, 0);
  ASSERT_EQ(MakeRelayCertificate(d, "relay", {"relay.test"}).exit_code, 0);
  fs::create_directories(dir.path() / "root");
  const std::vector<std::string> tls = {"--tls-ca", d + "/ca.pem"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--relay-tls-cert", d + "/relay.pem"}, "dlio-agent: --relay-tls-cert needs --relay-tls-key"},
      {{"--relay-tls-key", d + "/relay.key"}, "dlio-agent: --relay-tls-key needs --relay-tls-cert"},
      {{"--relay-tls-name", "relay.test"}, "dlio-agent: --relay-tls-name needs --relay-tls-cert"},
      {{"--relay-tls-cert", d + "/nowhere.pem", "--relay-tls-key", d + "/relay.key"},
       "dlio-agent: --relay-tls-cert: cannot read '" + d + "/nowhere.pem' (No such file or directory)"},
      {{"--relay-tls-cert", d + "/relay.pem", "--relay-tls-key", d + "/client.key"},
       "dlio-agent: --relay-tls-key: does not match --relay-tls-cert"},
  };
  for (const auto& [flags, want] : cases) {
    std::vector<std::string> argv = {Bin("dlio-agent"), "--coordinator", "127.0.0.1:1", "--data-root",
                                     d + "/root", "--reconnect-window", "0"};
    argv.insert(argv.end(), tls.begin(), tls.end());
    argv.insert(argv.end(), flags.begin(), flags.end());
    const CommandResult r = RunCommand(argv, seconds(30), d);
    EXPECT_EQ(r.exit_code, 2) << want << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
  // Without --tls-ca (a plaintext fleet) a relay certificate is refused: its members could not verify it.
  const CommandResult plain = RunCommand({Bin("dlio-agent"), "--coordinator", "127.0.0.1:1", "--data-root",
                                          d + "/root", "--relay-tls-cert", d + "/relay.pem", "--relay-tls-key",
                                          d + "/relay.key"},
                                         seconds(30), d);
  EXPECT_EQ(plain.exit_code, 2) << plain.out << plain.err;
  EXPECT_NE(plain.err.find("dlio-agent: --relay-tls-cert needs --tls-ca"), std::string::npos) << plain.err;
}

}  // namespace
}  // namespace dlio::testing
