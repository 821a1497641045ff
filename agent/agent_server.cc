#include "agent/agent_server.h"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "agent/agent_session.h"
#include "agent/host_sampler.h"
#include "agent/metrics.h"
#include "agent/phase_runner.h"
#include "agent/preflight.h"
#include "agent/relay.h"
#include "base/host_facts.h"
#include "base/mutex.h"
#include "dlio/v1/convert.h"
#include "dlio/v1/coordinator.grpc.pb.h"
#include "dlio/v1/credentials.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/exposer.h"
#include "readers/format.h"
#include "spdlog/spdlog.h"

namespace dlio {

namespace {

using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>;

enum class SessionEnd { kUnreachable, kLost, kRefused, kShutdown };

// CoordinatorLink over one synchronous Attach stream: one writer at a time (gRPC's rule), nothing after Close() or
// after our half of the stream was closed (Shutdown()).
class StreamLink : public CoordinatorLink {
 public:
  explicit StreamLink(Stream* stream) : stream_(stream) {}
  bool Send(const v1::AgentMessage& m) override {
    MutexLock lk(&mu_);
    return stream_ != nullptr && !writes_done_ && stream_->Write(m);
  }
  // Closes our half of the stream (the coordinator then ends the session).
  void WritesDone() {
    MutexLock lk(&mu_);
    if (stream_ != nullptr && !writes_done_) stream_->WritesDone();
    writes_done_ = true;
  }
  // The stream is about to go away.
  void Close() {
    MutexLock lk(&mu_);
    stream_ = nullptr;
  }

 private:
  Mutex mu_;
  Stream* stream_ ABSL_GUARDED_BY(mu_);
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
};

// One line saying why a connection to the coordinator `at` failed, from gRPC's reason `why`: with TLS the handshake's
// cause (a certificate without the expected name, a CA that did not sign it, a server that speaks plain text), without
// it a hint when the server seems to speak TLS. The flags named are the agent's.
std::string ConnectCause(std::string why, const Transport& t, const std::string& at) {
  why = absl::StrReplaceAll(why, {{"\n", " "}, {"\r", " "}});
  if (t.tls() && absl::StrContains(why, "not in peer certificate")) {  // "Peer name X is not in peer certificate"
    const std::string expected = t.server_name.empty() ? at.substr(0, at.rfind(':')) : t.server_name;
    return absl::StrCat("TLS handshake failed: the coordinator's certificate does not hold the name '", expected,
                        "' (", why, "); pass --tls-server-name with a name it holds");
  }
  const std::string lower = absl::AsciiStrToLower(why);  // OpenSSL 3's words, or BoringSSL's constant
  if (t.tls() &&
      (absl::StrContains(lower, "wrong version number") || absl::StrContains(lower, "wrong_version_number"))) {
    return absl::StrCat("TLS handshake failed: the coordinator answers in plain text, not TLS (", why,
                        "); leave out --tls-ca, or serve with --tls-cert/--tls-key");
  }
  if (t.tls()) {
    return absl::StrCat("TLS handshake failed (", why, "); check --tls-ca (the CA that signed the coordinator's ",
                        "certificate) and --tls-cert/--tls-key (mutual TLS)");
  }
  // A TLS server hangs up on a plaintext client's HTTP/2 preface: gRPC then says "Socket closed".
  return absl::StrContains(why, "Socket closed") ? absl::StrCat(why, "; if the coordinator serves TLS, pass --tls-ca")
                                                 : why;
}

}  // namespace

// The facade: the connection (channel, stream, reader loop, heartbeat thread, reconnects) and the phase host (a
// thread per phase running PhaseRunner, one runner per job, so jobs sharing this agent run side by side); the
// protocol itself is AgentSession's.
struct AgentServer::Impl : public PhaseHost {
  Options opt;
  std::shared_ptr<AgentMetrics> metrics;
  std::shared_ptr<HostSampler> sampler;  // host telemetry: /metrics, and each phase's series in its result
  std::unique_ptr<prometheus::Exposer> exposer;
  S3AgentDefaults s3_defaults;          // read once at start, handed to every job's runner
  std::unique_ptr<AgentSession> session;
  RelayHub relay_hub;                       // this agent's groups when it relays a step barrier (agent/relay.h)
  std::unique_ptr<RelayServer> relay_server;  // its listener (--relay-listen), null when none
  std::atomic<bool> shutdown{false};
  absl::Status refusal;
  // Why the last connection attempt failed, and why the last session ended (one line each; written by Session() and,
  // for a lease that ran out, by Serve()'s heartbeat thread before Serve() joins it): the agent's last line when it
  // gives up.
  std::string unreachable_cause, lost_cause;

