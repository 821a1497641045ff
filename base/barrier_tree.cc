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
  plan.relay_levels.assign(agents, 0);
  plan.parent.assign(agents, TreePlan::kNone);
  plan.top_unit.assign(agents, TreePlan::kNone);
  plan.subtree_begin.assign(agents, 0);
  plan.subtree_end.assign(agents, 0);
  for (size_t u = 0; u < plan.groups.size(); ++u) {
    const Group& g = plan.groups[u];
    for (size_t m : g.members) plan.parent[m] = m == g.relay ? TreePlan::kNone : g.relay;
    plan.relay_levels[g.relay] = 1;
    plan.top_unit[g.relay] = u;
    plan.subtree_begin[g.relay] = g.members.front();
    plan.subtree_end[g.relay] = g.members.back() + 1;
  }
  return plan;
}

TreePlan BuildTree(size_t agents, const std::vector<bool>& can_relay, int fanout, int min_agents) {
  TreePlan plan = GroupAgents(agents, can_relay, fanout, min_agents);
  const size_t f = static_cast<size_t>(std::max(fanout, 2));
  while (plan.tree() && plan.top().size() > f) {
    const std::vector<Group>& below = plan.top();
    std::vector<Group> level;
    for (size_t first = 0; first < below.size(); first += f) {
      Group g;
      g.relay = below[first].relay;
      for (size_t k = first; k < std::min(below.size(), first + f); ++k) g.members.push_back(below[k].relay);
      level.push_back(std::move(g));
    }
    for (size_t u = 0; u < level.size(); ++u) {
      const Group& g = level[u];
      for (size_t m : g.members) {
        plan.top_unit[m] = TreePlan::kNone;
        if (m != g.relay) plan.parent[m] = g.relay;
      }
      ++plan.relay_levels[g.relay];
      plan.top_unit[g.relay] = u;
      plan.subtree_end[g.relay] = plan.subtree_end[g.members.back()];
    }
    plan.upper.push_back(std::move(level));
  }
  return plan;
}

const Group& TreePlan::RelayedAt(size_t i, size_t l) const {
  if (l == 0) return groups[group_of[i]];
  // Level l's groups are in relay order and each relay appears once: a binary search by relay index.
  const std::vector<Group>& level = upper[l - 1];
  auto it = std::lower_bound(level.begin(), level.end(), i, [](const Group& g, size_t v) { return g.relay < v; });
  return *it;
}

Group TreePlan::Subtree(size_t i) const {
  Group g;
  g.relay = i;
  for (size_t m = subtree_begin[i]; m < subtree_end[i]; ++m) g.members.push_back(m);
  return g;
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
