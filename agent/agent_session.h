// AgentSession: the agent's side of the Attach protocol, apart from its gRPC transport and its phase machinery, so that
// the agent (AgentServer: one synchronous stream, PhaseRunner on a thread per phase) and the fleet load tool
// (bench/agent_swarm.cc: thousands of sessions in one process on gRPC's callback API, their ranks emulated on
// timers) run the same protocol code.
//
// One AgentSession per agent, across its connections (a reconnect keeps the answer of the last finished phase).
// A connection: the transport sends Hello(), hands the coordinator's first message to Welcome() (a refusal becomes an
// error naming the cause), then calls Begin(link); every later message goes to OnMessage(); once per heartbeat
// interval the transport checks LeaseExpired() and calls SendHeartbeat() (the heartbeat, and the running phase's
// progress); End() when the stream is gone (a running phase is told to stop).
// Phases: OnMessage(RunPhase) checks the order and hands a PhaseCommand to the PhaseHost. One phase runs per job,
// keyed by job id: a phase of another job runs beside it only when both were ordered with share_agent (their jobs
// share this agent, --share-agents) and their local ranks fit the agent's accelerators together. Repeats are
// idempotent: a repeat of the running phase is ignored, a repeat of a job's last finished one re-sends its answer; a
// busy agent, a workload that does not load and an order that does not fit this agent are refused with an Error
// naming agent, job and phase. The host runs the phase and calls Finish() exactly once. Step barrier: the host calls
// Arrive(step), then either blocks in WaitRelease(job, step) (a thread per phase, as PhaseRunner does) or waits for
// PhaseHost::Released(job, step) (event-driven hosts); a release of another phase, or of a job that runs none, is
// dropped and counted (AgentMetrics, when given). Cancel stops the named job's phase only.
// Errors carry a v1::ErrorCode (a stop confirmation is ERROR_CODE_CANCELLED, which the coordinator does not count
// as a failure).
// Time: the steady clock, passed in by the caller (`now`), for the lease.
// Thread-safety: every method may be called from any thread; OnMessage() calls of one session come one at a time (the
// stream's reads are sequential). mu_ guards the session state; messages are sent outside it through the link
// (which serialises its own writes), and PhaseHost calls are made outside it too.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "agent/metrics.h"
#include "agent/phase_runner.h"
#include "agent/step_barrier.h"
#include "base/host_facts.h"
#include "base/mount_id.h"
#include "base/mutex.h"
#include "job/workload_spec.h"
#include "dlio/v1/coordinator.pb.h"

namespace dlio {

// The agent's way to talk to the coordinator (one per session).
class CoordinatorLink {
 public:
  virtual ~CoordinatorLink() = default;
  // Writes (or queues) one message; false when the session is gone. Never called under AgentSession's lock.
  virtual bool Send(const v1::AgentMessage& m) = 0;
};

// What runs the phases of an AgentSession.
class PhaseHost {
 public:
  virtual ~PhaseHost() = default;
  // Runs `cmd` (the core has recorded it as running); the host calls AgentSession::Finish() exactly once when it ends,
  // from any thread. AgentSession::cancel_flag(cmd.job_id) turns true when the phase must stop.
  virtual void Start(PhaseCommand cmd) = 0;
  // The barrier `step` of job `job_id`'s running phase was released (hosts that do not block in WaitRelease()).
  virtual void Released(const std::string& job_id, uint64_t step) {}
  // Job `job_id`'s running phase was told to stop (a cancel, or the session ended); its cancel flag is already true.
  virtual void Stop(const std::string& job_id) {}
  // Progress of job `job_id`'s running phase, for the Progress messages.
  virtual const PhaseProgress& progress(const std::string& job_id) const = 0;
};

// The last workload text parsed and its spec: every phase of a job carries the same text, and yaml-cpp takes ~0.6 ms
// to parse it (time an agent would spend between two epochs). Sessions in one process may share one cache.
// Thread-safety: Get() from any thread.
class WorkloadCache {
 public:
  absl::StatusOr<std::shared_ptr<const WorkloadSpec>> Get(const std::string& yaml, const std::string& job_id);

