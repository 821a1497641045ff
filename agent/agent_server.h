// AgentServer: the agent's only gRPC code. It attaches to the coordinator, runs the phases it is given through
// PhaseRunner, relays the step barrier, and streams progress and results back.
//
// Life cycle: Start() validates options and starts the metrics endpoint; Run() attaches and serves until the
// coordinator has been unreachable for longer than `reconnect_window` (then it returns OK: a clean exit), or until
// the coordinator refuses the agent (protocol mismatch, duplicate name: an error naming both sides), or Shutdown().
// Reconnection uses exponential backoff from 200 ms to 5 s (fast enough to catch a restarted coordinator, slow
// enough not to hammer a dead one). A phase running when the stream breaks is cancelled.
// Thread-safety: Run() from one thread; Shutdown() and metrics_port() from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace dlio {

class AgentServer {
 public:
  struct Options {
    std::string coordinator;                 // host:port
    std::string data_root;                   // every data path is confined here
    std::string name;                        // unique in the fleet
    std::string hostname;                    // node name, for num_hosts
    int accelerators = 1;                    // local ranks offered
    std::string metrics_listen;              // host:port for /metrics, empty = none
    std::chrono::milliseconds reconnect_window{30000};
    uint32_t protocol_version = 0;           // 0 = ours; tests set another to check the refusal
  };

  static absl::StatusOr<std::unique_ptr<AgentServer>> Start(Options options);
  ~AgentServer();

  absl::Status Run();
  void Shutdown();
  // Port of the metrics endpoint (useful with port 0), or 0 when none.
  int metrics_port() const;

 private:
  struct Impl;
  explicit AgentServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlio
