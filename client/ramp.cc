#include "client/ramp.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/coordinator_client.h"
#include "client/render.h"
#include "results/results.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json Num(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The figures of a finished job into `r`: the mean of its training epochs and its verdict.
void TakeFigures(const JobOutcome& o, RunOutcome* r) {
  r->verdict = o.verdict;
  if (o.epochs.empty()) return;  // a job that trains nothing (data generation, checkpointing) has no epochs
  r->au = o.mean.au_percent;
  r->samples_per_second = o.mean.samples_per_second;
  r->mb_per_second = o.mean.actual_mb_per_second ? o.mean.actual_mb_per_second : o.mean.mib_per_second;
}

void ReadSummary(const std::string& output_dir, RunOutcome* r) {
  std::error_code ec;
  const fs::path path = fs::path(output_dir) / "summary.json";
  if (output_dir.empty() || !fs::exists(path, ec)) return;
  try {
    std::ifstream in(path);
    r->summary = json::parse(in);
  } catch (const std::exception&) {
  }
}

}  // namespace

RunOutcome SubmitOne(const SubmitOptions& base, const LoadedJob& job, const std::vector<std::string>& extra,
                     int accelerators_per_agent, const std::string& output_dir, std::ostream& err,
                     const std::atomic<bool>* cancel) {
  RunOutcome r;
  absl::StatusOr<LoadedJob> run = job.WithOverrides(extra);
  if (!run.ok()) {
    r.rc = ReportFailure(run.status(), err);
    return r;
  }
  JobPlacement placement = PlacementOf(base);
  if (accelerators_per_agent > 0) placement.accelerators_per_agent = accelerators_per_agent;
  if (placement.agents > 0 && placement.accelerators_per_agent > 0) {
    const JobWorld world{placement.agents, placement.accelerators_per_agent};
    if (absl::Status s = CheckPreRun(*run, world); !s.ok()) {
      r.rc = ReportFailure(s, err);
      return r;
    }
  }
  absl::StatusOr<CoordinatorClient> client = CoordinatorClient::Connect(base.client);
  if (!client.ok()) {
    r.rc = ReportFailure(client.status(), err);
    return r;
  }
  SubmitView view(nullptr, err, base.client.coordinator, /*tty=*/false);  // a signal's cancel lines only
  RunOptions options;
  options.output_dir = output_dir;
  options.trace_path = base.trace_path;
  options.cancel = cancel;
  options.observer = &view;
  const absl::StatusOr<JobOutcome> o = client->Run(*run, placement, options);
  // A fetch that failed leaves the run without a job id, as `submit --json` then prints no document.
  if (!o.ok() || !o->files.status.ok()) {
    r.rc = ReportFailure(o.ok() ? o->files.status : o.status(), err);
    return r;
  }
  r.rc = ExitStatusOf(*o);
  r.job_id = o->job_id;
  // A run that ran but missed its target (5) or could not measure its AU (6) is a run all the same.
  r.ok = o->succeeded();
  // The job's own reason (a refusal names its rule: CAP-01, the free space, the dataset) on the job's one line: the
  // coordinator and agents log refusals at info, so nothing else shows it.
  if (!r.ok && !o->message.empty()) err << "dlio-coordinator: " << o->message << "\n";
  TakeFigures(*o, &r);
  r.job = *std::move(run);
  if (r.ok) ReadSummary(output_dir, &r);
  return r;
}

absl::StatusOr<RampSpec> ParseRamp(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--ramp: '", text, "': ", why, "; ", kRampAllowed));
  };
  const std::vector<std::string> kv = absl::StrSplit(text, absl::MaxSplits('=', 1));
  if (kv.size() != 2) return bad("no '='");
  RampSpec r;
  r.axis = kv[0];
  if (r.axis != "accelerators" && r.axis != "agents") return bad(absl::StrCat("unknown axis '", r.axis, "'"));
  for (const std::string& p : std::vector<std::string>(absl::StrSplit(kv[1], ','))) {
    int n = 0;
    if (!absl::SimpleAtoi(p, &n) || n < 1) return bad(absl::StrCat("'", p, "' is not an integer >= 1"));
    if (!r.points.empty() && n <= r.points.back()) return bad(absl::StrCat(n, " does not increase"));
    r.points.push_back(n);
  }
  if (r.points.size() > 64) return bad(absl::StrCat(r.points.size(), " points"));
  return r;
}

