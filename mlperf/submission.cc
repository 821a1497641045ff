#include "mlperf/submission.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/mutex.h"
#include "results/results.h"
#include "client/client.h"
#include "yaml-cpp/yaml.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json Num(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
std::optional<double> OptNum(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}
// MLPerf publishes results rounded to two decimals (Submission_guidelines.md §6.4).
json Published(const std::optional<double>& v) {
  return v ? json(std::round(*v * 100.0) / 100.0) : json(nullptr);
}
std::string Fmt(const std::optional<double>& v, const char* unit) {
  return v ? absl::StrFormat("%.2f %s", *v, unit) : std::string("not measured");
}

absl::StatusOr<json> ReadJsonFile(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return absl::NotFoundError("missing");
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not valid JSON: ", e.what()));
  }
}
std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

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

// The distinct node names a job ran on (summary.json dlio_ext.agents[].hostname), sorted.
std::vector<std::string> HostsOf(const json& summary) {
  std::set<std::string> hosts;
  if (summary.is_object() && summary.contains("dlio_ext")) {
    for (const json& a : summary["dlio_ext"].value("agents", json::array())) hosts.insert(a.value("hostname", ""));
  }
  return {hosts.begin(), hosts.end()};
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
  if (const MlperfWorkload* w = FindMlperfWorkload(spec.model_name)) return w->name;
  return spec.model_name;
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

namespace {

// Per-host memory and the shape of a run, from its summary.json.
struct RunShape {
  int64_t world = 0, hosts = 0;
  double memory_gib_per_host = 0;  // the mean over hosts: their sum is what datasize uses
};
RunShape ShapeOf(const json& summary) {
  RunShape r;
  if (!summary.is_object()) return r;
  r.world = summary.value("num_accelerators", 0);
  r.hosts = summary.value("num_hosts", 0);
  double mem = 0;
  const json m = summary.value("host_memory_GB", json::array());
  for (const json& x : m) mem += x.is_number() ? x.get<double>() : 0;
  if (!m.empty()) r.memory_gib_per_host = mem / static_cast<double>(m.size());
  return r;
}

// datasize's count for the hosts a training run ran on; 0 when unknown.
int64_t RequiredFiles(const WorkloadSpec& spec, const json& summary) {
  const MlperfWorkload* base = FindMlperfWorkload(spec.model_name);
  const RunShape sh = ShapeOf(summary);
  if (base == nullptr || sh.hosts < 1 || sh.world < 1 || !(sh.memory_gib_per_host > 0)) return 0;
  MlperfWorkload w = *base;
  w.batch_size = spec.batch_size;
  w.record_length_bytes = spec.record_length_bytes;
  w.num_samples_per_file = spec.num_samples_per_file;
  return ComputeDatasize({sh.world / sh.hosts, sh.hosts, sh.memory_gib_per_host}, w).num_files_train;
}

}  // namespace

absl::StatusOr<json> ClassifyRun(const WorkloadSpec& spec, const json& summary, const std::string& accelerator,
                                 const std::vector<MlperfReference>* refs) {
  if (const MlperfCheckpointWorkload* c = FindMlperfCheckpointWorkload(spec.model_name)) {
    const RunShape sh = ShapeOf(summary);
    absl::StatusOr<WorkloadClassification> wc = ClassifyCheckpointWorkload(*c, spec, sh.world, sh.hosts, refs);
    if (!wc.ok()) return wc.status();
    return ClassificationJson(*wc);
  }
  if (const MlperfWorkload* w = FindMlperfWorkload(spec.model_name)) {
    const int64_t required = RequiredFiles(spec, summary);
    absl::StatusOr<WorkloadClassification> wc = ClassifyWorkload(*w, spec, accelerator, "", required, refs);
    if (!wc.ok()) return wc.status();
    json j = ClassificationJson(*wc);
    j["accelerator"] = wc->reference != nullptr ? wc->reference->accelerator : "";
    j["required_num_files_train"] = required;
    return j;
  }
  return json(nullptr);
}

namespace {

// ---- the tree ----------------------------------------------------------------------------------------------------

// One line of `mlperf check`: the file (relative to the root), the rule, what is wrong.
struct Finding {
  std::string file;
  std::string rule;
  std::string message;
};

struct Run {
  fs::path dir;          // relative to the root
  fs::path meta_file;    // relative to the root
  json meta, summary;    // summary: null when missing or unreadable
  std::string type, model, command, datetime, set, role;
  int index = 0;
  std::optional<WorkloadSpec> spec;  // dlio_config/config.yaml, when it loads
  MlperfFigures fig;
};

struct Tree {
  fs::path root;
  std::vector<Run> runs;
  std::vector<Finding> load_problems;
};

// Every folder holding a *_metadata.json (reportgen's criterion), in path order.
Tree LoadTree(const fs::path& root) {
  Tree t;
  t.root = root;
  std::error_code ec;
  std::vector<fs::path> metas;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file() && absl::EndsWith(name, "_metadata.json")) metas.push_back(it->path());
  }
  std::sort(metas.begin(), metas.end());
  for (const fs::path& mp : metas) {
    Run r;
    r.dir = fs::relative(mp.parent_path(), root);
    r.meta_file = fs::relative(mp, root);
    absl::StatusOr<json> meta = ReadJsonFile(mp);
    if (!meta.ok() || !meta->is_object()) {
      t.load_problems.push_back({r.meta_file.string(), "required files",
                                 meta.ok() ? "not a JSON object" : std::string(meta.status().message())});
      continue;
    }
    r.meta = *meta;
    r.type = r.meta.value("benchmark_type", "");
    r.model = r.meta.value("model", "");
    r.command = r.meta.value("command", "");
    r.datetime = r.meta.value("run_datetime", "");
    const json ours = r.meta.value("dlio_cpp", json::object());
    r.set = ours.value("set", "");
    r.role = ours.value("role", "");
    r.index = ours.value("run", 0);
    if (absl::StatusOr<json> s = ReadJsonFile(mp.parent_path() / "summary.json"); s.ok()) r.summary = *s;
    const fs::path cfg = mp.parent_path() / "dlio_config" / "config.yaml";
    if (fs::exists(cfg, ec)) {
      absl::StatusOr<WorkloadSpec> spec = LoadWorkload(ReadText(cfg), {}, cfg.string());
      if (spec.ok()) r.spec = *spec;
    }
    r.fig = FiguresOfSummary(r.summary);
    t.runs.push_back(std::move(r));
  }
  return t;
}

