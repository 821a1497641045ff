#include "client/coordinator_client.h"

#include <algorithm>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dlio/v1/convert.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "dlio/v1/credentials.h"
#include "grpcpp/grpcpp.h"

namespace dlio {

namespace fs = std::filesystem;

namespace {

// The one conversion of a failed gRPC call: gRPC's status codes are absl's, number for number; the message is the
// coordinator's (or gRPC's) own.
absl::Status GrpcToStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// A fetch of result files that failed, whatever the cause: the job ran, its files are not here (exit 1).
absl::Status FetchFailed(const absl::Status& s) { return absl::AbortedError(s.message()); }

JobState StateFromProto(v1::JobState s) {
  // The wire counts from JOB_STATE_UNSPECIFIED = 0 (coordinator_server.cc adds 1); an unspecified state stays out of
  // range, which JobStateName() calls "unknown" and IsFinal() final, as the client always showed it.
  return static_cast<JobState>(static_cast<int>(s) - 1);
}

CheckpointMetric CheckpointFromProto(const v1::CheckpointRow& r) {
  CheckpointMetric c;
  c.index = static_cast<int>(r.index());
  c.load = r.load();
  c.bytes = r.bytes();
  c.rank0_duration_s = r.rank0_duration_s();
  c.rank0_gib_per_second = r.rank0_gib_per_second();
  c.max_duration_s = r.max_duration_s();
  c.min_gib_per_second = r.min_gib_per_second();
  return c;
}

JobInfoData InfoFromProto(const v1::JobInfo& i) {
  JobInfoData d;
  JobRecord& r = d.record;
  r.id = i.job_id();
  r.state = StateFromProto(i.state());
  r.source_name = i.source_name();
  r.submitted_unix_us = i.submitted_unix_us();
  r.started_unix_us = i.started_unix_us();
  r.ended_unix_us = i.ended_unix_us();
  r.agent_names.assign(i.agents().begin(), i.agents().end());
  r.world = static_cast<int>(i.world_size());
  r.ranks_per_agent = static_cast<int>(i.accelerators_per_agent());
  r.phase_id = i.phase_id();
  r.epochs_done = static_cast<int>(i.epochs_done());
  r.epochs_total = static_cast<int>(i.epochs_total());
  r.message = i.message();
  r.has_results = i.has_results();
  d.verdict = FromProto(i.verdict());
  d.done = i.done();
  d.total = i.total();
  d.queue_position = static_cast<int>(i.queue_position());
  d.result_dir = i.result_dir();
  if (i.has_completed_au_percent()) d.completed_au_percent = i.completed_au_percent();
  if (i.has_completed_samples_per_second()) d.completed_samples_per_second = i.completed_samples_per_second();
  return d;
}

AttachedAgent AgentFromProto(const v1::AgentStatus& a) {
  AttachedAgent g;
  g.name = a.name();
  g.hostname = a.hostname();
  g.accelerators = static_cast<int>(a.accelerators());
  g.attached_s = a.attached_s();
  g.last_heard_s = a.last_heard_s();
  g.job_id = a.job_id();
  g.host_memory_bytes = a.host_memory_bytes();
  g.cpu_count = static_cast<int>(std::min<uint32_t>(a.host_cpu_count(), 1u << 24));
  return g;
}

JobEventData EventFromProto(const v1::JobEvent& e) {
  JobEventData d;
  d.state = StateFromProto(e.state());
  d.phase_id = e.phase_id();
  d.done = e.done();
  d.total = e.total();
  d.samples = e.samples();
  d.bytes = e.bytes();
  d.message = e.message();
  d.epoch = static_cast<int>(e.epoch());
  d.epochs_total = static_cast<int>(e.epochs_total());
  if (e.has_live_au_percent()) d.live_au = e.live_au_percent();
  d.final = e.final();
  d.refused = e.refused();
  return d;
}

// The final event of a job; its verdict is read even when absent (INCOMPLETE), as the client always did.
JobOutcome OutcomeFromProto(const v1::JobEvent& e) {
  JobOutcome o;
  o.state = StateFromProto(e.state());
  o.message = e.message();
  o.refused = e.refused();
  o.verdict = FromProto(e.verdict());
  for (const v1::EpochRow& r : e.epochs()) o.epochs.push_back(FromProto(r));
  o.mean = FromProto(e.mean());
  for (const v1::CheckpointRow& r : e.checkpoints()) o.checkpoints.push_back(CheckpointFromProto(r));
  return o;
}

}  // namespace

absl::Status CallFailure(const absl::Status& s, const std::string& coordinator) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
    case absl::StatusCode::kInvalidArgument:
      return s;
    case absl::StatusCode::kUnauthenticated:
      return absl::Status(s.code(), absl::StrCat("refused by the coordinator at ", coordinator, ": ", s.message()));
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return absl::Status(s.code(), absl::StrCat("lost the coordinator at ", coordinator, ": ", s.message()));
    case absl::StatusCode::kUnimplemented:
      return absl::Status(s.code(), absl::StrCat("the coordinator at ", coordinator,
                                                 " does not offer this call (an older build?)"));
    default:
      if (!s.message().empty()) return s;
      return absl::Status(s.code(), absl::StrCat("gRPC error ", static_cast<int>(s.code())));
  }
}

JobRequest SubmissionOf(const LoadedJob& job, const JobPlacement& placement, bool trace) {
  JobRequest r;
  r.workload_yaml = job.text();
  r.overrides = job.overrides();
  // --trace FILE: the agents record events when the job says so.
  if (trace) r.overrides.push_back("dlio_ext.trace=true");
  r.agents = placement.agents;
  r.accelerators_per_agent = placement.accelerators_per_agent;
  r.source_name = job.path();
  r.wait_for_agents_s = std::max(0, placement.wait_for_agents_s);
  r.barrier_timeout_s = std::max(0.0, placement.barrier_timeout_s);
  r.agent_names = placement.agent_names;
  r.share_agents = placement.share_agents;
  return r;
}

// One channel to the coordinator with the token and TLS material of the command line.
struct CoordinatorClient::Impl {
  ClientOptions options;
  Transport transport;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Coordinator::Stub> stub;

  void Prepare(grpc::ClientContext* ctx) const { AddToken(ctx, transport); }
  absl::Status Fail(const grpc::Status& s) const { return CallFailure(GrpcToStatus(s), options.coordinator); }

  absl::Status Open();
  std::string FailureReason() const;
  absl::Status Unreachable(const std::string& why, bool refused) const;
};

absl::Status CoordinatorClient::Impl::Open() {
  absl::StatusOr<Transport> t = LoadTransport(options.transport, /*server=*/false);
  if (!t.ok()) return absl::InvalidArgumentError(t.status().message());
  transport = *std::move(t);
  grpc::ChannelArguments args = ChannelArgs(transport);
  // Reconnect every 100-500 ms while waiting for a starting coordinator (gRPC's default backoff starts at 1 s and
  // grows to 2 min).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  channel = grpc::CreateCustomChannel(options.coordinator, ChannelCredentials(transport), args);
  stub = v1::Coordinator::NewStub(channel);
  const int limit_s = std::max(options.connect_timeout_s, options.wait_for_coordinator_s);
  const auto start = std::chrono::system_clock::now();
  const auto wait_refused = start + std::chrono::seconds(options.wait_for_coordinator_s);
  const auto deadline = start + std::chrono::seconds(limit_s);
  for (;;) {
    const grpc_connectivity_state st = channel->GetState(/*try_to_connect=*/true);
    if (st == GRPC_CHANNEL_READY) return absl::OkStatus();
    const auto now = std::chrono::system_clock::now();
    if (st == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      const std::string why = FailureReason();
      const bool refused = absl::StrContains(why, "Connection refused");
      if (!refused || now >= wait_refused) return Unreachable(why, refused);
    }
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("--coordinator: cannot reach the coordinator at ",
                                                      options.coordinator, " within ", limit_s,
                                                      " s (the connection never completed)"));
    }
    // gRPC keeps a failed channel in TRANSIENT_FAILURE while it retries (no state change to wait for): look again
    // every 100 ms.
    channel->WaitForStateChange(st, std::min(deadline, now + std::chrono::milliseconds(100)));
  }
}

// gRPC's reason for a channel in TRANSIENT_FAILURE ("... Connection refused", a handshake error, ...): a call on
// such a channel fails at once with it.
std::string CoordinatorClient::Impl::FailureReason() const {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  v1::ListJobsRequest req;
  req.set_page_size(1);  // a probe: the smallest answer
  v1::ListJobsResponse resp;
  const grpc::Status s = stub->ListJobs(&ctx, req, &resp);
  return s.ok() ? "no connection" : s.error_message();
}

// One line for a connection that failed for good; TLS hints only where TLS is in use.
absl::Status CoordinatorClient::Impl::Unreachable(const std::string& why, bool refused) const {
  const std::string& at = options.coordinator;
  if (refused) {
    if (options.wait_for_coordinator_s > 0) {
      return absl::UnavailableError(absl::StrCat("--coordinator: nothing listened at ", at, " within ",
                                                 options.wait_for_coordinator_s, " s (connection refused)"));
    }
    return absl::UnavailableError(absl::StrCat("--coordinator: nothing listens at ", at,
                                               " (connection refused): is the coordinator running there? "
                                               "(--wait-for-coordinator SECONDS waits for one that is starting)"));
  }
  if (transport.tls() && absl::StrContains(why, "not in peer certificate")) {  // "Peer name X is not in ..."
    const std::string expected = transport.server_name.empty() ? at.substr(0, at.rfind(':')) : transport.server_name;
    return absl::UnavailableError(absl::StrCat("--coordinator: the certificate of the coordinator at ", at,
                                               " does not hold the name '", expected, "' (", why,
                                               "); pass --tls-server-name with a name the certificate holds"));
  }
  if (transport.tls()) {
    return absl::UnavailableError(absl::StrCat("--coordinator: TLS with the coordinator at ", at, " failed (", why,
                                               "); check --tls-ca (the CA that signed its certificate) and "
                                               "--tls-cert/--tls-key (mutual TLS)"));
  }
  // A TLS server hangs up on a plaintext client's HTTP/2 preface: gRPC then says "Socket closed".
  return absl::UnavailableError(
      absl::StrCat("--coordinator: cannot reach the coordinator at ", at, " (", why, ")",
                   absl::StrContains(why, "Socket closed") ? "; if the coordinator serves TLS, pass --tls-ca" : ""));
}

CoordinatorClient::CoordinatorClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CoordinatorClient::CoordinatorClient(CoordinatorClient&&) noexcept = default;
CoordinatorClient& CoordinatorClient::operator=(CoordinatorClient&&) noexcept = default;
CoordinatorClient::~CoordinatorClient() = default;

absl::StatusOr<CoordinatorClient> CoordinatorClient::Connect(const ClientOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (absl::Status s = impl->Open(); !s.ok()) return s;
  return CoordinatorClient(std::move(impl));
}

const std::string& CoordinatorClient::address() const { return impl_->options.coordinator; }

absl::StatusOr<std::string> CoordinatorClient::Submit(const JobRequest& request) {
  v1::SubmitRequest req;
  req.set_workload_yaml(request.workload_yaml);
  for (const std::string& o : request.overrides) req.add_overrides(o);
  req.set_agents(static_cast<uint32_t>(request.agents));
  req.set_accelerators_per_agent(static_cast<uint32_t>(request.accelerators_per_agent));
  req.set_source_name(request.source_name);
  req.set_wait_for_agents_s(static_cast<uint32_t>(request.wait_for_agents_s));
  req.set_barrier_timeout_s(request.barrier_timeout_s);
  for (const std::string& n : request.agent_names) req.add_agent_names(n);
  req.set_share_agents(request.share_agents);
  v1::SubmitResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  if (grpc::Status s = impl_->stub->Submit(&ctx, req, &resp); !s.ok()) return impl_->Fail(s);
  return resp.job_id();
}

