#include "coordinator/coordinator_server.h"

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/prometheus_histogram.h"
#include "coordinator/targets_file.h"
#include "dlio/v1/convert.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "prometheus/exposer.h"
#include "spdlog/spdlog.h"

namespace dlio {

namespace {

namespace fs = std::filesystem;
using AttachStream = grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>;

// Heartbeat interval told to agents: 1 s keeps a lost agent visible within a few seconds at negligible cost
// (256 agents = 256 small messages per second).
constexpr uint32_t kHeartbeatIntervalMs = 1000;

// The single place where absl::Status becomes grpc::Status.
grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// AgentLink over one Attach stream. Writes are serialised (gRPC allows one writer at a time); after the handler
// returns the stream is gone, so Close() turns later calls into no-ops.
class StreamLink : public AgentLink {
 public:
  StreamLink(AttachStream* stream, std::string agent) : stream_(stream), agent_(std::move(agent)) {}
  void Accepted() override {
    v1::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_protocol_version(kProtocolVersion);
    welcome.mutable_welcome()->set_agent(agent_);
    welcome.mutable_welcome()->set_heartbeat_interval_ms(kHeartbeatIntervalMs);
    Write(welcome);
  }
  void RunPhase(const PhaseOrder& o) override {
    v1::CoordinatorMessage m;
    v1::RunPhase* r = m.mutable_run_phase();
    r->set_job_id(o.job_id);
    r->set_phase_id(o.phase_id);
    r->set_kind(o.kind == PhaseOrder::Kind::kGenerate ? v1::PHASE_KIND_GENERATE
                : o.kind == PhaseOrder::Kind::kEval   ? v1::PHASE_KIND_EVAL
                                                      : v1::PHASE_KIND_TRAIN_EPOCH);
    r->set_workload_yaml(o.workload_yaml);
    r->set_world_size(o.world);
    r->set_first_rank(o.first_rank);
    r->set_local_ranks(o.local_ranks);
    r->set_epoch(o.epoch);
    r->set_num_agents(o.num_agents);
    r->set_agent_index(o.agent_index);
    Write(m);
  }
  void ReleaseBarrier(const std::string& job_id, const std::string& phase_id, uint64_t step) override {
    v1::CoordinatorMessage m;
    m.mutable_barrier_release()->set_job_id(job_id);
    m.mutable_barrier_release()->set_phase_id(phase_id);
    m.mutable_barrier_release()->set_step(step);
    Write(m);
  }
  void Cancel(const std::string& job_id, const std::string& reason) override {
    v1::CoordinatorMessage m;
    m.mutable_cancel()->set_job_id(job_id);
    m.mutable_cancel()->set_reason(reason);
    Write(m);
  }
  bool Write(const v1::CoordinatorMessage& m) {
    std::lock_guard<std::mutex> lk(mu_);
    return stream_ != nullptr && stream_->Write(m);
  }
  void Close() {
    std::lock_guard<std::mutex> lk(mu_);
    stream_ = nullptr;
  }

 private:
  std::mutex mu_;
  AttachStream* stream_;  // guarded by mu_; null once the handler returned
  const std::string agent_;
};

class Service final : public v1::Coordinator::Service {
 public:
  Service(Coordinator* core, TargetsFile* targets) : core_(core), targets_(targets) {}

  grpc::Status Attach(grpc::ServerContext* ctx, AttachStream* stream) override {
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
    if (hello.name().empty() || hello.accelerators() == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Hello needs a name and at least one accelerator");
    }
    AgentInfo info;
    info.name = hello.name();
    info.hostname = hello.hostname().empty() ? hello.name() : hello.hostname();
    info.memory_gb = static_cast<double>(hello.host_memory_bytes()) / (1024.0 * 1024.0 * 1024.0);
    info.cpu_count = static_cast<int>(hello.host_cpu_count());
    info.ranks = static_cast<int>(hello.accelerators());
    auto link = std::make_shared<StreamLink>(stream, info.name);
    if (absl::Status s = core_->AddAgent(info, link); !s.ok()) return ToGrpc(s);  // AddAgent sent the Welcome
    UpdateTargets(info.name, info.hostname, ResolveMetricsEndpoint(hello.metrics_endpoint(), ctx->peer()));

    while (stream->Read(&in)) {
      switch (in.msg_case()) {
        case v1::AgentMessage::kBarrierArrive:
          core_->OnBarrierArrive(info.name, in.barrier_arrive().job_id(), in.barrier_arrive().phase_id(),
                                 in.barrier_arrive().step());
          break;
        case v1::AgentMessage::kProgress: {
          const v1::Progress& p = in.progress();
          core_->OnProgress(info.name, p.job_id(), p.phase_id(), p.done(), p.total(), p.samples(), p.bytes());
          break;
        }
        case v1::AgentMessage::kPhaseDone: {
          std::vector<RankEpochResult> ranks;
          for (const v1::RankResult& r : in.phase_done().ranks()) ranks.push_back(FromProto(r));
          core_->OnPhaseDone(info.name, in.phase_done().job_id(), in.phase_done().phase_id(), std::move(ranks));
          break;
        }
        case v1::AgentMessage::kError:
          core_->OnAgentError(info.name, in.error().job_id(), in.error().phase_id(), in.error().message());
          break;
        default:  // heartbeats only prove liveness; the stream itself carries that for now
          break;
      }
    }
    link->Close();
    UpdateTargets(info.name, "", "");
    core_->RemoveAgent(info.name, ctx->IsCancelled() ? "connection cancelled" : "connection closed by the agent");
    return grpc::Status::OK;
  }

