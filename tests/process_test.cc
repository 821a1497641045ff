// Process-level tests: real coordinator and agent processes over loopback gRPC, real files, real tools.
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A coordinator (serve) and N agents as separate processes.
class Fleet {
 public:
  Fleet(const TempDir& dir, int agents, int accelerators, const std::vector<std::string>& agent_extra = {}) {
    port_ = FreePort();
    coordinator_ = std::make_unique<Process>(
        std::vector<std::string>{Bin("dlio-coordinator"), "serve", "--listen", address(), "--results-dir",
                                 dir.str() + "/coord-results"},
        dir.str() + "/coordinator.log");
    fs::create_directories(dir.path() / "root");
    for (int i = 0; i < agents; ++i) {
      std::vector<std::string> argv = {Bin("dlio-agent"), "--coordinator", address(), "--data-root",
                                       dir.str() + "/root", "--name", "agent-" + std::to_string(i),
                                       "--accelerators", std::to_string(accelerators), "--reconnect-window", "3"};
      argv.insert(argv.end(), agent_extra.begin(), agent_extra.end());
      agents_.push_back(
          std::make_unique<Process>(argv, dir.str() + "/agent-" + std::to_string(i) + ".log"));
    }
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  Process& coordinator() { return *coordinator_; }
  Process& agent(int i) { return *agents_[i]; }

 private:
  int port_;
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> agents_;
};

CommandResult Submit(const Fleet& fleet, const std::string& job, const std::string& output, int agents) {
  return RunCommand({Bin("dlio-coordinator"), "submit", job, "--coordinator", fleet.address(), "--agents",
              std::to_string(agents), "--output", output, "--wait-for-agents", "30"},
             seconds(180));
}



class EndToEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(EndToEnd, CoordinatorAndTwoAgentsGenerateAndTrain) {
  const std::string format = GetParam();
  TempDir dir;
  Fleet fleet(dir, 2, 1);
  const std::string job = dir.str() + "/job.yaml";
  // 8 files x 4 samples, batch 2, 2 ranks: 8 steps per epoch, 2 epochs.
  WriteFile(job, Workload(format, 8, 4, 4096, 2, 0.001, 2, true));
  CommandResult r = Submit(fleet, job, dir.str() + "/out", 2);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << "\ncoordinator:\n" << fleet.coordinator().Log()
                            << "\nagent-0:\n" << fleet.agent(0).Log();
  EXPECT_NE(r.out.find("AU (%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos);

  const json summary = LoadJson(dir.str() + "/out/summary.json");
  const json& m = summary["metric"];
  EXPECT_TRUE(m["train_au_mean_percentage"].is_number());
  EXPECT_TRUE(m["train_throughput_mean_samples_per_second"].is_number());
  EXPECT_TRUE(m["train_io_mean_MB_per_second"].is_number());
  EXPECT_EQ(m["train_au_percentage"].size(), 2u);
  EXPECT_EQ(summary["num_accelerators"], 2);
  EXPECT_GT(m["train_read_bytes"].get<double>(), 0);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(fs::exists(dir.path() / "out" / (std::to_string(rank) + "_output.json")));
    EXPECT_TRUE(fs::exists(dir.path() / "out" / (std::to_string(rank) + "_per_epoch_stats.json")));
    const json out = LoadJson(dir.str() + "/out/" + std::to_string(rank) + "_output.json");
    EXPECT_EQ(out["1"]["proc"]["block1"].size(), 8u);  // 8 files x 4 samples / (2 ranks x batch 2) steps
  }
  // The data files are where DLIO puts them, with DLIO's names, and no temporary file is left.
  const fs::path train = dir.path() / "root" / "data" / "train";
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(train)) names.insert(e.path().filename().string());
  EXPECT_EQ(names.size(), 8u);
  EXPECT_TRUE(names.count("img_0_of_8." + format)) << *names.begin();
  if (format != "tfrecord") {
    CommandResult py = RunCommand({"/usr/bin/python3", SourceDir() + "/tests/python/check_npz_hdf5.py", train.string()});
    EXPECT_EQ(py.exit_code, 0) << py.out << py.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EndToEnd, ::testing::Values("npz", "hdf5", "tfrecord"));

TEST(Fleet, AgentWithAnotherProtocolVersionIsRefusedNamingBothVersions) {
  TempDir dir;
  Fleet fleet(dir, 0, 1);
  fs::create_directories(dir.path() / "root");
  Process agent({Bin("dlio-agent"), "--coordinator", fleet.address(), "--data-root", dir.str() + "/root", "--name",
                 "old-agent", "--protocol-version", "999", "--reconnect-window", "5"},
                dir.str() + "/old.log");
  const int rc = agent.Wait(milliseconds(15000));
  ASSERT_NE(rc, -1) << "the refused agent did not exit: " << agent.Log();
  EXPECT_NE(rc, 0);
  const std::string log = agent.Log();
  EXPECT_NE(log.find("999"), std::string::npos) << log;
  EXPECT_NE(log.find("version 2"), std::string::npos) << log;
  EXPECT_NE(fleet.coordinator().Log().find("999"), std::string::npos);
}

TEST(Fleet, AgentExitsCleanlyWhenTheCoordinatorIsUnreachable) {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  Process agent({Bin("dlio-agent"), "--coordinator", "127.0.0.1:" + std::to_string(FreePort()), "--data-root",
                 dir.str(), "--reconnect-window", "1"},
                dir.str() + "/agent.log");
  const int rc = agent.Wait(milliseconds(15000));
  EXPECT_EQ(rc, 0) << agent.Log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(10));
  EXPECT_NE(agent.Log().find("unreachable"), std::string::npos) << agent.Log();
}

TEST(Fleet, SecondAgentWithTheSameNameIsRefusedNamingIt) {
  TempDir dir;
  Fleet fleet(dir, 1, 1);
  ASSERT_TRUE(Eventually([&] { return fleet.agent(0).Log().find("attached") != std::string::npos; }, seconds(10)));
  Process dup({Bin("dlio-agent"), "--coordinator", fleet.address(), "--data-root", dir.str() + "/root", "--name",
               "agent-0"},
              dir.str() + "/dup.log");
  const int rc = dup.Wait(milliseconds(10000));
  EXPECT_NE(rc, 0);
  EXPECT_NE(dup.Log().find("agent-0"), std::string::npos) << dup.Log();
}

TEST(Metrics, PromtoolAcceptsAgentMetricsTakenDuringARun) {
  TempDir dir;
  const int mport = FreePort();
  Fleet fleet(dir, 1, 2, {"--metrics-listen", "127.0.0.1:" + std::to_string(mport)});
  const std::string job = dir.str() + "/job.yaml";
  // 2 ranks x 20 steps x 0.05 s: about 1 s of training to scrape in the middle of.
  WriteFile(job, Workload("npz", 80, 1, 4096, 2, 0.05, 1, true));
  CommandResult r;
  std::thread submit([&] { r = Submit(fleet, job, dir.str() + "/out", 1); });
  std::string metrics;
  const bool seen = Eventually(
      [&] {
        metrics = HttpGet(mport, "/metrics");
        // Both ranks: the second registers a moment after the first.
        return metrics.find("dlio_samples_total{") != std::string::npos &&
               metrics.find("dlio_read_bytes_total{") != std::string::npos &&
               metrics.find("rank=\"1\"") != std::string::npos;
      },
      seconds(60));
  submit.join();
  ASSERT_TRUE(seen) << metrics;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* name : {"dlio_read_bytes_total", "dlio_samples_total", "dlio_read_latency_seconds_bucket",
                           "dlio_accelerator_utilization_ratio"}) {
    EXPECT_NE(metrics.find(name), std::string::npos) << name;
  }
  EXPECT_NE(metrics.find("job_id=\""), std::string::npos);
  EXPECT_NE(metrics.find("agent=\"agent-0\""), std::string::npos);
  EXPECT_NE(metrics.find("rank=\"1\""), std::string::npos);
  EXPECT_EQ(metrics.find("job=\""), std::string::npos) << "the `job` label belongs to Prometheus";
  WriteFile(dir.str() + "/metrics.txt", metrics);
  CommandResult lint = RunCommand({"sh", "-c", "promtool check metrics < " + dir.str() + "/metrics.txt"});
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
}