// One workload's set of runs (one --mlperf invocation).
struct Set {
  std::string type, model, set;
  std::vector<const Run*> runs;  // in folder order
};

// (type, model) -> sets, oldest first; datagen folders apart.
struct Workload {
  std::string type, model;
  std::vector<Set> sets;
  std::vector<const Run*> datagen;
};

std::vector<Workload> Group(const Tree& t) {
  std::map<std::pair<std::string, std::string>, Workload> by;
  for (const Run& r : t.runs) {
    Workload& w = by[{r.type, r.model}];
    w.type = r.type;
    w.model = r.model;
    if (r.command == "datagen") {
      w.datagen.push_back(&r);
      continue;
    }
    auto it = std::find_if(w.sets.begin(), w.sets.end(), [&](const Set& s) { return s.set == r.set; });
    if (it == w.sets.end()) {
      w.sets.push_back({r.type, r.model, r.set, {}});
      it = w.sets.end() - 1;
    }
    it->runs.push_back(&r);
  }
  std::vector<Workload> out;
  for (auto& [k, w] : by) {
    std::sort(w.sets.begin(), w.sets.end(), [](const Set& a, const Set& b) { return a.set < b.set; });
    out.push_back(std::move(w));
  }
  return out;
}

const Run* FindRole(const Set& s, const std::string& role, int index) {
  for (const Run* r : s.runs) {
    if (r->role == role && r->index == index) return r;
  }
  return nullptr;
}
int MaxIndex(const Set& s) {
  int n = 0;
  for (const Run* r : s.runs) n = std::max(n, r->index);
  return n;
}

// ---- scores ------------------------------------------------------------------------------------------------------

struct Classified {
  std::string cls;  // CLOSED, OPEN, INVALID; empty when not an MLPerf workload or not classifiable
  json detail;
  std::string error;
};
Classified ClassifyOne(const Run& r, const std::vector<MlperfReference>* refs) {
  Classified c;
  if (!r.spec) {
    c.error = "dlio_config/config.yaml is missing or does not load";
    return c;
  }
  const json acc = r.meta.value("accelerator", json(nullptr));
  absl::StatusOr<json> j = ClassifyRun(*r.spec, r.summary, acc.is_string() ? acc.get<std::string>() : "", refs);
  if (!j.ok()) {
    c.error = std::string(j.status().message());
    return c;
  }
  c.detail = *j;
  if (j->is_object()) c.cls = j->value("class", "");
  return c;
}

std::string Worst(const std::string& a, const std::string& b) {
  auto rank = [](const std::string& x) { return x == "INVALID" ? 2 : x == "OPEN" ? 1 : x == "CLOSED" ? 0 : 3; };
  return rank(a) >= rank(b) ? a : b;
}

json RunEntry(const Run& r) {
  json e = {{"dir", r.dir.string()}, {"role", r.role}, {"run", r.index}};
  if (r.type == kMlperfCheckpointing) {
    e["GiB_per_second"] = Num(r.role == "read" ? r.fig.read_gib_per_second : r.fig.write_gib_per_second);
    e["duration_seconds"] = Num(r.role == "read" ? r.fig.read_duration_s : r.fig.write_duration_s);
    e["checkpoints"] = r.role == "read" ? r.fig.reads : r.fig.writes;
  } else {
    e["au_percentage"] = Num(r.fig.au_percent);
    e["throughput_samples_per_second"] = Num(r.fig.samples_per_second);
    e["io_MiB_per_second"] = Num(r.fig.io_mib_per_second);
  }
  return e;
}

json ReplicationJson(const std::string& figure, const ReplicationVerdict& v) {
  return {{"figure", figure},
          {"mean", Num(v.mean)},
          {"max_deviation", Num(v.max_deviation)},
          {"tolerance", kReplicationTolerance},
          {"verdict", !v.max_deviation ? "NOT_MEASURED" : v.replicates ? "PASS" : "FAIL"}};
}

// Per-host and per-rank checkpoint figures of the write or read folders of a set: from each <rank>_per_epoch_stats
// .json ("bytes" is the rank's own share, "duration" its time) and summary.json's agents (which ranks run where).
// A host's figure per checkpoint: its ranks' bytes over the longest of their durations; all averaged over the
// checkpoints of every run.
json CheckpointBreakdown(const fs::path& root, const std::vector<const Run*>& runs, const std::string& op) {
  struct Acc {
    double dur = 0, gibs = 0;
    int n = 0;
  };
  std::map<std::string, Acc> host_acc;
  std::map<int, Acc> rank_acc;
  std::map<int, std::string> rank_host;
  for (const Run* r : runs) {
    std::map<int, std::string> hosts;
    for (const json& a : r->summary.value("dlio_ext", json::object()).value("agents", json::array())) {
      for (int k = 0; k < a.value("ranks", 0); ++k) hosts[a.value("first_rank", 0) + k] = a.value("hostname", "");
    }
    // checkpoint key ("save_ckpt3") -> host -> {bytes, max duration}
    std::map<std::string, std::map<std::string, std::pair<double, double>>> per_ckpt;
    for (const auto& [rank, host] : hosts) {
      absl::StatusOr<json> stats = ReadJsonFile(root / r->dir / absl::StrCat(rank, "_per_epoch_stats.json"));
      if (!stats.ok() || !stats->is_object()) continue;
      rank_host[rank] = host;
      for (const auto& [epoch, e] : stats->items()) {
        if (!e.is_object()) continue;
        for (const auto& [key, c] : e.items()) {
          if (!absl::StartsWith(key, op == "read" ? "load_ckpt" : "save_ckpt") || !c.is_object()) continue;
          const double d = c.value("duration", 0.0), bytes = c.value("bytes", 0.0);
          auto& hb = per_ckpt[absl::StrCat(epoch, "/", key)][host];
          hb.first += bytes;
          hb.second = std::max(hb.second, d);
          Acc& ra = rank_acc[rank];
          ra.dur += d;
          ra.gibs += d > 0 ? bytes / d / static_cast<double>(uint64_t{1} << 30) : 0;
          ++ra.n;
        }
      }
    }
    for (const auto& [ck, by_host] : per_ckpt) {
      for (const auto& [host, bd] : by_host) {
        Acc& ha = host_acc[host];
        ha.dur += bd.second;
        ha.gibs += bd.second > 0 ? bd.first / bd.second / static_cast<double>(uint64_t{1} << 30) : 0;
        ++ha.n;
      }
    }
  }
  json hosts = json::array(), ranks = json::array();
  for (const auto& [h, a] : host_acc) {
    hosts.push_back({{"host", h}, {"GiB_per_second", a.n ? a.gibs / a.n : 0}, {"duration_seconds", a.n ? a.dur / a.n : 0}});
  }
  for (const auto& [rk, a] : rank_acc) {
    ranks.push_back({{"rank", rk},
                     {"host", rank_host[rk]},
                     {"GiB_per_second", a.n ? a.gibs / a.n : 0},
                     {"duration_seconds", a.n ? a.dur / a.n : 0}});
  }
  return {{"per_host", hosts}, {"per_rank", ranks}};
}

// One workload's score from one set: the mean of its timed runs and the replication check (training: samples/s
// with the AU verdict; checkpointing: write and read GiB/s, durations, per host and per rank).
json ScoreSet(const fs::path& root, const Set& s, const std::vector<MlperfReference>* refs) {
  json j = {{"benchmark_type", s.type}, {"model", s.model}, {"set", s.set}};
  std::string division;
  json runs = json::array();
  for (const Run* r : s.runs) {
    json e = RunEntry(*r);
    const Classified c = ClassifyOne(*r, refs);
    e["class"] = c.cls.empty() ? json(nullptr) : json(c.cls);
    e["classification"] = c.detail;
    const json ours = r->meta.value("dlio_cpp", json::object());
    e["seed"] = ours.value("seed", json(nullptr));
    e["job_id"] = ours.value("job_id", "");
    if (r->role != "warmup") division = division.empty() ? c.cls : Worst(division, c.cls);
    runs.push_back(e);
  }
  j["division"] = division.empty() ? json(nullptr) : json(division);
  j["runs"] = runs;
  const int n = MaxIndex(s);
  j["timed_runs"] = n;
  if (s.type == kMlperfCheckpointing) {
    std::vector<std::optional<double>> wr, rd, wd, rdur;
    std::vector<const Run*> writes, reads;
    for (int k = 1; k <= n; ++k) {
      const Run* w = FindRole(s, "write", k);
      const Run* r = FindRole(s, "read", k);
      wr.push_back(w ? w->fig.write_gib_per_second : std::nullopt);
      wd.push_back(w ? w->fig.write_duration_s : std::nullopt);
      rd.push_back(r ? r->fig.read_gib_per_second : std::nullopt);
      rdur.push_back(r ? r->fig.read_duration_s : std::nullopt);
      if (w) writes.push_back(w);
      if (r) reads.push_back(r);
    }
    const ReplicationVerdict wv = JudgeReplication(wr), rv = JudgeReplication(rd);
    auto mean = [](const std::vector<std::optional<double>>& v) { return JudgeReplication(v).mean; };
    j["score"] = {{"write_GiB_per_second", Num(wv.mean)},
                  {"write_duration_seconds", Num(mean(wd))},
                  {"read_GiB_per_second", Num(rv.mean)},
                  {"read_duration_seconds", Num(mean(rdur))},
                  {"published",
                   {{"write_GiB_per_second", Published(wv.mean)},
                    {"write_duration_seconds", Published(mean(wd))},
                    {"read_GiB_per_second", Published(rv.mean)},
                    {"read_duration_seconds", Published(mean(rdur))}}}};
    j["replication"] = {ReplicationJson("write_GiB_per_second", wv), ReplicationJson("read_GiB_per_second", rv)};
    j["write"] = CheckpointBreakdown(root, writes, "write");
    j["read"] = CheckpointBreakdown(root, reads, "read");
    return j;
  }
  std::vector<RunFigures> figs;
  for (int k = 1; k <= n; ++k) {
    const Run* r = FindRole(s, "run", k);
    figs.push_back(r ? RunFigures{r->fig.au_percent, r->fig.samples_per_second} : RunFigures{});
  }
  const MlperfWorkload* w = FindMlperfWorkload(s.model);
  double threshold = w != nullptr ? w->au_threshold : 0;
  if (w == nullptr && !s.runs.empty() && s.runs.front()->spec) threshold = s.runs.front()->spec->au_threshold;
  const RunsVerdict v = JudgeRuns(figs, threshold);
  j["score"] = {{"throughput_samples_per_second", Num(v.throughput_mean)},
                {"au_percentage", Num(v.au_mean)},
                {"published",
                 {{"throughput_samples_per_second", Published(v.throughput_mean)},
                  {"au_percentage", Published(v.au_mean)}}}};
  j["au"] = {{"threshold_percentage", threshold * 100},
             {"failed_runs", v.au_failed_runs},
             {"verdict", !v.au_mean ? "NOT_MEASURED" : v.au_pass ? "PASS" : "FAIL"}};
  std::vector<std::optional<double>> tp;
  for (const RunFigures& f : figs) tp.push_back(f.samples_per_second);
  j["replication"] = {ReplicationJson("throughput_samples_per_second", JudgeReplication(tp))};
  return j;
}

json BuildReport(const Tree& t, const std::vector<MlperfReference>* refs, const std::string& references) {
  json workloads = json::array();
  for (const Workload& w : Group(t)) {
    if (w.sets.empty()) continue;
    // The newest set is the result; `mlperf check` refuses a tree that holds more than one.
    workloads.push_back(ScoreSet(t.root, w.sets.back(), refs));
  }
  return {{"benchmark", "MLPerf Storage v2.0"},
          {"tool", "dlio-cpp"},
          {"version", ToolVersion()},
          {"git_commit", ToolCommit()},
          {"references", references},
          {"workloads", workloads}};
}

