#include "client/scenario.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/workload_lookup.h"
#include "coordinator/coordinator.h"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

absl::Status MemberError(const ScenarioSpec& spec, const ScenarioMember& m, const absl::Status& s) {
  return absl::InvalidArgumentError(
      absl::StrCat(spec.source, ": scenario member '", m.name, "': ", s.message()));
}

// The member's workload: a path relative to the scenario file's folder first, then the job argument's rules.
absl::StatusOr<LoadedJob> LoadMember(const SubmitOptions& opt, const ScenarioSpec& spec, const ScenarioMember& m) {
  LoadOptions lo;
  lo.strict = opt.strict;
  std::vector<std::string> overrides = m.overrides;
  overrides.insert(overrides.end(), opt.overrides.begin(), opt.overrides.end());
  if (!m.inline_yaml.empty()) {
    return LoadedJob::FromText(absl::StrCat(spec.source, "#", m.name), m.inline_yaml, overrides, lo);
  }
  std::error_code ec;
  const fs::path beside = fs::path(spec.source).parent_path() / m.workload;
  std::string path;
  if (fs::path(m.workload).is_relative() && fs::is_regular_file(beside, ec)) {
    path = beside.string();
  } else {
    absl::StatusOr<std::string> found = ResolveJobArgument(m.workload, ShippedWorkloadFolders());
    if (!found.ok()) return found.status();
    path = *found;
  }
  return LoadedJob::Load(path, overrides, lo);
}

// What a member's placement asks that the submission can carry (client/client.h JobPlacement).
absl::Status CheckMemberPlacement(const SubmitOptions& opt, const ScenarioMember& m) {
  return CheckPlacementOptions(m.placement.agents, m.placement.accelerators, opt.wait_for_agents_s,
                               opt.barrier_timeout_s);
}

