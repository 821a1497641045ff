#include "base/barrier_tree.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace dlio::barrier_tree {

TreePlan GroupAgents(size_t agents, const std::vector<bool>& can_relay, int fanout, int min_agents) {
  TreePlan plan;
  if (fanout < 2 || agents < static_cast<size_t>(std::max(min_agents, 0)) || agents <= static_cast<size_t>(fanout) ||
      can_relay.size() != agents) {
    return plan;
  }
  const size_t f = static_cast<size_t>(fanout);
  plan.group_of.assign(agents, 0);
  for (size_t first = 0; first < agents; first += f) {
    Group g;
    const size_t end = std::min(agents, first + f);
    bool found = false;
    for (size_t i = first; i < end; ++i) {
      g.members.push_back(i);
      plan.group_of[i] = plan.groups.size();
      if (!found && can_relay[i]) g.relay = i, found = true;
    }
    if (!found) return TreePlan();  // a group nobody can relay: the star
    plan.groups.push_back(std::move(g));
  }
  return plan;
}

std::string GroupText(const Group& g, const std::vector<std::string>& names) {
  if (g.members.empty()) return "";
  const std::string& first = names.at(g.members.front());
  return g.members.size() == 1 ? first : absl::StrCat(first, "..", names.at(g.members.back()));
}

void RelayAggregator::Reset(size_t members) {
  step_ = 0;
  arrived_ = 0;
  forwarded_ = false;
  forwarded_ns_ = 0;
  upstream_bound_ns_ = -1;
  arrived_flag_.assign(members, 0);
  announces_.assign(members, barrier_timing::Announce());
}

bool RelayAggregator::Arrive(size_t k, uint64_t step, int64_t received_ns, int64_t compute_left_ns) {
  if (k >= announces_.size() || step != step_ || arrived_flag_[k] || forwarded_) return false;
  arrived_flag_[k] = 1;
  announces_[k] = barrier_timing::Announce{received_ns, compute_left_ns};
  return ++arrived_ == announces_.size();
}

std::vector<size_t> RelayAggregator::Missing() const {
  std::vector<size_t> out;
  for (size_t k = 0; k < arrived_flag_.size(); ++k) {
    if (!arrived_flag_[k]) out.push_back(k);
  }
  return out;
}

namespace {
int64_t LatestEnd(const std::vector<barrier_timing::Announce>& a) {
  int64_t latest = std::numeric_limits<int64_t>::min();
  for (const barrier_timing::Announce& x : a) latest = std::max(latest, barrier_timing::EstimatedEnd(x));
  return latest;
}
}  // namespace

int64_t RelayAggregator::Forward(int64_t now_ns) {
  forwarded_ = true;
  forwarded_ns_ = now_ns;
  return std::max<int64_t>(0, LatestEnd(announces_) - now_ns);
}

std::vector<barrier_timing::Release> RelayAggregator::Release(const barrier_timing::Release& up, int64_t received_ns,
                                                              int64_t now_ns) {
  // The relay hop's bound, as an agent of the star computes its own (base/barrier_timing.h ErrorBound).
  upstream_bound_ns_ = barrier_timing::ErrorBound(barrier_timing::AgentStep{forwarded_ns_, 0}, up, received_ns);
  // The group's end as the coordinator placed it, in the relay's clock (the slowest end of the fleet).
  const int64_t end = LatestEnd(announces_) + std::max<int64_t>(0, up.wait_after_end_ns);
  std::vector<barrier_timing::Release> out;
  out.reserve(announces_.size());
  for (const barrier_timing::Announce& a : announces_) {
    barrier_timing::Release r = barrier_timing::ReleaseFor(a, end, now_ns);
    r.held_ns = std::max<int64_t>(0, r.held_ns - upstream_bound_ns_);
    out.push_back(r);
  }
  ++step_;
  arrived_ = 0;
  forwarded_ = false;
  std::fill(arrived_flag_.begin(), arrived_flag_.end(), 0);
  return out;
}

}  // namespace dlio::barrier_tree
