// `mlperf check`: every rule a reviewer applies to a results tree, one finding per failure naming the file and the
// rule (submission.h).
#include "mlperf/submission.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "mlperf/capacity_record.h"
#include "mlperf/checkpoint_v3.h"
#include "mlperf/code_image.h"
#include "mlperf/packaging.h"
#include "mlperf/submission_tree.h"
#include "mlperf/submission_v3.h"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

}  // namespace

namespace submission {
namespace {

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

// ---- the checks ---------------------------------------------------------------------------------------------------

class Checker {
 public:
  // `refs_label`: what the check judges against ("shipped" or the --mlperf-references folder).
  Checker(const Tree& t, const std::vector<MlperfReference>* refs, std::string refs_label)
      : t_(t), refs_(refs), refs_label_(std::move(refs_label)), v3_(IsV3Tree(t.root)) {}

  std::vector<Finding> All() {
    for (const Finding& f : t_.load_problems) findings_.push_back(f);
    for (const Run& r : t_.runs) CheckRunFiles(r);
    for (const Workload& w : Group(t_)) CheckWorkload(w);
    if (v3_) {
      for (Finding& f : CheckV3Tree(t_, refs_)) findings_.push_back(std::move(f));
    }
    CheckCodeImagePool();
    CheckRootFiles();
    return findings_;
  }

 private:
  void Fail(const fs::path& file, const std::string& rule, const std::string& msg) {
    findings_.push_back({file.string(), rule, msg});
  }

  // Rules.md 3.4.2 / 4.4.2: a run whose fs_separation.json (written by --mlperf, mlperf/fs_separation.h) found the
  // data and the results on one file system. Runs without the file (submit: not probed) are not judged here.
  void CheckFsSeparation(const Run& r) {
    std::error_code ec;
    const fs::path f = r.dir / "fs_separation.json";
    if (r.command == "datagen" || !fs::exists(t_.root / f, ec)) return;
    const json sep = json::parse(ReadText(t_.root / f), nullptr, false);
    if (sep.is_object() && sep.value("separate", true)) return;
    const json data = sep.is_object() ? sep.value("data", json::object()) : json::object();
    const json results = sep.is_object() ? sep.value("results", json::object()) : json::object();
    Fail(f, "fs separation",
         absl::StrCat(sep.is_object() ? sep.value("rule", "Rules.md 3.4.2") : "Rules.md 3.4.2", ": the data (",
                      data.value("path", "?"), ", device ", data.value("device", "?"), ") and the results (",
                      results.value("path", "?"), ", device ", results.value("device", "?"),
                      ") are on one file system"));
  }

  // CAP-01: a v3.0 run folder holds the capacity gate's record (capacity_gate.json, mlperf/capacity_record.h)
  // showing the job's data fitting its file system.
  void CheckCapacity(const Run& r) {
    if (r.version != MlperfVersion::kV3_0) return;
    const fs::path f = r.dir / kCapacityRecordFile;
    const std::string problem = CapacityRecordProblem(t_.root / f);
    if (!problem.empty()) Fail(f, kCapacityRule, problem);
  }

  // CHECK-01..03 and 2.1.6 (mlperf/code_image.h) over the v3.0 run folders: the pool is the tree's root, in a v3.0
  // tree its <org>/ folder (<division>/<org>/results/...). The reference checksums are those of the references this
  // check judges by.
  void CheckCodeImagePool() {
    std::vector<std::pair<fs::path, fs::path>> runs;
    std::set<fs::path> pools;
    for (const Run& r : t_.runs) {
      if (r.version != MlperfVersion::kV3_0) continue;
      fs::path pool;
      if (v3_) {
        auto it = r.dir.begin();
        if (it != r.dir.end() && ++it != r.dir.end()) pool = *it;
      }
      runs.emplace_back(r.dir, pool);
      pools.insert(pool);
    }
    if (runs.empty()) return;
    const std::map<std::string, std::string> sums =
        ReferenceChecksums(refs_ != nullptr ? *refs_ : MlperfReferences(t_.version()));
    for (const CodeImageFinding& f :
         CheckCodeImages(t_.root, std::vector<fs::path>(pools.begin(), pools.end()), runs, &sums)) {
      Fail(f.file, f.rule, f.message);
    }
  }

