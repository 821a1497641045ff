#include "coordinator/coordinator_server.h"

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/prometheus_family.h"
#include "common/text.h"
#include "coordinator/agent_dispatch.h"
#include "coordinator/targets_file.h"
#include "dlio/v1/convert.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "dlio/v1/credentials.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"
#include "spdlog/spdlog.h"

namespace dlio {

namespace {

namespace fs = std::filesystem;
using AttachStream = grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>;

// Messages queued for one agent before it counts as not reading its stream and is dropped. An agent receives about
// one message per step (the barrier release) and one per heartbeat; 4096 queued means it has been stuck for
// thousands of steps or minutes, while a healthy one drains its queue within milliseconds.
constexpr size_t kMaxQueuedMessages = 4096;

// The single place where absl::Status becomes grpc::Status.
grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

v1::JobState ToProto(JobState s) { return static_cast<v1::JobState>(static_cast<int>(s) + 1); }

// AgentLink over one Attach stream. The core calls it under its lock, so every call only queues; a writer thread
// per link drains the queue (gRPC allows one writer at a time). After Close() (the handler is returning) every call
// is a no-op.
class StreamLink : public AgentLink {
 public:
  StreamLink(grpc::ServerContext* ctx, AttachStream* stream, std::string agent)
      : ctx_(ctx), stream_(stream), agent_(std::move(agent)) {
    writer_ = std::thread([this] { WriterLoop(); });
  }
  ~StreamLink() override { Close(); }

  void Accepted(std::chrono::milliseconds heartbeat, std::chrono::milliseconds lease) override {
    v1::CoordinatorMessage m;
    m.mutable_welcome()->set_protocol_version(kProtocolVersion);
    m.mutable_welcome()->set_agent(agent_);
    m.mutable_welcome()->set_heartbeat_interval_ms(static_cast<uint32_t>(heartbeat.count()));
    m.mutable_welcome()->set_lease_ms(static_cast<uint32_t>(lease.count()));
    Enqueue(std::move(m));
  }
  void RunPhase(const PhaseOrder& o) override {
    v1::CoordinatorMessage m;
    v1::RunPhase* r = m.mutable_run_phase();
    r->set_job_id(o.job_id);
    r->set_phase_id(o.phase_id);
    r->set_kind(o.kind == PhaseOrder::Kind::kGenerate ? v1::PHASE_KIND_GENERATE
                : o.kind == PhaseOrder::Kind::kEval   ? v1::PHASE_KIND_EVAL
                : o.kind == PhaseOrder::Kind::kCheckpoint ? v1::PHASE_KIND_CHECKPOINT
                                                      : v1::PHASE_KIND_TRAIN_EPOCH);
    r->set_workload_yaml(o.workload_yaml);
    r->set_s3_secret_access_key(o.s3_secret_access_key);
    r->set_world_size(o.world);
    r->set_first_rank(o.first_rank);
    r->set_local_ranks(o.local_ranks);
    r->set_epoch(o.epoch);
    r->set_num_agents(o.num_agents);
    r->set_agent_index(o.agent_index);
    r->set_checkpoint_load(o.checkpoint_load);
    r->set_checkpoint_index(static_cast<uint32_t>(o.checkpoint_index));
    r->set_checkpoint_step(static_cast<uint64_t>(o.checkpoint_step));
    Enqueue(std::move(m));
  }
  void ReleaseBarrier(const std::string& job_id, const std::string& phase_id, uint64_t step) override {
    v1::CoordinatorMessage m;
    m.mutable_barrier_release()->set_job_id(job_id);
    m.mutable_barrier_release()->set_phase_id(phase_id);
    m.mutable_barrier_release()->set_step(step);
    Enqueue(std::move(m));
  }
  void Cancel(const std::string& job_id, const std::string& reason) override {
    v1::CoordinatorMessage m;
    m.mutable_cancel()->set_job_id(job_id);
    m.mutable_cancel()->set_reason(reason);
    Enqueue(std::move(m));
  }
  void Drop(const std::string& reason) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (drop_reason_.empty()) drop_reason_ = reason;
    if (!closed_) ctx_->TryCancel();
  }
  void Echo(int64_t agent_time_ns) {
    v1::CoordinatorMessage m;
    m.mutable_heartbeat()->set_agent_time_ns(agent_time_ns);
    Enqueue(std::move(m));
  }
  // Stops the writer; the stream and context are gone once the handler returns.
  void Close() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      closed_ = true;
      cv_.notify_all();
    }
    if (writer_.joinable()) writer_.join();
  }
  std::string drop_reason() {
    std::lock_guard<std::mutex> lk(mu_);
    return drop_reason_;
  }

 private:
  void Enqueue(v1::CoordinatorMessage m) {
    std::lock_guard<std::mutex> lk(mu_);
    if (closed_ || broken_) return;
    if (queue_.size() >= kMaxQueuedMessages) {
      broken_ = true;
      drop_reason_ = absl::StrCat("it stopped reading its stream (", kMaxQueuedMessages, " messages queued)");
      ctx_->TryCancel();
      return;
    }
    queue_.push_back(std::move(m));
    cv_.notify_one();
  }
  void WriterLoop() {
    std::unique_lock<std::mutex> lk(mu_);
    while (true) {
      cv_.wait(lk, [&] { return closed_ || !queue_.empty(); });
      if (closed_) return;
      std::deque<v1::CoordinatorMessage> batch;
      batch.swap(queue_);
      lk.unlock();
      bool ok = true;
      for (const v1::CoordinatorMessage& m : batch) {
        if (!(ok = stream_->Write(m))) break;
      }
      lk.lock();
      if (!ok) {
        broken_ = true;
        ctx_->TryCancel();  // the reader sees the end of the stream and removes the agent
        return;
      }
    }
  }

  grpc::ServerContext* const ctx_;   // valid until Close() returns
  AttachStream* const stream_;       // written by the writer thread only
  const std::string agent_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::CoordinatorMessage> queue_;  // guarded by mu_
  bool closed_ = false;                       // guarded by mu_
  bool broken_ = false;                       // guarded by mu_: a write failed or the queue overflowed
  std::string drop_reason_;                   // guarded by mu_
  std::thread writer_;
};

