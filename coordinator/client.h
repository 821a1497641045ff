// Client verbs of dlio-coordinator (submit; used by `run` too): the only gRPC client code.
//
// SubmitAndWait(): validates the job file locally (bad input -> exit code 2 and one line naming the key or file,
// before anything is sent or written; the caller's ValidateJob() has printed the warnings), submits it, shows progress by phase, prints the result table, and writes the
// result files received over gRPC into the output folder when one is given (--output, else the job's
// output.folder). Exit codes: 0 success, 1 job failed or cancelled, 2 bad input, 3 coordinator unreachable.
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

namespace dlio {

struct SubmitOptions {
  std::string coordinator;             // host:port
  std::string job_path;
  std::vector<std::string> overrides;  // "++workload.a.b=v" or "a.b=v"
  int agents = 0;                      // 0 = all attached
  int wait_for_agents_s = 0;           // --wait-for-agents
  std::string output_dir;              // --output; empty = the job's output.folder, else none
  std::string where_results_live;      // printed when nothing is fetched (the coordinator's result folder)
};

// Validation only: loads the job file with the overrides; on error prints one line to `err` and returns 2. Keys
// implemented where DLIO ignores or breaks them print one "warning: ..." line each to `err` (when `warn`).
int ValidateJob(const SubmitOptions& opt, std::ostream& err, bool warn = true);

// `cancel`: set by a signal handler; the client then cancels the job and reports it.
int SubmitAndWait(const SubmitOptions& opt, std::ostream& out, std::ostream& err, const std::atomic<bool>* cancel);

}  // namespace dlio
