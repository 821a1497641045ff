// Coordinator: the fleet's brain, with no knowledge of gRPC (CoordinatorServer is its facade).
//
// It holds the AgentRegistry (attached agents and the link to each), the JobQueue (jobs run one at a time, in
// submission order, on a runner thread), and the PhaseDriver logic of the running job: rank placement, RunPhase
// orders, the step barrier (released when every agent of the job arrived at the step), progress, and the result
// collection that goes through the one Aggregator path into the result files under `results_dir/<job-id>/`.
//
// Failure handling: an agent error, an agent lost mid-job, or a cancel stops the job: the other agents get a cancel,
// the job ends FAILED/CANCELLED with one line naming agent, ranks, job, phase and last step, and the epochs already
// completed are still written.
// Thread-safety: every public method may be called from any thread (gRPC handlers, the runner). mu_ guards all
// state; AgentLink calls are made with mu_ held, so links must not call back into the Coordinator.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/latency_histogram.h"
#include "common/results.h"
#include "common/workload_spec.h"

namespace dlio {

// What the coordinator asks one agent to run.
struct PhaseOrder {
  std::string job_id;
  std::string phase_id;
  enum class Kind { kGenerate, kTrainEpoch, kEval };
  Kind kind = Kind::kTrainEpoch;
  std::string workload_yaml;   // normalised, ToYaml()
  int world = 1;
  int first_rank = 0;
  int local_ranks = 1;
  int epoch = 0;
  int num_agents = 1;
  int agent_index = 0;
};

// The coordinator's way to talk to one attached agent (implemented by the facade over the Attach stream).
class AgentLink {
 public:
  virtual ~AgentLink() = default;
  // The agent was registered: greet it. Called under the coordinator's lock before any order can reach the link,
  // so the greeting is always the first message the agent receives.
  virtual void Accepted() = 0;
  virtual void RunPhase(const PhaseOrder& order) = 0;
  virtual void ReleaseBarrier(const std::string& job_id, const std::string& phase_id, uint64_t step) = 0;
  virtual void Cancel(const std::string& job_id, const std::string& reason) = 0;
};

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };
const char* JobStateName(JobState s);

struct JobEventData {
  JobState state = JobState::kQueued;
  std::string phase_id;
  uint64_t done = 0, total = 0, samples = 0, bytes = 0;
  std::string message;
  std::vector<EpochMetric> epochs;   // final event of a successful job
  EpochMetric mean;
  bool final = false;
};

struct JobRequest {
  std::string workload_yaml;
  std::vector<std::string> overrides;
  int agents = 0;                    // 0 = every attached agent
  std::string source_name = "job";
  int wait_for_agents_s = 0;         // wait this long for enough agents before failing
};

class Coordinator {
 public:
  struct Options {
    std::string results_dir = "results";
  };
  explicit Coordinator(Options options);
  ~Coordinator();

  // Registry. A second agent with an attached name is refused (AlreadyExists, naming both).
  absl::Status AddAgent(const AgentInfo& info, std::shared_ptr<AgentLink> link);
  void RemoveAgent(const std::string& name, const std::string& why);
  size_t AttachedAgents() const;
  // Waits until at least n agents are attached; false on timeout.
  bool WaitForAgents(size_t n, std::chrono::milliseconds timeout) const;

  // Agent events.
  void OnBarrierArrive(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                       uint64_t step);
  void OnProgress(const std::string& agent, const std::string& job_id, const std::string& phase_id, uint64_t done,
                  uint64_t total, uint64_t samples, uint64_t bytes);
  void OnPhaseDone(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                   std::vector<RankEpochResult> ranks);
  void OnAgentError(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                    const std::string& message);

  // Client verbs. Submit validates the workload (InvalidArgument with the loader's one-line message).
  absl::StatusOr<std::string> Submit(const JobRequest& request);
  absl::StatusOr<bool> Cancel(const std::string& job_id);
  // Copies events [from, ...) into *out, waiting up to `timeout` when there is none yet. NotFound for unknown jobs.
  absl::Status WaitEvents(const std::string& job_id, size_t from, std::vector<JobEventData>* out,
                          std::chrono::milliseconds timeout) const;
  std::string ResultDir(const std::string& job_id) const;

  // Counters for the coordinator's own /metrics.
  struct Counts {
    size_t agents = 0;
    std::map<JobState, size_t> jobs;
    // Per job: time from the first to the last BarrierArrive of each step (the last kBarrierWaitJobs jobs).
    std::map<std::string, LatencyHistogram> barrier_wait;
  };
  Counts GetCounts() const;

 private:
  struct Agent {
    AgentInfo info;
    std::shared_ptr<AgentLink> link;
  };
  struct Job;
  struct Phase;

  void RunnerLoop();
  void RunJob(Job& job);
  bool RunPhase(Job& job, const std::string& phase_id, PhaseOrder::Kind kind, int epoch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Emit(Job& job, JobEventData e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailJob(Job& job, JobState state, const std::string& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, Agent> agents_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  Job* running_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t job_counter_ ABSL_GUARDED_BY(mu_) = 0;
  // Keyed by job id (ids sort by submission time); only the newest kBarrierWaitJobs are kept, so the coordinator's
  // /metrics stays bounded however long it runs.
  static constexpr size_t kBarrierWaitJobs = 16;
  std::map<std::string, LatencyHistogram> barrier_wait_ ABSL_GUARDED_BY(mu_);
  std::thread runner_;
};

}  // namespace dlio