  void CheckRunFiles(const Run& r) {
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
    if (!v3_ && r.dir != expect) {
      Fail(r.dir, "layout", absl::StrCat("its metadata places it at ", expect.string(), " (<type>/<model>/",
                                         r.type == kMlperfCheckpointing ? "" : "<command>/", "<datetime>)"));
    }
    CheckFsSeparation(r);
    CheckCapacity(r);
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
    for (const Run* r : s.runs) {
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
        const std::string was = absl::AsciiStrToUpper(recorded.get<std::string>());
        // A rehearsal classified against other references than this check's: not an edit.
        const bool other_refs = !r->references.empty() && r->references != refs_label_;
        Fail(cfg, "class",
             other_refs ? absl::StrCat(c.cls, " against the ", refs_label_ == "shipped" ? "shipped references" : refs_label_,
                                       ", but ", r->meta_file.string(), " records ", was, " against the references ",
                                       r->references == "shipped" ? "shipped" : absl::StrCat("in ", r->references),
                                       " it was classified by when it ran: a rehearsal tree; check it with "
                                       "--mlperf-references ", r->references)
                        : absl::StrCat(c.cls, ", but ", r->meta_file.string(), " records ", was,
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
      const Run* r = FindRole(s, "run", k);
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
      CheckCacheDrop(*r);
      CheckAu(*r);
      CheckDatasize(*r);
    }
    CheckDatagen(w, s);
    if (!missing.empty()) {
      Fail(runs_dir, "5-run rule",
           absl::StrCat("set ", s.set, ": ", kMlperfRuns - static_cast<int>(missing.size()), " timed runs, ",
                        kMlperfRuns, " required (missing run ", absl::StrJoin(missing, ", "), ")", FoldersOf(s)));
    }
    const ReplicationVerdict v = JudgeReplication(tp);
    if (missing.empty() && v.max_deviation && !v.replicates) {
      Fail(runs_dir, "replication", absl::StrFormat("samples/s of the runs deviate up to %.2f %% from their mean "
                                                    "(5 %% allowed, §6.7)", *v.max_deviation * 100));
    } else if (missing.empty() && !v.max_deviation) {
      Fail(runs_dir, "replication", "a run's samples/s was not measured");
    }
  }

  // Rules.md 4.7.2: the read invocation starts at most 30 s after the write invocation ended (summary.json "end" of
  // the write job, "start" of the read job).
  void CheckPause(const Run& w, const Run& r) {
    if (!w.summary.is_object() || !r.summary.is_object()) return;
    absl::StatusOr<int64_t> end = ParseTimestamp(w.summary.value("end", ""));
    absl::StatusOr<int64_t> start = ParseTimestamp(r.summary.value("start", ""));
    if (!end.ok() || !start.ok()) return;
    const double pause = static_cast<double>(*start - *end) / 1e6;
    if (pause > kV3CheckpointMaxPauseSeconds) {
      Fail(r.dir / "summary.json", "checkpoint rule",
           absl::StrFormat("Rules.md 4.7.2: the read invocation started %.1f s after the write invocation ended "
                           "(%s); at most %.0f s", pause, w.dir.string(), kV3CheckpointMaxPauseSeconds));
    }
  }

  // Rules.md 4.6.2, 4.3.4, 4.3.5 and 4.3.1 (mlperf/checkpoint_v3.h) on what the write job ran: its ranks and hosts
  // (summary.json), the accelerator it emulated (the metadata's, from --accelerator-type), its smallest host's RAM,
  // and whether the read job flushed the cache. v3.0 runs only (a v2.0 tree is judged by v2.0's rules).
  void CheckCheckpointV3(const Run& w, const Run& r) {
    if (w.version != MlperfVersion::kV3_0 || !w.spec || !w.summary.is_object()) return;
    ExplainFleet fleet;
    const RunShape sh = ShapeOf(w.summary);
    fleet.agents = 1;
    fleet.accelerators_per_agent = sh.world;
    double min_gib = 0;
    for (const json& m : w.summary.value("host_memory_GB", json::array())) {
      if (m.is_number() && (min_gib == 0 || m.get<double>() < min_gib)) min_gib = m.get<double>();
    }
    for (const std::string& h : HostsOf(w.summary)) {
      fleet.nodes.push_back({h, static_cast<uint64_t>(min_gib * 1024 * 1024 * 1024), 1, 0});
    }
    const json acc = w.meta.value("accelerator", json(nullptr));
    const CheckpointV3Input in = CheckpointV3InputFor(*w.spec, fleet, acc.is_string() ? acc.get<std::string>() : "",
                                                      r.spec && r.spec->checkpoint_evict_cache);
    for (const std::string& p : CheckpointV3Problems(in)) Fail(w.dir / "summary.json", "checkpoint rule", p);
  }

  // v3.0: the page cache dropped before every training epoch (the v3 DLIO fork does; --mlperf sets it), so no
  // epoch is served from memory (storage #464).
  void CheckCacheDrop(const Run& r) {
    if (r.spec && r.spec->evict_cache != "every_epoch") {
      Fail(r.dir / "dlio_config/config.yaml", "cache rule",
           absl::StrCat("the page cache was not dropped before every training epoch (dlio_ext.evict_cache is ",
                        r.spec->evict_cache, "; MLPerf Storage v3.0 drops it, as --mlperf does)"));
    }
  }

  // "; the partial set's folders: a, b, c": what to remove or complete.
  static std::string FoldersOf(const Set& s) {
    std::vector<std::string> dirs;
    for (const Run* r : s.runs) dirs.push_back(r->dir.string());
    return absl::StrCat("; the partial set's folders: ", absl::StrJoin(dirs, ", "));
  }

  void CheckAu(const Run& r) {
    const MlperfWorkload* w = FindAnyMlperfWorkload(r.model, r.version);
    if (w == nullptr) return;
    if (!r.fig.au_percent) {
      Fail(r.dir / "summary.json", "AU rule", "metric.train_au_mean_percentage not measured");
    } else if (*r.fig.au_percent < w->au_threshold * 100) {
      Fail(r.dir / "summary.json", "AU rule",
           absl::StrFormat("AU %.2f %% is below %s's %.0f %%", *r.fig.au_percent, w->name, w->au_threshold * 100));
    }
  }

  void CheckDatasize(const Run& r) {
    if (!r.spec || !r.summary.is_object()) return;
    const int64_t used = r.summary.value("num_files_train", int64_t{0});
    const int64_t required = RequiredFiles(*r.spec, r.summary, r.version);
    if (required > 0 && used < required) {
      const RunShape sh = ShapeOf(r.summary);
      Fail(r.dir / "summary.json", "datasize rule",
           absl::StrFormat("num_files_train %d is below the %d files datasize requires for %d host(s) of %.2f GiB "
                           "and %d accelerators (5x the hosts' RAM, 500 steps per epoch; Rules.md 3.3.1)",
                           used, required, sh.hosts, sh.memory_gib_per_host, sh.world));
    }
  }

  // The dataset the runs read was generated (§7: its logs belong to the submission), and at least that large.
  void CheckDatagen(const Workload& w, const Set& s) {
    int64_t used = 0, generated = 0;
    fs::path reader;
    for (const Run* r : s.runs) {
      const int64_t n = r->summary.is_object() ? r->summary.value("num_files_train", int64_t{0}) : 0;
      if (n > used) {
        used = n;
        reader = r->dir;
      }
    }
    for (const Run* g : w.datagen) {
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
      const Run* w = FindRole(s, "write", k);
      const Run* r = FindRole(s, "read", k);
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
      CheckPause(*w, *r);
      CheckCheckpointV3(*w, *r);
      if (w->spec && !w->spec->checkpoint_fsync) {
        Fail(w->dir / "dlio_config/config.yaml", "checkpoint rule", "checkpoint.fsync is off (§2.2.2: required)");
      }
      if (r->spec && !r->spec->checkpoint_evict_cache) {
        Fail(r->dir / "dlio_config/config.yaml", "cache rule",
             "the cache was not cleared before the reads (dlio_ext.checkpoint_evict_cache is off; Rules.md 4.3.1 "
             "and 4.7.1: a flush between the write and the read invocations)");
      }
      wr.push_back(w->fig.write_gib_per_second);
      rd.push_back(r->fig.read_gib_per_second);
    }
    if (!missing.empty()) {
      Fail(wdir, "5-run rule",
           absl::StrCat("set ", s.set, ": ", kMlperfRuns - static_cast<int>(missing.size()), " complete runs (a write "
                        "job and a read job each), ", kMlperfRuns, " required (missing run ",
                        absl::StrJoin(missing, ", "), ")", FoldersOf(s)));
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
    for (const Run* r : s.runs) {
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
    if (v3_) {
      // v3.0: systems/<system>.yaml per system (CheckV3Tree, Rules.md 2.1.7).
    } else if (!fs::exists(sd, ec)) {
      Fail("system_description.yaml", "system description", "missing: run `dlio-coordinator mlperf report`");
    } else {
      std::string error;
      for (const std::string& u : UnfilledFieldsOf(sd, &error)) {
        Fail("system_description.yaml", "system description", absl::StrCat(u, " is not filled in"));
      }
      if (!error.empty()) Fail("system_description.yaml", "system description", "not valid YAML: " + error);
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
  const std::string refs_label_;
  const bool v3_;  // a v3.0 submission tree (submission_v3.h): its layout rules instead of the rehearsal's
  std::vector<Finding> findings_;
};

}  // namespace
}  // namespace submission

using submission::Checker;
using submission::Finding;
using submission::OpenTree;
using submission::Tree;

int MlperfCheck(const SubmissionOptions& opt, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Tree> t = OpenTree(opt);
  absl::StatusOr<MlperfReferenceSet> refs =
      t.ok() ? MlperfReferenceSet::Load(opt.references_dir, t->version()) : absl::StatusOr<MlperfReferenceSet>(t.status());
  if (!refs.ok()) {
    err << "mlperf check: " << refs.status().message() << "\n";
    return kExitBadInput;
  }
  Checker checker(*t, refs->get(), refs->label);
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
        << ", not the shipped MLPerf Storage " << MlperfVersionName(t->version())
        << " ones: a rehearsal, not a submission\n";
  }
  out << "check: " << (findings.empty() ? "ACCEPTED" : absl::StrCat("REFUSED (", findings.size(), " problem(s))"))
      << " - " << t->runs.size() << " run folder(s) under " << opt.root << "\n";
  return rc;
}

}  // namespace dlio
