// The verdict of one --mlperf set (mlperf/verbs.h RunMlperf), from its score (mlperf/submission.h ScoreMlperfSet):
// the set's result file <type>/<model>/mlperf_result_<set>.json (runs, means, verdicts, classification: the fields
// `dlio-coordinator report` renders), its text summary or JSON document, and its exit status (client/render.h:
// 0 every verdict passed, 5 one failed or the set is INVALID, 6 a figure a verdict needs was not measured). And the
// text forms of the figures the MLPerf modes print, shared with their per-run lines.
// Thread-safety: pure functions (FinishMlperfSet writes one file).
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "nlohmann/json.hpp"

namespace dlio {

// `key` of the JSON object `j` when it is a number; nullopt when absent or not a number (a figure not measured).
std::optional<double> JsonNumber(const nlohmann::json& j, const char* key);
// "12.34 %", "1.234 GiB/s", "1.234 s", "12.34 samples/s"; each says when the figure was not measured.
std::string PercentText(const std::optional<double>& v);
std::string GibPerSecondText(const std::optional<double>& v);
std::string SecondsText(const std::optional<double>& v);
std::string SamplesPerSecondText(const std::optional<double>& v);

// Prints a ClassifyRun() JSON (mlperf/rules.h): the class, the reference, one line per differing key and per
// job-level problem.
void PrintClassification(const nlohmann::json& c, std::ostream& out);

// Writes the set's result file into `model_dir` (<root>/<type>/<model>), prints the set's figures and verdicts
// (`text`) or the result as one JSON document, and returns the exit status (1 when the file cannot be written).
// `threshold`: the AU threshold as a fraction; `mlperf_workload`: the set is an MLPerf training workload (else its
// classification says it is not).
int FinishMlperfSet(const nlohmann::json& score, const std::filesystem::path& model_dir, double threshold,
                    bool mlperf_workload, bool text, std::ostream& out, std::ostream& err);

}  // namespace dlio