 private:
  Mutex mu_;
  std::string yaml_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const WorkloadSpec> spec_ ABSL_GUARDED_BY(mu_);
};

class AgentSession {
 public:
  using Clock = std::chrono::steady_clock;
  // What the agent says of itself in Hello.
  struct Identity {
    std::string name;                // unique in the fleet (agent/identity.h)
    std::string node_name;           // node the agent runs on, for num_hosts
    std::string instance;            // random id of this process: a reconnect replaces its old session
    int accelerators = 1;            // local ranks offered
    uint32_t protocol_version = 0;   // 0 = kProtocolVersion (tests announce another to check the refusal)
    std::string metrics_endpoint;    // host:port of the agent's /metrics, empty = none
    std::string relay_endpoint;      // host:port of the agent's step-barrier relay listener, empty = none
    std::string relay_tls_name;      // the name in the relay listener's TLS certificate, empty = plaintext or none
    uint64_t host_memory_bytes = 0;
    std::string host_memory_source;  // "meminfo", "cgroup" or "--host-memory" (Hello.host_memory_source)
    uint32_t host_cpu_count = 1;
    HostProvenance provenance;       // uname, CPU, data-root file system, NICs, /proc/cpuinfo and meminfo
    MountId data_root_mount;         // the mount holding --data-root (Hello.data_root_mount)
  };
  // The session's liveness settings, from Welcome.
  struct Timing {
    std::chrono::milliseconds heartbeat{1000};
    std::chrono::milliseconds lease{8000};
    // How the coordinator's steady clock relates to this agent's (Welcome.clock_domain).
    barrier_timing::ClockRelation clock = barrier_timing::ClockRelation::kUnrelated;
    // The wait before the connection's heartbeat number `n` (0: the first). The first kClockProbes come
    // kClockProbeGap apart, so the clock-offset estimate (clock()) holds the fastest of several exchanges before a
    // job's first step (with no drift it keeps them for the whole connection); then one every `heartbeat`.
    static constexpr int kClockProbes = 8;
    static constexpr std::chrono::milliseconds kClockProbeGap{10};
    std::chrono::milliseconds Before(int n) const { return Probe(n) ? kClockProbeGap : heartbeat; }
    static bool Probe(int n) { return n < kClockProbes; }
  };

  // `metrics` (may be null) counts stale releases; `workloads` (may be null: one of its own) caches parsed jobs.
  AgentSession(Identity id, PhaseHost* host, AgentMetrics* metrics = nullptr,
            std::shared_ptr<WorkloadCache> workloads = nullptr);
  const Identity& identity() const { return id_; }

  // A relay's hook (agent/relay.h RelayHub::Released): given a coordinator's release (job, phase, step, its timing,
  // its arrival in ns of the steady clock), it releases the relay's members and returns the relay's own release, or
  // nullopt when this agent relays no group of that phase. Set before Begin(); called outside the session's lock.
  using RelayHook = std::function<std::optional<barrier_timing::Release>(
      const std::string& job_id, const std::string& phase_id, uint64_t step, const barrier_timing::Release& up,
      int64_t received_ns)>;
  void set_relay_hook(RelayHook hook) { relay_hook_ = std::move(hook); }

  // --- the transport's side ---
  v1::AgentMessage Hello() const;
  // The coordinator's first message: Welcome gives the session's timing, anything else is a refusal naming why.
  absl::StatusOr<Timing> Welcome(const v1::CoordinatorMessage& first) const;
  // Starts a connection; resets the clock-offset estimate (clock()) for its coordinator (timing.clock).
  void Begin(std::shared_ptr<CoordinatorLink> link, Clock::time_point now, const Timing& timing);
  void OnMessage(const v1::CoordinatorMessage& m, Clock::time_point now);
  // True once the coordinator has been silent for longer than the lease (*silent says how long).
  bool LeaseExpired(Clock::time_point now, const Timing& timing, Clock::duration* silent) const;
  // The heartbeat, and the progress of every running phase unless `probe` (a clock probe: Timing::Before's first
  // heartbeats of a connection, which leave the progress at about one a second).
  void SendHeartbeat(bool probe = false);
  // The stream is gone: a running phase is told to stop, WaitRelease() returns. Idempotent.
  void End();
  bool session_alive() const;
  // Shutdown: tells the coordinator that the running phases end because this agent was told to stop (their jobs then
  // fail naming the cause rather than a broken connection). False when no phase runs.
  bool SendShutdownNotice();

