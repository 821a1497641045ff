// LocalFleet: the embedded default. A CoordinatorServer in this process on loopback plus N dlio-agent child
// processes sharing one data root: the same code paths as a cluster, never a shortcut.
//
// Start() launches the coordinator on 127.0.0.1:0 and the agents (names local-0 .. local-N-1, each with its own
// /metrics on a free loopback port), then waits up to `attach_timeout_s` until all of them attached (an agent that
// exits early is reported with its exit status).
// No agent outlives the fleet: the destructor sends SIGTERM to the agents, waits up to 5 s, then SIGKILLs what is
// left and shuts the coordinator down; the agents run in their own process group (a terminal's Ctrl-C reaches only
// this process, which cancels the job in order) and get SIGTERM from the kernel if this process dies
// (PR_SET_PDEATHSIG), e.g. on `kill -9`.
// The agent binary: $DLIO_AGENT_BIN, else `dlio-agent` beside this executable, else `dlio-agent` on PATH.
// Thread-safety: Start() and the destructor from one thread; Kill() from any thread (a second Ctrl-C).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "coordinator/coordinator_server.h"

namespace dlio {

class LocalFleet {
 public:
  struct Options {
    int agents = 1;
    int accelerators = 1;
    std::string data_root = ".";
    std::string results_dir = "results";
    std::string metrics_listen;      // the coordinator's own /metrics, optional
    // How long the agents get to attach. 30 s: process start-up takes ~0.1 s; this only bounds a broken
    // installation or a badly overloaded machine.
    int attach_timeout_s = 30;
    // DRAM each agent reports for this host (dlio-agent --host-memory); 0 = what the agents read.
    uint64_t host_memory_bytes = 0;
  };
  static absl::StatusOr<std::unique_ptr<LocalFleet>> Start(Options options);
  ~LocalFleet();

  std::string address() const;
  CoordinatorServer& server() { return *server_; }
  // SIGKILLs every agent at once (no waiting): the escape hatch of a second Ctrl-C.
  void Kill();

 private:
  LocalFleet() = default;
  void StopAgents();

  std::unique_ptr<CoordinatorServer> server_;
  Mutex mu_;
  std::vector<pid_t> children_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dlio
