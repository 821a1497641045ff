// Issue 24 item 7, the low items about processes, TLS and generation, with real processes over loopback:
//  - an agent that gives up (its reconnect window ran out, after a lost session or a TLS handshake it cannot
//    complete) exits 3 ("coordinator unreachable", as the client verbs) with one line naming the coordinator's
//    address and the cause, gRPC's TLS handshake error included;
//  - `serve` (and the agent) check the TLS key against the certificate, and every PEM file, before listening or
//    connecting: exit 2 naming the flag and the file, never "cannot listen ... in use";
//  - a data folder's train/ moved out of the data root mid-generation stops the phase naming the folder, and no
//    `.tmp` file is left, neither in the data root nor in the folder where it went.
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/harness.h"

namespace dlio::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The lines of `text` that start with `prefix`.
std::vector<std::string> LinesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

// The agent's last line: exactly one "dlio-agent: gave up on the coordinator at ADDRESS: ..." line.
std::string GiveUpLine(const std::string& log, const std::string& address) {
  const std::vector<std::string> lines = LinesStartingWith(log, "dlio-agent: gave up on the coordinator at " + address);
  EXPECT_EQ(lines.size(), 1u) << log;
  return lines.empty() ? "" : lines.front();
}

// The TLS material of tests/harness.h in `d`.
void MakeCertificates(const std::string& d) {
  const CommandResult ssl = MakeTestCertificates(d);
  ASSERT_EQ(ssl.exit_code, 0) << ssl.out << ssl.err;
}

// dlio-agent against `address` with a reconnect window of 1 s and `extra` flags, to its end.
CommandResult RunAgent(const TempDir& dir, const std::string& address, const std::vector<std::string>& extra) {
  fs::create_directories(dir.path() / "agent-root");
  std::vector<std::string> argv = {Bin("dlio-agent"), "--coordinator", address, "--data-root",
                                   dir.str() + "/agent-root", "--name", "lonely", "--reconnect-window", "1"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunCommand(argv, seconds(30));
}

TEST(Agent, GivingUpOnAnUnreachableCoordinatorExitsThreeNamingItsAddressAndTheCause) {
  TempDir dir;
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  const CommandResult r = RunAgent(dir, address, {});
  EXPECT_EQ(r.exit_code, 3) << Dump(r);
  const std::string line = GiveUpLine(r.err, address);
  EXPECT_TRUE(Contains(line, "--reconnect-window")) << line;
  EXPECT_TRUE(std::regex_search(line, std::regex("[Cc]onnection refused"))) << line;
}

TEST(Agent, GivingUpAfterLosingTheCoordinatorExitsThreeNamingTheLossAndTheCause) {
  TempDir dir;
  Fleet fleet(dir);
  Process& agent = fleet.AddAgent("agent-0", {}, 1);
  ASSERT_TRUE(Eventually([&] { return Contains(agent.Log(), "attached"); }, seconds(20))) << fleet.Logs();
  fleet.coordinator().Signal(SIGKILL);
  ASSERT_NE(fleet.coordinator().Wait(milliseconds(5000)), -1);
  EXPECT_EQ(agent.Wait(milliseconds(20000)), 3) << agent.Log();
  const std::string line = GiveUpLine(agent.Log(), fleet.address());
  EXPECT_TRUE(Contains(line, "the connection was lost (")) << line;
  EXPECT_TRUE(std::regex_search(line, std::regex("[Cc]onnection refused"))) << line;
}

TEST(Agent, ATlsHandshakeItCannotCompleteEndsInOneLineNamingTheHandshakesCause) {
  TempDir dir;
  const std::string d = dir.str();
  MakeCertificates(d);
  Fleet tls(dir, {"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key"}, {"--tls-ca", d + "/ca.pem"});
  // The coordinator's certificate signed by another CA than the one the agent trusts.
  CommandResult r = RunAgent(dir, tls.address(), {"--tls-ca", d + "/other-ca.pem"});
  EXPECT_EQ(r.exit_code, 3) << Dump(r);
  std::string line = GiveUpLine(r.err, tls.address());
  EXPECT_TRUE(Contains(line, "TLS handshake failed")) << line;
  EXPECT_TRUE(std::regex_search(line, std::regex("CERTIFICATE_VERIFY_FAILED|certificate verify failed"))) << line;
  EXPECT_TRUE(Contains(line, "--tls-ca")) << line;
  // A certificate that does not hold the name the agent expects.
  r = RunAgent(dir, tls.address(), {"--tls-ca", d + "/ca.pem", "--tls-server-name", "elsewhere.example"});
  EXPECT_EQ(r.exit_code, 3) << Dump(r);
  line = GiveUpLine(r.err, tls.address());
  EXPECT_TRUE(Contains(line, "does not hold the name 'elsewhere.example'")) << line;
  EXPECT_TRUE(Contains(line, "--tls-server-name")) << line;
  // A plaintext agent at a TLS coordinator.
  r = RunAgent(dir, tls.address(), {});
  EXPECT_EQ(r.exit_code, 3) << Dump(r);
  line = GiveUpLine(r.err, tls.address());
  EXPECT_TRUE(Contains(line, "if the coordinator serves TLS, pass --tls-ca")) << line;
  // A TLS agent at a plaintext coordinator.
  TempDir plain_dir;
  Fleet plain(plain_dir);
  r = RunAgent(dir, plain.address(), {"--tls-ca", d + "/ca.pem"});
  EXPECT_EQ(r.exit_code, 3) << Dump(r);
  line = GiveUpLine(r.err, plain.address());
  EXPECT_TRUE(Contains(line, "TLS handshake failed")) << line;
  EXPECT_TRUE(Contains(line, "plain text")) << line;
}

TEST(Serve, AKeyOfAnotherCertificateOrAGarbledPemFileIsRefusedNamingItsFlagBeforeListening) {
  TempDir dir;
  const std::string d = dir.str();
  MakeCertificates(d);
  const std::string garbled = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n";
  WriteFile(d + "/garbled.pem", garbled);
  WriteFile(d + "/garbled.key", "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n");
  const int port = FreePort();
  auto serve = [&](const std::string& cert, const std::string& key, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {Bin("dlio-coordinator"), "serve", "--listen", "127.0.0.1:" + std::to_string(port),
                                     "--results-dir", d + "/results", "--tls-cert", d + "/" + cert, "--tls-key",
                                     d + "/" + key};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, seconds(30));
  };
  CommandResult r = serve("server.pem", "client.key");
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_TRUE(Contains(r.err, "--tls-key: does not match --tls-cert ('" + d + "/client.key'")) << r.err;
  EXPECT_FALSE(Contains(r.err, "in use")) << r.err;
  r = serve("garbled.pem", "server.key");
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_TRUE(Contains(r.err, "--tls-cert: '" + d + "/garbled.pem'")) << r.err;
  r = serve("server.pem", "garbled.key");
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_TRUE(Contains(r.err, "--tls-key: '" + d + "/garbled.key'")) << r.err;
  r = serve("server.pem", "server.key", {"--tls-ca", d + "/garbled.pem"});
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_TRUE(Contains(r.err, "--tls-ca: '" + d + "/garbled.pem'")) << r.err;
  // The agent checks its client certificate and key the same way.
  r = RunAgent(dir, "127.0.0.1:" + std::to_string(port),
               {"--tls-ca", d + "/ca.pem", "--tls-cert", d + "/client.pem", "--tls-key", d + "/server.key"});
  EXPECT_EQ(r.exit_code, 2) << Dump(r);
  EXPECT_TRUE(Contains(r.err, "--tls-key: does not match --tls-cert ('" + d + "/server.key'")) << r.err;
  // The right pair still serves.
  Fleet ok(dir, {"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key"}, {"--tls-ca", d + "/ca.pem"});
  const CommandResult list = ok.Client({"list"});
  EXPECT_EQ(list.exit_code, 0) << Dump(list) << ok.Logs();
}

