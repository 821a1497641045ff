// The agent's part in the step barrier's relay tree (issue 29 item 2; docs/architecture.md, "Step barrier"; the
// arithmetic is base/barrier_tree.h's). In a training phase over a tree, the order names the agent's relay
// (PhaseOrder::barrier_relay): a member sends its arrivals to the relay's listener and reads its releases there
// (RelayClient); the relay itself (its order lists its group) collects its group's arrivals, its own included, sends
// the coordinator one arrival per step, and on the coordinator's release hands each member its own (RelayHub, behind
// the listener RelayServer). Only the barrier goes through the relay: orders, progress and results keep each agent's
// own session with the coordinator.
//
// RelayHub: the relay's state, one phase per job: Open() at the relay's phase start, Close() at its end; members
// may join and arrive before Open() (their orders can come first): their arrivals wait for it. A member whose stream
// breaks while the phase is open is reported (`lost`, a RelayMemberLost to the coordinator). A relay of relays
// (base/barrier_tree.h BuildTree) opens every level it relays, lowest first: one aggregator per level, its own
// arrival climbing them locally (a complete level arrives at the next as the relay itself), the highest level's
// arrival handed to `forward` (to the coordinator, or to the relay's own parent relay over a RelayClient); a release
// of the highest level goes down the levels, each member getting its own, and the lowest level's own release is the
// relay's. A member name is in one level only (the relay's plain members at each level are distinct agents).
// RelayServer: the BarrierRelay gRPC service on --relay-listen (host:port; port 0 picks one), guarded by the token
// and TLS of the agent's Transport (a call without the token is refused UNAUTHENTICATED).
// RelayClient: a member's Join stream to its relay for one phase; releases are handed to `on_release` from the
// client's reader thread. If the relay goes away the member keeps waiting: the coordinator fails the job naming the
// relay and its group, and cancels the phase. Under TLS (agent/relay_credentials.h) a failed handshake is kept
// (handshake_failure()) for the member to fail its phase with.
// Time: the steady clock (ns) throughout. No gRPC type in this header (pimpl).
// Thread-safety: every RelayHub method from any thread (one mutex; callbacks `forward`, `reply` and `lost` are
// called under it and must not call back into the hub); RelayClient::Send and Close from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/barrier_timing.h"
#include "base/barrier_tree.h"
#include "base/mutex.h"
#include "dlio/v1/coordinator.pb.h"
#include "dlio/v1/transport.h"
#include "job/phase.h"

namespace dlio {

class RelayHub {
 public:
  // Sends the group's arrival of `step` to the coordinator (its compute ends compute_left_ns after the send).
  using Forward = std::function<void(uint64_t step, int64_t compute_left_ns)>;
  // Reports a member lost (one line why).
  using Lost = std::function<void(const std::string& member, const std::string& why)>;
  // Writes a member's release of `step`; false when its stream is gone.
  using Reply = std::function<bool(uint64_t step, const barrier_timing::Release& release)>;

