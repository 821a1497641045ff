// JobStore: the coordinator's job index in SQLite (`dlio-coordinator serve --store PATH`), so jobs survive a
// coordinator restart. No gRPC here.
//
// One row per job (JobRecord): the request as submitted (job file text, overrides, placement) and what happened
// (state, times, agents, last phase, completed epochs, last message). The coordinator writes a row when a job is
// submitted, starts, completes an epoch and ends; on start-up it reads them all back (Coordinator::Create):
// queued jobs are queued again in submission order, a job that was running is marked interrupted (its completed
// epochs' result files are already on disk under the results folder).
// Durability: WAL journal with synchronous=FULL, so a row is on disk when Put() returns (a few ms; Put is called a
// handful of times per job, never per step). The store is opened in exclusive locking mode: a second coordinator
// on the same file is refused at start-up instead of corrupting the queue; the lock dies with the process, so a
// restart after `kill -9` just works.
// Retention is the coordinator's (Coordinator::Options::keep_jobs): it deletes the rows of the finished jobs it
// drops. The store holds records only; the result files under the results folder are not its to delete.
// Thread-safety: every method may be called from any thread (one connection, guarded by mu_).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"

struct sqlite3;

namespace dlio {

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled, kInterrupted };
const char* JobStateName(JobState s);
std::optional<JobState> ParseJobState(std::string_view name);
// True for the states a job never leaves.
inline bool IsFinal(JobState s) { return s != JobState::kQueued && s != JobState::kRunning; }

struct JobRecord {
  std::string id;
  int64_t seq = 0;                       // submission order
  JobState state = JobState::kQueued;
  // The request.
  std::string source_name;
  std::string workload_yaml;
  std::vector<std::string> overrides;
  int agents = 0;                        // 0 = every attached agent
  int accelerators_per_agent = 0;        // 0 = what the agents offer (all equal)
  int wait_for_agents_s = 0;
  double barrier_timeout_s = 0;          // 0 = the coordinator's default
  std::vector<std::string> requested_agents;  // --agent-names: exactly these agents, in rank order (empty = any)
  bool share_agents = false;             // --share-agents: may share agents with other jobs (disjoint accelerators)
  // What happened. Times are wall-clock UNIX microseconds, 0 = not reached.
  int64_t submitted_unix_us = 0;
  int64_t started_unix_us = 0;
  int64_t ended_unix_us = 0;
  std::vector<std::string> agent_names;  // rank order
  int world = 0;
  int ranks_per_agent = 0;
  std::string phase_id;                  // the running or last phase
  int epochs_done = 0;                   // completed training epochs (their results are on disk)
  int epochs_total = 0;
  std::string message;                   // latest line; the error for failed jobs
  bool has_results = false;              // result files exist (partial ones included)
  std::string verdict_json;              // results/verdict.h VerdictJson() once the job ended; empty before
};

class JobStore {
 public:
  // Opens (creating if needed) the store at `path`; ":memory:" keeps it in memory (the embedded `run`, tests).
  // Errors name the path: unreadable, not a job store, or in use by another coordinator.
  static absl::StatusOr<std::unique_ptr<JobStore>> Open(const std::string& path);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // Inserts or replaces the row of r.id.
  absl::Status Put(const JobRecord& r);
  // Removes the rows of `ids` (unknown ids are ignored), in one transaction: all of them or none.
  absl::Status Delete(const std::vector<std::string>& ids);
  // Every row, in submission order.
  absl::StatusOr<std::vector<JobRecord>> LoadAll() const;
  // The highest submission number ever stored, its row deleted or not (0 for none).
  absl::StatusOr<int64_t> MaxSeq() const;
  const std::string& path() const { return path_; }

 private:
  JobStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  absl::Status Exec(const char* sql) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Error(const char* what) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable Mutex mu_;
  sqlite3* const db_;  // the one connection; every use holds mu_
};

}  // namespace dlio
