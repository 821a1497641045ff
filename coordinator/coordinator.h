// Coordinator: the fleet's brain, with no knowledge of gRPC (CoordinatorServer is its facade).
//
// It holds three parts, each in its own file:
// - the agent registry (coordinator.cc): attached agents, the link to each (AgentLink, agent_link.h), their leases,
//   and the agents' events, which it hands to the running phase;
// - the job queue (coordinator.cc): jobs start in submission order, several at once when the fleet has room; every
//   job is also a row of the JobStore, so the queue survives a restart (RestoreFromStore), and the client verbs
//   (Submit, Cancel, Watch, status, list);
// - the phase drivers: the dispatcher (job_runner.cc, the runner thread) places the queue's first job when its
//   agents are free (placement.cc) and starts a thread for it; each running job has its own PhaseDriver
//   (phase_driver.h: its running phase's orders, step barrier, PhaseProgress, results and first failure), keyed by
//   job id, so the agents' events reach the job they name. The job's thread runs its phases in order, the waits for
//   each, stop and result collection, progress events and the result files. Results go through the one Aggregator
//   path into the result files under `results_dir/<job-id>/` (rewritten after every completed epoch, so a crash
//   keeps the completed epochs), written through the job folder's descriptor (OpenResultDir).
// Placement (docs/concurrency.md): a job takes --agents agents (0: every eligible attached agent), or exactly its
// --agent-names; by default agents no other job holds; with --share-agents, agents no exclusive job holds that still
// have --accelerators-per-agent accelerators free. The queue is first come, first served: while its first job does
// not fit, it waits (its message says for what and which jobs hold the agents) and the jobs behind it wait too.
//
// Registry and leases: an agent must send something (a heartbeat at least) every heartbeat interval; one not heard
// from for `lease` is dropped (its link is told to close the session). A second agent with an attached name is
// refused naming both, unless it carries the same instance id (the same process reconnecting): then the old
// session is replaced.
// Failure handling: an agent error, an agent lost mid-job (stream closed, lease expired, replaced: every running job
// it served), a barrier timeout, a cancel or a shutdown (every running job) stops the job: the other agents get a cancel and `stop_grace` to confirm it, the
// job ends FAILED / CANCELLED / INTERRUPTED with one line naming agent, ranks, job, phase and progress, and the
// epochs already completed are written.
// Time: durations, leases and timeouts use Options::now (steady clock, injectable for tests); wall-clock time only
// appears in records and result files.
// Job store: records are written by a persister thread of their own (the newest record per job, in order), so
// SQLite's synchronous commits never run under the coordinator's lock; Stop() writes what is pending before it
// returns, and Submit() writes the new job's row itself (a job the store cannot hold is refused).
// Retention: queued and running jobs are always kept; of the finished ones, the Options::keep_jobs that ended last.
// An older one is dropped (from memory, from `list` and `status`, and its store row deleted) when a job ends and at
// start (Create). Its result folder stays on disk: result files are the benchmark's output, not the store's.
// Listing: ListJobsPage() answers a page at a time, newest first, bounded in jobs and bytes (kMaxJobsPageSize,
// kJobsPageBytes); its tokens name the submission number to continue below, so they stay valid while jobs are
// added and across a restart with the same store.
// Thread-safety: every public method may be called from any thread (gRPC handlers, the runner, the jobs' threads,
// the watchdog). mu_ guards all state, the PhaseDrivers included (ABSL_GUARDED_BY, checked by clang's -Wthread-safety build);
// AgentLink calls and event sinks (Watch) are made with mu_ held, so they must not block or call back into the
// Coordinator (the facade's links and watch streams queue their messages).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "results/latency_histogram.h"
#include "base/barrier_timing.h"
#include "base/confined_dir.h"
#include "base/mutex.h"
#include "results/results.h"
#include "results/verdict.h"
#include "job/workload_spec.h"
#include "coordinator/agent_link.h"
#include "coordinator/job_store.h"
#include "coordinator/phase_driver.h"