std::string CsvField(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  return v.dump();
}

std::string ResultsCsv(const Tree& t, const std::vector<MlperfReference>* refs) {
  static const char* kCols[] = {"benchmark_type", "model", "command", "run_datetime", "set", "role", "run",
                                "class", "num_hosts", "num_accelerators", "au_percentage",
                                "throughput_samples_per_second", "io_MiB_per_second", "write_GiB_per_second",
                                "write_duration_seconds", "read_GiB_per_second", "read_duration_seconds", "dir"};
  std::string csv = absl::StrJoin(kCols, ",") + "\n";
  for (const Run& r : t.runs) {
    const Classified c = r.command == "datagen" ? Classified{} : ClassifyOne(r, refs);
    const json row = {r.type,
                      r.model,
                      r.command,
                      r.datetime,
                      r.set,
                      r.role,
                      r.index,
                      c.cls.empty() ? json(nullptr) : json(c.cls),
                      r.summary.is_object() ? r.summary.value("num_hosts", json(nullptr)) : json(nullptr),
                      r.summary.is_object() ? r.summary.value("num_accelerators", json(nullptr)) : json(nullptr),
                      Num(r.fig.au_percent),
                      Num(r.fig.samples_per_second),
                      Num(r.fig.io_mib_per_second),
                      Num(r.fig.write_gib_per_second),
                      Num(r.fig.write_duration_s),
                      Num(r.fig.read_gib_per_second),
                      Num(r.fig.read_duration_s),
                      r.dir.string()};
    std::vector<std::string> f;
    for (const json& v : row) f.push_back(CsvField(v));
    csv += absl::StrJoin(f, ",") + "\n";
  }
  return csv;
}

// ---- system description -----------------------------------------------------------------------------------------

constexpr const char* kFillIn = "FILL IN";

std::string Q(const std::string& s) { return json(s).dump(); }  // a JSON string is a YAML double-quoted scalar

std::string SystemDescription(const Tree& t, const json& report) {
  // Every host any run ran on, as its agent reported it (the newest report per host wins).
  std::map<std::string, json> hosts;
  for (const Run& r : t.runs) {
    const json prov = r.summary.is_object() ? r.summary.value("dlio_ext", json::object()).value("provenance", json::object())
                                            : json::object();
    for (const json& a : prov.value("agents", json::array())) hosts[a.value("hostname", "")] = a;
  }
  std::string y;
  absl::StrAppend(&y, "# MLPerf Storage system description (Submission_guidelines.md §11.4), pre-filled by dlio-coordinator\n",
                  "# mlperf report from what the agents reported (CPU, memory, kernel, file system, NICs). Every\n",
                  "# value starting with \"", kFillIn, "\" is for the submitter: `mlperf check` refuses the tree while any is left.\n",
                  "# `mlperf report` never overwrites this file once it exists.\n");
  absl::StrAppend(&y, "System:\n",
                  "  name: ", Q(absl::StrCat(kFillIn, ": the system name of the submission")), "\n",
                  "  submitter: ", Q(absl::StrCat(kFillIn, ": the submitting organisation")), "\n",
                  "  submission_date: ", Q(absl::StrCat(kFillIn, ": YYYY-MM-DD")), "\n",
                  "  benchmark_version: \"MLPerf Storage v2.0\"\n");
  std::string division;
  json workloads = json::array();
  for (const json& w : report.value("workloads", json::array())) {
    const std::string d = w.value("division", json("")).is_string() ? w["division"].get<std::string>() : "";
    if (!d.empty()) division = division.empty() ? d : Worst(division, d);
    workloads.push_back(absl::StrCat(w.value("model", ""), " (", w.value("benchmark_type", ""), ")"));
  }
  absl::StrAppend(&y, "  division: ", Q(division.empty() ? absl::StrCat(kFillIn, ": CLOSED or OPEN") : division),
                  "  # from the runs' classification\n",
                  "  storage_system_access_type: ",
                  Q(absl::StrCat(kFillIn, ": Local | Remote Block | NAS | Proprietary | Object | Other")),
                  "  # §3\n",
                  "  storage_location: ", Q(absl::StrCat(kFillIn, ": remote | local | hyper-converged")), "\n",
                  "  client_software: ", Q(absl::StrCat(kFillIn, ": in-box | proprietary")), "\n",
                  "  storage_interface: ", Q(absl::StrCat(kFillIn, ": block | file | object")), "\n",
                  "  description: ", Q(absl::StrCat(kFillIn, ": product, model numbers, drive counts, configuration")),
                  "\n",
                  "  shared_capabilities:  # §2.2.4\n",
                  "    multi_host_support: ", Q(absl::StrCat(kFillIn, ": true | false")), "\n",
                  "    simultaneous_write_support: ", Q(absl::StrCat(kFillIn, ": true | false")), "\n",
                  "    simultaneous_read_support: ", Q(absl::StrCat(kFillIn, ": true | false")), "\n",
                  "    checkpoint_read_availability_delay_seconds: ",
                  Q(absl::StrCat(kFillIn, ": time from a checkpoint written to readable by another host (0 if none)")),
                  "\n",
                  "  power_requirements: ",
                  Q(absl::StrCat(kFillIn, ": the power requirements table, or 'cloud' / 'hyper-converged'")),
                  "  # §11.4.2\n");
  absl::StrAppend(&y, "Nodes:\n",
                  "  host_nodes:  # what ran the benchmark, as the agents reported it\n",
                  "    quantity: ", hosts.size(), "\n",
                  "    operating_system: ", Q(absl::StrCat(kFillIn, ": distribution and version")), "\n",
                  "    hosts:\n");
  for (const auto& [name, a] : hosts) {
    const double gib = a.value("memory_bytes", 0.0) / static_cast<double>(uint64_t{1} << 30);
    absl::StrAppend(&y, "      - hostname: ", Q(name), "\n",
                    "        cpu_model: ", Q(a.value("cpu_model", "")), "\n",
                    "        cpu_count: ", a.value("cpu_count", 0), "\n",
                    "        memory_GiB: ", absl::StrFormat("%.2f", gib), "\n",
                    "        memory_source: ", Q(a.value("memory_source", "")), "\n",
                    "        kernel: ", Q(a.value("kernel", "")), "\n",
                    "        data_file_system: ", Q(a.value("data_root_fs", "")), "\n",
                    "        nics:\n");
    const json nics = a.value("nics", json::array());
    if (nics.empty()) absl::StrAppend(&y, "          - ", Q(absl::StrCat(kFillIn, ": not readable on this host")), "\n");
    for (const json& n : nics) {
      absl::StrAppend(&y, "          - {name: ", Q(n.value("name", "")), ", speed_Mbps: ",
                      n.value("speed_mbps", json(nullptr)).is_number() ? n["speed_mbps"].dump() : std::string("null"),
                      ", mtu: ", n.value("mtu", 0), ", state: ", Q(n.value("state", "")), "}\n");
    }
  }
  absl::StrAppend(&y, "  storage_nodes: ", Q(absl::StrCat(kFillIn, ": quantity, model, CPU, memory, drives, NICs")),
                  "\n",
                  "Networks: ", Q(absl::StrCat(kFillIn, ": fabric, switches, protocols between hosts and storage")),
                  "\n",
                  "Benchmark:\n",
                  "  tool: \"dlio-cpp\"\n",
                  "  version: ", Q(ToolVersion()), "\n",
                  "  git_commit: ", Q(ToolCommit()), "\n",
                  "  references: ", Q(report.value("references", "")), "\n",
                  "  workloads: ", workloads.dump(), "\n");
  return y;
}

