#include "coordinator/coordinator_server.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/mutex.h"
#include "base/steady_ns.h"
#include "results/prometheus_family.h"
#include "base/text.h"
#include "base/write_queue.h"
#include "coordinator/agent_dispatch.h"
#include "coordinator/targets_file.h"
#include "dlio/v1/convert.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "dlio/v1/credentials.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"
#include "spdlog/spdlog.h"

namespace dlio {

namespace {

// Messages queued for one agent before it counts as not reading its stream and is dropped. An agent receives about
// one message per step (the barrier release) and one per heartbeat; 4096 queued means it has been stuck for
// thousands of steps or minutes, while a healthy one drains its queue within milliseconds.
constexpr size_t kMaxQueuedMessages = 4096;
// Events queued for one watcher before it counts as not reading (a few per second per running job).
constexpr size_t kMaxQueuedEvents = 4096;

// The single place where absl::Status becomes grpc::Status.
grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

v1::JobState ToProto(JobState s) { return static_cast<v1::JobState>(static_cast<int>(s) + 1); }

// The wire form of a message, made once: copies of a ByteBuffer share its slices, so one release goes to every
// agent's stream without being serialised again.
grpc::ByteBuffer Serialize(const v1::CoordinatorMessage& m) {
  grpc::ByteBuffer b;
  bool own = false;
  grpc::SerializationTraits<v1::CoordinatorMessage>::Serialize(m, &b, &own);
  return b;
}

// The serialised release of the step being released: the core releases a step by calling every link of the job in
// a row (under its lock), so the first call serialises it and the others reuse the bytes.
// Thread-safety: Get() from any thread.
class ReleaseCache {
 public:
  grpc::ByteBuffer Get(const std::string& job_id, const std::string& phase_id, uint64_t step) {
    MutexLock lk(&mu_);
    if (!valid_ || step != step_ || job_id != job_id_ || phase_id != phase_id_) {
      v1::CoordinatorMessage m;
      m.mutable_barrier_release()->set_job_id(job_id);
      m.mutable_barrier_release()->set_phase_id(phase_id);
      m.mutable_barrier_release()->set_step(step);
      bytes_ = Serialize(m);
      wire_ = m.SerializeAsString();
      job_id_ = job_id, phase_id_ = phase_id, step_ = step, valid_ = true;
    }
    return bytes_;
  }
  // The release with one agent's timing (dlio_ext.barrier: announce): the shared bytes and, appended, a message
  // holding only the timing fields, which the parser merges into the same BarrierRelease (protobuf merges a
  // repeated embedded message), so the common part is still serialised once per step.
  grpc::ByteBuffer GetTimed(const std::string& job_id, const std::string& phase_id, uint64_t step,
                            const barrier_timing::Release& t) {
    grpc::ByteBuffer shared = Get(job_id, phase_id, step);
    if (t.wait_after_end_ns == 0 && t.held_ns == 0 && t.announce_received_ns == 0 && t.slack_ns == 0 &&
        t.placed_early_ns < 0) {
      return shared;
    }
    v1::CoordinatorMessage m;
    m.mutable_barrier_release()->set_wait_after_compute_end_ns(t.wait_after_end_ns);
    m.mutable_barrier_release()->set_held_ns(t.held_ns);
    m.mutable_barrier_release()->set_announce_received_ns(t.announce_received_ns);
    m.mutable_barrier_release()->set_slack_ns(t.slack_ns);
    m.mutable_barrier_release()->set_placed_by_offset(t.placed_early_ns >= 0);
    m.mutable_barrier_release()->set_placed_early_ns(std::max<int64_t>(0, t.placed_early_ns));
    std::string bytes;
    {
      MutexLock lk(&mu_);
      bytes = wire_;
    }
    bytes += m.SerializeAsString();
    grpc::Slice slice(bytes);
    return grpc::ByteBuffer(&slice, 1);
  }

