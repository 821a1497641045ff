// dlio-bench-swarm: N agent sessions from one process against a real `dlio-coordinator serve`, so the coordinator
// meets a thousand (or four thousand) agents on one machine without a thousand agent processes (issue 14).
//
// Every session is a real agent session: the agent's own protocol code (agent/agent_session.h: Hello, Welcome,
// heartbeats and the lease, RunPhase checks and idempotency, barrier releases, cancel, PhaseDone), its own gRPC
// stream on its own TCP connection (a channel per session with a local subchannel pool), heartbeats every interval
// the coordinator asks for. Only the phase machinery is emulated: each session runs its ranks as one timeline of
// `computation_time` per step and the step barrier of the job's `dlio_ext.barrier` (the job uses the `synthetic`
// format, which reads nothing), and reports per-step compute and barrier times as the agent does, so the
// coordinator's result files and AU are computed by the real aggregation. The barrier is the agent's, message for
// message: `announce` (the default, `--barrier announce`) sends the BarrierArrive as the step's compute starts with
// how long it has left, and ends the step at the instant base/barrier_timing.h StepEnd gives (the same arithmetic
// as agent/step_barrier.h AnnounceBarrier, event-driven here: a timer, not a sleeping thread); `after_compute`
// (`--barrier after_compute`, the previous protocol) arrives when the compute ends and ends the step at the release.
// The relay tree (`--relay on`; docs/architecture.md "The relay tree"): every session announces a relay listener
// (Hello.relay_endpoint), so the coordinator puts a job of dlio_ext.barrier_tree_min_agents sessions or more on a
// tree, and each session does what its order says, as agent/agent_server.cc does: a relay session runs the agent's
// own RelayHub (agent/relay.h) for its group (its own arrival goes in locally, the group's one arrival goes to the
// coordinator, the coordinator's release to the group through the session's relay hook); a member session sends its
// arrivals over a real BarrierRelay Join stream (its own TCP connection) and reads its releases there. Real: the
// messages, the loopback hop, the aggregation and release arithmetic, a broken member stream reported lost.
// Emulated: the relay listener, one for the whole swarm (bench/swarm_relay.h), routing each Join stream by its
// member's name to the relay session its order names, where each real relay listens on a port of its own. The run
// counts the releases that came through relays and from the coordinator, and fails when the tree was asked (--relay
// on, enough sessions) and not used. `--relay off` (the default): no listener, the star.
// The sessions share three kinds of threads: gRPC's callback threads, the timer threads (compute steps, step ends
// and heartbeats; one per core by default, --timer-threads, session i on thread i mod T so that a session's timers
// keep their order) and the main thread; nothing runs per session.
//
// The tool starts the coordinator (`serve --listen 127.0.0.1:0 --port-file ...`), attaches the sessions (at most
// --attach-batch connecting at once, as a real fleet's start-up is staggered too), submits a one-epoch training
// job with `dlio-coordinator submit` (with --jobs J: J such jobs at once, each on agents/J sessions of its own, to
// see whether the coordinator's cost per agent-step grows with the number of concurrent jobs), and reports:
//   - attach time of the whole swarm, and the coordinator's CPU for it;
//   - release latency: per step, from the last session's BarrierArrive (sent) to each session's BarrierRelease
//     (received), p50/p99/max over sessions and steps (the barrier's fan-in and fan-out, without the ranks' skew;
//     with --jobs J the last arrival is that of any job's step, so the figure is only meaningful for one job);
//   - coordinator CPU (utime + stime of /proc/PID/stat) per agent per step: over the job (submit to results), and in
//     the steady window between 10 % and 90 % of the steps (heartbeats and progress included, start-up left out);
//   - coordinator threads (peak during the job, /proc/PID/status) and RSS (VmRSS at the end, VmHWM);
//   - the job's AU from its summary.json (computed by the coordinator from the sessions' step timings);
//   - the barrier's timing error: every session records, per step of the measured phase, its planned compute end,
//     the instant its step ended and (announce) its error bound (base/barrier_timing.h ErrorBound), all in this one
//     process's steady clock, so the real spread of the step ends across sessions is measured, not inferred: spread
//     p50/p99/max, the bound's p50/p99/max, how far a step ended before the slowest compute end (at most the
//     session's bound, by the protocol) and how far after it (the harness's exposed cost).
// A benchmark, not a timed test: its exit status only says whether every session attached, the job succeeded and
// every session saw every release of the epoch, and, with the tree asked, every member's came through its relay (1
// otherwise); CTest runs it small (bench.SwarmSmoke) and with the tree at 1,024 sessions (bench.SwarmTree1024).
//
// Usage: dlio-bench-swarm [--agents N] [--jobs J] [--steps S] [--compute SECONDS] [--accelerators K]
//                         [--barrier announce|after_compute] [--relay on|off] [--fanout F] [--tree-min-agents M]
//                         [--timer-threads T] [--wake processed|scheduled] [--attach-batch B]
//                         [--barrier-timeout SECONDS]
//                         [--bin-dir DIR] [--work DIR] [--json FILE] [--keep]
// The coordinator needs one file descriptor per agent: the tool raises its soft RLIMIT_NOFILE to the hard limit,
// and the coordinator it starts inherits it.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/agent_session.h"
#include "agent/relay.h"
#include "bench/swarm_relay.h"
#include "plan/epoch_plan.h"
#include "mlperf/rules.h"
#include "base/barrier_timing.h"
#include "base/barrier_tree.h"
#include "base/random.h"
#include "base/scheduling.h"
#include "base/write_queue.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "dlio/v1/credentials.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int64_t Ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
int64_t NowUnixUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---------------------------------------------------------------------------------------------------------------
// The coordinator process, seen from /proc
// ---------------------------------------------------------------------------------------------------------------

struct ProcSample {
  double cpu_s = 0;     // utime + stime
  int threads = 0;
  uint64_t rss_kb = 0, hwm_kb = 0;
};

ProcSample ReadProc(pid_t pid) {
  ProcSample p;
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start after the last ')': state is field 3, utime 14.
  const size_t close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    std::vector<std::string> f;
    while (rest >> field) f.push_back(field);
    if (f.size() > 12) p.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream ls(line);
    std::string key;
    uint64_t v = 0;
    ls >> key >> v;
    if (key == "Threads:") p.threads = static_cast<int>(v);
    if (key == "VmRSS:") p.rss_kb = v;
    if (key == "VmHWM:") p.hwm_kb = v;
  }
  return p;
}

// fork + exec with stdout and stderr to files; the child gets SIGTERM if this process dies.
pid_t Spawn(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Between fork and exec only async-signal-safe calls (this process has threads).
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (o >= 0) dup2(o, 1);
  if (e >= 0) dup2(e, 2);
  execv(argv[0], argv.data());
  _exit(127);
}

// ---------------------------------------------------------------------------------------------------------------
// A timer thread for sessions' compute steps and heartbeats (one per core, each for its share of the sessions)
// ---------------------------------------------------------------------------------------------------------------

