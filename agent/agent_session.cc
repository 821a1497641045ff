#include "agent/agent_session.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/text.h"
#include "dlio/v1/convert.h"
#include "spdlog/spdlog.h"

namespace dlio {

namespace {

int64_t Ns(AgentSession::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const WorkloadSpec>> WorkloadCache::Get(const std::string& yaml,
                                                                       const std::string& job_id) {
  MutexLock lk(&mu_);
  if (spec_ != nullptr && yaml == yaml_) return spec_;
  absl::StatusOr<WorkloadSpec> spec = LoadWorkload(yaml, {}, "job " + job_id);
  if (!spec.ok()) return spec.status();
  spec_ = std::make_shared<const WorkloadSpec>(std::move(*spec));
  yaml_ = yaml;
  return spec_;
}

AgentSession::AgentSession(Identity id, PhaseHost* host, AgentMetrics* metrics,
                           std::shared_ptr<WorkloadCache> workloads)
    : id_(std::move(id)),
      host_(host),
      metrics_(metrics),
      workloads_(workloads ? std::move(workloads) : std::make_shared<WorkloadCache>()) {}

v1::AgentMessage AgentSession::Hello() const {
  v1::AgentMessage m;
  v1::Hello* hello = m.mutable_hello();
  hello->set_protocol_version(id_.protocol_version != 0 ? id_.protocol_version : kProtocolVersion);
  hello->set_name(id_.name);
  hello->set_hostname(id_.node_name);
  hello->set_instance(id_.instance);
  hello->set_accelerators(static_cast<uint32_t>(id_.accelerators));
  hello->set_metrics_endpoint(id_.metrics_endpoint);
  hello->set_relay_endpoint(id_.relay_endpoint);
  hello->set_relay_tls_name(id_.relay_tls_name);
  hello->set_host_memory_bytes(id_.host_memory_bytes);
  hello->set_host_memory_source(id_.host_memory_source);
  hello->set_host_cpu_count(id_.host_cpu_count);
  const HostProvenance& prov = id_.provenance;
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
  v1::DataRootMount* mount = hello->mutable_data_root_mount();
  mount->set_mount_point(id_.data_root_mount.mount_point);
  mount->set_source(id_.data_root_mount.source);
  mount->set_fs_type(id_.data_root_mount.fs_type);
  mount->set_device(id_.data_root_mount.device);
  mount->set_fsid(id_.data_root_mount.fsid);
  hello->mutable_cpuinfo()->insert(prov.cpuinfo.begin(), prov.cpuinfo.end());
  hello->mutable_meminfo()->insert(prov.meminfo.begin(), prov.meminfo.end());
  hello->set_processor_name(prov.cpu_model == "unknown" ? "" : prov.cpu_model);
  return m;
}

absl::StatusOr<AgentSession::Timing> AgentSession::Welcome(const v1::CoordinatorMessage& first) const {
  if (first.has_error() || !first.has_welcome()) {
    return absl::FailedPreconditionError(first.has_error() ? first.error().message() : "coordinator sent no Welcome");
  }
  Timing t;
  // At least 50 ms between heartbeats whatever the coordinator asks; a missing lease (0) means 8 intervals.
  t.heartbeat = std::chrono::milliseconds(std::max<uint32_t>(50, first.welcome().heartbeat_interval_ms()));
  t.lease = first.welcome().lease_ms() > 0 ? std::chrono::milliseconds(first.welcome().lease_ms()) : 8 * t.heartbeat;
  t.clock = barrier_timing::RelateClocks(first.welcome().clock_domain(), barrier_timing::ClockDomain());
  return t;
}

void AgentSession::Begin(std::shared_ptr<CoordinatorLink> link, Clock::time_point now, const Timing& timing) {
  last_heard_ns_ = Ns(now);
  clock_.Reset(timing.clock);
  MutexLock lk(&mu_);
  link_ = std::move(link);
  session_alive_ = true;
}

bool AgentSession::session_alive() const {
  MutexLock lk(&mu_);
  return session_alive_;
}

bool AgentSession::Send(const v1::AgentMessage& m) {
  std::shared_ptr<CoordinatorLink> link;
  {
    MutexLock lk(&mu_);
    link = link_;
  }
  return link != nullptr && link->Send(m);
}

bool AgentSession::SendAnswer(const v1::AgentMessage& m) {
  if (!m.has_phase_done()) return Send(m);
  for (v1::PhaseDone& part : SplitPhaseDone(m.phase_done())) {
    v1::AgentMessage pm;
    *pm.mutable_phase_done() = std::move(part);
    if (!Send(pm)) return false;
  }
  return true;
}

v1::AgentMessage AgentSession::ErrorMessage(v1::ErrorCode code, const std::string& message,
                                            const std::string& job_id, const std::string& phase_id) const {
  v1::AgentMessage m;
  v1::Error* e = m.mutable_error();
  e->set_code(code);
  e->set_message(message);
  e->set_job_id(job_id);
  e->set_phase_id(phase_id);
  e->set_agent(id_.name);
  e->set_rank(-1);
  return m;
}

void AgentSession::OnMessage(const v1::CoordinatorMessage& in, Clock::time_point now) {
  last_heard_ns_ = Ns(now);
  switch (in.msg_case()) {
    case v1::CoordinatorMessage::kRunPhase:
      StartPhase(in.run_phase());
      break;
    case v1::CoordinatorMessage::kBarrierRelease:
      DeliverRelease(in.barrier_release(), now, /*from_relay=*/false);
      break;
    case v1::CoordinatorMessage::kCancel: {
      spdlog::info("agent '{}': job {} cancelled: {}", id_.name, in.cancel().job_id(), in.cancel().reason());
      bool ours;
      {
        MutexLock lk(&mu_);
        auto it = slots_.find(in.cancel().job_id());
        ours = it != slots_.end() && !it->second.phase.empty();
        if (ours) *it->second.cancel = true;
        cv_.notify_all();
      }
      if (ours) host_->Stop(in.cancel().job_id());
      break;
    }
    case v1::CoordinatorMessage::kError:
      spdlog::error("coordinator: {}", in.error().message());
      break;
    case v1::CoordinatorMessage::kHeartbeat: {  // the echo: an exchange of the clock offset (0: not stamped)
      const v1::Heartbeat& h = in.heartbeat();
      if (h.coordinator_received_ns() != 0) {
        clock_.Exchange(h.agent_time_ns(), h.coordinator_received_ns(), h.coordinator_sent_ns(), Ns(now));
      }
      break;
    }
    default:
      break;
  }
}

std::optional<v1::AgentMessage> AgentSession::BusyRefusal(const v1::RunPhase& rp) const {
  std::vector<std::string> running;
  int used = 0;
  bool exclusive = !rp.share_agent();
  for (const auto& [job, slot] : slots_) {
    if (slot.phase.empty()) continue;
    running.push_back(absl::StrCat("job ", job, " phase ", slot.phase));
    used += slot.local_ranks;
    exclusive = exclusive || !slot.shared || job == rp.job_id();
  }
  if (running.empty()) return std::nullopt;
  const int64_t want = static_cast<int64_t>(rp.local_ranks());
  if (!exclusive && used + want <= id_.accelerators) return std::nullopt;
  const std::string room =
      exclusive ? std::string()
                : absl::StrCat(" on ", used, " of its ", id_.accelerators, " accelerator(s), ", want, " more asked");
  return ErrorMessage(v1::ERROR_CODE_BUSY,
                      absl::StrCat("agent '", id_.name, "' is still running ", absl::StrJoin(running, ", "), room,
                                   "; refused job ", rp.job_id(), " phase ", rp.phase_id()),
                      rp.job_id(), rp.phase_id());
}

std::optional<v1::AgentMessage> AgentSession::CheckOrder(
    const v1::RunPhase& rp, const absl::StatusOr<std::shared_ptr<const WorkloadSpec>>& spec) const {
  const std::string where = absl::StrCat("agent '", id_.name, "' job ", rp.job_id(), " phase ", rp.phase_id());
  // The order must fit this agent: the ranks it offered, inside the job's world, a thread count it can run.
  const uint64_t first = rp.first_rank(), local = rp.local_ranks(), world = rp.world_size();
  absl::Status threads = spec.ok() ? CheckAgentThreads(**spec, static_cast<int64_t>(local)) : absl::OkStatus();
  if (!spec.ok()) {
    return ErrorMessage(v1::ERROR_CODE_BAD_WORKLOAD, absl::StrCat(where, ": ", spec.status().message()), rp.job_id(),
                        rp.phase_id());
  }
  if (local < 1) {  // (first + local - 1 below would wrap)
    return ErrorMessage(v1::ERROR_CODE_BAD_ORDER, absl::StrCat(where, ": the order gives this agent no local ranks"),
                        rp.job_id(), rp.phase_id());
  }
  if (local > static_cast<uint64_t>(id_.accelerators) || first + local > world) {
    return ErrorMessage(v1::ERROR_CODE_BAD_ORDER,
                        absl::StrCat(where, ": ranks ", first, "-", first + local - 1, " of ", world,
                                     " do not fit this agent's ", id_.accelerators, " accelerator(s)"),
                        rp.job_id(), rp.phase_id());
  }
  if (!threads.ok()) {
    return ErrorMessage(v1::ERROR_CODE_BAD_WORKLOAD, absl::StrCat(where, ": ", threads.message()), rp.job_id(),
                        rp.phase_id());
  }
  return std::nullopt;
}

void AgentSession::StartPhase(const v1::RunPhase& rp) {
  std::optional<v1::AgentMessage> reply;
  {
    MutexLock lk(&mu_);
    auto slot = slots_.find(rp.job_id());
    auto answer = answers_.find(rp.job_id());
    if (slot != slots_.end() && slot->second.phase == rp.phase_id()) return;  // repeat of a running phase
    if (answer != answers_.end() && answer->second.phase == rp.phase_id()) {  // repeat of a finished phase
      reply = answer->second.msg;
    } else {
      reply = BusyRefusal(rp);
    }
  }
  if (reply) {
    SendAnswer(*reply);
    return;
  }
  absl::StatusOr<std::shared_ptr<const WorkloadSpec>> spec = workloads_->Get(rp.workload_yaml(), rp.job_id());
  if (std::optional<v1::AgentMessage> refusal = CheckOrder(rp, spec)) {
    Send(*refusal);
    return;
  }
  PhaseCommand cmd{FromProto(rp), **spec};
  // The job's S3 secret (if its storage_options had one) travels beside the workload, never inside it.
  cmd.spec.s3_secret_access_key = cmd.s3_secret_access_key;
  {
    MutexLock lk(&mu_);
    // A finished phase's board is kept only until the next start: a late release of it is then stale all the same.
    for (auto it = slots_.begin(); it != slots_.end();) {
      it = it->second.phase.empty() ? slots_.erase(it) : std::next(it);
    }
    Slot& slot = slots_[cmd.job_id];
    slot.phase = cmd.phase_id;
    slot.local_ranks = cmd.local_ranks;
    slot.shared = rp.share_agent();
    slot.releases.Start(cmd.job_id, cmd.phase_id);
    *slot.cancel = !session_alive_;
    last_job_ = cmd.job_id;
  }
  spdlog::info("agent '{}': job {} phase {} (ranks {}..{} of {})", id_.name, cmd.job_id, cmd.phase_id,
               cmd.first_rank, cmd.first_rank + cmd.local_ranks - 1, cmd.world);
  host_->Start(std::move(cmd));
}

const std::atomic<bool>* AgentSession::cancel_flag(const std::string& job_id) const {
  static const std::atomic<bool> kNoPhase{false};  // idle: nothing to stop
  MutexLock lk(&mu_);
  auto it = slots_.find(job_id);
  return it == slots_.end() ? &kNoPhase : it->second.cancel.get();
}

const std::atomic<bool>* AgentSession::cancel_flag() const {
  std::string job;
  {
    MutexLock lk(&mu_);
    job = last_job_;
  }
  return cancel_flag(job);
}

void AgentSession::DeliverRelease(const v1::BarrierRelease& r, Clock::time_point now, bool from_relay) {
  barrier_timing::Release timing{r.wait_after_compute_end_ns(), r.held_ns(), r.announce_received_ns(), r.slack_ns(),
                                 r.placed_by_offset() ? r.placed_early_ns() : -1};
  // A relay's group release from the coordinator: the relay hands out its members' releases and gives back its own.
  if (!from_relay && relay_hook_) {
    if (std::optional<barrier_timing::Release> own = relay_hook_(r.job_id(), r.phase_id(), r.step(), timing, Ns(now))) {
      timing = *own;
    }
  }
  bool ours;
  {
    MutexLock lk(&mu_);
    // Once the phase has finished (or failed) the board still names it: a late release of it is stale too.
    auto it = slots_.find(r.job_id());
    ours = it != slots_.end() && !it->second.phase.empty() &&
           it->second.releases.Release(r.job_id(), r.phase_id(), r.step(), timing, Ns(now));
    if (ours) cv_.notify_all();
  }
  if (barrier_timing::HopsOn()) barrier_timing::Hop("recv", r.step(), Ns(now), id_.name);
  if (ours) {
    host_->Released(r.job_id(), r.step());
  } else {  // a late release of an earlier phase or job: dropped, and counted
    if (metrics_ != nullptr) metrics_->CountStaleRelease();
    spdlog::debug("agent '{}': dropped a stale barrier release (job {} phase {} step {})", id_.name,
                  EscapeText(r.job_id()), EscapeText(r.phase_id()), r.step());
  }
}

bool AgentSession::SendMemberLost(const PhaseOrder& order, const std::string& member, const std::string& why) {
  v1::AgentMessage m;
  v1::RelayMemberLost* l = m.mutable_relay_member_lost();
  l->set_job_id(order.job_id);
  l->set_phase_id(order.phase_id);
  l->set_member(member);
  l->set_reason(why);
  return Send(m);
}

bool AgentSession::Arrive(const PhaseOrder& order, uint64_t step) {
  v1::AgentMessage m;
  v1::BarrierArrive* a = m.mutable_barrier_arrive();
  a->set_job_id(order.job_id);
  a->set_phase_id(order.phase_id);
  a->set_step(step);
  return Send(m);
}

bool AgentSession::Announce(const PhaseOrder& order, uint64_t step, int64_t compute_left_ns,
                            std::optional<barrier_timing::EndInterval> end) {
  v1::AgentMessage m;
  v1::BarrierArrive* a = m.mutable_barrier_arrive();
  a->set_job_id(order.job_id);
  a->set_phase_id(order.phase_id);
  a->set_step(step);
  a->set_compute_left_ns(compute_left_ns);
  if (end) {
    a->mutable_compute_end()->set_lo_ns(end->lo_ns);
    a->mutable_compute_end()->set_hi_ns(end->hi_ns);
  }
  if (barrier_timing::HopsOn()) barrier_timing::Hop("sending", step, barrier_timing::SteadyNs(), id_.name);
  const bool sent = Send(m);
  if (barrier_timing::HopsOn()) barrier_timing::Hop("sent", step, barrier_timing::SteadyNs(), id_.name);
  return sent;
}

absl::StatusOr<AnnounceBarrier::Received> AgentSession::AwaitRelease(const std::string& job_id, uint64_t step) {
  if (absl::Status s = WaitRelease(job_id, step); !s.ok()) return s;
  MutexLock lk(&mu_);
  auto it = slots_.find(job_id);
  if (it == slots_.end()) {
    return absl::CancelledError(
        absl::StrCat("job ", job_id, ": barrier at step ", step, " abandoned: the job ended on this agent"));
  }
  return it->second.releases.last();
}

absl::Status AgentSession::WaitRelease(const std::string& job_id, uint64_t step) {
  MutexLock lk(&mu_);
  auto released = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = slots_.find(job_id);
    return it != slots_.end() && it->second.releases.Released(step);
  };
  auto cancelled = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = slots_.find(job_id);
    return it == slots_.end() || *it->second.cancel;
  };
  cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !session_alive_ || cancelled() || released(); });
  if (released()) return absl::OkStatus();
  return absl::CancelledError(absl::StrCat("barrier at step ", step, " abandoned: ",
                                           session_alive_ ? "phase cancelled" : "connection to coordinator lost"));
}