  grpc::Status Submit(grpc::ServerContext*, const v1::SubmitRequest* req, v1::SubmitResponse* resp) override {
    JobRequest r;
    r.workload_yaml = req->workload_yaml();
    r.overrides.assign(req->overrides().begin(), req->overrides().end());
    r.agents = static_cast<int>(req->agents());
    r.source_name = req->source_name().empty() ? "job" : req->source_name();
    r.wait_for_agents_s = static_cast<int>(req->wait_for_agents_s());
    absl::StatusOr<std::string> id = core_->Submit(r);
    if (!id.ok()) return ToGrpc(id.status());
    resp->set_job_id(*id);
    return grpc::Status::OK;
  }

  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req,
                     grpc::ServerWriter<v1::JobEvent>* writer) override {
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
        pe.set_state(static_cast<v1::JobState>(static_cast<int>(e.state) + 1));
        pe.set_phase_id(e.phase_id);
        pe.set_done(e.done);
        pe.set_total(e.total);
        pe.set_samples(e.samples);
        pe.set_bytes(e.bytes);
        pe.set_message(e.message);
        auto row = [](const EpochMetric& m, v1::EpochRow* r) {
          r->set_epoch(m.epoch);
          r->set_au_percent(m.au_percent);
          r->set_samples_per_second(m.samples_per_second);
          r->set_mib_per_second(m.mib_per_second);
          r->set_actual_mb_per_second(m.actual_mb_per_second);
        };
        for (const EpochMetric& m : e.epochs) row(m, pe.add_epochs());
        row(e.mean, pe.mutable_mean());
        pe.set_final(e.final);
        if (!writer->Write(pe)) return grpc::Status::OK;
        if (e.final) return grpc::Status::OK;
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Cancel(grpc::ServerContext*, const v1::CancelRequest* req, v1::CancelResponse* resp) override {
    absl::StatusOr<bool> r = core_->Cancel(req->job_id());
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_cancelled(*r);
    return grpc::Status::OK;
  }

  grpc::Status GetResults(grpc::ServerContext*, const v1::GetResultsRequest* req,
                          grpc::ServerWriter<v1::ResultFile>* writer) override {
    if (req->job_id().empty() || req->job_id().find('/') != std::string::npos ||
        req->job_id().find("..") != std::string::npos) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "job id: not a job id");
    }
    const fs::path dir = core_->ResultDir(req->job_id());
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("job ", req->job_id(), ": no results"));
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
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

 private:
  // file_sd targets: add (endpoint set) or remove (empty) an agent; a failed write is logged, never fatal.
  void UpdateTargets(const std::string& agent, const std::string& node, const std::string& endpoint) {
    if (targets_ == nullptr) return;
    absl::Status s = endpoint.empty() ? targets_->Remove(agent) : targets_->Add(agent, node, endpoint);
    if (!s.ok()) spdlog::warn("{}", std::string(s.message()));
  }

  Coordinator* core_;
  TargetsFile* targets_;  // null without --targets-file
};

// The coordinator's own metrics, computed at scrape time from Coordinator::GetCounts().
class CoordinatorMetrics : public prometheus::Collectable {
 public:
  explicit CoordinatorMetrics(const Coordinator* core) : core_(core) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    const Coordinator::Counts c = core_->GetCounts();
    prometheus::MetricFamily agents;
    agents.name = "dlio_coordinator_agents";
    agents.help = "Agents attached to the coordinator.";
    agents.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric m;
    m.gauge.value = static_cast<double>(c.agents);
    agents.metric.push_back(m);
    prometheus::MetricFamily jobs;
    jobs.name = "dlio_coordinator_jobs";
    jobs.help = "Jobs known to the coordinator, by state.";
    jobs.type = prometheus::MetricType::Gauge;
    for (const auto& [state, n] : c.jobs) {
      prometheus::ClientMetric j;
      j.label = {{"state", JobStateName(state)}};
      j.gauge.value = static_cast<double>(n);
      jobs.metric.push_back(j);
    }
    prometheus::MetricFamily barrier;
    barrier.name = "dlio_coordinator_barrier_wait_seconds";
    barrier.help = "Time from the first to the last agent arriving at a step barrier.";
    barrier.type = prometheus::MetricType::Histogram;
    for (const auto& [job_id, h] : c.barrier_wait) {
      prometheus::ClientMetric b;
      b.label = {{"job_id", job_id}};
      b.histogram = ToPrometheusHistogram(h);
      barrier.metric.push_back(b);
    }
    return {agents, jobs, barrier};
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
  Coordinator::Options co;
  co.results_dir = options.results_dir;
  impl->core = std::make_unique<Coordinator>(co);
  if (!options.targets_file.empty()) {
    impl->targets = std::make_unique<TargetsFile>(options.targets_file);
    if (absl::Status s = impl->targets->Init(); !s.ok()) return s;
  }
  impl->service = std::make_unique<Service>(impl->core.get(), impl->targets.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &impl->port);
  builder.RegisterService(impl->service.get());
  // Results and job files can exceed gRPC's 4 MiB default message size.
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.SetMaxSendMessageSize(256 << 20);
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--listen: cannot listen on '", options.listen, "'"));
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
    // 1 s grace for in-flight RPCs; then open streams (agents, watchers) are cancelled.
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  });
}

}  // namespace dlio