class Timers {
 public:
  // Timers due within this much of the first one run in the same wake-up: a thousand sessions' compute steps end
  // within milliseconds of each other, and one wake-up (a context switch) per timer would cost this tool more CPU
  // than the coordinator it measures. 50 us is 0.1 % of a 50 ms step; the step's compute is measured, not assumed.
  static constexpr std::chrono::microseconds kSlack{50};
  Timers() : thread_([this] { Loop(); }) {}
  ~Timers() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    thread_.join();
  }
  void At(Clock::time_point t, std::function<void()> fn) {
    std::lock_guard<std::mutex> lk(mu_);
    const bool earliest = heap_.empty() || t < heap_.top().t;
    heap_.push(Entry{t, seq_++, std::move(fn)});
    if (earliest) cv_.notify_one();
  }

 private:
  struct Entry {
    Clock::time_point t;
    uint64_t seq;  // ties run in the order they were set
    std::function<void()> fn;
    bool operator>(const Entry& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  void Loop() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
      if (heap_.empty()) {
        cv_.wait(lk);
        continue;
      }
      if (Clock::now() + kSlack < heap_.top().t) {
        cv_.wait_until(lk, heap_.top().t - kSlack);
        continue;
      }
      std::function<void()> fn = std::move(const_cast<Entry&>(heap_.top()).fn);
      heap_.pop();
      lk.unlock();
      fn();
      lk.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  uint64_t seq_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------------------------------
// What the swarm measures (shared by the sessions)
// ---------------------------------------------------------------------------------------------------------------

// The measured phase: the job's (only) training epoch.
constexpr const char* kMeasuredPhase = "train-epoch-1";

struct SwarmStats {
  explicit SwarmStats(int64_t steps) : last_arrival_ns(static_cast<size_t>(steps)) {}
  // Per step of the measured phase: the latest time a session sent its BarrierArrive (announce: at compute start).
  std::vector<std::atomic<int64_t>> last_arrival_ns;
  std::atomic<uint64_t> releases{0};   // releases of the measured phase received, all sessions
  std::atomic<uint64_t> relay_releases{0};  // ... of them, those a member read from its relay's stream
  std::atomic<int> relays{0}, members{0};   // sessions whose measured phase's order made them a relay / a member
  void Arrived(int64_t step, int64_t ns) {
    if (step < 0 || static_cast<size_t>(step) >= last_arrival_ns.size()) return;
    std::atomic<int64_t>& a = last_arrival_ns[static_cast<size_t>(step)];
    int64_t seen = a.load(std::memory_order_relaxed);
    while (seen < ns && !a.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
    }
  }
};

// Attach progress, and the end of every session.
struct SwarmEvents {
  std::mutex mu;
  std::condition_variable cv;
  int attached = 0, refused = 0, failed = 0, done = 0;  // failed: the stream ended before a Welcome
  std::string first_refusal;
};

// ---------------------------------------------------------------------------------------------------------------
// One emulated agent: an AgentSession on a callback stream, its ranks on timers
// ---------------------------------------------------------------------------------------------------------------

class SwarmAgent final : public PhaseHost,
                         public grpc::ClientBidiReactor<v1::AgentMessage, v1::CoordinatorMessage> {
 public:
  // `relays` (null: the session offers no relay listener, the coordinator keeps the star): the swarm's relay
  // router, where this session's hub is found by its name, and the stub its member role opens Join streams on.
  struct Relays {
    swarm::SwarmRelayRouter* router = nullptr;
    std::unique_ptr<v1::BarrierRelay::Stub> stub;
  };
  SwarmAgent(AgentSession::Identity id, std::shared_ptr<WorkloadCache> workloads, Timers* timers, SwarmStats* stats,
             SwarmEvents* events, int64_t measured_steps, Relays relays, bool scheduled_wake)
      : session_(std::move(id), this, nullptr, std::move(workloads)),
        scheduled_wake_(scheduled_wake),
        timers_(timers),
        stats_(stats),
        events_(events),
        relays_(std::move(relays)),
        release_ns_(static_cast<size_t>(measured_steps), 0),
        ends_(static_cast<size_t>(measured_steps)),
        queue_(kMaxQueued, [this](const v1::AgentMessage* m) { StartWrite(m); }),
        link_(std::make_shared<QueueLink>(&queue_)) {
    if (relays_.router == nullptr) return;
    relays_.router->AddHub(session_.identity().name, &hub_);
    // As the agent (agent/agent_server.cc): a coordinator's release of a group this session relays releases the
    // members first (RelayHub::Released writes their streams) and gives back the relay's own.
    session_.set_relay_hook([this](const std::string& job, const std::string& phase, uint64_t step,
                                   const barrier_timing::Release& up, int64_t received_ns) {
      return hub_.Released(job, phase, step, up, received_ns, received_ns);
    });
  }

  void Connect(v1::Coordinator::Stub* stub) {
    stub->async()->Attach(&context_, this);
    // Writes start from the timer thread too: the hold keeps the call alive until the queue is closed and idle.
    AddHold();
    queue_.Push(session_.Hello());
    StartRead(&in_);
    StartCall();
  }
  void Cancel() {
    context_.TryCancel();
    CloseRoute(/*cancel=*/true);
  }
  // Releases of the measured phase received, and their receive times (ns, steady clock; 0 = none). Read after the
  // job ended (the submit exited), when no session touches them any more.
  int64_t releases_seen() const { return releases_seen_; }
  const std::vector<int64_t>& release_ns() const { return release_ns_; }
  // Per step of the measured phase (steady clock, ns; step_end 0 = the step did not end): what the barrier's timing
  // error is measured from.
  struct StepRecord {
    int64_t compute_end = 0;  // planned: the step's start plus its drawn compute
    int64_t step_end = 0;     // when the session ended the step (its timer or its release ran)
    int64_t bound = -1;       // announce: base/barrier_timing.h ErrorBound of the step; -1 after_compute
  };
  const std::vector<StepRecord>& step_records() const { return ends_; }

  // --- the stream ---
  void OnReadDone(bool ok) override {
    if (!ok) {
      Ended();
      return;
    }
    const Clock::time_point now = Clock::now();
    if (!welcomed_) {
      absl::StatusOr<AgentSession::Timing> t = session_.Welcome(in_);
      if (!t.ok()) {
        {
          std::lock_guard<std::mutex> lk(events_->mu);
          if (events_->refused++ == 0) events_->first_refusal = std::string(t.status().message());
          events_->cv.notify_all();
        }
        refused_ = true;
        context_.TryCancel();
        StartRead(&in_);  // fails at once: the cancelled call ends there
        return;
      }
      welcomed_ = true;
      timing_ = *t;
      session_.Begin(link_, now, timing_);
      {
        std::lock_guard<std::mutex> lk(events_->mu);
        ++events_->attached;
        events_->cv.notify_all();
      }
      ScheduleHeartbeat(now);
    } else {
      session_.OnMessage(in_, now);
    }
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    if (queue_.Done(ok)) RemoveHold();
  }
  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> lk(events_->mu);
    ++events_->done;
    events_->cv.notify_all();
  }

  // --- PhaseHost: the emulated ranks ---
  void Start(PhaseCommand cmd) override;
  // One phase at a time (the swarm's jobs hold their agents alone): the job id only has to match the running one.
  // With the announce barrier the release's timing is read back from the session (AgentSession::AwaitRelease, which
  // returns at once: the release is recorded before this is called).
  void Released(const std::string& job_id, uint64_t step) override;
  void Stop(const std::string& job_id) override;
  const PhaseProgress& progress(const std::string& job_id) const override { return progress_; }

 private:
  // Far above what a session queues (a heartbeat, a progress report and one arrival in flight).
  static constexpr size_t kMaxQueued = 4096;

  class QueueLink : public CoordinatorLink {
   public:
    explicit QueueLink(WriteQueue<v1::AgentMessage>* q) : q_(q) {}
    bool Send(const v1::AgentMessage& m) override {
      const auto r = q_->Push(m);
      return r == WriteQueue<v1::AgentMessage>::Pushed::kStarted || r == WriteQueue<v1::AgentMessage>::Pushed::kQueued;
    }

   private:
    WriteQueue<v1::AgentMessage>* q_;
  };

  void Ended() {
    if (!welcomed_ && !refused_) {
      std::lock_guard<std::mutex> lk(events_->mu);
      ++events_->failed;
      events_->cv.notify_all();
    }
    ended_ = true;
    session_.End();
    if (queue_.Close()) RemoveHold();
  }
  // Heartbeat number `beat` of the connection, AgentSession::Timing::Before(beat) after `from` (as the agent's).
  void ScheduleHeartbeat(Clock::time_point from, int beat = 0) {
    timers_->At(from + timing_.Before(beat), [this, beat] {
      if (ended_) return;
      if (session_.LeaseExpired(Clock::now(), timing_, nullptr)) {
        context_.TryCancel();
        return;
      }
      session_.SendHeartbeat(AgentSession::Timing::Probe(beat));
      ScheduleHeartbeat(Clock::now(), beat + 1);
    });
  }
  // What a step transition leaves to do once mu_ is released (messages are sent outside it).
  struct After {
    bool arrive = false;               // send the BarrierArrive of `step`
    bool announce = false;             // send it as an announce, the compute ending `compute_left_ns` after the send
    int64_t compute_left_ns = 0;
    std::optional<barrier_timing::EndInterval> placed;  // announce: that end in the coordinator's clock (OffsetWindow)
    bool end = false;                  // the phase ended: send `results`
    PhaseOrder ids;                    // job and phase ids
    uint64_t step = 0;
    std::vector<RankEpochResult> results;
  };
  // With mu_ held: runs the phase on from `now` until it waits (a compute timer, a release) or ends.
  void Advance(Clock::time_point now, After* after);
  // With mu_ held: the step's compute ended at compute_end_; its arrival goes out.
  void Arrival(After* after);
  // With mu_ held: the step's compute (planned to end at agent_step_.compute_end_ns) starts now: its announce goes out.
  void Announce(After* after);
  // With mu_ held, announce barrier, compute over and release in: the step ends at base/barrier_timing.h StepEnd's
  // instant, at once if that is past (`now`), else on a timer (StepEnded).
  void EndStep(Clock::time_point now, After* after);
  void StepEnded(uint64_t gen);
  // With mu_ held: the step ended at `t3` (its release, or its compute without a barrier).
  void RecordStep(Clock::time_point t3);
  void ComputeDone(uint64_t gen);
  std::vector<RankEpochResult> Results(Clock::time_point now);
  void Do(After after);
  // The phase's barrier route (agent/agent_server.cc OpenRoute, CloseRoute, SendArrival): the coordinator (the
  // star), this session's own hub (it relays its group), or a Join stream to its relay (it is a member).
  void OpenRoute(const PhaseCommand& cmd);
  void CloseRoute(bool cancel);
  void SendArrival(const After& after);

  // The instant a timer of this session fired: `scheduled` with --wake scheduled (as a real agent's rank, on a core
  // of its own, wakes at its instant), else when the shared timer thread reached it (the sessions ahead of it on the
  // thread delay it: the emulator's cost, not the protocol's).
  Clock::time_point WokeAt(Clock::time_point scheduled) const { return scheduled_wake_ ? scheduled : Clock::now(); }

  AgentSession session_;
  const bool scheduled_wake_;
  Timers* const timers_;
  SwarmStats* const stats_;
  SwarmEvents* const events_;
  Relays relays_;
  RelayHub hub_;  // the groups this session relays (agent/relay.h, the agent's own code)
  grpc::ClientContext context_;
  v1::CoordinatorMessage in_;
  bool welcomed_ = false, refused_ = false;  // touched by the reading reaction only
  AgentSession::Timing timing_;
  std::atomic<bool> ended_{false};
  std::vector<int64_t> release_ns_;       // per step of the measured phase
  std::vector<StepRecord> ends_;          // per step of the measured phase (written under mu_)
  std::atomic<int64_t> releases_seen_{0};
  PhaseProgress progress_;
  WriteQueue<v1::AgentMessage> queue_;
  std::shared_ptr<QueueLink> link_;

  // The running phase (guarded by mu_).
  std::mutex mu_;
  PhaseCommand cmd_;
  bool running_ = false, barrier_ = false, measured_ = false;
  // What the current step waits for: its compute timer, the release (after its compute), or its end instant's timer.
  enum class Wait { kNone, kCompute, kRelease, kEnd } wait_ = Wait::kNone;
  bool announce_ = false;                 // dlio_ext.barrier: announce (else after_compute)
  barrier_timing::AgentStep agent_step_;  // announce: the step's announce and planned compute end (steady ns)
  bool released_ = false;                 // announce: the current step's release came
  AnnounceBarrier::Received release_;     // ... and its timing
  uint64_t gen_ = 0;                      // bumped per phase and at a stop: a stale timer does nothing
  int64_t steps_ = 0, step_ = 0, dropped_ = 0, start_unix_us_ = 0;
  Clock::time_point block_start_, step_start_, compute_end_, prev_step_end_;
  Clock::time_point planned_end_, end_at_;  // the current step's compute end and (announce) end instant, planned
  BlockTimings block_;
  Xoshiro256 rng_{1};

  // The barrier route of the running phase (guarded by route_mu_; taken without mu_ held).
  std::mutex route_mu_;
  PhaseOrder route_ids_;
  bool route_relay_ = false;                    // this session relays its group
  swarm::SwarmRelayLink* route_link_ = nullptr;  // this session is a member: its Join stream
};

void SwarmAgent::Start(PhaseCommand cmd) {
  const bool eval = cmd.kind == PhaseKind::kEval;
  if (cmd.kind == PhaseKind::kCheckpoint) {
    session_.Finish(cmd, absl::UnimplementedError(absl::StrCat(
                             "agent '", session_.identity().name, "' job ", cmd.job_id, " phase ", cmd.phase_id,
                             ": dlio-bench-swarm emulates generate, training and evaluation phases only")));
    return;
  }
  if (cmd.kind == PhaseKind::kGenerate) {  // the synthetic format has nothing to write worth emulating
    std::vector<RankEpochResult> r(static_cast<size_t>(cmd.local_ranks));
    for (int l = 0; l < cmd.local_ranks; ++l) r[l].rank = cmd.first_rank + l, r[l].epoch = 0;
    session_.Finish(cmd, std::move(r));
    return;
  }
  const PlanParams params = eval ? EvalPlanParams(cmd.spec, cmd.world) : TrainPlanParams(cmd.spec, cmd.world);
  absl::StatusOr<int64_t> steps = EpochPlan::Steps(params);
  int64_t dropped = 0;
  if (steps.ok() && !eval && cmd.first_rank == 0) {  // rank 0 reports the fleet's dropped samples, as the agent does
    absl::StatusOr<EpochPlan> plan = EpochPlan::Make(params, cmd.epoch);
    if (plan.ok()) dropped = plan->DroppedSamples();
  }
  if (!steps.ok()) {
    session_.Finish(cmd, steps.status());
    return;
  }
  OpenRoute(cmd);
  After after;
  {
    std::lock_guard<std::mutex> lk(mu_);
    cmd_ = std::move(cmd);
    ++gen_;
    running_ = true;
    wait_ = Wait::kNone;
    barrier_ = !eval && cmd_.local_ranks < cmd_.world;  // a single-agent job's barrier stays inside the agent
    announce_ = barrier_ && cmd_.spec.barrier == "announce";  // as agent/steps_phase.cc chooses
    measured_ = barrier_ && cmd_.phase_id == kMeasuredPhase;
    steps_ = *steps;
    step_ = 0;
    dropped_ = dropped;
    progress_.done = 0;
    progress_.total = static_cast<uint64_t>(steps_);
    progress_.samples = 0;
    progress_.bytes = 0;
    progress_.compute_ns = 0;
    progress_.wall_ns = 0;
    block_ = BlockTimings();
    block_.block = 1;
    block_.start_unix_us = start_unix_us_ = NowUnixUs();
    rng_ = Xoshiro256(static_cast<uint64_t>(cmd_.spec.seed) * 0x9E3779B97F4A7C15ull ^
                      (static_cast<uint64_t>(cmd_.first_rank) << 20) ^ static_cast<uint64_t>(cmd_.epoch));
    block_start_ = prev_step_end_ = Clock::now();
    Advance(block_start_, &after);
  }
  Do(std::move(after));
}

void SwarmAgent::Advance(Clock::time_point now, After* after) {
  while (true) {
    if (step_ >= steps_) {
      after->end = true;
      after->ids.job_id = cmd_.job_id;
      after->ids.phase_id = cmd_.phase_id;
      after->results = Results(now);
      running_ = false;
      return;
    }
    step_start_ = now;
    const Distribution& d = cmd_.kind == PhaseKind::kEval ? cmd_.spec.eval_time : cmd_.spec.computation_time;
    const double compute = d.IsZero() ? 0 : d.Sample(rng_);
    const Clock::time_point planned_end = now + std::chrono::nanoseconds(static_cast<int64_t>(compute * 1e9));
    planned_end_ = planned_end;
    if (measured_ && step_ < static_cast<int64_t>(ends_.size())) {
      ends_[static_cast<size_t>(step_)].compute_end = Ns(planned_end);
    }
    if (announce_) {
      agent_step_.compute_end_ns = Ns(planned_end);
      Announce(after);
    }
    if (compute > 0) {
      wait_ = Wait::kCompute;
      timers_->At(planned_end, [this, g = gen_] { ComputeDone(g); });
      return;
    }
    compute_end_ = now;  // no compute: as the agent, which then does not sleep at all
    if (announce_) {
      wait_ = Wait::kRelease;
      return;
    }
    if (barrier_) {
      Arrival(after);
      return;
    }
    RecordStep(now);
  }
}

void SwarmAgent::Arrival(After* after) {
  wait_ = Wait::kRelease;
  if (measured_) stats_->Arrived(step_, Ns(compute_end_));
  after->arrive = true;
  after->ids.job_id = cmd_.job_id;
  after->ids.phase_id = cmd_.phase_id;
  after->step = static_cast<uint64_t>(step_);
}

void SwarmAgent::Announce(After* after) {
  // As AnnounceBarrier::Start: the announce instant is read here and the message leaves just after mu_ is released,
  // so its compute_left is a few microseconds long (the coordinator's estimate early, this session's bound larger:
  // the conservative side).
  released_ = false;
  agent_step_.announced_ns = Ns(Clock::now());
  if (measured_) stats_->Arrived(step_, agent_step_.announced_ns);
  after->arrive = after->announce = true;
  after->compute_left_ns = agent_step_.compute_end_ns - agent_step_.announced_ns;
  // As AnnounceBarrier::Start: the compute end placed in the coordinator's clock by the session's offset estimate.
  after->placed = session_.clock().PlaceEnd(agent_step_.compute_end_ns);
  after->ids.job_id = cmd_.job_id;
  after->ids.phase_id = cmd_.phase_id;
  after->step = static_cast<uint64_t>(step_);
}

void SwarmAgent::EndStep(Clock::time_point now, After* after) {
  const int64_t end = barrier_timing::StepEnd(agent_step_, release_.release, release_.received_ns);
  end_at_ = Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(end)));
  if (end <= Ns(now)) {
    const Clock::time_point t = scheduled_wake_ ? end_at_ : now;  // a late release: its arrival's stamp
    RecordStep(t);
    Advance(t, after);
    return;
  }
  wait_ = Wait::kEnd;
  timers_->At(end_at_, [this, g = gen_] { StepEnded(g); });
}

