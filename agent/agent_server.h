// AgentServer: the agent's only gRPC code. It attaches to the coordinator, runs the phases it is given through
// PhaseRunner, relays the step barrier, and streams progress and results back. The protocol itself (Hello, the
// lease, RunPhase checks and idempotency, barrier releases, cancel, the answers) is AgentSession's
// (agent/agent_session.h), which bench/agent_swarm.cc runs too; this facade owns the connection and the phase thread.
//
// Life cycle: Start() validates options and starts the metrics endpoint; Run() attaches and serves until the
// coordinator has been unreachable for longer than `reconnect_window` (then it gives up: Unavailable, one line naming
// the coordinator's address, why the last session ended if one was lost, and why the last attempt failed, gRPC's TLS
// handshake error included, e.g. "gave up on the coordinator at 10.0.0.5:7543: unreachable for 30 s
// (--reconnect-window): TLS handshake failed (... certificate verify failed); check --tls-ca ..."), or until
// the coordinator refuses the agent (protocol mismatch, duplicate name, wrong token: an error naming both sides),
// or Shutdown() (which tells the coordinator why when a phase is running, closes the stream and returns within ~1 s).
// Reconnection uses exponential backoff from 200 ms to 5 s (fast enough to catch a restarted coordinator, slow
// enough not to hammer a dead one). A phase running when the stream breaks is cancelled.
// Liveness: a heartbeat every Welcome.heartbeat_interval_ms from a thread of its own (never starved by I/O); the
// coordinator echoes each, and a session on which the coordinator has been silent for Welcome.lease_ms is dropped
// and re-established (a coordinator host that vanished without closing the connection).
// Before generating, the data folder is resolved under the data root and the dataset is checked against the free
// space (agent/preflight.h), so nothing is written for a dataset that cannot fit.
// Thread-safety: Run() from one thread; Shutdown() and metrics_port() from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/relay_credentials.h"
#include "dlio/v1/transport.h"

namespace dlio {

class AgentServer {
 public:
  struct Options {
    std::string coordinator;                 // host:port
    std::string data_root;                   // every data path is confined here
    std::string name;                        // unique in the fleet (agent/identity.h)
    std::string node_name;                   // node the agent runs on, for num_hosts (agent/identity.h)
    std::string hostname;                    // this host's name, for the metrics endpoint it announces
    int accelerators = 1;                    // local ranks offered
    std::string metrics_listen;              // host:port for /metrics, empty = none
    // --relay-listen: host:port of the step-barrier relay listener (agent/relay.h; port 0: any, announced at attach
    // with a wildcard host resolved by the coordinator); empty = none (the agent never relays, and a job over it
    // keeps the flat star).
    std::string relay_listen = "0.0.0.0:0";
    // --relay-tls-cert/--relay-tls-key/--relay-tls-name: the relay listener's own TLS (agent/relay_credentials.h).
    // Under TLS (transport.tls()) without it the agent offers no listener, and jobs over it keep the flat star.
    RelayTls relay_tls;
    std::chrono::milliseconds reconnect_window{30000};
    uint32_t protocol_version = 0;           // 0 = ours; tests set another to check the refusal
    Transport transport;                     // token and TLS material (LoadTransport); empty = plaintext
    // Object storage: KEY=VALUE file of AWS_* settings (agent/object_store.h); "" = the environment only.
    std::string s3_credentials_file;
    // --s3-allow-endpoint: the only endpoints (besides its own) the agent reaches (agent/object_store.h); empty = any.
    std::vector<std::string> s3_allow_endpoints;
    uint64_t host_memory_bytes = 0;          // --host-memory: DRAM of this host node; 0 = MemTotal or cgroup limit
    // --link-speed IFACE=MBPS: link speeds for interfaces whose driver reports none (HostSampler::Options).
    std::map<std::string, int64_t> link_speeds_mbps;
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