absl::Status AgentSession::WaitRelease(uint64_t step) {
  std::string job;
  {
    MutexLock lk(&mu_);
    job = last_job_;
  }
  return WaitRelease(job, step);
}

void AgentSession::Finish(const PhaseOrder& order, absl::StatusOr<std::vector<RankEpochResult>> r, bool refused) {
  v1::AgentMessage m;
  if (r.ok()) {
    v1::PhaseDone* d = m.mutable_phase_done();
    d->set_job_id(order.job_id);
    d->set_phase_id(order.phase_id);
    for (const RankEpochResult& rr : *r) ToProto(rr, d->add_ranks());
  } else {
    const bool cancelled = r.status().code() == absl::StatusCode::kCancelled;
    const v1::ErrorCode code = cancelled  ? v1::ERROR_CODE_CANCELLED
                               : refused ? v1::ERROR_CODE_REFUSED
                                         : v1::ERROR_CODE_PHASE_FAILED;
    m = ErrorMessage(code, std::string(r.status().message()), order.job_id, order.phase_id);
    if (cancelled && *cancel_flag(order.job_id)) {
      // A stop we were asked for (or a lost session): expected, not an error of this agent.
      spdlog::info("agent '{}': job {} phase {} stopped: {}", id_.name, order.job_id, order.phase_id,
                   std::string(r.status().message()));
    } else if (refused) {
      // The job's answer, which the coordinator and the client report once: not an error of this agent.
      spdlog::info("{}", std::string(r.status().message()));
    } else {
      spdlog::error("{}", std::string(r.status().message()));
    }
  }
  {
    MutexLock lk(&mu_);
    auto slot = slots_.find(order.job_id);
    if (slot != slots_.end() && slot->second.phase == order.phase_id) slot->second.phase.clear();
    if (r.ok()) {
      answers_[order.job_id] = Answer{order.phase_id, m};
      if (answers_.size() > kKeptAnswers) answers_.erase(answers_.begin());  // the oldest job's
    }
  }
  SendAnswer(m);
}