TEST(BadInput, EachBadJobExitsTwoWithOneLineNamingTheKeyAndWritesNothing) {
  struct Case {
    std::string name, yaml, expect;
  };
  const std::vector<Case> cases = {
      {"unknown key", Workload("npz", 4, 1, 4096, 1, 0, 1, true, "") + "reader_x: 1\n", "reader_x"},
      {"misspelt key", "dataset:\n  num_file_train: 4\n", "num_files_train"},
      {"negative files", "dataset:\n  num_files_train: -1\n", "dataset.num_files_train"},
      {"not a number", "dataset:\n  record_length_bytes: abc\n", "dataset.record_length_bytes"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    WriteFile(dir.str() + "/job.yaml", c.yaml);
    CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "job.yaml", "--local-agents", "1"}, seconds(30), dir.str());
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    size_t entries = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) entries += e.path().filename() != "job.yaml";
    EXPECT_EQ(entries, 0u) << c.name << ": something was written";
  }
  TempDir dir;
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "run", "missing.yaml", "--local-agents", "1"}, seconds(30),
                        dir.str());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Cli, HelpDescribesEveryOption) {
  const std::vector<std::vector<std::string>> commands = {
      {Bin("dlio-coordinator"), "--help"},       {Bin("dlio-coordinator"), "serve", "--help"},
      {Bin("dlio-coordinator"), "submit", "--help"}, {Bin("dlio-coordinator"), "run", "--help"},
      {Bin("dlio-coordinator"), "status", "--help"}, {Bin("dlio-coordinator"), "list", "--help"},
      {Bin("dlio-coordinator"), "cancel", "--help"}, {Bin("dlio-coordinator"), "results", "--help"},
      {Bin("dlio-agent"), "--help"}};
  // An option line starts with "-" (after indentation); its description follows a gap of two or more spaces.
  const std::regex option_line(R"(^\s+-.*$)");
  const std::regex described(R"(^\s+-\S.*\S\s{2,}\S.*$)");
  for (const auto& argv : commands) {
    CommandResult r = RunCommand(argv, seconds(10));
    ASSERT_EQ(r.exit_code, 0) << argv.back();
    std::istringstream in(r.out);
    std::string line;
    int options = 0;
    while (std::getline(in, line)) {
      if (!std::regex_match(line, option_line)) continue;
      ++options;
      EXPECT_TRUE(std::regex_match(line, described)) << "undocumented option in `" << argv.back() << "`: " << line;
    }
    EXPECT_GT(options, 0) << r.out;
  }
}

TEST(Cli, ReadmeAndDocsCliReferenceAreTheCurrentHelpText) {
  CommandResult r = RunCommand({"env", "DLIO_BIN_DIR=" + BinDir(), "bash", SourceDir() + "/scripts/gen-cli-docs.sh",
                                "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace dlio::testing
