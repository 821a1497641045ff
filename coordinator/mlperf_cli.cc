#include "coordinator/mlperf_cli.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/mlperf.h"
#include "common/results.h"
#include "common/workload_spec.h"
#include "nlohmann/json.hpp"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json Num(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string Human(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024 && u < 5) {
    b /= 1024;
    ++u;
  }
  return absl::StrFormat("%.2f %s", b, units[u]);
}

// The workload baseline: --workload, else the job's model.name. Null (and a message) if neither names one.
const MlperfWorkload* PickWorkload(const std::string& flag, const std::string& model, std::ostream& err) {
  const std::string name = !flag.empty() ? flag : model;
  const MlperfWorkload* w = FindMlperfWorkload(name);
  if (w == nullptr) {
    err << (flag.empty() ? "model.name" : "--workload") << ": '" << name
        << "' is not an MLPerf Storage training workload (unet3d, resnet50, cosmoflow)\n";
  }
  return w;
}

json LoadJsonFile(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// One job through SubmitAndWait with --json captured. `ok` = the job succeeded (whatever its verdict) and its
// figures were parsed; a figure its metric window left unmeasured is nullopt.
struct RunOutcome {
  int rc = 1;
  bool ok = false;
  std::string job_id;
  std::optional<double> au;
  std::optional<double> samples_per_second;
  json summary;  // the fetched summary.json when an output folder was given
};

std::optional<double> OptNum(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string Pct(const std::optional<double>& v) { return v ? absl::StrFormat("%.2f %%", *v) : "not measured"; }
std::string Rate(const std::optional<double>& v) {
  return v ? absl::StrFormat("%.2f samples/s", *v) : "samples/s not measured";
}

RunOutcome SubmitOne(const SubmitOptions& base, const std::vector<std::string>& extra, int accelerators_per_agent,
                     const std::string& output_dir, std::ostream& err, const std::atomic<bool>* cancel) {
  SubmitOptions o = base;
  o.client.json = true;
  o.detach = false;
  for (const std::string& e : extra) o.overrides.push_back(e);
  if (accelerators_per_agent > 0) o.accelerators_per_agent = accelerators_per_agent;
  o.output_dir = output_dir;
  std::ostringstream out;
  RunOutcome r;
  r.rc = SubmitAndWait(o, out, err, cancel);
  try {
    const json doc = json::parse(out.str());
    r.job_id = doc.value("job_id", "");
    if (doc.contains("mean")) {
      r.au = OptNum(doc["mean"], "au_percent");
      r.samples_per_second = OptNum(doc["mean"], "samples_per_second");
    }
    // A run that ran but missed its target (5) or could not measure its AU (6) is a run all the same.
    r.ok = doc.value("state", "") == "succeeded" && doc.contains("mean");
  } catch (const std::exception&) {
    r.ok = false;
  }
  if (r.ok && !output_dir.empty()) {
    std::error_code ec;
    if (fs::exists(fs::path(output_dir) / "summary.json", ec)) {
      try {
        r.summary = LoadJsonFile((fs::path(output_dir) / "summary.json").string());
      } catch (const std::exception&) {
      }
    }
  }
  return r;
}

std::string DateTimeStamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm {};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d_%H%M%S", &tm);
  return buf;
}

json ClassificationJson(const WorkloadClassification& wc) {
  const Classification& c = wc.classification;
  json keys = json::array();
  for (const OverrideVerdict& v : c.keys) {
    keys.push_back({{"key", v.key}, {"value", v.value}, {"class", MlperfClassName(v.cls)}, {"reason", v.reason}});
  }
  return {{"class", MlperfClassName(c.overall)},
          {"reference", wc.reference != nullptr ? json(wc.reference->file) : json(nullptr)},
          {"differences", keys},
          {"problems", c.problems}};
}

void PrintClassification(const WorkloadClassification& wc, std::ostream& out) {
  const Classification& c = wc.classification;
  out << "classification: " << MlperfClassName(c.overall);
  if (wc.reference != nullptr) {
    out << " (the effective workload against " << wc.reference->file << " as shipped: " << c.keys.size()
        << " key(s) differ)";
  }
  out << "\n";
  for (const OverrideVerdict& v : c.keys) {
    out << absl::StrFormat("  %-8s %s=%s: %s\n", MlperfClassName(v.cls), v.key, v.value, v.reason);
  }
  for (const std::string& p : c.problems) out << "  INVALID  " << p << "\n";
}

// Required files for the hosts a result ran on (summary.json: num_hosts, num_accelerators, host_memory_GB[]), or 0.
int64_t RequiredFilesFromSummary(const json& s, const MlperfWorkload& w) {
  if (!s.is_object() || !s.contains("host_memory_GB") || !s["host_memory_GB"].is_array()) return 0;
  const int64_t hosts = std::max<int64_t>(1, s.value("num_hosts", 1));
  const int64_t acc = std::max<int64_t>(1, s.value("num_accelerators", 1));
  double mem = 0;
  for (const auto& m : s["host_memory_GB"]) mem += m.get<double>();
  const double per_host = mem / static_cast<double>(std::max<size_t>(1, s["host_memory_GB"].size()));
  return ComputeDatasize({acc / hosts, hosts, per_host}, w).num_files_train;
}

}  // namespace