 private:
  Mutex mu_;
  bool valid_ ABSL_GUARDED_BY(mu_) = false;
  std::string job_id_ ABSL_GUARDED_BY(mu_), phase_id_ ABSL_GUARDED_BY(mu_);
  uint64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::ByteBuffer bytes_ ABSL_GUARDED_BY(mu_);
  std::string wire_ ABSL_GUARDED_BY(mu_);  // bytes_ as a string, for GetTimed
};

// AgentLink over one Attach stream (gRPC's callback API). The core calls it under its lock: every call serialises
// its message and queues it (WriteQueue: at most one write in flight, the next one started by the completion of the
// last), never blocks. After Close() (the stream is ending) every call does nothing; the link may outlive the stream
// (the core drops it later).
class StreamLink : public AgentLink {
 public:
  StreamLink(std::string agent, ReleaseCache* releases, grpc::CallbackServerContext* ctx,
             std::function<void(const grpc::ByteBuffer*)> start_write)
      : agent_(std::move(agent)), releases_(releases), queue_(kMaxQueuedMessages, std::move(start_write)),
        ctx_(ctx) {}

  void Accepted(std::chrono::milliseconds heartbeat, std::chrono::milliseconds lease) override {
    v1::CoordinatorMessage m;
    m.mutable_welcome()->set_protocol_version(kProtocolVersion);
    m.mutable_welcome()->set_agent(agent_);
    m.mutable_welcome()->set_heartbeat_interval_ms(static_cast<uint32_t>(heartbeat.count()));
    m.mutable_welcome()->set_lease_ms(static_cast<uint32_t>(lease.count()));
    m.mutable_welcome()->set_clock_domain(barrier_timing::ClockDomain());
    Push(Serialize(m));
  }
  void RunPhase(const PhaseOrder& o) override {
    v1::CoordinatorMessage m;
    ToProto(o, m.mutable_run_phase());
    Push(Serialize(m));
  }
  void ReleaseBarrier(const std::string& job_id, const std::string& phase_id, uint64_t step) override {
    Push(releases_->Get(job_id, phase_id, step));
  }
  void ReleaseBarrierTimed(const std::string& job_id, const std::string& phase_id, uint64_t step,
                           const barrier_timing::Release& timing) override {
    Push(releases_->GetTimed(job_id, phase_id, step, timing));
  }
  void Cancel(const std::string& job_id, const std::string& reason) override {
    v1::CoordinatorMessage m;
    m.mutable_cancel()->set_job_id(job_id);
    m.mutable_cancel()->set_reason(reason);
    Push(Serialize(m));
  }
  void Drop(const std::string& reason) override { Break(reason); }
  // The answer to a heartbeat, which tells the agent the coordinator is alive and, with the heartbeat's receipt and
  // the echo's queueing in this clock, gives it one exchange of its clock-offset estimate (base/barrier_timing.h
  // OffsetWindow::Exchange). Every heartbeat is echoed: one message per agent and heartbeat interval, as an idle
  // coordinator always sent.
  void Echo(int64_t agent_time_ns, int64_t received_ns) {
    v1::CoordinatorMessage m;
    v1::Heartbeat* h = m.mutable_heartbeat();
    h->set_agent_time_ns(agent_time_ns);
    h->set_coordinator_received_ns(received_ns);
    h->set_coordinator_sent_ns(SteadyNs());  // before the write: no later than the echo leaves
    Push(Serialize(m));
  }

  // The stream's side. A write completed; true when the link is closed and nothing is in flight any more.
  bool WriteDone(bool ok) {
    if (!ok) Break("");  // the stream broke: the reader sees its end and removes the agent
    return queue_.Done(ok);
  }
  // The stream is ending (its reads are over); true when nothing is in flight (it may finish now).
  bool Close() {
    {
      MutexLock lk(&mu_);
      ctx_ = nullptr;
    }
    return queue_.Close();
  }
  std::string drop_reason() {
    MutexLock lk(&mu_);
    return drop_reason_;
  }