// The key lines of a normalised job, as config.yaml (under `workload:`) or job_yaml holds them: comments, blank
// lines and the `workload:` wrapper dropped, the wrapper's indentation removed. Compared as text, so a tree made by
// another version of this tool (which may know more keys) is judged by what it wrote.
std::string ConfigBody(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  const bool wrapped = !lines.empty() && lines.front() == "workload:";
  std::string out;
  for (size_t i = wrapped ? 1 : 0; i < lines.size(); ++i) {
    absl::string_view l = lines[i];
    if (wrapped && absl::StartsWith(l, "  ")) l.remove_prefix(2);
    if (absl::StartsWith(l, "#")) continue;
    absl::StrAppend(&out, l, "\n");
  }
  return out;
}

// Paths ("System.name") of every scalar still starting with "FILL IN".
void UnfilledFields(const YAML::Node& n, const std::string& path, std::vector<std::string>* out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      UnfilledFields(kv.second, path.empty() ? kv.first.as<std::string>() : path + "." + kv.first.as<std::string>(),
                     out);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) UnfilledFields(n[i], absl::StrCat(path, "[", i, "]"), out);
  } else if (n.IsScalar() && absl::StartsWith(n.Scalar(), kFillIn)) {
    out->push_back(path);
  }
}

// ---- the checks ---------------------------------------------------------------------------------------------------

class Checker {
 public:
  Checker(const Tree& t, const std::vector<MlperfReference>* refs) : t_(t), refs_(refs) {}

  std::vector<Finding> All() {
    for (const Finding& f : t_.load_problems) findings_.push_back(f);
    for (const dlio::Run& r : t_.runs) CheckRunFiles(r);
    for (const Workload& w : Group(t_)) CheckWorkload(w);
    CheckRootFiles();
    return findings_;
  }

 private:
  void Fail(const fs::path& file, const std::string& rule, const std::string& msg) {
    findings_.push_back({file.string(), rule, msg});
  }

  void CheckRunFiles(const dlio::Run& r) {
    std::error_code ec;
    for (const char* f : {"summary.json", "dlio_config/config.yaml", "dlio_config/overrides.yaml"}) {
      if (!fs::exists(t_.root / r.dir / f, ec)) Fail(r.dir / f, "required files", "missing");
    }
    if (r.command != "datagen" && !fs::exists(t_.root / r.dir / "0_per_epoch_stats.json", ec)) {
      Fail(r.dir / "0_per_epoch_stats.json", "required files", "missing (each rank's DLIO result files)");
    }
    if (r.type != kMlperfTraining && r.type != kMlperfCheckpointing) {
      Fail(r.meta_file, "required files", absl::StrCat("benchmark_type '", r.type, "' is neither training nor "
                                                       "checkpointing"));
    }
    const fs::path expect = r.type == kMlperfCheckpointing ? fs::path(r.type) / r.model / r.datetime
                                                           : fs::path(r.type) / r.model / r.command / r.datetime;
    if (r.dir != expect) {
      Fail(r.dir, "layout", absl::StrCat("its metadata places it at ", expect.string(), " (<type>/<model>/",
                                         r.type == kMlperfCheckpointing ? "" : "<command>/", "<datetime>)"));
    }
    if (!r.summary.is_object()) return;
    // What ran is what the folder says ran: the normalised job against the job's own record of it.
    const json prov = r.summary.value("dlio_ext", json::object()).value("provenance", json::object());
    if (prov.contains("job_yaml") &&
        ConfigBody(ReadText(t_.root / r.dir / "dlio_config/config.yaml")) != ConfigBody(prov.value("job_yaml", ""))) {
      Fail(r.dir / "dlio_config/config.yaml", "integrity",
           "differs from the job that ran (summary.json dlio_ext.provenance.job_yaml): edited after the run");
    }
    const std::string job = r.meta.value("dlio_cpp", json::object()).value("job_id", "");
    if (job != r.summary.value("dlio_ext", json::object()).value("job_id", job)) {
      Fail(r.meta_file, "integrity", "its job id is not summary.json's");
    }
  }

  void CheckWorkload(const Workload& w) {
    const fs::path wdir = fs::path(w.type) / w.model;
    if (w.sets.empty()) {
      Fail(wdir, "5-run rule", "no run, only data generation");
      return;
    }
    if (w.sets.size() > 1) {
      std::vector<std::string> names;
      for (const Set& s : w.sets) names.push_back(s.set);
      Fail(wdir, "5-run rule", absl::StrCat(w.sets.size(), " sets of runs (", absl::StrJoin(names, ", "),
                                            "): a result is one set of consecutive runs; remove the others"));
    }
    const Set& s = w.sets.back();
    CheckClasses(s);
    if (w.type == kMlperfCheckpointing) {
      CheckCheckpointSet(s);
    } else {
      CheckTrainingSet(w, s);
    }
    CheckSameHosts(s);
  }

