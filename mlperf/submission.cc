// The run folder files the MLPerf drivers write, a run's figures and class, and the reference set (submission.h);
// `mlperf report` is packaging.cc, `mlperf check` checker.cc.
#include "mlperf/submission.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/host_facts.h"
#include "base/mutex.h"
#include "mlperf/submission_tree.h"
#include "results/results.h"
#include "yaml-cpp/yaml.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using submission::HostsOf;
using submission::OptNum;
using submission::RequiredFiles;
using submission::RunShape;
using submission::ShapeOf;

// A YAML scalar as JSON: booleans (YAML 1.1 and Python spellings), integers, numbers, null, else a string.
json ScalarJson(const std::string& s) {
  const std::string l = absl::AsciiStrToLower(s);
  if (l == "true") return true;
  if (l == "false") return false;
  if (l == "~" || l == "null" || s.empty()) return nullptr;
  int64_t i = 0;
  if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i); ec == std::errc() && p == s.data() + s.size()) {
    return i;
  }
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size()) return d;
  return s;
}
json YamlJson(const YAML::Node& n) {
  if (n.IsMap()) {
    json j = json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = YamlJson(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    json j = json::array();
    for (const auto& e : n) j.push_back(YamlJson(e));
    return j;
  }
  if (n.IsScalar()) return ScalarJson(n.Scalar());
  return nullptr;
}

std::string FormatStamp(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d_%H%M%S", &tm);
  return buf;
}

// "++workload.KEY=VALUE", the form mlpstorage reads from overrides.yaml.
std::string HydraOverride(const std::string& ov) {
  std::string k, v;
  return SplitOverride(ov, &k, &v) ? absl::StrCat("++workload.", k, "=", v) : ov;
}

// The newest stamp NextRunStamp handed out, so two runs started within one second (by any thread) get two folders.
Mutex stamp_mu;
std::time_t last_stamp ABSL_GUARDED_BY(stamp_mu) = 0;

}  // namespace

std::string NextRunStamp(const fs::path& parent) {
  MutexLock lk(&stamp_mu);
  std::time_t t = std::max(std::time(nullptr), last_stamp + 1);
  std::error_code ec;
  while (fs::exists(parent / FormatStamp(t), ec)) ++t;
  last_stamp = t;
  return FormatStamp(t);
}

std::string BenchmarkTypeOf(const WorkloadSpec& spec) {
  return FindMlperfCheckpointWorkload(spec.model_name) != nullptr ? kMlperfCheckpointing : kMlperfTraining;
}

std::string MlperfModelName(const WorkloadSpec& spec) {
  if (const MlperfCheckpointWorkload* c = FindMlperfCheckpointWorkload(spec.model_name)) return c->name;
  if (const MlperfWorkload* w = FindAnyMlperfWorkload(spec.model_name, kDefaultMlperfVersion)) return w->name;
  return spec.model_name;
}

const MlperfWorkload* FindAnyMlperfWorkload(std::string_view name, MlperfVersion version) {
  if (const MlperfWorkload* w = FindMlperfWorkload(name, version)) return w;
  return FindMlperfWorkload(name, version == MlperfVersion::kV3_0 ? MlperfVersion::kV2_0 : MlperfVersion::kV3_0);
}

