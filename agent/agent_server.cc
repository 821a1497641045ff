#include "agent/agent_server.h"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/metrics.h"
#include "agent/phase_runner.h"
#include "agent/preflight.h"
#include "agent/step_barrier.h"
#include "common/mlperf.h"
#include "common/text.h"
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

}  // namespace

struct AgentServer::Impl {
  Options opt;
  std::string instance;                    // random id of this process, sent in Hello (reconnects replace)
  std::shared_ptr<AgentMetrics> metrics;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::atomic<bool> shutdown{false};
  absl::Status refusal;

  // Per session (guarded by mu): the stream, and the phase running on it.
  std::mutex mu;
  std::condition_variable cv;
  std::condition_variable heart_cv;        // wakes the heartbeat thread (only at shutdown)
  grpc::ClientContext* ctx = nullptr;     // current session's context, for Shutdown()
  Stream* stream = nullptr;
  std::mutex write_mu;                     // one writer at a time on the stream (gRPC requirement)
  bool writes_done = false;                // guarded by write_mu: Shutdown() closed our half of the stream
  bool session_alive = false;
  // Steady-clock time (ns since epoch) of the last message from the coordinator, for the lease.
  std::atomic<int64_t> last_heard_ns{0};
  std::string running_job, running_phase;  // empty when idle
  std::thread phase_thread;
  std::atomic<bool> phase_cancel{false};
  ReleaseBoard releases;                   // the running phase's barrier releases (guarded by mu)
  // The last finished phase and its answer, re-sent when the coordinator repeats the RunPhase.
  std::string done_job, done_phase;
  v1::AgentMessage done_msg;
  std::unique_ptr<PhaseRunner> runner;
  // The last workload text parsed and its spec: every phase of a job carries the same text, and yaml-cpp takes
  // ~0.6 ms to parse it, time the agent would otherwise spend between two epochs.
  std::string parsed_yaml;
  WorkloadSpec parsed_spec;

  bool Write(const v1::AgentMessage& m) {
    std::lock_guard<std::mutex> lk(write_mu);
    return stream != nullptr && !writes_done && stream->Write(m);
  }
  // A phase's answer; a PhaseDone larger than one message may carry goes in parts (convert.h SplitPhaseDone).
  bool WriteAnswer(const v1::AgentMessage& m) {
    if (!m.has_phase_done()) return Write(m);
    for (v1::PhaseDone& part : SplitPhaseDone(m.phase_done())) {
      v1::AgentMessage pm;
      *pm.mutable_phase_done() = std::move(part);
      if (!Write(pm)) return false;
    }
    return true;
  }
  static int64_t NowNs() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

  absl::Status WaitRelease(uint64_t step) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return !session_alive || phase_cancel || releases.Released(step); });
    if (releases.Released(step)) return absl::OkStatus();
    return absl::CancelledError(absl::StrCat("barrier at step ", step, " abandoned: ",
                                             session_alive ? "phase cancelled" : "connection to coordinator lost"));
  }

  void StartPhase(const v1::RunPhase& rp);
  // Before generating: the data folder inside the data root and the dataset within the free space. An empty
  // result vector on success (the phase then runs).
  absl::StatusOr<std::vector<RankEpochResult>> Preflight(const PhaseCommand& cmd) const;
  SessionEnd Session();
};

absl::StatusOr<std::vector<RankEpochResult>> AgentServer::Impl::Preflight(const PhaseCommand& cmd) const {
  if (cmd.kind != PhaseKind::kGenerate) return std::vector<RankEpochResult>();
  const std::string ranks = cmd.local_ranks == 1 ? absl::StrCat("rank ", cmd.first_rank)
                                                  : absl::StrCat("ranks ", cmd.first_rank, "-",
                                                                 cmd.first_rank + cmd.local_ranks - 1);
  const std::string where = absl::StrCat("agent '", opt.name, "' (", ranks, ") job ", cmd.job_id, " phase ",
                                         cmd.phase_id);
  // The folder below the root, no link on the way (common/confined_dir.h); nothing is created before the check.
  const auto& root = runner->root();
  if (!root.ok()) return absl::Status(root.status().code(), absl::StrCat(where, ": ", root.status().message()));
  absl::StatusOr<std::string> rel = (*root)->Relative(cmd.spec.data_folder, "dataset.data_folder");
  absl::Status checked = rel.ok() ? (*root)->NearestExisting(cmd.spec.data_folder, "dataset.data_folder").status()
                                  : rel.status();
  if (!checked.ok()) return absl::Status(checked.code(), absl::StrCat(where, ": ", checked.message()));
  const std::filesystem::path dir = std::filesystem::path((*root)->path()) / *rel;
  absl::StatusOr<std::unique_ptr<Format>> format = MakeFormat(cmd.spec.format, FormatOptions{});
  const std::string ext = format.ok() ? (*format)->extension() : cmd.spec.format;
  if (absl::Status s = CheckDatasetFits(dir, cmd.spec, ext); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
  }
  return std::vector<RankEpochResult>();
}