std::optional<int> RampKnee(const json& points, double target_percent) {
  std::optional<int> knee;
  for (const json& p : points) {
    const json& au = p["au_percentage"];
    if (au.is_number() && au.get<double>() >= target_percent) knee = p["n"].get<int>();
  }
  return knee;
}

json RampJson(const RampSpec& spec, double target_percent, const std::vector<RampPoint>& points) {
  json arr = json::array();
  for (const RampPoint& p : points) {
    const RunOutcome& r = p.outcome;
    const json& ev = r.verdict.limit_evidence;
    const json wait = ev.is_object() && ev.contains("batch_wait_share") ? ev["batch_wait_share"] : json(nullptr);
    arr.push_back({{"n", p.n},
                   {"job_id", p.job_id},
                   {"folder", p.folder},
                   {"au_percentage", Num(r.au)},
                   {"samples_per_second", Num(r.samples_per_second)},
                   {"mb_per_second", Num(r.mb_per_second)},
                   {"batch_wait_share", wait},
                   {"batch_wait_p99_seconds", ev.is_object() && ev.contains("batch_wait_p99_seconds")
                                                  ? ev["batch_wait_p99_seconds"]
                                                  : json(nullptr)},
                   {"limit", r.verdict.limit_class.empty() ? json(nullptr) : json(r.verdict.limit_class)},
                   {"verdict", VerdictStatusName(r.verdict.status)}});
  }
  const std::optional<int> knee = RampKnee(arr, target_percent);
  return {{"axis", spec.axis},
          {"au_target_percentage", target_percent},
          {"knee", knee ? json(*knee) : json(nullptr)},
          {"points", arr}};
}

json FindMaxRampJson(double target_percent, const std::vector<RampPoint>& trials, int found) {
  std::map<int, RampPoint> by_n;  // the last trial of each count
  json probes = json::array();
  for (const RampPoint& t : trials) {
    by_n[t.n] = t;
    probes.push_back(t.n);
  }
  std::vector<RampPoint> points;
  RampSpec spec{"accelerators", {}};
  for (auto& [n, p] : by_n) {
    spec.points.push_back(n);
    points.push_back(std::move(p));
  }
  json doc = RampJson(spec, target_percent, points);
  doc["probes"] = probes;
  doc["find_max"] = found;
  return doc;
}

std::string RampTable(const json& ramp) {
  const auto cell = [](const json& v, int digits) {
    return v.is_number() ? absl::StrFormat("%.*f", digits, v.get<double>()) : std::string("n/m");
  };
  const std::string axis = ramp.value("axis", "");
  std::string s = absl::StrFormat("%-14s %8s %12s %10s %10s %12s %-12s %s\n", axis, "AU %", "samples/s", "MB/s",
                                  "wait %", "wait p99 ms", "limit", "verdict");
  const json knee = ramp.value("knee", json(nullptr));
  for (const json& p : ramp["points"]) {
    const bool at_knee = knee.is_number() && knee.get<int>() == p["n"].get<int>();
    const json& w = p["batch_wait_share"];
    const json p99 = p.value("batch_wait_p99_seconds", json(nullptr));
    s += absl::StrFormat("%-14s %8s %12s %10s %10s %12s %-12s %s\n",
                         absl::StrCat(p["n"].get<int>(), at_knee ? " <- knee" : ""), cell(p["au_percentage"], 1),
                         cell(p["samples_per_second"], 1), cell(p["mb_per_second"], 2),
                         w.is_number() ? absl::StrFormat("%.1f", 100 * w.get<double>()) : "n/m",
                         p99.is_number() ? absl::StrFormat("%.1f", 1e3 * p99.get<double>()) : "n/m",
                         p["limit"].is_string() ? p["limit"].get<std::string>() : "-",
                         p["verdict"].get<std::string>());
  }
  const double target = ramp.value("au_target_percentage", 0.0);
  if (knee.is_number()) {
    absl::StrAppend(&s, absl::StrFormat("knee: %d %s (the last point with AU >= %.1f %%)\n", knee.get<int>(), axis,
                                        target));
  } else {
    absl::StrAppend(&s, absl::StrFormat("knee: none (no point kept AU >= %.1f %%)\n", target));
  }
  return s;
}