 private:
  void Push(grpc::ByteBuffer b) {
    if (queue_.Push(std::move(b)) == WriteQueue<grpc::ByteBuffer>::Pushed::kFull) {
      Break(absl::StrCat("it stopped reading its stream (", kMaxQueuedMessages, " messages queued)"));
    }
  }
  // Ends the stream (its reads fail at once), remembering why for the core.
  void Break(const std::string& reason) {
    MutexLock lk(&mu_);
    if (drop_reason_.empty()) drop_reason_ = reason;
    if (ctx_ != nullptr) ctx_->TryCancel();
  }

  const std::string agent_;
  ReleaseCache* const releases_;
  WriteQueue<grpc::ByteBuffer> queue_;
  Mutex mu_;
  grpc::CallbackServerContext* ctx_ ABSL_GUARDED_BY(mu_);  // null once the stream is ending
  std::string drop_reason_ ABSL_GUARDED_BY(mu_);
};

// One JobEvent on the wire.
v1::JobEvent EventToProto(const std::string& job_id, const JobEventData& e) {
  v1::JobEvent pe;
  pe.set_job_id(job_id);
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
  return pe;
}

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
  if (d.completed_au_percent) out->set_completed_au_percent(*d.completed_au_percent);
  if (d.completed_samples_per_second) out->set_completed_samples_per_second(*d.completed_samples_per_second);
  ToProto(d.verdict, out->mutable_verdict());
}

// The service. Attach and Watch run on gRPC's callback API: one reactor per agent stream and per watcher, no thread
// of their own (AttachReactor, WatchReactor below). The client RPCs are "streamed" (StreamedUnary, split streaming).
// Every method is thus served as a stream, and for a stream gRPC runs the handler as soon as the call's metadata
// arrived, before its request message is read: Authorize() refuses a caller without the token before any byte of
// its message is buffered. For a method served as unary or server-streaming, gRPC reads the whole request before
// anything of ours runs, a server interceptor included, and of any size: the receive limit is checked on the
// complete message (issue 24: 20 unauthenticated Watch calls of 200 MB took the coordinator from 19 MiB to
// 2,476 MiB). Watch is server-streaming on the wire, so WithSplitStreamingMethod_Watch registers it as a stream and
// the constructor replaces that handler with a callback one (WatchReactor reads the one request itself).
using ServiceBase = v1::Coordinator::WithRawCallbackMethod_Attach<v1::Coordinator::WithSplitStreamingMethod_Watch<
    v1::Coordinator::WithStreamedUnaryMethod_Submit<v1::Coordinator::WithStreamedUnaryMethod_Cancel<
        v1::Coordinator::WithStreamedUnaryMethod_ListJobs<v1::Coordinator::WithStreamedUnaryMethod_GetJob<
            v1::Coordinator::WithSplitStreamingMethod_GetResults<v1::Coordinator::Service>>>>>>>;

class Service final : public ServiceBase {
 public:
  Service(Coordinator* core, std::string token, TargetsFile* targets)
      : core_(core), token_(std::move(token)), targets_(targets) {
    // The generated code numbers the methods in the order of coordinator.proto, as its descriptor does.
    const int watch = v1::WatchRequest::descriptor()->file()->FindServiceByName("Coordinator")
                          ->FindMethodByName("Watch")->index();
    MarkMethodCallback(watch, new grpc::internal::CallbackBidiHandler<v1::WatchRequest, v1::JobEvent>(
                                  [this](grpc::CallbackServerContext* ctx) { return WatchStream(ctx); }));
  }

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Attach(grpc::CallbackServerContext* ctx) override;
  // Watch, served as a stream of one read and many writes (see above).
  grpc::ServerBidiReactor<v1::WatchRequest, v1::JobEvent>* WatchStream(grpc::CallbackServerContext* ctx);
  // Never called: the constructor replaced its handler with WatchStream.
  grpc::Status StreamedWatch(grpc::ServerContext*,
                             grpc::ServerSplitStreamer<v1::WatchRequest, v1::JobEvent>*) override {
    return grpc::Status(grpc::StatusCode::INTERNAL, "Watch is served by its callback handler");
  }