  // --- the phase host's side ---
  // The clock offset to the coordinator (agent/step_barrier.h ClockSync), fed by the heartbeats' echoes; the phases'
  // announce barriers feed it their steps and place their compute ends by it.
  ClockSync& clock() { return clock_; }
  // True once job `job_id`'s running phase must stop (valid until its Finish(); a job with no phase: false).
  const std::atomic<bool>* cancel_flag(const std::string& job_id) const;
  // The same for the phase started last (hosts and tests that run one phase at a time).
  const std::atomic<bool>* cancel_flag() const;
  // Sends the BarrierArrive of `step` of the running phase; false when the session is gone.
  bool Arrive(const PhaseOrder& order, uint64_t step);
  // dlio_ext.barrier: announce: the BarrierArrive of `step` sent as the ranks' compute starts, its compute ending
  // `compute_left_ns` after the send (and, with `end`, that end placed in the coordinator's clock by the agent's
  // offset window); false when the session is gone.
  bool Announce(const PhaseOrder& order, uint64_t step, int64_t compute_left_ns,
                std::optional<barrier_timing::EndInterval> end = std::nullopt);
  // A BarrierRelease, from the coordinator (OnMessage) or, in a relay tree, from this agent's relay (`from_relay`:
  // the relay hook is not asked): recorded for the running phase of its job, or dropped and counted as stale.
  void DeliverRelease(const v1::BarrierRelease& r, Clock::time_point now, bool from_relay);
  // A relay: `member` of its group broke its Join stream during `order`'s phase (RelayMemberLost); false when the
  // session is gone.
  bool SendMemberLost(const PhaseOrder& order, const std::string& member, const std::string& why);
  // Blocks until `step` of job `job_id`'s phase is released (OK), or the phase is cancelled or the session ends.
  absl::Status WaitRelease(const std::string& job_id, uint64_t step);
  // The same for the phase started last.
  absl::Status WaitRelease(uint64_t step);
  // WaitRelease, with the release's timing and its arrival in the steady clock (agent/step_barrier.h).
  absl::StatusOr<AnnounceBarrier::Received> AwaitRelease(const std::string& job_id, uint64_t step);
  // The phase's answer: PhaseDone with one result per local rank, or an Error (CANCELLED for a stop, REFUSED when
  // `refused`: the phase was refused before it touched anything, else PHASE_FAILED) carrying the status's message,
  // which names agent, rank, job and phase.
  void Finish(const PhaseOrder& order, absl::StatusOr<std::vector<RankEpochResult>> result, bool refused = false);

 private:
  void StartPhase(const v1::RunPhase& rp);
  // The order checked against this agent (workload, ranks, threads): the refusal to send, or nullopt.
  std::optional<v1::AgentMessage> CheckOrder(const v1::RunPhase& rp,
                                             const absl::StatusOr<std::shared_ptr<const WorkloadSpec>>& spec) const;
  // BUSY when the order cannot run beside the phases running now (a phase of its own job, an exclusive job, or
  // too few accelerators left); nullopt when it can.
  std::optional<v1::AgentMessage> BusyRefusal(const v1::RunPhase& rp) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::AgentMessage ErrorMessage(v1::ErrorCode code, const std::string& message, const std::string& job_id,
                                const std::string& phase_id) const;
  bool Send(const v1::AgentMessage& m);
  // The Progress message of job `job`'s running phase `phase`.
  void SendProgress(const std::string& job, const std::string& phase);
  // A phase's answer; a PhaseDone larger than one message may carry goes in parts (convert.h SplitPhaseDone).
  bool SendAnswer(const v1::AgentMessage& m);

  const Identity id_;
  PhaseHost* const host_;
  AgentMetrics* const metrics_;
  const std::shared_ptr<WorkloadCache> workloads_;
  RelayHook relay_hook_;  // set before Begin(), read only after
  ClockSync clock_;       // its own lock
  // Steady-clock time (ns since the clock's epoch) of the last message from the coordinator, for the lease.
  std::atomic<int64_t> last_heard_ns_{0};
  // One job's phase on this agent: running (`phase` set) until its Finish(), then kept (phase empty) until the job's
  // next phase or another job's start, so a late release of it is recognised as stale.
  struct Slot {
    std::string phase;                // empty once finished
    ReleaseBoard releases;            // its barrier releases
    int local_ranks = 0;
    bool shared = false;              // ordered with share_agent
    // The phase must stop; shared with the host, which reads it until the phase's Finish().
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  };
  // The last finished phase of a job and its answer, re-sent when the coordinator repeats the RunPhase.
  struct Answer {
    std::string phase;
    v1::AgentMessage msg;
  };
  // Answers kept: those of the newest jobs (ids sort by submission), bounded for a long-lived agent.
  static constexpr size_t kKeptAnswers = 16;

  mutable Mutex mu_;
  CondVar cv_;      // WaitRelease()
  std::shared_ptr<CoordinatorLink> link_ ABSL_GUARDED_BY(mu_);
  bool session_alive_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);  // by job id
  std::string last_job_ ABSL_GUARDED_BY(mu_);             // the job of the phase started last
  std::map<std::string, Answer> answers_ ABSL_GUARDED_BY(mu_);  // by job id
};

}  // namespace dlio