absl::Status CheckScenarioFlags(const SubmitOptions& opt) {
  if (opt.explain) return absl::InvalidArgumentError("--explain: not with a scenario; explain a member's workload");
  if (opt.detach) return absl::InvalidArgumentError("--detach: a scenario is followed to its end; leave it out");
  if (!opt.trace_path.empty()) {
    return absl::InvalidArgumentError(
        "--trace: not with a scenario; set dlio_ext.trace=True in a member's overrides (its trace.json stays in "
        "the coordinator's results folder)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<LoadedScenario>> LoadScenarioSubmission(const SubmitOptions& opt) {
  std::error_code ec;
  if (!fs::is_regular_file(opt.job_path, ec)) return std::nullopt;  // a workload name, or a missing file
  absl::StatusOr<std::string> text = ReadWorkloadFile(opt.job_path);
  if (!text.ok() || !IsScenarioText(*text)) return std::nullopt;  // the workload path reports its own problems
  absl::StatusOr<ScenarioSpec> spec = ParseScenario(*text, opt.job_path);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = CheckScenarioFlags(opt); !s.ok()) return s;
  LoadedScenario out;
  out.spec = *std::move(spec);
  if (out.spec.name.empty()) out.spec.name = fs::path(opt.job_path).stem().string();
  for (const ScenarioMember& m : out.spec.members) {
    if (absl::Status s = CheckMemberPlacement(opt, m); !s.ok()) return MemberError(out.spec, m, s);
    absl::StatusOr<LoadedJob> job = LoadMember(opt, out.spec, m);
    if (!job.ok()) return MemberError(out.spec, m, job.status());
    out.jobs.push_back(*std::move(job));
    out.agents_needed += m.placement.agents;
    out.accelerators_needed = std::max(out.accelerators_needed, m.placement.accelerators);
  }
  return std::optional<LoadedScenario>(std::move(out));
}

absl::StatusOr<std::optional<LoadedScenario>> LoadScenarioCommand(const SubmitOptions& opt, bool one_job_mode) {
  absl::StatusOr<std::optional<LoadedScenario>> sc = LoadScenarioSubmission(opt);
  if (!sc.ok()) return sc;
  if (*sc && one_job_mode) {
    return absl::InvalidArgumentError(absl::StrCat(
        opt.job_path, ": a scenario runs on its own, not with --mlperf, --mlperf-datagen, --find-max-accelerators or "
                      "--ramp"));
  }
  return sc;
}

// --- figures and the interference report ---------------------------------------------------------------------

const std::vector<FigureDef>& ScenarioFigures() {
  // Data table: the figures in the order the table and scenario.json list them.
  static const std::vector<FigureDef> kFigures = {
      {"au_percentage", "AU %", true, 1},
      {"samples_per_second", "samples/s", true, 1},
      {"mb_per_second", "MB/s", true, 1},
      {"read_latency_p50_seconds", "read p50 ms", false, 1000},
      {"read_latency_p99_seconds", "read p99 ms", false, 1000},
      {"write_latency_p50_seconds", "write p50 ms", false, 1000},
      {"write_latency_p99_seconds", "write p99 ms", false, 1000},
      {"checkpoint_write_seconds", "ckpt write s", false, 1},
      {"checkpoint_read_seconds", "ckpt read s", false, 1},
  };
  return kFigures;
}

namespace {

json Num(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json At(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return nullptr;
    p = &(*p)[k];
  }
  return p->is_number() ? *p : json(nullptr);
}

// The mean max_duration_seconds of the summary's checkpoint saves (or loads).
json CheckpointMean(const json& summary, bool load) {
  const json list = summary.is_object() && summary.contains("dlio_ext") ? summary["dlio_ext"].value("checkpoints",
                                                                                                     json::array())
                                                                        : json::array();
  double sum = 0;
  int n = 0;
  for (const json& c : list) {
    if (c.value("operation", "") != (load ? "load" : "save") || !c["max_duration_seconds"].is_number()) continue;
    sum += c["max_duration_seconds"].get<double>();
    ++n;
  }
  return n > 0 ? json(sum / n) : json(nullptr);
}

// One run's figures, keyed as ScenarioFigures().
json RunFigures(const RunOutcome& o) {
  const json& s = o.summary;
  return {{"au_percentage", Num(o.au)},
          {"samples_per_second", Num(o.samples_per_second)},
          {"mb_per_second", Num(o.mb_per_second)},
          {"read_latency_p50_seconds", At(s, {"dlio_ext", "train_read_latency_seconds", "p50"})},
          {"read_latency_p99_seconds", At(s, {"dlio_ext", "train_read_latency_seconds", "p99"})},
          {"write_latency_p50_seconds", At(s, {"dlio_ext", "generate", "write_latency_seconds", "p50"})},
          {"write_latency_p99_seconds", At(s, {"dlio_ext", "generate", "write_latency_seconds", "p99"})},
          {"checkpoint_write_seconds", CheckpointMean(s, false)},
          {"checkpoint_read_seconds", CheckpointMean(s, true)}};
}

int Severity(VerdictStatus v) {
  switch (v) {
    case VerdictStatus::kIncomplete: return 4;
    case VerdictStatus::kFail: return 3;
    case VerdictStatus::kNotMeasured: return 2;
    case VerdictStatus::kPass: return 1;
    case VerdictStatus::kNotApplicable: return 0;
  }
  return 4;
}

}  // namespace

json FiguresOf(const std::vector<MemberRun>& runs) {
  json out = json::object();
  std::optional<VerdictStatus> worst;
  std::vector<json> each;
  for (const MemberRun& r : runs) {
    if (r.stopped_by_until) continue;
    each.push_back(RunFigures(r.outcome));
    const VerdictStatus v = r.outcome.ok ? r.outcome.verdict.status : VerdictStatus::kIncomplete;
    if (!worst || Severity(v) > Severity(*worst)) worst = v;
  }
  for (const FigureDef& f : ScenarioFigures()) {
    double sum = 0;
    int n = 0;
    for (const json& e : each) {
      if (!e[f.key].is_number()) continue;
      sum += e[f.key].get<double>();
      ++n;
    }
    out[f.key] = n > 0 ? json(sum / n) : json(nullptr);
  }
  out["verdict"] = worst ? json(VerdictStatusName(*worst)) : json(nullptr);
  return out;
}

json InterferenceRows(const json& alone, const json& together) {
  json rows = json::array();
  for (const FigureDef& f : ScenarioFigures()) {
    const json a = alone.is_object() ? alone.value(f.key, json(nullptr)) : json(nullptr);
    const json t = together.is_object() ? together.value(f.key, json(nullptr)) : json(nullptr);
    json delta = nullptr, direction = nullptr;
    if (a.is_number() && t.is_number() && a.get<double>() != 0) {
      const double d = (t.get<double>() - a.get<double>()) / std::fabs(a.get<double>()) * 100;
      delta = d;
      const bool up = f.higher_is_better ? d > 0 : d < 0;
      direction = std::fabs(d) <= kSameWithinPercent ? "same" : up ? "better" : "worse";
    }
    rows.push_back({{"figure", f.key}, {"alone", a}, {"together", t}, {"delta_percent", delta},
                    {"direction", direction}});
  }
  return rows;
}

namespace {

json RunJson(const MemberRun& r) {
  json j = {{"run", r.run},
            {"folder", r.folder},
            {"job_id", r.outcome.job_id},
            {"start_seconds", r.start_s},
            {"end_seconds", r.end_s},
            {"start_unix_ms", r.start_unix_ms},
            {"end_unix_ms", r.end_unix_ms},
            {"ok", r.outcome.ok},
            {"stopped_by_until", r.stopped_by_until},
            {"verdict", VerdictStatusName(r.outcome.ok ? r.outcome.verdict.status : VerdictStatus::kIncomplete)}};
  j.update(RunFigures(r.outcome));
  return j;
}

json SideJson(const std::vector<MemberRun>& runs) {
  json list = json::array();
  for (const MemberRun& r : runs) list.push_back(RunJson(r));
  return {{"runs", list}, {"figures", FiguresOf(runs)}};
}

}  // namespace

json ScenarioJson(const LoadedScenario& s, bool baseline, int64_t started_unix_ms,
                  const std::vector<std::vector<MemberRun>>& alone,
                  const std::vector<std::vector<MemberRun>>& together) {
  json members = json::array();
  for (size_t i = 0; i < s.spec.members.size(); ++i) {
    const ScenarioMember& m = s.spec.members[i];
    const json a = baseline && i < alone.size() ? SideJson(alone[i]) : json(nullptr);
    const json t = i < together.size() ? SideJson(together[i]) : SideJson({});
    members.push_back(
        {{"name", m.name},
         {"workload", m.workload.empty() ? json(nullptr) : json(m.workload)},
         {"job", s.jobs[i].path()},
         {"placement", {{"agents", m.placement.agents}, {"accelerators", m.placement.accelerators}}},
         {"start_seconds", m.start_s},
         {"repeat_every_seconds", m.repeats() ? json(m.repeat_every_s) : json(nullptr)},
         {"times", m.times > 0 ? json(m.times) : json(nullptr)},
         {"until", m.until.empty() ? json(nullptr) : json(m.until)},
         {"alone", a},
         {"together", t},
         {"interference", a.is_null() ? json(nullptr) : InterferenceRows(a["figures"], t["figures"])}});
  }
  return {{"scenario", s.spec.name},
          {"description", s.spec.description},
          {"source", s.spec.source},
          {"baseline", baseline},
          {"started_unix_ms", started_unix_ms},
          {"members", members}};
}

namespace {

std::string Cell(const json& v, double scale) {
  return v.is_number() ? absl::StrFormat("%.2f", v.get<double>() * scale) : std::string("n/m");
}

std::string VerdictOf(const json& side) {
  return side.is_object() && side["figures"]["verdict"].is_string() ? side["figures"]["verdict"].get<std::string>()
                                                                     : "-";
}

}  // namespace

std::string InterferenceTable(const json& scenario) {
  std::string s;
  for (const json& m : scenario["members"]) {
    const bool base = !m["interference"].is_null();
    const size_t runs = m["together"]["runs"].size();
    absl::StrAppend(&s, absl::StrFormat("%s (%d run%s together)\n", m["name"].get<std::string>(), runs,
                                        runs == 1 ? "" : "s"));
    if (!base) {
      absl::StrAppend(&s, absl::StrFormat("  %-14s %12s\n", "figure", "together"));
    } else {
      absl::StrAppend(&s, absl::StrFormat("  %-14s %12s %12s %10s %s\n", "figure", "alone", "together", "delta %",
                                          "direction"));
    }
    const json& tf = m["together"]["figures"];
    for (size_t i = 0; i < ScenarioFigures().size(); ++i) {
      const FigureDef& f = ScenarioFigures()[i];
      if (!base) {
        if (!tf[f.key].is_number()) continue;
        absl::StrAppend(&s, absl::StrFormat("  %-14s %12s\n", f.label, Cell(tf[f.key], f.table_scale)));
        continue;
      }
      const json& row = m["interference"][i];
      if (!row["alone"].is_number() && !row["together"].is_number()) continue;  // a figure this member never has
      absl::StrAppend(&s, absl::StrFormat("  %-14s %12s %12s %10s %s\n", f.label, Cell(row["alone"], f.table_scale),
                                          Cell(row["together"], f.table_scale), Cell(row["delta_percent"], 1),
                                          row["direction"].is_string() ? row["direction"].get<std::string>() : "n/m"));
    }
    absl::StrAppend(&s, base ? absl::StrFormat("  verdict: alone %s, together %s\n", VerdictOf(m["alone"]),
                                               VerdictOf(m["together"]))
                             : absl::StrFormat("  verdict: %s\n", VerdictOf(m["together"])));
  }
  return s;
}

}  // namespace dlio