  grpc::Status StreamedSubmit(grpc::ServerContext* ctx,
                              grpc::ServerUnaryStreamer<v1::SubmitRequest, v1::SubmitResponse>* st) override {
    return Unary(ctx, st, "Submit", [&](const v1::SubmitRequest* q, v1::SubmitResponse* r) { return SubmitJob(q, r); });
  }
  grpc::Status StreamedCancel(grpc::ServerContext* ctx,
                              grpc::ServerUnaryStreamer<v1::CancelRequest, v1::CancelResponse>* st) override {
    return Unary(ctx, st, "Cancel", [&](const v1::CancelRequest* q, v1::CancelResponse* r) { return CancelJob(q, r); });
  }
  grpc::Status StreamedListJobs(grpc::ServerContext* ctx,
                                grpc::ServerUnaryStreamer<v1::ListJobsRequest, v1::ListJobsResponse>* st) override {
    return Unary(ctx, st, "ListJobs", [&](const v1::ListJobsRequest* q, v1::ListJobsResponse* r) { return ListAll(q, r); });
  }
  grpc::Status StreamedGetJob(grpc::ServerContext* ctx,
                              grpc::ServerUnaryStreamer<v1::GetJobRequest, v1::JobInfo>* st) override {
    return Unary(ctx, st, "GetJob", [&](const v1::GetJobRequest* q, v1::JobInfo* r) { return GetOne(q, r); });
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

  grpc::Status SubmitJob(const v1::SubmitRequest* req, v1::SubmitResponse* resp) {
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
    r.agent_names.assign(req->agent_names().begin(), req->agent_names().end());
    r.share_agents = req->share_agents();
    absl::StatusOr<std::string> id = core_->Submit(r);
    if (!id.ok()) return ToGrpc(id.status());
    resp->set_job_id(*id);
    return grpc::Status::OK;
  }

  grpc::Status CancelJob(const v1::CancelRequest* req, v1::CancelResponse* resp) {
    absl::StatusOr<bool> r = core_->Cancel(req->job_id());
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_cancelled(*r);
    return grpc::Status::OK;
  }

  template <typename Writer>
  grpc::Status GetResults(const v1::GetResultsRequest* req, Writer* writer) {
    absl::StatusOr<JobInfoData> job = core_->GetJob(req->job_id());
    if (!job.ok()) return ToGrpc(job.status());
    // Read through the folder's descriptor (Coordinator::OpenResultDir): no link is followed, in the folder or to it.
    absl::StatusOr<std::shared_ptr<const ConfinedDir>> dir = core_->OpenResultDir(req->job_id(), /*create=*/false);
    if (!dir.ok() && dir.status().code() != absl::StatusCode::kNotFound) return ToGrpc(dir.status());
    if (!dir.ok()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("job ", req->job_id(), " (", JobStateName(job->record.state),
                                       ") has no result files", IsFinal(job->record.state)
                                                                    ? " (it ended before completing an epoch)"
                                                                    : " yet (they appear after its first epoch)"));
    }
    absl::StatusOr<std::vector<ConfinedDir::Entry>> entries = (*dir)->List(".");
    if (!entries.ok()) return ToGrpc(entries.status());
    std::vector<std::string> files;
    for (const ConfinedDir::Entry& e : *entries) {
      if (e.type == ConfinedDir::Entry::Type::kFile && e.name.find(".tmp") == std::string::npos) {
        files.push_back(e.name);
      }
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      absl::StatusOr<std::string> content = ReadFileIn(**dir, f);
      v1::ResultFile rf;
      rf.set_name(f);
      rf.set_content(content.ok() ? std::move(*content) : std::string());
      if (!writer->Write(rf)) break;
    }
    return grpc::Status::OK;
  }

