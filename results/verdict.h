// Verdict: the answer a run gives to "can this storage feed these accelerators at the target AU?", for people (one
// line), for scripts (JSON) and for CI (an exit status), computed in one place from the aggregated figures.
//
//   PASS            the job succeeded and its mean AU (DLIO's train_au_mean_percentage) >= metric.au x 100
//   FAIL            the job succeeded and its mean AU is below the target
//   NOT_MEASURED    the job succeeded but DLIO's metric window left its AU unmeasured (too few steps per epoch;
//                   docs/results.md), so it cannot be judged
//   NOT_APPLICABLE  the job succeeded without training epochs (generation or checkpoint-only): no AU to judge; or
//                   it trained with train.computation_time 0 (a pure read-rate test: AU has no compute to hide I/O
//                   behind), and the reason gives its read rate (MiB/s, samples/s) as the answer; such a job whose
//                   read rate the metric window left unmeasured is NOT_MEASURED
//   INCOMPLETE      the job did not succeed (failed, cancelled, interrupted) or is still running: no verdict, the
//                   figures of its completed epochs are shown as they are
// The line reads, e.g., "AU 72.2 % (min rank 70.9 %, sd 0.8) < target 90.0 %: FAIL": the mean AU over epochs, the
// least busy rank's AU averaged over epochs, the population stdev of the epochs' AU, and the target.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "results/results.h"
#include "nlohmann/json.hpp"

namespace dlio {

enum class VerdictStatus { kPass, kFail, kNotMeasured, kNotApplicable, kIncomplete };
// "PASS", "FAIL", "NOT_MEASURED", "NOT_APPLICABLE", "INCOMPLETE".
const char* VerdictStatusName(VerdictStatus s);
std::optional<VerdictStatus> ParseVerdictStatus(std::string_view name);

struct Verdict {
  VerdictStatus status = VerdictStatus::kIncomplete;
  std::optional<double> au_percent;           // mean over measured epochs
  std::optional<double> au_min_rank_percent;  // the least busy rank
  std::optional<double> au_stdev_percent;     // over epochs
  double target_percent = 90.0;               // metric.au x 100
  int epochs_measured = 0;
  std::string reason;                         // why NOT_MEASURED / NOT_APPLICABLE / INCOMPLETE; empty otherwise
  // The limiting resource (results/limit.h), set for jobs that trained: its class name ("storage", "client CPU",
  // ...; empty when not classified), its line ("storage: ranks waited 41 % ...") and the figures it read.
  std::string limit_class;
  std::string limit_line;
  nlohmann::json limit_evidence;
};

// `job_state` is JobResult::job_state ("succeeded", "partial", "failed", ...); empty counts as succeeded (result
// files written outside a coordinator).
Verdict JudgeJob(const FleetSummary& summary, const WorkloadSpec& spec, std::string_view job_state);

// The one-line form: "AU 93.1 % (min rank 92.0 %, sd 0.4) >= target 90.0 %: PASS".
std::string VerdictLine(const Verdict& v);
// The line printed after it: "limit: storage: ranks waited 41 % ..."; empty when the job was not classified.
std::string LimitLine(const Verdict& v);

// {"status", "au_percent", "au_min_rank_percent", "au_stdev_percent", "target_percent", "epochs_measured",
//  "reason", "line"}, and "limit": {"class", "line", "evidence"} when classified; figures that are not measured are
//  null.
nlohmann::json VerdictJson(const Verdict& v);
// The inverse (for `results`, which reads summary.json); a missing or malformed document gives INCOMPLETE.
Verdict VerdictFromJson(const nlohmann::json& j);

}  // namespace dlio
