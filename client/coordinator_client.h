// CoordinatorClient: the client side of the coordinator's gRPC service, in our own types. The only gRPC client code
// of dlio-coordinator: the verbs (client.h) and the MLPerf modes (mlperf/verbs.h) call it, and print what it returns
// through client/render.h; it prints nothing itself.
//
// Contract:
//  - Connect() opens one channel with the token and TLS material of the command line and waits until it is ready:
//    nothing listening there (connection refused) fails at once, or is retried until --wait-for-coordinator ends (a
//    coordinator that is starting); a failed TLS handshake fails at once; a connection that never completes (an
//    address that drops packets) fails after --connect-timeout.
//  - Every call returns absl::Status / absl::StatusOr. A failed gRPC call is converted in one place (GrpcToStatus in
//    the .cc: the same code, gRPC's message) and worded once (CallFailure below), so the exit status follows from
//    the code alone (client/render.h ExitStatusOf): InvalidArgument 2 (bad input: token or TLS files, a job the
//    coordinator refuses), Unavailable / DeadlineExceeded / Unimplemented 3 (unreachable, lost, too old),
//    Unauthenticated 4 (no token or a wrong one); NotFound and the rest 1. A fetch of result files that failed is
//    Aborted, whatever its cause (the job ran; its files are not here): exit 1.
//  - Run() is `submit` without its output: submits the job, follows it to its final event (reporting progress to a
//    RunObserver), turns a set `cancel` flag into a Cancel call, then fetches the result files (and trace.json)
//    when the job left any, and returns the JobOutcome.
// Thread-safety: one call at a time per CoordinatorClient (Run's own canceller thread aside); the observer's
// Cancelling/CancelFailed are called from that thread, the rest from the caller's.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/loaded_job.h"
#include "coordinator/coordinator.h"
#include "dlio/v1/transport.h"
#include "results/results.h"
#include "results/verdict.h"

namespace dlio {

// How to reach the coordinator; shared by every verb.
struct ClientOptions {
  std::string coordinator = "127.0.0.1:7543";  // host:port (the CLI: --coordinator, else $DLIO_COORDINATOR)
  TransportFiles transport;                     // --token-file, --tls-ca, --tls-cert, --tls-key, --tls-server-name
  int connect_timeout_s = 10;                   // how long a connection may take to complete before exit code 3
  int wait_for_coordinator_s = 0;               // how long to retry while nothing listens (refused); 0 = fail at once
  bool json = false;                            // --json: machine-readable output only
};

// Where a job runs: the placement fields of the submission (checked by coordinator.h CheckPlacementOptions).
struct JobPlacement {
  int agents = 0;                  // 0 = every attached agent
  int accelerators_per_agent = 0;  // 0 = what the agents offer (all equal)
  int wait_for_agents_s = 0;       // --wait-for-agents
  double barrier_timeout_s = 0;    // 0 = the coordinator's default
  std::vector<std::string> agent_names;  // --agent-names: exactly these agents, in rank order (empty: any)
  bool share_agents = false;       // --share-agents: may share agents with other jobs, on disjoint accelerators
};

// An attached agent, as `list` shows it.
struct AttachedAgent {
  std::string name;
  std::string hostname;              // the node it runs on
  int accelerators = 0;
  double attached_s = 0;             // seconds since it attached
  double last_heard_s = 0;           // seconds since the coordinator last heard from it
  std::string job_id;                // empty when idle
  uint64_t host_memory_bytes = 0;    // its node's RAM (0: not reported)
  int cpu_count = 0;                 // its node's CPUs online (0: not reported)
};

// `list`: the newest jobs the coordinator keeps (its store included), newest first, and the attached agents.
struct JobList {
  std::vector<JobInfoData> jobs;
  std::vector<AttachedAgent> agents;
  bool more = false;                 // the coordinator keeps older jobs than the ones listed (List's limit)
};

// One result file of a job (summary.json, per-rank files, trace.json, ...).
struct ResultFile {
  std::string name;
  std::string content;
};

// What was fetched after a job ended (Run), in order: its result files, then its trace.
struct FetchedFiles {
  std::string output;   // the folder the result files were asked into; empty: none (they stay on the coordinator)
  int count = -1;       // files written into `output`; -1: not written (no results, no folder, or the fetch failed)
  std::string trace;    // the trace file written; empty: none asked, or not written
  absl::Status status;  // Aborted: the fetch that failed (nothing was fetched after it); OK otherwise
};

// How a job ended: its final event, and what Run fetched.
struct JobOutcome {
  std::string job_id;
  JobState state = JobState::kFailed;
  std::string message;                    // the final line (the error of a job that failed)
  bool refused = false;                   // refused at placement, before any phase (plan/preflight.h)
  Verdict verdict;                        // results/verdict.h, INCOMPLETE unless the job succeeded
  std::vector<EpochMetric> epochs;        // the completed training epochs (partial ones of a failed job)
  EpochMetric mean;                       // their mean, when there are any
  std::vector<CheckpointMetric> checkpoints;
  bool cancelled_by_signal = false;       // Run's `cancel` was set: the job was cancelled on the coordinator
  FetchedFiles files;