  // A page of jobs (Coordinator::ListJobsPage: bounded in jobs and bytes); the agents on the first page only.
  grpc::Status ListAll(const v1::ListJobsRequest* req, v1::ListJobsResponse* resp) {
    absl::StatusOr<JobPage> page = core_->ListJobsPage(req->page_size(), req->page_token());
    if (!page.ok()) return ToGrpc(page.status());
    for (const JobInfoData& d : page->jobs) FillInfo(d, resp->add_jobs());
    resp->set_next_page_token(page->next_page_token);
    if (!req->page_token().empty()) return grpc::Status::OK;
    for (const AgentStatusData& a : core_->ListAgents()) {
      v1::AgentStatus* out = resp->add_agents();
      out->set_name(a.info.name);
      out->set_hostname(a.info.hostname);
      out->set_accelerators(static_cast<uint32_t>(a.info.ranks));
      out->set_attached_s(a.attached_s);
      out->set_last_heard_s(a.last_heard_s);
      out->set_job_id(a.job_id);
      out->set_host_memory_bytes(static_cast<uint64_t>(a.info.memory_gb * 1024.0 * 1024.0 * 1024.0 + 0.5));
      out->set_host_cpu_count(static_cast<uint32_t>(std::max(0, a.info.cpu_count)));
    }
    return grpc::Status::OK;
  }

  grpc::Status GetOne(const v1::GetJobRequest* req, v1::JobInfo* resp) {
    absl::StatusOr<JobInfoData> d = core_->GetJob(req->job_id());
    if (!d.ok()) return ToGrpc(d.status());
    FillInfo(*d, resp);
    return grpc::Status::OK;
  }


 public:
  Coordinator* core() const { return core_; }
  ReleaseCache* releases() { return &releases_; }
  // file_sd targets: add (endpoint set) or remove (empty) an agent; a failed write is logged, never fatal.
  void UpdateTargets(const std::string& agent, const std::string& node, const std::string& endpoint) {
    if (targets_ == nullptr) return;
    absl::Status s = endpoint.empty() ? targets_->Remove(agent) : targets_->Add(agent, node, endpoint);
    if (!s.ok()) spdlog::warn("{}", std::string(s.message()));
  }