int MlperfDatasize(const DatasizeCliOptions& opt, std::ostream& out, std::ostream& err) {
  if (opt.accelerators < 1 || opt.hosts < 1 || !(opt.host_memory_gib > 0)) {
    err << (opt.accelerators < 1 ? "--accelerators: must be >= 1"
            : opt.hosts < 1      ? "--hosts: must be >= 1"
                                 : "--host-memory-gib: must be > 0")
        << "\n";
    return 2;
  }
  MlperfWorkload w;
  if (!opt.job_path.empty()) {
    std::vector<std::string> warnings;
    absl::StatusOr<WorkloadSpec> spec = LoadWorkloadFile(opt.job_path, opt.overrides, &warnings);
    if (!spec.ok()) {
      err << spec.status().message() << "\n";
      return 2;
    }
    const MlperfWorkload* base = FindMlperfWorkload(!opt.workload.empty() ? opt.workload : spec->model_name);
    w = base != nullptr ? *base : MlperfWorkload{};
    w.name = base != nullptr ? base->name : spec->model_name;
    w.batch_size = spec->batch_size;
    w.record_length_bytes = spec->record_length_bytes;
    w.num_samples_per_file = spec->num_samples_per_file;
  } else {
    if (opt.workload.empty()) {
      err << "mlperf datasize: give --workload (unet3d, resnet50, cosmoflow) or a job file\n";
      return 2;
    }
    const MlperfWorkload* base = PickWorkload(opt.workload, "", err);
    if (base == nullptr) return 2;
    w = *base;
  }
  const DatasizeResult d = ComputeDatasize({opt.accelerators, opt.hosts, opt.host_memory_gib}, w);
  if (opt.json) {
    out << json{{"workload", w.name},
                {"accelerators_per_host", opt.accelerators},
                {"hosts", opt.hosts},
                {"host_memory_GiB", opt.host_memory_gib},
                {"batch_size", w.batch_size},
                {"record_length_bytes", w.record_length_bytes},
                {"num_samples_per_file", w.num_samples_per_file},
                {"files_for_memory", d.files_for_memory},
                {"files_for_steps", d.files_for_steps},
                {"num_files_train", d.num_files_train},
                {"num_subfolders_train", d.num_subfolders_train},
                {"binding", d.binding},
                {"dataset_bytes", d.dataset_bytes},
                {"steps_per_epoch", d.steps_per_epoch},
                {"override", d.override_line}}
               .dump(2)
        << "\n";
    return 0;
  }
  out << absl::StrFormat("datasize for %s: %d accelerators per host x %d host(s), %.4g GiB per host\n", w.name,
                         opt.accelerators, opt.hosts, opt.host_memory_gib);
  out << absl::StrFormat("  files for 5x the hosts' RAM (%s): %d\n",
                         Human(5 * opt.host_memory_gib * opt.hosts * 1024.0 * 1024 * 1024), d.files_for_memory);
  out << absl::StrFormat("  files for 500 steps per accelerator (batch %d): %d\n", w.batch_size, d.files_for_steps);
  out << absl::StrFormat("  num_files_train: %d (set by the %s rule), %s, %d steps per epoch\n", d.num_files_train,
                         d.binding == "memory" ? "5x RAM" : "500-step", Human(d.dataset_bytes), d.steps_per_epoch);
  if (d.num_subfolders_train > 0) {
    out << absl::StrFormat("  num_subfolders_train: %d (above %d files)\n", d.num_subfolders_train,
                           kMlperfFilesPerSubfolder);
  }
  out << "override: " << d.override_line << "\n";
  return 0;
}

