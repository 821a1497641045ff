// CoordinatorServer: the coordinator's only gRPC code (facade over Coordinator).
//
// Start() binds `listen` (port 0 picks a free port, read it back with port()), serves the dlio.v1.Coordinator
// service and, when `metrics_listen` is set, the coordinator's own Prometheus /metrics. Protocol mismatches are
// refused at attach with both versions named (FAILED_PRECONDITION); duplicate agent names with ALREADY_EXISTS.
// Shutdown() (also run by the destructor) cancels open streams and stops within ~1 s.
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/coordinator.h"

namespace dlio {

class CoordinatorServer {
 public:
  struct Options {
    std::string listen = "127.0.0.1:0";
    std::string metrics_listen;          // empty = no /metrics
    std::string results_dir = "results";
    std::string targets_file;            // Prometheus file_sd file of the agents' /metrics; empty = none
  };

  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(Options options);
  ~CoordinatorServer();

  int port() const;
  int metrics_port() const;
  Coordinator& coordinator();
  // Blocks until Shutdown().
  void Wait();
  void Shutdown();

 private:
  struct Impl;
  explicit CoordinatorServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlio
