#include "client/client.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "client/explain.h"
#include "plan/preflight.h"
#include "results/results.h"
#include "job/workload_spec.h"
#include "coordinator/coordinator.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "dlio/v1/convert.h"
#include "dlio/v1/credentials.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"

namespace dlio {

namespace fs = std::filesystem;
using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

// The job file, with the limits of job/workload_spec.h (a regular file, at most 1 MiB of UTF-8).
absl::StatusOr<std::string> ReadFile(const std::string& path) { return ReadWorkloadFile(path); }

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

const char* StateName(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_QUEUED: return "queued";
    case v1::JOB_STATE_RUNNING: return "running";
    case v1::JOB_STATE_SUCCEEDED: return "succeeded";
    case v1::JOB_STATE_FAILED: return "failed";
    case v1::JOB_STATE_CANCELLED: return "cancelled";
    case v1::JOB_STATE_INTERRUPTED: return "interrupted";
    default: return "unknown";
  }
}

bool Final(v1::JobState s) { return s != v1::JOB_STATE_QUEUED && s != v1::JOB_STATE_RUNNING; }

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

json InfoJson(const v1::JobInfo& i) {
  json j = {{"job_id", i.job_id()},
            {"state", StateName(i.state())},
            {"source_name", i.source_name()},
            {"submitted_unix_us", i.submitted_unix_us()},
            {"started_unix_us", i.started_unix_us()},
            {"ended_unix_us", i.ended_unix_us()},
            {"agents", std::vector<std::string>(i.agents().begin(), i.agents().end())},
            {"world_size", i.world_size()},
            {"accelerators_per_agent", i.accelerators_per_agent()},
            {"phase_id", i.phase_id()},
            {"done", i.done()},
            {"total", i.total()},
            {"epochs_done", i.epochs_done()},
            {"epochs_total", i.epochs_total()},
            {"message", i.message()},
            {"result_dir", i.result_dir()},
            {"has_results", i.has_results()}};
  if (i.state() == v1::JOB_STATE_QUEUED) j["queue_position"] = i.queue_position();
  j["verdict"] = VerdictJson(FromProto(i.verdict()));
  return j;
}

// `status` and `results`: 0 while queued or running; a finished job's verdict status (0, 5, 6); 1 when it did not
// succeed.
int ExitStatusOfJob(const v1::JobInfo& i) {
  if (!Final(i.state())) return kExitOk;
  if (i.state() != v1::JOB_STATE_SUCCEEDED) return kExitJobNotSucceeded;
  return ExitStatusFor(FromProto(i.verdict()));
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

json CheckpointRowJson(const v1::CheckpointRow& r) {
  return {{"operation", r.load() ? "load" : "save"},
          {"index", r.index()},
          {"bytes", r.bytes()},
          {"rank0_duration_seconds", r.rank0_duration_s()},
          {"rank0_GiB_per_second", r.rank0_gib_per_second()},
          {"max_duration_seconds", r.max_duration_s()},
          {"min_GiB_per_second", r.min_gib_per_second()}};
}

void PrintCheckpoints(const google::protobuf::RepeatedPtrField<v1::CheckpointRow>& rows, std::ostream& out) {
  out << absl::StrFormat("\n%-12s %10s %14s %14s %14s %14s\n", "checkpoint", "GiB", "rank-0 s", "rank-0 GiB/s",
                         "max s", "min GiB/s");
  for (const v1::CheckpointRow& r : rows) {
    out << absl::StrFormat("%-12s %10.3f %14.3f %14.3f %14.3f %14.3f\n",
                           absl::StrCat(r.load() ? "load " : "save ", r.index()),
                           static_cast<double>(r.bytes()) / static_cast<double>(uint64_t{1} << 30),
                           r.rank0_duration_s(), r.rank0_gib_per_second(), r.max_duration_s(),
                           r.min_gib_per_second());
  }
  out << "(rank-0: DLIO's figures; max s and min GiB/s over ranks: MLPerf's; GiB = 2^30 bytes, DLIO's \"GB\")\n";
}

// One connection to the coordinator with the token and TLS material of the command line.
struct Connection {
  const ClientOptions* opt = nullptr;
  Transport transport;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Coordinator::Stub> stub;

  void Prepare(grpc::ClientContext* ctx) const { AddToken(ctx, transport); }

  // 0, or the exit code after printing one line. Nothing listening there (connection refused) fails at once, or
  // is retried until --wait-for-coordinator ends (a coordinator that is starting); a failed TLS handshake fails at
  // once; a connection that never completes (an address that drops packets) fails after --connect-timeout.
  int Open(const ClientOptions& o, std::ostream& err) {
    opt = &o;
    absl::StatusOr<Transport> t = LoadTransport(o.transport, /*server=*/false);
    if (!t.ok()) {
      err << t.status().message() << "\n";
      return 2;
    }
    transport = std::move(*t);
    grpc::ChannelArguments args = ChannelArgs(transport);
    // Reconnect every 100-500 ms while waiting for a starting coordinator (gRPC's default backoff starts at 1 s and
    // grows to 2 min).
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    channel = grpc::CreateCustomChannel(o.coordinator, ChannelCredentials(transport), args);
    stub = v1::Coordinator::NewStub(channel);
    const auto start = std::chrono::system_clock::now();
    const auto wait_refused = start + std::chrono::seconds(o.wait_for_coordinator_s);
    const auto deadline = start + std::chrono::seconds(std::max(o.connect_timeout_s, o.wait_for_coordinator_s));
    for (;;) {
      const grpc_connectivity_state st = channel->GetState(/*try_to_connect=*/true);
      if (st == GRPC_CHANNEL_READY) return 0;
      const auto now = std::chrono::system_clock::now();
      if (st == GRPC_CHANNEL_TRANSIENT_FAILURE) {
        const std::string why = FailureReason();
        const bool refused = absl::StrContains(why, "Connection refused");
        if (!refused || now >= wait_refused) return Unreachable(why, refused, err);
      }
      if (now >= deadline) {
        err << "--coordinator: cannot reach the coordinator at " << o.coordinator << " within "
            << std::max(o.connect_timeout_s, o.wait_for_coordinator_s) << " s (the connection never completed)\n";
        return 3;
      }
      // gRPC keeps a failed channel in TRANSIENT_FAILURE while it retries (no state change to wait for): look again
      // every 100 ms.
      channel->WaitForStateChange(st, std::min(deadline, now + std::chrono::milliseconds(100)));
    }
  }

  // gRPC's reason for a channel in TRANSIENT_FAILURE ("... Connection refused", a handshake error, ...): a call on
  // such a channel fails at once with it.
  std::string FailureReason() const {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
    v1::ListJobsResponse resp;
    const grpc::Status s = stub->ListJobs(&ctx, v1::ListJobsRequest(), &resp);
    return s.ok() ? "no connection" : s.error_message();
  }

  // One line for a connection that failed for good; TLS hints only where TLS is in use.
  int Unreachable(const std::string& why, bool refused, std::ostream& err) const {
    const std::string& at = opt->coordinator;
    if (refused) {
      if (opt->wait_for_coordinator_s > 0) {
        err << "--coordinator: nothing listened at " << at << " within " << opt->wait_for_coordinator_s
            << " s (connection refused)\n";
      } else {
        err << "--coordinator: nothing listens at " << at << " (connection refused): is the coordinator running "
            << "there? (--wait-for-coordinator SECONDS waits for one that is starting)\n";
      }
    } else if (transport.tls() && absl::StrContains(why, "not in peer certificate")) {  // "Peer name X is not in ..."
      const std::string expected = transport.server_name.empty() ? at.substr(0, at.rfind(':')) : transport.server_name;
      err << "--coordinator: the certificate of the coordinator at " << at << " does not hold the name '" << expected
          << "' (" << why << "); pass --tls-server-name with a name the certificate holds\n";
    } else if (transport.tls()) {
      err << "--coordinator: TLS with the coordinator at " << at << " failed (" << why
          << "); check --tls-ca (the CA that signed its certificate) and --tls-cert/--tls-key (mutual TLS)\n";
    } else {
      // A TLS server hangs up on a plaintext client's HTTP/2 preface: gRPC then says "Socket closed".
      err << "--coordinator: cannot reach the coordinator at " << at << " (" << why << ")"
          << (absl::StrContains(why, "Socket closed") ? "; if the coordinator serves TLS, pass --tls-ca" : "") << "\n";
    }
    return 3;
  }

  // Maps a failed call to an exit code after printing one line.
  int Fail(const grpc::Status& s, std::ostream& err) const {
    switch (s.error_code()) {
      case grpc::StatusCode::UNAUTHENTICATED:
        err << "refused by the coordinator at " << opt->coordinator << ": " << s.error_message() << "\n";
        return 4;
      case grpc::StatusCode::INVALID_ARGUMENT:
        err << s.error_message() << "\n";
        return 2;
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        err << "lost the coordinator at " << opt->coordinator << ": " << s.error_message() << "\n";
        return 3;
      case grpc::StatusCode::UNIMPLEMENTED:
        err << "the coordinator at " << opt->coordinator << " does not offer this call (an older build?)\n";
        return 3;
      default:
        err << (s.error_message().empty() ? absl::StrCat("gRPC error ", static_cast<int>(s.error_code()))
                                          : s.error_message())
            << "\n";
        return 1;
    }
  }
};

// Live progress of one job: a redrawn bar on a terminal, a plain line every few seconds otherwise. During training:
// the epoch (k of N), the epoch's live AU and MB/s, the phase's and the whole job's ETA.
class ProgressView {
 public:
  ProgressView(std::ostream& out, bool tty) : out_(out), tty_(tty) {}

  // Every event but the final one: a message line, or progress.
  void Event(const v1::JobEvent& e) {
    const auto now = SteadyClock::now();
    if (!e.phase_id().empty() && e.phase_id() != phase_) {  // "phase X started" comes first: the clock starts
      phase_ = e.phase_id();
      start_ = now;
      last_plain_ = SteadyClock::time_point();
      if (absl::StartsWith(phase_, "train-epoch-") && !trained_) {
        trained_ = true;
        train_start_ = now;
      }
    }
    if (!e.message().empty()) {
      Clear();
      out_ << e.message() << "\n" << std::flush;
      return;
    }
    if (e.total() == 0) return;
    const std::string figures = Figures(e, now);
    if (tty_) {
      // 24 columns: with the phase name and the figures, fits a 100-column terminal.
      constexpr int kWidth = 24;
      const int filled = static_cast<int>(kWidth * std::min(1.0, static_cast<double>(e.done()) / e.total()));
      out_ << "\r\033[K[" << phase_ << "] [" << std::string(filled, '#') << std::string(kWidth - filled, '-') << "] "
           << figures << std::flush;
      shown_ = true;
    } else if (now - last_plain_ >= std::chrono::seconds(5) || e.done() >= e.total()) {
      // Every 5 s at most: a log stays readable for long jobs.
      last_plain_ = now;
      out_ << "[" << phase_ << "] " << figures << "\n" << std::flush;
    }
  }
  void Clear() {
    if (shown_) out_ << "\r\033[K";
    shown_ = false;
  }

 private:
  std::string Figures(const v1::JobEvent& e, SteadyClock::time_point now) const {
    const bool files = phase_ == "generate";
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double fraction = std::min(1.0, static_cast<double>(e.done()) / static_cast<double>(e.total()));
    const double eta = fraction > 0 ? elapsed * (1 - fraction) / fraction : -1;
    std::string f;
    if (e.epochs_total() > 0 && e.epoch() > 0) absl::StrAppend(&f, "epoch ", e.epoch(), "/", e.epochs_total(), "  ");
    absl::StrAppend(&f, absl::StrFormat("%d/%d %s", e.done(), e.total(), files ? "files" : "steps"));
    if (e.has_live_au_percent()) absl::StrAppend(&f, absl::StrFormat("  AU %.1f %%", e.live_au_percent()));
    if (elapsed > 0) {
      absl::StrAppend(&f, absl::StrFormat("  %.1f samples/s", static_cast<double>(e.samples()) / elapsed));
      if (e.bytes() > 0) absl::StrAppend(&f, "  ", HumanBytes(static_cast<double>(e.bytes()) / elapsed), "/s");
    }
    absl::StrAppend(&f, "  ETA ", Clock(eta));
    // The whole job: training so far, per epoch (evaluations and checkpoints included), times the epochs left.
    if (trained_ && e.epochs_total() > 0 && e.epoch() > 0 && absl::StartsWith(phase_, "train-epoch-")) {
      const double done_epochs = static_cast<double>(e.epoch() - 1) + fraction;
      const double job_elapsed = std::chrono::duration<double>(now - train_start_).count();
      if (done_epochs > 0) {
        const double left = job_elapsed / done_epochs * (static_cast<double>(e.epochs_total()) - done_epochs);
        absl::StrAppend(&f, " (job ", Clock(left), ")");
      }
    }
    return f;
  }

  std::ostream& out_;
  const bool tty_;
  std::string phase_;
  SteadyClock::time_point start_, last_plain_;
  bool trained_ = false;              // a training epoch started: train_start_ is set
  SteadyClock::time_point train_start_;
  bool shown_ = false;
};

// Writes the job's result files into `output`; returns the number written or -1 after printing why.
int WriteResults(Connection& c, const std::string& job_id, const std::string& output, std::ostream& err,
                 std::vector<std::string>* names, std::string* summary_text, bool fetch_only) {
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  v1::GetResultsRequest req;
  req.set_job_id(job_id);
  auto files = c.stub->GetResults(&ctx, req);
  v1::ResultFile f;
  if (!fetch_only) {
    std::error_code ec;
    fs::create_directories(output, ec);
    if (ec) {
      err << "--output: cannot create '" << output << "': " << ec.message() << "\n";
      return -1;
    }
  }
  int n = 0;
  while (files->Read(&f)) {
    if (f.name().empty() || f.name().find('/') != std::string::npos || f.name().find("..") != std::string::npos) {
      continue;  // never write outside the output folder, whatever the server sends
    }
    if (names) names->push_back(f.name());
    if (summary_text && f.name() == "summary.json") *summary_text = f.content();
    if (!fetch_only) {
      if (absl::Status s = WriteFileAtomic((fs::path(output) / f.name()).string(), f.content()); !s.ok()) {
        err << s.message() << "\n";
        return -1;
      }
    }
    ++n;
  }
  const grpc::Status s = files->Finish();
  if (!s.ok()) {
    c.Fail(s, err);
    return -1;
  }
  return n;
}

// Writes the job's trace.json (from the result files) to `path`; false after printing why.
bool FetchTrace(Connection& c, const std::string& job_id, const std::string& path, std::ostream& err) {
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  v1::GetResultsRequest req;
  req.set_job_id(job_id);
  auto files = c.stub->GetResults(&ctx, req);
  v1::ResultFile f;
  bool found = false;
  while (files->Read(&f)) {
    if (f.name() != "trace.json") continue;
    if (absl::Status s = WriteFileAtomic(path, f.content()); !s.ok()) {
      err << "--trace: " << s.message() << "\n";
      return false;
    }
    found = true;
  }
  const grpc::Status s = files->Finish();
  if (!s.ok()) {
    c.Fail(s, err);
    return false;
  }
  if (!found) err << "--trace: job " << job_id << " left no trace (no phase with reads completed)\n";
  return found;
}

}  // namespace

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

namespace {

// The job file of `opt` loaded with its overrides (plan_only: as --explain loads it), and the placement flags checked:
// the spec, or nullopt after one line on `err` (a bad file, key, value or flag: exit 2).
std::optional<WorkloadSpec> LoadJobAndPlacement(const SubmitOptions& opt, bool plan_only, LoadDiagnostics* diag,
                                                std::ostream& err) {
  absl::StatusOr<std::string> text = ReadFile(opt.job_path);
  if (!text.ok()) {
    err << text.status().message() << "\n";
    return std::nullopt;
  }
  LoadOptions lo;
  lo.strict = opt.strict;
  lo.plan_only = plan_only;
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(*text, opt.overrides, opt.job_path, lo, diag);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return std::nullopt;
  }
  if (absl::Status s = CheckPlacementOptions(opt.agents, opt.accelerators_per_agent, opt.wait_for_agents_s,
                                             opt.barrier_timeout_s);
      !s.ok()) {
    err << s.message() << "\n";
    return std::nullopt;
  }
  return *std::move(spec);
}

}  // namespace

int ValidateJob(const SubmitOptions& opt, std::ostream& err, bool warn) {
  LoadDiagnostics diag;
  if (!LoadJobAndPlacement(opt, /*plan_only=*/false, &diag, err)) return 2;
  if (warn) {
    for (const WorkloadWarning& w : diag.warnings) err << "warning: " << w.text << "\n";
  }
  return 0;
}

ExplainFleet DescribeFleet(const SubmitOptions& opt, const LocalFleetShape* local) {
  ExplainFleet fleet;
  const uint64_t local_ram = LocalMemoryBytes();
  if (local != nullptr) {
    fleet.agents = local->agents;
    fleet.accelerators_per_agent = local->accelerators;
    // `run`'s agents share this one machine: its RAM counts once.
    const uint64_t ram = local->host_memory_bytes > 0 ? local->host_memory_bytes : local_ram;
    if (ram > 0) fleet.nodes = {{"localhost", ram, local->agents}};
    fleet.memory_source = local->host_memory_bytes > 0 ? "--host-memory" : "local /proc/meminfo";
  } else {
    // The attached agents, if the coordinator answers soon; explaining must not hang on an absent coordinator.
    ClientOptions quick = opt.client;
    quick.connect_timeout_s = std::min(quick.connect_timeout_s, 2);
    quick.wait_for_coordinator_s = std::min(quick.wait_for_coordinator_s, 2);
    Connection c;
    std::ostringstream ignored;
    v1::ListJobsResponse resp;
    bool listed = false;
    if (c.Open(quick, ignored) == 0) {
      grpc::ClientContext ctx;
      c.Prepare(&ctx);
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      listed = c.stub->ListJobs(&ctx, v1::ListJobsRequest(), &resp).ok();
    }
    const int attached = listed ? resp.agents_size() : 0;
    fleet.agents = opt.agents > 0 ? opt.agents : std::max(1, attached);
    fleet.accelerators_per_agent = opt.accelerators_per_agent > 0 ? opt.accelerators_per_agent
                                   : attached > 0 ? static_cast<int>(resp.agents(0).accelerators())
                                                  : 1;
    // The job's agents grouped by node: a node's RAM counts once however many agents share it.
    std::vector<ExplainNode> nodes;
    for (int i = 0; i < attached && i < fleet.agents; ++i) {
      const v1::AgentStatus& a = resp.agents(i);
      if (a.host_memory_bytes() == 0) continue;
      auto it = std::find_if(nodes.begin(), nodes.end(), [&](const ExplainNode& n) { return n.name == a.hostname(); });
      if (it == nodes.end()) {
        nodes.push_back({a.hostname(), a.host_memory_bytes(), 1});
      } else {
        it->agents += 1;
      }
    }
    if (!nodes.empty()) {
      fleet.nodes = nodes;
      fleet.memory_source = "attached agents, as the coordinator reports them";
    } else {
      // Unknown placement: every agent on a node like this one.
      if (local_ram > 0) {
        for (int64_t i = 0; i < fleet.agents; ++i) fleet.nodes.push_back({"node", local_ram, 1});
      }
      fleet.memory_source = listed ? "local /proc/meminfo: the coordinator reported no agent memory"
                                   : "local /proc/meminfo: the coordinator at " + opt.client.coordinator +
                                         " did not answer within 2 s";
    }
    if (!listed) {
      fleet.fleet_note = absl::StrCat("coordinator not reached; world from --agents/--accelerators-per-agent (0 = 1)");
    } else if (attached == 0 && (opt.agents == 0 || opt.accelerators_per_agent == 0)) {
      fleet.fleet_note = "no agent attached; 0 in --agents/--accelerators-per-agent taken as 1";
    }
  }
  return fleet;
}

int ExplainJobPlan(const SubmitOptions& opt, const LocalFleetShape* local, std::ostream& out, std::ostream& err) {
  LoadDiagnostics diag;
  const std::optional<WorkloadSpec> spec = LoadJobAndPlacement(opt, /*plan_only=*/true, &diag, err);
  if (!spec) return 2;
  const ExplainFleet fleet = DescribeFleet(opt, local);
  const json plan = dlio::ExplainJob(*spec, diag, fleet, opt.job_path);
  if (opt.client.json) {
    out << plan.dump(2) << "\n";
  } else {
    out << ExplainText(plan);
  }
  return plan["runnable"].get<bool>() ? 0 : kExitBadInput;
}

int CheckPreRun(const SubmitOptions& opt, const JobWorld& world, std::ostream& err) {
  absl::StatusOr<std::string> text = ReadFile(opt.job_path);
  if (!text.ok()) {
    err << text.status().message() << "\n";
    return kExitBadInput;
  }
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(*text, opt.overrides, opt.job_path);
  if (!spec.ok()) {
    err << spec.status().message() << "\n";
    return kExitBadInput;
  }
  const std::vector<std::string> refusals = PreRunRefusals(*spec, world);
  for (const std::string& r : refusals) err << r << "\n";
  if (!refusals.empty()) {
    err << "refused before anything ran, on " << DescribeWorld(world) << " (--explain shows the plan)\n";
  }
  return refusals.empty() ? 0 : kExitBadInput;
}