int MlperfClassify(const ClassifyCliOptions& opt, std::ostream& out, std::ostream& err) {
  absl::StatusOr<WorkloadSpec> spec = LoadWorkloadFile(opt.job_path, opt.overrides);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return kExitBadInput;
  }
  const MlperfWorkload* w = PickWorkload(opt.workload, spec->model_name, err);
  if (w == nullptr) return kExitBadInput;
  int64_t required = 0;
  if (opt.accelerators > 0 && opt.host_memory_gib > 0) {
    required = ComputeDatasize({opt.accelerators, std::max<int64_t>(1, opt.hosts), opt.host_memory_gib}, *w)
                   .num_files_train;
  }
  absl::StatusOr<WorkloadClassification> c =
      ClassifyWorkload(*w, *spec, opt.accelerator_type, opt.job_path, required);
  if (!c.ok()) {
    err << c.status().message() << "\n";
    return kExitBadInput;
  }
  if (opt.json) {
    json j = ClassificationJson(*c);
    j["workload"] = w->name;
    if (required > 0) j["required_num_files_train"] = required;
    out << j.dump(2) << "\n";
  } else {
    out << "workload: " << w->name << (required > 0 ? absl::StrCat(" (datasize requires ", required, " files)") : "")
        << "\n";
    PrintClassification(*c, out);
  }
  return c->classification.overall == MlperfClass::kInvalid ? kExitBelowTarget : kExitOk;
}