bool AgentSession::LeaseExpired(Clock::time_point now, const Timing& timing, Clock::duration* silent) const {
  const auto s = std::chrono::nanoseconds(Ns(now) - last_heard_ns_.load());
  if (silent != nullptr) *silent = s;
  return s > timing.lease;
}

void AgentSession::SendHeartbeat(bool probe) {
  std::vector<std::pair<std::string, std::string>> running;  // job, phase
  {
    MutexLock lk(&mu_);
    if (!session_alive_) return;
    for (const auto& [job, slot] : slots_) {
      if (!slot.phase.empty()) running.emplace_back(job, slot.phase);
    }
  }
  v1::AgentMessage hb;
  hb.mutable_heartbeat()->set_agent_time_ns(Ns(Clock::now()));
  Send(hb);
  if (probe) return;
  for (const auto& [job, phase] : running) SendProgress(job, phase);
}

void AgentSession::SendProgress(const std::string& job, const std::string& phase) {
  const PhaseProgress& progress = host_->progress(job);
  v1::AgentMessage pm;
  v1::Progress* p = pm.mutable_progress();
  p->set_job_id(job);
  p->set_phase_id(phase);
  p->set_done(progress.done);
  p->set_total(progress.total);
  p->set_samples(progress.samples);
  p->set_bytes(progress.bytes);
  p->set_compute_ns(progress.compute_ns);
  p->set_wall_ns(progress.wall_ns);
  Send(pm);
}

void AgentSession::End() {
  std::vector<std::string> running;
  {
    MutexLock lk(&mu_);
    session_alive_ = false;
    link_.reset();
    for (auto& [job, slot] : slots_) {
      *slot.cancel = true;
      if (!slot.phase.empty()) running.push_back(job);
    }
    cv_.notify_all();
  }
  for (const std::string& job : running) host_->Stop(job);
}

bool AgentSession::SendShutdownNotice() {
  std::vector<v1::AgentMessage> notices;
  {
    MutexLock lk(&mu_);
    if (!session_alive_) return false;
    for (const auto& [job, slot] : slots_) {
      if (slot.phase.empty()) continue;
      notices.push_back(ErrorMessage(v1::ERROR_CODE_SHUTDOWN,
                                     absl::StrCat("agent '", id_.name, "' was told to shut down (signal) during job ",
                                                  job, " phase ", slot.phase),
                                     job, slot.phase));
    }
  }
  bool sent = !notices.empty();
  for (const v1::AgentMessage& m : notices) sent = Send(m) && sent;
  return sent;
}

}  // namespace dlio