void AgentServer::Impl::StartPhase(const v1::RunPhase& rp) {
  // Called with mu held.
  if (running_job == rp.job_id() && running_phase == rp.phase_id()) return;  // repeat of a running phase
  if (done_job == rp.job_id() && done_phase == rp.phase_id()) {               // repeat of a finished phase
    WriteAnswer(done_msg);
    return;
  }
  auto error = [&](const std::string& code, const std::string& message) {
    v1::AgentMessage m;
    v1::Error* e = m.mutable_error();
    e->set_code(code);
    e->set_message(message);
    e->set_job_id(rp.job_id());
    e->set_phase_id(rp.phase_id());
    e->set_agent(opt.name);
    e->set_rank(-1);
    Write(m);
  };
  if (!running_phase.empty()) {
    return error("BUSY", absl::StrCat("agent '", opt.name, "' is still running job ", running_job, " phase ",
                                      running_phase, "; refused job ", rp.job_id(), " phase ", rp.phase_id()));
  }
  if (parsed_yaml.empty() || rp.workload_yaml() != parsed_yaml) {
    absl::StatusOr<WorkloadSpec> spec = LoadWorkload(rp.workload_yaml(), {}, "job " + rp.job_id());
    if (!spec.ok()) {
      return error("BAD_WORKLOAD", absl::StrCat("agent '", opt.name, "' job ", rp.job_id(), " phase ",
                                                rp.phase_id(), ": ", spec.status().message()));
    }
    parsed_spec = std::move(*spec);
    parsed_yaml = rp.workload_yaml();
  }
  // The order must fit this agent: the ranks it offered, inside the job's world, a thread count it can run.
  const uint64_t first = rp.first_rank(), local = rp.local_ranks(), world = rp.world_size();
  if (local < 1 || local > static_cast<uint64_t>(opt.accelerators) || first + local > world) {
    return error("BAD_ORDER", absl::StrCat("agent '", opt.name, "' job ", rp.job_id(), " phase ", rp.phase_id(),
                                           ": ranks ", first, "-", first + local - 1, " of ", world,
                                           " do not fit this agent's ", opt.accelerators, " accelerator(s)"));
  }
  if (absl::Status s = CheckAgentThreads(parsed_spec, static_cast<int64_t>(local)); !s.ok()) {
    return error("BAD_WORKLOAD", absl::StrCat("agent '", opt.name, "' job ", rp.job_id(), " phase ", rp.phase_id(),
                                              ": ", s.message()));
  }
  if (phase_thread.joinable()) phase_thread.join();
  PhaseCommand cmd;
  cmd.job_id = rp.job_id();
  cmd.phase_id = rp.phase_id();
  cmd.kind = rp.kind() == v1::PHASE_KIND_GENERATE ? PhaseKind::kGenerate
             : rp.kind() == v1::PHASE_KIND_EVAL   ? PhaseKind::kEval
             : rp.kind() == v1::PHASE_KIND_CHECKPOINT ? PhaseKind::kCheckpoint
                                                  : PhaseKind::kTrainEpoch;
  cmd.spec = parsed_spec;
  cmd.world = static_cast<int>(rp.world_size());
  cmd.first_rank = static_cast<int>(rp.first_rank());
  cmd.local_ranks = static_cast<int>(rp.local_ranks());
  cmd.epoch = static_cast<int>(rp.epoch());
  cmd.checkpoint_load = rp.checkpoint_load();
  cmd.checkpoint_index = static_cast<int>(rp.checkpoint_index());
  cmd.checkpoint_step = static_cast<int64_t>(rp.checkpoint_step());
  // The job's S3 secret (if its storage_options had one) travels beside the workload, never inside it.
  cmd.spec.s3_secret_access_key = rp.s3_secret_access_key();
  running_job = cmd.job_id;
  running_phase = cmd.phase_id;
  releases.Start(cmd.job_id, cmd.phase_id);
  phase_cancel = false;
  spdlog::info("agent '{}': job {} phase {} (ranks {}..{} of {})", opt.name, cmd.job_id, cmd.phase_id,
               cmd.first_rank, cmd.first_rank + cmd.local_ranks - 1, cmd.world);
  phase_thread = std::thread([this, cmd = std::move(cmd)] {
    auto barrier = [&](uint64_t step) -> absl::Status {
      v1::AgentMessage m;
      v1::BarrierArrive* a = m.mutable_barrier_arrive();
      a->set_job_id(cmd.job_id);
      a->set_phase_id(cmd.phase_id);
      a->set_step(step);
      if (!Write(m)) return absl::UnavailableError("connection to coordinator lost");
      return WaitRelease(step);
    };
    absl::StatusOr<std::vector<RankEpochResult>> r = Preflight(cmd);
    if (r.ok()) r = runner->Run(cmd, barrier, &phase_cancel);
    v1::AgentMessage m;
    if (r.ok()) {
      v1::PhaseDone* d = m.mutable_phase_done();
      d->set_job_id(cmd.job_id);
      d->set_phase_id(cmd.phase_id);
      for (const RankEpochResult& rr : *r) ToProto(rr, d->add_ranks());
    } else {
      v1::Error* e = m.mutable_error();
      e->set_code(r.status().code() == absl::StatusCode::kCancelled ? "CANCELLED" : "PHASE_FAILED");
      e->set_message(std::string(r.status().message()));
      e->set_job_id(cmd.job_id);
      e->set_phase_id(cmd.phase_id);
      e->set_agent(opt.name);
      e->set_rank(-1);
      if (r.status().code() == absl::StatusCode::kCancelled && phase_cancel) {
        // A stop we were asked for (or a lost session): expected, not an error of this agent.
        spdlog::info("agent '{}': job {} phase {} stopped: {}", opt.name, cmd.job_id, cmd.phase_id,
                     std::string(r.status().message()));
      } else {
        spdlog::error("{}", std::string(r.status().message()));
      }
    }
    {
      std::lock_guard<std::mutex> lk(mu);
      running_job.clear();
      running_phase.clear();
      if (r.ok()) {
        done_job = cmd.job_id;
        done_phase = cmd.phase_id;
        done_msg = m;
      }
    }
    WriteAnswer(m);
  });
}