namespace {

// The ramp's folder: --output, else output.folder, else "ramp".
fs::path RampFolder(const SubmitOptions& base, const LoadedJob& job) {
  if (!base.output_dir.empty()) return base.output_dir;
  if (!job.spec().output_folder.empty()) return job.spec().output_folder;
  return "ramp";
}

// Runs point `n`: its placement on the ramp's axis, the dataset generated by the first point only.
RunOutcome RunPoint(const SubmitOptions& base, const LoadedJob& job, const RampSpec& ramp, int n, bool first,
                    const fs::path& dir, std::ostream& err, const std::atomic<bool>* cancel) {
  SubmitOptions o = base;
  o.output_dir = dir.string();
  int accelerators = 0;
  if (ramp.axis == "agents") {
    o.agents = n;
  } else {
    accelerators = n;
  }
  std::vector<std::string> extra;
  if (job.spec().generate_data && !first) extra.push_back("workflow.generate_data=False");
  return SubmitOne(o, job, extra, accelerators, dir.string(), err, cancel);
}

}  // namespace

int RunRamp(const SubmitOptions& base, const LoadedJob& job, const RampSpec& ramp, std::ostream& out,
            std::ostream& err, const std::atomic<bool>* cancel) {
  const fs::path root = RampFolder(base, job);
  const bool text = !base.client.json;
  const double target = job.spec().au_threshold * 100;
  if (text) {
    out << "ramp over " << ramp.axis << " " << absl::StrJoin(ramp.points, ",") << " into " << root.string()
        << " (AU target " << target << " %)\n"
        << std::flush;
  }
  std::vector<RampPoint> points;
  for (const int n : ramp.points) {
    if (cancel != nullptr && *cancel) return 130;
    const std::string folder = absl::StrCat(ramp.axis, "-", n);
    RunOutcome r = RunPoint(base, job, ramp, n, points.empty(), root / folder, err, cancel);
    if (!r.ok) {
      err << "--ramp: the point " << ramp.axis << "=" << n << " did not succeed"
          << (r.job_id.empty() ? "" : " (job " + r.job_id + ")") << "; stopping\n";
      return r.rc != 0 ? r.rc : 1;
    }
    if (text) {
      out << absl::StrFormat("point %s=%d: job %s, AU %s %%, %s samples/s\n", ramp.axis, n, r.job_id,
                             r.au ? absl::StrFormat("%.1f", *r.au) : "n/m",
                             r.samples_per_second ? absl::StrFormat("%.1f", *r.samples_per_second) : "n/m")
          << std::flush;
    }
    points.push_back({n, r.job_id, folder, std::move(r)});
  }
  const json doc = RampJson(ramp, target, points);
  if (absl::Status s = WriteFileAtomic((root / "ramp.json").string(), doc.dump(2) + "\n"); !s.ok()) {
    err << "--ramp: " << s.message() << "\n";
    return 1;
  }
  if (text) {
    out << RampTable(doc) << "ramp written to " << (root / "ramp.json").string() << "\n";
  } else {
    out << doc.dump(2) << "\n";
  }
  return kExitOk;
}

}  // namespace dlio