  grpc::Status Authorize(grpc::ServerContextBase* ctx, const char* rpc) const {
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


 private:
  Coordinator* core_;
  const std::string token_;
  TargetsFile* targets_;  // null without --targets-file
  ReleaseCache releases_;
};

// One agent's Attach stream: the Hello checked and answered (Welcome, or an Error with its ErrorCode and a status),
// then every message delivered to the core through an AgentInbox, one read at a time; the agent's outgoing messages
// go through its StreamLink. The stream finishes once its reads are over (the agent left, broke its connection, or
// was dropped) and its last write completed. Deletes itself in OnDone().
class AttachReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  AttachReactor(Service* service, grpc::CallbackServerContext* ctx) : service_(service), ctx_(ctx) {
    if (grpc::Status s = service_->Authorize(ctx_, "Attach"); !s.ok()) {
      Finish(s);
      return;
    }
    StartRead(&in_);
  }
  void OnReadDone(bool ok) override {
    const Coordinator::Clock::time_point read_at = Coordinator::Clock::now();  // where gRPC hands the message over
    if (!ok) {
      End();
      return;
    }
    v1::AgentMessage m;
    if (!grpc::SerializationTraits<v1::AgentMessage>::Deserialize(&in_, &m).ok()) {
      if (!link_) {
        Refuse(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message on Attach must be Hello"),
               v1::ERROR_CODE_BAD_HELLO);
        return;
      }
      spdlog::warn("agent '{}' sent a message that does not parse; closing its stream", info_.name);
      ctx_->TryCancel();  // the next read fails: End() removes the agent
    } else if (!link_) {
      Hello(m);
      return;
    } else {
      if (m.has_barrier_arrive() && barrier_timing::HopsOn()) {
        barrier_timing::Hop("read", m.barrier_arrive().step(),
                            std::chrono::duration_cast<std::chrono::nanoseconds>(read_at.time_since_epoch()).count(),
                            info_.name);
      }
      inbox_->Deliver(m, read_at);
    }
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    if (link_->WriteDone(ok)) Finish(grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  void Hello(const v1::AgentMessage& m) {
    if (!m.has_hello()) {
      Refuse(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message on Attach must be Hello"),
             v1::ERROR_CODE_BAD_HELLO);
      return;
    }
    const v1::Hello& hello = m.hello();
    if (hello.protocol_version() != kProtocolVersion) {
      const std::string msg =
          absl::StrCat("agent '", EscapeText(hello.name(), 64), "' speaks protocol version ", hello.protocol_version(),
                       ", this coordinator speaks version ", kProtocolVersion, "; run matching builds");
      spdlog::error("{}", msg);
      Refuse(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, msg), v1::ERROR_CODE_PROTOCOL_MISMATCH);
      return;
    }
    if (absl::Status s = CheckHello(hello); !s.ok()) {
      spdlog::error("agent from {} refused: {}", ctx_->peer(), std::string(s.message()));
      Refuse(ToGrpc(s), v1::ERROR_CODE_BAD_HELLO);
      return;
    }
    info_ = AgentInfoFromHello(hello);
    info_.relay_endpoint = ResolveMetricsEndpoint(info_.relay_endpoint, ctx_->peer());  // a wildcard host: the peer's
    link_ = std::make_shared<StreamLink>(info_.name, service_->releases(), ctx_,
                                         [this](const grpc::ByteBuffer* b) { StartWrite(b); });
    if (absl::Status s = service_->core()->AddAgent(info_, hello.instance(), link_); !s.ok()) {
      link_->Close();  // nothing was queued: AddAgent greets only the agents it accepts
      link_.reset();
      spdlog::error("{}", std::string(s.message()));
      Refuse(ToGrpc(s), v1::ERROR_CODE_NAME_TAKEN);
      return;
    }
    service_->UpdateTargets(info_.name, info_.hostname,
                            ResolveMetricsEndpoint(hello.metrics_endpoint(), ctx_->peer()));
    inbox_ = std::make_unique<AgentInbox>(
        service_->core(), info_.name, [link = link_.get()](int64_t t, int64_t received) { link->Echo(t, received); });
    StartRead(&in_);
  }
  // The refusal of an attach: an Error naming the cause, then the status.
  void Refuse(const grpc::Status& status, v1::ErrorCode code) {
    v1::CoordinatorMessage m;
    m.mutable_error()->set_code(code);
    m.mutable_error()->set_message(status.error_message());
    refusal_ = Serialize(m);
    StartWriteAndFinish(&refusal_, grpc::WriteOptions(), status);
  }
  // The reads are over: the agent leaves the registry; the stream finishes once its last write completed.
  void End() {
    if (!link_) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message on Attach must be Hello"));
      return;
    }
    std::string why = link_->drop_reason();
    if (why.empty()) {
      why = ctx_->IsCancelled() ? "its connection broke (process gone, or network down)" : "it closed its connection";
    }
    const bool idle = link_->Close();
    service_->UpdateTargets(info_.name, "", "");
    service_->core()->RemoveAgent(info_.name, link_.get(), why);
    if (idle) Finish(grpc::Status::OK);
  }

