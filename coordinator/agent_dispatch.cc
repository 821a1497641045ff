#include "coordinator/agent_dispatch.h"

#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "job/workload_spec.h"
#include "dlio/v1/convert.h"

namespace dlio {

absl::Status CheckHello(const v1::Hello& h) {
  if (h.name().empty()) return absl::InvalidArgumentError("Hello.name: an agent needs a name");
  const std::pair<const std::string*, const char*> texts[] = {
      {&h.name(), "Hello.name"},         {&h.hostname(), "Hello.hostname"}, {&h.instance(), "Hello.instance"},
      {&h.metrics_endpoint(), "Hello.metrics_endpoint"}, {&h.kernel(), "Hello.kernel"},
      {&h.cpu_model(), "Hello.cpu_model"}, {&h.data_root_fs(), "Hello.data_root_fs"},
      {&h.relay_endpoint(), "Hello.relay_endpoint"}, {&h.relay_tls_name(), "Hello.relay_tls_name"}};
  for (const auto& [text, field] : texts) {
    // 255: a host name's limit; the longer provenance strings (uname's version, a CPU model) fit too.
    if (absl::Status s = CheckText(*text, field, 255); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("agent '", EscapeText(h.name(), 64), "': ", s.message()));
    }
  }
  const v1::DataRootMount& m = h.data_root_mount();
  for (const auto& [text, field] : {std::make_pair(&m.mount_point(), "Hello.data_root_mount.mount_point"),
                                    std::make_pair(&m.source(), "Hello.data_root_mount.source"),
                                    std::make_pair(&m.fs_type(), "Hello.data_root_mount.fs_type"),
                                    std::make_pair(&m.device(), "Hello.data_root_mount.device"),
                                    std::make_pair(&m.fsid(), "Hello.data_root_mount.fsid")}) {
    // 4096: PATH_MAX, the longest mount point or source a kernel shows.
    if (absl::Status s = CheckText(*text, field, 4096); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("agent '", EscapeText(h.name(), 64), "': ", s.message()));
    }
  }
  if (absl::Status s = CheckText(h.processor_name(), "Hello.processor_name", 255); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("agent '", EscapeText(h.name(), 64), "': ", s.message()));
  }
  // /proc/cpuinfo and /proc/meminfo entries: a few dozen short lines on any host.
  for (const auto* map : {&h.cpuinfo(), &h.meminfo()}) {
    if (map->size() > 256) {
      return absl::InvalidArgumentError(absl::StrCat("agent '", EscapeText(h.name(), 64), "': Hello.",
                                                     map == &h.cpuinfo() ? "cpuinfo" : "meminfo", ": ", map->size(),
                                                     " entries, at most 256"));
    }
    for (const auto& [k, v] : *map) {
      absl::Status s = CheckText(k, "Hello.cpuinfo/meminfo key", 255);
      if (s.ok()) s = CheckText(v, "Hello.cpuinfo/meminfo value", 4096);
      if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("agent '", EscapeText(h.name(), 64), "': ", s.message()));
    }
  }
  if (h.accelerators() < 1 || h.accelerators() > static_cast<uint32_t>(kMaxAcceleratorsPerAgent)) {
    return absl::InvalidArgumentError(absl::StrCat("agent '", h.name(), "': Hello.accelerators must be in [1, ",
                                                   kMaxAcceleratorsPerAgent, "], got ", h.accelerators()));
  }
  return absl::OkStatus();
}

