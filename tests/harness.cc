#include "tests/harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace dlio::testing {

namespace fs = std::filesystem;

std::string BinDir() {
  const char* d = std::getenv("DLIO_BIN_DIR");
  return d != nullptr && *d != 0 ? d : DLIO_DEFAULT_BIN_DIR;
}
std::string Bin(const std::string& name) { return BinDir() + "/" + name; }
std::string SourceDir() { return DLIO_SOURCE_DIR; }
std::string TestDataDir() {
  const char* d = std::getenv("DLIO_TESTDATA");
  return d ? d : SourceDir() + "/../shared/testdata";
}

TempDir::TempDir() : TempDir(fs::temp_directory_path()) {}
TempDir::TempDir(const fs::path& base) {
  std::string tmpl = (base / "dlio-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {

pid_t Spawn(const std::vector<std::string>& argv, int out_fd, int err_fd, const std::string& cwd) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::seconds timeout, const std::string& cwd) {
  TempDir tmp;
  const std::string out_path = tmp.str() + "/out", err_path = tmp.str() + "/err";
  int out_fd = open(out_path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  int err_fd = open(err_path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  pid_t pid = Spawn(argv, out_fd, err_fd, cwd);
  close(out_fd);
  close(err_fd);
  CommandResult r;
  const auto end = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > end) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.exit_code = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  return r;
}

Process::Process(const std::vector<std::string>& argv, const std::string& log_path, const std::string& cwd)
    : log_(log_path) {
  int fd = open(log_path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  pid_ = Spawn(argv, fd, fd, cwd);
  close(fd);
}

Process::~Process() {
  if (!reaped_ && pid_ > 0) {
    kill(-pid_, SIGTERM);
    if (Wait(std::chrono::milliseconds(3000)) == -1) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
}

int Process::Wait(std::chrono::milliseconds timeout) {
  if (reaped_) return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  const auto end = std::chrono::steady_clock::now() + timeout;
  do {
    if (waitpid(pid_, &status_, WNOHANG) == pid_) {
      reaped_ = true;
      return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < end);
  return -1;
}

bool Process::Running() { return Wait(std::chrono::milliseconds(0)) == -1; }
void Process::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}
std::string Process::Log() const { return ReadFile(log_); }

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

bool WaitForListening(int port, std::chrono::milliseconds timeout) {
  return Eventually(
      [port] {
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<uint16_t>(port));
        const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
        close(fd);
        return ok;
      },
      timeout);
}

CommandResult MakeTestCertificates(const std::string& dir) {
  const std::string script =
      "set -e; cd " + dir + "; "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=dlio-test-ca; "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.pem -days 1 -subj /CN=other-ca; "
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost; "
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext; "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 "
      "-extfile san.ext; "
      "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=dlio-client; "
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 1";
  return RunCommand({"sh", "-c", script}, std::chrono::seconds(60));
}

CommandResult MakeRelayCertificate(const std::string& dir, const std::string& stem, const std::vector<std::string>& dns,
                                   const std::string& ca) {
  std::string san = "subjectAltName=";
  for (size_t i = 0; i < dns.size(); ++i) san += (i ? ",DNS:" : "DNS:") + dns[i];
  const std::string script =
      "set -e; cd " + dir + "; "
      "openssl req -newkey rsa:2048 -nodes -keyout " + stem + ".key -out " + stem + ".csr -subj /CN=" + stem + "; "
      "printf '" + san + "\\n' > " + stem + ".ext; "
      "openssl x509 -req -in " + stem + ".csr -CA " + ca + ".pem -CAkey " + ca + ".key -CAcreateserial -out " + stem +
      ".pem -days 1 -extfile " + stem + ".ext";
  return RunCommand({"sh", "-c", script}, std::chrono::seconds(60));
}

std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (write(fd, req.data(), req.size()) < 0) {
    close(fd);
    return "";
  }
  std::string resp;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t body = resp.find("\r\n\r\n");
  return body == std::string::npos ? "" : resp.substr(body + 4);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

const char* const kTinyCheckpointJob = R"(model:
  name: tiny
  type: transformer
  num_layers: 2
  model_datatype: fp16
  optimizer_datatype: fp32
  transformer:
    vocab_size: 1000
    hidden_size: 64
    ffn_hidden_size: 128
    num_attention_heads: 4
    num_kv_heads: 4
workflow:
  train: false
  checkpoint: true
checkpoint:
  checkpoint_folder: ckpt
  num_checkpoints_write: 1
  num_checkpoints_read: 1
)";

std::string Workload(const std::string& format, int files, int samples_per_file, int record_bytes, int batch,
                     double compute, int epochs, bool generate, const std::string& extra) {
  return "model:\n  name: test\nframework: pytorch\nworkflow:\n  generate_data: " +
         std::string(generate ? "true" : "false") +
         "\n  train: true\ndataset:\n  data_folder: data\n  format: " + format +
         "\n  num_files_train: " + std::to_string(files) + "\n  num_samples_per_file: " +
         std::to_string(samples_per_file) + "\n  record_length_bytes: " + std::to_string(record_bytes) +
         "\nreader:\n  data_loader: pytorch\n  batch_size: " + std::to_string(batch) +
         "\n  read_threads: 2\n  prefetch_size: 2\ntrain:\n  epochs: " + std::to_string(epochs) +
         "\n  computation_time: " + std::to_string(compute) + "\n" + extra;
}


ExtraGateway::ExtraGateway(const std::string& s3_dir) {
  CommandResult r = RunCommand({"bash", SourceDir() + "/scripts/ceph-rgw.sh", "extra-rgw", s3_dir},
                               std::chrono::seconds(90));
  std::istringstream in(r.out);
  in >> pid_ >> endpoint_;
  if (r.exit_code != 0 || pid_ <= 0 || endpoint_.empty()) {
    pid_ = 0;
    error_ = "ceph-rgw.sh extra-rgw " + s3_dir + " failed (exit " + std::to_string(r.exit_code) + "): " + r.err;
  }
}

ExtraGateway::~ExtraGateway() { Stop(); }

void ExtraGateway::Stop() {
  if (pid_ <= 0 || stopped_) return;
  stopped_ = true;
  ::kill(pid_, SIGTERM);  // exactly the daemon extra-rgw started (its PID, recorded in the cluster's pids file too)
}

std::string S3GatewayDir() {
  const char* dir = std::getenv("DLIO_S3_DIR");
  return dir != nullptr && *dir != '\0' ? dir : DLIO_S3_DEFAULT_DIR;
}

const std::map<std::string, std::string>& S3Gateway() {
  static const std::map<std::string, std::string> env = [] {
    std::map<std::string, std::string> m;
    std::ifstream in(S3GatewayDir() + "/env");
    std::string line;
    while (std::getline(in, line)) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
    }
    for (const auto& [k, v] : m) ::setenv(k.c_str(), v.c_str(), 1);
    return m;
  }();
  return env;
}

bool CephInstalled() {
  return RunCommand({"/bin/sh", "-c", "command -v radosgw && command -v ceph"}, std::chrono::seconds(10)).exit_code ==
         0;
}

CommandResult S3Tool(const std::vector<std::string>& args) {
  S3Gateway();  // its settings in the environment s3_tool.py inherits
  std::vector<std::string> argv = {"/usr/bin/python3", SourceDir() + "/tests/python/s3_tool.py"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, std::chrono::seconds(120));
}

std::string NewS3Bucket(const std::string& stem) {
  static std::atomic<int> n{0};
  const std::string name = stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  return S3Tool({"mkbucket", name}).exit_code == 0 ? name : std::string();
}

namespace {
CommandResult Sh(const std::string& script) {
  return RunCommand({"/bin/sh", "-c", script}, std::chrono::seconds(30));
}
}  // namespace

ShapedLink::ShapedLink(int mbit) : ns_("dlio-net-" + std::to_string(::getpid())), n_(std::to_string(::getpid() % 200 + 20)) {
  host_if_ = "dlh" + std::to_string(::getpid() % 100000);
  ns_if_ = "dln" + std::to_string(::getpid() % 100000);
  // burst 16 kB: a few packets, so the rate holds over milliseconds; latency 400 ms: the queue a TCP flow may fill.
  setup_ = Sh("set -e; ip netns add " + ns_ + "; ip link add " + host_if_ + " type veth peer name " + ns_if_ +
              "; ip link set " + ns_if_ + " netns " + ns_ + "; ip addr add " + host_ip() + "/30 dev " + host_if_ +
              "; ip link set " + host_if_ + " up; ip netns exec " + ns_ + " ip addr add " + ns_ip() + "/30 dev " +
              ns_if_ + "; ip netns exec " + ns_ + " ip link set " + ns_if_ + " up; ip netns exec " + ns_ +
              " ip link set lo up; tc qdisc add dev " + host_if_ + " root tbf rate " + std::to_string(mbit) +
              "mbit burst 16kb latency 400ms");
}

ShapedLink::~ShapedLink() { Sh("ip netns del " + ns_ + " 2>/dev/null; ip link del " + host_if_ + " 2>/dev/null; true"); }

bool ShapedLink::Usable() { return ::geteuid() == 0 && Sh("command -v ip && command -v tc").exit_code == 0; }

std::vector<std::string> ShapedLink::InNamespace(const std::vector<std::string>& argv,
                                                 const std::map<std::string, std::string>& env) const {
  std::vector<std::string> out = {"ip", "netns", "exec", ns_, "env"};
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

int WaitPortFile(const std::string& path) {
  Eventually([&] { return fs::exists(path); }, std::chrono::seconds(20));
  return fs::exists(path) ? std::atoi(ReadFile(path).c_str()) : 0;
}

TcpRelay::TcpRelay(const std::string& host, const std::string& endpoint_url, const std::string& dir) {
  std::smatch m;
  if (!std::regex_search(endpoint_url, m, std::regex("^http://([0-9.]+):([0-9]+)"))) {
    error_ = "not an http://IP:PORT endpoint: " + endpoint_url;
    return;
  }
  process_ = std::make_unique<Process>(std::vector<std::string>{"/usr/bin/python3", SourceDir() + "/tests/python/tcp_relay.py",
                                                               host, dir + "/relay.port", m[1].str(), m[2].str()},
                                       dir + "/relay.log");
  port_ = WaitPortFile(dir + "/relay.port");
}

uint64_t DataBytes(const fs::path& dir, const std::string& ext) {
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == "." + ext) total += e.file_size();
  }
  return total;
}