  // The current connection (guarded by mu), for Shutdown().
  Mutex mu;
  CondVar cv;              // wakes the heartbeat thread and the reconnect backoff at shutdown
  grpc::ClientContext* ctx ABSL_GUARDED_BY(mu) = nullptr;
  std::shared_ptr<StreamLink> link ABSL_GUARDED_BY(mu);
  // Per job: its PhaseRunner (what outlives a phase: loaders, trace buffers, S3 configuration) and the thread of its
  // running (or last) phase. The runners of the newest kKeptJobs jobs are kept; an older idle one is dropped.
  struct JobPhases {
    std::unique_ptr<PhaseRunner> runner;
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> running = std::make_shared<std::atomic<bool>>(false);
  };
  static constexpr size_t kKeptJobs = 8;
  mutable Mutex jobs_mu;
  std::map<std::string, JobPhases> jobs ABSL_GUARDED_BY(jobs_mu);

  // PhaseHost: the phase on a thread of its own, its barrier blocking in AgentSession::WaitRelease().
  void Start(PhaseCommand cmd) override;
  // Where the phase's barrier arrivals go (the coordinator, this agent's relay hub, or the member's relay), opened
  // for the phase and closed at its end (agent/relay.h).
  struct BarrierRoute {
    bool relay = false;
    std::unique_ptr<RelayClient> client;
    absl::Status error;  // the member cannot use its relay (TLS: no TLS offered, a failed handshake): the phase fails
  };
  BarrierRoute OpenRoute(const PhaseCommand& cmd);
  // A member's (or a relay of relays') stream to its parent relay, TLS when the fleet has it (agent/
  // relay_credentials.h); false with route.error set when the transport is refused or the handshake failed.
  bool OpenParent(const PhaseCommand& cmd, bool relays, BarrierRoute& route);
  void CloseRoute(const PhaseCommand& cmd, BarrierRoute& route);
  // Sends the agent's arrival of `step` (compute_left_ns 0 after compute) along `route`; false when the session is
  // gone. A member whose relay is gone keeps waiting: the coordinator fails the job naming the relay.
  bool SendArrival(const PhaseCommand& cmd, BarrierRoute& route, uint64_t step, int64_t compute_left_ns,
                   const barrier_timing::EndInterval* end = nullptr);
  const PhaseProgress& progress(const std::string& job_id) const override;
  // The job's runner, made at its first phase (idle runners of older jobs dropped beyond kKeptJobs).
  JobPhases& PhasesOf(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(jobs_mu);
  void JoinPhase() {
    MutexLock lk(&jobs_mu);
    for (auto& [job, p] : jobs) {
      if (p.thread.joinable()) p.thread.join();
    }
  }

  // Before generating: the data folder inside the data root and the dataset within the free space; at the job's
  // first phase that writes, its checkpoints within the free space too; at the first epoch of a job that does not
  // generate, a dataset there to read (refused when there is none). An empty result vector on success (the
  // phase then runs). `*refused` tells a free-space refusal (the job ends refused) from a bad folder (it fails).
  absl::StatusOr<std::vector<RankEpochResult>> Preflight(const PhaseRunner& runner, const PhaseCommand& cmd,
                                                         bool* refused) const;
  AgentSession::Identity MakeIdentity(const std::string& instance) const;
  // Why `channel` is not connected after the wait: gRPC's reason for a channel in TRANSIENT_FAILURE (a call on it
  // fails at once with it: connection refused, the TLS handshake's error), as ConnectCause words it.
  std::string ConnectFailure(grpc::Channel& channel, v1::Coordinator::Stub& stub) const;
  // The error Run() returns when the reconnect window ran out.
  absl::Status GiveUp() const;
  SessionEnd Session();
  // Serves one accepted connection until it ends.
  SessionEnd Serve(grpc::ClientContext& context, Stream& stream, std::shared_ptr<StreamLink> stream_link,
                   const AgentSession::Timing& timing);
};

absl::StatusOr<std::vector<RankEpochResult>> AgentServer::Impl::Preflight(const PhaseRunner& runner,
                                                                          const PhaseCommand& cmd,
                                                                          bool* refused) const {
  *refused = false;
  const bool generate = cmd.kind == PhaseKind::kGenerate;
  if (!generate && !FirstWritingPhase(cmd, cmd.spec) && !ReadsExistingDataset(cmd, cmd.spec)) {
    return std::vector<RankEpochResult>();
  }
  const std::string ranks = cmd.local_ranks == 1 ? absl::StrCat("rank ", cmd.first_rank)
                                                  : absl::StrCat("ranks ", cmd.first_rank, "-",
                                                                 cmd.first_rank + cmd.local_ranks - 1);
  const std::string where = absl::StrCat("agent '", opt.name, "' (", ranks, ") job ", cmd.job_id, " phase ",
                                         cmd.phase_id);
  // The folder below the root, no link on the way (base/confined_dir.h); nothing is created before the check.
  const auto& root = runner.root();
  if (root.ok() && ReadsExistingDataset(cmd, cmd.spec)) {  // no dataset to read and none generated: refused
    absl::StatusOr<std::string> rel = (*root)->Relative(cmd.spec.data_folder, "dataset.data_folder");
    absl::StatusOr<std::unique_ptr<Format>> format = MakeFormat(cmd.spec.format, FormatOptions{});
    const absl::Status present =
        rel.ok() ? CheckDatasetPresent(std::filesystem::path((*root)->path()) / *rel, cmd, cmd.spec,
                                       format.ok() ? (*format)->extension() : cmd.spec.format)
                 : absl::OkStatus();  // a folder out of the root: the epoch fails naming it
    if (!present.ok()) {
      *refused = true;
      return absl::Status(present.code(), absl::StrCat(where, ": ", present.message()));
    }
  }
  if (!generate) {  // the job's checkpoints against the free space, at its first phase that writes (preflight.h)
    const absl::Status fits = root.ok() ? CheckCheckpointsFit(**root, cmd, cmd.spec, "") : absl::OkStatus();
    if (fits.ok()) return std::vector<RankEpochResult>();
    *refused = fits.code() == absl::StatusCode::kResourceExhausted;  // does not fit; other errors are failures
    return absl::Status(fits.code(), absl::StrCat(where, ": ", fits.message()));
  }
  if (!root.ok()) return absl::Status(root.status().code(), absl::StrCat(where, ": ", root.status().message()));
  absl::StatusOr<std::string> rel = (*root)->Relative(cmd.spec.data_folder, "dataset.data_folder");
  absl::Status checked = rel.ok() ? (*root)->NearestExisting(cmd.spec.data_folder, "dataset.data_folder").status()
                                  : rel.status();
  if (!checked.ok()) return absl::Status(checked.code(), absl::StrCat(where, ": ", checked.message()));
  const std::filesystem::path dir = std::filesystem::path((*root)->path()) / *rel;
  absl::StatusOr<std::unique_ptr<Format>> format = MakeFormat(cmd.spec.format, FormatOptions{});
  const std::string ext = format.ok() ? (*format)->extension() : cmd.spec.format;
  absl::Status fits = CheckDatasetFits(dir, cmd.spec, ext);
  if (fits.ok()) fits = CheckCheckpointsFit(**root, cmd, cmd.spec, ext);
  if (!fits.ok()) {
    *refused = fits.code() == absl::StatusCode::kResourceExhausted;  // does not fit; other errors are failures
    return absl::Status(fits.code(), absl::StrCat(where, ": ", fits.message()));
  }
  return std::vector<RankEpochResult>();
}

AgentServer::Impl::JobPhases& AgentServer::Impl::PhasesOf(const std::string& job_id) {
  auto it = jobs.find(job_id);
  if (it != jobs.end()) return it->second;
  // Job ids sort by submission: the oldest idle jobs' runners go first.
  for (auto old = jobs.begin(); old != jobs.end() && jobs.size() >= kKeptJobs;) {
    if (*old->second.running) {
      ++old;
      continue;
    }
    if (old->second.thread.joinable()) old->second.thread.join();  // at its end: it has answered
    old = jobs.erase(old);
  }
  JobPhases& p = jobs[job_id];
  p.runner = std::make_unique<PhaseRunner>(opt.data_root, opt.name, metrics.get());
  p.runner->set_s3_defaults(s3_defaults);
  return p;
}

const PhaseProgress& AgentServer::Impl::progress(const std::string& job_id) const {
  static const PhaseProgress kNone;
  MutexLock lk(&jobs_mu);
  auto it = jobs.find(job_id);
  return it == jobs.end() ? kNone : it->second.runner->progress();
}

void AgentServer::Impl::Start(PhaseCommand cmd) {
  MutexLock lk(&jobs_mu);
  JobPhases& p = PhasesOf(cmd.job_id);
  if (p.thread.joinable()) p.thread.join();  // the job's previous phase has answered already; its thread is at its end
  *p.running = true;
  p.thread = std::thread([this, runner = p.runner.get(), running = p.running, cmd = std::move(cmd)] {
    BarrierRoute route = OpenRoute(cmd);
    auto barrier = [&](uint64_t step) -> absl::Status {
      if (!SendArrival(cmd, route, step, 0)) return absl::UnavailableError("connection to coordinator lost");
      return session->WaitRelease(cmd.job_id, step);
    };
    PhaseRunner::AnnounceFns announce;  // dlio_ext.barrier: announce (agent/step_barrier.h)
    announce.announce = [&](uint64_t step, int64_t left_ns, const barrier_timing::EndInterval* end) -> absl::Status {
      if (!SendArrival(cmd, route, step, left_ns, end)) return absl::UnavailableError("connection to coordinator lost");
      return absl::OkStatus();
    };
    announce.await = [&](uint64_t step) { return session->AwaitRelease(cmd.job_id, step); };
    announce.offsets = &session->clock();
    bool refused = false;
    absl::StatusOr<std::vector<RankEpochResult>> r = Preflight(*runner, cmd, &refused);
    if (r.ok() && !route.error.ok()) r = route.error;
    if (r.ok()) {
      // Host telemetry is the host's: every phase, a concurrent job's too, carries the figures of its own span.
      const HostSampler::PhaseId sampled = sampler->BeginPhase(std::chrono::seconds(cmd.spec.telemetry_interval));
      r = runner->Run(cmd, barrier, session->cancel_flag(cmd.job_id), &announce);
      HostTelemetry host = sampler->EndPhase(sampled);
      if (r.ok() && !r->empty()) (*r)[0].host = std::move(host);  // process-wide, as the S3 statistics
    }
    CloseRoute(cmd, route);
    session->Finish(cmd, std::move(r), refused);
    *running = false;  // only now may PhasesOf() drop the runner (heartbeats read its progress until the answer)
  });
}

AgentServer::Impl::BarrierRoute AgentServer::Impl::OpenRoute(const PhaseCommand& cmd) {
  BarrierRoute route;
  if (cmd.barrier_relay.empty()) return route;  // the star
  // The groups this agent relays (none: a plain member), lowest first; a relay of relays has a parent relay too.
  const std::vector<std::vector<std::string>> levels = RelayHub::LevelsOf(cmd);
  // Its (highest group's) arrivals go to its parent relay.
  if (cmd.barrier_relay != opt.name && !OpenParent(cmd, !levels.empty(), route)) return route;
  if (levels.empty()) return route;
  route.relay = true;
  for (size_t l = 0; l < levels.size(); ++l) {
    spdlog::info("agent '{}': relays {}the step barrier of job {} phase {} for {} agent(s): {}", opt.name,
                 l == 0 ? std::string() : absl::StrCat("level ", l, " of "), cmd.job_id, cmd.phase_id,
                 levels[l].size(), absl::StrJoin(levels[l], ","));
  }
  RelayClient* parent = route.client.get();
  relay_hub.OpenLevels(
      cmd.job_id, cmd.phase_id, levels, opt.name,
      [this, &cmd, parent](uint64_t step, int64_t left_ns) {
        if (parent == nullptr) {
          session->Announce(cmd, step, left_ns);
        } else if (!parent->Send(step, left_ns)) {
          spdlog::warn("agent '{}': its relay {} is gone at step {} of job {} phase {}; waiting for the coordinator",
                       opt.name, cmd.barrier_relay, step, cmd.job_id, cmd.phase_id);
        }
      },
      [this, &cmd](const std::string& member, const std::string& why) {
        spdlog::warn("agent '{}': member {} of its barrier group lost during job {} phase {}: {}", opt.name,
                     member, cmd.job_id, cmd.phase_id, why);
        session->SendMemberLost(cmd, member, why);
      });
  return route;
}

bool AgentServer::Impl::OpenParent(const PhaseCommand& cmd, bool relays, BarrierRoute& route) {
  absl::StatusOr<Transport> t = RelayMemberTransport(opt.transport, opt.name, cmd.barrier_relay,
                                                     cmd.barrier_relay_endpoint, cmd.barrier_relay_tls_name);
  if (!t.ok()) {
    route.error = t.status();
    return false;
  }
  route.client = std::make_unique<RelayClient>(
      cmd.barrier_relay_endpoint, *t, cmd.job_id, cmd.phase_id, opt.name,
      [this, job = cmd.job_id, phase = cmd.phase_id, relays](uint64_t step, const barrier_timing::Release& t,
                                                             int64_t at_ns) {
        std::optional<barrier_timing::Release> own;
        if (relays) own = relay_hub.Released(job, phase, step, t, at_ns, at_ns);  // down its levels first
        const v1::BarrierRelease m = RelayRelease(job, phase, step, own.value_or(t));
        const std::chrono::steady_clock::time_point at{std::chrono::nanoseconds(at_ns)};
        session->DeliverRelease(m, at, /*from_relay=*/true);
      });
  if (route.client->handshake_failure().empty()) return true;
  route.error = absl::FailedPreconditionError(RelayHandshakeCause(route.client->handshake_failure(), opt.name,
                                                                  cmd.barrier_relay, cmd.barrier_relay_endpoint,
                                                                  cmd.barrier_relay_tls_name));
  spdlog::error("{}", std::string(route.error.message()));
  return false;
}

void AgentServer::Impl::CloseRoute(const PhaseCommand& cmd, BarrierRoute& route) {
  if (route.relay) relay_hub.Close(cmd.job_id, cmd.phase_id);
  if (route.client) route.client->Close();
}

bool AgentServer::Impl::SendArrival(const PhaseCommand& cmd, BarrierRoute& route, uint64_t step,
                                    int64_t compute_left_ns, const barrier_timing::EndInterval* end) {
  if (route.relay) {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch()).count();
    relay_hub.Arrive(cmd.job_id, cmd.phase_id, opt.name, step, compute_left_ns, now);
    return session->session_alive();
  }
  if (route.client) {
    if (!route.client->Send(step, compute_left_ns)) {
      spdlog::warn("agent '{}': its relay {} ({}) is gone at step {} of job {} phase {}; waiting for the coordinator",
                   opt.name, cmd.barrier_relay, cmd.barrier_relay_endpoint, step, cmd.job_id, cmd.phase_id);
    }
    return session->session_alive();
  }
  // Only the coordinator places an end by its interval (a relay aggregates receipts): through a relay, `end` stays.
  return session->Announce(cmd, step, compute_left_ns,
                           end ? std::optional<barrier_timing::EndInterval>(*end) : std::nullopt);
}

AgentSession::Identity AgentServer::Impl::MakeIdentity(const std::string& instance) const {
  AgentSession::Identity id;
  id.name = opt.name;
  id.node_name = opt.node_name;
  id.instance = instance;
  id.accelerators = opt.accelerators;
  id.protocol_version = opt.protocol_version;
  if (exposer) {
    const auto ports = exposer->GetListeningPorts();
    if (!ports.empty()) id.metrics_endpoint = AdvertisedMetricsEndpoint(opt.metrics_listen, ports.front());
  }
  if (relay_server) {
    id.relay_endpoint = AdvertisedMetricsEndpoint(opt.relay_listen, relay_server->port());
    if (opt.relay_tls.on()) id.relay_tls_name = opt.relay_tls.name;
  }
  id.host_cpu_count = static_cast<uint32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  id.provenance = CollectHostProvenance(opt.data_root);
  id.data_root_mount = ProbeMount(opt.data_root);
  // The DRAM this host node has: declared, else a container's cgroup limit, else MemTotal (MLPerf's datasize and the
  // potential-caching check use it).
  struct sysinfo si {};
  const uint64_t total =
      sysinfo(&si) == 0 ? static_cast<uint64_t>(si.totalram) * si.mem_unit : id.provenance.memory_bytes;
  if (opt.host_memory_bytes > 0) {
    id.host_memory_bytes = opt.host_memory_bytes;
    id.host_memory_source = "--host-memory";
  } else if (id.provenance.cgroup_memory_limit_bytes > 0) {
    id.host_memory_bytes = id.provenance.cgroup_memory_limit_bytes;
    id.host_memory_source = "cgroup";
  } else {
    id.host_memory_bytes = total;
    id.host_memory_source = "meminfo";
  }
  return id;
}

std::string AgentServer::Impl::ConnectFailure(grpc::Channel& channel, v1::Coordinator::Stub& stub) const {
  if (channel.GetState(false) != GRPC_CHANNEL_TRANSIENT_FAILURE) return "the connection did not complete within 2 s";
  grpc::ClientContext probe;
  // 1 s: a call on a failed channel fails at once; the bound is for one that connects meanwhile.
  probe.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  AddToken(&probe, opt.transport);
  v1::ListJobsRequest req;
  req.set_page_size(1);  // the answer does not matter, only how the call fails
  v1::ListJobsResponse resp;
  const grpc::Status st = stub.ListJobs(&probe, req, &resp);
  return st.ok() ? "the connection did not complete within 2 s" : ConnectCause(st.error_message(), opt.transport,
                                                                                opt.coordinator);
}

absl::Status AgentServer::Impl::GiveUp() const {
  const double window_s = std::chrono::duration<double>(opt.reconnect_window).count();
  return absl::UnavailableError(absl::StrCat(
      "gave up on the coordinator at ", opt.coordinator, ": ",
      lost_cause.empty() ? "" : absl::StrCat("the connection was lost (", lost_cause, "), then "),
      "unreachable for ", window_s, " s (--reconnect-window): ",
      unreachable_cause.empty() ? "not retried" : unreachable_cause));
}

SessionEnd AgentServer::Impl::Session() {
  auto channel = grpc::CreateCustomChannel(opt.coordinator, ChannelCredentials(opt.transport),
                                          SessionChannelArgs(opt.transport));
  auto stub = v1::Coordinator::NewStub(channel);
  // 2 s to establish a connection: long enough for a loaded machine, short enough for a responsive backoff loop.
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(2))) {
    if (shutdown) return SessionEnd::kShutdown;
    unreachable_cause = ConnectFailure(*channel, *stub);
    return SessionEnd::kUnreachable;
  }
  if (shutdown) return SessionEnd::kShutdown;
  grpc::ClientContext context;
  AddToken(&context, opt.transport);
  std::unique_ptr<Stream> s = stub->Attach(&context);
  auto stream_link = std::make_shared<StreamLink>(s.get());
  {
    MutexLock lk(&mu);
    ctx = &context;
    link = stream_link;
  }
  auto detach = [&] {
    MutexLock lk(&mu);
    stream_link->Close();
    link.reset();
    ctx = nullptr;
  };
  v1::CoordinatorMessage in;
  if (!stream_link->Send(session->Hello()) || !s->Read(&in)) {
    detach();
    grpc::Status st = s->Finish();
    if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        st.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
        st.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      refusal = absl::FailedPreconditionError(st.error_message());
      return SessionEnd::kRefused;
    }
    unreachable_cause = ConnectCause(st.ok() ? "the coordinator closed the stream before its Welcome"
                                             : st.error_message(), opt.transport, opt.coordinator);
    return SessionEnd::kUnreachable;
  }
  absl::StatusOr<AgentSession::Timing> timing = session->Welcome(in);
  if (!timing.ok()) {
    refusal = timing.status();
    context.TryCancel();
    detach();
    s->Finish();
    return SessionEnd::kRefused;
  }
  spdlog::info("agent '{}' attached to {} ({} accelerators)", opt.name, opt.coordinator, opt.accelerators);
  unreachable_cause.clear();
  lost_cause.clear();
  const SessionEnd end = Serve(context, *s, stream_link, *timing);
  detach();
  const grpc::Status fin = s->Finish();
  if (end == SessionEnd::kLost && lost_cause.empty()) {
    lost_cause = fin.ok() ? "the coordinator ended the session"
                          : absl::StrReplaceAll(fin.error_message(), {{"\n", " "}, {"\r", " "}});
  }
  return end;
}

