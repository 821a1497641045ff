// Report: a self-contained HTML report of one job's result folder, or of two side by side.
//
// Input: the result folder the coordinator writes (summary.json, <rank>_output.json, job.yaml; see
// docs/results.md). Output: one HTML file with per-epoch throughput and AU (against the job's metric.au target),
// a read-latency CDF drawn from summary.json's dlio_ext.train_read_latency_histogram, and a per-rank table. The
// charts are drawn by Chart.js, whose UMD build (from npm, package-lock.json) is embedded into the binary at build
// time and into every report, so a report opens offline and on any machine. With two folders every chart and table
// shows both jobs (A and B) side by side, with B/A ratios in the summary.
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