AgentInfo AgentInfoFromHello(const v1::Hello& hello) {
  AgentInfo info;
  info.name = hello.name();
  info.hostname = hello.hostname().empty() ? hello.name() : hello.hostname();
  info.memory_gb = static_cast<double>(hello.host_memory_bytes()) / (1024.0 * 1024.0 * 1024.0);
  info.cpu_count = static_cast<int>(std::min<uint32_t>(hello.host_cpu_count(), 1u << 24));
  info.kernel = hello.kernel();
  info.cpu_model = hello.cpu_model();
  info.data_root_fs = hello.data_root_fs();
  const v1::DataRootMount& m = hello.data_root_mount();
  info.data_root_mount = {"", m.mount_point(), m.source(), m.fs_type(), m.device(), m.fsid(), ""};
  info.cpuinfo.insert(hello.cpuinfo().begin(), hello.cpuinfo().end());
  info.meminfo.insert(hello.meminfo().begin(), hello.meminfo().end());
  info.processor_name = hello.processor_name();
  // A host has a handful of NICs; a Hello listing more is cut at 256 (the system description lists them all).
  for (int i = 0; i < hello.nics_size() && i < 256; ++i) {
    const v1::NicInfo& n = hello.nics(i);
    info.nics.push_back({n.name(), n.speed_mbps(), n.mtu(), n.state()});
  }
  info.memory_source = hello.host_memory_source();
  info.relay_endpoint = hello.relay_endpoint();
  info.relay_tls_name = hello.relay_tls_name();
  info.ranks = static_cast<int>(hello.accelerators());
  return info;
}

void AgentInbox::Deliver(const v1::AgentMessage& in, Coordinator::Clock::time_point received) {
  switch (in.msg_case()) {
    case v1::AgentMessage::kHeartbeat:
      core_->OnHeartbeat(agent_);
      if (echo_) {
        echo_(in.heartbeat().agent_time_ns(),
              std::chrono::duration_cast<std::chrono::nanoseconds>(received.time_since_epoch()).count());
      }
      break;
    case v1::AgentMessage::kBarrierArrive: {
      const v1::BarrierArrive& a = in.barrier_arrive();
      std::optional<barrier_timing::EndInterval> end;
      if (a.has_compute_end()) end = barrier_timing::EndInterval{a.compute_end().lo_ns(), a.compute_end().hi_ns()};
      core_->OnBarrierArrive(agent_, a.job_id(), a.phase_id(), a.step(), a.compute_left_ns(), received, end);
      break;
    }
    case v1::AgentMessage::kProgress: {
      const v1::Progress& p = in.progress();
      AgentProgress ap;
      ap.done = p.done();
      ap.total = p.total();
      ap.samples = p.samples();
      ap.bytes = p.bytes();
      ap.compute_ns = p.compute_ns();
      ap.wall_ns = p.wall_ns();
      core_->OnProgress(agent_, p.job_id(), p.phase_id(), ap);
      break;
    }
    case v1::AgentMessage::kPhaseDone: {
      // Parts of one phase's answer are merged here; the core sees one PhaseDone. A part of another phase, a
      // continuation without its head or too many bytes start over: the core then finds the result incomplete
      // and fails the phase naming the agent.
      const v1::PhaseDone& d = in.phase_done();
      if (d.job_id() != parts_job_ || d.phase_id() != parts_phase_) {
        parts_.clear();
        parts_bytes_ = 0;
        parts_overflow_ = false;
      }
      parts_job_ = d.job_id();
      parts_phase_ = d.phase_id();
      parts_bytes_ += d.ByteSizeLong();
      parts_overflow_ = parts_overflow_ || parts_bytes_ > kMaxPhaseResultBytes;
      if (parts_overflow_ || !MergePhaseDonePart(d, &parts_)) parts_.clear();
      if (d.more()) break;
      core_->OnPhaseDone(agent_, d.job_id(), d.phase_id(), std::move(parts_));
      parts_.clear();
      parts_job_.clear();
      parts_phase_.clear();
      parts_bytes_ = 0;
      parts_overflow_ = false;
      break;
    }
    case v1::AgentMessage::kError:
      core_->OnAgentError(agent_, in.error().job_id(), in.error().phase_id(),
                          in.error().code() == v1::ERROR_CODE_CANCELLED  ? AgentErrorKind::kCancelled
                          : in.error().code() == v1::ERROR_CODE_REFUSED ? AgentErrorKind::kRefused
                                                                        : AgentErrorKind::kFailure,
                          in.error().message());
      break;
    case v1::AgentMessage::kRelayMemberLost: {
      const v1::RelayMemberLost& l = in.relay_member_lost();
      core_->OnRelayMemberLost(agent_, l.job_id(), l.phase_id(), l.member(), l.reason());
      break;
    }
    default:
      break;
  }
}

}  // namespace dlio