int RunMlperf(const SubmitOptions& base, const MlperfRunOptions& opt, std::ostream& out, std::ostream& err,
              const std::atomic<bool>* cancel) {
  absl::StatusOr<WorkloadSpec> spec = LoadWorkloadFile(base.job_path, base.overrides);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return 2;
  }
  const MlperfWorkload* w = FindMlperfWorkload(spec->model_name);
  const double threshold = w != nullptr ? w->au_threshold : spec->au_threshold;
  const std::string model = w != nullptr ? w->name : spec->model_name;
  const std::string stamp = DateTimeStamp();
  const fs::path root = fs::path(opt.results_dir) / "training" / model / "run" / stamp;
  const bool text = !base.client.json;
  if (text) {
    out << "MLPerf mode: " << (opt.warmup ? "a warm-up run, then " : "") << opt.runs << " runs of "
        << base.job_path << " (" << model << ", AU threshold " << threshold * 100 << " %"
        << (w == nullptr ? ", from metric.au: not an MLPerf workload" : "") << "); results in " << root.string()
        << "\n"
        << std::flush;
  }

  json runs = json::array();
  std::vector<RunFigures> figures;
  json first_summary;
  const int first = opt.warmup ? 0 : 1;
  for (int k = first; k <= opt.runs; ++k) {
    if (cancel != nullptr && *cancel) return 130;
    const std::string label = k == 0 ? "warmup" : absl::StrCat("run-", k);
    const int64_t seed = spec->seed + k;
    std::vector<std::string> extra = {absl::StrCat("train.seed=", seed)};
    // Generate (when asked) in the first submission only: the runs measure reading.
    if (spec->generate_data && k != first) extra.push_back("workflow.generate_data=False");
    const fs::path dir = root / label;
    RunOutcome r = SubmitOne(base, extra, 0, dir.string(), err, cancel);
    if (!r.ok) {
      err << "MLPerf mode: " << label << " did not succeed" << (r.job_id.empty() ? "" : " (job " + r.job_id + ")")
          << "; stopping\n";
      return r.rc != 0 ? r.rc : 1;
    }
    if (first_summary.is_null()) first_summary = r.summary;
    // MLPerf's per-run files beside ours: dlio_config/ (the normalised job and the overrides) and the metadata.
    std::vector<std::string> all = base.overrides;
    all.insert(all.end(), extra.begin(), extra.end());
    absl::StatusOr<WorkloadSpec> run_spec = LoadWorkloadFile(base.job_path, all);
    std::error_code ec;
    fs::create_directories(dir / "dlio_config", ec);
    if (run_spec.ok()) (void)WriteFileAtomic((dir / "dlio_config" / "config.yaml").string(), ToYaml(*run_spec));
    std::string ov_yaml;
    for (const std::string& o : all) ov_yaml += "- " + o + "\n";
    (void)WriteFileAtomic((dir / "dlio_config" / "overrides.yaml").string(), ov_yaml.empty() ? "[]\n" : ov_yaml);
    const json meta = {{"benchmark_type", "training"},
                       {"model", model},
                       {"command", "run"},
                       {"run_datetime", stamp},
                       {"run", label},
                       {"warmup", k == 0},
                       {"seed", seed},
                       {"job_id", r.job_id},
                       {"overrides", all},
                       {"au_percentage", Num(r.au)},
                       {"throughput_samples_per_second", Num(r.samples_per_second)},
                       {"au_threshold_percentage", threshold * 100},
                       {"tool", "dlio-cpp"},
                       {"version", ToolVersion()},
                       {"git_commit", ToolCommit()}};
    (void)WriteFileAtomic((dir / absl::StrCat(model, "_", stamp, "_metadata.json")).string(), meta.dump(2) + "\n");
    const bool run_pass = r.au && *r.au >= threshold * 100;
    runs.push_back({{"run", label},
                    {"seed", seed},
                    {"job_id", r.job_id},
                    {"au_percentage", Num(r.au)},
                    {"throughput_samples_per_second", Num(r.samples_per_second)},
                    {"au_verdict", !r.au ? "NOT_MEASURED" : run_pass ? "PASS" : "FAIL"},
                    {"warmup", k == 0}});
    if (k > 0) figures.push_back({r.au, r.samples_per_second});
    if (text) {
      out << absl::StrFormat("%-8s seed %d: AU %s, %s (job %s): %s\n", label, seed, Pct(r.au),
                             Rate(r.samples_per_second), r.job_id,
                             k == 0 ? "warm-up, not judged" : !r.au ? "NOT_MEASURED" : run_pass ? "PASS" : "FAIL")
          << std::flush;
    }
  }

  const RunsVerdict v = JudgeRuns(figures, threshold);
  const int64_t required = w != nullptr ? RequiredFilesFromSummary(first_summary, *w) : 0;
  std::optional<WorkloadClassification> c;
  if (w != nullptr) {
    absl::StatusOr<WorkloadClassification> wc = ClassifyWorkload(*w, *spec, "", base.job_path, required);
    if (wc.ok()) c = *wc;
  }
  const std::string au_verdict = !v.au_mean ? "NOT_MEASURED" : v.au_pass ? "PASS" : "FAIL";
  const std::string replication = !v.max_deviation ? "NOT_MEASURED" : v.replicates ? "PASS" : "FAIL";
  const bool invalid = c && c->classification.overall == MlperfClass::kInvalid;
  const int status = (v.au_mean && !v.au_pass) || (v.max_deviation && !v.replicates) || invalid ? kExitBelowTarget
                     : !v.au_mean || !v.max_deviation                                            ? kExitNotMeasured
                                                                                                 : kExitOk;
  const json result = {
      {"model", model},
      {"run_datetime", stamp},
      {"runs", runs},
      {"mean_au_percentage", Num(v.au_mean)},
      {"mean_throughput_samples_per_second", Num(v.throughput_mean)},
      {"au_threshold_percentage", threshold * 100},
      {"au_meets_threshold", v.au_pass},
      {"au_verdict", au_verdict},
      {"au_failed_runs", v.au_failed_runs},
      {"replication_max_deviation", Num(v.max_deviation)},
      {"replication_tolerance", kReplicationTolerance},
      {"replicates", v.replicates},
      {"replication_verdict", replication},
      {"required_num_files_train", required},
      {"classification", c ? ClassificationJson(*c) : json("not an MLPerf workload")},
      {"exit_status", status},
      {"tool", "dlio-cpp"},
      {"version", ToolVersion()},
      {"git_commit", ToolCommit()}};
  std::error_code ec;
  fs::create_directories(root, ec);
  if (absl::Status s = WriteFileAtomic((root / "mlperf_result.json").string(), result.dump(2) + "\n"); !s.ok()) {
    err << s.message() << "\n";
    return 1;
  }
  if (!text) {
    json doc = result;
    doc["results_dir"] = root.string();
    out << doc.dump(2) << "\n";
    return status;
  }
  out << absl::StrFormat("mean of %d runs: AU %s, throughput %s\n", figures.size(), Pct(v.au_mean),
                         Rate(v.throughput_mean));
  out << absl::StrFormat("AU threshold %.0f %%: %s (%d of %d runs below)\n", threshold * 100, au_verdict,
                         v.au_failed_runs, figures.size());
  out << absl::StrFormat("replication (every run within %.0f %% of the mean): %s", kReplicationTolerance * 100,
                         replication)
      << (v.max_deviation ? absl::StrFormat(" (max deviation %.2f %%)", *v.max_deviation * 100)
                          : std::string(" (a run's samples/s was not measured)"))
      << "\n";
  if (c) {
    if (required > 0) out << "datasize for these hosts: " << required << " files\n";
    PrintClassification(*c, out);
  }
  out << "results: " << root.string() << "\n";
  out << "verdict: MLPerf " << model << ": AU " << au_verdict << ", replication " << replication << ", "
      << (c ? MlperfClassName(c->classification.overall) : "not an MLPerf workload") << "\n";
  return status;
}

