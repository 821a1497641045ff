#include "coordinator/local_fleet.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"

extern char** environ;

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
  return "dlio-agent";  // posix_spawnp searches PATH
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
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (int rc = posix_spawnp(&pid, bin.c_str(), nullptr, nullptr, argv.data(), environ); rc != 0) {
      return absl::NotFoundError(absl::StrCat("cannot start the agent binary '", bin, "': ", std::strerror(rc),
                                              " (set DLIO_AGENT_BIN or put dlio-agent on PATH)"));
    }
    fleet->children_.push_back(pid);
  }
  // 30 s for every agent to attach: process start-up is ~0.1 s; this only bounds a broken installation.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  Coordinator& core = fleet->server_->coordinator();
  while (!core.WaitForAgents(options.agents, std::chrono::milliseconds(100))) {
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
                                                      " local agents attached within 30 s"));
    }
  }
  return fleet;
}

std::string LocalFleet::address() const { return absl::StrCat("127.0.0.1:", server_->port()); }

void LocalFleet::StopAgents() {
  for (pid_t pid : children_) kill(pid, SIGTERM);
  // 5 s for agents to stop their phase and exit; then they are killed, so nothing outlives the fleet.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::vector<pid_t> left = children_;
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    for (auto it = left.begin(); it != left.end();) {
      int status = 0;
      it = waitpid(*it, &status, WNOHANG) != 0 ? left.erase(it) : it + 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : left) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  children_.clear();
}

LocalFleet::~LocalFleet() {
  StopAgents();
  if (server_) server_->Shutdown();
}

}  // namespace dlio