void FillInfo(const JobInfoData& d, v1::JobInfo* out) {
  const JobRecord& r = d.record;
  out->set_job_id(r.id);
  out->set_state(ToProto(r.state));
  out->set_source_name(r.source_name);
  out->set_submitted_unix_us(r.submitted_unix_us);
  out->set_started_unix_us(r.started_unix_us);
  out->set_ended_unix_us(r.ended_unix_us);
  for (const std::string& a : r.agent_names) out->add_agents(a);
  out->set_world_size(static_cast<uint32_t>(r.world));
  out->set_accelerators_per_agent(static_cast<uint32_t>(r.ranks_per_agent));
  out->set_phase_id(r.phase_id);
  out->set_done(d.done);
  out->set_total(d.total);
  out->set_epochs_done(static_cast<uint32_t>(r.epochs_done));
  out->set_epochs_total(static_cast<uint32_t>(r.epochs_total));
  out->set_message(r.message);
  out->set_result_dir(d.result_dir);
  out->set_has_results(r.has_results);
  out->set_queue_position(d.queue_position < 0 ? 0 : static_cast<uint32_t>(d.queue_position));
  ToProto(d.verdict, out->mutable_verdict());
}

// The client RPCs are "streamed" (StreamedService): gRPC then runs the handler when the call's metadata arrived,
// before its request message is read, so Authorize() refuses a caller without the token before any byte of its
// message is buffered (with plain unary handlers gRPC reads the whole message first). Attach is a stream anyway:
// it authorizes before its first Read(). Every message is also bounded by kMaxReceiveMessageBytes.
class Service final : public v1::Coordinator::StreamedService {
 public:
  Service(Coordinator* core, std::string token, TargetsFile* targets)
      : core_(core), token_(std::move(token)), targets_(targets) {}

  grpc::Status Attach(grpc::ServerContext* ctx, AttachStream* stream) override {
    if (grpc::Status s = Authorize(ctx, "Attach"); !s.ok()) return s;
    v1::AgentMessage in;
    if (!stream->Read(&in) || !in.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message on Attach must be Hello");
    }
    const v1::Hello hello = in.hello();
    if (hello.protocol_version() != kProtocolVersion) {
      const std::string msg =
          absl::StrCat("agent '", hello.name(), "' speaks protocol version ", hello.protocol_version(),
                       ", this coordinator speaks version ", kProtocolVersion, "; run matching builds");
      spdlog::error("{}", msg);
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, msg);
    }
    if (absl::Status s = CheckHello(hello); !s.ok()) {
      spdlog::error("agent from {} refused: {}", ctx->peer(), std::string(s.message()));
      return ToGrpc(s);
    }
    const AgentInfo info = AgentInfoFromHello(hello);
    auto link = std::make_shared<StreamLink>(ctx, stream, info.name);
    if (absl::Status s = core_->AddAgent(info, hello.instance(), link); !s.ok()) {  // AddAgent queued the Welcome
      link->Close();
      spdlog::error("{}", std::string(s.message()));
      return ToGrpc(s);
    }
    UpdateTargets(info.name, info.hostname, ResolveMetricsEndpoint(hello.metrics_endpoint(), ctx->peer()));
    AgentInbox inbox(core_, info.name, [&](int64_t t) { link->Echo(t); });
    while (stream->Read(&in)) inbox.Deliver(in);
    std::string why = link->drop_reason();
    if (why.empty()) {
      why = ctx->IsCancelled() ? "its connection broke (process gone, or network down)" : "it closed its connection";
    }
    link->Close();
    UpdateTargets(info.name, "", "");
    core_->RemoveAgent(info.name, link.get(), why);
    return grpc::Status::OK;
  }

  grpc::Status StreamedSubmit(grpc::ServerContext* ctx,
                              grpc::ServerUnaryStreamer<v1::SubmitRequest, v1::SubmitResponse>* st) override {
    return Unary(ctx, st, "Submit", [&](const v1::SubmitRequest* q, v1::SubmitResponse* r) { return Submit(q, r); });
  }
  grpc::Status StreamedCancel(grpc::ServerContext* ctx,
                              grpc::ServerUnaryStreamer<v1::CancelRequest, v1::CancelResponse>* st) override {
    return Unary(ctx, st, "Cancel", [&](const v1::CancelRequest* q, v1::CancelResponse* r) { return Cancel(q, r); });
  }
  grpc::Status StreamedListJobs(grpc::ServerContext* ctx,
                                grpc::ServerUnaryStreamer<v1::ListJobsRequest, v1::ListJobsResponse>* st) override {
    return Unary(ctx, st, "ListJobs", [&](const v1::ListJobsRequest*, v1::ListJobsResponse* r) { return ListJobs(r); });
  }
  grpc::Status StreamedGetJob(grpc::ServerContext* ctx,
                              grpc::ServerUnaryStreamer<v1::GetJobRequest, v1::JobInfo>* st) override {
    return Unary(ctx, st, "GetJob", [&](const v1::GetJobRequest* q, v1::JobInfo* r) { return GetJob(q, r); });
  }
  grpc::Status StreamedWatch(grpc::ServerContext* ctx,
                             grpc::ServerSplitStreamer<v1::WatchRequest, v1::JobEvent>* st) override {
    v1::WatchRequest req;
    if (grpc::Status s = ReadRequest(ctx, st, "Watch", &req); !s.ok()) return s;
    return Watch(ctx, &req, st);
  }
  grpc::Status StreamedGetResults(grpc::ServerContext* ctx,
                                  grpc::ServerSplitStreamer<v1::GetResultsRequest, v1::ResultFile>* st) override {
    v1::GetResultsRequest req;
    if (grpc::Status s = ReadRequest(ctx, st, "GetResults", &req); !s.ok()) return s;
    return GetResults(&req, st);
  }

 private:
  // Authorize on the metadata, then read the one request message.
  template <typename Stream, typename Req>
  grpc::Status ReadRequest(grpc::ServerContext* ctx, Stream* st, const char* rpc, Req* req) const {
    if (grpc::Status s = Authorize(ctx, rpc); !s.ok()) return s;
    if (!st->Read(req)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(rpc, ": no request message"));
    }
    return grpc::Status::OK;
  }
  template <typename Req, typename Resp, typename Fn>
  grpc::Status Unary(grpc::ServerContext* ctx, grpc::ServerUnaryStreamer<Req, Resp>* st, const char* rpc, Fn fn) {
    Req req;
    if (grpc::Status s = ReadRequest(ctx, st, rpc, &req); !s.ok()) return s;
    Resp resp;
    grpc::Status s = fn(&req, &resp);
    if (s.ok()) st->Write(resp);
    return s;
  }

  grpc::Status Submit(const v1::SubmitRequest* req, v1::SubmitResponse* resp) {
    JobRequest r;
    r.workload_yaml = req->workload_yaml();
    r.overrides.assign(req->overrides().begin(), req->overrides().end());
    // uint32 on the wire: clamped (not wrapped to negative) so the range check names the value sent.
    auto as_int = [](uint32_t v) { return static_cast<int>(std::min<uint32_t>(v, INT32_MAX)); };
    r.agents = as_int(req->agents());
    r.accelerators_per_agent = as_int(req->accelerators_per_agent());
    r.source_name = req->source_name().empty() ? "job" : req->source_name();
    r.wait_for_agents_s = as_int(req->wait_for_agents_s());
    r.barrier_timeout_s = req->barrier_timeout_s();
    absl::StatusOr<std::string> id = core_->Submit(r);
    if (!id.ok()) return ToGrpc(id.status());
    resp->set_job_id(*id);
    return grpc::Status::OK;
  }

  template <typename Writer>
  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req, Writer* writer) {
    size_t next = 0;
    while (!ctx->IsCancelled()) {
      std::vector<JobEventData> events;
      // 500 ms: how quickly a watcher that went away is noticed; events themselves are delivered at once.
      if (absl::Status s = core_->WaitEvents(req->job_id(), next, &events, std::chrono::milliseconds(500)); !s.ok()) {
        return ToGrpc(s);
      }
      for (const JobEventData& e : events) {
        ++next;
        v1::JobEvent pe;
        pe.set_job_id(req->job_id());
        pe.set_state(ToProto(e.state));
        pe.set_phase_id(e.phase_id);
        pe.set_done(e.done);
        pe.set_total(e.total);
        pe.set_samples(e.samples);
        pe.set_bytes(e.bytes);
        pe.set_message(e.message);
        for (const EpochMetric& m : e.epochs) ToProto(m, pe.add_epochs());
        ToProto(e.mean, pe.mutable_mean());
        if (e.verdict) ToProto(*e.verdict, pe.mutable_verdict());
        pe.set_epoch(static_cast<uint32_t>(e.epoch));
        pe.set_epochs_total(static_cast<uint32_t>(e.epochs_total));
        if (e.live_au) pe.set_live_au_percent(*e.live_au);
        for (const CheckpointMetric& c : e.checkpoints) {
          v1::CheckpointRow* r = pe.add_checkpoints();
          r->set_index(static_cast<uint32_t>(c.index));
          r->set_load(c.load);
          r->set_bytes(c.bytes);
          r->set_rank0_duration_s(c.rank0_duration_s);
          r->set_rank0_gib_per_second(c.rank0_gib_per_second);
          r->set_max_duration_s(c.max_duration_s);
          r->set_min_gib_per_second(c.min_gib_per_second);
        }
        pe.set_final(e.final);
        pe.set_refused(e.refused);
        if (!writer->Write(pe)) return grpc::Status::OK;
        if (e.final) return grpc::Status::OK;
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Cancel(const v1::CancelRequest* req, v1::CancelResponse* resp) {
    absl::StatusOr<bool> r = core_->Cancel(req->job_id());
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_cancelled(*r);
    return grpc::Status::OK;
  }

  template <typename Writer>
  grpc::Status GetResults(const v1::GetResultsRequest* req, Writer* writer) {
    absl::StatusOr<JobInfoData> job = core_->GetJob(req->job_id());
    if (!job.ok()) return ToGrpc(job.status());
    absl::StatusOr<std::string> dir = core_->ResultDir(req->job_id());
    if (!dir.ok()) return ToGrpc(dir.status());
    std::error_code ec;
    if (!fs::is_directory(*dir, ec)) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("job ", req->job_id(), " (", JobStateName(job->record.state),
                                       ") has no result files", IsFinal(job->record.state)
                                                                    ? " (it ended before completing an epoch)"
                                                                    : " yet (they appear after its first epoch)"));
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(*dir, ec)) {
      if (e.is_regular_file() && e.path().filename().string().find(".tmp") == std::string::npos) {
        files.push_back(e.path());
      }
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      v1::ResultFile rf;
      rf.set_name(f.filename().string());
      rf.set_content(ss.str());
      if (!writer->Write(rf)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status ListJobs(v1::ListJobsResponse* resp) {
    for (const JobInfoData& d : core_->ListJobs()) FillInfo(d, resp->add_jobs());
    for (const AgentStatusData& a : core_->ListAgents()) {
      v1::AgentStatus* out = resp->add_agents();
      out->set_name(a.info.name);
      out->set_hostname(a.info.hostname);
      out->set_accelerators(static_cast<uint32_t>(a.info.ranks));
      out->set_attached_s(a.attached_s);
      out->set_last_heard_s(a.last_heard_s);
      out->set_job_id(a.job_id);
      out->set_host_memory_bytes(static_cast<uint64_t>(a.info.memory_gb * 1024.0 * 1024.0 * 1024.0 + 0.5));
    }
    return grpc::Status::OK;
  }

  grpc::Status GetJob(const v1::GetJobRequest* req, v1::JobInfo* resp) {
    absl::StatusOr<JobInfoData> d = core_->GetJob(req->job_id());
    if (!d.ok()) return ToGrpc(d.status());
    FillInfo(*d, resp);
    return grpc::Status::OK;
  }

  // file_sd targets: add (endpoint set) or remove (empty) an agent; a failed write is logged, never fatal.
  void UpdateTargets(const std::string& agent, const std::string& node, const std::string& endpoint) {
    if (targets_ == nullptr) return;
    absl::Status s = endpoint.empty() ? targets_->Remove(agent) : targets_->Add(agent, node, endpoint);
    if (!s.ok()) spdlog::warn("{}", std::string(s.message()));
  }

  grpc::Status Authorize(grpc::ServerContext* ctx, const char* rpc) const {
    if (token_.empty()) return grpc::Status::OK;
    const auto& md = ctx->client_metadata();
    const auto it = md.find(kAuthMetadataKey);
    if (it == md.end()) {
      spdlog::warn("{} from {} refused: no token", rpc, ctx->peer());
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "this coordinator requires a token: pass --token-file with the coordinator's token");
    }
    if (!TokenMatches(std::string_view(it->second.data(), it->second.size()), token_)) {
      spdlog::warn("{} from {} refused: wrong token", rpc, ctx->peer());
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "the coordinator refused the token: the --token-file does not hold the coordinator's token");
    }
    return grpc::Status::OK;
  }

  Coordinator* core_;
  const std::string token_;
  TargetsFile* targets_;  // null without --targets-file
};

// The coordinator's own metrics, computed at scrape time from Coordinator::GetCounts().
class CoordinatorMetrics : public prometheus::Collectable {
 public:
  explicit CoordinatorMetrics(const Coordinator* core) : core_(core) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    const Coordinator::Counts c = core_->GetCounts();
    using prometheus::MetricType;
    auto agents = MetricFamily("dlio_coordinator_agents", "Agents attached to the coordinator.", MetricType::Gauge);
    AddSample(agents, {}, static_cast<double>(c.agents));
    auto jobs = MetricFamily("dlio_coordinator_jobs", "Jobs known to the coordinator, by state.", MetricType::Gauge);
    for (const auto& [state, n] : c.jobs) AddSample(jobs, {{"state", JobStateName(state)}}, static_cast<double>(n));
    auto expired = MetricFamily("dlio_coordinator_leases_expired_total",
                                "Agents dropped because their lease expired (no heartbeat within the lease).",
                                MetricType::Counter);
    AddSample(expired, {}, static_cast<double>(c.leases_expired));
    auto barrier = MetricFamily("dlio_coordinator_barrier_wait_seconds",
                                "Time from the first to the last agent arriving at a step barrier.",
                                MetricType::Histogram);
    for (const auto& [job_id, h] : c.barrier_wait) AddHistogram(barrier, {{"job_id", job_id}}, h);
    auto stale = MetricFamily(
        "dlio_coordinator_stale_barrier_arrivals_total",
        "Barrier arrivals dropped because they were for another job, phase or step than the running barrier.",
        MetricType::Counter);
    AddSample(stale, {}, static_cast<double>(c.stale_arrivals));
    return {agents, jobs, expired, barrier, stale};
  }

 private:
  const Coordinator* core_;
};

}  // namespace