  void CheckClasses(const Set& s) {
    std::string first_cls;
    fs::path first_dir;
    for (const dlio::Run* r : s.runs) {
      const Classified c = ClassifyOne(*r, refs_);
      const fs::path cfg = r->dir / "dlio_config/config.yaml";
      if (!c.error.empty()) {
        Fail(cfg, "class", c.error);
        continue;
      }
      if (c.cls.empty()) {
        Fail(cfg, "class", absl::StrCat("model '", r->spec ? r->spec->model_name : "", "' is no MLPerf Storage "
                                        "workload"));
        continue;
      }
      if (c.cls == "INVALID") {
        std::vector<std::string> why;
        for (const json& d : c.detail.value("differences", json::array())) {
          if (d.value("class", "") == "INVALID") why.push_back(absl::StrCat(d.value("key", ""), "=", d.value("value", "")));
        }
        for (const json& p : c.detail.value("problems", json::array())) why.push_back(p.get<std::string>());
        Fail(cfg, "class", absl::StrCat("INVALID: ", absl::StrJoin(why, "; ")));
      }
      const json recorded = r->meta.value("verification", json(nullptr));
      if (recorded.is_string() && absl::AsciiStrToUpper(recorded.get<std::string>()) != c.cls) {
        Fail(cfg, "class", absl::StrCat(c.cls, ", but ", r->meta_file.string(), " records ",
                                        absl::AsciiStrToUpper(recorded.get<std::string>()),
                                        " from when it ran: edited after the run"));
      }
      if (r->role == "warmup") continue;
      if (first_cls.empty()) {
        first_cls = c.cls;
        first_dir = r->dir;
      } else if (c.cls != first_cls) {
        Fail(cfg, "class", absl::StrCat(c.cls, " while ", first_dir.string(), " is ", first_cls,
                                        ": the runs of one result share a division"));
      }
    }
  }

  void CheckTrainingSet(const Workload& w, const Set& s) {
    const fs::path runs_dir = fs::path(w.type) / w.model / "run";
    if (FindRole(s, "warmup", 0) == nullptr) {
      Fail(runs_dir, "5-run rule", absl::StrCat("set ", s.set, " has no warm-up run (§6.6: a warm-up before the ",
                                                kMlperfRuns, " runs)"));
    }
    std::vector<int> missing;
    std::set<int64_t> seeds;
    std::vector<std::optional<double>> tp;
    std::string last_datetime;
    for (int k = 1; k <= std::max(kMlperfRuns, MaxIndex(s)); ++k) {
      const dlio::Run* r = FindRole(s, "run", k);
      if (r == nullptr) {
        if (k <= kMlperfRuns) missing.push_back(k);
        continue;
      }
      if (k > kMlperfRuns) {
        Fail(r->dir, "5-run rule", absl::StrCat("run ", k, ": a result is exactly ", kMlperfRuns, " runs"));
      }
      if (r->datetime <= last_datetime) {
        Fail(r->dir, "5-run rule", "not after the run before it: the runs must be consecutive");
      }
      last_datetime = r->datetime;
      if (r->spec && !seeds.insert(r->spec->seed).second) {
        Fail(r->dir / "dlio_config/config.yaml", "5-run rule",
             absl::StrCat("train.seed ", r->spec->seed, " repeats: the seed must change per run (§6.6)"));
      }
      tp.push_back(r->fig.samples_per_second);
      CheckAu(*r);
      CheckDatasize(*r);
    }
    CheckDatagen(w, s);
    if (!missing.empty()) {
      Fail(runs_dir, "5-run rule",
           absl::StrCat("set ", s.set, ": ", kMlperfRuns - static_cast<int>(missing.size()), " timed runs, ",
                        kMlperfRuns, " required (missing run ", absl::StrJoin(missing, ", "), ")"));
    }
    const ReplicationVerdict v = JudgeReplication(tp);
    if (missing.empty() && v.max_deviation && !v.replicates) {
      Fail(runs_dir, "replication", absl::StrFormat("samples/s of the runs deviate up to %.2f %% from their mean "
                                                    "(5 %% allowed, §6.7)", *v.max_deviation * 100));
    } else if (missing.empty() && !v.max_deviation) {
      Fail(runs_dir, "replication", "a run's samples/s was not measured");
    }
  }

  void CheckAu(const dlio::Run& r) {
    const MlperfWorkload* w = FindMlperfWorkload(r.model);
    if (w == nullptr) return;
    if (!r.fig.au_percent) {
      Fail(r.dir / "summary.json", "AU rule", "metric.train_au_mean_percentage not measured");
    } else if (*r.fig.au_percent < w->au_threshold * 100) {
      Fail(r.dir / "summary.json", "AU rule",
           absl::StrFormat("AU %.2f %% is below %s's %.0f %%", *r.fig.au_percent, w->name, w->au_threshold * 100));
    }
  }

  void CheckDatasize(const dlio::Run& r) {
    if (!r.spec || !r.summary.is_object()) return;
    const int64_t used = r.summary.value("num_files_train", int64_t{0});
    const int64_t required = RequiredFiles(*r.spec, r.summary);
    if (required > 0 && used < required) {
      const RunShape sh = ShapeOf(r.summary);
      Fail(r.dir / "summary.json", "datasize rule",
           absl::StrFormat("num_files_train %d is below the %d files datasize requires for %d host(s) of %.2f GiB "
                           "and %d accelerators (5x the hosts' RAM, 500 steps per epoch)",
                           used, required, sh.hosts, sh.memory_gib_per_host, sh.world));
    }
  }

  // The dataset the runs read was generated (§7: its logs belong to the submission), and at least that large.
  void CheckDatagen(const Workload& w, const Set& s) {
    int64_t used = 0, generated = 0;
    fs::path reader;
    for (const dlio::Run* r : s.runs) {
      const int64_t n = r->summary.is_object() ? r->summary.value("num_files_train", int64_t{0}) : 0;
      if (n > used) {
        used = n;
        reader = r->dir;
      }
    }
    for (const dlio::Run* g : w.datagen) {
      generated = std::max<int64_t>(generated, g->summary.is_object() ? g->summary.value("num_files_train", int64_t{0})
                                                                      : 0);
    }
    if (w.datagen.empty()) {
      Fail(fs::path(w.type) / w.model / "datagen", "datagen", "missing: the data generation's results (§7)");
    } else if (generated < used) {
      Fail(reader / "summary.json", "datagen",
           absl::StrCat("the run read ", used, " files, the data generation wrote ", generated));
    }
  }