namespace dlio {

struct JobEventData {
  JobState state = JobState::kQueued;
  std::string phase_id;
  uint64_t done = 0, total = 0, samples = 0, bytes = 0;
  std::string message;
  std::vector<EpochMetric> epochs;   // final event of a job with completed epochs
  EpochMetric mean;
  std::vector<CheckpointMetric> checkpoints;  // final event: every checkpoint save and load of the job
  std::optional<Verdict> verdict;    // final event
  int epoch = 0, epochs_total = 0;   // progress of a training epoch (and its checkpoint and evaluation)
  std::optional<double> live_au;     // progress of a training epoch: the fleet's AU over the last ~10 s, percent
                                     // (PhaseProgress::WindowedAuPercent)
  bool final = false;
  bool refused = false;              // final event: refused at placement, before any phase (plan/preflight.h)
};

// The placement options of a job (submit/run flags, SubmitRequest fields): --agents in [0, 65536],
// --accelerators-per-agent in [0, 4096] (what one agent can offer), --wait-for-agents in [0, 86400] s,
// --barrier-timeout a finite number in [0, 604800] s (a week). InvalidArgument naming the flag otherwise.
absl::Status CheckPlacementOptions(int64_t agents, int64_t accelerators_per_agent, int64_t wait_for_agents_s,
                                   double barrier_timeout_s);
// Longest job name (the job file's path as given at submission) the coordinator keeps.
inline constexpr size_t kMaxSourceNameBytes = 4096;

struct JobRequest {
  std::string workload_yaml;
  std::vector<std::string> overrides;
  int agents = 0;                    // 0 = every attached agent
  int accelerators_per_agent = 0;    // 0 = what the agents offer, which must be the same on every agent
  std::string source_name = "job";
  int wait_for_agents_s = 0;         // wait this long for enough agents before failing
  double barrier_timeout_s = 0;      // 0 = Options::barrier_timeout
  std::vector<std::string> agent_names;  // --agent-names: exactly these agents, in rank order (empty: any)
  bool share_agents = false;         // --share-agents: may run beside other sharing jobs on disjoint accelerators
};

// The agent names of --agent-names: each a valid, distinct name, and as many as a non-zero --agents; InvalidArgument
// naming the flag otherwise.
absl::Status CheckAgentNames(const std::vector<std::string>& names, int64_t agents);

// A job as `status` and `list` show it.
struct JobInfoData {
  JobRecord record;
  Verdict verdict;                   // INCOMPLETE unless the job ended (from record.verdict_json)
  uint64_t done = 0, total = 0;      // progress of the running phase over the fleet
  int queue_position = -1;           // jobs ahead, for queued jobs
  std::string result_dir;
  // Running jobs: mean AU (percent) and samples/s over the training epochs completed so far (nullopt before the
  // first, when not measured, and once the job ended: the verdict says it then).
  std::optional<double> completed_au_percent, completed_samples_per_second;
};

// Most jobs in one page of ListJobsPage (a larger or zero page size means this many). 500 typical rows are about
// 0.3 MB on the wire; a client pages through thousands in a few calls.
inline constexpr size_t kMaxJobsPageSize = 500;
// A page stops once its jobs hold about this many bytes (their text plus 256 bytes each for the numbers), the first
// job aside: with names of 4 KiB and long messages 500 jobs could reach tens of MB, and a job's agent list is as
// long as its fleet. 4 MiB stays far below the client's 256 MiB receive limit and gRPC's 4 MiB default.
inline constexpr size_t kJobsPageBytes = size_t{4} << 20;

// One page of ListJobsPage: jobs newest (highest submission number) first.
struct JobPage {
  std::vector<JobInfoData> jobs;
  std::string next_page_token;       // empty: no older job; else the page_token of the next page
};

struct AgentStatusData {
  AgentInfo info;
  double attached_s = 0;
  double last_heard_s = 0;
  std::string job_id;                // empty when idle; the running jobs it serves, comma-separated, when shared
};

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::string results_dir = "results";
    // Agents send a heartbeat this often. 1 s: 256 agents cost 256 tiny messages per second, and a lost agent
    // shows within a few intervals.
    std::chrono::milliseconds heartbeat_interval{1000};
    // An agent not heard from for this long is dropped and its job fails. 8 s = 8 missed heartbeats: survives a
    // loaded node's scheduling hiccups and brief network stalls (fio's 5 s reply timeout drops busy clients), and,
    // with the watchdog's period, still fails a job within the 10 s the fleet promises.
    std::chrono::milliseconds lease{8000};
    // A training phase fails when no step barrier was released for this long (an agent alive but stuck, e.g. on a
    // hung file system). 300 s: far above any real step (DLIO workloads step in milliseconds to seconds), far
    // below "hangs forever". 0 = no timeout. A job may set its own (JobRequest::barrier_timeout_s).
    std::chrono::milliseconds barrier_timeout{300000};
    // After a failure or cancel, how long the other agents get to confirm they stopped before the job ends anyway
    // (the agents stop within ~50 ms; 2 s is the promise of `cancel`).
    std::chrono::milliseconds stop_grace{2000};
    // After a restart that restored jobs from the store, how long jobs wait for the agents to reattach before one
    // is placed (placement on the agents attached at that moment, or "none attached"). Agents retry with a backoff
    // of at most 5 s (agent_server.h), so 10 s covers every live agent's second attempt. The wait ends early once
    // every agent of the interrupted job (if there was one) is back.
    std::chrono::milliseconds restart_grace{10000};
    // Finished jobs kept (serve --keep-jobs, at least 1): the ones that ended last; queued and running jobs are
    // never dropped. 1000: a day of short jobs or months of MLPerf runs, a few MB of memory and store, two pages of
    // `list`; a coordinator that kept every job grew without bound (60,000 jobs with long names made one `list`
    // answer pass the client's 256 MiB limit).
    size_t keep_jobs = 1000;
    // Steady clock for leases and timeouts; tests inject a fake one.
    std::function<Clock::time_point()> now = [] { return Clock::now(); };
  };

  // Reads the store (may be null: nothing persisted), requeues its queued jobs and marks every job that was running
  // as interrupted, then starts the runner and the lease watchdog. With restored jobs, placement first waits up to
  // Options::restart_grace for the agents to reattach.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(Options options, std::unique_ptr<JobStore> store);
  ~Coordinator();

  // Registry. A second agent with an attached name is refused (AlreadyExists, naming both) unless `instance`
  // matches (the same process reconnecting: the old session is dropped and replaced).
  absl::Status AddAgent(const AgentInfo& info, const std::string& instance, std::shared_ptr<AgentLink> link);
  // Removes the agent if `link` is still its registered link (a replaced session's late removal is ignored).
  void RemoveAgent(const std::string& name, const AgentLink* link, const std::string& why);
  size_t AttachedAgents() const;
  // Waits until at least n agents are attached; false on timeout.
  bool WaitForAgents(size_t n, std::chrono::milliseconds timeout) const;
  // Drops agents whose lease expired; the watchdog calls it every lease/8 (tests call it after moving the clock).
  void ExpireLeases();

  // Agent events. Every one renews the agent's lease.
  void OnHeartbeat(const std::string& agent);
  // `compute_left_ns`: dlio_ext.barrier: announce, how long after the agent's send its compute ends (0: over).
  // `received`: when gRPC handed the message over, on Options::now's clock (the server stamps the steady clock,
  // Options::now's default); unset: read under the lock. `end`: the agent's compute end placed in this clock by its
  // offset window (PhaseDriver::Arrive).
  void OnBarrierArrive(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                       uint64_t step, int64_t compute_left_ns = 0, Clock::time_point received = {},
                       std::optional<barrier_timing::EndInterval> end = std::nullopt);
  void OnProgress(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                  const AgentProgress& progress);
  void OnPhaseDone(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                   std::vector<RankEpochResult> ranks);
  void OnAgentError(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                    AgentErrorKind kind, const std::string& message);
  // Relay `relay` reports that `member` of its barrier group broke its Join stream (coordinator/relay_events.cc):
  // the running phase fails naming the member, as if its session had ended.
  void OnRelayMemberLost(const std::string& relay, const std::string& job_id, const std::string& phase_id,
                         const std::string& member, const std::string& reason);

  // Client verbs. Submit validates the workload and the placement numbers (InvalidArgument, one line), and refuses
  // (InvalidArgument, naming the numbers) a placement the attached fleet cannot satisfy: more agents than attached,
  // or fewer attached agents with --accelerators-per-agent than --agents asks, unless the job waits for agents
  // (--wait-for-agents) or the coordinator just restarted (its agents are still reattaching). A job that fits
  // queues, behind a running one too.
  absl::StatusOr<std::string> Submit(const JobRequest& request);
  // True when the job was queued or running (it ends cancelled), false when it had already ended.
  absl::StatusOr<bool> Cancel(const std::string& job_id);
  // Copies events [from, ...) into *out, waiting up to `timeout` when there is none yet. NotFound for unknown jobs.
  absl::Status WaitEvents(const std::string& job_id, size_t from, std::vector<JobEventData>* out,
                          std::chrono::milliseconds timeout) const;
  // Calls `sink` with every event of the job so far, then with each new one as it happens, up to the job's final
  // event (then the sink is dropped) or Unwatch(id). The sink runs under the coordinator's lock: it must only queue.
  // Returns the watch id; NotFound for unknown jobs.
  using EventSink = std::function<void(const JobEventData&)>;
  absl::StatusOr<uint64_t> Watch(const std::string& job_id, EventSink sink);
  // Drops a sink (a watcher went away); after it returns the sink is never called again. Unknown ids are ignored.
  void Unwatch(uint64_t id);
  absl::StatusOr<JobInfoData> GetJob(const std::string& job_id) const;
  // Every job kept, in submission order.
  std::vector<JobInfoData> ListJobs() const;
  // One page of the jobs kept, newest first: at most `page_size` (0 or above kMaxJobsPageSize: that many) and about
  // kJobsPageBytes; `page_token` empty for the first page, else a next_page_token of an earlier page (InvalidArgument
  // for any other text).
  absl::StatusOr<JobPage> ListJobsPage(size_t page_size, const std::string& page_token) const;
  std::vector<AgentStatusData> ListAgents() const;
  // The job's result folder, checked to lie inside the results folder (InvalidArgument for a malformed id,
  // PermissionDenied when it would resolve elsewhere, e.g. through a symlink).
  absl::StatusOr<std::string> ResultDir(const std::string& job_id) const;
  // The job's result folder opened (after ResultDir()'s check): the results folder, then the job's folder below it
  // without following a link (base/confined_dir.h; `create`: the folders are made when missing, else NotFound).
  // Every result file of a job is written (base/atomic_file.h) and read through such a descriptor, so a folder
  // renamed or swapped for a symbolic link after it was opened receives the files wherever it went, and nothing is
  // ever written through the link. A running job holds its folder from its first file to its end.
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> OpenResultDir(const std::string& job_id, bool create) const;

  // Stops taking work: every running job ends INTERRUPTED (agents told to stop, completed epochs written), queued jobs
  // stay queued in the store. Idempotent; the destructor calls it.
  void Stop();

  // Counters for the coordinator's own /metrics.
  struct Counts {
    size_t agents = 0;
    std::map<JobState, size_t> jobs;
    // Per job: first arrival to release, per released step (the newest kBarrierWaitJobs jobs).
    std::map<std::string, LatencyHistogram> barrier_wait;
    uint64_t leases_expired = 0;
    uint64_t stale_arrivals = 0;     // barrier arrivals dropped: not for the running barrier (OnBarrierArrive)
    // The newest ended job whose verdict named a limit (results/limit.h): its id and the class ("storage", ...);
    // both empty until one did. Exported as dlio_coordinator_limit.
    std::string limit_job_id, limit_class;
  };
  Counts GetCounts() const;

 private:
  struct Agent {
    AgentInfo info;
    std::string instance;
    std::shared_ptr<AgentLink> link;
    Clock::time_point attached, last_heard;
  };
  struct Job;  // coordinator_job.h

  explicit Coordinator(Options options, std::unique_ptr<JobStore> store);
  // Called by Create() before any thread starts: takes the store's jobs back after a restart (queued ones
  // requeued, the ones that were running marked interrupted, its result folder saying so too) and, with jobs
  // requeued, starts the restart grace.
  absl::Status RestoreFromStore();
  // One record of the store as RestoreFromStore() takes it back (a record whose state changed is written back).
  absl::Status RestoreJob(JobRecord record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A job that was running when the coordinator stopped: INTERRUPTED, with what its result folder kept.
  void MarkInterrupted(JobRecord& rec) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Retention: drops the finished jobs that ended before the newest Options::keep_jobs (finished_'s front), with
  // their store rows.
  void DropOldFinished() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WatchdogLoop();

  // --- The dispatcher and the job runner (job_runner.cc) ---
  // The runner thread: places the queue's first job once it fits and starts its thread (DispatchHead), joins the
  // threads of ended jobs; at Stop() it waits for every job's thread.
  void RunnerLoop();
  // Tries the queue's first job: placed and started (or ended: never placeable, cancelled) -> true; it waits (the
  // reason in its message) -> false, and *until says till when at most (its --wait-for-agents deadline).
  bool DispatchHead(Job& job, MutexLock& lk, std::optional<Clock::time_point>* until)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job's queued message changed to `why` (waiting for agents): recorded, saved and said once.
  void SetWaiting(Job& job, const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A placed job on its own thread, from its start to its end, in three steps: StartJob (the pre-run refusals, the
  // running record), RunPhases (generate, epochs with their evaluations and checkpoints, checkpoint-only phases) and
  // FinishJob (trace, result files, the end state); then it leaves running_.
  void RunJob(Job& job);
  bool StartJob(Job& job, MutexLock& lk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool RunPhases(Job& job, MutexLock& lk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishJob(Job& job, MutexLock& lk, bool ok) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Just restarted: waits (once, up to restart_grace) for the previous session's agents to reattach.
  void WaitForRestartedAgents(Job& job, MutexLock& lk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- Placement (placement.cc) ---
  struct Fit;  // placement.cc
  // Where the job would run now: placed (its agents chosen), busy (it fits the attached fleet once running jobs
  // end: why, naming them), never (the attached fleet cannot take it: why), or failed (a placement error).
  Fit TryPlace(const Job& job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The chosen agents (rank order) with their ranks: --accelerators-per-agent each, or (0) what they offer, which
  // must then be the same on all (MLPerf): kFailed naming the numbers otherwise.
  static Fit AssignRanks(const JobRecord& rec, std::vector<AgentInfo> chosen);
  // Ends a job the attached fleet cannot take, saying what it needs and what is attached.
  void FailUnplaced(Job& job, const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The attached agents that can take `want_accel` accelerators (0: any), and why `want_agents` (0: at least one) of
  // them are not there: "needs 3 agent(s); 2 attached (accelerators: a: 1, b: 1)".
  size_t EligibleAgents(int want_accel) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string UnplacedReason(size_t want_agents, int want_accel, size_t eligible) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The named agents (--agent-names) that are not attached or offer fewer than `want_accel` accelerators, as a
  // reason ("agent-3 not attached; agent-1 offers 1 accelerator(s)"); empty when all can take the job.
  std::string MissingNamedAgents(const std::vector<std::string>& names, int want_accel) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Submit's refusal of a placement the attached fleet cannot satisfy (see Submit).
  absl::Status CheckFleetCanPlace(const JobRequest& request) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One phase on every agent of the job, on its driver: the orders out (SendPhaseOrders), the wait for every
  // PhaseDone (WaitForPhase: barrier timeout, progress), then StopPhase (failure, cancel or shutdown: false) or
  // CollectPhaseResults. `ckpt` carries the checkpoint fields of the order (kCheckpoint, and the first save index of
  // kTrainEpoch).
  bool RunPhase(Job& job, MutexLock& lk, const std::string& phase_id, PhaseKind kind,
                int epoch, const PhaseOrder& ckpt = PhaseOrder()) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendPhaseOrders(Job& job, PhaseKind kind, int epoch, const PhaseOrder& ckpt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WaitForPhase(Job& job, MutexLock& lk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StopPhase(Job& job, MutexLock& lk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CollectPhaseResults(Job& job, MutexLock& lk, PhaseKind kind) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The running job's result folder: opened (and made) at its first use, then held until the job ends.
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> JobFolder(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the result files of the epochs completed so far (mu_ released while writing).
  void WriteResults(Job& job, MutexLock& lk, const std::string& job_state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the files of the last completed epoch (job.completed_epoch) unless it is the job's last, counts it in
  // rec.epochs_done, and saves the record. Called once a phase's orders are out, so it overlaps the phase.
  void RecordCompletedEpoch(Job& job, MutexLock& lk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Once placed: one "warning:" event per figure DLIO's metric window will leave unmeasured for this world.
  void WarnUnmeasured(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After training epoch `epoch` completed: one event with its AU against the target.
  void EmitEpochLine(Job& job, int epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Progress of the running phase over the fleet (the job driver's PhaseProgress), about once a second, when it changed.
  void EmitProgress(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- The queue and the store (coordinator.cc) ---
  void Emit(Job& job, JobEventData e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndJob(Job& job, JobState state, const std::string& message, bool error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands the job's record to the persister thread (after Stop(): writes it at once).
  void Save(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for a record (`rec` set) or the deletion of a job's row (`rec` empty).
  void Persist(const std::string& id, std::optional<JobRecord> rec);
  void PersisterLoop();
  JobInfoData InfoLocked(const Job& job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- The registry (coordinator.cc) ---
  // The agent is gone (closed, expired, replaced): the running phase of every job that uses it fails with a message
  // naming it; jobs on other agents go on.
  void LoseAgentLocked(const std::string& name, const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Touch(const std::string& agent) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The running job `job_id` (its PhaseDriver takes the agents' events about it), or null.
  Job* RunningJob(const std::string& job_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const std::unique_ptr<JobStore> store_;   // null = nothing persisted
  mutable Mutex mu_;
  mutable CondVar cv_;
  std::map<std::string, Agent> agents_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  // The finished jobs of jobs_, in the order they ended (restored ones by end time, then submission), oldest first.
  std::deque<std::string> finished_ ABSL_GUARDED_BY(mu_);
  // The running jobs (placed, until their thread let go of them), by id: each has its own PhaseDriver (Job::driver),
  // and the agents' events reach the one they name.
  std::map<std::string, Job*> running_ ABSL_GUARDED_BY(mu_);
  // The running jobs' threads (RunJob), by job id, and the ids of those that ended, for the runner to join.
  std::map<std::string, std::thread> job_threads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> ended_threads_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t job_counter_ ABSL_GUARDED_BY(mu_) = 0;
  // Keyed by job id (ids sort by submission time); only the newest kBarrierWaitJobs are kept, so the coordinator's
  // /metrics stays bounded however long it runs.
  static constexpr size_t kBarrierWaitJobs = 16;
  std::map<std::string, LatencyHistogram> barrier_wait_ ABSL_GUARDED_BY(mu_);
  uint64_t leases_expired_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stale_arrivals_ ABSL_GUARDED_BY(mu_) = 0;
  std::string limit_job_id_ ABSL_GUARDED_BY(mu_), limit_class_ ABSL_GUARDED_BY(mu_);  // Counts::limit_*
  // Restart grace (Options::restart_grace): until when placement waits, and the agents it waits for (those of the
  // jobs the restart interrupted; empty = wait out the grace).
  Clock::time_point restart_grace_until_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> restart_agents_ ABSL_GUARDED_BY(mu_);
  uint64_t watch_counter_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::string> watch_jobs_ ABSL_GUARDED_BY(mu_);  // watch id -> job id, for Unwatch()
  // Records waiting for the store, the newest per job; an empty one deletes the job's row (lock order: mu_ before
  // store_mu_).
  Mutex store_mu_;
  CondVar store_cv_;
  std::map<std::string, std::optional<JobRecord>> store_pending_ ABSL_GUARDED_BY(store_mu_);
  bool store_writing_ ABSL_GUARDED_BY(store_mu_) = false;   // the persister is writing a batch
  bool store_stop_ ABSL_GUARDED_BY(store_mu_) = false;      // the persister has stopped (or is stopping)
  std::thread persister_;
  std::thread runner_;
  std::thread watchdog_;
  std::once_flag stop_once_;  // Stop() joins the threads once, whoever calls it first
};

}  // namespace dlio