absl::StatusOr<JobInfoData> CoordinatorClient::GetJob(const std::string& job_id) {
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  v1::JobInfo i;
  if (grpc::Status s = impl_->stub->GetJob(&ctx, req, &i); !s.ok()) return impl_->Fail(s);
  return InfoFromProto(i);
}

absl::StatusOr<JobList> CoordinatorClient::List(size_t limit, std::chrono::seconds timeout) {
  JobList list;
  v1::ListJobsRequest req;
  do {
    grpc::ClientContext ctx;
    impl_->Prepare(&ctx);
    if (timeout.count() > 0) ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    const size_t left = limit == 0 ? kMaxJobsPageSize : limit - list.jobs.size();
    req.set_page_size(static_cast<uint32_t>(std::min(left, kMaxJobsPageSize)));
    v1::ListJobsResponse resp;
    if (grpc::Status s = impl_->stub->ListJobs(&ctx, req, &resp); !s.ok()) return impl_->Fail(s);
    for (const v1::JobInfo& i : resp.jobs()) list.jobs.push_back(InfoFromProto(i));
    for (const v1::AgentStatus& a : resp.agents()) list.agents.push_back(AgentFromProto(a));
    list.more = !resp.next_page_token().empty();
    if (resp.jobs().empty() || resp.next_page_token() == req.page_token()) break;  // no progress: never loop
    req.set_page_token(resp.next_page_token());
  } while (list.more && (limit == 0 || list.jobs.size() < limit));
  if (limit > 0 && list.jobs.size() > limit) {  // a coordinator that ignores page_size
    list.jobs.resize(limit);
    list.more = true;
  }
  return list;
}

// The Cancel call; its failure as gRPC words it (`timeout` 0: none).
absl::Status CoordinatorClient::CancelCall(const std::string& job_id, std::chrono::seconds timeout, bool* cancelled) {
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  if (timeout.count() > 0) ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::CancelRequest req;
  req.set_job_id(job_id);
  v1::CancelResponse resp;
  const grpc::Status s = impl_->stub->Cancel(&ctx, req, &resp);
  *cancelled = resp.cancelled();
  return GrpcToStatus(s);
}

absl::StatusOr<bool> CoordinatorClient::Cancel(const std::string& job_id) {
  bool cancelled = false;
  if (absl::Status s = CancelCall(job_id, std::chrono::seconds(0), &cancelled); !s.ok()) {
    return CallFailure(s, address());
  }
  return cancelled;
}

absl::Status CoordinatorClient::Results(const std::string& job_id,
                                        const std::function<absl::Status(const ResultFile&)>& each) {
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  v1::GetResultsRequest req;
  req.set_job_id(job_id);
  auto files = impl_->stub->GetResults(&ctx, req);
  v1::ResultFile f;
  while (files->Read(&f)) {
    ResultFile file{f.name(), std::move(*f.mutable_content())};
    if (absl::Status s = each(file); !s.ok()) return s;
  }
  if (grpc::Status s = files->Finish(); !s.ok()) return impl_->Fail(s);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> CoordinatorClient::FetchResults(const std::string& job_id,
                                                                         const std::string& dir,
                                                                         std::string* summary) {
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return absl::AbortedError(absl::StrCat("--output: cannot create '", dir, "': ", ec.message()));
  }
  std::vector<std::string> names;
  absl::Status s = Results(job_id, [&](const ResultFile& f) {
    if (f.name.empty() || f.name.find('/') != std::string::npos || f.name.find("..") != std::string::npos) {
      return absl::OkStatus();  // never write outside the output folder, whatever the server sends
    }
    names.push_back(f.name);
    if (summary != nullptr && f.name == "summary.json") *summary = f.content;
    if (dir.empty()) return absl::OkStatus();
    return WriteFileAtomic((fs::path(dir) / f.name).string(), f.content);
  });
  if (!s.ok()) return FetchFailed(s);
  return names;
}