namespace {

// Sends the job to the coordinator; its id in *job_id, or the exit status of a failed call.
int SubmitJob(Connection& c, const SubmitOptions& opt, const std::string& text, std::string* job_id,
              std::ostream& err) {
  v1::SubmitRequest req;
  req.set_workload_yaml(text);
  for (const auto& o : opt.overrides) req.add_overrides(o);
  req.set_agents(static_cast<uint32_t>(opt.agents));
  req.set_accelerators_per_agent(static_cast<uint32_t>(opt.accelerators_per_agent));
  req.set_source_name(opt.job_path);
  req.set_wait_for_agents_s(static_cast<uint32_t>(std::max(0, opt.wait_for_agents_s)));
  req.set_barrier_timeout_s(std::max(0.0, opt.barrier_timeout_s));
  v1::SubmitResponse resp;
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  grpc::Status s = c.stub->Submit(&ctx, req, &resp);
  if (!s.ok()) return c.Fail(s, err);
  *job_id = resp.job_id();
  return 0;
}

// How watching a job ended.
struct WatchEnd {
  int status = 0;                    // non-zero: the exit status (the coordinator was lost, or refused the token)
  v1::JobEvent last;                 // the final event (status 0)
  bool cancelled_by_signal = false;  // `cancel` was set: the job was cancelled on the coordinator
};

// Follows the job until its final event, showing progress (text mode); a helper thread turns a signal (`cancel`)
// into a Cancel RPC.
WatchEnd WatchJob(Connection& c, const SubmitOptions& opt, const std::string& job_id, std::ostream& out,
                  std::ostream& err, const std::atomic<bool>* cancel) {
  const bool json_out = opt.client.json;
  ProgressView view(out, !json_out && isatty(STDOUT_FILENO));
  WatchEnd end;
  std::atomic<bool> finished{false}, cancelled_by_signal{false};
  std::thread canceller([&] {
    while (!finished) {
      if (cancel && *cancel) {
        cancelled_by_signal = true;
        err << "\ninterrupted: cancelling job " << job_id << " on the coordinator\n" << std::flush;
        grpc::ClientContext cctx;
        c.Prepare(&cctx);
        cctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        v1::CancelRequest creq;
        creq.set_job_id(job_id);
        v1::CancelResponse cresp;
        const grpc::Status s = c.stub->Cancel(&cctx, creq, &cresp);
        if (!s.ok()) err << "cancelling job " << job_id << " failed: " << s.error_message() << "\n";
        return;
      }
      // 100 ms: how fast Ctrl-C turns into a cancel; cheap polling of a flag.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  grpc::ClientContext wctx;
  c.Prepare(&wctx);
  v1::WatchRequest wreq;
  wreq.set_job_id(job_id);
  auto reader = c.stub->Watch(&wctx, wreq);
  v1::JobEvent e;
  bool got_final = false;
  while (reader->Read(&e)) {
    if (e.final()) {
      end.last = e;
      got_final = true;
      break;
    }
    if (!json_out) view.Event(e);
  }
  view.Clear();
  finished = true;
  canceller.join();
  end.cancelled_by_signal = cancelled_by_signal;
  const grpc::Status ws = got_final ? grpc::Status::OK : reader->Finish();
  if (got_final) wctx.TryCancel();
  if (!got_final) {
    if (!ws.ok() && ws.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      end.status = c.Fail(ws, err);
      return end;
    }
    err << "lost the coordinator at " << opt.client.coordinator << " while watching job " << job_id
        << (ws.ok() ? std::string() : absl::StrCat(" (", ws.error_message(), ")")) << "; it may still run: "
        << "dlio-coordinator status " << job_id << "\n";
    end.status = 3;
  }
  return end;
}

// The final event: its message, epoch table and checkpoints printed (text) or put into `doc` (JSON).
void ReportFinal(const WatchEnd& end, const std::string& job_id, bool json_out, std::ostream& out, std::ostream& err,
                 json& doc) {
  const v1::JobEvent& last = end.last;
  const bool succeeded = last.state() == v1::JOB_STATE_SUCCEEDED;
  std::vector<EpochMetric> rows;
  for (const v1::EpochRow& r : last.epochs()) rows.push_back(FromProto(r));
  const EpochMetric mean = FromProto(last.mean());
  if (!json_out) {
    if (succeeded) {
      out << last.message() << "\n";
    } else {
      err << "dlio-coordinator: " << last.message() << "\n";
      if (end.cancelled_by_signal) {
        err << "job " << job_id << " was cancelled because this command was interrupted\n";
      }
    }
    if (!rows.empty()) {
      if (!succeeded) out << "results of the completed epoch(s):";
      PrintTable(rows, &mean, out);
    }
    if (last.checkpoints_size() > 0) PrintCheckpoints(last.checkpoints(), out);
    return;
  }
  json epochs = json::array();
  for (const EpochMetric& r : rows) epochs.push_back(RowJson(r, true));
  doc["epochs"] = epochs;
  if (!rows.empty()) doc["mean"] = RowJson(mean, false);
  if (last.checkpoints_size() > 0) {
    json ck = json::array();
    for (const v1::CheckpointRow& r : last.checkpoints()) ck.push_back(CheckpointRowJson(r));
    doc["checkpoints"] = ck;
  }
  if (end.cancelled_by_signal) doc["cancelled_by_signal"] = true;
}

// Result files (fetched when there are any: a failed job keeps its completed epochs) and the trace; 1 when a fetch
// failed.
int FetchJobFiles(Connection& c, const SubmitOptions& opt, const WorkloadSpec& spec, const std::string& job_id,
                  const v1::JobEvent& last, std::ostream& out, std::ostream& err, json& doc) {
  const bool json_out = opt.client.json;
  const std::string output = !opt.output_dir.empty() ? opt.output_dir : spec.output_folder;
  const bool has_results = last.state() == v1::JOB_STATE_SUCCEEDED || last.epochs_size() > 0 ||
                           last.checkpoints_size() > 0;
  if (has_results && !output.empty()) {
    const int n = WriteResults(c, job_id, output, err, nullptr, nullptr, false);
    if (n < 0) return 1;
    if (!json_out) out << "results: " << n << " files in " << output << "\n";
    doc["output"] = output;
    doc["files"] = n;
  } else if (has_results && !opt.where_results_live.empty()) {
    if (!json_out) out << "results: " << opt.where_results_live << "/" << job_id << "\n";
    doc["results_dir"] = opt.where_results_live + "/" + job_id;
  }
  if (!opt.trace_path.empty() && has_results) {
    if (!FetchTrace(c, job_id, opt.trace_path, err)) return 1;
    if (!json_out) out << "trace: " << opt.trace_path << "\n";
    doc["trace"] = opt.trace_path;
  }
  return 0;
}

}  // namespace

int SubmitAndWait(const SubmitOptions& options, std::ostream& out, std::ostream& err, const std::atomic<bool>* cancel) {
  SubmitOptions opt = options;
  // --trace FILE: the agents record events when the job says so.
  if (!opt.trace_path.empty()) opt.overrides.push_back("dlio_ext.trace=true");
  if (int rc = ValidateJob(opt, err, /*warn=*/false); rc != 0) return rc;
  // With the fleet's shape given, the refusals that depend on it are known here already (the coordinator checks
  // them again once it has placed the job).
  if (opt.agents > 0 && opt.accelerators_per_agent > 0) {
    if (int rc = CheckPreRun(opt, JobWorld{opt.agents, opt.accelerators_per_agent}, err); rc != 0) return rc;
  }
  const std::string text = *ReadFile(opt.job_path);
  const WorkloadSpec spec = *LoadWorkload(text, opt.overrides, opt.job_path);
  const bool json_out = opt.client.json;

  Connection c;
  if (int rc = c.Open(opt.client, err); rc != 0) return rc;
  std::string job_id;
  if (int rc = SubmitJob(c, opt, text, &job_id, err); rc != 0) return rc;
  if (opt.detach) {
    if (json_out) {
      out << json{{"job_id", job_id}, {"state", "queued"}}.dump() << "\n";
    } else {
      out << job_id << "\n";
    }
    return 0;
  }
  if (!json_out) out << "job " << job_id << " submitted to " << opt.client.coordinator << "\n" << std::flush;
  const WatchEnd end = WatchJob(c, opt, job_id, out, err, cancel);
  if (end.status != 0) return end.status;
  const v1::JobEvent& last = end.last;
  const bool succeeded = last.state() == v1::JOB_STATE_SUCCEEDED;
  const Verdict verdict = FromProto(last.verdict());
  json doc = {{"job_id", job_id}, {"state", StateName(last.state())}, {"message", last.message()}};
  doc["verdict"] = VerdictJson(verdict);
  ReportFinal(end, job_id, json_out, out, err, doc);
  if (int rc = FetchJobFiles(c, opt, spec, job_id, last, out, err, doc); rc != 0) return rc;
  // A job the coordinator refused at placement (its values cannot run on the fleet it got) is bad input.
  const int status = succeeded ? ExitStatusFor(verdict) : last.refused() ? kExitBadInput : kExitJobNotSucceeded;
  doc["exit_status"] = status;
  if (json_out) {
    out << doc.dump(2) << "\n";
  } else {
    out << "verdict: " << VerdictLine(verdict) << "\n";
  }
  return status;
}

int ShowStatus(const ClientOptions& opt, const std::string& job_id, std::ostream& out, std::ostream& err) {
  Connection c;
  if (int rc = c.Open(opt, err); rc != 0) return rc;
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  v1::JobInfo i;
  if (grpc::Status s = c.stub->GetJob(&ctx, req, &i); !s.ok()) return c.Fail(s, err);
  const int status = ExitStatusOfJob(i);
  if (opt.json) {
    json doc = InfoJson(i);
    doc["exit_status"] = status;
    out << doc.dump(2) << "\n";
    return status;
  }
  out << "job " << i.job_id() << ": " << StateName(i.state());
  if (i.state() == v1::JOB_STATE_QUEUED) out << " (" << i.queue_position() << " ahead)";
  out << "\n";
  out << "  job file:   " << i.source_name() << "\n";
  out << "  submitted:  " << LocalTime(i.submitted_unix_us()) << "   started: " << LocalTime(i.started_unix_us())
      << "   ended: " << LocalTime(i.ended_unix_us()) << "\n";
  if (i.agents_size() > 0) {
    std::vector<std::string> names(i.agents().begin(), i.agents().end());
    out << "  agents:     " << i.agents_size() << " (" << absl::StrJoin(names, ", ") << "), " << i.world_size()
        << " rank(s), " << i.accelerators_per_agent() << " per agent\n";
  }
  if (!i.phase_id().empty()) {
    out << "  phase:      " << i.phase_id();
    if (i.total() > 0 && !Final(i.state())) {
      out << ", " << i.done() << " of " << i.total() << (i.phase_id() == "generate" ? " files" : " steps");
    }
    out << "\n";
  }
  if (i.epochs_total() > 0) out << "  epochs:     " << i.epochs_done() << " of " << i.epochs_total() << " completed\n";
  if (i.has_results()) {
    out << "  results:    " << i.result_dir()
        << (i.state() == v1::JOB_STATE_SUCCEEDED ? "" : absl::StrCat(" (", i.epochs_done(), " completed epoch(s))"))
        << "\n";
  }
  if (!i.message().empty()) out << "  message:    " << i.message() << "\n";
  out << "  verdict:    " << VerdictLine(FromProto(i.verdict())) << "\n";
  return status;
}

int ListJobs(const ClientOptions& opt, std::ostream& out, std::ostream& err) {
  Connection c;
  if (int rc = c.Open(opt, err); rc != 0) return rc;
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  v1::ListJobsResponse resp;
  if (grpc::Status s = c.stub->ListJobs(&ctx, v1::ListJobsRequest(), &resp); !s.ok()) return c.Fail(s, err);
  if (opt.json) {
    json jobs = json::array(), agents = json::array();
    for (const v1::JobInfo& i : resp.jobs()) jobs.push_back(InfoJson(i));
    for (const v1::AgentStatus& a : resp.agents()) {
      agents.push_back({{"name", a.name()},
                        {"hostname", a.hostname()},
                        {"accelerators", a.accelerators()},
                        {"attached_s", a.attached_s()},
                        {"last_heard_s", a.last_heard_s()},
                        {"job_id", a.job_id()}});
    }
    out << json{{"jobs", jobs}, {"agents", agents}}.dump(2) << "\n";
    return 0;
  }
  if (resp.jobs_size() == 0) {
    out << "no jobs\n";
  } else {
    out << absl::StrFormat("%-26s %-12s %-14s %-19s %-7s %-6s %s\n", "JOB", "STATE", "VERDICT", "SUBMITTED", "EPOCHS",
                           "RANKS", "MESSAGE");
    for (const v1::JobInfo& i : resp.jobs()) {
      std::string msg = i.message();
      // 100 characters keep a row on a wide terminal; `status JOB` shows the whole line.
      if (msg.size() > 100) msg = msg.substr(0, 97) + "...";
      out << absl::StrFormat("%-26s %-12s %-14s %-19s %-7s %-6d %s\n", i.job_id(), StateName(i.state()),
                             VerdictStatusName(FromProto(i.verdict()).status), LocalTime(i.submitted_unix_us()),
                             absl::StrCat(i.epochs_done(), "/", i.epochs_total()), i.world_size(), msg);
    }
  }
  out << "\n" << resp.agents_size() << " agent(s) attached";
  out << (resp.agents_size() ? ":\n" : "\n");
  for (const v1::AgentStatus& a : resp.agents()) {
    out << absl::StrFormat("  %-24s node %-20s %d accelerator(s), heard %.1f s ago, %s\n", a.name(), a.hostname(),
                           a.accelerators(), a.last_heard_s(),
                           a.job_id().empty() ? std::string("idle") : absl::StrCat("job ", a.job_id()));
  }
  return 0;
}

int CancelJob(const ClientOptions& opt, const std::string& job_id, std::ostream& out, std::ostream& err) {
  Connection c;
  if (int rc = c.Open(opt, err); rc != 0) return rc;
  v1::CancelResponse resp;
  {
    grpc::ClientContext ctx;
    c.Prepare(&ctx);
    v1::CancelRequest req;
    req.set_job_id(job_id);
    if (grpc::Status s = c.stub->Cancel(&ctx, req, &resp); !s.ok()) return c.Fail(s, err);
  }
  // The coordinator gives the agents 2 s to confirm the stop; 10 s bounds the wait for a busy coordinator.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
  v1::JobInfo i;
  while (true) {
    grpc::ClientContext ctx;
    c.Prepare(&ctx);
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    if (grpc::Status s = c.stub->GetJob(&ctx, req, &i); !s.ok()) return c.Fail(s, err);
    if (Final(i.state()) || SteadyClock::now() > deadline) break;
    // 50 ms: the answer shows the stop promptly without loading the coordinator.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (opt.json) {
    out << json{{"job_id", job_id}, {"cancelled", resp.cancelled()}, {"state", StateName(i.state())},
                {"message", i.message()}}
               .dump(2)
        << "\n";
    return 0;
  }
  if (!resp.cancelled()) {
    out << "job " << job_id << " had already ended (" << StateName(i.state()) << "); nothing to cancel\n";
  } else if (Final(i.state())) {
    out << i.message() << "\n";
  } else {
    out << "job " << job_id << ": cancel requested; still " << StateName(i.state()) << " after 10 s\n";
  }
  return 0;
}

int FetchResults(const ClientOptions& opt, const std::string& job_id, const std::string& output_dir,
                 std::ostream& out, std::ostream& err) {
  Connection c;
  if (int rc = c.Open(opt, err); rc != 0) return rc;
  v1::JobInfo info;
  {
    grpc::ClientContext ctx;
    c.Prepare(&ctx);
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    if (grpc::Status s = c.stub->GetJob(&ctx, req, &info); !s.ok()) return c.Fail(s, err);
  }
  std::vector<std::string> names;
  std::string summary_text;
  const int n = WriteResults(c, job_id, output_dir, err, &names, &summary_text, output_dir.empty());
  if (n < 0) return 1;
  const json summary = json::parse(summary_text, nullptr, /*allow_exceptions=*/false);
  const Verdict verdict = FromProto(info.verdict());
  const int status = ExitStatusOfJob(info);
  if (opt.json) {
    json doc = {{"job_id", job_id}, {"state", StateName(info.state())}, {"files", names}};
    doc["output"] = output_dir.empty() ? json(nullptr) : json(output_dir);
    doc["summary"] = summary.is_discarded() ? json(nullptr) : summary;
    doc["verdict"] = VerdictJson(verdict);
    doc["exit_status"] = status;
    out << doc.dump(2) << "\n";
    return status;
  }
  out << "job " << job_id << ": " << StateName(info.state());
  if (info.epochs_total() > 0) out << ", " << info.epochs_done() << " of " << info.epochs_total() << " epoch(s)";
  out << "\n";
  if (const std::vector<EpochMetric> rows = EpochsFromSummary(summary); !rows.empty()) {
    const EpochMetric mean = MeanFromSummary(summary);
    PrintTable(rows, &mean, out);
    out << "\n";
  }
  if (output_dir.empty()) {
    out << n << " result file(s) on the coordinator (" << info.result_dir() << "); fetch them with --output DIR\n";
  } else {
    out << "results: " << n << " files in " << output_dir << "\n";
  }
  out << "verdict: " << VerdictLine(verdict) << "\n";
  return status;
}

}  // namespace dlio
