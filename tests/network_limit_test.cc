// The `network` limit class provoked for real (issue 26, results/limit.h): an agent in a network namespace made by
// the test reads S3 objects from the suite's Ceph RADOS Gateway through a veth pair whose host side is rate-limited
// by `tc tbf` to 40 Mbit/s. The veth's driver reports 10000 Mb/s (older kernels: nothing), not what the tbf lets
// through, so the agent is told the link's speed (dlio-agent --link-speed IFACE=MBPS); its ranks wait for data while
// its interface runs at that speed, and the limit says `network`.
// Needs root, `ip netns` and `tc` (skipped, saying so, where the machine has not), and the s3_gateway fixture.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

std::map<std::string, std::string> Gateway() {
  const char* env = std::getenv("DLIO_S3_DIR");
  std::map<std::string, std::string> m;
  std::ifstream in(std::string(env != nullptr && *env != '\0' ? env : DLIO_S3_DEFAULT_DIR) + "/env");
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

CommandResult Sh(const std::string& script) { return RunCommand({"/bin/sh", "-c", script}, seconds(30)); }

// The namespace, the veth pair (host side `host_if` 10.213.<n>.1, namespace side `ns_if` 10.213.<n>.2) and the tbf
// on the host side's egress (what the agent receives); all removed by the destructor (deleting the namespace
// deletes the pair).
class ShapedLink {
 public:
  ShapedLink() : ns_("dlio-net-" + std::to_string(::getpid())), n_(std::to_string(::getpid() % 200 + 20)) {
    host_if_ = "dlh" + std::to_string(::getpid() % 100000);
    ns_if_ = "dln" + std::to_string(::getpid() % 100000);
    const std::string script =
        "set -e; ip netns add " + ns_ + "; ip link add " + host_if_ + " type veth peer name " + ns_if_ +
        "; ip link set " + ns_if_ + " netns " + ns_ + "; ip addr add " + host_ip() + "/30 dev " + host_if_ +
        "; ip link set " + host_if_ + " up; ip netns exec " + ns_ + " ip addr add " + ns_ip() + "/30 dev " + ns_if_ +
        "; ip netns exec " + ns_ + " ip link set " + ns_if_ + " up; ip netns exec " + ns_ + " ip link set lo up" +
        "; tc qdisc add dev " + host_if_ + " root tbf rate 40mbit burst 16kb latency 400ms";
    setup_ = Sh(script);
    made_ = true;
  }
  ~ShapedLink() {
    if (made_) Sh("ip netns del " + ns_ + " 2>/dev/null; ip link del " + host_if_ + " 2>/dev/null; true");
  }
  bool ok() const { return setup_.exit_code == 0; }
  const CommandResult& setup() const { return setup_; }
  std::string host_ip() const { return "10.213." + n_ + ".1"; }
  std::string ns_ip() const { return "10.213." + n_ + ".2"; }
  const std::string& ns() const { return ns_; }
  const std::string& ns_if() const { return ns_if_; }

 private:
  std::string ns_, n_, host_if_, ns_if_;
  CommandResult setup_;
  bool made_ = false;
};

int WaitPortFile(const std::string& path) {
  Eventually([&] { return fs::exists(path); }, seconds(20));
  return std::atoi(ReadFile(path).c_str());
}

TEST(NetworkLimit, AnS3EndpointBehindATbfLimitedVethIsNamedNetwork) {
  if (::geteuid() != 0 || Sh("command -v ip && command -v tc").exit_code != 0) {
    GTEST_SKIP() << "needs root, ip (iproute2) and tc to make a network namespace and shape its veth pair";
  }
  const std::map<std::string, std::string> gw = Gateway();
  ASSERT_FALSE(gw.empty()) << "no gateway: $DLIO_S3_DIR/env is missing (the s3_gateway fixture starts "
                              "scripts/ceph-rgw.sh)";
  for (const auto& [k, v] : gw) ::setenv(k.c_str(), v.c_str(), 1);  // for s3_tool.py, the independent client
  ShapedLink link;
  if (!link.ok()) GTEST_SKIP() << "cannot make the namespace and its shaped veth pair here: " << Dump(link.setup());
  TempDir dir;
  fs::create_directories(dir.path() / "root");
  // The gateway listens on 127.0.0.1: a relay on the veth's host side makes it reachable from the namespace.
  const std::string url = gw.at("AWS_ENDPOINT_URL");
  std::smatch endpoint;
  ASSERT_TRUE(std::regex_search(url, endpoint, std::regex("^http://([0-9.]+):([0-9]+)"))) << url;
  Process relay({"/usr/bin/python3", SourceDir() + "/tests/python/tcp_relay.py", link.host_ip(),
                 dir.str() + "/relay.port", endpoint[1].str(), endpoint[2].str()},
                dir.str() + "/relay.log");
  const int relay_port = WaitPortFile(dir.str() + "/relay.port");
  ASSERT_GT(relay_port, 0) << relay.Log();
  Process coordinator({Bin("dlio-coordinator"), "serve", "--listen", link.host_ip() + ":0", "--port-file",
                       dir.str() + "/coordinator.port", "--results-dir", dir.str() + "/coord-results"},
                      dir.str() + "/coordinator.log");
  const std::string address = link.host_ip() + ":" + std::to_string(WaitPortFile(dir.str() + "/coordinator.port"));
  Process agent({"ip", "netns", "exec", link.ns(), "env", "AWS_ENDPOINT_URL=http://" + link.host_ip() + ":" +
                 std::to_string(relay_port), "AWS_ACCESS_KEY_ID=" + gw.at("AWS_ACCESS_KEY_ID"),
                 "AWS_SECRET_ACCESS_KEY=" + gw.at("AWS_SECRET_ACCESS_KEY"), "AWS_REGION=us-east-1",
                 Bin("dlio-agent"), "--coordinator", address, "--data-root", dir.str() + "/root", "--name",
                 "agent-0", "--link-speed", link.ns_if() + "=40"},
                dir.str() + "/agent-0.log");
  const std::string bucket = "netlimit-" + std::to_string(::getpid());
  CommandResult made = RunCommand({"/usr/bin/python3", SourceDir() + "/tests/python/s3_tool.py", "mkbucket", bucket},
                                  seconds(60));
  ASSERT_EQ(made.exit_code, 0) << Dump(made);
  // 96 objects of 256 KiB (~25 MB): batch 2 every 20 ms asks ~26 MB/s; the link gives 5 MB/s, so the reads take
  // ~5 s with the interface at its link speed throughout.
  WriteFile(dir.str() + "/job.yaml",
            Workload("npz", 96, 1, 262144, 2, 0.02, 1, true,
                     "storage:\n  storage_type: s3\n  storage_root: " + bucket + "\n"));
  CommandResult r = RunCommand({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", address,
                                "--agents", "1", "--wait-for-agents", "30", "--output", dir.str() + "/out"},
                               seconds(240));
  ASSERT_TRUE(JobRan(r.exit_code)) << Dump(r) << coordinator.Log() << agent.Log();
  std::cout << r.out;
  EXPECT_NE(r.out.find("limit: network: ranks waited "), std::string::npos) << r.out;
  const nlohmann::json s = LoadJson(dir.str() + "/out/summary.json");
  const nlohmann::json& limit = s["dlio_ext"]["verdict"]["limit"];
  EXPECT_EQ(limit["class"], "network") << limit.dump(2);
  EXPECT_EQ(limit["evidence"]["nic_speed_mbps"], 40) << limit.dump(2);
  EXPECT_NE(limit["line"].get<std::string>().find("of 40 Mb/s"), std::string::npos) << limit.dump(2);
}

}  // namespace
}  // namespace dlio::testing
