#include "client/local_fleet.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"

namespace dlio {

namespace fs = std::filesystem;

namespace {

std::string AgentBinary() {
  if (const char* env = std::getenv("DLIO_AGENT_BIN"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = self.parent_path() / "dlio-agent";
    if (fs::exists(beside, ec)) return beside.string();
  }
  return "dlio-agent";  // execvp searches PATH
}

// fork + exec of an agent. Between fork and exec only async-signal-safe calls (this process has threads).
absl::StatusOr<pid_t> SpawnAgent(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    close(pipefd[0]);
    setpgid(0, 0);                          // own process group: the terminal's Ctrl-C is not theirs
    prctl(PR_SET_PDEATHSIG, SIGTERM);       // this process dies (even by SIGKILL): they stop too
    if (getppid() != parent) _exit(0);      // it died before prctl took effect
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, nullptr);  // the parent blocks SIGINT/SIGTERM for its signal thread
    execvp(argv[0], argv.data());
    const int err = errno;
    (void)!write(pipefd[1], &err, sizeof(err));
    _exit(127);
  }
  close(pipefd[1]);
  int err = 0;
  const ssize_t n = read(pipefd[0], &err, sizeof(err));  // EOF (0) when exec succeeded
  close(pipefd[0]);
  if (n == static_cast<ssize_t>(sizeof(err))) {
    waitpid(pid, nullptr, 0);
    return absl::NotFoundError(absl::StrCat("cannot start the agent binary '", args[0], "': ", std::strerror(err),
                                            " (set DLIO_AGENT_BIN or put dlio-agent on PATH)"));
  }
  return pid;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalFleet>> LocalFleet::Start(Options options) {
  if (options.agents < 1) return absl::InvalidArgumentError("--local-agents: must be >= 1");
  if (options.accelerators < 1) return absl::InvalidArgumentError("--accelerators: must be >= 1");
  std::unique_ptr<LocalFleet> fleet(new LocalFleet());
  CoordinatorServer::Options so;
  so.listen = "127.0.0.1:0";
  so.results_dir = options.results_dir;
  so.metrics_listen = options.metrics_listen;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server = CoordinatorServer::Start(so);
  if (!server.ok()) return server.status();
  fleet->server_ = std::move(*server);

  const std::string bin = AgentBinary();
  for (int i = 0; i < options.agents; ++i) {
    std::vector<std::string> args = {bin,
                                     "--coordinator", fleet->address(),
                                     "--data-root", options.data_root,
                                     "--name", absl::StrCat("local-", i),
                                     "--accelerators", std::to_string(options.accelerators),
                                     "--metrics-listen", "127.0.0.1:0",
                                     // The fleet owns its agents: if this process dies they give up quickly.
                                     "--reconnect-window", "5",
                                     // The client prints progress; agents only speak up about problems.
                                     "--log-level", "warn"};
    if (options.host_memory_bytes > 0) {
      args.push_back("--host-memory");
      args.push_back(std::to_string(options.host_memory_bytes));
    }
    absl::StatusOr<pid_t> pid = SpawnAgent(args);
    if (!pid.ok()) return pid.status();
    MutexLock lk(&fleet->mu_);
    fleet->children_.push_back(*pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.attach_timeout_s);
  Coordinator& core = fleet->server_->coordinator();
  // 100 ms: how quickly an agent that died at start-up is reported.
  while (!core.WaitForAgents(options.agents, std::chrono::milliseconds(100))) {
    MutexLock lk(&fleet->mu_);
    for (pid_t pid : fleet->children_) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        fleet->children_.erase(std::find(fleet->children_.begin(), fleet->children_.end(), pid));
        return absl::InternalError(absl::StrCat("local agent (pid ", pid, ") exited before attaching with ",
                                                WIFEXITED(status) ? absl::StrCat("status ", WEXITSTATUS(status))
                                                                  : absl::StrCat("signal ", WTERMSIG(status))));
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("only ", core.AttachedAgents(), " of ", options.agents,
                                                      " local agents attached within ", options.attach_timeout_s,
                                                      " s (--wait-for-agents)"));
    }
  }
  return fleet;
}

std::string LocalFleet::address() const { return absl::StrCat("127.0.0.1:", server_->port()); }

void LocalFleet::Kill() {
  MutexLock lk(&mu_);
  for (pid_t pid : children_) kill(pid, SIGKILL);
}

void LocalFleet::StopAgents() {
  std::vector<pid_t> left;
  {
    MutexLock lk(&mu_);
    left = children_;
  }
  for (pid_t pid : left) kill(pid, SIGTERM);
  // 5 s for agents to stop their phase and exit; then they are killed, so nothing outlives the fleet.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    for (auto it = left.begin(); it != left.end();) {
      int status = 0;
      it = waitpid(*it, &status, WNOHANG) != 0 ? left.erase(it) : it + 1;
    }
    // 20 ms: agents exit within tens of milliseconds of SIGTERM; polling costs nothing here.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : left) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  MutexLock lk(&mu_);
  children_.clear();
}

LocalFleet::~LocalFleet() {
  // The job (if still running) ends first, while its agents can confirm the stop; then the agents go.
  if (server_) server_->coordinator().Stop();
  StopAgents();
  if (server_) server_->Shutdown();
}

}  // namespace dlio
