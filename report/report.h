// Report: a self-contained HTML report of one job's result folder, of two side by side, or of an --mlperf result.
//
// Input: the result folder the coordinator writes (summary.json, <rank>_output.json, job.yaml; see
// docs/results.md), or an --mlperf folder (mlperf_result.json beside one result folder per run; a root holding such
// folders takes the newest). Output: one HTML file. For a job: the verdict line and under it the limit line
// (results/limit.h); a summary table; charts of the AU
// per epoch against metric.au, the bytes/s the accelerators need at 100 % AU (batch x record / compute time, the
// figure --explain gives) against the bytes/s delivered, the samples/s per epoch, and the read-latency CDF (from
// summary.json's dlio_ext.train_read_latency_histogram); evaluation and checkpoint tables when the job had them;
// the effective configuration (every key; with two jobs only the keys that differ); the environment (tool version
// and commit, each agent's node, kernel, CPU, memory and data file system); and per-rank figures from training
// steps only (the step-weighted mean of the rank's measured blocks). Figures that were not measured show as n/m.
// For an --mlperf folder: the AU, replication and classification verdicts, the classification's differing keys,
// every run with its verdict, and charts of AU and samples/s per timed run against the threshold and the 5 % band.
// For a ramp folder (ramp.json beside its points' folders, client/ramp.h): the knee, a table of the points and the
// curve of AU and samples/s against the points with the target and the knee (a star).
// For a scenario folder (scenario.json, client/scenario.h): the scenario page (report/scenario_page.h), the
// interference table per member and one timeline of every member's runs with the host telemetry beside it.
// Charts are drawn by Chart.js, whose UMD build (from npm, package-lock.json) is embedded into the binary at build
// time and into every report, so a report opens offline and on any machine.
// Thread-safety: pure functions.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dlio {

// Reads the folders and returns the HTML. Errors name the folder and file.
absl::StatusOr<std::string> RenderReport(const std::vector<std::string>& result_dirs);

// The `report` verb: renders and writes `output` (temporary name, then rename). 0 on success, else a one-line error
// on `err` and 2 (bad input) or 3 (cannot write).
int WriteReportFile(const std::vector<std::string>& result_dirs, const std::string& output, std::ostream& out,
                    std::ostream& err);

// True when this binary was built with the charting library (see coordinator/CMakeLists.txt).
bool ReportHasChartLibrary();

}  // namespace dlio
