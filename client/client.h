// Client verbs of dlio-coordinator: submit (used by `run` too), status, list, cancel, results. The only gRPC client
// code of the coordinator binary.
//
// SubmitAndWait(): validates the job file locally (bad input -> exit code 2 and one line naming the key or file,
// before anything is sent or written), submits it, and (unless --detach) follows it: on a terminal a live progress
// bar per phase (steps or files done of total, ETA, samples/s), plain lines otherwise; then the result table, and
// the result files received over gRPC written into the output folder when one is given (--output, else the job's
// output.folder), partial ones included when the job failed after completing epochs. With --trace FILE the job runs
// with dlio_ext.trace on and the coordinator's merged trace.json is written to FILE. A signal (the `cancel` flag)
// cancels the job on the coordinator and says so. With --json, one JSON document on stdout and nothing else.
//
// Exit statuses (every verb; ExitStatus below): 0 the job ran and met its target (or had none to meet); 1 the job
// did not succeed (failed, cancelled, interrupted), or the job or its results do not exist; 2 bad input (job file,
// options, token or certificate files, or a job its values make impossible on its fleet: plan/preflight.h); 3 coordinator unreachable or lost; 4 refused by the coordinator (no token or
// a wrong one); 5 the job ran but missed its AU target (or an --mlperf result is FAIL or INVALID); 6 the job ran but
// its AU could not be measured (too few steps per epoch, docs/results.md).
// Every job ends with one verdict line (results/verdict.h), e.g. "verdict: AU 72.2 % (min rank 70.9 %, sd 0.8) <
// target 90.0 %: FAIL", and a "verdict" object in --json.
// Thread-safety: each call is independent; SubmitAndWait reads `cancel` from a helper thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "client/explain.h"
#include "plan/preflight.h"
#include "results/verdict.h"
#include "dlio/v1/transport.h"

namespace dlio {

enum ExitStatus : int {
  kExitOk = 0,
  kExitJobNotSucceeded = 1,
  kExitBadInput = 2,
  kExitUnreachable = 3,
  kExitRefused = 4,
  kExitBelowTarget = 5,
  kExitNotMeasured = 6,
};
// The exit status a finished job's verdict gives: PASS and NOT_APPLICABLE 0, FAIL 5, NOT_MEASURED 6, INCOMPLETE 1.
int ExitStatusFor(const Verdict& v);
// The text --help and docs/cli.md give for the statuses above.
inline constexpr const char* kExitStatusHelp =
    "Exit status: 0 ran and met its AU target (or had none), 1 job failed/cancelled or not found, 2 bad input "
    "(a job its fleet cannot run included), "
    "3 coordinator unreachable, 4 refused (token), 5 ran but AU below target (--mlperf: FAIL or INVALID), "
    "6 ran but AU not measured (too few steps per epoch)";

// How to reach the coordinator; shared by every verb.
struct ClientOptions {
  std::string coordinator = "127.0.0.1:7543";  // host:port (the CLI: --coordinator, else $DLIO_COORDINATOR)
  TransportFiles transport;                     // --token-file, --tls-ca, --tls-cert, --tls-key, --tls-server-name
  int connect_timeout_s = 10;                   // how long a connection may take to complete before exit code 3
  int wait_for_coordinator_s = 0;               // how long to retry while nothing listens (refused); 0 = fail at once
  bool json = false;                            // --json: machine-readable output only
};

struct SubmitOptions {
  ClientOptions client;
  std::string job_path;
  std::vector<std::string> overrides;  // "++workload.a.b=v" or "a.b=v"
  int agents = 0;                      // 0 = all attached
  int accelerators_per_agent = 0;      // 0 = what the agents offer (all equal)
  int wait_for_agents_s = 0;           // --wait-for-agents
  double barrier_timeout_s = 0;        // 0 = the coordinator's default
  std::string output_dir;              // --output; empty = the job's output.folder, else none
  std::string where_results_live;      // printed when nothing is fetched (the coordinator's result folder)
  bool detach = false;                 // print the job id and return at once
  bool strict = false;                 // --strict: a key where DLIO behaves differently is an error (exit 2)
  bool explain = false;                // --explain: print the derived plan, run nothing, write nothing
  std::string trace_path;              // --trace FILE: submit with dlio_ext.trace on, then fetch trace.json into FILE
};

// The fleet `run --explain` would start: local agents on this machine, RAM from /proc/meminfo.
struct LocalFleetShape {
  int agents = 1;
  int accelerators = 1;
  uint64_t host_memory_bytes = 0;  // run --host-memory: what the agents report; 0 = /proc/meminfo
};

// The fleet a job would run on, for --explain and the MLPerf datagen mode. `local` set: `run`'s local agents on this
// machine (its RAM once, from /proc/meminfo, or `local->host_memory_bytes` when the agents declare it); null: the
// agents attached to the coordinator of `opt.client` (their accelerators and reported memory, grouped by node), with
// --agents/--accelerators-per-agent and the local memory as the fallback, saying so, when it does not answer within
// 2 s.
ExplainFleet DescribeFleet(const SubmitOptions& opt, const LocalFleetShape* local);

// --explain: loads the job (not-supported keys are listed, not fatal; --strict still applies), derives the plan
// (client/explain.h) and prints it (text, or one JSON document with --json). `local` set: `run`'s local fleet;
// null: `submit`, which asks the coordinator for the attached agents (their accelerators and memory) and falls back
// to the flags and local memory, saying so, when it cannot reach it within 2 s. 0 when a run of the job on that
// fleet could start; 2 on bad input, or when the plan shows a run would be refused (a key not supported yet, or a
// refusal of plan/preflight.h, listed first).
int ExplainJobPlan(const SubmitOptions& opt, const LocalFleetShape* local, std::ostream& out, std::ostream& err);

// The job's refusals on a fleet of this shape (plan/preflight.h), one line each to `err` and a last line naming
// the fleet; 2 if there is any, else 0. `run` calls it with its local fleet before starting it; SubmitAndWait when
// --agents and --accelerators-per-agent are both given, before submitting.
int CheckPreRun(const SubmitOptions& opt, const JobWorld& world, std::ostream& err);

// Validation only: loads the job file with the overrides; on error prints one line to `err` and returns 2. Keys
// implemented where DLIO ignores or breaks them print one "warning: ..." line each to `err` (when `warn`), once per
// key; with opt.strict such a key is the error instead.
int ValidateJob(const SubmitOptions& opt, std::ostream& err, bool warn = true);

// `cancel`: set by a signal handler; the client then cancels the job and reports it.
int SubmitAndWait(const SubmitOptions& opt, std::ostream& out, std::ostream& err, const std::atomic<bool>* cancel);

// `status JOB`: the job's state, placement, phase progress, completed epochs, results and last message.
int ShowStatus(const ClientOptions& opt, const std::string& job_id, std::ostream& out, std::ostream& err);
// `list`: every job the coordinator knows (its store included) and the attached agents.
int ListJobs(const ClientOptions& opt, std::ostream& out, std::ostream& err);
// `cancel JOB`: cancels a queued or running job and waits (a few seconds at most) for it to end, printing the
// final line, which says whether every agent confirmed the stop.
int CancelJob(const ClientOptions& opt, const std::string& job_id, std::ostream& out, std::ostream& err);
// `results JOB [--output DIR]`: prints the job's result table and file names, or writes the files into DIR.
int FetchResults(const ClientOptions& opt, const std::string& job_id, const std::string& output_dir,
                 std::ostream& out, std::ostream& err);

}  // namespace dlio