  Service* const service_;
  grpc::CallbackServerContext* const ctx_;
  grpc::ByteBuffer in_;                 // the message being read (one read at a time)
  grpc::ByteBuffer refusal_;            // written by StartWriteAndFinish, kept until OnDone
  AgentInfo info_;
  std::shared_ptr<StreamLink> link_;    // set once the Hello is accepted
  std::unique_ptr<AgentInbox> inbox_;
};

// One Watch call: authorized on its metadata, then its request (the job id) read, then the job's events so far and
// each new one as the core emits it (Coordinator::Watch), until the final event is written or the watcher goes
// away. A stream of one read and many writes, so that nothing is read before Authorize() (Service). gRPC may run
// reactions concurrently: mu_ makes sure that a watch started by OnReadDone() is ended by exactly one of it and
// Stop(), whichever comes second. Deletes itself in OnDone().
class WatchReactor final : public grpc::ServerBidiReactor<v1::WatchRequest, v1::JobEvent> {
 public:
  WatchReactor(Service* service, grpc::CallbackServerContext* ctx)
      : core_(service->core()), ctx_(ctx),
        queue_(kMaxQueuedEvents, [this](const v1::JobEvent* e) { StartWrite(e); }) {
    if (grpc::Status s = service->Authorize(ctx_, "Watch"); !s.ok()) {
      FinishOnce(s);
      return;
    }
    StartRead(&req_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the watcher closed its side without a request, or went away (then OnCancel() runs too)
      FinishOnce(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Watch: no request message"));
      return;
    }
    absl::StatusOr<uint64_t> id =
        core_->Watch(req_.job_id(), [this, job = req_.job_id()](const JobEventData& e) { Sink(job, e); });
    if (!id.ok()) {
      FinishOnce(ToGrpc(id.status()));
      return;
    }
    bool stopped = false;
    {
      MutexLock lk(&mu_);
      id_ = *id;
      stopped = stopped_;
    }
    if (stopped) core_->Unwatch(*id);  // Stop() ran first and found no watch to end
  }
  void OnWriteDone(bool ok) override {
    if (!ok) Stop();
    if (queue_.Done(ok)) FinishOnce(grpc::Status::OK);
  }
  void OnCancel() override { Stop(); }
  void OnDone() override { delete this; }

 private:
  // Called by the core under its lock: only queues (and finishes after the final event).
  void Sink(const std::string& job_id, const JobEventData& e) {
    if (queue_.Push(EventToProto(job_id, e)) == WriteQueue<v1::JobEvent>::Pushed::kFull) {
      ctx_->TryCancel();  // a watcher that stopped reading: OnCancel() ends the call
      return;
    }
    if (e.final && queue_.Close(/*drain=*/true)) FinishOnce(grpc::Status::OK);
  }
  // The watcher went away (or its stream broke): no more events; finish once nothing is in flight.
  void Stop() {
    uint64_t id = 0;
    {
      MutexLock lk(&mu_);
      stopped_ = true;
      id = id_;
    }
    if (id != 0) core_->Unwatch(id);
    if (queue_.Close()) FinishOnce(grpc::Status::OK);
  }
  void FinishOnce(const grpc::Status& s) {
    if (!finished_.exchange(true)) Finish(s);
  }

  Coordinator* const core_;
  grpc::CallbackServerContext* const ctx_;
  v1::WatchRequest req_;                // the one request, read after Authorize()
  WriteQueue<v1::JobEvent> queue_;
  Mutex mu_;
  uint64_t id_ ABSL_GUARDED_BY(mu_) = 0;       // the core's watch id (0: not watching)
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;  // Stop() ran: a watch started later is ended at once
  std::atomic<bool> finished_{false};
};

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Service::Attach(grpc::CallbackServerContext* ctx) {
  return new AttachReactor(this, ctx);
}

grpc::ServerBidiReactor<v1::WatchRequest, v1::JobEvent>* Service::WatchStream(grpc::CallbackServerContext* ctx) {
  return new WatchReactor(this, ctx);
}

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
    auto limit = MetricFamily("dlio_coordinator_limit",
                              "The limiting resource named by the verdict of the newest ended job that trained "
                              "(value 1; labels job_id, limit).",
                              MetricType::Gauge);
    if (!c.limit_class.empty()) AddSample(limit, {{"job_id", c.limit_job_id}, {"limit", c.limit_class}}, 1);
    return {agents, jobs, expired, barrier, stale, limit};
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
  // No HTTP/2 bandwidth-delay probing: what the coordinator receives is small (kMaxReceiveMessageBytes, results in
  // parts); its pings and window updates cost CPU on every agent's connection (credentials.h SessionChannelArgs).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, kServerBdpProbe);
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