int FindMaxAccelerators(const SubmitOptions& base, const FindMaxOptions& opt, std::ostream& out, std::ostream& err,
                        const std::atomic<bool>* cancel) {
  absl::StatusOr<WorkloadSpec> spec = LoadWorkloadFile(base.job_path, base.overrides);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return 2;
  }
  if (opt.max_accelerators < 1) {
    err << "--max-accelerators: must be >= 1\n";
    return 2;
  }
  const MlperfWorkload* w = FindMlperfWorkload(spec->model_name);
  const double threshold = w != nullptr ? w->au_threshold : spec->au_threshold;
  const bool text = !base.client.json;
  if (text) {
    out << "searching the largest accelerators per agent (1.." << opt.max_accelerators << ") with AU >= "
        << threshold * 100 << " %" << (w == nullptr ? " (metric.au)" : absl::StrCat(" (", w->name, ")")) << "\n"
        << std::flush;
  }
  json trials = json::array();
  bool generated = false;
  int trial_no = 0;
  // Returns 1 pass, 0 fail, -1 error (rc in *rc).
  auto trial = [&](int n, int* rc) -> int {
    std::vector<std::string> extra;
    if (spec->generate_data && generated) extra.push_back("workflow.generate_data=False");
    RunOutcome r = SubmitOne(base, extra, n, "", err, cancel);
    if (!r.ok) {
      *rc = r.rc != 0 ? r.rc : 1;
      err << "trial with " << n << " accelerators per agent did not succeed"
          << (r.job_id.empty() ? "" : " (job " + r.job_id + ")") << "\n";
      return -1;
    }
    generated = true;
    // A trial whose AU could not be measured does not pass: the search never claims what it did not see.
    const bool pass = r.au && *r.au >= threshold * 100;
    ++trial_no;
    trials.push_back({{"trial", trial_no}, {"accelerators_per_agent", n}, {"au_percentage", Num(r.au)},
                      {"throughput_samples_per_second", Num(r.samples_per_second)}, {"pass", pass},
                      {"job_id", r.job_id}});
    if (text) {
      out << absl::StrFormat("trial %d: %d accelerators per agent: AU %s, %s: %s\n", trial_no, n, Pct(r.au),
                             Rate(r.samples_per_second), pass ? "pass" : r.au ? "fail" : "fail (AU not measured)")
          << std::flush;
    }
    return pass ? 1 : 0;
  };
  int rc = 0;
  int lo = 0;                           // largest passing count so far
  int hi = opt.max_accelerators + 1;    // smallest failing count so far
  // Exponential phase: 1, 2, 4, ... up to the bound (the bound itself is tried when the doubling overshoots it).
  for (int n = 1; n < hi;) {
    if (cancel != nullptr && *cancel) return 130;
    const int t = trial(n, &rc);
    if (t < 0) return rc;
    if (t == 1) {
      lo = n;
      if (n == opt.max_accelerators) break;
      n = std::min(n * 2, opt.max_accelerators);
    } else {
      hi = n;
    }
  }
  // Binary phase between the last pass and the first failure.
  while (hi - lo > 1 && hi <= opt.max_accelerators) {
    if (cancel != nullptr && *cancel) return 130;
    const int mid = lo + (hi - lo) / 2;
    const int t = trial(mid, &rc);
    if (t < 0) return rc;
    (t == 1 ? lo : hi) = mid;
  }
  const bool at_bound = lo == opt.max_accelerators;
  const int status = lo > 0 ? kExitOk : kExitBelowTarget;
  if (!text) {
    out << json{{"au_threshold_percentage", threshold * 100},
                {"trials", trials},
                {"max_accelerators_per_agent", lo},
                {"search_bound", opt.max_accelerators},
                {"bound_reached", at_bound},
                {"exit_status", status}}
               .dump(2)
        << "\n";
    return status;
  }
  if (lo == 0) {
    out << "no accelerator count keeps AU >= " << threshold * 100 << " % (1 accelerator per agent fails)\n";
  } else {
    out << "maximum accelerators per agent with AU >= " << threshold * 100 << " %: " << lo
        << (at_bound ? " (the search's upper bound: raise --max-accelerators to look further)" : "") << "\n";
  }
  return status;
}

}  // namespace dlio
