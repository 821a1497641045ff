// Process tests of the terminal's small gaps found when the tool was tried as a new user (issue 26 item 7), over the
// real binaries:
//  - --version of dlio-coordinator and dlio-agent: one line, the version and the commit, exit 0;
//  - a busy port on serve --listen, serve/run/dlio-agent --metrics-listen: one clean line naming the flag and the
//    address (no gRPC or CivetServer internals), exit 2;
//  - --coordinator (and $DLIO_COORDINATOR) not of the HOST:PORT form: "--coordinator: expected HOST:PORT, got
//    '7543'", exit 2, in every client verb and the agent;
//  - cancel that cannot confirm the stop (an agent frozen by SIGSTOP): exit 1, naming the agent.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

using std::chrono::seconds;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

size_t Lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

size_t LinesNotStartingWith(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0 ? 0 : 1;
  return n;
}

// What the busy-port and address lines must never show: gRPC's and CivetServer's own words.
void ExpectNoInternals(const std::string& text) {
  for (const char* internal : {"CivetServer", "null context", "chttp2", "UNKNOWN:", "No address added", "grpc",
                               "errno", "C-ares", "DNS resolution"}) {
    EXPECT_FALSE(Contains(text, internal)) << "'" << internal << "' in: " << text;
  }
}

// A TCP socket listening on 127.0.0.1 on a port the kernel picked; closed by the destructor.
class BusyPort {
 public:
  BusyPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(fd_, 4);
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~BusyPort() { close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// The project's version, as CMakeLists.txt declares it (project(... VERSION x.y.z ...)).
std::string ProjectVersion() {
  std::smatch m;
  const std::string cmake = ReadFile(SourceDir() + "/CMakeLists.txt");
  return std::regex_search(cmake, m, std::regex(R"(project\(\S+ VERSION (\S+))")) ? m[1].str() : "";
}

TEST(Version, BothBinariesPrintOneLineWithTheVersionAndTheCommitAndExitZero) {
  const std::string version = ProjectVersion();
  ASSERT_FALSE(version.empty());
  for (const char* bin : {"dlio-coordinator", "dlio-agent"}) {
    const CommandResult r = RunCommand({Bin(bin), "--version"}, seconds(10));
    ASSERT_EQ(r.exit_code, 0) << bin << ": " << Dump(r);
    EXPECT_EQ(Lines(r.out), 1u) << r.out;
    EXPECT_EQ(r.err, "") << bin;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(r.out, m, std::regex(std::string(bin) + R"( (\S+) \(commit (\S+)\)\n)"))) << r.out;
    EXPECT_EQ(m[1].str(), version) << r.out;
    // git describe --always --dirty --abbrev=40 at configure time, or "unknown" outside a checkout.
    EXPECT_TRUE(std::regex_match(m[2].str(), std::regex(R"(([0-9a-f]{40}|unknown|\S+-g[0-9a-f]{40})(-dirty)?)")))
        << r.out;
  }
}

TEST(BusyPort, ServeListenSaysSoInOneCleanLineAndExitsTwo) {
  BusyPort busy;
  TempDir dir;
  const CommandResult r = RunCommand({Bin("dlio-coordinator"), "serve", "--listen", busy.address(), "--results-dir",
                                      dir.str() + "/results"},
                                     seconds(20));
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_EQ(r.err, "dlio-coordinator serve: --listen: cannot listen on '" + busy.address() +
                       "': the address is in use (another process listens there)\n");
  EXPECT_EQ(r.out, "");
  ExpectNoInternals(r.out + r.err);
}

TEST(BusyPort, MetricsListenOfServeRunAndTheAgentSaysSoInOneCleanLineAndExitsTwo) {
  BusyPort busy;
  TempDir dir;
  const std::string in_use = "--metrics-listen: cannot listen on '" + busy.address() +
                             "': the address is in use (another process listens there)\n";
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "serve", "--listen", "127.0.0.1:0", "--metrics-listen",
                                busy.address(), "--results-dir", dir.str() + "/results"},
                               seconds(20));
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_EQ(r.err, "dlio-coordinator serve: " + in_use);
  ExpectNoInternals(r.out + r.err);

  r = RunCommand({Bin("dlio-agent"), "--coordinator", "127.0.0.1:1", "--data-root", dir.str(), "--metrics-listen",
                  busy.address()},
                 seconds(20));
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_EQ(r.err, "dlio-agent: " + in_use);
  EXPECT_EQ(r.out, "");  // not even the agent's first log line
  ExpectNoInternals(r.out + r.err);

  WriteFile(dir.str() + "/job.yaml", Workload("npz", 2, 1, 4096, 1, 0, 1, true));
  r = RunCommand({Bin("dlio-coordinator"), "run", dir.str() + "/job.yaml", "--data-root", dir.str(), "--results-dir",
                  dir.str() + "/results", "--metrics-listen", busy.address()},
                 seconds(60));
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  // The job's own warning lines (its keys where DLIO differs) come first; the failure is the one other line.
  const std::string last = "dlio-coordinator run: " + in_use;
  EXPECT_TRUE(r.err.size() >= last.size() && r.err.compare(r.err.size() - last.size(), last.size(), last) == 0)
      << r.err;
  EXPECT_EQ(LinesNotStartingWith(r.err, "warning: "), 1u) << r.err;
  ExpectNoInternals(r.out + r.err);
}