struct CoordinatorServer::Impl {
  std::unique_ptr<Coordinator> core;
  std::unique_ptr<TargetsFile> targets;
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<CoordinatorMetrics> metrics;
  std::unique_ptr<prometheus::Exposer> exposer;
  int port = 0;
  std::once_flag shutdown_once;
};

CoordinatorServer::CoordinatorServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CoordinatorServer::~CoordinatorServer() { Shutdown(); }

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(Options options) {
  auto impl = std::make_unique<Impl>();
  std::unique_ptr<JobStore> store;
  if (!options.store.empty()) {
    absl::StatusOr<std::unique_ptr<JobStore>> s = JobStore::Open(options.store);
    if (!s.ok()) return s.status();
    store = std::move(*s);
  }
  Coordinator::Options co = options.core;
  co.results_dir = options.results_dir;
  absl::StatusOr<std::unique_ptr<Coordinator>> core = Coordinator::Create(co, std::move(store));
  if (!core.ok()) return core.status();
  impl->core = std::move(*core);
  if (!options.targets_file.empty()) {
    impl->targets = std::make_unique<TargetsFile>(options.targets_file);
    if (absl::Status s = impl->targets->Init(); !s.ok()) return s;
  }
  impl->service = std::make_unique<Service>(impl->core.get(), options.transport.token, impl->targets.get());
  grpc::ServerBuilder builder;
  // Off: with SO_REUSEPORT (gRPC's default on Linux) a second coordinator on the same port would silently share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.listen, ServerCredentials(options.transport), &impl->port);
  builder.RegisterService(impl->service.get());
  // Receive: small (convert.h kMaxReceiveMessageBytes; agents cut large results into parts). Send: result files
  // and a job's merged trace can be large.
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  builder.SetMaxSendMessageSize(256 << 20);
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen: cannot listen on '", options.listen, "' (in use, or not an address of this host)"));
  }
  if (!options.metrics_listen.empty()) {
    try {
      impl->exposer = std::make_unique<prometheus::Exposer>(options.metrics_listen);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics-listen: cannot listen on '", options.metrics_listen, "': ", e.what()));
    }
    impl->metrics = std::make_shared<CoordinatorMetrics>(impl->core.get());
    impl->exposer->RegisterCollectable(impl->metrics);
  }
  return std::unique_ptr<CoordinatorServer>(new CoordinatorServer(std::move(impl)));
}

int CoordinatorServer::port() const { return impl_->port; }

int CoordinatorServer::metrics_port() const {
  if (!impl_->exposer) return 0;
  auto ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

Coordinator& CoordinatorServer::coordinator() { return *impl_->core; }

void CoordinatorServer::Wait() { impl_->server->Wait(); }

void CoordinatorServer::Shutdown() {
  if (!impl_ || !impl_->server) return;
  std::call_once(impl_->shutdown_once, [&] {
    // The running job ends interrupted while the agents can still confirm the stop; queued jobs stay in the store.
    impl_->core->Stop();
    // 1 s grace for in-flight RPCs; then open streams (agents, watchers) are cancelled.
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  });
}

}  // namespace dlio
