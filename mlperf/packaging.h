// `mlperf report`'s pieces that `mlperf check` reuses (the verb itself is MlperfReport in submission.h): the report
// the runs of a tree give now, which the checker compares with the saved mlperf_storage_report.json, and the mark of
// the system-description fields left to the submitter. Internal to the mlperf room (packaging.cc, checker.cc).
//
// Thread-safety: pure functions of the tree (BuildReport reads the runs' per-rank files); one call at a time per tree.
#pragma once

#include <string>
#include <vector>

#include "mlperf/rules.h"
#include "mlperf/submission_tree.h"
#include "nlohmann/json.hpp"

namespace dlio::submission {

// The prefix of every value of system_description.yaml the submitter must fill in; `mlperf check` refuses the tree
// while one is left.
inline constexpr const char* kFillIn = "FILL IN";

// mlperf_storage_report.json: the tool, the references (`references`: "shipped" or the folder) and per workload the
// score of its newest set (ScoreMlperfSet's JSON).
nlohmann::json BuildReport(const Tree& t, const std::vector<MlperfReference>* refs, const std::string& references);

}  // namespace dlio::submission
