#include "client/render.h"

#include <algorithm>
#include <ctime>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace dlio {

using json = nlohmann::json;

namespace {

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  return absl::StrFormat("%.1f %s", b, units[u]);
}

std::string Clock(double secs) {
  if (secs < 0 || secs > 1e7) return "--:--";
  const auto s = static_cast<int64_t>(secs + 0.5);
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string LocalTime(int64_t unix_us) {
  if (unix_us <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_us / 1000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

json Num(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// A table or JSON row of one epoch (or the means); a figure that is not measured is null.
json RowJson(const EpochMetric& m, bool with_epoch) {
  json j = {{"au_percent", Num(m.au_percent)},
            {"au_min_rank_percent", Num(m.au_min_rank)},
            {"samples_per_second", Num(m.samples_per_second)},
            {"mib_per_second", Num(m.mib_per_second)},
            {"actual_mb_per_second", Num(m.actual_mb_per_second)}};
  if (with_epoch) j["epoch"] = m.epoch;
  return j;
}

// The rows of summary.json's dlio_ext.train_epochs (the `results` verb reads the files, not the event).
std::vector<EpochMetric> EpochsFromSummary(const json& summary) {
  std::vector<EpochMetric> rows;
  if (!summary.is_object() || !summary.contains("dlio_ext")) return rows;
  auto opt = [](const json& j, const char* key) -> std::optional<double> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  for (const json& e : summary["dlio_ext"].value("train_epochs", json::array())) {
    EpochMetric m;
    m.epoch = e.value("epoch", 0);
    m.au_percent = opt(e, "au_percentage");
    m.au_min_rank = opt(e, "au_min_rank_percentage");
    m.samples_per_second = opt(e, "throughput_samples_per_second");
    m.mib_per_second = opt(e, "io_MiB_per_second");
    m.actual_mb_per_second = opt(e, "io_actual_MB_per_second");
    rows.push_back(m);
  }
  return rows;
}

// The "mean" row of the table from summary.json's metric block.
EpochMetric MeanFromSummary(const json& summary) {
  EpochMetric m;
  const json metric = summary.is_object() ? summary.value("metric", json::object()) : json::object();
  auto opt = [&](const char* key) -> std::optional<double> {
    auto it = metric.find(key);
    if (it == metric.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  m.au_percent = opt("train_au_mean_percentage");
  m.samples_per_second = opt("train_throughput_mean_samples_per_second");
  m.mib_per_second = opt("train_io_mean_MB_per_second");
  m.actual_mb_per_second = opt("train_io_actual_mean_MB_per_second");
  return m;
}

json InfoJson(const JobInfoData& i) {
  const JobRecord& r = i.record;
  json j = {{"job_id", r.id},
            {"state", JobStateName(r.state)},
            {"source_name", r.source_name},
            {"submitted_unix_us", r.submitted_unix_us},
            {"started_unix_us", r.started_unix_us},
            {"ended_unix_us", r.ended_unix_us},
            {"agents", r.agent_names},
            {"world_size", r.world},
            {"accelerators_per_agent", r.ranks_per_agent},
            {"phase_id", r.phase_id},
            {"done", i.done},
            {"total", i.total},
            {"epochs_done", r.epochs_done},
            {"epochs_total", r.epochs_total},
            {"message", r.message},
            {"result_dir", i.result_dir},
            {"has_results", r.has_results}};
  if (r.state == JobState::kQueued) j["queue_position"] = i.queue_position;
  if (i.completed_au_percent) j["completed_au_percent"] = *i.completed_au_percent;
  if (i.completed_samples_per_second) j["completed_samples_per_second"] = *i.completed_samples_per_second;
  j["verdict"] = VerdictJson(i.verdict);
  return j;
}

// A running job's completed epochs: "AU 31.2 %, 812.4 samples/s" (either "not measured"); empty when it has none.
std::string CompletedFigures(const JobInfoData& i) {
  if (!i.completed_au_percent && !i.completed_samples_per_second) return "";
  return absl::StrCat(
      i.completed_au_percent ? absl::StrFormat("AU %.1f %%", *i.completed_au_percent) : "AU not measured", ", ",
      i.completed_samples_per_second ? absl::StrFormat("%.1f samples/s", *i.completed_samples_per_second)
                                     : "samples/s not measured");
}

// A figure of `width` columns, "n/m" when it is not measured.
std::string Cell(const std::optional<double>& v, int width) {
  return v ? absl::StrFormat("%*.2f", width, *v) : absl::StrFormat("%*s", width, "n/m");
}

// The per-epoch table; `mean` is printed as the last row when given.
void PrintTable(const std::vector<EpochMetric>& rows, const EpochMetric* mean, std::ostream& out) {
  out << absl::StrFormat("\n%-7s %10s %14s %14s %16s\n", "epoch", "AU (%)", "samples/s", "MB/s (MiB)",
                         "actual MB/s");
  auto line = [&](const std::string& label, const EpochMetric& m) {
    out << absl::StrFormat("%-7s ", label) << Cell(m.au_percent, 10) << " " << Cell(m.samples_per_second, 14) << " "
        << Cell(m.mib_per_second, 14) << " " << Cell(m.actual_mb_per_second, 16) << "\n";
  };
  bool unmeasured = false;
  for (const EpochMetric& r : rows) {
    line(std::to_string(r.epoch), r);
    unmeasured = unmeasured || !r.au_percent || !r.samples_per_second;
  }
  if (mean != nullptr) line("mean", *mean);
  out << "(MB/s (MiB) is DLIO's figure: samples/s x nominal record size in MiB; actual MB/s is measured bytes read, "
         "10^6"
      << (unmeasured ? "; n/m: not measured, DLIO's metric window leaves too few steps (docs/results.md)" : "")
      << ")\n";
}

json CheckpointRowJson(const CheckpointMetric& r) {
  return {{"operation", r.load ? "load" : "save"},
          {"index", r.index},
          {"bytes", r.bytes},
          {"rank0_duration_seconds", r.rank0_duration_s},
          {"rank0_GiB_per_second", r.rank0_gib_per_second},
          {"max_duration_seconds", r.max_duration_s},
          {"min_GiB_per_second", r.min_gib_per_second}};
}

void PrintCheckpoints(const std::vector<CheckpointMetric>& rows, std::ostream& out) {
  out << absl::StrFormat("\n%-12s %10s %14s %14s %14s %14s\n", "checkpoint", "GiB", "rank-0 s", "rank-0 GiB/s",
                         "max s", "min GiB/s");
  for (const CheckpointMetric& r : rows) {
    out << absl::StrFormat("%-12s %10.3f %14.3f %14.3f %14.3f %14.3f\n",
                           absl::StrCat(r.load ? "load " : "save ", r.index),
                           static_cast<double>(r.bytes) / static_cast<double>(uint64_t{1} << 30),
                           r.rank0_duration_s, r.rank0_gib_per_second, r.max_duration_s, r.min_gib_per_second);
  }
  out << "(rank-0: DLIO's figures; max s and min GiB/s over ranks: MLPerf's; GiB = 2^30 bytes, DLIO's \"GB\")\n";
}

// The final event: its message, epoch table and checkpoints printed (text) or put into `doc` (JSON).
void RenderFinal(const JobOutcome& o, bool json_out, std::ostream& out, std::ostream& err, json& doc) {
  if (!json_out) {
    if (o.succeeded()) {
      out << o.message << "\n";
    } else {
      err << "dlio-coordinator: " << o.message << "\n";
      if (o.cancelled_by_signal) {
        err << "job " << o.job_id << " was cancelled because this command was interrupted\n";
      }
    }
    if (!o.epochs.empty()) {
      if (!o.succeeded()) out << "results of the completed epoch(s):";
      PrintTable(o.epochs, &o.mean, out);
    }
    if (!o.checkpoints.empty()) PrintCheckpoints(o.checkpoints, out);
    return;
  }
  json epochs = json::array();
  for (const EpochMetric& r : o.epochs) epochs.push_back(RowJson(r, true));
  doc["epochs"] = epochs;
  if (!o.epochs.empty()) doc["mean"] = RowJson(o.mean, false);
  if (!o.checkpoints.empty()) {
    json ck = json::array();
    for (const CheckpointMetric& r : o.checkpoints) ck.push_back(CheckpointRowJson(r));
    doc["checkpoints"] = ck;
  }
  if (o.cancelled_by_signal) doc["cancelled_by_signal"] = true;
}

// What Run fetched, in its order (results, then the trace), up to the fetch that failed: text lines or `doc`.
void RenderFiles(const JobOutcome& o, const std::string& where_results_live, bool json_out, std::ostream& out,
                 json& doc) {
  const FetchedFiles& f = o.files;
  if (f.count >= 0) {
    if (!json_out) out << "results: " << f.count << " files in " << f.output << "\n";
    doc["output"] = f.output;
    doc["files"] = f.count;
  } else if (o.has_results() && f.output.empty() && !where_results_live.empty()) {
    if (!json_out) out << "results: " << where_results_live << "/" << o.job_id << "\n";
    doc["results_dir"] = where_results_live + "/" + o.job_id;
  }
  if (!f.trace.empty()) {
    if (!json_out) out << "trace: " << f.trace << "\n";
    doc["trace"] = f.trace;
  }
}

}  // namespace

int ExitStatusOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
      return kExitBadInput;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kUnimplemented:
      return kExitUnreachable;
    case absl::StatusCode::kUnauthenticated:
      return kExitRefused;
    default:
      return kExitJobNotSucceeded;
  }
}

int ExitStatusFor(const Verdict& v) {
  switch (v.status) {
    case VerdictStatus::kPass:
    case VerdictStatus::kNotApplicable:
      return kExitOk;
    case VerdictStatus::kFail:
      return kExitBelowTarget;
    case VerdictStatus::kNotMeasured:
      return kExitNotMeasured;
    case VerdictStatus::kIncomplete:
      return kExitJobNotSucceeded;
  }
  return kExitJobNotSucceeded;
}

int ExitStatusOf(const JobOutcome& o) {
  if (!o.files.status.ok()) return ExitStatusOf(o.files.status);
  if (o.succeeded()) return ExitStatusFor(o.verdict);
  return o.refused ? kExitBadInput : kExitJobNotSucceeded;
}

int ExitStatusOfJob(const JobInfoData& job) {
  if (!IsFinal(job.record.state)) return kExitOk;
  if (job.record.state != JobState::kSucceeded) return kExitJobNotSucceeded;
  return ExitStatusFor(job.verdict);
}

int ReportFailure(const absl::Status& s, std::ostream& err) {
  err << s.message() << "\n";
  return ExitStatusOf(s);
}

void RenderWarnings(const LoadedJob& job, std::ostream& err) {
  for (const WorkloadWarning& w : job.diagnostics().warnings) err << "warning: " << w.text << "\n";
}

SubmitView::SubmitView(std::ostream* out, std::ostream& err, std::string coordinator, bool tty)
    : out_(out), err_(err), coordinator_(std::move(coordinator)), tty_(tty) {}

void SubmitView::Submitted(const std::string& job_id) {
  if (out_ != nullptr) *out_ << "job " << job_id << " submitted to " << coordinator_ << "\n" << std::flush;
}

void SubmitView::Progress(const JobEventData& e) {
  if (out_ == nullptr) return;
  std::ostream& out = *out_;
  const auto now = SteadyClock::now();
  if (!e.phase_id.empty() && e.phase_id != phase_) {  // "phase X started" comes first: the clock starts
    phase_ = e.phase_id;
    start_ = now;
    last_plain_ = SteadyClock::time_point();
    if (absl::StartsWith(phase_, "train-epoch-") && !trained_) {
      trained_ = true;
      train_start_ = now;
    }
  }
  if (!e.message.empty()) {
    Clear();
    out << e.message << "\n" << std::flush;
    return;
  }
  if (e.total == 0) return;
  const std::string figures = Figures(e, now);
  if (tty_) {
    // 24 columns: with the phase name and the figures, fits a 100-column terminal.
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * std::min(1.0, static_cast<double>(e.done) / e.total));
    out << "\r\033[K[" << phase_ << "] [" << std::string(filled, '#') << std::string(kWidth - filled, '-') << "] "
        << figures << std::flush;
    shown_ = true;
  } else if (now - last_plain_ >= std::chrono::seconds(5) || e.done >= e.total) {
    // Every 5 s at most: a log stays readable for long jobs.
    last_plain_ = now;
    out << "[" << phase_ << "] " << figures << "\n" << std::flush;
  }
}

void SubmitView::Cancelling(const std::string& job_id) {
  err_ << "\ninterrupted: cancelling job " << job_id << " on the coordinator\n" << std::flush;
}

void SubmitView::CancelFailed(const std::string& job_id, const absl::Status& why) {
  err_ << "cancelling job " << job_id << " failed: " << why.message() << "\n";
}

void SubmitView::Clear() {
  if (shown_ && out_ != nullptr) *out_ << "\r\033[K";
  shown_ = false;
}

std::string SubmitView::Figures(const JobEventData& e, SteadyClock::time_point now) const {
  const bool files = phase_ == "generate";
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double fraction = std::min(1.0, static_cast<double>(e.done) / static_cast<double>(e.total));
  const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : -1;
  std::string f;
  if (e.epochs_total > 0 && e.epoch > 0) absl::StrAppend(&f, "epoch ", e.epoch, "/", e.epochs_total, "  ");
  absl::StrAppend(&f, absl::StrFormat("%d/%d %s", e.done, e.total, files ? "files" : "steps"));
  if (e.live_au) absl::StrAppend(&f, absl::StrFormat("  AU %.1f %%", *e.live_au));
  if (elapsed > 0) {
    absl::StrAppend(&f, absl::StrFormat("  %.1f samples/s", static_cast<double>(e.samples) / elapsed));
    if (e.bytes > 0) absl::StrAppend(&f, "  ", HumanBytes(static_cast<double>(e.bytes) / elapsed), "/s");
  }
  absl::StrAppend(&f, "  ETA ", Clock(eta));
  // The whole job: training so far, per epoch (evaluations and checkpoints included), times the epochs left.
  if (trained_ && e.epochs_total > 0 && e.epoch > 0 && absl::StartsWith(phase_, "train-epoch-")) {
    const double done_epochs = static_cast<double>(e.epoch - 1) + fraction;
    const double job_elapsed = std::chrono::duration<double>(now - train_start_).count();
    if (done_epochs > 0) {
      const double left = job_elapsed / done_epochs * (static_cast<double>(e.epochs_total) - done_epochs);
      absl::StrAppend(&f, " (job ", Clock(left), ")");
    }
  }
  return f;
}

int RenderOutcome(const JobOutcome& o, const std::string& where_results_live, bool json_out, std::ostream& out,
                  std::ostream& err) {
  json doc = {{"job_id", o.job_id}, {"state", JobStateName(o.state)}, {"message", o.message}};
  doc["verdict"] = VerdictJson(o.verdict);
  RenderFinal(o, json_out, out, err, doc);
  RenderFiles(o, where_results_live, json_out, out, doc);
  // A fetch that failed ends here, after what was fetched before it: no verdict line, no document.
  if (!o.files.status.ok()) return ReportFailure(o.files.status, err);
  const int status = ExitStatusOf(o);
  doc["exit_status"] = status;
  if (json_out) {
    out << doc.dump(2) << "\n";
  } else {
    out << "verdict: " << VerdictLine(o.verdict) << "\n";
    if (const std::string limit = LimitLine(o.verdict); !limit.empty()) out << limit << "\n";
  }
  return status;
}

void RenderDetached(const std::string& job_id, bool json_out, std::ostream& out) {
  if (json_out) {
    out << json{{"job_id", job_id}, {"state", "queued"}}.dump() << "\n";
  } else {
    out << job_id << "\n";
  }
}

int RenderStatus(const JobInfoData& i, bool json_out, std::ostream& out) {
  const JobRecord& r = i.record;
  const int status = ExitStatusOfJob(i);
  if (json_out) {
    json doc = InfoJson(i);
    doc["exit_status"] = status;
    out << doc.dump(2) << "\n";
    return status;
  }
  out << "job " << r.id << ": " << JobStateName(r.state);
  if (r.state == JobState::kQueued) out << " (" << i.queue_position << " ahead)";
  out << "\n";
  out << "  job file:   " << r.source_name << "\n";
  out << "  submitted:  " << LocalTime(r.submitted_unix_us) << "   started: " << LocalTime(r.started_unix_us)
      << "   ended: " << LocalTime(r.ended_unix_us) << "\n";
  if (!r.agent_names.empty()) {
    out << "  agents:     " << r.agent_names.size() << " (" << absl::StrJoin(r.agent_names, ", ") << "), " << r.world
        << " rank(s), " << r.ranks_per_agent << " per agent\n";
  }
  if (!r.phase_id.empty()) {
    out << "  phase:      " << r.phase_id;
    if (i.total > 0 && !IsFinal(r.state)) {
      out << ", " << i.done << " of " << i.total << (r.phase_id == "generate" ? " files" : " steps");
    }
    out << "\n";
  }
  if (r.epochs_total > 0) {
    out << "  epochs:     " << r.epochs_done << " of " << r.epochs_total << " completed";
    if (const std::string f = CompletedFigures(i); !f.empty()) out << " (" << f << ")";
    out << "\n";
  }
  if (r.has_results) {
    out << "  results:    " << i.result_dir
        << (r.state == JobState::kSucceeded ? "" : absl::StrCat(" (", r.epochs_done, " completed epoch(s))")) << "\n";
  }
  if (!r.message.empty()) out << "  message:    " << r.message << "\n";
  out << "  verdict:    " << VerdictLine(i.verdict) << "\n";
  if (!i.verdict.limit_line.empty()) out << "  limit:      " << i.verdict.limit_line << "\n";
  return status;
}

void RenderList(const JobList& list, bool json_out, std::ostream& out) {
  if (json_out) {
    json jobs = json::array(), agents = json::array();
    for (const JobInfoData& i : list.jobs) jobs.push_back(InfoJson(i));
    for (const AttachedAgent& a : list.agents) {
      agents.push_back({{"name", a.name},
                        {"hostname", a.hostname},
                        {"accelerators", a.accelerators},
                        {"attached_s", a.attached_s},
                        {"last_heard_s", a.last_heard_s},
                        {"job_id", a.job_id}});
    }
    json doc{{"jobs", jobs}, {"agents", agents}};
    if (list.more) doc["more"] = true;  // only then: a list of every job reads as it always did
    out << doc.dump(2) << "\n";
    return;
  }
  if (list.jobs.empty()) {
    out << "no jobs\n";
  } else {
    out << absl::StrFormat("%-26s %-12s %-14s %-19s %-7s %-6s %s\n", "JOB", "STATE", "VERDICT", "SUBMITTED", "EPOCHS",
                           "RANKS", "MESSAGE");
    for (const JobInfoData& i : list.jobs) {
      const JobRecord& r = i.record;
      std::string msg = r.message;
      if (const std::string f = CompletedFigures(i); !f.empty()) msg = absl::StrCat("epochs so far: ", f, "; ", msg);
      // 100 characters keep a row on a wide terminal; `status JOB` shows the whole line.
      if (msg.size() > 100) msg = msg.substr(0, 97) + "...";
      out << absl::StrFormat("%-26s %-12s %-14s %-19s %-7s %-6d %s\n", r.id, JobStateName(r.state),
                             VerdictStatusName(i.verdict.status), LocalTime(r.submitted_unix_us),
                             absl::StrCat(r.epochs_done, "/", r.epochs_total), r.world, msg);
    }
    if (list.more) {
      out << "(the newest " << list.jobs.size() << " jobs; the coordinator keeps older ones: --limit N shows N, "
          << "--limit 0 every one)\n";
    }
  }
  out << "\n" << list.agents.size() << " agent(s) attached";
  out << (!list.agents.empty() ? ":\n" : "\n");
  for (const AttachedAgent& a : list.agents) {
    out << absl::StrFormat("  %-24s node %-20s %d accelerator(s), heard %.1f s ago, %s\n", a.name, a.hostname,
                           a.accelerators, a.last_heard_s,
                           a.job_id.empty() ? std::string("idle") : absl::StrCat("job ", a.job_id));
  }
}

bool StopConfirmed(bool cancelled, const JobInfoData& i) {
  if (!cancelled) return true;  // it had already ended: there was no stop to confirm
  // The coordinator's words for agents that did not confirm within its stop grace (coordinator/job_runner.cc,
  // Coordinator::StopPhase): "...; agent(s) a1, a2 did not confirm the stop within 2 s".
  return IsFinal(i.record.state) && !absl::StrContains(i.record.message, " did not confirm the stop within ");
}

int RenderCancel(const std::string& job_id, bool cancelled, const JobInfoData& i, bool json_out, std::ostream& out) {
  const JobRecord& r = i.record;
  const bool confirmed = StopConfirmed(cancelled, i);
  const int status = confirmed ? kExitOk : kExitJobNotSucceeded;
  if (json_out) {
    out << json{{"job_id", job_id}, {"cancelled", cancelled}, {"state", JobStateName(r.state)},
                {"message", r.message}, {"stop_confirmed", confirmed}}
               .dump(2)
        << "\n";
    return status;
  }
  if (!cancelled) {
    out << "job " << job_id << " had already ended (" << JobStateName(r.state) << "); nothing to cancel\n";
  } else if (IsFinal(r.state)) {
    out << r.message << "\n";
  } else {
    out << "job " << job_id << ": cancel requested; still " << JobStateName(r.state) << " after 10 s";
    if (!r.agent_names.empty()) {
      out << "; agent(s) " << absl::StrJoin(r.agent_names, ", ") << " did not confirm the stop";
    }
    out << "\n";
  }
  return status;
}

int RenderResults(const std::string& job_id, const JobInfoData& info, const std::vector<std::string>& names,
                  const std::string& summary_text, const std::string& output_dir, bool json_out, std::ostream& out) {
  const json summary = json::parse(summary_text, nullptr, /*allow_exceptions=*/false);
  const int status = ExitStatusOfJob(info);
  if (json_out) {
    json doc = {{"job_id", job_id}, {"state", JobStateName(info.record.state)}, {"files", names}};
    doc["output"] = output_dir.empty() ? json(nullptr) : json(output_dir);
    doc["summary"] = summary.is_discarded() ? json(nullptr) : summary;
    doc["verdict"] = VerdictJson(info.verdict);
    doc["exit_status"] = status;
    out << doc.dump(2) << "\n";
    return status;
  }
  out << "job " << job_id << ": " << JobStateName(info.record.state);
  if (info.record.epochs_total > 0) {
    out << ", " << info.record.epochs_done << " of " << info.record.epochs_total << " epoch(s)";
  }
  out << "\n";
  if (const std::vector<EpochMetric> rows = EpochsFromSummary(summary); !rows.empty()) {
    const EpochMetric mean = MeanFromSummary(summary);
    PrintTable(rows, &mean, out);
    out << "\n";
  }
  if (output_dir.empty()) {
    out << names.size() << " result file(s) on the coordinator (" << info.result_dir
        << "); fetch them with --output DIR\n";
  } else {
    out << "results: " << names.size() << " files in " << output_dir << "\n";
  }
  out << "verdict: " << VerdictLine(info.verdict) << "\n";
  if (const std::string limit = LimitLine(info.verdict); !limit.empty()) out << limit << "\n";
  return status;
}

}  // namespace dlio
