// `dlio-coordinator run|submit SCENARIO.yaml [--baseline]`: the members of a scenario file (job/scenario.h) run as
// jobs with their timing, and the interference report (docs/scenarios.md).
//
// Contract:
//  - LoadScenarioSubmission(): nullopt when the job argument is not a scenario file (a workload: the usual path);
//    otherwise every member loaded once, before anything runs: `workload` resolved as the job argument of `run`
//    (a path relative to the scenario file's folder first, then as given, then a shipped workload's name), `inline`
//    taken as a workload file's text; the member's overrides, then the command's (--set, trailing) after them.
//    Errors are InvalidArgument, one line naming the scenario member and the key or file (exit 2).
//  - RunScenario(): the members submitted as jobs (SubmitOne, client/ramp.h: one thread per member), each at its
//    `start` offset; a repeating member again every `repeat_every` s counted from its start (a run that is due while
//    the previous one still runs starts when it ends), up to `times` runs; `until: M`: no new run once M ended, and a
//    member that does not repeat is cancelled when M ends. The clock is the steady clock from the scenario's start.
//    A member's run k goes into <folder>/together/<member>/ (repeating: .../<member>/run-<k>/); with --baseline
//    each member first runs once alone, with its placement, into <folder>/alone/<member>/, one after another, then
//    all together. A member that trains and generates its dataset generates it in its first run only (the alone
//    run with --baseline): the later runs read what it wrote; a member that only generates generates every time.
//    Then scenario.json (ScenarioJson) in the folder: --output, else "scenario-<name>", and beside it trace.json,
//    every member on one timeline (client/scenario_trace.h). Prints one line per run and
//    the interference table (InterferenceTable), or with --json scenario.json on stdout. Exit 0 when every member
//    ran (the report is a measurement), else the first failed run's status (client/render.h), 130 on a signal.
//  - Figures of a member (FiguresOf): AU %, samples/s, MB/s (RunOutcome), read latency p50/p99 (summary.json
//    dlio_ext.train_read_latency_seconds), write latency p50/p99 (dlio_ext.generate.write_latency_seconds),
//    checkpoint write and read time (the mean max_duration_seconds of dlio_ext.checkpoints' saves and loads), each
//    the mean over the member's runs that measured it, null when none did.
//  - Interference (InterferenceRows): per figure alone vs together, delta % = (together - alone) / alone x 100 and
//    its direction: "better" or "worse" (higher is better for AU, samples/s and MB/s, lower for latencies and
//    times), "same" within kSameWithinPercent; null when either side is unmeasured or alone is 0.
// Thread-safety: RunScenario uses threads of its own and returns when they ended; the rest are pure functions.
#pragma once

#include <algorithm>
#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "client/ramp.h"
#include "job/scenario.h"
#include "nlohmann/json.hpp"

namespace dlio {

struct LoadedScenario {
  ScenarioSpec spec;
  std::vector<LoadedJob> jobs;  // one per member, in order
  int agents_needed = 0;        // the members' agents added up (disjoint placement): what `run` starts at least
  int accelerators_needed = 0;  // the largest accelerators per agent a member asks for

  // The agents and accelerators per agent `run` starts for it: at least what the members ask.
  void GrowLocalFleet(int* agents, int* accelerators) const {
    *agents = std::max(*agents, agents_needed);
    *accelerators = std::max(*accelerators, accelerators_needed);
  }
};

absl::StatusOr<std::optional<LoadedScenario>> LoadScenarioSubmission(const SubmitOptions& opt);
// The command's scenario (LoadScenarioSubmission) with the flags a scenario cannot take refused: --explain,
// --detach, --trace or a one-job mode (`one_job_mode`: --mlperf,
// --mlperf-datagen, --find-max-accelerators, --ramp). InvalidArgument, one line naming the flag.
absl::StatusOr<std::optional<LoadedScenario>> LoadScenarioCommand(const SubmitOptions& opt, bool one_job_mode);

// A delta within this many percent of the alone figure is "same" (run-to-run noise of a short run).
inline constexpr double kSameWithinPercent = 1.0;

// One measured figure: its key in scenario.json, the table's heading and which way is better.
struct FigureDef {
  const char* key;
  const char* label;
  bool higher_is_better;
  double table_scale;  // the table shows value x scale (seconds as ms)
};
const std::vector<FigureDef>& ScenarioFigures();

// One run of a member.
struct MemberRun {
  int run = 1;
  std::string folder;  // relative to the scenario's folder
  double start_s = 0, end_s = 0;  // steady clock, seconds after the scenario's start
  int64_t start_unix_ms = 0, end_unix_ms = 0;
  bool stopped_by_until = false;  // cancelled because its `until` member ended
  RunOutcome outcome;
};

// The figures of a member's runs ({key: value or null} over ScenarioFigures(), and "verdict": the worst verdict of
// the runs, INCOMPLETE > FAIL > NOT_MEASURED > PASS > NOT_APPLICABLE; runs stopped by `until` left out).
nlohmann::json FiguresOf(const std::vector<MemberRun>& runs);
// [{"figure", "alone", "together", "delta_percent", "direction"}] over ScenarioFigures().
nlohmann::json InterferenceRows(const nlohmann::json& alone, const nlohmann::json& together);
// scenario.json: {"scenario", "description", "source", "baseline", "started_unix_ms", "members": [{"name",
// "workload", "placement", "start_seconds", "repeat_every_seconds", "times", "until", "alone" (null without
// --baseline), "together": {"runs": [{"run", "folder", "job_id", "start_seconds", "end_seconds", "start_unix_ms",
// "end_unix_ms", "ok", "stopped_by_until", "verdict", figures...}], "figures"}, "interference" (null without
// --baseline)}]}.
nlohmann::json ScenarioJson(const LoadedScenario& s, bool baseline, int64_t started_unix_ms,
                            const std::vector<std::vector<MemberRun>>& alone,
                            const std::vector<std::vector<MemberRun>>& together);
// The text table: per member and figure, alone, together, delta and direction, then each side's verdict; without
// a baseline, the together figures only.
std::string InterferenceTable(const nlohmann::json& scenario);

int RunScenario(const SubmitOptions& base, const LoadedScenario& scenario, bool baseline, std::ostream& out,
                std::ostream& err, const std::atomic<bool>* cancel);

}  // namespace dlio
