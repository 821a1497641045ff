// The coordinator's events of the step barrier's relay tree (base/barrier_tree.h), apart from coordinator.cc.
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_job.h"
#include "spdlog/spdlog.h"

namespace dlio {

void Coordinator::OnRelayMemberLost(const std::string& relay, const std::string& job_id, const std::string& phase_id,
                                    const std::string& member, const std::string& reason) {
  MutexLock lk(&mu_);
  Touch(relay);
  Job* job = RunningJob(job_id);
  if (job == nullptr || !job->driver.MemberLost(relay, job_id, phase_id, member, reason)) return;
  spdlog::warn("agent '{}' lost during job {}: its relay {} reports: {}", member, job_id, relay, reason);
  cv_.notify_all();
}

}  // namespace dlio