void SwarmAgent::StepEnded(uint64_t gen) {
  After after;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (gen != gen_ || !running_ || wait_ != Wait::kEnd) return;
    const Clock::time_point now = WokeAt(end_at_);
    RecordStep(now);
    Advance(now, &after);
  }
  Do(std::move(after));
}

void SwarmAgent::RecordStep(Clock::time_point t3) {
  const double compute = Secs(compute_end_ - step_start_);
  block_.load.push_back(0);  // the synthetic format reads nothing: a batch is ready at once
  block_.compute.push_back(compute);
  block_.proc.push_back(compute);
  block_.barrier.push_back(Secs(t3 - compute_end_));
  if (step_ > 0) {  // live AU after the first (excluded) step, as the agent reports it
    progress_.compute_ns += static_cast<uint64_t>(compute * 1e9);
    progress_.wall_ns += static_cast<uint64_t>(Ns(t3) - Ns(prev_step_end_));
  }
  prev_step_end_ = t3;
  if (measured_ && step_ < static_cast<int64_t>(ends_.size())) ends_[static_cast<size_t>(step_)].step_end = Ns(t3);
  wait_ = Wait::kNone;
  progress_.samples += static_cast<uint64_t>(cmd_.spec.batch_size * cmd_.local_ranks);
  ++step_;
  progress_.done = static_cast<uint64_t>(step_);
}