  void CheckCheckpointSet(const Set& s) {
    const fs::path wdir = fs::path(s.type) / s.model;
    std::vector<int> missing;
    std::vector<std::optional<double>> wr, rd;
    for (int k = 1; k <= std::max(kMlperfRuns, MaxIndex(s)); ++k) {
      const dlio::Run* w = FindRole(s, "write", k);
      const dlio::Run* r = FindRole(s, "read", k);
      if (k > kMlperfRuns && (w || r)) {
        Fail((w ? w : r)->dir, "5-run rule", absl::StrCat("run ", k, ": a result is exactly ", kMlperfRuns, " runs"));
        continue;
      }
      if (!w || !r) {
        if (k <= kMlperfRuns) missing.push_back(k);
        continue;
      }
      if (w->fig.writes != kMlperfCheckpoints || w->fig.reads != 0) {
        Fail(w->dir / "summary.json", "checkpoint rule",
             absl::StrCat(w->fig.writes, " checkpoints written and ", w->fig.reads, " read: the write job writes ",
                          kMlperfCheckpoints, " and reads none"));
      }
      if (r->fig.reads != kMlperfCheckpoints || r->fig.writes != 0) {
        Fail(r->dir / "summary.json", "checkpoint rule",
             absl::StrCat(r->fig.reads, " checkpoints read and ", r->fig.writes, " written: the read job reads ",
                          kMlperfCheckpoints, " and writes none"));
      }
      if (r->datetime <= w->datetime) Fail(r->dir, "checkpoint rule", "the read job must follow its write job");
      if (w->spec && !w->spec->checkpoint_fsync) {
        Fail(w->dir / "dlio_config/config.yaml", "checkpoint rule", "checkpoint.fsync is off (§2.2.2: required)");
      }
      if (r->spec && !r->spec->checkpoint_evict_cache) {
        Fail(r->dir / "dlio_config/config.yaml", "cache rule",
             "the cache was not cleared before the reads (dlio_ext.checkpoint_evict_cache is off)");
      }
      wr.push_back(w->fig.write_gib_per_second);
      rd.push_back(r->fig.read_gib_per_second);
    }
    if (!missing.empty()) {
      Fail(wdir, "5-run rule",
           absl::StrCat("set ", s.set, ": ", kMlperfRuns - static_cast<int>(missing.size()), " complete runs (a write "
                        "job and a read job each), ", kMlperfRuns, " required (missing run ",
                        absl::StrJoin(missing, ", "), ")"));
      return;
    }
    for (const auto& [name, v] : {std::make_pair("write", JudgeReplication(wr)), std::make_pair("read", JudgeReplication(rd))}) {
      if (!v.max_deviation) {
        Fail(wdir, "replication", absl::StrCat("a run's ", name, " GiB/s was not measured"));
      } else if (!v.replicates) {
        Fail(wdir, "replication", absl::StrFormat("%s GiB/s of the runs deviate up to %.2f %% from their mean (5 %% "
                                                  "allowed, §6.7)", name, *v.max_deviation * 100));
      }
    }
  }

  // "The 5 runs must be done on the same machine(s)."
  void CheckSameHosts(const Set& s) {
    std::vector<std::string> first;
    fs::path first_dir;
    for (const dlio::Run* r : s.runs) {
      if (!r->summary.is_object()) continue;
      const std::vector<std::string> h = HostsOf(r->summary);
      if (first_dir.empty()) {
        first = h;
        first_dir = r->dir;
      } else if (h != first) {
        Fail(r->dir / "summary.json", "hosts",
             absl::StrCat("ran on ", absl::StrJoin(h, ", "), ", ", first_dir.string(), " on ",
                          absl::StrJoin(first, ", "), ": the runs must use the same machines"));
      }
    }
  }

  void CheckRootFiles() {
    std::error_code ec;
    for (const char* f : {"results.csv", "mlperf_storage_report.json"}) {
      if (!fs::exists(t_.root / f, ec)) Fail(f, "required files", "missing: run `dlio-coordinator mlperf report`");
    }
    const fs::path sd = t_.root / "system_description.yaml";
    if (!fs::exists(sd, ec)) {
      Fail("system_description.yaml", "system description", "missing: run `dlio-coordinator mlperf report`");
    } else {
      try {
        std::vector<std::string> unfilled;
        UnfilledFields(YAML::LoadFile(sd.string()), "", &unfilled);
        for (const std::string& u : unfilled) Fail("system_description.yaml", "system description",
                                                   absl::StrCat(u, " is not filled in"));
      } catch (const std::exception& e) {
        Fail("system_description.yaml", "system description", absl::StrCat("not valid YAML: ", e.what()));
      }
    }
    // The report's scores are the runs' (nothing edited between report and submission).
    absl::StatusOr<json> saved = ReadJsonFile(t_.root / "mlperf_storage_report.json");
    if (!saved.ok()) return;
    const json now = BuildReport(t_, refs_, "");
    for (const json& w : now.value("workloads", json::array())) {
      json old;
      for (const json& o : saved->value("workloads", json::array())) {
        if (o.value("model", "") == w.value("model", "") && o.value("benchmark_type", "") == w.value("benchmark_type", "")) {
          old = o;
        }
      }
      if (old.is_null() || old.value("score", json()) != w.value("score", json())) {
        Fail("mlperf_storage_report.json", "report",
             absl::StrCat(w.value("model", ""), ": the score is not the runs' (rerun `mlperf report`)"));
      }
    }
  }

  const Tree& t_;
  const std::vector<MlperfReference>* refs_;
  std::vector<Finding> findings_;
};