  // The relay's phase `phase` of job `job` starts, relaying `group` (names, itself included; `self` its own name).
  void Open(const std::string& job, const std::string& phase, const std::vector<std::string>& group,
            const std::string& self, Forward forward, Lost lost);
  // The same for a relay of several levels: `levels` its groups, lowest first, each with `self` in it.
  void OpenLevels(const std::string& job, const std::string& phase,
                  const std::vector<std::vector<std::string>>& levels, const std::string& self, Forward forward,
                  Lost lost);
  // The groups an order asks its agent to relay, lowest first (PhaseOrder::barrier_group, then barrier_upper);
  // empty for a plain member or the star.
  static std::vector<std::vector<std::string>> LevelsOf(const PhaseOrder& order);
  // The relay's phase ended: no more reports of lost members.
  void Close(const std::string& job, const std::string& phase);
  // A member's stream names itself (its first message); its releases go to `reply`.
  void Join(const std::string& job, const std::string& phase, const std::string& member, Reply reply);
  // A member's stream ended: `broken` (cancelled, the process gone) reports it lost while the phase is open.
  void Leave(const std::string& job, const std::string& phase, const std::string& member, bool broken,
             const std::string& why);
  // An arrival of `member` (the relay's own too) at `step`, received at now_ns; the last of the group forwards.
  void Arrive(const std::string& job, const std::string& phase, const std::string& member, uint64_t step,
              int64_t compute_left_ns, int64_t now_ns);
  // The release of the group's `step` (from the coordinator, or from the relay's parent relay: for its highest
  // level) reached the relay at received_ns: each member of every level gets its own, and the relay's own is
  // returned; nullopt when no group of that phase is relayed here.
  std::optional<barrier_timing::Release> Released(const std::string& job, const std::string& phase, uint64_t step,
                                                  const barrier_timing::Release& up, int64_t received_ns,
                                                  int64_t now_ns);
  // The error bound of the relay's hops above it (every level's; ns) of the job's latest released step, -1 before
  // the first.
  int64_t upstream_bound_ns(const std::string& job) const;

 private:
  struct Arrival {
    std::string member;
    uint64_t step;
    int64_t left_ns, received_ns;
  };
  struct Phase {
    std::string phase;
    std::string closed;  // the job's last closed phase: its late messages are dropped
    bool open = false;
    std::string self;
    struct Level {
      std::vector<std::string> members;
      size_t self = 0;  // the relay's place in the group
      barrier_tree::RelayAggregator agg;
    };
    std::vector<Level> levels;  // lowest first
    std::map<std::string, std::pair<size_t, size_t>> index;  // plain member -> (level, place in its group)
    Forward forward;
    Lost lost;
    std::map<std::string, Reply> replies;
    std::vector<Arrival> pending;  // arrived before Open()
  };
  // The job's state for `phase`: a newer phase replaces an older one; nullptr for a late message of an older phase.
  Phase* StateFor(const std::string& job, const std::string& phase) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ArriveLocked(Phase& p, const Arrival& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Place k of level l arrived; a complete level arrives at the next as the relay, the highest forwards.
  void ArriveAt(Phase& p, size_t l, size_t k, const Arrival& a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::map<std::string, Phase> jobs_ ABSL_GUARDED_BY(mu_);  // by job id
};

class RelayServer {
 public:
  // Listens on `listen` (host:port); errors name --relay-listen.
  static absl::StatusOr<std::unique_ptr<RelayServer>> Start(const std::string& listen, const Transport& transport,
                                                            RelayHub* hub);
  ~RelayServer();
  int port() const;

 private:
  struct Impl;
  explicit RelayServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class RelayClient {
 public:
  // A release from the relay: its step, timing, and arrival in the steady clock (ns).
  using OnRelease = std::function<void(uint64_t step, const barrier_timing::Release& release, int64_t received_ns)>;
  // Opens `member`'s Join stream to the relay at `endpoint` for job `job`'s phase `phase`.
  RelayClient(const std::string& endpoint, const Transport& transport, std::string job, std::string phase,
              std::string member, OnRelease on_release);
  ~RelayClient();
  // Sends the member's arrival; false when the stream is gone.
  bool Send(uint64_t step, int64_t compute_left_ns);
  // Ends the stream (the relay sees a clean end, not a lost member) and joins the reader.
  void Close();
  // gRPC's reason when the connection failed in its TLS handshake (agent/relay_credentials.h IsHandshakeFailure: the
  // relay's certificate lacks its announced name or no trusted CA signed it): the member fails its phase naming it
  // rather than wait for a barrier that cannot come. Empty when connected, or unreachable for another reason.
  const std::string& handshake_failure() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The release of `step` of phase `phase` of job `job` as a member receives it, whoever sends it (its relay over the
// relay stream, or the relay's own hub to the relay itself).
v1::BarrierRelease RelayRelease(const std::string& job, const std::string& phase, uint64_t step,
                                const barrier_timing::Release& r);

}  // namespace dlio
