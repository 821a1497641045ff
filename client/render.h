// Rendering of the client verbs: what `submit`, `status`, `list`, `cancel` and `results` print (text for people, or
// one JSON document with --json), from the typed answers of CoordinatorClient (coordinator_client.h); and the exit
// status of every verb, derived in one place (ExitStatusOf below) from an absl::Status or a job's outcome.
//
// Exit statuses (every verb): 0 the job ran and met its target (or had none to meet); 1 the job did not succeed
// (failed, cancelled, interrupted), or the job or its results do not exist, or `cancel` could not confirm the stop
// (RenderCancel); 2 bad input (job file, options, token or certificate files, or a job its values make impossible on
// its fleet: plan/preflight.h); 3 coordinator unreachable or lost; 4 refused by the coordinator (no token or a wrong
// one); 5 the job ran but missed its AU target (or an --mlperf result is FAIL or INVALID); 6 the job ran but its AU
// could not be measured (too few steps per epoch, docs/results.md). Every job ends with one verdict line
// (results/verdict.h), e.g. "verdict: AU 72.2 % (min rank 70.9 %, sd 0.8) < target 90.0 %: FAIL", and a "verdict"
// object in --json.
// Thread-safety: pure functions over the streams they are given; a SubmitView is used by one Run() at a time (its
// Cancelling/CancelFailed write `err` from Run's canceller thread, the rest `out` from the caller's).
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/coordinator_client.h"
#include "results/verdict.h"

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
// The text --help and docs/cli.md give for the statuses above.
inline constexpr const char* kExitStatusHelp =
    "Exit status: 0 ran and met its AU target (or had none), 1 job failed/cancelled or not found (cancel: stop not "
    "confirmed), 2 bad input "
    "(a job its fleet cannot run included), "
    "3 coordinator unreachable, 4 refused (token), 5 ran but AU below target (--mlperf: FAIL or INVALID), "
    "6 ran but AU not measured (too few steps per epoch)";

// The exit statuses, all in one place:
//  - of a step that failed (coordinator_client.h words the codes): OK 0; InvalidArgument 2; Unavailable,
//    DeadlineExceeded, Unimplemented 3; Unauthenticated 4; anything else (NotFound, Aborted: a fetch that failed) 1;
//  - of a job's verdict: PASS and NOT_APPLICABLE 0, FAIL 5, NOT_MEASURED 6, INCOMPLETE 1;
//  - of a job that ran to its end (submit, run): its fetch failing 1, else succeeded: its verdict's, refused at
//    placement (its values cannot run on the fleet it got): 2, else 1;
//  - of a job `status` and `results` show: 0 while queued or running, then as a job that ran to its end.
int ExitStatusOf(const absl::Status& s);
int ExitStatusFor(const Verdict& v);
int ExitStatusOf(const JobOutcome& o);
int ExitStatusOfJob(const JobInfoData& job);

// Prints the failure's line(s) to `err` and returns its exit status.
int ReportFailure(const absl::Status& s, std::ostream& err);
// The job's "warning: KEY: ..." lines (keys implemented where DLIO ignores or breaks them), one per key.
void RenderWarnings(const LoadedJob& job, std::ostream& err);

// What `submit` shows while its job runs: "job J submitted to C" and the live progress (text mode only), and the
// lines of a cancel by signal (to `err`, both modes). Progress is a redrawn bar on a terminal (`tty`), a plain line
// every few seconds otherwise; during training the epoch (k of N), its live AU and MB/s, the phase's and the whole
// job's ETA.
class SubmitView : public RunObserver {
 public:
  // `out` null: nothing goes to stdout (--json, the MLPerf modes).
  SubmitView(std::ostream* out, std::ostream& err, std::string coordinator, bool tty);
  void Submitted(const std::string& job_id) override;
  void Progress(const JobEventData& e) override;
  void Cancelling(const std::string& job_id) override;
  void CancelFailed(const std::string& job_id, const absl::Status& why) override;
  // Erases the progress bar, if one is shown (before the final lines).
  void Clear();

 private:
  using SteadyClock = std::chrono::steady_clock;
  std::string Figures(const JobEventData& e, SteadyClock::time_point now) const;

  std::ostream* const out_;
  std::ostream& err_;
  const std::string coordinator_;
  const bool tty_;
  std::string phase_;
  SteadyClock::time_point start_, last_plain_;
  bool trained_ = false;              // a training epoch started: train_start_ is set
  SteadyClock::time_point train_start_;
  bool shown_ = false;
};

// `submit` after its job ended: the final line, the epoch table and the checkpoints, the files fetched, the verdict
// (text), or the JSON document. `where_results_live`: the coordinator's result folder, named when nothing was
// fetched. Returns the exit status (a fetch that failed: its line on `err`, and no verdict or JSON).
int RenderOutcome(const JobOutcome& o, const std::string& where_results_live, bool json, std::ostream& out,
                  std::ostream& err);
// `submit --detach`: the job's id.
void RenderDetached(const std::string& job_id, bool json, std::ostream& out);
// `status JOB`: the job's state, placement, phase progress, completed epochs, results and last message; returns
// the exit status.
int RenderStatus(const JobInfoData& job, bool json, std::ostream& out);
// `list`: the jobs (as listed: newest first) and the attached agents; when the coordinator keeps older jobs
// (list.more), a line saying how to see them (text) or "more": true (JSON).
void RenderList(const JobList& list, bool json, std::ostream& out);
// `cancel JOB`: whether it was cancelled and the job as it is now (JSON: "stop_confirmed" too); returns the exit
// status: 0 when the job had already ended or its stop was confirmed (it ended, every agent confirming), 1 when it
// was not: the job still not ended after the client's wait (its agents named), or ended with agents that did not
// confirm the stop within the coordinator's grace (named by the coordinator's message).
int RenderCancel(const std::string& job_id, bool cancelled, const JobInfoData& job, bool json, std::ostream& out);
// Whether a cancel's stop is confirmed, as RenderCancel's status says (true when nothing was `cancelled`).
bool StopConfirmed(bool cancelled, const JobInfoData& job);
// `results JOB`: the result table (from summary.json's text) and the files, written into `output_dir` or listed
// (`output_dir` empty); returns the exit status.
int RenderResults(const std::string& job_id, const JobInfoData& job, const std::vector<std::string>& names,
                  const std::string& summary_text, const std::string& output_dir, bool json, std::ostream& out);

}  // namespace dlio