absl::StatusOr<Tree> OpenTree(const SubmissionOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(opt.root, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("'", opt.root, "' is not a directory"));
  }
  Tree t = LoadTree(opt.root);
  if (t.runs.empty() && t.load_problems.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", opt.root, "' holds no run folder (a folder with a "
                                                   "*_metadata.json, as run --mlperf and --mlperf-datagen write)"));
  }
  return t;
}

}  // namespace

absl::StatusOr<MlperfReferenceSet> MlperfReferenceSet::Load(const std::string& dir) {
  MlperfReferenceSet r;
  if (dir.empty()) return r;
  absl::StatusOr<std::vector<MlperfReference>> v = LoadMlperfReferences(dir);
  if (!v.ok()) return v.status();
  r.custom = *v;
  r.use_custom = true;
  r.label = dir;
  return r;
}

absl::StatusOr<json> ScoreMlperfSet(const std::string& root, const std::string& type, const std::string& model,
                                    const std::string& set, const std::vector<MlperfReference>* refs) {
  const Tree t = LoadTree(root);
  for (const Workload& w : Group(t)) {
    if (w.type != type || w.model != model) continue;
    for (const Set& s : w.sets) {
      if (s.set == set) return ScoreSet(t.root, s, refs);
    }
  }
  return absl::NotFoundError(absl::StrCat("no run of set ", set, " of ", model, " under ", root));
}

int MlperfReport(const SubmissionOptions& opt, std::ostream& out, std::ostream& err) {
  absl::StatusOr<MlperfReferenceSet> refs = MlperfReferenceSet::Load(opt.references_dir);
  absl::StatusOr<Tree> t = refs.ok() ? OpenTree(opt) : absl::StatusOr<Tree>(refs.status());
  if (!t.ok()) {
    err << "mlperf report: " << t.status().message() << "\n";
    return kExitBadInput;
  }
  const json report = BuildReport(*t, refs->get(), refs->label);
  const fs::path root(opt.root);
  for (const auto& [file, text] :
       {std::make_pair("results.csv", ResultsCsv(*t, refs->get())),
        std::make_pair("mlperf_storage_report.json", report.dump(2) + "\n")}) {
    if (absl::Status s = WriteFileAtomic((root / file).string(), text); !s.ok()) {
      err << "mlperf report: " << s.message() << "\n";
      return kExitJobNotSucceeded;
    }
  }
  std::error_code ec;
  const bool kept = fs::exists(root / "system_description.yaml", ec);
  if (!kept) {
    if (absl::Status s = WriteFileAtomic((root / "system_description.yaml").string(), SystemDescription(*t, report));
        !s.ok()) {
      err << "mlperf report: " << s.message() << "\n";
      return kExitJobNotSucceeded;
    }
  }
  if (opt.json) {
    out << report.dump(2) << "\n";
    return kExitOk;
  }
  for (const json& w : report["workloads"]) {
    const json sc = w.value("score", json::object());
    const json div = w.value("division", json(nullptr));
    out << w.value("model", "") << " (" << w.value("benchmark_type", "") << ", "
        << (div.is_string() ? div.get<std::string>() : "not an MLPerf workload") << "), set " << w.value("set", "")
        << ", " << w.value("timed_runs", 0) << " runs: ";
    std::vector<std::string> rep;
    for (const json& r : w.value("replication", json::array())) {
      rep.push_back(absl::StrCat(r.value("figure", ""), " ", r.value("verdict", "")));
    }
    if (w.value("benchmark_type", "") == kMlperfCheckpointing) {
      out << "write " << Fmt(OptNum(sc, "write_GiB_per_second"), "GiB/s") << " ("
          << Fmt(OptNum(sc, "write_duration_seconds"), "s") << "), read "
          << Fmt(OptNum(sc, "read_GiB_per_second"), "GiB/s") << " (" << Fmt(OptNum(sc, "read_duration_seconds"), "s")
          << ")";
    } else {
      const json au = w.value("au", json::object());
      out << "mean " << Fmt(OptNum(sc, "throughput_samples_per_second"), "samples/s") << ", AU "
          << Fmt(OptNum(sc, "au_percentage"), "%") << " (threshold " << au.value("threshold_percentage", 0.0)
          << " %: " << au.value("verdict", "") << ")";
    }
    out << "; replication: " << absl::StrJoin(rep, ", ") << "\n";
  }
  out << "wrote " << (root / "results.csv").string() << ", " << (root / "mlperf_storage_report.json").string()
      << "\n";
  out << (kept ? "kept " : "wrote ") << (root / "system_description.yaml").string()
      << (kept ? " (exists: the submitter's edits are kept)" : " (pre-filled: fill in every field marked FILL IN)")
      << "\n";
  return kExitOk;
}

int MlperfCheck(const SubmissionOptions& opt, std::ostream& out, std::ostream& err) {
  absl::StatusOr<MlperfReferenceSet> refs = MlperfReferenceSet::Load(opt.references_dir);
  absl::StatusOr<Tree> t = refs.ok() ? OpenTree(opt) : absl::StatusOr<Tree>(refs.status());
  if (!t.ok()) {
    err << "mlperf check: " << t.status().message() << "\n";
    return kExitBadInput;
  }
  Checker checker(*t, refs->get());
  const std::vector<Finding> findings = checker.All();
  const int rc = findings.empty() ? kExitOk : kExitBelowTarget;
  if (opt.json) {
    json f = json::array();
    for (const Finding& x : findings) f.push_back({{"file", x.file}, {"rule", x.rule}, {"message", x.message}});
    out << json{{"accepted", findings.empty()}, {"references", refs->label}, {"findings", f}, {"exit_status", rc}}
               .dump(2)
        << "\n";
    return rc;
  }
  for (const Finding& x : findings) out << x.file << ": " << x.rule << ": " << x.message << "\n";
  if (refs->use_custom) {
    out << "note: judged against the references in " << refs->label
        << ", not the shipped MLPerf Storage v2.0 ones: a rehearsal, not a submission\n";
  }
  out << "check: " << (findings.empty() ? "ACCEPTED" : absl::StrCat("REFUSED (", findings.size(), " problem(s))"))
      << " - " << t->runs.size() << " run folder(s) under " << opt.root << "\n";
  return rc;
}

}  // namespace dlio
