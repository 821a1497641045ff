// LocalFleet: the embedded default. A CoordinatorServer in this process on loopback plus N dlio-agent child
// processes sharing one data root: the same code paths as a cluster, never a shortcut.
//
// Start() launches the coordinator on 127.0.0.1:0 and the agents (names local-0 .. local-N-1, each with its own
// /metrics on a free loopback port), then waits until all of them attached (an agent that exits early is reported
// with its exit status). The destructor sends SIGTERM to the agents, waits up to 5 s, then SIGKILLs what is left,
// and shuts the coordinator down, so no process outlives the fleet.
// The agent binary: $DLIO_AGENT_BIN, else `dlio-agent` beside this executable, else `dlio-agent` on PATH.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  };
  static absl::StatusOr<std::unique_ptr<LocalFleet>> Start(Options options);
  ~LocalFleet();

  std::string address() const;
  CoordinatorServer& server() { return *server_; }

 private:
  LocalFleet() = default;
  void StopAgents();

  std::unique_ptr<CoordinatorServer> server_;
  std::vector<pid_t> children_;
};

}  // namespace dlio