absl::Status CoordinatorClient::FetchTrace(const std::string& job_id, const std::string& path) {
  bool found = false;
  absl::Status s = Results(job_id, [&](const ResultFile& f) {
    if (f.name != "trace.json") return absl::OkStatus();
    if (absl::Status w = WriteFileAtomic(path, f.content); !w.ok()) {
      return absl::Status(w.code(), absl::StrCat("--trace: ", w.message()));
    }
    found = true;
    return absl::OkStatus();
  });
  if (!s.ok()) return FetchFailed(s);
  if (!found) {
    return absl::AbortedError(
        absl::StrCat("--trace: job ", job_id, " left no trace (no phase with reads completed)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobOutcome> CoordinatorClient::Watch(const std::string& job_id,
                                                    const std::function<void(const JobEventData&)>& progress) {
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  v1::WatchRequest req;
  req.set_job_id(job_id);
  auto reader = impl_->stub->Watch(&ctx, req);
  v1::JobEvent e;
  while (reader->Read(&e)) {
    if (e.final()) {
      ctx.TryCancel();  // the stream's end is of no interest once the final event is here
      JobOutcome o = OutcomeFromProto(e);
      o.job_id = job_id;
      return o;
    }
    if (progress) progress(EventFromProto(e));
  }
  const grpc::Status s = reader->Finish();
  if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) return impl_->Fail(s);
  return absl::UnavailableError(absl::StrCat("lost the coordinator at ", address(), " while watching job ", job_id,
                                             s.ok() ? std::string() : absl::StrCat(" (", s.error_message(), ")"),
                                             "; it may still run: dlio-coordinator status ", job_id));
}

// The files of a job that ended: its result files into `output`, then its trace into `trace`, each when the job
// left results and it is asked for; the first failure ends it.
FetchedFiles CoordinatorClient::FetchAfterRun(const JobOutcome& outcome, const std::string& output,
                                              const std::string& trace) {
  FetchedFiles f;
  f.output = output;
  if (!outcome.has_results()) return f;
  if (!output.empty()) {
    absl::StatusOr<std::vector<std::string>> names = FetchResults(outcome.job_id, output);
    if (!names.ok()) {
      f.status = names.status();
      return f;
    }
    f.count = static_cast<int>(names->size());
  }
  if (!trace.empty()) {
    f.status = FetchTrace(outcome.job_id, trace);
    if (f.status.ok()) f.trace = trace;
  }
  return f;
}

absl::StatusOr<JobOutcome> CoordinatorClient::Run(const LoadedJob& job, const JobPlacement& placement,
                                                  const RunOptions& options) {
  absl::StatusOr<std::string> id = Submit(SubmissionOf(job, placement, !options.trace_path.empty()));
  if (!id.ok()) return id.status();
  RunObserver quiet;
  RunObserver& observer = options.observer != nullptr ? *options.observer : quiet;
  observer.Submitted(*id);
  // A helper thread turns a signal (`cancel`) into a Cancel call while the watch blocks on the stream.
  std::atomic<bool> finished{false}, cancelled_by_signal{false};
  std::thread canceller([&] {
    while (!finished) {
      if (options.cancel != nullptr && *options.cancel) {
        cancelled_by_signal = true;
        observer.Cancelling(*id);
        bool cancelled = false;
        // 5 s: a coordinator that does not answer by then is lost; the watch below says so.
        const absl::Status s = CancelCall(*id, std::chrono::seconds(5), &cancelled);
        if (!s.ok()) observer.CancelFailed(*id, s);
        return;
      }
      // 100 ms: how fast Ctrl-C turns into a cancel; cheap polling of a flag.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  absl::StatusOr<JobOutcome> outcome = Watch(*id, [&](const JobEventData& e) { observer.Progress(e); });
  finished = true;
  canceller.join();
  if (!outcome.ok()) return outcome.status();
  outcome->cancelled_by_signal = cancelled_by_signal;
  const std::string output = !options.output_dir.empty() ? options.output_dir : job.spec().output_folder;
  outcome->files = FetchAfterRun(*outcome, output, options.trace_path);
  return outcome;
}

}  // namespace dlio