absl::Status WriteRunFolderFiles(const fs::path& dir, const WorkloadSpec& spec, const RunFolderMeta& m,
                                 const json& summary) {
  std::error_code ec;
  fs::create_directories(dir / "dlio_config", ec);
  if (ec) return absl::InternalError(absl::StrCat(dir.string(), ": ", ec.message()));
  // Hydra's config.yaml holds the workload under `workload:`; ours is the normalised job (every key).
  const std::string yaml = ToYaml(spec);
  std::string config = "workload:\n";
  for (absl::string_view line : absl::StrSplit(yaml, '\n')) {
    if (!line.empty() && line[0] != '#') absl::StrAppend(&config, "  ", line, "\n");
  }
  if (absl::Status s = WriteFileAtomic((dir / "dlio_config" / "config.yaml").string(), config); !s.ok()) return s;
  std::string ov_yaml;
  json params_dict = json::object();
  for (const std::string& o : m.overrides) {
    absl::StrAppend(&ov_yaml, "- ", json(HydraOverride(o)).dump(), "\n");
    std::string k, v;
    if (SplitOverride(o, &k, &v)) params_dict[k] = v;
  }
  if (absl::Status s = WriteFileAtomic((dir / "dlio_config" / "overrides.yaml").string(),
                                       ov_yaml.empty() ? "[]\n" : ov_yaml);
      !s.ok()) {
    return s;
  }
  json params;
  try {
    params = YamlJson(YAML::Load(yaml));
  } catch (const std::exception&) {
    params = json::object();
  }
  const json s = summary.is_object() ? summary : json::object();
  const json mem = s.value("host_memory_GB", json::array());
  const std::string cls = m.classification.is_object() ? m.classification.value("class", "") : "";
  json meta = {
      {"benchmark_type", m.benchmark_type},
      {"model", m.model},
      {"command", m.command},
      {"run_datetime", m.datetime},
      {"num_processes", s.value("num_accelerators", 0)},
      {"accelerator", m.accelerator.empty() ? json(nullptr) : json(m.accelerator)},
      {"parameters", params},
      {"combined_params", params},
      {"override_parameters", params_dict},
      {"params_dict", params_dict},
      {"verification", cls.empty() ? json(nullptr) : json(absl::AsciiStrToLower(cls))},
      {"mlperf_version", MlperfVersionName(m.version)},
      {"args",
       {{"model", m.model},
        {"command", m.command},
        {"num_processes", s.value("num_accelerators", 0)},
        {"num_client_hosts", s.value("num_hosts", 0)},
        {"client_host_memory_in_gb", mem.empty() ? json(nullptr) : mem[0]},
        {"hosts", HostsOf(s)},
        {"data_dir", spec.data_folder},
        {"checkpoint_folder", spec.checkpoint_folder},
        {"results_dir", dir.parent_path().string()}}},
      {"dlio_cpp",
       {{"set", m.set},
        {"role", m.role},
        {"run", m.index},
        {"seed", m.seed},
        {"job_id", m.job_id},
        {"overrides", m.overrides},
        {"classification", m.classification},
        {"references", m.references},
        {"tool", "dlio-cpp"},
        {"version", ToolVersion()},
        {"git_commit", ToolCommit()}}}};
  return WriteFileAtomic((dir / absl::StrCat(m.model, "_", m.datetime, "_metadata.json")).string(),
                         meta.dump(2) + "\n");
}

MlperfFigures FiguresOfSummary(const json& summary) {
  MlperfFigures f;
  if (!summary.is_object()) return f;
  const json metric = summary.value("metric", json::object());
  f.au_percent = OptNum(metric, "train_au_mean_percentage");
  f.samples_per_second = OptNum(metric, "train_throughput_mean_samples_per_second");
  f.io_mib_per_second = OptNum(metric, "train_io_mean_MB_per_second");
  f.write_gib_per_second = OptNum(metric, "save_checkpoint_mlperf_io_mean_GB_per_second");
  f.write_duration_s = OptNum(metric, "save_checkpoint_mlperf_duration_mean_seconds");
  f.read_gib_per_second = OptNum(metric, "load_checkpoint_mlperf_io_mean_GB_per_second");
  f.read_duration_s = OptNum(metric, "load_checkpoint_mlperf_duration_mean_seconds");
  for (const json& c : summary.value("dlio_ext", json::object()).value("checkpoints", json::array())) {
    (c.value("operation", "") == "load" ? f.reads : f.writes) += 1;
  }
  return f;
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

absl::StatusOr<json> ClassifyRun(const WorkloadSpec& spec, const json& summary, const std::string& accelerator,
                                 const std::vector<MlperfReference>* refs, MlperfVersion version) {
  if (const MlperfCheckpointWorkload* c = FindMlperfCheckpointWorkload(spec.model_name)) {
    const RunShape sh = ShapeOf(summary);
    absl::StatusOr<WorkloadClassification> wc =
        ClassifyCheckpointWorkload(*c, spec, sh.world, sh.hosts, refs, version);
    if (!wc.ok()) return wc.status();
    return ClassificationJson(*wc);
  }
  if (const MlperfWorkload* w = FindMlperfWorkload(spec.model_name, version)) {
    const int64_t required = RequiredFiles(spec, summary, version);
    MlperfV3Options v3;
    v3.accelerator = accelerator;
    absl::StatusOr<WorkloadClassification> wc = ClassifyWorkload(*w, spec, accelerator, "", required, refs, version, v3);
    if (!wc.ok()) return wc.status();
    json j = ClassificationJson(*wc);
    j["accelerator"] = wc->reference != nullptr ? wc->reference->accelerator : "";
    j["required_num_files_train"] = required;
    return j;
  }
  return json(nullptr);
}

absl::StatusOr<MlperfReferenceSet> MlperfReferenceSet::Load(const std::string& dir, MlperfVersion version) {
  MlperfReferenceSet r;
  if (dir.empty()) return r;
  absl::StatusOr<std::vector<MlperfReference>> v = LoadMlperfReferences(dir, version);
  if (!v.ok()) return v.status();
  r.custom = *v;
  r.use_custom = true;
  r.label = dir;
  return r;
}

}  // namespace dlio