SessionEnd AgentServer::Impl::Serve(grpc::ClientContext& context, Stream& stream,
                                    std::shared_ptr<StreamLink> stream_link, const AgentSession::Timing& timing) {
  session->Begin(std::move(stream_link), std::chrono::steady_clock::now(), timing);
  bool ended = false;  // guarded by mu: the read loop is over
  // Heartbeats and progress, from their own thread so a long phase never starves them.
  std::thread heart([&] {
    MutexLock lk(&mu);
    for (int beat = 0; !ended && !shutdown; ++beat) {
      cv.WaitFor(&lk, timing.Before(beat));
      if (ended || shutdown) break;
      AgentSession::Clock::duration silent{};
      if (session->LeaseExpired(std::chrono::steady_clock::now(), timing, &silent)) {
        lost_cause = absl::StrFormat("the coordinator was silent for %.1f s, longer than its lease of %.1f s",
                                     std::chrono::duration<double>(silent).count(), timing.lease.count() / 1000.0);
        spdlog::warn("agent '{}': {} ({}); reconnecting", opt.name, lost_cause, opt.coordinator);
        context.TryCancel();
        break;
      }
      lk.Unlock();
      session->SendHeartbeat(AgentSession::Timing::Probe(beat));
      lk.Lock();
    }
    if (shutdown) {
      // Shutdown() closed our half of the stream; the coordinator then ends the session. 1 s bounds the wait for
      // a coordinator that does not answer.
      cv.WaitFor(&lk, std::chrono::seconds(1), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return ended; });
      if (!ended) context.TryCancel();
    }
  });
  v1::CoordinatorMessage in;
  while (stream.Read(&in)) session->OnMessage(in, std::chrono::steady_clock::now());
  session->End();
  {
    MutexLock lk(&mu);
    ended = true;
    cv.notify_all();
  }
  heart.join();
  JoinPhase();
  return shutdown ? SessionEnd::kShutdown : SessionEnd::kLost;
}

