// `mlperf report`: the score of each workload's set of runs, results.csv, mlperf_storage_report.json and the
// pre-filled system_description.yaml (submission.h, packaging.h).
#include "mlperf/packaging.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/host_facts.h"
#include "client/client.h"
#include "mlperf/submission_v3.h"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

}  // namespace

namespace submission {
namespace {

// MLPerf publishes results rounded to two decimals (Submission_guidelines.md §6.4).
json Published(const std::optional<double>& v) {
  return v ? json(std::round(*v * 100.0) / 100.0) : json(nullptr);
}
std::string Fmt(const std::optional<double>& v, const char* unit) {
  return v ? absl::StrFormat("%.2f %s", *v, unit) : std::string("not measured");
}

// ---- scores ------------------------------------------------------------------------------------------------------

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
  const MlperfWorkload* w =
      FindAnyMlperfWorkload(s.model, s.runs.empty() ? MlperfVersion::kV2_0 : s.runs.front()->version);
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

}  // namespace

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

namespace {

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

}  // namespace
}  // namespace submission

using submission::BuildReport;
using submission::Fmt;
using submission::Group;
using submission::LoadTree;
using submission::OpenTree;
using submission::OptNum;
using submission::ResultsCsv;
using submission::ScoreSet;
using submission::Set;
using submission::SystemDescription;
using submission::Tree;
using submission::Workload;

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

namespace {

// --mlperf-version v3.0: the submission tree beside the rehearsal's (submission_v3.h), with our results.csv and
// mlperf_storage_report.json at its root; prints what it placed. 0, or the exit status.
int WriteSubmissionTree(const SubmissionOptions& opt, const Tree& t, const json& report, const std::string& csv,
                        std::ostream& out, std::ostream& err) {
  submission::V3TreeOptions o;
  o.out = opt.submission_dir.empty() ? fs::path(opt.root) / "submission" : fs::path(opt.submission_dir);
  o.org = opt.org;
  o.system = opt.system.empty() ? submission::DefaultSystemName(t) : opt.system;
  absl::StatusOr<submission::V3TreeWritten> w = submission::WriteV3Tree(t, report, o);
  if (!w.ok()) {
    err << "mlperf report: " << w.status().message() << "\n";
    return w.status().code() == absl::StatusCode::kInvalidArgument ? kExitBadInput : kExitJobNotSucceeded;
  }
  for (const auto& [file, text] : {std::make_pair("results.csv", csv),
                                   std::make_pair("mlperf_storage_report.json", report.dump(2) + "\n")}) {
    if (absl::Status s = WriteFileAtomic((o.out / file).string(), text); !s.ok()) {
      err << "mlperf report: " << s.message() << "\n";
      return kExitJobNotSucceeded;
    }
  }
  if (opt.json) return kExitOk;
  out << "v3.0 submission tree " << o.out.string() << " (org " << o.org << ", system " << o.system << "):\n";
  for (const std::string& x : w->workloads) out << "  placed " << x << "\n";
  for (const std::string& x : w->skipped) out << "  left out " << x << "\n";
  for (const std::string& x : w->removed_images) {
    out << "  removed " << (o.out / o.org / x).string() << " (a code image no run points at any more)\n";
  }
  for (const std::string& x : w->systems) {
    out << "  system description " << x
        << (absl::EndsWith(x, "(kept: the submitter's edits)") ? "" : " (pre-filled: fill in every FILL IN, add the PDF)")
        << "\n";
  }
  return kExitOk;
}

// One line per workload: its set, division, mean and verdicts.
void PrintScores(const json& report, std::ostream& out) {
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
}

}  // namespace

int MlperfReport(const SubmissionOptions& opt, std::ostream& out, std::ostream& err) {
  absl::StatusOr<MlperfVersion> version = ParseMlperfVersion(opt.mlperf_version);
  if (!version.ok()) {
    err << "mlperf report: --mlperf-version: " << version.status().message() << "\n";
    return kExitBadInput;
  }
  absl::StatusOr<Tree> t = OpenTree(opt);
  absl::StatusOr<MlperfReferenceSet> refs =
      t.ok() ? MlperfReferenceSet::Load(opt.references_dir, t->version()) : absl::StatusOr<MlperfReferenceSet>(t.status());
  if (!refs.ok()) {
    err << "mlperf report: " << refs.status().message() << "\n";
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
  const bool v3 = *version == MlperfVersion::kV3_0;
  if (opt.json) {
    const int rc = v3 ? WriteSubmissionTree(opt, *t, report, ResultsCsv(*t, refs->get()), out, err) : kExitOk;
    if (rc == kExitOk) out << report.dump(2) << "\n";
    return rc;
  }
  PrintScores(report, out);
  out << "wrote " << (root / "results.csv").string() << ", " << (root / "mlperf_storage_report.json").string()
      << "\n";
  out << (kept ? "kept " : "wrote ") << (root / "system_description.yaml").string()
      << (kept ? " (exists: the submitter's edits are kept)" : " (pre-filled: fill in every field marked FILL IN)")
      << "\n";
  return v3 ? WriteSubmissionTree(opt, *t, report, ResultsCsv(*t, refs->get()), out, err) : kExitOk;
}

}  // namespace dlio