void SwarmAgent::ComputeDone(uint64_t gen) {
  After after;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (gen != gen_ || !running_) return;
    compute_end_ = WokeAt(planned_end_);
    if (announce_ && released_) {
      EndStep(compute_end_, &after);
    } else if (announce_) {
      wait_ = Wait::kRelease;
    } else if (barrier_) {
      Arrival(&after);
    } else {
      RecordStep(compute_end_);
      Advance(compute_end_, &after);
    }
  }
  Do(std::move(after));
}

void SwarmAgent::Released(const std::string& job_id, uint64_t step) {
  const Clock::time_point now = Clock::now();
  // The release's timing, as the session recorded it (its arrival in the steady clock, read by OnMessage).
  absl::StatusOr<AnnounceBarrier::Received> r = session_.AwaitRelease(job_id, step);
  After after;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!running_ || step != static_cast<uint64_t>(step_) || job_id != cmd_.job_id) return;
    // after_compute: only once arrived; announce: any time after the announce (a release before the compute end
    // is the point of the protocol), once.
    if (announce_ ? released_ || !r.ok() || wait_ == Wait::kEnd : wait_ != Wait::kRelease) return;
    if (measured_ && step_ < static_cast<int64_t>(release_ns_.size())) {
      release_ns_[static_cast<size_t>(step_)] = Ns(now);
      ++releases_seen_;
      stats_->releases.fetch_add(1, std::memory_order_relaxed);
    }
    if (!announce_) {
      RecordStep(now);
      Advance(now, &after);
    } else {
      released_ = true;
      release_ = *r;
      // As AnnounceBarrier::Finish: the window takes this exchange; the bound is the placed one when the end was.
      const int64_t bound =
          barrier_timing::PlacedBound(r->release, session_.clock().Add(agent_step_, r->release, r->received_ns));
      if (measured_ && step_ < static_cast<int64_t>(ends_.size())) ends_[static_cast<size_t>(step_)].bound = bound;
      if (wait_ == Wait::kRelease) EndStep(now, &after);  // else the compute timer ends the step
    }
  }
  Do(std::move(after));
}

std::vector<RankEpochResult> SwarmAgent::Results(Clock::time_point now) {
  block_.duration_s = Secs(now - block_start_);
  block_.end_unix_us = NowUnixUs();
  std::vector<RankEpochResult> out(static_cast<size_t>(cmd_.local_ranks));
  for (int l = 0; l < cmd_.local_ranks; ++l) {
    RankEpochResult& r = out[static_cast<size_t>(l)];
    r.rank = cmd_.first_rank + l;
    r.epoch = cmd_.epoch;
    r.start_unix_us = start_unix_us_;
    r.end_unix_us = block_.end_unix_us;
    r.blocks.push_back(block_);
    r.dropped_samples = r.rank == 0 ? static_cast<uint64_t>(dropped_) : 0;
  }
  return out;
}

void SwarmAgent::Do(After after) {
  if (after.arrive) SendArrival(after);
  if (after.end) {
    CloseRoute(/*cancel=*/false);
    session_.Finish(after.ids, std::move(after.results));
  }
}

void SwarmAgent::OpenRoute(const PhaseCommand& cmd) {
  if (cmd.barrier_relay.empty() || relays_.router == nullptr) return;  // the star
  const std::string& self = session_.identity().name;
  const bool measured = cmd.phase_id == kMeasuredPhase;
  PhaseOrder ids;
  ids.job_id = cmd.job_id;
  ids.phase_id = cmd.phase_id;
  std::lock_guard<std::mutex> lk(route_mu_);
  route_ids_ = ids;
  if (cmd.barrier_relay == self) {
    route_relay_ = true;
    if (measured) stats_->relays.fetch_add(1);
    hub_.Open(
        cmd.job_id, cmd.phase_id, cmd.barrier_group, self,
        [this, ids](uint64_t step, int64_t left_ns) { session_.Announce(ids, step, left_ns); },
        [this, ids](const std::string& member, const std::string& why) {
          spdlog::warn("agent '{}': member {} of its barrier group lost during job {} phase {}: {}",
                       session_.identity().name, member, ids.job_id, ids.phase_id, why);
          session_.SendMemberLost(ids, member, why);
        });
    return;
  }
  if (measured) stats_->members.fetch_add(1);
  relays_.router->Route(cmd.job_id, self, cmd.barrier_relay);
  route_link_ = new swarm::SwarmRelayLink(
      relays_.stub.get(), cmd.job_id, cmd.phase_id, self, [this, measured](const v1::BarrierRelease& r) {
        if (measured) stats_->relay_releases.fetch_add(1, std::memory_order_relaxed);
        session_.DeliverRelease(r, Clock::now(), /*from_relay=*/true);
      });
}

