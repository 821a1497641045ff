// The swarm's step-barrier relay tree (issue 29; bench/agent_swarm.cc): the real BarrierRelay gRPC hop between the
// swarm's member sessions and their relay sessions, on one listener for the whole swarm.
//
// A real agent listens for its group on a port of its own (agent/relay.h RelayServer) and a member opens a Join
// stream there (RelayClient, a thread per stream). The swarm cannot afford a server and a thread per session, so:
//   - SwarmRelayServer: one BarrierRelay callback service on one port (127.0.0.1:0) that every session announces as
//     its relay endpoint (Hello.relay_endpoint). A Join stream is routed by its member's name to the relay the
//     member's order names (SwarmRelayRouter: the member registers job -> relay before its first arrival), and from
//     there to that relay session's own RelayHub (agent/relay.h: the agent's aggregation code, unchanged). No token
//     check: the swarm's transport has none.
//   - SwarmRelayLink: a member's Join stream for one phase, a callback reactor (no thread of its own), on the
//     member's own channel (its own TCP connection, as a real member's). Releases read from it are handed to
//     `on_release` on gRPC's callback thread.
// What is real: the messages (RelayArrive, BarrierRelease), the hop over loopback TCP, the relay's aggregation and
// release arithmetic (RelayHub / base/barrier_tree.h RelayAggregator), the lost-member report of a broken stream.
// What is emulated: one listener shared by all relay sessions, routed by name, where each real relay has its own.
// Thread-safety: the router and the link from any thread; the server's callbacks run on gRPC's threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "agent/relay.h"
#include "base/barrier_timing.h"
#include "base/mutex.h"
#include "base/write_queue.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace dlio::swarm {

// Which relay hub a member's Join stream goes to.
class SwarmRelayRouter {
 public:
  // Relay session `relay`'s hub (every session registers its own before it attaches).
  void AddHub(const std::string& relay, RelayHub* hub);
  // Member `member`'s arrivals of job `job` go to `relay` (before its first arrival; a later phase replaces it).
  void Route(const std::string& job, const std::string& member, const std::string& relay);
  // The hub of `member`'s relay in job `job`; nullptr when none was routed (or the relay is no session of the swarm).
  RelayHub* HubOf(const std::string& job, const std::string& member) const;

 private:
  mutable Mutex mu_;
  std::map<std::string, RelayHub*> hubs_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, std::string> routes_ ABSL_GUARDED_BY(mu_);  // (job, member) -> relay
};

// The one relay listener of the swarm.
class SwarmRelayServer {
 public:
  static absl::StatusOr<std::unique_ptr<SwarmRelayServer>> Start(SwarmRelayRouter* router);
  ~SwarmRelayServer();
  // "127.0.0.1:PORT": what every session announces as its relay endpoint.
  std::string endpoint() const;
  // Ends the streams still open (after the sessions ended): 1 s for them to finish, then cut.
  void Shutdown();

 private:
  struct Impl;
  explicit SwarmRelayServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A member's Join stream to its relay for one phase. Made with new; the owner calls Close() exactly once (then
// forgets the pointer): the object deletes itself when the call is over.
class SwarmRelayLink final : public grpc::ClientBidiReactor<v1::RelayArrive, v1::BarrierRelease> {
 public:
  using OnRelease = std::function<void(const v1::BarrierRelease& release)>;
  SwarmRelayLink(v1::BarrierRelay::Stub* stub, std::string job, std::string phase, std::string member,
                 OnRelease on_release);
  // The member's arrival of `step`; false when the stream is gone.
  bool Send(uint64_t step, int64_t compute_left_ns);
  // The member's phase ended (`cancel`: the swarm tears down, cut the call): the queued arrivals are written, then
  // the stream ends cleanly (the relay sees a member leave, not a member lost).
  void Close(bool cancel);
  // Links made and not yet over (the swarm waits for 0 before its sessions go away).
  static int Live();

  void OnWriteDone(bool ok) override;
  void OnWritesDoneDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& s) override;

 private:
  // Far above what a member queues (one arrival per step, written at once).
  static constexpr size_t kMaxQueued = 1024;
  const std::string job_, phase_, member_;
  const OnRelease on_release_;
  grpc::ClientContext context_;
  v1::BarrierRelease in_;
  WriteQueue<v1::RelayArrive> queue_;
};

}  // namespace dlio::swarm
