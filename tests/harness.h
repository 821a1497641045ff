// Test harness for process-level tests: real dlio-coordinator and dlio-agent processes on loopback.
//
// Binaries come from $DLIO_BIN_DIR when set, else from this build (compiled in). Every process started here is killed
// when its Process object goes out of scope, so a failing test never leaves processes behind.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dlio::testing {

std::string BinDir();
std::string Bin(const std::string& name);
std::string SourceDir();
std::string TestDataDir();

// A fresh empty directory under /tmp (or under `base`), removed by the destructor.
class TempDir {
 public:
  TempDir();
  explicit TempDir(const std::filesystem::path& base);
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;       // -1 when killed by the timeout
  std::string out, err;
};
// "exit N", then stdout and stderr: what a failed assertion on a command prints.
inline std::string Dump(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n" + r.out + r.err;
}

// True for the exit statuses of a job that ran to its end (client/client.h): 0 it met its AU target, 5 it
// missed it, 6 its AU was not measured. Tests that check what a job did rather than its verdict accept all three
// (a loaded 2-core machine decides the AU of a test job); verdict tests assert the status itself.
inline bool JobRan(int exit_code) { return exit_code == 0 || exit_code == 5 || exit_code == 6; }

// Runs argv to completion (killed after `timeout`), capturing stdout and stderr.
CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::seconds timeout = std::chrono::seconds(120),
                  const std::string& cwd = "");

// A background process with stdout+stderr going to a log file.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log_path, const std::string& cwd = "");
  ~Process();
  pid_t pid() const { return pid_; }
  // Waits for exit up to `timeout`; returns the exit code, or -1 on timeout (the process is left running).
  int Wait(std::chrono::milliseconds timeout);
  bool Running();
  void Signal(int sig);
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string log_;
};

// A TCP port that was free a moment ago on 127.0.0.1.
int FreePort();

// A coordinator (`serve` on a loopback port it picks itself and reports through --port-file, results under
// DIR/coord-results) and agents (data root DIR/root), each a Process killed when the Fleet goes away; logs in
// DIR/*.log.
class Fleet {
 public:
  // A coordinator with `serve_extra` flags and no agent yet; `client_extra` goes to every Client() call.
  explicit Fleet(const TempDir& dir, std::vector<std::string> serve_extra = {},
                 std::vector<std::string> client_extra = {});
  // A coordinator plus `agents` agents "agent-0".. with `accelerators` each; `agent_extra` is appended to each
  // agent's flags, `agent_prefix` put before its command (e.g. strace; "{i}" becomes the agent's index).
  Fleet(const TempDir& dir, int agents, int accelerators, const std::vector<std::string>& agent_extra = {},
        const std::vector<std::string>& agent_prefix = {});
  // (Re)starts the coordinator: the first time on port 0 with --port-file (no window in which another process could
  // take a port picked in advance), after a kill on the port it had and the same flags.
  void StartCoordinator();
  Process& AddAgent(const std::string& name, std::vector<std::string> extra = {}, double reconnect_window = 3,
                    const std::vector<std::string>& prefix = {});
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  Process& coordinator() { return *coordinator_; }
  Process& agent(size_t i) { return *agents_.at(i); }
  // A client verb with this fleet's address and client options.
  CommandResult Client(std::vector<std::string> args, std::chrono::seconds timeout = std::chrono::seconds(120)) const;
  // The client's --json output, or null when it printed no JSON (e.g. the coordinator could not be reached).
  nlohmann::json ClientJson(std::vector<std::string> args) const;
  nlohmann::json Status(const std::string& job) const { return ClientJson({"status", job}); }
  size_t AttachedAgents() const;
  // Every log of the fleet's folder, for failure messages.
  std::string Logs() const;

 private:
  const TempDir& dir_;
  int port_ = 0;  // 0 until the first coordinator reported its port
  std::vector<std::string> serve_extra_, client_extra_;
  int coordinator_starts_ = 0;
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> agents_;
};

// A second radosgw daemon of the running test cluster in `s3_dir` (scripts/ceph-rgw.sh extra-rgw: another endpoint
// of the same store, same buckets and users), for the tests of many endpoints and failover; the other tests keep the
// one gateway. ok() false (and error() saying why) when it did not start. Stop() ends it with SIGTERM (it refuses
// new connections at once); the destructor stops it if still running. Exactly the daemon it started is signalled.
class ExtraGateway {
 public:
  explicit ExtraGateway(const std::string& s3_dir);
  ~ExtraGateway();
  ExtraGateway(const ExtraGateway&) = delete;
  ExtraGateway& operator=(const ExtraGateway&) = delete;
  bool ok() const { return pid_ > 0; }
  const std::string& error() const { return error_; }
  const std::string& endpoint() const { return endpoint_; }  // http://127.0.0.1:PORT
  pid_t pid() const { return pid_; }
  void Stop();

 private:
  pid_t pid_ = 0;
  bool stopped_ = false;
  std::string endpoint_, error_;
};