TEST(CoordinatorAddress, APortAloneIsAnsweredExpectedHostPortInEveryVerbAndTheAgent) {
  TempDir dir;
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 2, 1, 4096, 1, 0, 1, true));
  const std::string c = Bin("dlio-coordinator");
  const std::string job = dir.str() + "/job.yaml";
  const std::vector<std::vector<std::string>> commands = {
      {c, "submit", job},          {c, "submit", job, "--explain"}, {c, "status", "some-job"},
      {c, "list"},                 {c, "cancel", "some-job"},       {c, "results", "some-job"},
      {Bin("dlio-agent"), "--data-root", dir.str()}};
  for (const std::string bad : {"7543", "localhost", "host:", ":7543", "host:http", "host:99999", "::1:7543"}) {
    for (std::vector<std::string> argv : commands) {
      argv.insert(argv.end(), {"--coordinator", bad});
      const CommandResult r = RunCommand(argv, seconds(20));
      EXPECT_EQ(r.exit_code, 2) << argv[1] << " --coordinator " << bad << ": " << Dump(r);
      EXPECT_TRUE(Contains(r.err, "--coordinator: expected HOST:PORT, got '" + bad + "'")) << r.err;
      EXPECT_EQ(Lines(r.err), 1u) << r.err;
      ExpectNoInternals(r.err);
    }
  }
  // $DLIO_COORDINATOR, the default of every verb, is held to the same form.
  for (const char* verb : {"list", "status"}) {
    std::vector<std::string> argv = {"/usr/bin/env", "DLIO_COORDINATOR=7543", c, verb};
    if (std::string(verb) == "status") argv.push_back("some-job");
    const CommandResult r = RunCommand(argv, seconds(20));
    EXPECT_EQ(r.exit_code, 2) << verb << ": " << Dump(r);
    EXPECT_EQ(r.err, "$DLIO_COORDINATOR: expected HOST:PORT, got '7543'\n") << verb;
  }
  // Addresses of the right form still reach the connection (nothing listens on port 1: exit 3).
  for (const std::string good : {"127.0.0.1:1", "localhost:1", "[::1]:1", "dns:///localhost:1"}) {
    const CommandResult r = RunCommand({c, "list", "--coordinator", good}, seconds(20));
    EXPECT_EQ(r.exit_code, 3) << good << ": " << Dump(r);
    EXPECT_FALSE(Contains(r.err, "expected HOST:PORT")) << r.err;
  }
}

TEST(Cancel, AStopNotConfirmedWithinTheWaitExitsOneNamingTheAgent) {
  TempDir dir;
  Fleet fleet(dir);
  fleet.AddAgent("agent-0");
  Process& frozen = fleet.AddAgent("agent-1");
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 800, 1, 4096, 1, 0.05, 1, true));  // 400 steps: about 20 s
  CommandResult r =
      fleet.Client({"submit", dir.str() + "/job.yaml", "--wait-for-agents", "30", "--agents", "2", "--detach"});
  ASSERT_EQ(r.exit_code, 0) << Dump(r);
  const std::string job = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(Eventually(
      [&] {
        const nlohmann::json s = fleet.Status(job);
        return s.is_object() && s["phase_id"] == "train-epoch-1" && s["done"] > 2;
      },
      seconds(60)))
      << fleet.Logs();
  // Frozen, the agent keeps its connection but answers nothing: the coordinator's 2 s stop grace runs out well
  // before its 8 s lease.
  frozen.Signal(SIGSTOP);
  r = fleet.Client({"cancel", job});
  frozen.Signal(SIGCONT);
  EXPECT_EQ(r.exit_code, 1) << Dump(r) << fleet.Logs();
  EXPECT_TRUE(Contains(r.out, "cancelled during phase train-epoch-1")) << r.out;
  // The frozen agent is named (agent-0 normally confirms; on a loaded machine it may be named too).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(agent\(s\) (.*) did not confirm the stop within 2 s)")))
      << r.out;
  EXPECT_TRUE(Contains(m[1].str(), "agent-1")) << r.out;
  EXPECT_EQ(fleet.Status(job)["state"], "cancelled");
  // A second cancel finds the job ended: nothing to confirm, exit 0 as before.
  r = fleet.Client({"cancel", job});
  EXPECT_EQ(r.exit_code, 0) << Dump(r);
  EXPECT_TRUE(Contains(r.out, "had already ended")) << r.out;
}

}  // namespace
}  // namespace dlio::testing
