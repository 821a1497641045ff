// The scenario page of `dlio-coordinator report` (report.h): a scenario folder (scenario.json beside alone/ and
// together/, client/scenario.h, docs/scenarios.md) as one self-contained HTML page: the scenario's members with their
// timing, the interference table per member (alone, together, delta %, direction, verdicts; without --baseline the
// together figures), one timeline of every member's runs (a bar per run in its member's lane, alone and together,
// seconds from the scenario's start) and, beside it on the same time axis, the agents' host telemetry (CPU busy %,
// disk read and write MB/s) read from the runs' <agent>_host.jsonl files when they carry it.
// Thread-safety: pure functions over files.
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dlio::report_internal {

// The page's data: scenario.json with "telemetry": {"<side>/<member>/<agent>": [{"t" (seconds from
// started_unix_ms), "cpu_busy_percent", "disk_read_MB_per_second", "disk_write_MB_per_second"}]}. Errors name the
// file.
absl::StatusOr<nlohmann::json> LoadScenario(const std::filesystem::path& dir);

// The HTML page of `data` (LoadScenario), Chart.js (`chart_js`) embedded.
std::string ScenarioPageHtml(const nlohmann::json& data, const std::string& chart_js);

}  // namespace dlio::report_internal
