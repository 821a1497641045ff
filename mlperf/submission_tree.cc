#include "mlperf/submission_tree.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dlio::submission {

namespace fs = std::filesystem;
using json = nlohmann::json;

json Num(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
std::optional<double> OptNum(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
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

// The distinct node names a job ran on (summary.json dlio_ext.agents[].hostname), sorted.
std::vector<std::string> HostsOf(const json& summary) {
  std::set<std::string> hosts;
  if (summary.is_object() && summary.contains("dlio_ext")) {
    for (const json& a : summary["dlio_ext"].value("agents", json::array())) hosts.insert(a.value("hostname", ""));
  }
  return {hosts.begin(), hosts.end()};
}

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
int64_t RequiredFiles(const WorkloadSpec& spec, const json& summary, MlperfVersion version) {
  const MlperfWorkload* base = FindAnyMlperfWorkload(spec.model_name, version);
  const RunShape sh = ShapeOf(summary);
  if (base == nullptr || sh.hosts < 1 || sh.world < 1 || !(sh.memory_gib_per_host > 0)) return 0;
  MlperfWorkload w = *base;
  w.batch_size = spec.batch_size;
  w.record_length_bytes = spec.record_length_bytes;
  w.num_samples_per_file = spec.num_samples_per_file;
  return ComputeDatasize({sh.world / sh.hosts, sh.hosts, sh.memory_gib_per_host}, w).num_files_train;
}

// Every folder holding a *_metadata.json (reportgen's criterion), in path order.
Tree LoadTree(const fs::path& root) {
  Tree t;
  t.root = root;
  std::error_code ec;
  std::vector<fs::path> metas;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it.depth() == 0 && name == "submission" && it->is_directory()) {
      it.disable_recursion_pending();
      continue;
    }
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
    r.references = ours.value("references", "");
    absl::StatusOr<MlperfVersion> v = ParseMlperfVersion(r.meta.value("mlperf_version", "v2.0"));
    r.version = v.ok() ? *v : MlperfVersion::kV2_0;
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

MlperfVersion Tree::version() const {
  const Run* newest = nullptr;
  for (const Run& r : runs) {
    if (newest == nullptr || r.datetime > newest->datetime) newest = &r;
  }
  return newest != nullptr ? newest->version : MlperfVersion::kV2_0;
}

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

Classified ClassifyOne(const Run& r, const std::vector<MlperfReference>* refs) {
  Classified c;
  if (!r.spec) {
    c.error = "dlio_config/config.yaml is missing or does not load";
    return c;
  }
  const json acc = r.meta.value("accelerator", json(nullptr));
  absl::StatusOr<json> j =
      ClassifyRun(*r.spec, r.summary, acc.is_string() ? acc.get<std::string>() : "", refs, r.version);
  if (!j.ok()) {
    c.error = std::string(j.status().message());
    return c;
  }
  c.detail = *j;
  if (j->is_object()) c.cls = j->value("class", "");
  return c;
}

std::string Worst(const std::string& a, const std::string& b) {
  auto rank = [](const std::string& x) {
    return x == "INVALID" ? 3 : x == "WHATIF" ? 2 : x == "OPEN" ? 1 : x == "CLOSED" ? 0 : 4;
  };
  return rank(a) >= rank(b) ? a : b;
}

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

}  // namespace dlio::submission
