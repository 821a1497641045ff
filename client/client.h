// Client verbs of dlio-coordinator: submit (used by `run` too), status, list, cancel, results, --explain. Each verb
// is three steps in three places: the job file loaded once (LoadedJob, loaded_job.h), the calls to the coordinator
// (CoordinatorClient, coordinator_client.h: the only gRPC client code of the binary), and what is printed and the
// exit status (render.h, where the exit statuses 0-6 are listed).
//
// `submit` and `run` load the job once per command (LoadSubmission: bad input -> exit code 2 and one line naming the
// key or file, before anything is sent or written) and hand that LoadedJob to --explain, the pre-run checks and
// SubmitAndWait(), which submits it and (unless --detach) follows it: on a terminal a live progress bar per phase
// (steps or files done of total, ETA, samples/s), plain lines otherwise; then the result table, and the result files
// received over gRPC written into the output folder when one is given (--output, else the job's output.folder),
// partial ones included when the job failed after completing epochs. With --trace FILE the job runs with
// dlio_ext.trace on and the coordinator's merged trace.json is written to FILE. A signal (the `cancel` flag)
// cancels the job on the coordinator and says so. With --json, one JSON document on stdout and nothing else.
// Thread-safety: each call is independent; SubmitAndWait reads `cancel` from a helper thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/coordinator_client.h"
#include "client/explain.h"
#include "client/loaded_job.h"
#include "client/render.h"
#include "plan/preflight.h"

namespace dlio {

struct SubmitOptions {
  ClientOptions client;
  std::string job_path;                // as given: a path, workload=NAME or a shipped workload's NAME
  std::vector<std::string> overrides;  // "++workload.a.b=v" or "a.b=v"
  int agents = 0;                      // 0 = all attached
  int accelerators_per_agent = 0;      // 0 = what the agents offer (all equal)
  int wait_for_agents_s = 0;           // --wait-for-agents
  double barrier_timeout_s = 0;        // 0 = the coordinator's default
  std::vector<std::string> agent_names;  // --agent-names a,b: exactly these agents, in rank order
  bool share_agents = false;           // --share-agents: beside other sharing jobs, on disjoint accelerators
  std::string output_dir;              // --output; empty = the job's output.folder, else none
  std::string where_results_live;      // printed when nothing is fetched (the coordinator's result folder)
  bool detach = false;                 // print the job id and return at once
  bool strict = false;                 // --strict: a key where DLIO behaves differently is an error (exit 2)
  bool explain = false;                // --explain: print the derived plan, run nothing, write nothing
  std::string trace_path;              // --trace FILE: submit with dlio_ext.trace on, then fetch trace.json into FILE
  std::string baseline_file;           // --baseline-file F: the baseline the limit line cites (client/baseline.h)
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

// The job of a `submit` or `run` command, loaded once: the job argument resolved (a path, DLIO's workload=NAME or a
// bare NAME of the shipped workloads: client/workload_lookup.h), the job file with the overrides (--strict applies;
// plan_only: as --explain loads it, listing the keys not supported yet instead of failing), then the placement
// flags checked, and the job file kept safe: an output folder (--output, else output.folder) holding the job file
// under a result file's name (job.yaml, summary.json, ...), or a --trace FILE that is the job file, is refused, as
// the run would replace it. InvalidArgument, one line naming the file, key or flag.
absl::StatusOr<LoadedJob> LoadSubmission(const SubmitOptions& opt, bool plan_only);
// The placement flags of `opt`.
JobPlacement PlacementOf(const SubmitOptions& opt);

// --explain: the plan of `job` (loaded plan_only: not-supported keys are listed, not fatal) on its fleet
// (client/explain.h), printed (text, or one JSON document with --json). `local` set: `run`'s local fleet; null:
// `submit`, which asks the coordinator for the attached agents (their accelerators and memory) and falls back to
// the flags and local memory, saying so, when it cannot reach it within 2 s. 0 when a run of the job on that fleet
// could start; 2 when the plan shows a run would be refused (a key not supported yet, or a refusal of
// plan/preflight.h, listed first).
int ExplainJobPlan(const SubmitOptions& opt, const LoadedJob& job, const LocalFleetShape* local, std::ostream& out);

// The job's refusals on a fleet of this shape (plan/preflight.h): InvalidArgument with one line each and a last
// line naming the fleet. `run` calls it with its local fleet before starting it; SubmitAndWait when --agents and
// --accelerators-per-agent are both given, before submitting.
absl::Status CheckPreRun(const LoadedJob& job, const JobWorld& world);

// Submits `job` (LoadSubmission of `opt`) and follows it as the header says; returns the exit status.
int SubmitAndWait(const SubmitOptions& opt, const LoadedJob& job, std::ostream& out, std::ostream& err,
                  const std::atomic<bool>* cancel);

// `status JOB`: the job's state, placement, phase progress, completed epochs, results and last message.
int ShowStatus(const ClientOptions& opt, const std::string& job_id, std::ostream& out, std::ostream& err);
// `list --limit N`: the newest N jobs the coordinator keeps (its store included; 0: all of them), newest first, and
// the attached agents.
int ListJobs(const ClientOptions& opt, size_t limit, std::ostream& out, std::ostream& err);
// The jobs `list` shows without --limit: a screenful.
inline constexpr size_t kListDefaultLimit = 50;
// `cancel JOB`: cancels a queued or running job and waits (10 s at most) for it to end, printing the final line,
// which says whether every agent confirmed the stop; exit 1 when the stop is not confirmed (render.h RenderCancel).
int CancelJob(const ClientOptions& opt, const std::string& job_id, std::ostream& out, std::ostream& err);
// `results JOB [--output DIR]`: prints the job's result table and file names, or writes the files into DIR.
int FetchResults(const ClientOptions& opt, const std::string& job_id, const std::string& output_dir,
                 std::ostream& out, std::ostream& err);

}  // namespace dlio