AgentServer::AgentServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentServer::~AgentServer() { Shutdown(); }

absl::StatusOr<std::unique_ptr<AgentServer>> AgentServer::Start(Options options) {
  if (options.coordinator.empty()) return absl::InvalidArgumentError("--coordinator: HOST:PORT is required");
  if (options.accelerators < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--accelerators: must be >= 1, got ", options.accelerators));
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(options.data_root, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("--data-root: '", options.data_root, "' is not a directory"));
  }
  auto impl = std::make_unique<Impl>();
  impl->opt = std::move(options);
  std::random_device rd;
  const std::string instance = absl::StrFormat("%08x%08x", rd(), rd());
  impl->metrics = std::make_shared<AgentMetrics>(impl->opt.name);
  HostSampler::Options so;
  so.agent = impl->opt.name;
  so.data_root = impl->opt.data_root;
  so.link_speeds_mbps = impl->opt.link_speeds_mbps;
  impl->sampler = std::make_shared<HostSampler>(std::move(so));
  if (!impl->opt.metrics_listen.empty()) {
    try {
      impl->exposer = std::make_unique<prometheus::Exposer>(impl->opt.metrics_listen);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics-listen: cannot listen on '", impl->opt.metrics_listen, "': ", e.what()));
    }
    impl->exposer->RegisterCollectable(impl->metrics);
    impl->exposer->RegisterCollectable(impl->sampler);
  }
  if (!impl->opt.relay_listen.empty() && !OffersRelayListener(impl->opt.transport, impl->opt.relay_tls)) {
    // Under TLS the relay hop needs a certificate of its own (agent/relay_credentials.h): without one the agent
    // offers no listener, so its jobs keep the flat star rather than talk plain text or fail their handshakes.
    spdlog::info("agent '{}': no barrier relay listener under TLS without --relay-tls-cert (jobs over this agent "
                 "keep the flat star)", impl->opt.name);
  } else if (!impl->opt.relay_listen.empty()) {
    absl::StatusOr<std::unique_ptr<RelayServer>> relay = RelayServer::Start(
        impl->opt.relay_listen, RelayServerTransport(impl->opt.transport, impl->opt.relay_tls), &impl->relay_hub);
    if (!relay.ok()) return relay.status();
    impl->relay_server = std::move(*relay);
    if (impl->opt.relay_tls.on()) {
      spdlog::info("agent '{}': barrier relay listener on port {} serves TLS as '{}'", impl->opt.name,
                   impl->relay_server->port(), impl->opt.relay_tls.name);
    }
  }
  impl->session = std::make_unique<AgentSession>(impl->MakeIdentity(instance), impl.get(), impl->metrics.get());
  impl->session->set_relay_hook([hub = &impl->relay_hub](const std::string& job, const std::string& phase,
                                                         uint64_t step, const barrier_timing::Release& up,
                                                         int64_t received_ns) {
    return hub->Released(job, phase, step, up, received_ns, received_ns);
  });
  // Read once at start: a bad file fails the agent at once, naming the file and line (never a value).
  absl::StatusOr<S3AgentDefaults> s3 = LoadS3Defaults(impl->opt.s3_credentials_file, impl->opt.s3_allow_endpoints);
  if (!s3.ok()) return s3.status();
  impl->s3_defaults = std::move(*s3);
  return std::unique_ptr<AgentServer>(new AgentServer(std::move(impl)));
}

