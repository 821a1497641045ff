#include "mlperf/verbs.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/sleep.h"
#include "mlperf/checkpoint_v3.h"
#include "mlperf/fs_separation.h"
#include "mlperf/rules.h"
#include "mlperf/run_records.h"
#include "mlperf/submission_tree.h"
#include "mlperf/set_verdict.h"
#include "client/client.h"
#include "client/coordinator_client.h"
#include "client/ramp.h"
#include "client/render.h"
#include "results/results.h"
#include "client/explain.h"
#include "job/workload_spec.h"
#include "mlperf/submission.h"
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
const MlperfWorkload* PickWorkload(const std::string& flag, const std::string& model, std::ostream& err,
                                   MlperfVersion version = MlperfVersion::kV2_0) {
  const std::string name = !flag.empty() ? flag : model;
  const MlperfWorkload* w = FindMlperfWorkload(name, version);
  if (w == nullptr) {
    std::vector<std::string> names;
    for (const MlperfWorkload& k : MlperfWorkloads(version)) names.push_back(k.name);
    err << (flag.empty() ? "model.name" : "--workload") << ": '" << name << "' is not an MLPerf Storage "
        << MlperfVersionName(version) << " training workload (" << absl::StrJoin(names, ", ") << ")\n";
  }
  return w;
}