// The suite's Ceph RADOS Gateway (the CTest fixture s3_gateway starts scripts/ceph-rgw.sh in this folder): its folder
// ($DLIO_S3_DIR, else this build's s3-gateway), and its AWS_* settings read from FOLDER/env, exported into this
// process's environment on the first call (the agents a test starts afterwards inherit them); empty when the gateway
// is not running. CephInstalled() tells a machine without Ceph (tests skip there) from a fixture that failed.
std::string S3GatewayDir();
const std::map<std::string, std::string>& S3Gateway();
bool CephInstalled();
// tests/python/s3_tool.py ARGS (boto3: the independent client, with the gateway's settings from the environment).
CommandResult S3Tool(const std::vector<std::string>& args);
// A bucket of the calling test's own, `stem-PID-N` (N counts the calls); empty when s3_tool could not make it.
std::string NewS3Bucket(const std::string& stem);

// A network namespace with a veth pair whose host side's egress (what the namespace receives) is shaped by the
// kernel's `tc tbf` to `mbit` Mbit/s: host side 10.213.<n>.1, namespace side 10.213.<n>.2, /30. Needs root, `ip` and
// `tc` (ShapedLink::Usable() says whether the machine has them); ok() false, setup() saying why, when the set-up
// failed. The destructor deletes the namespace and the pair. For tests whose agents reach a shared resource (the
// gateway, through a TcpRelay on host_ip()) through one capped link.
class ShapedLink {
 public:
  explicit ShapedLink(int mbit = 40);
  ~ShapedLink();
  ShapedLink(const ShapedLink&) = delete;
  ShapedLink& operator=(const ShapedLink&) = delete;
  static bool Usable();
  bool ok() const { return setup_.exit_code == 0; }
  const CommandResult& setup() const { return setup_; }
  std::string host_ip() const { return "10.213." + n_ + ".1"; }
  std::string ns_ip() const { return "10.213." + n_ + ".2"; }
  const std::string& ns() const { return ns_; }
  const std::string& ns_if() const { return ns_if_; }
  // argv run inside the namespace (`ip netns exec NS env KEY=VALUE... argv`).
  std::vector<std::string> InNamespace(const std::vector<std::string>& argv,
                                       const std::map<std::string, std::string>& env = {}) const;

 private:
  std::string ns_, n_, host_if_, ns_if_;
  CommandResult setup_;
};

// Waits (up to 20 s) for a --port-file style file and returns the port in it (0 when it never came).
int WaitPortFile(const std::string& path);

// tests/python/tcp_relay.py: a plain TCP relay listening on `host`:0 to the gateway's endpoint (it listens on
// 127.0.0.1, which a namespace cannot reach), log and port file in `dir`. port() is 0 when it did not start.
class TcpRelay {
 public:
  TcpRelay(const std::string& host, const std::string& endpoint_url, const std::string& dir);
  int port() const { return port_; }
  std::string Log() const { return process_ ? process_->Log() : error_; }

 private:
  std::unique_ptr<Process> process_;
  int port_ = 0;
  std::string error_;
};

// `submit JOB --agents N --output OUT --wait-for-agents 30` to the fleet.
CommandResult Submit(const Fleet& fleet, const std::string& job, const std::string& output, int agents,
                     std::chrono::seconds timeout = std::chrono::seconds(240));

// Polls until something accepts TCP connections on 127.0.0.1:port (a coordinator that started listening); false
// after `timeout`. Clients fail at once on a refused connection, so tests wait for the coordinator first.
bool WaitForListening(int port, std::chrono::milliseconds timeout = std::chrono::seconds(20));
// TLS material for tests, made with the openssl CLI in `dir`: a CA (ca.pem, ca.key), another CA (other-ca.pem), a
// server certificate for 127.0.0.1 and localhost signed by the first (server.pem, server.key) and a client
// certificate (client.pem, client.key). The result of the script: exit code 0 when all were made.
CommandResult MakeTestCertificates(const std::string& dir);
// A relay listener's certificate for dlio-agent --relay-tls-cert/--relay-tls-key, made in `dir` (where
// MakeTestCertificates made its CAs): `<stem>.pem` and `<stem>.key`, signed by `<ca>.pem`/`<ca>.key` (the test CA by
// default; "other-ca" for one the fleet does not trust), holding the DNS names `dns` in its subjectAltName (e.g.
// {"agent-0.relay.test"} for a per-node certificate, {"*.relay.test"} for one shared by a fleet).
CommandResult MakeRelayCertificate(const std::string& dir, const std::string& stem, const std::vector<std::string>& dns,
                                   const std::string& ca = "ca");
// HTTP GET http://127.0.0.1:port/path; empty on failure.
std::string HttpGet(int port, const std::string& path);
// Reads a whole file.
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);
// A checkpoint-only DLIO workload of a tiny transformer: one save and one load of a few hundred KiB per run.
extern const char* const kTinyCheckpointJob;
// A DLIO workload YAML for tests (data_folder "data", pytorch loader, read_threads 2, prefetch 2).
std::string Workload(const std::string& format, int files, int samples_per_file, int record_bytes, int batch,
                     double compute, int epochs, bool generate, const std::string& extra = "");
// Sum of the sizes of the files with extension `ext` under `dir` (recursively).
uint64_t DataBytes(const std::filesystem::path& dir, const std::string& ext);
nlohmann::json LoadJson(const std::string& path);
// Polls `pred` every 20 ms until true or timeout.
template <typename F>
bool Eventually(F pred, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    struct timespec ts {0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
  return pred();
}

}  // namespace dlio::testing