SessionEnd AgentServer::Impl::Session() {
  auto channel = grpc::CreateCustomChannel(opt.coordinator, ChannelCredentials(opt.transport),
                                          ChannelArgs(opt.transport));
  // 2 s to establish a connection: long enough for a loaded machine, short enough for a responsive backoff loop.
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(2))) {
    return shutdown ? SessionEnd::kShutdown : SessionEnd::kUnreachable;
  }
  if (shutdown) return SessionEnd::kShutdown;
  auto stub = v1::Coordinator::NewStub(channel);
  grpc::ClientContext context;
  AddToken(&context, opt.transport);
  std::unique_ptr<Stream> s = stub->Attach(&context);
  {
    std::lock_guard<std::mutex> lk(mu);
    ctx = &context;
    std::lock_guard<std::mutex> wl(write_mu);
    stream = s.get();
    writes_done = false;
  }
  auto detach = [&] {
    std::lock_guard<std::mutex> lk(mu);
    std::lock_guard<std::mutex> wl(write_mu);
    stream = nullptr;
    ctx = nullptr;
  };

  v1::AgentMessage hello_msg;
  v1::Hello* hello = hello_msg.mutable_hello();
  hello->set_protocol_version(opt.protocol_version != 0 ? opt.protocol_version : kProtocolVersion);
  hello->set_name(opt.name);
  hello->set_hostname(opt.node_name);
  hello->set_instance(instance);
  hello->set_accelerators(static_cast<uint32_t>(opt.accelerators));
  if (exposer) {
    const auto ports = exposer->GetListeningPorts();
    if (!ports.empty()) hello->set_metrics_endpoint(AdvertisedMetricsEndpoint(opt.metrics_listen, ports.front()));
  }
  hello->set_host_cpu_count(static_cast<uint32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))));
  const HostProvenance prov = CollectHostProvenance(opt.data_root);
  // The DRAM this host node has: declared, else a container's cgroup limit, else MemTotal (MLPerf's datasize and the
  // potential-caching check use it).
  struct sysinfo si {};
  const uint64_t total = sysinfo(&si) == 0 ? static_cast<uint64_t>(si.totalram) * si.mem_unit : prov.memory_bytes;
  if (opt.host_memory_bytes > 0) {
    hello->set_host_memory_bytes(opt.host_memory_bytes);
    hello->set_host_memory_source("--host-memory");
  } else if (prov.cgroup_memory_limit_bytes > 0) {
    hello->set_host_memory_bytes(prov.cgroup_memory_limit_bytes);
    hello->set_host_memory_source("cgroup");
  } else {
    hello->set_host_memory_bytes(total);
    hello->set_host_memory_source("meminfo");
  }
  for (const NicInfo& n : prov.nics) {
    v1::NicInfo* nic = hello->add_nics();
    nic->set_name(n.name);
    nic->set_speed_mbps(n.speed_mbps);
    nic->set_mtu(n.mtu);
    nic->set_state(n.state);
  }
  hello->set_kernel(prov.kernel);
  hello->set_cpu_model(prov.cpu_model);
  hello->set_data_root_fs(prov.data_root_fs);
  hello->mutable_cpuinfo()->insert(prov.cpuinfo.begin(), prov.cpuinfo.end());
  hello->mutable_meminfo()->insert(prov.meminfo.begin(), prov.meminfo.end());
  hello->set_processor_name(prov.cpu_model == "unknown" ? "" : prov.cpu_model);

  v1::CoordinatorMessage in;
  if (!Write(hello_msg) || !s->Read(&in)) {
    detach();
    grpc::Status st = s->Finish();
    if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        st.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
        st.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      refusal = absl::FailedPreconditionError(st.error_message());
      return SessionEnd::kRefused;
    }
    return SessionEnd::kUnreachable;
  }
  if (in.has_error() || !in.has_welcome()) {
    refusal = absl::FailedPreconditionError(in.has_error() ? in.error().message() : "coordinator sent no Welcome");
    context.TryCancel();
    detach();
    s->Finish();
    return SessionEnd::kRefused;
  }
  // At least 50 ms between heartbeats whatever the coordinator asks; a missing lease (0) means 8 intervals.
  const auto heartbeat_every = std::chrono::milliseconds(std::max<uint32_t>(50, in.welcome().heartbeat_interval_ms()));
  const auto lease = in.welcome().lease_ms() > 0 ? std::chrono::milliseconds(in.welcome().lease_ms())
                                                 : 8 * heartbeat_every;
  last_heard_ns = NowNs();
  spdlog::info("agent '{}' attached to {} ({} accelerators)", opt.name, opt.coordinator, opt.accelerators);
  {
    std::lock_guard<std::mutex> lk(mu);
    session_alive = true;
  }

  // Heartbeats and progress, from their own thread so a long phase never starves them.
  std::thread heart([&] {
    std::unique_lock<std::mutex> lk(mu);
    while (session_alive && !shutdown) {
      heart_cv.wait_for(lk, heartbeat_every);
      if (!session_alive || shutdown) break;
      const auto silent = std::chrono::nanoseconds(NowNs() - last_heard_ns.load());
      if (silent > lease) {
        spdlog::warn("agent '{}': the coordinator {} has been silent for {:.1f} s (lease {:.1f} s); reconnecting",
                     opt.name, opt.coordinator, std::chrono::duration<double>(silent).count(), lease.count() / 1000.0);
        context.TryCancel();
        break;
      }
      const std::string job = running_job, phase = running_phase;
      lk.unlock();
      v1::AgentMessage hb;
      hb.mutable_heartbeat()->set_agent_time_ns(std::chrono::steady_clock::now().time_since_epoch().count());
      Write(hb);
      if (!phase.empty()) {
        v1::AgentMessage pm;
        v1::Progress* p = pm.mutable_progress();
        p->set_job_id(job);
        p->set_phase_id(phase);
        p->set_done(runner->progress().done);
        p->set_total(runner->progress().total);
        p->set_samples(runner->progress().samples);
        p->set_bytes(runner->progress().bytes);
        p->set_compute_ns(runner->progress().compute_ns);
        p->set_wall_ns(runner->progress().wall_ns);
        Write(pm);
      }
      lk.lock();
    }
    if (shutdown) {
      // Shutdown() closed our half of the stream; the coordinator then ends the session. 1 s bounds the wait for
      // a coordinator that does not answer.
      heart_cv.wait_for(lk, std::chrono::seconds(1), [&] { return !session_alive; });
      if (session_alive) context.TryCancel();
    }
  });

  while (s->Read(&in)) {
    last_heard_ns = NowNs();
    std::lock_guard<std::mutex> lk(mu);
    switch (in.msg_case()) {
      case v1::CoordinatorMessage::kRunPhase:
        StartPhase(in.run_phase());
        break;
      case v1::CoordinatorMessage::kBarrierRelease: {
        const v1::BarrierRelease& r = in.barrier_release();
        if (releases.Release(r.job_id(), r.phase_id(), r.step())) {
          cv.notify_all();
        } else {  // a late release of an earlier phase or job: dropped, and counted
          metrics->CountStaleRelease();
          spdlog::debug("agent '{}': dropped a stale barrier release (job {} phase {} step {})", opt.name,
                        EscapeText(r.job_id()), EscapeText(r.phase_id()), r.step());
        }
        break;
      }
      case v1::CoordinatorMessage::kCancel:
        spdlog::info("agent '{}': job {} cancelled: {}", opt.name, in.cancel().job_id(), in.cancel().reason());
        if (running_job == in.cancel().job_id()) phase_cancel = true;
        cv.notify_all();
        break;
      case v1::CoordinatorMessage::kError:
        spdlog::error("coordinator: {}", in.error().message());
        break;
      case v1::CoordinatorMessage::kHeartbeat:  // the echo: only renews last_heard_ns
        break;
      default:
        break;
    }
  }
  {
    std::lock_guard<std::mutex> lk(mu);
    session_alive = false;
    phase_cancel = true;
    cv.notify_all();
    heart_cv.notify_all();
  }
  heart.join();
  if (phase_thread.joinable()) phase_thread.join();
  detach();
  s->Finish();
  {
    std::lock_guard<std::mutex> lk(mu);
    running_job.clear();
    running_phase.clear();
  }
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
  impl->instance = absl::StrFormat("%08x%08x", rd(), rd());
  impl->metrics = std::make_shared<AgentMetrics>(impl->opt.name);
  if (!impl->opt.metrics_listen.empty()) {
    try {
      impl->exposer = std::make_unique<prometheus::Exposer>(impl->opt.metrics_listen);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics-listen: cannot listen on '", impl->opt.metrics_listen, "': ", e.what()));
    }
    impl->exposer->RegisterCollectable(impl->metrics);
  }
  impl->runner = std::make_unique<PhaseRunner>(impl->opt.data_root, impl->opt.name, impl->metrics.get());
  // Read once at start: a bad file fails the agent at once, naming the file and line (never a value).
  absl::StatusOr<S3AgentDefaults> s3 = LoadS3Defaults(impl->opt.s3_credentials_file);
  if (!s3.ok()) return s3.status();
  impl->runner->set_s3_defaults(std::move(*s3));
  return std::unique_ptr<AgentServer>(new AgentServer(std::move(impl)));
}