absl::Status AgentServer::Run() {
  Impl& im = *impl_;
  auto deadline = std::chrono::steady_clock::now() + im.opt.reconnect_window;
  auto backoff = std::chrono::milliseconds(200);
  std::string logged;  // the last connection failure logged: each new cause once, at once, not after the window
  while (!im.shutdown) {
    const SessionEnd end = im.Session();
    if (end == SessionEnd::kShutdown || im.shutdown) return absl::OkStatus();
    if (end == SessionEnd::kRefused) return im.refusal;
    if (end == SessionEnd::kUnreachable && im.unreachable_cause != logged) {
      logged = im.unreachable_cause;
      spdlog::warn("agent '{}': cannot reach the coordinator {}: {}; retrying", im.opt.name, im.opt.coordinator,
                   logged);
    }
    if (end == SessionEnd::kLost) {
      spdlog::warn("agent '{}': lost the coordinator {} ({}); reconnecting for up to {} s", im.opt.name,
                   im.opt.coordinator, im.lost_cause, im.opt.reconnect_window.count() / 1000.0);
      deadline = std::chrono::steady_clock::now() + im.opt.reconnect_window;
      backoff = std::chrono::milliseconds(200);
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return im.GiveUp();
    {
      MutexLock lk(&im.mu);
      im.cv.WaitFor(&lk, std::min<std::chrono::steady_clock::duration>(backoff, deadline - now),
                    [&] { return im.shutdown.load(); });
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  return absl::OkStatus();
}

void AgentServer::Shutdown() {
  if (!impl_) return;
  Impl& im = *impl_;
  im.shutdown = true;
  MutexLock lk(&im.mu);
  if (im.ctx != nullptr && im.session->session_alive()) {
    // Say why before leaving, so a running job fails naming the cause rather than "connection broke"; then close
    // our half of the stream and let the coordinator end the session (the heart thread cancels it after 1 s).
    im.session->SendShutdownNotice();
    im.link->WritesDone();
  } else if (im.ctx != nullptr) {
    im.ctx->TryCancel();
  }
  im.cv.notify_all();
}

int AgentServer::metrics_port() const {
  if (!impl_->exposer) return 0;
  const auto ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace dlio
