#include "results/verdict.h"

#include "fmt/format.h"

namespace dlio {

const char* VerdictStatusName(VerdictStatus s) {
  switch (s) {
    case VerdictStatus::kPass: return "PASS";
    case VerdictStatus::kFail: return "FAIL";
    case VerdictStatus::kNotMeasured: return "NOT_MEASURED";
    case VerdictStatus::kNotApplicable: return "NOT_APPLICABLE";
    case VerdictStatus::kIncomplete: return "INCOMPLETE";
  }
  return "INCOMPLETE";
}

std::optional<VerdictStatus> ParseVerdictStatus(std::string_view name) {
  for (VerdictStatus s : {VerdictStatus::kPass, VerdictStatus::kFail, VerdictStatus::kNotMeasured,
                          VerdictStatus::kNotApplicable, VerdictStatus::kIncomplete}) {
    if (name == VerdictStatusName(s)) return s;
  }
  return std::nullopt;
}

namespace {

// A read-rate test (train.computation_time 0): no compute for I/O to hide behind, so AU is ~0 by construction and
// the read rate is the answer. NOT_APPLICABLE with that rate, or NOT_MEASURED when the metric window left it
// unmeasured (the answer itself is missing).
void JudgeReadRateTest(const FleetSummary& summary, Verdict* v) {
  if (!summary.throughput_mean || !summary.io_mean_mib) {
    v->status = VerdictStatus::kNotMeasured;
    v->reason = fmt::format("train.computation_time is 0, so the read rate is the answer, and {}",
                            summary.throughput_not_measured.empty() ? "it was not measured"
                                                                    : summary.throughput_not_measured);
    return;
  }
  v->status = VerdictStatus::kNotApplicable;
  v->reason = fmt::format("read rate {:.1f} MiB/s, {:.1f} samples/s: train.computation_time is 0, a read-rate test "
                          "with no compute for I/O to hide behind{}",
                          *summary.io_mean_mib, *summary.throughput_mean,
                          summary.au_mean ? fmt::format(" (AU {:.1f} %)", *summary.au_mean) : "");
}

}  // namespace

Verdict JudgeJob(const FleetSummary& summary, const WorkloadSpec& spec, std::string_view job_state) {
  Verdict v;
  v.target_percent = spec.au_threshold * 100;
  v.au_percent = summary.au_mean;
  v.au_min_rank_percent = summary.au_min_rank;
  v.au_stdev_percent = summary.au_stdev;
  for (const EpochMetric& e : summary.epochs) v.epochs_measured += e.au_percent ? 1 : 0;
  const bool succeeded = job_state.empty() || job_state == "succeeded";
  if (!succeeded) {
    v.status = VerdictStatus::kIncomplete;
    v.reason = job_state == "partial" ? fmt::format("the job is still running ({} of {} epoch(s) done)",
                                                    summary.epochs.size(), spec.epochs)
                                      : fmt::format("the job {} after {} of {} epoch(s)",
                                                    job_state == "failed" ? "failed" : fmt::format("was {}", job_state),
                                                    summary.epochs.size(), spec.train ? spec.epochs : 0);
  } else if (!spec.train || summary.epochs.empty()) {
    v.status = VerdictStatus::kNotApplicable;
    v.reason = spec.train ? "no training epoch ran" : "the job trains no epochs (workflow.train: false)";
  } else if (spec.computation_time.IsZero()) {
    JudgeReadRateTest(summary, &v);
  } else if (!summary.au_mean) {
    v.status = VerdictStatus::kNotMeasured;
    v.reason = summary.au_not_measured.empty() ? "AU not measured" : summary.au_not_measured;
  } else {
    v.status = *summary.au_mean >= v.target_percent ? VerdictStatus::kPass : VerdictStatus::kFail;
  }
  return v;
}

std::string VerdictLine(const Verdict& v) {
  const std::string status = VerdictStatusName(v.status);
  const std::string target = fmt::format("target {:.1f} %", v.target_percent);
  auto figures = [&] {
    std::string s = fmt::format("AU {:.1f} %", *v.au_percent);
    std::string detail;
    if (v.au_min_rank_percent) detail = fmt::format("min rank {:.1f} %", *v.au_min_rank_percent);
    if (v.au_stdev_percent) detail += fmt::format("{}sd {:.1f}", detail.empty() ? "" : ", ", *v.au_stdev_percent);
    if (!detail.empty()) s += " (" + detail + ")";
    return s;
  };
  switch (v.status) {
    case VerdictStatus::kPass:
      return fmt::format("{} >= {}: PASS", figures(), target);
    case VerdictStatus::kFail:
      return fmt::format("{} < {}: FAIL", figures(), target);
    case VerdictStatus::kNotMeasured:
      return fmt::format("AU not measured against {}: NOT_MEASURED ({})", target, v.reason);
    case VerdictStatus::kNotApplicable:
      return fmt::format("no AU to judge: NOT_APPLICABLE ({})", v.reason);
    case VerdictStatus::kIncomplete:
      if (v.au_percent) return fmt::format("{} so far, {}: INCOMPLETE ({})", figures(), target, v.reason);
      return fmt::format("no verdict: INCOMPLETE ({})", v.reason);
  }
  return status;
}

std::string LimitLine(const Verdict& v) { return v.limit_line.empty() ? "" : "limit: " + v.limit_line; }

nlohmann::json VerdictJson(const Verdict& v) {
  auto num = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"status", VerdictStatusName(v.status)},
          {"au_percent", num(v.au_percent)},
          {"au_min_rank_percent", num(v.au_min_rank_percent)},
          {"au_stdev_percent", num(v.au_stdev_percent)},
          {"target_percent", v.target_percent},
          {"epochs_measured", v.epochs_measured},
          {"reason", v.reason},
          {"line", VerdictLine(v)}};
  if (!v.limit_class.empty()) {
    j["limit"] = {{"class", v.limit_class},
                  {"line", v.limit_line},
                  {"evidence", v.limit_evidence.is_null() ? nlohmann::json::object() : v.limit_evidence}};
  }
  return j;
}

Verdict VerdictFromJson(const nlohmann::json& j) {
  Verdict v;
  if (!j.is_object()) {
    v.reason = "no verdict in the results";
    return v;
  }
  auto num = [&](const char* key) -> std::optional<double> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  const auto status = ParseVerdictStatus(j.value("status", ""));
  v.status = status.value_or(VerdictStatus::kIncomplete);
  v.au_percent = num("au_percent");
  v.au_min_rank_percent = num("au_min_rank_percent");
  v.au_stdev_percent = num("au_stdev_percent");
  v.target_percent = num("target_percent").value_or(v.target_percent);
  v.epochs_measured = static_cast<int>(num("epochs_measured").value_or(0));
  v.reason = j.value("reason", status ? "" : "no verdict in the results");
  if (auto it = j.find("limit"); it != j.end() && it->is_object()) {
    const auto text = [&](const char* key) {
      auto f = it->find(key);
      return f != it->end() && f->is_string() ? f->get<std::string>() : std::string();
    };
    v.limit_class = text("class");
    v.limit_line = text("line");
    v.limit_evidence = it->value("evidence", nlohmann::json::object());
  }
  return v;
}

}  // namespace dlio
