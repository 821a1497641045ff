// CoordinatorServer: the coordinator's only gRPC code (facade over Coordinator).
//
// Start() opens the job store (when `store` is set), creates the Coordinator (which restores the store's jobs),
// binds `listen` (port 0 picks a free port, read it back with port(); SO_REUSEPORT is off, so a second
// coordinator on the same port fails instead of sharing it), serves the dlio.v1.Coordinator service and, when
// `metrics_listen` is set, the coordinator's own Prometheus /metrics.
// Security: with a token every RPC must carry it (UNAUTHENTICATED otherwise, naming the fix), checked on the call's
// metadata before its request message is read, so a caller without the token makes the coordinator buffer nothing
// of its messages, whatever their size; with a certificate the service speaks TLS only, and with a CA too it
// requires client certificates signed by it (mutual TLS).
// Attach: protocol mismatches are refused with both versions named (FAILED_PRECONDITION); duplicate agent names
// with ALREADY_EXISTS naming both. Each agent's messages are queued and written by its own writer thread, so a
// slow or stopped agent never blocks the coordinator; one that stops reading (kMaxQueuedMessages) is dropped.
// Shutdown() (also run by the destructor) stops the Coordinator (a running job ends interrupted), then cancels
// open streams and stops within ~1 s.
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/coordinator.h"
#include "dlio/v1/transport.h"

namespace dlio {

class CoordinatorServer {
 public:
  struct Options {
    std::string listen = "127.0.0.1:0";
    std::string metrics_listen;          // empty = no /metrics
    std::string results_dir = "results";
    std::string targets_file;            // Prometheus file_sd file of the agents' /metrics; empty = none
    std::string store;                   // SQLite job store; empty = jobs live in memory only
    Transport transport;                 // token and TLS material (LoadTransport); empty = plaintext, no token
    // Registry and phase timing; see Coordinator::Options for the defaults and why.
    Coordinator::Options core;
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