absl::Status AgentServer::Run() {
  Impl& im = *impl_;
  auto deadline = std::chrono::steady_clock::now() + im.opt.reconnect_window;
  auto backoff = std::chrono::milliseconds(200);
  while (!im.shutdown) {
    const SessionEnd end = im.Session();
    if (end == SessionEnd::kShutdown || im.shutdown) return absl::OkStatus();
    if (end == SessionEnd::kRefused) return im.refusal;
    if (end == SessionEnd::kLost) {
      spdlog::warn("agent '{}': lost the coordinator {}; reconnecting for up to {} s", im.opt.name,
                   im.opt.coordinator, im.opt.reconnect_window.count() / 1000.0);
      deadline = std::chrono::steady_clock::now() + im.opt.reconnect_window;
      backoff = std::chrono::milliseconds(200);
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      spdlog::warn("agent '{}': coordinator {} unreachable for {} s; exiting", im.opt.name, im.opt.coordinator,
                   im.opt.reconnect_window.count() / 1000.0);
      return absl::OkStatus();
    }
    {
      std::unique_lock<std::mutex> lk(im.mu);
      im.cv.wait_for(lk, std::min<std::chrono::steady_clock::duration>(backoff, deadline - now),
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
  std::lock_guard<std::mutex> lk(im.mu);
  if (im.ctx != nullptr && im.session_alive) {
    // Say why before leaving, so a running job fails naming the cause rather than "connection broke"; then close
    // our half of the stream and let the coordinator end the session (the heart thread cancels it after 1 s).
    if (!im.running_phase.empty()) {
      v1::AgentMessage m;
      v1::Error* e = m.mutable_error();
      e->set_code("SHUTDOWN");
      e->set_message(absl::StrCat("agent '", im.opt.name, "' was told to shut down (signal) during job ",
                                  im.running_job, " phase ", im.running_phase));
      e->set_job_id(im.running_job);
      e->set_phase_id(im.running_phase);
      e->set_agent(im.opt.name);
      e->set_rank(-1);
      im.Write(m);
    }
    std::lock_guard<std::mutex> wl(im.write_mu);
    if (im.stream != nullptr && !im.writes_done) {
      im.stream->WritesDone();
      im.writes_done = true;
    }
  } else if (im.ctx != nullptr) {
    im.ctx->TryCancel();
  }
  im.cv.notify_all();
  im.heart_cv.notify_all();
}

int AgentServer::metrics_port() const {
  if (!impl_->exposer) return 0;
  const auto ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace dlio