void SwarmAgent::CloseRoute(bool cancel) {
  std::lock_guard<std::mutex> lk(route_mu_);
  if (route_relay_) hub_.Close(route_ids_.job_id, route_ids_.phase_id);
  route_relay_ = false;
  if (route_link_ != nullptr) route_link_->Close(cancel);  // the link ends itself
  route_link_ = nullptr;
}

void SwarmAgent::SendArrival(const After& after) {
  const int64_t left = after.announce ? after.compute_left_ns : 0;  // after_compute: the compute is over
  std::lock_guard<std::mutex> lk(route_mu_);
  if (route_relay_) {
    hub_.Arrive(after.ids.job_id, after.ids.phase_id, session_.identity().name, after.step, left, Ns(Clock::now()));
  } else if (route_link_ != nullptr) {
    // A relay gone: the member keeps waiting, and the coordinator fails the job naming the relay and its group.
    route_link_->Send(after.step, left);
  } else if (after.announce) {
    session_.Announce(after.ids, after.step, after.compute_left_ns, after.placed);  // only the coordinator places by it
  } else {
    session_.Arrive(after.ids, after.step);
  }
}

void SwarmAgent::Stop(const std::string& job_id) {
  std::string where;
  PhaseOrder ids;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!running_ || job_id != cmd_.job_id) return;
    running_ = false;
    ++gen_;
    where = absl::StrCat("agent '", session_.identity().name, "' (rank ", cmd_.first_rank, ") job ", cmd_.job_id,
                         " phase ", cmd_.phase_id, ": cancelled at step ", step_);
    ids.job_id = cmd_.job_id;
    ids.phase_id = cmd_.phase_id;
  }
  CloseRoute(/*cancel=*/false);
  session_.Finish(ids, absl::CancelledError(where));
}

// ---------------------------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------------------------

struct Config {
  int agents = 256;
  int jobs = 1;                   // concurrent jobs, each on agents / jobs sessions
  int64_t steps = 200;
  double compute = 0.05;
  int accelerators = 1;
  // Sessions connecting at once: a fleet's agents start within seconds of each other, not all in one instant; 64
  // keeps the coordinator's accept queue short while 4,096 sessions still attach in seconds.
  int attach_batch = 64;
  uint32_t protocol_version = 0;  // 0 = this build's; an earlier one measures an earlier coordinator
  std::string barrier = "announce";  // the job's dlio_ext.barrier: announce | after_compute
  double barrier_timeout = 60;  // the job's: a lost release fails it after this long
  // --relay on: every session offers a relay listener (the swarm's one, bench/swarm_relay.h), so the coordinator
  // puts a job of dlio_ext.barrier_tree_min_agents agents or more on a relay tree; off: none, the star.
  bool relay = false;
  int fanout = 0;           // the job's dlio_ext.barrier_fanout; 0 = the default (not written)
  int tree_min_agents = 0;  // the job's dlio_ext.barrier_tree_min_agents; 0 = the default (not written)
  int timer_threads = 0;    // timer threads the sessions are spread over; 0 = one per core
  bool scheduled_wake = false;  // --wake scheduled: a session's steps run from its timers' instants (SwarmAgent::WokeAt)
  std::string bin_dir;
  std::string work;
  std::string json;
  std::string log_level = "warn";
  bool keep = false;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

// The barrier's timing error over the measured phase, from the sessions' step records (one steady clock). Per step
// (those every session ended): the spread of the step ends (latest - earliest), and per session how far it ended
// before the slowest planned compute end (`early`: the protocol allows at most its bound) or after it (`exposed`: the
// harness's cost in the step). With --jobs J the steps of J barriers mix: meaningful for one job.
struct BarrierErrors {
  std::vector<double> spread_us, bound_us, exposed_us;
  double early_max_us = 0;
  int64_t beyond_bound = 0;  // session-steps that ended earlier than their bound allows, beyond the timers' slack
  int64_t steps = 0;
};

BarrierErrors MeasureBarrier(const std::vector<std::unique_ptr<SwarmAgent>>& agents, int64_t steps) {
  BarrierErrors e;
  e.early_max_us = -1e18;
  const int64_t slack_ns = std::chrono::nanoseconds(Timers::kSlack).count();
  for (int64_t s = 0; s < steps; ++s) {
    int64_t slowest = std::numeric_limits<int64_t>::min(), first = std::numeric_limits<int64_t>::max(),
            last = std::numeric_limits<int64_t>::min();
    bool all = true;
    for (const auto& a : agents) {
      const SwarmAgent::StepRecord& r = a->step_records()[static_cast<size_t>(s)];
      if (r.step_end == 0) all = false;
      slowest = std::max(slowest, r.compute_end);
      first = std::min(first, r.step_end);
      last = std::max(last, r.step_end);
    }
    if (!all || agents.empty()) continue;
    ++e.steps;
    e.spread_us.push_back(static_cast<double>(last - first) / 1e3);
    for (const auto& a : agents) {
      const SwarmAgent::StepRecord& r = a->step_records()[static_cast<size_t>(s)];
      const int64_t early = slowest - r.step_end;
      e.early_max_us = std::max(e.early_max_us, static_cast<double>(early) / 1e3);
      e.exposed_us.push_back(static_cast<double>(std::max<int64_t>(0, -early)) / 1e3);
      if (r.bound >= 0) {
        e.bound_us.push_back(static_cast<double>(r.bound) / 1e3);
        if (early > r.bound + slack_ns) ++e.beyond_bound;
      }
    }
  }
  if (e.steps == 0) e.early_max_us = 0;
  return e;
}

std::string JobYaml(const Config& c) {
  const int64_t world = static_cast<int64_t>(c.agents / c.jobs) * c.accelerators;  // of one job
  // One sample per file, batch 1: `steps` samples per rank and epoch. The synthetic format reads nothing; the job
  // measures the coordinator, not storage (skip_listing: no list phase to emulate). No AU target: the figure is
  // reported, not judged.
  return absl::StrCat("model:\n  name: swarm-bench\nframework: pytorch\nworkflow:\n  generate_data: false\n  train: true\n",
                      "dataset:\n  data_folder: data\n  format: synthetic\n  num_files_train: ", world * c.steps,
                      "\n  num_samples_per_file: 1\n  record_length_bytes: 1024\n  skip_listing: true\n",
                      "reader:\n  data_loader: pytorch\n  batch_size: 1\n  read_threads: 1\n",
                      "train:\n  epochs: 1\n  computation_time: ", absl::StrFormat("%g", c.compute), "\n",
                      "metric:\n  au: 0\n", "dlio_ext:\n  barrier: ", c.barrier, "\n",
                      c.fanout > 0 ? absl::StrCat("  barrier_fanout: ", c.fanout, "\n") : "",
                      c.tree_min_agents > 0 ? absl::StrCat("  barrier_tree_min_agents: ", c.tree_min_agents, "\n")
                                            : "");
}

// True when the coordinator must put the job on a relay tree (coordinator/phase_driver.cc: every agent can relay,
// base/barrier_tree.h GroupAgents: at least min_agents agents and more than one group).
bool TreeExpected(const Config& c) {
  const int n = c.agents / c.jobs;
  const int fanout = c.fanout > 0 ? c.fanout : barrier_tree::kDefaultFanout;
  const int min_agents = c.tree_min_agents > 0 ? c.tree_min_agents : barrier_tree::kDefaultMinAgents;
  return c.relay && n >= min_agents && n > fanout;
}

class Run {
 public:
  explicit Run(Config c) : c_(std::move(c)), stats_(c_.steps) {}
  ~Run() { Teardown(); }
  int Main();

