#include "mlperf/set_verdict.h"

#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/host_facts.h"
#include "client/render.h"
#include "mlperf/rules.h"
#include "mlperf/submission.h"
#include "results/results.h"

namespace dlio {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::optional<double> JsonNumber(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string PercentText(const std::optional<double>& v) {
  return v ? absl::StrFormat("%.2f %%", *v) : "not measured";
}
std::string GibPerSecondText(const std::optional<double>& v) {
  return v ? absl::StrFormat("%.3f GiB/s", *v) : "GiB/s not measured";
}
std::string SecondsText(const std::optional<double>& v) { return v ? absl::StrFormat("%.3f s", *v) : "n/m"; }
std::string SamplesPerSecondText(const std::optional<double>& v) {
  return v ? absl::StrFormat("%.2f samples/s", *v) : "samples/s not measured";
}

// Prints a ClassifyRun() JSON: the class, the reference, one line per differing key and per job-level problem.
void PrintClassification(const json& c, std::ostream& out) {
  if (!c.is_object()) return;
  out << "classification: " << c.value("class", "");
  if (c.value("reference", json(nullptr)).is_string()) {
    out << " (the effective workload against " << c["reference"].get<std::string>() << ": "
        << c.value("differences", json::array()).size() << " key(s) differ)";
  }
  out << "\n";
  for (const json& d : c.value("differences", json::array())) {
    out << absl::StrFormat("  %-8s %s=%s: %s\n", d.value("class", ""), d.value("key", ""), d.value("value", ""),
                           d.value("reason", ""));
  }
  for (const json& p : c.value("problems", json::array())) out << "  problem  " << p.get<std::string>() << "\n";
}

namespace {

std::string Verdict(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "NOT_MEASURED";
}

// The runs of a set's result file: each run's label, its folder relative to the result file's folder
// (<type>/<model>/), and for training its AU verdict against the threshold.
json ResultRuns(const json& score, double threshold, bool ckpt) {
  json runs = json::array();
  for (const json& r : score.value("runs", json::array())) {
    json e = r;
    const std::string role = r.value("role", "");
    const int k = r.value("run", 0);
    e["run"] = role == "warmup" ? std::string("warmup") : ckpt ? absl::StrCat("run-", k, " ", role)
                                                              : absl::StrCat("run-", k);
    e["warmup"] = role == "warmup";
    e["dir"] = fs::path(r.value("dir", ""))
                   .lexically_relative(fs::path(score.value("benchmark_type", "")) / score.value("model", ""))
                   .string();
    if (!ckpt) {
      const json au = r.value("au_percentage", json(nullptr));
      e["au_verdict"] = !au.is_number() ? "NOT_MEASURED" : au.get<double>() >= threshold * 100 ? "PASS" : "FAIL";
    }
    runs.push_back(e);
  }
  return runs;
}

// The first replication check of a training set (it has one: samples/s), or an empty object.
json FirstReplication(const json& score) {
  return score.value("replication", json::array()).empty() ? json::object() : score["replication"][0];
}

// What a set's score says, gathered once for its result file, its printed summary and its exit status.
struct SetVerdicts {
  std::vector<std::string> replication;  // one per figure (checkpointing: "write PASS", "read PASS")
  std::string au;                        // training: PASS, FAIL or NOT_MEASURED
  std::string division;                  // empty when the set is not an MLPerf workload
  json first_class;                      // the classification of the set's first timed run (an object), or null
  int status = kExitOk;
};

SetVerdicts JudgeSet(const json& score, bool ckpt) {
  SetVerdicts v;
  bool rep_fail = false, rep_nm = false;
  for (const json& r : score.value("replication", json::array())) {
    const std::string verdict = Verdict(r, "verdict");
    rep_fail |= verdict == "FAIL";
    rep_nm |= verdict == "NOT_MEASURED";
    const std::string figure = r.value("figure", "");
    v.replication.push_back(ckpt ? absl::StrCat(figure.substr(0, figure.find('_')), " ", verdict) : verdict);
  }
  v.division = score.value("division", json(nullptr)).is_string() ? score["division"].get<std::string>() : "";
  v.status = rep_fail || v.division == "INVALID" ? kExitBelowTarget : rep_nm ? kExitNotMeasured : kExitOk;
  if (!ckpt) {
    v.au = Verdict(score.value("au", json::object()), "verdict");
    if (v.au == "FAIL") v.status = kExitBelowTarget;
    if (v.au == "NOT_MEASURED" && v.status == kExitOk) v.status = kExitNotMeasured;
  }
  // The classification of the set's first timed run, under the set's division.
  for (const json& r : score.value("runs", json::array())) {
    if (r.value("role", "") == "warmup") continue;
    v.first_class = r.value("classification", json(nullptr));
    break;
  }
  if (v.first_class.is_object()) v.first_class["class"] = v.division;
  return v;
}

// The content of <type>/<model>/mlperf_result_<set>.json (the fields `dlio-coordinator report` renders).
json SetResult(const json& score, const SetVerdicts& v, double threshold, bool mlperf_workload, bool ckpt) {
  const json sc = score.value("score", json::object());
  json result = {{"benchmark_type", score.value("benchmark_type", "")},
                 {"model", score.value("model", "")},
                 {"run_datetime", score.value("set", "")},
                 {"runs", ResultRuns(score, threshold, ckpt)},
                 {"score", sc},
                 {"replication", score.value("replication", json::array())},
                 {"replication_tolerance", kReplicationTolerance},
                 {"tool", "dlio-cpp"},
                 {"version", ToolVersion()},
                 {"git_commit", ToolCommit()}};
  if (!ckpt) {
    const json au = score.value("au", json::object());
    const json rep = FirstReplication(score);
    result["mean_au_percentage"] = sc.value("au_percentage", json(nullptr));
    result["mean_throughput_samples_per_second"] = sc.value("throughput_samples_per_second", json(nullptr));
    result["au_threshold_percentage"] = threshold * 100;
    result["au_verdict"] = v.au;
    result["au_meets_threshold"] = v.au == "PASS";
    result["au_failed_runs"] = au.value("failed_runs", 0);
    result["replication_max_deviation"] = rep.value("max_deviation", json(nullptr));
    result["replicates"] = Verdict(rep, "verdict") == "PASS";
    result["replication_verdict"] = Verdict(rep, "verdict");
  }
  if (v.first_class.is_object()) {
    result["classification"] = v.first_class;
    result["required_num_files_train"] = v.first_class.value("required_num_files_train", 0);
  } else {
    const json classification = score.value("division", json(nullptr));
    result["classification"] = mlperf_workload || ckpt ? classification : json("not an MLPerf workload");
  }
  result["exit_status"] = v.status;
  return result;
}

// The set's figures as text: the means of the timed runs, the AU verdict (training) and the replication checks.
void PrintSetFigures(const json& score, const json& result, const SetVerdicts& v, double threshold, bool ckpt,
                     std::ostream& out) {
  const json sc = score.value("score", json::object());
  const int timed = score.value("timed_runs", 0);
  if (ckpt) {
    out << absl::StrFormat("mean of %d runs: write %s (%s per checkpoint), read %s (%s per checkpoint)\n", timed,
                           GibPerSecondText(JsonNumber(sc, "write_GiB_per_second")),
                           SecondsText(JsonNumber(sc, "write_duration_seconds")),
                           GibPerSecondText(JsonNumber(sc, "read_GiB_per_second")),
                           SecondsText(JsonNumber(sc, "read_duration_seconds")));
    for (const json& r : score.value("replication", json::array())) {
      const std::optional<double> dev = JsonNumber(r, "max_deviation");
      out << "replication of " << r.value("figure", "") << " (within 5 % of the mean): " << Verdict(r, "verdict")
          << (dev ? absl::StrFormat(" (max deviation %.2f %%)", *dev * 100) : std::string()) << "\n";
    }
    return;
  }
  const json rep = FirstReplication(score);
  out << absl::StrFormat("mean of %d runs: AU %s, throughput %s\n", timed, PercentText(JsonNumber(sc, "au_percentage")),
                         SamplesPerSecondText(JsonNumber(sc, "throughput_samples_per_second")));
  out << absl::StrFormat("AU threshold %.0f %%: %s (%d of %d runs below)\n", threshold * 100, v.au,
                         result.value("au_failed_runs", 0), timed);
  const std::optional<double> dev = JsonNumber(rep, "max_deviation");
  out << absl::StrFormat("replication (every run within %.0f %% of the mean): %s", kReplicationTolerance * 100,
                         Verdict(rep, "verdict"))
      << (dev ? absl::StrFormat(" (max deviation %.2f %%)", *dev * 100)
              : std::string(" (a run's samples/s was not measured)"))
      << "\n";
}

}  // namespace

int FinishMlperfSet(const json& score, const fs::path& model_dir, double threshold, bool mlperf_workload, bool text,
                    std::ostream& out, std::ostream& err) {
  const bool ckpt = score.value("benchmark_type", "") == kMlperfCheckpointing;
  const SetVerdicts v = JudgeSet(score, ckpt);
  const json result = SetResult(score, v, threshold, mlperf_workload, ckpt);
  std::error_code ec;
  fs::create_directories(model_dir, ec);
  const fs::path file = model_dir / absl::StrCat("mlperf_result_", score.value("set", ""), ".json");
  if (absl::Status s = WriteFileAtomic(file.string(), result.dump(2) + "\n"); !s.ok()) {
    err << s.message() << "\n";
    return 1;
  }
  if (!text) {
    json doc = result;
    doc["results_dir"] = model_dir.string();
    doc["result_file"] = file.string();
    out << doc.dump(2) << "\n";
    return v.status;
  }
  PrintSetFigures(score, result, v, threshold, ckpt, out);
  if (v.first_class.is_object()) {
    const int64_t required = v.first_class.value("required_num_files_train", int64_t{0});
    if (required > 0) out << "datasize for these hosts: " << required << " files\n";
    PrintClassification(v.first_class, out);
  }
  out << "results: " << file.string() << "\n";
  out << "verdict: MLPerf " << score.value("model", "") << ": "
      << (ckpt ? absl::StrCat("replication ", absl::StrJoin(v.replication, ", "))
               : absl::StrCat("AU ", v.au, ", replication ",
                              v.replication.empty() ? "NOT_MEASURED" : v.replication[0]))
      << ", " << (v.division.empty() ? "not an MLPerf workload" : v.division) << "\n";
  return v.status;
}

}  // namespace dlio
