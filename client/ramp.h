// The ramp (`run|submit --ramp accelerators=1,2,4,8` or `--ramp agents=1,2,4`, docs/results.md) and the one-job
// probe it shares with the MLPerf drivers (`--find-max-accelerators`, the 5-run mode: mlperf/verbs.h).
//
// Contract:
//  - SubmitOne runs one job of the command's LoadedJob with extra overrides after its own, through
//    CoordinatorClient::Run (the pre-run check first when the fleet's shape is known), and reports its figures; every
//    failure is one line on `err`, as `submit --json` prints it.
//  - RunRamp runs one job per point, in the order given, on the same dataset: the first point generates it when the
//    job asks (workflow.generate_data), the others run with generate_data off. Point k's result files go into
//    <ramp folder>/<axis>-<n>/ and ramp.json (RampJson) beside them; the ramp folder is --output, else the job's
//    output.folder, else "ramp". The curve is printed as a table (or, with --json, ramp.json on stdout) with the
//    knee: the last point whose AU is at or above the job's target (metric.au). Exit 0 when every point ran (the
//    ramp is a measurement, not a pass/fail), else the failing point's status (client/render.h), 130 on a signal.
// Thread-safety: one call at a time per process (the main thread's work).
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "nlohmann/json.hpp"
#include "results/verdict.h"

namespace dlio {

// One job of a ramp, a set or a search. `ok` = the job succeeded (whatever its verdict); a figure its metric window
// left unmeasured is nullopt.
struct RunOutcome {
  int rc = 1;
  bool ok = false;
  std::string job_id;
  std::optional<double> au;
  std::optional<double> samples_per_second;
  std::optional<double> mb_per_second;  // measured bytes / s (10^6), else DLIO's MiB/s
  Verdict verdict;                      // with the limit class (results/limit.h)
  nlohmann::json summary;               // the fetched summary.json when an output folder was given
  std::optional<LoadedJob> job;         // the job as submitted (the command's job with the run's overrides)
};

// `job` with the `extra` overrides after its own, submitted with `base`'s placement (and `accelerators_per_agent`
// when > 0) and its files fetched into `output_dir` (empty: the job's output.folder).
RunOutcome SubmitOne(const SubmitOptions& base, const LoadedJob& job, const std::vector<std::string>& extra,
                     int accelerators_per_agent, const std::string& output_dir, std::ostream& err,
                     const std::atomic<bool>* cancel);

// --ramp AXIS=N1,N2,...: AXIS accelerators (per agent) or agents; N strictly increasing integers >= 1, at most 64.
struct RampSpec {
  std::string axis;
  std::vector<int> points;
  int max() const { return points.empty() ? 0 : points.back(); }
};
inline constexpr const char* kRampAllowed =
    "expected accelerators=N1,N2,... or agents=N1,N2,... (integers >= 1, increasing, at most 64 points)";
// InvalidArgument "--ramp: '<text>': <why>; expected ..." on anything else.
absl::StatusOr<RampSpec> ParseRamp(const std::string& text);

// One measured point of the curve, as ramp.json holds it.
struct RampPoint {
  int n = 0;
  std::string job_id;
  std::string folder;  // relative to the ramp folder
  RunOutcome outcome;
};
// ramp.json: {"axis", "au_target_percentage", "knee" (the point's n, or null), "points": [{"n", "job_id", "folder",
// "au_percentage", "samples_per_second", "mb_per_second", "batch_wait_share", "batch_wait_p99_seconds", "limit",
// "verdict"}]}.
nlohmann::json RampJson(const RampSpec& spec, double target_percent, const std::vector<RampPoint>& points);
// --find-max-accelerators's trials in ramp.json's form, so the report draws them on the ramp chart: the points
// (each count tried, in increasing order, its last trial), "probes" (the counts in the order they were tried) and
// "find_max" (the count found, 0 for none); the knee as RampJson has it.
nlohmann::json FindMaxRampJson(double target_percent, const std::vector<RampPoint>& trials, int found);
// The knee of ramp.json's points: the last one with AU >= the target; nullopt when none is.
std::optional<int> RampKnee(const nlohmann::json& points, double target_percent);
// The curve as a text table (AU, samples/s, MB/s, batch wait as a share of the step and its p99 in ms, limit,
// verdict), the knee marked, then one line naming it.
std::string RampTable(const nlohmann::json& ramp);

int RunRamp(const SubmitOptions& base, const LoadedJob& job, const RampSpec& ramp, std::ostream& out,
            std::ostream& err, const std::atomic<bool>* cancel);

}  // namespace dlio