nlohmann::json LoadJson(const std::string& path) { return nlohmann::json::parse(ReadFile(path)); }

Fleet::Fleet(const TempDir& dir, std::vector<std::string> serve_extra, std::vector<std::string> client_extra)
    : dir_(dir), serve_extra_(std::move(serve_extra)), client_extra_(std::move(client_extra)) {
  std::filesystem::create_directories(dir.path() / "root");
  StartCoordinator();
}

Fleet::Fleet(const TempDir& dir, int agents, int accelerators, const std::vector<std::string>& agent_extra,
             const std::vector<std::string>& agent_prefix)
    : Fleet(dir) {
  for (int i = 0; i < agents; ++i) {
    std::vector<std::string> extra = {"--accelerators", std::to_string(accelerators)};
    extra.insert(extra.end(), agent_extra.begin(), agent_extra.end());
    std::vector<std::string> prefix = agent_prefix;
    for (std::string& a : prefix) a = std::regex_replace(a, std::regex("\\{i\\}"), std::to_string(i));
    AddAgent("agent-" + std::to_string(i), extra, 3, prefix);
  }
}

void Fleet::StartCoordinator() {
  const std::string port_file = dir_.str() + "/coordinator.port";
  std::vector<std::string> argv = {Bin("dlio-coordinator"), "serve", "--listen", address(), "--results-dir",
                                   dir_.str() + "/coord-results"};
  if (port_ == 0) argv.insert(argv.end(), {"--port-file", port_file});
  argv.insert(argv.end(), serve_extra_.begin(), serve_extra_.end());
  // The first coordinator logs to coordinator.log, a restarted one to coordinator-2.log, ...
  ++coordinator_starts_;
  const std::string log = coordinator_starts_ == 1 ? "/coordinator.log"
                                                   : "/coordinator-" + std::to_string(coordinator_starts_) + ".log";
  coordinator_ = std::make_unique<Process>(argv, dir_.str() + log);
  if (port_ == 0) {
    // The file appears (renamed into place) once the server listens; a coordinator that fails to start leaves
    // port_ 0, and the test's first client call fails with the coordinator's log.
    Eventually([&] { return std::filesystem::exists(port_file); }, std::chrono::seconds(20));
    port_ = std::atoi(ReadFile(port_file).c_str());
    return;
  }
  WaitForListening(port_, std::chrono::seconds(10));  // clients fail at once on a refused connection
}