 private:
  bool StartCoordinator();
  bool AttachAll();
  int SubmitAndMonitor();
  int Report(int submit_rc);
  void Teardown();

  Config c_;
  std::string addr_;
  pid_t coord_ = -1;
  SwarmStats stats_;
  SwarmEvents events_;
  std::vector<std::unique_ptr<Timers>> timers_;  // session i on timers_[i % size]
  swarm::SwarmRelayRouter router_;
  std::unique_ptr<swarm::SwarmRelayServer> relay_server_;  // --relay on
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::Coordinator::Stub>> stubs_;
  std::vector<std::unique_ptr<SwarmAgent>> agents_;
  // Figures.
  double attach_s_ = 0, attach_cpu_s_ = 0, job_s_ = 0, job_cpu_s_ = 0;
  double window_cpu_s_ = 0, window_agent_steps_ = 0;
  double window_swarm_cpu_s_ = 0;  // this process's own CPU in the window: the two share the machine
  int threads_attached_ = 0, threads_peak_ = 0;
  ProcSample end_;
};

bool Run::StartCoordinator() {
  fs::create_directories(c_.work);
  const std::string port_file = c_.work + "/port";
  fs::remove(port_file);
  coord_ = Spawn({c_.bin_dir + "/dlio-coordinator", "serve", "--listen", "127.0.0.1:0", "--port-file", port_file,
                  "--results-dir", c_.work + "/results"},
                 c_.work + "/coordinator.log", c_.work + "/coordinator.log");
  // 30 s: the coordinator listens within a second; this only bounds a broken build.
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in(port_file);
    int port = 0;
    if (in >> port && port > 0) {
      addr_ = absl::StrCat("127.0.0.1:", port);
      std::cout << "coordinator pid " << coord_ << " listening on " << addr_ << "\n" << std::flush;
      return true;
    }
    if (waitpid(coord_, nullptr, WNOHANG) == coord_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::cerr << "dlio-bench-swarm: the coordinator did not start; see " << c_.work << "/coordinator.log\n";
  return false;
}

bool Run::AttachAll() {
  for (int t = 0; t < c_.timer_threads; ++t) timers_.push_back(std::make_unique<Timers>());
  if (c_.relay) {
    absl::StatusOr<std::unique_ptr<swarm::SwarmRelayServer>> relay = swarm::SwarmRelayServer::Start(&router_);
    if (!relay.ok()) {
      std::cerr << "dlio-bench-swarm: " << relay.status().message() << "\n";
      return false;
    }
    relay_server_ = std::move(*relay);
  }
  auto workloads = std::make_shared<WorkloadCache>();
  AgentSession::Identity base;
  base.accelerators = c_.accelerators;
  base.protocol_version = c_.protocol_version;
  struct sysinfo si {};
  if (sysinfo(&si) == 0) base.host_memory_bytes = static_cast<uint64_t>(si.totalram) * si.mem_unit;
  base.host_memory_source = "meminfo";
  base.host_cpu_count = static_cast<uint32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  base.provenance = CollectHostProvenance(c_.work);
  std::random_device rd;
  const ProcSample p0 = ReadProc(coord_);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < c_.agents; ++i) {
    AgentSession::Identity id = base;
    id.name = absl::StrFormat("swarm-%04d", i);
    id.node_name = absl::StrFormat("swarm-node-%04d", i);  // one emulated node per session: num_hosts = N
    id.instance = absl::StrFormat("%08x%08x", rd(), rd());
    grpc::ChannelArguments args = SessionChannelArgs(Transport());
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a TCP connection of its own, as a real node has
    channels_.push_back(grpc::CreateCustomChannel(addr_, ChannelCredentials(Transport()), args));
    stubs_.push_back(v1::Coordinator::NewStub(channels_.back()));
    SwarmAgent::Relays relays;
    if (relay_server_) {
      // Every session announces the swarm's one relay listener; as a member it has a connection of its own to it.
      id.relay_endpoint = relay_server_->endpoint();
      relays.router = &router_;
      relays.stub = v1::BarrierRelay::NewStub(
          grpc::CreateCustomChannel(id.relay_endpoint, ChannelCredentials(Transport()), args));
    }
    agents_.push_back(std::make_unique<SwarmAgent>(std::move(id), workloads,
                                                   timers_[static_cast<size_t>(i) % timers_.size()].get(), &stats_,
                                                   &events_, c_.steps, std::move(relays), c_.scheduled_wake));
    {
      // At most attach_batch sessions connecting at once.
      std::unique_lock<std::mutex> lk(events_.mu);
      events_.cv.wait(lk, [&] {
        return i - events_.attached - events_.refused - events_.failed < c_.attach_batch;
      });
    }
    agents_.back()->Connect(stubs_.back().get());
  }
  std::unique_lock<std::mutex> lk(events_.mu);
  // 300 s: thousands of sessions attach within seconds; this only bounds a coordinator that stopped answering.
  events_.cv.wait_for(lk, std::chrono::seconds(300),
                      [&] { return events_.attached + events_.refused + events_.failed >= c_.agents; });
  attach_s_ = Secs(Clock::now() - t0);
  const ProcSample p1 = ReadProc(coord_);
  attach_cpu_s_ = p1.cpu_s - p0.cpu_s;
  threads_attached_ = p1.threads;
  if (events_.attached < c_.agents) {
    std::cerr << "dlio-bench-swarm: " << events_.attached << " of " << c_.agents << " sessions attached ("
              << events_.refused << " refused, " << events_.failed << " could not connect" << (events_.first_refusal.empty() ? "" : ": " + events_.first_refusal)
              << ")\n";
    return false;
  }
  std::cout << absl::StrFormat("attached %d sessions in %.2f s (coordinator CPU %.2f s, %d threads)\n", c_.agents,
                               attach_s_, attach_cpu_s_, threads_attached_)
            << std::flush;
  return true;
}

int Run::SubmitAndMonitor() {
  const std::string job = c_.work + "/job.yaml";
  std::ofstream(job) << JobYaml(c_);
  const ProcSample p0 = ReadProc(coord_);
  const Clock::time_point t0 = Clock::now();
  // --jobs J: J submits at once, each for agents/J agents (the coordinator places them on disjoint agents).
  std::vector<pid_t> submits;
  for (int j = 0; j < c_.jobs; ++j) {
    const std::string out = j == 0 ? c_.work + "/out" : absl::StrCat(c_.work, "/out-", j);
    fs::remove_all(out);
    const std::string name = j == 0 ? "submit" : absl::StrCat("submit-", j);
    submits.push_back(Spawn({c_.bin_dir + "/dlio-coordinator", "submit", job, "--coordinator", addr_, "--agents",
                             std::to_string(c_.agents / c_.jobs), "--wait-for-agents", "60", "--barrier-timeout",
                             absl::StrFormat("%g", c_.barrier_timeout), "--output", out, "--json"},
                            c_.work + "/" + name + ".json", c_.work + "/" + name + ".err"));
  }
  // The steady window: from 10 % of the steps released everywhere to 90 %.
  const uint64_t n = static_cast<uint64_t>(c_.agents);
  const uint64_t w1 = n * static_cast<uint64_t>(std::max<int64_t>(1, c_.steps / 10));
  const uint64_t w2 = n * static_cast<uint64_t>(c_.steps - std::max<int64_t>(1, c_.steps / 10));
  bool in_window = false, window_done = false;
  ProcSample a, self_a;
  uint64_t ra = 0;
  int status = 0, worst = 0;  // the first failed submit's status, else the last one's
  auto all_done = [&] {
    for (pid_t& pid : submits) {
      if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (worst == 0 || worst == 5 || worst == 6) worst = rc;
      }
    }
    return std::all_of(submits.begin(), submits.end(), [](pid_t p) { return p < 0; });
  };
  while (!all_done()) {
    const uint64_t r = stats_.releases.load();
    if (!in_window && !window_done && r >= w1) {
      a = ReadProc(coord_), self_a = ReadProc(getpid()), ra = r, in_window = true;
    } else if (in_window && r >= w2) {
      const ProcSample b = ReadProc(coord_);
      window_cpu_s_ = b.cpu_s - a.cpu_s;
      window_swarm_cpu_s_ = ReadProc(getpid()).cpu_s - self_a.cpu_s;
      window_agent_steps_ = static_cast<double>(r - ra);
      in_window = false, window_done = true;
    }
    threads_peak_ = std::max(threads_peak_, ReadProc(coord_).threads);
    // 5 ms: a few samples per step even at computation_time 0, at a negligible cost.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  job_s_ = Secs(Clock::now() - t0);
  end_ = ReadProc(coord_);
  job_cpu_s_ = end_.cpu_s - p0.cpu_s;
  return worst;
}

int Run::Report(int submit_rc) {
  // 5 and 6: the job ran but missed its AU target or could not measure it (the bench measures the coordinator).
  const bool job_ok = submit_rc == 0 || submit_rc == 5 || submit_rc == 6;
  std::vector<double> latency_ms;
  int64_t incomplete = 0;  // sessions that did not see every release of the measured phase
  for (const auto& a : agents_) {
    if (a->releases_seen() != c_.steps) ++incomplete;
    for (size_t s = 0; s < a->release_ns().size(); ++s) {
      const int64_t last = stats_.last_arrival_ns[s].load();
      if (a->release_ns()[s] > 0 && last > 0) latency_ms.push_back(static_cast<double>(a->release_ns()[s] - last) / 1e6);
    }
  }
  nlohmann::json summary;
  std::ifstream in(c_.work + "/out/summary.json");
  if (in) summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json au = summary.is_object() ? summary["metric"]["train_au_mean_percentage"] : nlohmann::json();
  const double agent_steps = static_cast<double>(c_.agents) * static_cast<double>(c_.steps);
  const BarrierErrors be = MeasureBarrier(agents_, c_.steps);
  auto pct = [](const std::vector<double>& v, double q) {
    if (v.empty()) return nlohmann::json();
    return nlohmann::json(q >= 1 ? *std::max_element(v.begin(), v.end()) : Percentile(v, q));
  };
  nlohmann::json j = {
      {"barrier", c_.barrier},
      {"agents", c_.agents},
      {"jobs", c_.jobs},
      {"accelerators_per_agent", c_.accelerators},
      {"steps", c_.steps},
      {"computation_time_s", c_.compute},
      {"attach_s", attach_s_},
      {"attach_coordinator_cpu_s", attach_cpu_s_},
      {"job_s", job_s_},
      {"job_coordinator_cpu_s", job_cpu_s_},
      {"coordinator_cpu_us_per_agent_step_job", job_cpu_s_ / agent_steps * 1e6},
      {"coordinator_cpu_us_per_agent_step_window",
       window_agent_steps_ > 0 ? nlohmann::json(window_cpu_s_ / window_agent_steps_ * 1e6) : nlohmann::json()},
      {"swarm_cpu_us_per_agent_step_window",
       window_agent_steps_ > 0 ? nlohmann::json(window_swarm_cpu_s_ / window_agent_steps_ * 1e6) : nlohmann::json()},
      {"release_latency_ms_p50", Percentile(latency_ms, 0.50)},
      {"release_latency_ms_p99", Percentile(latency_ms, 0.99)},
      {"release_latency_ms_max", latency_ms.empty() ? 0 : *std::max_element(latency_ms.begin(), latency_ms.end())},
      {"release_samples", latency_ms.size()},
      {"coordinator_threads_attached", threads_attached_},
      {"coordinator_threads_peak", threads_peak_},
      {"coordinator_rss_mib", static_cast<double>(end_.rss_kb) / 1024},
      {"coordinator_hwm_mib", static_cast<double>(end_.hwm_kb) / 1024},
      {"train_au_percent", au},
      {"submit_exit", submit_rc},
      {"sessions_missing_releases", incomplete},
      {"barrier_steps_measured", be.steps},
      {"step_end_spread_us_p50", pct(be.spread_us, 0.50)},
      {"step_end_spread_us_p99", pct(be.spread_us, 0.99)},
      {"step_end_spread_us_max", pct(be.spread_us, 1)},
      {"error_bound_us_p50", pct(be.bound_us, 0.50)},
      {"error_bound_us_p99", pct(be.bound_us, 0.99)},
      {"error_bound_us_max", pct(be.bound_us, 1)},
      {"ended_before_slowest_compute_end_us_max", be.early_max_us},
      {"ended_earlier_than_bound", be.beyond_bound},
      {"exposed_us_p50", pct(be.exposed_us, 0.50)},
      {"exposed_us_p99", pct(be.exposed_us, 0.99)},
      {"timer_threads", c_.timer_threads},
      {"wake", c_.scheduled_wake ? "scheduled" : "processed"},
      {"relay", c_.relay},
      {"tree_expected", TreeExpected(c_)},
      {"relay_sessions", stats_.relays.load()},
      {"member_sessions", stats_.members.load()},
      {"releases_through_relays", stats_.relay_releases.load()},
      {"releases_from_coordinator", stats_.releases.load() - stats_.relay_releases.load()},
  };
  // A measured figure with `digits` decimals and `unit`, else "not measured" (the format string stays constant, as
  // absl::StrFormat checks it at compile time).
  auto fmt = [](const nlohmann::json& v, int digits, const char* unit) {
    return v.is_number() ? absl::StrFormat("%.*f%s", digits, v.get<double>(), unit) : std::string("not measured");
  };
  std::cout << absl::StrFormat(
      "swarm: %d sessions x %d accelerator(s), %d steps, computation_time %g s (synthetic, one epoch)\n"
      "  attach: %.2f s, coordinator CPU %.2f s\n"
      "  job: %.2f s, coordinator CPU %.2f s = %.1f us per agent per step (steady window: %s us; this tool: %s us)\n"
      "  release latency (last arrival -> each session's release): p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples)\n"
      "  barrier %s: step-end spread p50 %s, p99 %s, max %s; error bound p50 %s, p99 %s, max %s;\n"
      "    ended at most %.1f us before the slowest compute end (%d session-steps earlier than their bound);\n"
      "    exposed after it p50 %s, p99 %s\n"
      "  coordinator: %d threads attached, %d peak; RSS %.1f MiB, peak %.1f MiB\n"
      "  barrier tree: %d relay session(s), %d member(s); releases %d through relays, %d from the coordinator "
      "(%d timer thread(s))\n"
      "  AU %s\n",
      c_.agents, c_.accelerators, c_.steps, c_.compute, attach_s_, attach_cpu_s_, job_s_, job_cpu_s_,
      job_cpu_s_ / agent_steps * 1e6, fmt(j["coordinator_cpu_us_per_agent_step_window"], 1, ""),
      fmt(j["swarm_cpu_us_per_agent_step_window"], 1, ""),
      j["release_latency_ms_p50"].get<double>(), j["release_latency_ms_p99"].get<double>(),
      j["release_latency_ms_max"].get<double>(), static_cast<int>(latency_ms.size()), c_.barrier,
      fmt(j["step_end_spread_us_p50"], 1, " us"), fmt(j["step_end_spread_us_p99"], 1, " us"),
      fmt(j["step_end_spread_us_max"], 1, " us"), fmt(j["error_bound_us_p50"], 1, " us"),
      fmt(j["error_bound_us_p99"], 1, " us"), fmt(j["error_bound_us_max"], 1, " us"), be.early_max_us,
      static_cast<int>(be.beyond_bound), fmt(j["exposed_us_p50"], 1, " us"), fmt(j["exposed_us_p99"], 1, " us"),
      threads_attached_,
      threads_peak_, j["coordinator_rss_mib"].get<double>(), j["coordinator_hwm_mib"].get<double>(),
      stats_.relays.load(), stats_.members.load(), static_cast<int>(stats_.relay_releases.load()),
      static_cast<int>(stats_.releases.load() - stats_.relay_releases.load()), c_.timer_threads, fmt(au, 2, " %"));
  if (!c_.json.empty()) std::ofstream(c_.json) << j.dump(2) << "\n";
  if (!job_ok) {
    std::ifstream err(c_.work + "/submit.err");
    const std::string why((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    std::cerr << "dlio-bench-swarm: the job failed (submit exit " << submit_rc << "):\n" << why;
    return 1;
  }
  if (incomplete > 0) {
    std::cerr << "dlio-bench-swarm: " << incomplete << " session(s) did not see every release of " << kMeasuredPhase
              << "\n";
    return 1;
  }
  // With the tree every member's every release comes through its relay.
  const uint64_t through = stats_.relay_releases.load();
  const uint64_t want = static_cast<uint64_t>(stats_.members.load()) * static_cast<uint64_t>(c_.steps);
  if (TreeExpected(c_) && (stats_.relays.load() == 0 || through == 0 || through != want)) {
    std::cerr << "dlio-bench-swarm: --relay on with " << c_.agents / c_.jobs
              << " sessions per job asks for the barrier's relay tree, but " << kMeasuredPhase << " had "
              << stats_.relays.load() << " relay session(s) and " << through << " of " << want
              << " member releases came through a relay\n";
    return 1;
  }
  return 0;
}

void Run::Teardown() {
  for (const auto& a : agents_) a->Cancel();
  {
    std::unique_lock<std::mutex> lk(events_.mu);
    const size_t started = agents_.size();
    // 30 s: cancelled calls end at once; this only bounds a stuck library.
    if (!events_.cv.wait_for(lk, std::chrono::seconds(30), [&] { return events_.done >= static_cast<int>(started); })) {
      std::cerr << "dlio-bench-swarm: sessions did not end\n";
      std::_Exit(1);
    }
  }
  // The members' relay streams end with their sessions (Cancel closed them); 30 s only bounds a stuck library.
  for (int i = 0; i < 3000 && swarm::SwarmRelayLink::Live() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (relay_server_) relay_server_->Shutdown();
  if (coord_ > 0) {
    kill(coord_, SIGTERM);
    waitpid(coord_, nullptr, 0);
    coord_ = -1;
  }
  timers_.clear();
  agents_.clear();
  if (c_.keep) {
    std::cout << "work folder kept: " << c_.work << "\n";
  } else if (!c_.work.empty()) {
    fs::remove_all(c_.work);
  }
}

int Run::Main() {
  if (!StartCoordinator() || !AttachAll()) return 1;
  const int rc = SubmitAndMonitor();
  return Report(rc);
}

}  // namespace
}  // namespace dlio

int main(int argc, char** argv) {
  dlio::Config c;
  CLI::App app{"dlio-bench-swarm: N agent sessions in one process against a real dlio-coordinator (issue 14)",
               "dlio-bench-swarm"};
  app.add_option("--agents", c.agents, "Agent sessions")->check(CLI::Range(1, 65536));
  app.add_option("--jobs", c.jobs, "Concurrent jobs, each on agents/jobs sessions of its own")
      ->check(CLI::Range(1, 4096));
  app.add_option("--steps", c.steps, "Steps of the one training epoch")->check(CLI::Range(3, 1000000));
  app.add_option("--compute", c.compute, "computation_time per step, seconds")->check(CLI::Range(0.0, 60.0));
  app.add_option("--accelerators", c.accelerators, "Ranks per session")->check(CLI::Range(1, 4096));
  app.add_option("--barrier", c.barrier,
                 "The job's dlio_ext.barrier: announce (at compute start, the default, as real agents) or "
                 "after_compute (the previous protocol)")
      ->check(CLI::IsMember({"announce", "after_compute"}));
  app.add_option("--relay", c.relay,
                 "on: every session offers a relay listener (the swarm's one) and acts as a relay or member when "
                 "the job meets through a relay tree (dlio_ext.barrier_tree_min_agents agents or more); off (the "
                 "default): none, the star")
      ->transform(CLI::CheckedTransformer(std::map<std::string, bool>{{"on", true}, {"off", false}}));
  app.add_option("--fanout", c.fanout, "The job's dlio_ext.barrier_fanout (default: the key's default)")
      ->check(CLI::Range(2, 4096));
  app.add_option("--tree-min-agents", c.tree_min_agents,
                 "The job's dlio_ext.barrier_tree_min_agents (default: the key's default)")
      ->check(CLI::Range(2, 1000000));
  app.add_option("--timer-threads", c.timer_threads,
                 "Timer threads the sessions' compute steps, step ends and heartbeats are spread over (default: one "
                 "per core)")
      ->check(CLI::Range(1, 256));
  app.add_option("--wake", c.scheduled_wake,
                 "processed (the default): a session's compute and step end run from when its timer thread reached "
                 "them, behind the sessions ahead of it on that thread; scheduled: from the timers' own instants, as "
                 "agents with a core each would (the protocol's ceiling without the emulator's serialisation)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, bool>{{"scheduled", true}, {"processed", false}}));
  app.add_option("--attach-batch", c.attach_batch, "Sessions connecting at once")->check(CLI::Range(1, 65536));
  app.add_option("--barrier-timeout", c.barrier_timeout,
                 "The job's barrier timeout, seconds: a lost release fails the job after this long")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_option("--protocol-version", c.protocol_version,
                 "Announce this protocol version (default: this build's): measures a coordinator built from an "
                 "earlier commit whose wire differs only where a benchmark run does not go (issue 14's before figures "
                 "ran version 3 against main's coordinator)");
  app.add_option("--bin-dir", c.bin_dir, "Folder of dlio-coordinator (default: beside this program)");
  app.add_option("--work", c.work, "Work folder (default: a new folder under /tmp, removed at the end)");
  app.add_option("--json", c.json, "Write the figures as JSON to FILE");
  app.add_option("--log-level", c.log_level, "The sessions' log level (the agent's levels)");
  app.add_flag("--keep", c.keep, "Keep the work folder");
  CLI11_PARSE(app, argc, argv);
  if (c.agents % c.jobs != 0) {
    std::cerr << "dlio-bench-swarm: --agents " << c.agents << " must be a multiple of --jobs " << c.jobs
              << " (each job gets agents/jobs sessions)\n";
    return 2;
  }
  // The coordinator builds relays of relays (base/barrier_tree.h BuildTree) when more than fan-out relays would be
  // under it; the swarm's sessions relay one level only (a relay whose parent is a relay is not emulated).
  if (TreeExpected(c)) {
    const int n = c.agents / c.jobs;
    const int fanout = c.fanout > 0 ? c.fanout : dlio::barrier_tree::kDefaultFanout;
    if ((n + fanout - 1) / fanout > fanout) {
      std::cerr << "dlio-bench-swarm: --relay on emulates one level of relays: " << n << " sessions per job need "
                << "--fanout F with ceil(" << n << "/F) <= F (e.g. --fanout " << static_cast<int>(std::ceil(std::sqrt(n)))
                << "), or the coordinator puts relays under relays\n";
      return 2;
    }
  }
  if (c.timer_threads == 0) c.timer_threads = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  spdlog::set_level(spdlog::level::from_str(c.log_level));
  if (c.bin_dir.empty()) c.bin_dir = std::filesystem::canonical("/proc/self/exe").parent_path().string();
  if (c.work.empty()) {
    char tmpl[] = "/tmp/dlio-swarm-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::cerr << "dlio-bench-swarm: mkdtemp: " << std::strerror(errno) << "\n";
      return 2;
    }
    c.work = tmpl;
  }
  // One descriptor per session here and in the coordinator (which inherits the limit).
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  signal(SIGPIPE, SIG_IGN);
  dlio::SkipMutexDeadlockDetection();  // as the agent does (base/scheduling.h)
  dlio::Run run(c);
  return run.Main();
}