json LoadJsonFile(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Whether the user set `key` (canonical dotted form) among the overrides.
bool Overrides(const std::vector<std::string>& overrides, const std::string& key) {
  for (const std::string& o : overrides) {
    std::string k, v;
    if (SplitOverride(o, &k, &v) && k == key) return true;
  }
  return false;
}

// A run's folder: the job's result files fetched into it, then ours (dlio_config/, the metadata).
struct FolderRun {
  RunOutcome outcome;
  json classification;
  int rc = 0;  // non-zero: stop with this status
};
// The job of one run; when the coordinator could not be reached (a transient connection error between runs), once
// more after kMlperfRetryPauseSeconds.
RunOutcome SubmitWithOneRetry(const SubmitOptions& base, const LoadedJob& job, const std::vector<std::string>& extra,
                              const fs::path& dir, const std::string& label, std::ostream& err,
                              const std::atomic<bool>* cancel) {
  RunOutcome r = SubmitOne(base, job, extra, 0, dir.string(), err, cancel);
  if (r.ok || r.rc != kExitUnreachable || (cancel != nullptr && *cancel)) return r;
  err << "MLPerf mode: " << label << ": the coordinator was unreachable; retrying once in " << kMlperfRetryPauseSeconds
      << " s\n";
  if (!SleepFor(kMlperfRetryPauseSeconds, cancel)) return r;
  r = SubmitOne(base, job, extra, 0, dir.string(), err, cancel);
  if (!r.ok && r.rc == kExitUnreachable) {
    err << "MLPerf mode: " << label << ": the coordinator is still unreachable after one retry\n";
  }
  return r;
}

FolderRun RunIntoFolder(const SubmitOptions& base, const LoadedJob& job, const std::vector<std::string>& extra,
                        const fs::path& dir, RunFolderMeta meta, const MlperfReferenceSet& refs,
                        const MlperfRunOptions& opt, std::ostream& err, const std::atomic<bool>* cancel) {
  FolderRun f;
  const std::string label = absl::StrCat(meta.role, meta.index > 0 ? absl::StrCat(" ", meta.index) : "");
  f.outcome = SubmitWithOneRetry(base, job, extra, dir, label, err, cancel);
  RunOutcome& r = f.outcome;
  if (!r.ok) {
    err << "MLPerf mode: " << label << " did not succeed" << (r.job_id.empty() ? "" : " (job " + r.job_id + ")")
        << "; stopping\n";
    f.rc = r.rc != 0 ? r.rc : 1;
    return f;
  }
  const WorkloadSpec& spec = r.job->spec();
  if (meta.command != "datagen") {
    absl::StatusOr<json> c = ClassifyRun(spec, r.summary, "", refs.get(), meta.version);
    if (!c.ok()) {
      err << "MLPerf mode: " << c.status().message() << "\n";
      f.rc = kExitBadInput;
      return f;
    }
    f.classification = *c;
    if (c->is_object() && !c->value("accelerator", "").empty()) meta.accelerator = c->value("accelerator", "");
  }
  meta.job_id = r.job_id;
  meta.overrides = r.job->overrides();
  meta.classification = f.classification;
  meta.references = refs.label;
  absl::Status s = WriteRunFolderFiles(dir, spec, meta, r.summary);
  if (s.ok()) {
    s = WriteRunRecords(dir, spec, opt.data_root, submission::ShapeOf(r.summary).world, opt.results_dir,
                        refs.use_custom ? refs.custom : MlperfReferences(meta.version));
  }
  if (!s.ok()) {
    err << s.message() << "\n";
    f.rc = 1;
  }
  return f;
}

// num_files_train (and subfolders) of the newest data generation of `model` under the results root, when the user
// set neither: the runs read what datagen wrote.
std::vector<std::string> DatagenOverrides(const fs::path& root, const std::string& model,
                                          const std::vector<std::string>& overrides, std::string* from) {
  if (Overrides(overrides, "dataset.num_files_train")) return {};
  std::error_code ec;
  fs::path newest;
  for (auto it = fs::directory_iterator(root / kMlperfTraining / model / "datagen", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (fs::exists(it->path() / "summary.json", ec) && it->path() > newest) newest = it->path();
  }
  if (newest.empty()) return {};
  json s;
  try {
    s = LoadJsonFile((newest / "summary.json").string());
  } catch (const std::exception&) {
    return {};
  }
  *from = newest.string();
  std::vector<std::string> o = {absl::StrCat("dataset.num_files_train=", s.value("num_files_train", 0))};
  absl::StatusOr<WorkloadSpec> g = LoadWorkloadFile((newest / "dlio_config" / "config.yaml").string(), {});
  if (g.ok() && g->num_subfolders_train > 0 && !Overrides(overrides, "dataset.num_subfolders_train")) {
    o.push_back(absl::StrCat("dataset.num_subfolders_train=", g->num_subfolders_train));
  }
  return o;
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
  absl::StatusOr<MlperfVersion> version = ParseMlperfVersion(opt.mlperf_version);
  if (!version.ok()) {
    err << version.status().message() << "\n";
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
    const MlperfWorkload* base =
        FindMlperfWorkload(!opt.workload.empty() ? opt.workload : spec->model_name, *version);
    w = base != nullptr ? *base : MlperfWorkload{};
    w.name = base != nullptr ? base->name : spec->model_name;
    w.batch_size = spec->batch_size;
    w.record_length_bytes = spec->record_length_bytes;
    w.num_samples_per_file = spec->num_samples_per_file;
  } else {
    if (opt.workload.empty()) {
      err << "mlperf datasize: give --workload (unet3d, retinanet, resnet50, cosmoflow, dlrm, flux) or a job file\n";
      return 2;
    }
    const MlperfWorkload* base = PickWorkload(opt.workload, "", err, *version);
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
  absl::StatusOr<MlperfVersion> version = ParseMlperfVersion(opt.mlperf_version);
  if (!version.ok()) {
    err << version.status().message() << "\n";
    return kExitBadInput;
  }
  if (opt.allow_invalid_params && *version != MlperfVersion::kV3_0) {
    err << "--allow-invalid-params: a v3.0 option (OPEN and WHATIF); v2.0 has no such class\n";
    return kExitBadInput;
  }
  const std::vector<std::string> accs = MlperfAccelerators(*version);
  if (!opt.accelerator_type.empty() &&
      std::find(accs.begin(), accs.end(), opt.accelerator_type) == accs.end()) {
    err << "--accelerator-type: '" << opt.accelerator_type << "' is not an accelerator of MLPerf Storage "
        << MlperfVersionName(*version) << " (" << absl::StrJoin(accs, ", ") << ")\n";
    return kExitBadInput;
  }
  absl::StatusOr<WorkloadSpec> spec = LoadWorkloadFile(opt.job_path, opt.overrides);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return kExitBadInput;
  }
  absl::StatusOr<MlperfReferenceSet> refs = MlperfReferenceSet::Load(opt.references_dir, *version);
  if (!refs.ok()) {
    err << refs.status().message() << "\n";
    return kExitBadInput;
  }
  const int64_t hosts = std::max<int64_t>(1, opt.hosts);
  absl::StatusOr<WorkloadClassification> c;
  std::string workload;
  int64_t required = 0;
  const MlperfCheckpointWorkload* cw =
      FindMlperfCheckpointWorkload(!opt.workload.empty() ? opt.workload : spec->model_name);
  if (cw != nullptr) {
    workload = cw->name;
    c = ClassifyCheckpointWorkload(*cw, *spec, opt.accelerators * hosts, opt.accelerators > 0 ? hosts : 0,
                                   refs->get(), *version, opt.allow_invalid_params);
  } else {
    const MlperfWorkload* w = PickWorkload(opt.workload, spec->model_name, err, *version);
    if (w == nullptr) return kExitBadInput;
    workload = w->name;
    if (opt.accelerators > 0 && opt.host_memory_gib > 0) {
      required = ComputeDatasize({opt.accelerators, hosts, opt.host_memory_gib}, *w).num_files_train;
    }
    MlperfV3Options v3;
    v3.allow_invalid_params = opt.allow_invalid_params;
    c = ClassifyWorkload(*w, *spec, opt.accelerator_type, opt.job_path, required, refs->get(), *version, v3);
  }
  if (!c.ok()) {
    err << c.status().message() << "\n";
    return kExitBadInput;
  }
  json j = ClassificationJson(*c);
  if (opt.json) {
    j["workload"] = workload;
    j["mlperf_version"] = MlperfVersionName(*version);
    j["references"] = refs->label;
    if (required > 0) j["required_num_files_train"] = required;
    out << j.dump(2) << "\n";
  } else {
    out << "workload: " << workload << " (MLPerf Storage " << MlperfVersionName(*version) << ")"
        << (required > 0 ? absl::StrCat(" (datasize requires ", required, " files)") : "") << "\n";
    PrintClassification(j, out);
  }
  return c->classification.overall == MlperfClass::kInvalid ? kExitBelowTarget : kExitOk;
}

namespace {

// The runs of one --mlperf set, in order: training: a warm-up and the timed runs; checkpointing: per run a write job
// and a read job (§2.2.2: write, clear the cache, read).
struct PlannedRun {
  std::string role;
  int index = 0;
  std::vector<std::string> extra;
};
std::vector<PlannedRun> PlanRuns(bool checkpointing, const MlperfRunOptions& opt) {
  std::vector<PlannedRun> plan;
  if (checkpointing) {
    for (int k = 1; k <= opt.runs; ++k) {
      plan.push_back({"write", k, CheckpointWriteOverrides()});
      plan.push_back({"read", k, CheckpointReadOverrides()});
    }
    return plan;
  }
  // v3.0: the page cache dropped before every training epoch (agent/cache_drop.h), as the v3 DLIO fork does.
  const std::vector<std::string> drop = {"dlio_ext.evict_cache=every_epoch"};
  if (opt.warmup) plan.push_back({"warmup", 0, drop});
  for (int k = 1; k <= opt.runs; ++k) plan.push_back({"run", k, drop});
  return plan;
}

// One --mlperf set as RunMlperf resolves it before its first job.
struct SetContext {
  WorkloadSpec spec;
  MlperfReferenceSet refs;
  MlperfVersion version = kDefaultMlperfVersion;
  std::string accelerator;  // --accelerator-type (checkpointing: recorded for Rules.md 4.3.4 in mlperf check)
  std::string type, model;
  bool ckpt = false;
  const MlperfWorkload* workload = nullptr;  // null: not an MLPerf training workload (the threshold is metric.au)
  double threshold = 0;
  fs::path root, model_dir, parent;  // the results root, <root>/<type>/<model>, the folder of the runs' folders
  std::vector<std::string> datagen;  // the overrides of the data generation the runs read (before each run's own)
  std::string datagen_from;          // that generation's folder, if one was found
};

// Loads the references and names the set's folders: 0, or the exit status of bad input.
int ResolveSet(const LoadedJob& job, const MlperfRunOptions& opt, SetContext* s, std::ostream& err) {
  absl::StatusOr<MlperfVersion> version = ParseMlperfVersion(opt.mlperf_version);
  if (!version.ok()) {
    err << version.status().message() << "\n";
    return kExitBadInput;
  }
  s->version = *version;
  s->accelerator = opt.accelerator_type;
  absl::StatusOr<MlperfReferenceSet> refs = MlperfReferenceSet::Load(opt.references_dir, s->version);
  if (!refs.ok()) {
    err << refs.status().message() << "\n";
    return kExitBadInput;
  }
  s->spec = job.spec();
  s->refs = std::move(*refs);
  s->type = BenchmarkTypeOf(s->spec);
  s->ckpt = s->type == kMlperfCheckpointing;
  s->model = MlperfModelName(s->spec);
  s->workload = FindAnyMlperfWorkload(s->spec.model_name, s->version);
  s->threshold = s->workload != nullptr ? s->workload->au_threshold : s->spec.au_threshold;
  s->root = fs::path(opt.results_dir);
  s->model_dir = s->root / s->type / s->model;
  s->parent = s->ckpt ? s->model_dir : s->model_dir / "run";
  if (!s->ckpt) s->datagen = DatagenOverrides(s->root, s->model, job.overrides(), &s->datagen_from);
  return 0;
}

void PrintSetPlan(const SetContext& s, const SubmitOptions& base, const MlperfRunOptions& opt, std::ostream& out) {
  out << "MLPerf mode: " << (s.ckpt ? "" : opt.warmup ? "a warm-up run, then " : "") << opt.runs << " run(s) of "
      << base.job_path << " (" << s.model << ", "
      << (s.ckpt ? absl::StrCat("checkpointing: each run writes, clears the cache, reads")
                 : absl::StrCat("AU threshold ", s.threshold * 100, " %",
                                s.workload == nullptr ? ", from metric.au: not an MLPerf workload" : ""))
      << "); results in " << s.parent.string() << "\n";
  if (!s.datagen_from.empty()) out << "dataset: as generated in " << s.datagen_from << "\n";
  if (s.refs.use_custom) out << "references: " << s.refs.label << " (not the shipped MLPerf set)\n";
  out << std::flush;
}

// One line per finished run: its figures and (training) its AU verdict.
void PrintRunLine(const SetContext& s, const PlannedRun& p, int64_t seed, const RunOutcome& o, std::ostream& out) {
  const MlperfFigures fig = FiguresOfSummary(o.summary);
  if (s.ckpt) {
    const bool read = p.role == "read";
    out << absl::StrFormat("run-%d %-5s: %s, %s per checkpoint, %d checkpoint(s) (job %s)\n", p.index, p.role,
                           GibPerSecondText(read ? fig.read_gib_per_second : fig.write_gib_per_second),
                           SecondsText(read ? fig.read_duration_s : fig.write_duration_s),
                           read ? fig.reads : fig.writes, o.job_id)
        << std::flush;
    return;
  }
  const std::string label = p.index == 0 ? "warmup" : absl::StrCat("run-", p.index);
  const bool pass = fig.au_percent && *fig.au_percent >= s.threshold * 100;
  out << absl::StrFormat("%-8s seed %d: AU %s, %s (job %s): %s\n", label, seed, PercentText(fig.au_percent),
                         SamplesPerSecondText(fig.samples_per_second), o.job_id,
                         p.index == 0 ? "warm-up, not judged" : !fig.au_percent ? "NOT_MEASURED" : pass ? "PASS"
                                                                                                      : "FAIL")
      << std::flush;
}

// The metadata of a run's folder (RunIntoFolder completes it with the job's id, overrides and classification).
RunFolderMeta RunMeta(const SetContext& s, const PlannedRun& p, const std::string& stamp, const std::string& set,
                      int64_t seed) {
  RunFolderMeta meta;
  meta.benchmark_type = s.type;
  meta.model = s.model;
  meta.command = "run";
  meta.datetime = stamp;
  meta.set = set;
  meta.role = p.role;
  meta.index = p.index;
  meta.seed = s.ckpt ? s.spec.seed : seed;
  meta.version = s.version;
  if (s.ckpt) meta.accelerator = s.accelerator;
  return meta;
}

// v3.0's checkpointing rules (mlperf/checkpoint_v3.h) on the fleet the set will run on, before any job: 0, or 5
// with one line per broken rule.
int CheckCheckpointSet(const SetContext& s, const SubmitOptions& base, const MlperfRunOptions& opt,
                       std::ostream& err) {
  // Every read job clears the cache first (CheckpointReadOverrides): the flush of 4.3.1 is there.
  const CheckpointV3Input in =
      CheckpointV3InputFor(s.spec, DescribeFleet(base, nullptr), opt.accelerator_type, /*cache_flush=*/true);
  const std::vector<std::string> problems = CheckpointV3Problems(in);
  if (problems.empty()) return 0;
  for (const std::string& p : problems) err << "MLPerf mode: " << p << "\n";
  err << "MLPerf mode: refused before any job (" << problems.size() << " rule(s) of MLPerf Storage v3.0 broken on "
      << in.world << " ranks, " << in.hosts << " host(s))\n";
  return kExitBelowTarget;
}

// The data's (checkpoints') and the results' file systems of the set (mlperf/fs_separation.h).
FsSeparation ProbeSetSeparation(const SetContext& s, const MlperfRunOptions& opt) {
  return ProbeJobSeparation(s.spec, s.ckpt, opt.data_root, opt.results_dir);
}

// The gate before the first job: a set whose job (as given, classified now against the set's references) is CLOSED
// and whose data and results share a file system is refused (5) before anything runs. 0 to go on; without a local
// data root (submit: the agents' data roots are on their hosts) nothing is probed.
int GateFsSeparation(const SetContext& s, const MlperfRunOptions& opt, std::ostream& err) {
  if (opt.data_root.empty()) return 0;
  const FsSeparation sep = ProbeSetSeparation(s, opt);
  if (sep.separate) return 0;
  absl::StatusOr<json> c = ClassifyRun(s.spec, json(), "", s.refs.get(), s.version);
  if (!c.ok() || !c->is_object() || c->value("class", "") != "CLOSED") return 0;
  PrintFsRefusal(sep, s.ckpt, "refused before any job", err);
  return kExitBelowTarget;
}

// fs_separation.json in the run's folder, and the gate again on the run's own class: a CLOSED run on one file system
// stops the set (exit 5) naming the rule. 0 to go on.
int RecordFsSeparation(const SetContext& s, const MlperfRunOptions& opt, const FolderRun& f, const fs::path& dir,
                       std::ostream& err) {
  // submit: the agents' data roots as their summary.json reports them.
  const FsSeparation sep = opt.data_root.empty()
                               ? SeparationFromSummary(f.outcome.summary, opt.results_dir, s.spec.storage_type)
                               : ProbeSetSeparation(s, opt);
  if (absl::Status w = WriteFileAtomic((dir / "fs_separation.json").string(),
                                       FsSeparationJson(sep, s.ckpt).dump(2) + "\n");
      !w.ok()) {
    err << w.message() << "\n";
    return 1;
  }
  const bool closed = f.classification.is_object() && f.classification.value("class", "") == "CLOSED";
  if (sep.separate || !closed) return 0;
  PrintFsRefusal(sep, s.ckpt, absl::StrCat("stopping (see ", (dir / "fs_separation.json").string(), ")"), err);
  return kExitBelowTarget;
}

// The run folders a set wrote before it stopped, for its last message.
void PrintPartialSet(const SetContext& s, const std::vector<std::string>& stamps, std::ostream& err) {
  if (stamps.empty()) return;
  std::vector<std::string> dirs;
  for (const std::string& st : stamps) dirs.push_back((s.parent / st).string());
  err << "MLPerf mode: the set is partial (" << stamps.size() << " folder(s): " << absl::StrJoin(dirs, ", ")
      << "); `mlperf check` refuses it: remove them or run the set again\n";
}

}  // namespace

int RunMlperf(const SubmitOptions& base, const LoadedJob& job, const MlperfRunOptions& opt, std::ostream& out,
              std::ostream& err, const std::atomic<bool>* cancel) {
  SetContext s;
  if (const int rc = ResolveSet(job, opt, &s, err); rc != 0) return rc;
  const bool text = !base.client.json;
  if (s.ckpt) {
    if (const int rc = CheckCheckpointSet(s, base, opt, err); rc != 0) return rc;
  }
  if (const int rc = GateFsSeparation(s, opt, err); rc != 0) return rc;
  if (text) PrintSetPlan(s, base, opt, out);
  std::string set;
  std::vector<std::string> written;
  const std::vector<PlannedRun> plan = PlanRuns(s.ckpt, opt);
  for (size_t i = 0; i < plan.size(); ++i) {
    if (cancel != nullptr && *cancel) return 130;
    const PlannedRun& p = plan[i];
    const int64_t seed = s.spec.seed + p.index;
    std::vector<std::string> extra = s.datagen;
    extra.insert(extra.end(), p.extra.begin(), p.extra.end());
    if (!s.ckpt) extra.push_back(absl::StrCat("train.seed=", seed));
    // Generate (when the job asks) in the first submission only: the runs measure reading.
    if (s.spec.generate_data && i > 0) extra.push_back("workflow.generate_data=False");
    const std::string stamp = NextRunStamp(s.parent);
    if (set.empty()) set = stamp;
    const FolderRun f =
        RunIntoFolder(base, job, extra, s.parent / stamp, RunMeta(s, p, stamp, set, seed), s.refs, opt, err,
                      cancel);
    if (f.rc != 0) {
      PrintPartialSet(s, written, err);
      return f.rc;
    }
    written.push_back(stamp);
    if (const int rc = RecordFsSeparation(s, opt, f, s.parent / stamp, err); rc != 0) return rc;
    if (text) PrintRunLine(s, p, seed, f.outcome, out);
  }
  absl::StatusOr<json> score = ScoreMlperfSet(s.root.string(), s.type, s.model, set, s.refs.get());
  if (!score.ok()) {
    err << score.status().message() << "\n";
    return 1;
  }
  return FinishMlperfSet(*score, s.model_dir, s.threshold, s.workload != nullptr, text, out, err);
}

namespace {

// What --mlperf-datagen generates: datasize for the fleet the runs will use (its nodes, their memory, the
// accelerators per node), unless the user set dataset.num_files_train.
struct DatagenPlan {
  std::string model;
  int64_t hosts = 1, accelerators_per_host = 1;
  double memory = 0;           // bytes of RAM over every host
  std::string memory_source;   // where the memory figure came from (ExplainFleet)
  DatasizeResult datasize;
  int64_t files = 0;           // what is generated: datasize's count, or the user's
  std::vector<std::string> extra;  // the overrides of the generation job
};

// 0, or the exit status when datasize cannot be computed and the user did not set the file count.
int PlanDatagen(const SubmitOptions& base, const WorkloadSpec& spec, DatagenPlan* g, std::ostream& err) {
  const ExplainFleet fleet = DescribeFleet(base, nullptr);
  g->model = MlperfModelName(spec);
  g->hosts = std::max<size_t>(1, fleet.nodes.size());
  g->memory_source = fleet.memory_source;
  for (const ExplainNode& n : fleet.nodes) g->memory += static_cast<double>(n.memory_bytes);
  if (!(g->memory > 0)) {
    err << "--mlperf-datagen: the agents reported no memory (" << fleet.memory_source << "): datasize cannot be "
        << "computed; set dataset.num_files_train\n";
    if (!Overrides(base.overrides, "dataset.num_files_train")) return kExitBadInput;
  }
  const MlperfWorkload* known = FindMlperfWorkload(spec.model_name);
  MlperfWorkload w = known != nullptr ? *known : MlperfWorkload{};
  w.name = g->model;
  w.batch_size = spec.batch_size;
  w.record_length_bytes = spec.record_length_bytes;
  w.num_samples_per_file = spec.num_samples_per_file;
  g->accelerators_per_host = std::max<int64_t>(1, fleet.agents * fleet.accelerators_per_agent / g->hosts);
  const double gib_per_host = g->memory / static_cast<double>(g->hosts) / (1024.0 * 1024.0 * 1024.0);
  g->datasize = ComputeDatasize({g->accelerators_per_host, g->hosts, gib_per_host}, w);
  g->extra = {"workflow.generate_data=True", "workflow.train=False", "workflow.checkpoint=False",
              "workflow.evaluation=False"};
  g->files = spec.num_files_train;
  if (!Overrides(base.overrides, "dataset.num_files_train")) {
    g->files = g->datasize.num_files_train;
    g->extra.push_back(absl::StrCat("dataset.num_files_train=", g->files));
    if (g->datasize.num_subfolders_train > 0 && !Overrides(base.overrides, "dataset.num_subfolders_train")) {
      g->extra.push_back(absl::StrCat("dataset.num_subfolders_train=", g->datasize.num_subfolders_train));
    }
  }
  return 0;
}

void PrintDatagenPlan(const DatagenPlan& g, std::ostream& out) {
  const DatasizeResult& d = g.datasize;
  out << absl::StrFormat("MLPerf datagen for %s: %d host(s) (%s), %d accelerators per host, %s of RAM in all\n",
                         g.model, g.hosts, g.memory_source, g.accelerators_per_host, Human(g.memory));
  out << absl::StrFormat("datasize: %d files (set by the %s rule: %d for 5x the RAM, %d for 500 steps)\n",
                         d.num_files_train, d.binding == "memory" ? "5x RAM" : "500-step", d.files_for_memory,
                         d.files_for_steps);
  if (g.files != d.num_files_train) {
    out << "generating " << g.files << " files as dataset.num_files_train says"
        << (g.files < d.num_files_train ? ": below datasize, runs on them are INVALID" : "") << "\n";
  }
  out << std::flush;
}

// What the generation did: JSON (--json) or two lines of text.
void PrintDatagenDone(const DatagenPlan& g, const RunOutcome& o, const fs::path& dir, bool text, std::ostream& out) {
  const json gen = o.summary.value("dlio_ext", json::object()).value("generate", json::object());
  if (!text) {
    const DatasizeResult& d = g.datasize;
    out << json{{"model", g.model},
                {"datasize", {{"num_files_train", d.num_files_train},
                              {"num_subfolders_train", d.num_subfolders_train},
                              {"binding", d.binding},
                              {"files_for_memory", d.files_for_memory},
                              {"files_for_steps", d.files_for_steps}}},
                {"num_files_train", g.files},
                {"job_id", o.job_id},
                {"results_dir", dir.string()},
                {"generate", gen}}
               .dump(2)
        << "\n";
    return;
  }
  out << absl::StrFormat("generated %d files (%s in %.1f s, job %s) into %s\n", g.files,
                         Human(gen.value("io", json::object()).value("bytes", 0.0)), gen.value("seconds", 0.0),
                         o.job_id, dir.string());
  out << "next: the same command with --mlperf instead of --mlperf-datagen (the runs read " << g.files
      << " files from this generation)\n";
}

}  // namespace

int RunMlperfDatagen(const SubmitOptions& base, const LoadedJob& job, const MlperfRunOptions& opt, std::ostream& out,
                     std::ostream& err, const std::atomic<bool>* cancel) {
  const WorkloadSpec& spec = job.spec();
  if (BenchmarkTypeOf(spec) == kMlperfCheckpointing) {
    err << "--mlperf-datagen: " << MlperfModelName(spec) << " is a checkpointing workload: it reads no dataset\n";
    return kExitBadInput;
  }
  DatagenPlan g;
  if (const int rc = PlanDatagen(base, spec, &g, err); rc != 0) return rc;
  const bool text = !base.client.json;
  if (text) PrintDatagenPlan(g, out);
  const fs::path parent = fs::path(opt.results_dir) / kMlperfTraining / g.model / "datagen";
  absl::StatusOr<MlperfVersion> version = ParseMlperfVersion(opt.mlperf_version);
  absl::StatusOr<MlperfReferenceSet> refs =
      version.ok() ? MlperfReferenceSet::Load(opt.references_dir, *version) : version.status();
  if (!refs.ok()) {
    err << refs.status().message() << "\n";
    return kExitBadInput;
  }
  RunFolderMeta meta;
  meta.benchmark_type = kMlperfTraining;
  meta.model = g.model;
  meta.command = "datagen";
  meta.datetime = NextRunStamp(parent);
  meta.set = meta.datetime;
  meta.role = "datagen";
  meta.seed = spec.seed;
  meta.version = *version;
  const FolderRun f = RunIntoFolder(base, job, g.extra, parent / meta.datetime, meta, *refs, opt, err, cancel);
  if (f.rc != 0) return f.rc;
  PrintDatagenDone(g, f.outcome, parent / meta.datetime, text, out);
  return kExitOk;
}

namespace {

// The trials of --find-max-accelerators: one job per tried count of accelerators per agent, judged against the AU
// threshold, each a line of text (or an entry of the JSON report).
class AcceleratorTrials {
 public:
  AcceleratorTrials(const SubmitOptions& base, const LoadedJob& job, double threshold, bool text, std::ostream& out,
                    std::ostream& err, const std::atomic<bool>* cancel)
      : base_(base), job_(job), threshold_(threshold), text_(text), out_(out), err_(err), cancel_(cancel) {}

  // Returns 1 pass, 0 fail, -1 error (the exit status in *rc).
  int Run(int n, int* rc) {
    std::vector<std::string> extra;
    if (job_.spec().generate_data && generated_) extra.push_back("workflow.generate_data=False");
    RunOutcome r = SubmitOne(base_, job_, extra, n, "", err_, cancel_);
    if (!r.ok) {
      *rc = r.rc != 0 ? r.rc : 1;
      err_ << "trial with " << n << " accelerators per agent did not succeed"
           << (r.job_id.empty() ? "" : " (job " + r.job_id + ")") << "\n";
      return -1;
    }
    generated_ = true;
    points_.push_back({n, r.job_id, "", r});
    // A trial whose AU could not be measured does not pass: the search never claims what it did not see.
    const bool pass = r.au && *r.au >= threshold_ * 100;
    const int no = static_cast<int>(trials_.size()) + 1;
    trials_.push_back({{"trial", no}, {"accelerators_per_agent", n}, {"au_percentage", Num(r.au)},
                       {"throughput_samples_per_second", Num(r.samples_per_second)}, {"pass", pass},
                       {"job_id", r.job_id}});
    if (text_) {
      out_ << absl::StrFormat("trial %d: %d accelerators per agent: AU %s, %s: %s\n", no, n, PercentText(r.au),
                              SamplesPerSecondText(r.samples_per_second),
                              pass ? "pass" : r.au ? "fail" : "fail (AU not measured)")
           << std::flush;
    }
    return pass ? 1 : 0;
  }
  const json& trials() const { return trials_; }
  const std::vector<RampPoint>& points() const { return points_; }

 private:
  const SubmitOptions& base_;
  const LoadedJob& job_;
  const double threshold_;
  const bool text_;
  std::ostream& out_;
  std::ostream& err_;
  const std::atomic<bool>* cancel_;
  bool generated_ = false;  // the first successful trial generated the data (when the job asks); later ones reuse it
  json trials_ = json::array();
  std::vector<RampPoint> points_;  // the trials in the order tried, for the ramp chart (FindMaxRampJson)
};

// The largest count in [1, bound] whose trial passes (0: none), by doubling from 1 (the bound itself is tried when
// the doubling overshoots it), then bisecting between the last pass and the first failure. -1 with the exit status
// in *rc when a trial failed to run or the search was cancelled.
int SearchMaxAccelerators(AcceleratorTrials& trials, int bound, const std::atomic<bool>* cancel, int* rc) {
  int lo = 0;           // largest passing count so far
  int hi = bound + 1;   // smallest failing count so far
  for (int n = 1; n < hi;) {
    if (cancel != nullptr && *cancel) {
      *rc = 130;
      return -1;
    }
    const int t = trials.Run(n, rc);
    if (t < 0) return -1;
    if (t == 1) {
      lo = n;
      if (n == bound) break;
      n = std::min(n * 2, bound);
    } else {
      hi = n;
    }
  }
  while (hi - lo > 1 && hi <= bound) {
    if (cancel != nullptr && *cancel) {
      *rc = 130;
      return -1;
    }
    const int mid = lo + (hi - lo) / 2;
    const int t = trials.Run(mid, rc);
    if (t < 0) return -1;
    (t == 1 ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

int FindMaxAccelerators(const SubmitOptions& base, const LoadedJob& job, const FindMaxOptions& opt, std::ostream& out,
                        std::ostream& err, const std::atomic<bool>* cancel) {
  const WorkloadSpec& spec = job.spec();
  if (opt.max_accelerators < 1) {
    err << "--max-accelerators: must be >= 1\n";
    return 2;
  }
  const MlperfWorkload* w = FindMlperfWorkload(spec.model_name);
  const double threshold = w != nullptr ? w->au_threshold : spec.au_threshold;
  const bool text = !base.client.json;
  if (text) {
    out << "searching the largest accelerators per agent (1.." << opt.max_accelerators << ") with AU >= "
        << threshold * 100 << " %" << (w == nullptr ? " (metric.au)" : absl::StrCat(" (", w->name, ")")) << "\n"
        << std::flush;
  }
  AcceleratorTrials trials(base, job, threshold, text, out, err, cancel);
  int rc = 0;
  const int lo = SearchMaxAccelerators(trials, opt.max_accelerators, cancel, &rc);
  if (lo < 0) return rc;
  const bool at_bound = lo == opt.max_accelerators;
  const int status = lo > 0 ? kExitOk : kExitBelowTarget;
  // The probes in ramp.json's form (client/ramp.h), so `report` draws them on the ramp chart.
  const json ramp = FindMaxRampJson(threshold * 100, trials.points(), lo);
  const std::string folder = !base.output_dir.empty() ? base.output_dir : spec.output_folder;
  if (!folder.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (absl::Status s = WriteFileAtomic(folder + "/ramp.json", ramp.dump(2) + "\n"); !s.ok()) {
      err << "--find-max-accelerators: " << s.message() << "\n";
    } else if (text) {
      out << "probes written to " << folder << "/ramp.json\n";
    }
  }
  if (!text) {
    out << json{{"au_threshold_percentage", threshold * 100},
                {"trials", trials.trials()},
                {"max_accelerators_per_agent", lo},
                {"search_bound", opt.max_accelerators},
                {"bound_reached", at_bound},
                {"ramp", ramp},
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