Process& Fleet::AddAgent(const std::string& name, std::vector<std::string> extra, double reconnect_window,
                         const std::vector<std::string>& prefix) {
  std::vector<std::string> argv = prefix;
  for (const std::string& a : {Bin("dlio-agent"), std::string("--coordinator"), address(), std::string("--data-root"),
                               dir_.str() + "/root", std::string("--name"), name, std::string("--reconnect-window"),
                               std::to_string(reconnect_window)}) {
    argv.push_back(a);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  agents_.push_back(std::make_unique<Process>(argv, dir_.str() + "/" + name + ".log"));
  return *agents_.back();
}

CommandResult Fleet::Client(std::vector<std::string> args, std::chrono::seconds timeout) const {
  std::vector<std::string> argv = {Bin("dlio-coordinator")};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--coordinator", address()});
  argv.insert(argv.end(), client_extra_.begin(), client_extra_.end());
  return RunCommand(argv, timeout);
}

nlohmann::json Fleet::ClientJson(std::vector<std::string> args) const {
  args.push_back("--json");
  const CommandResult r = Client(args, std::chrono::seconds(30));
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  // Not JSON (e.g. the coordinator is restarting): null, which any test can index without an exception.
  return j.is_discarded() ? nlohmann::json() : j;
}

size_t Fleet::AttachedAgents() const {
  const nlohmann::json l = ClientJson({"list"});
  return l.is_object() ? l["agents"].size() : 0;
}

std::string Fleet::Logs() const {
  std::string all;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    if (e.path().extension() == ".log") all += "\n--- " + e.path().filename().string() + ":\n" + ReadFile(e.path());
  }
  return all;
}

CommandResult Submit(const Fleet& fleet, const std::string& job, const std::string& output, int agents,
                     std::chrono::seconds timeout) {
  return RunCommand({Bin("dlio-coordinator"), "submit", job, "--coordinator", fleet.address(), "--agents",
                     std::to_string(agents), "--output", output, "--wait-for-agents", "30"},
                    timeout);
}

}  // namespace dlio::testing