// Every file under `dir` whose name holds ".tmp".
std::vector<std::string> TempFiles(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (Contains(e.path().filename().string(), ".tmp")) out.push_back(e.path().string());
  }
  return out;
}

TEST(Generate, TrainFolderMovedOutOfTheDataRootMidGenerationStopsNamingItAndLeavesNoTempFile) {
  TempDir dir;
  Fleet fleet(dir, 1, 2);
  const fs::path train = dir.path() / "root" / "data" / "train";
  const fs::path away = dir.path() / "away";
  fs::create_directories(away);
  // 10000 files of 8 KiB, each made durable: long enough (per-file costs dominate, whatever the storage's speed) to
  // move the folder once the first files are in place.
  WriteFile(dir.str() + "/job.yaml", Workload("npz", 10000, 1, 8192, 1, 0, 1, true));
  Process submit({Bin("dlio-coordinator"), "submit", dir.str() + "/job.yaml", "--coordinator", fleet.address(),
                  "--agents", "1", "--wait-for-agents", "30", "--output", dir.str() + "/out"},
                 dir.str() + "/submit.out");
  auto finished_files = [&] {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(train, ec)) n += e.path().extension() == ".npz" ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return finished_files() >= 4; }, seconds(60))) << fleet.Logs();
  fs::rename(train, away / "train");
  const int rc = submit.Wait(milliseconds(60000));
  ASSERT_NE(rc, -1) << submit.Log() << fleet.Logs();
  EXPECT_EQ(rc, 1) << submit.Log();
  EXPECT_TRUE(Contains(submit.Log(), "the folder '" + train.string() + "' is no longer where it was")) << submit.Log();
  // No temporary file anywhere: not in the data root, not in the folder that was moved away.
  const std::vector<std::string> left = TempFiles(dir.path());
  EXPECT_TRUE(left.empty()) << left.size() << " temporary file(s) left, the first " << left.front();
}

}  // namespace
}  // namespace dlio::testing