  bool succeeded() const { return state == JobState::kSucceeded; }
  // The job left result files: it succeeded, or completed epochs or checkpoints before it failed.
  bool has_results() const { return succeeded() || !epochs.empty() || !checkpoints.empty(); }
};

// What Run() reports while the job runs; each method does nothing unless overridden.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // The coordinator accepted the job.
  virtual void Submitted(const std::string& job_id) { (void)job_id; }
  // Every event of the job but the final one: a message line, or progress.
  virtual void Progress(const JobEventData& event) { (void)event; }
  // `cancel` was set: the job is being cancelled on the coordinator (from Run's canceller thread).
  virtual void Cancelling(const std::string& job_id) { (void)job_id; }
  // ... and the Cancel call failed; `why` holds the coordinator's (gRPC's) own message (same thread).
  virtual void CancelFailed(const std::string& job_id, const absl::Status& why) {
    (void)job_id;
    (void)why;
  }
};

struct RunOptions {
  // The result files are written here when the job left any; empty: the job's output.folder; both empty: they
  // stay on the coordinator.
  std::string output_dir;
  // Non-empty: the job is submitted with dlio_ext.trace on and the coordinator's merged trace.json written here.
  std::string trace_path;
  const std::atomic<bool>* cancel = nullptr;  // set (by a signal handler): cancel the job on the coordinator
  RunObserver* observer = nullptr;            // null: nothing is reported
};

// The failed call `s` (code and the coordinator's message) as the client prints it: a token refused, the
// coordinator lost or too old name `coordinator`; an empty message of another code becomes "gRPC error N".
absl::Status CallFailure(const absl::Status& s, const std::string& coordinator);

// The submission of `job` with `placement`; `trace`: with dlio_ext.trace on (an override after the job's own).
JobRequest SubmissionOf(const LoadedJob& job, const JobPlacement& placement, bool trace);

class CoordinatorClient {
 public:
  // Errors: InvalidArgument (the token or TLS files), Unavailable (nothing listens, a failed handshake),
  // DeadlineExceeded (the connection never completed): one line naming --coordinator and the address.
  static absl::StatusOr<CoordinatorClient> Connect(const ClientOptions& options);
  CoordinatorClient(CoordinatorClient&&) noexcept;
  CoordinatorClient& operator=(CoordinatorClient&&) noexcept;
  ~CoordinatorClient();

  const std::string& address() const;  // --coordinator

  // The new job's id.
  absl::StatusOr<std::string> Submit(const JobRequest& request);
  absl::StatusOr<JobInfoData> GetJob(const std::string& job_id);
  // The newest `limit` jobs (0: every job kept), fetched a page (ListJobs, at most kMaxJobsPageSize jobs) at a time,
  // and the attached agents. `timeout` > 0 bounds each call (an absent coordinator must not hang --explain).
  absl::StatusOr<JobList> List(size_t limit, std::chrono::seconds timeout = std::chrono::seconds(0));
  // True: the job was cancelled; false: it had already ended.
  absl::StatusOr<bool> Cancel(const std::string& job_id);
  // Streams the job's result files to `each`, in the coordinator's order; an error of `each` ends the stream and is
  // returned as it is.
  absl::Status Results(const std::string& job_id, const std::function<absl::Status(const ResultFile&)>& each);
  // Follows the job until its final event, which it returns (cancelled_by_signal and files left empty);
  // `progress` (optional) sees every other event. The stream ending without a final event is Unavailable, "lost
  // the coordinator ... while watching job J ...; it may still run: dlio-coordinator status J".
  absl::StatusOr<JobOutcome> Watch(const std::string& job_id,
                                   const std::function<void(const JobEventData&)>& progress);

  // The job's result files written into `dir` (created first; a file named with '/' or ".." is skipped); their
  // names in order, and summary.json's text in `summary` when given. `dir` empty: nothing is written, the names
  // are listed. Errors are Aborted.
  absl::StatusOr<std::vector<std::string>> FetchResults(const std::string& job_id, const std::string& dir,
                                                        std::string* summary = nullptr);
  // The job's trace.json written to `path`; Aborted when the job left none or it cannot be written.
  absl::Status FetchTrace(const std::string& job_id, const std::string& path);

  // Submits `job` with `placement` and follows it to its end (see the contract above). An error is the submission
  // or the watch failing; the job's own failure is an outcome, and so is a fetch that failed (files.status).
  absl::StatusOr<JobOutcome> Run(const LoadedJob& job, const JobPlacement& placement,
                                 const RunOptions& options = {});

 private:
  struct Impl;
  explicit CoordinatorClient(std::unique_ptr<Impl> impl);
  absl::Status CancelCall(const std::string& job_id, std::chrono::seconds timeout, bool* cancelled);
  FetchedFiles FetchAfterRun(const JobOutcome& outcome, const std::string& output, const std::string& trace);

  std::unique_ptr<Impl> impl_;
};

}  // namespace dlio
