#include "coordinator/phase_driver.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "coordinator/messages.h"

namespace dlio {

std::optional<AgentProgress> PhaseProgress::Fleet() const {
  std::optional<AgentProgress> sum;
  for (const std::optional<AgentProgress>& v : latest_) {
    if (!v) continue;
    if (!sum) {
      sum.emplace();
      sum->done = files_ ? 0 : UINT64_MAX;
    }
    sum->done = files_ ? sum->done + v->done : std::min(sum->done, v->done);
    sum->total = files_ ? sum->total + v->total : std::max(sum->total, v->total);
    sum->samples += v->samples;
    sum->bytes += v->bytes;
    sum->compute_ns += v->compute_ns;
    sum->wall_ns += v->wall_ns;
  }
  return sum;
}

std::pair<uint64_t, uint64_t> PhaseProgress::Furthest() const {
  uint64_t done = 0, total = 0;
  for (const std::optional<AgentProgress>& v : latest_) {
    if (v) done = std::max(done, v->done), total = std::max(total, v->total);
  }
  return {done, total};
}

bool PhaseProgress::Publish(const AgentProgress& f) {
  const AgentProgress& p = published_;
  if (f.done == p.done && f.total == p.total && f.samples == p.samples && f.bytes == p.bytes &&
      f.compute_ns == p.compute_ns && f.wall_ns == p.wall_ns) {
    return false;
  }
  published_ = f;
  return true;
}

std::optional<double> PhaseProgress::LiveAuPercent(const AgentProgress& fleet) {
  if (fleet.wall_ns == 0) return std::nullopt;
  return std::min(100.0, 100.0 * static_cast<double>(fleet.compute_ns) / static_cast<double>(fleet.wall_ns));
}

std::optional<double> PhaseProgress::WindowedAuPercent(const AgentProgress& fleet,
                                                       std::chrono::steady_clock::time_point now) {
  if (au_marks_.empty()) au_marks_.push_back({now, 0, 0});  // the phase's start: its sums began at 0
  if (fleet.wall_ns != au_marks_.back().wall_ns) au_marks_.push_back({now, fleet.compute_ns, fleet.wall_ns});
  // The base: the newest mark at least a window old (the oldest one while none is).
  while (au_marks_.size() > 2 && au_marks_[1].at <= now - kLiveAuWindow) au_marks_.pop_front();
  const AuMark& base = au_marks_.front();
  if (fleet.wall_ns <= base.wall_ns) return std::nullopt;
  const double compute = static_cast<double>(fleet.compute_ns - std::min(fleet.compute_ns, base.compute_ns));
  return std::min(100.0, 100.0 * compute / static_cast<double>(fleet.wall_ns - base.wall_ns));
}

// A rank outside the agent's would name result files after it (2^32-1 became "-1_output.json"), and NaN would
// poison the means.
absl::Status CheckPhaseResults(const AgentInfo& a, const std::vector<RankEpochResult>& ranks) {
  if (ranks.size() != static_cast<size_t>(a.ranks)) {
    return absl::InvalidArgumentError(absl::StrCat(ranks.size(), " rank result(s) for its ", a.ranks, " rank(s)"));
  }
  std::set<int> seen;
  auto bad_time = [](double v) { return !(v >= 0 && v < 1e9); };  // NaN fails: every comparison with it is false
  for (const RankEpochResult& r : ranks) {
    if (r.rank < a.first_rank || r.rank >= a.first_rank + a.ranks || !seen.insert(r.rank).second) {
      return absl::InvalidArgumentError(absl::StrCat("a result for rank ", r.rank, ", not one of its ",
                                                     RankRange(a.first_rank, a.ranks), " (or twice)"));
    }
    for (const BlockTimings& b : r.blocks) {
      const size_t n = b.load.size();
      if (b.proc.size() != n || b.compute.size() != n || b.barrier.size() != n || bad_time(b.duration_s)) {
        return absl::InvalidArgumentError(absl::StrCat("malformed block ", b.block, " of rank ", r.rank));
      }
      for (const auto* v : {&b.load, &b.proc, &b.compute, &b.barrier}) {
        if (std::any_of(v->begin(), v->end(), bad_time)) {
          return absl::InvalidArgumentError(absl::StrCat("a step time that is not a number of seconds in block ",
                                                         b.block, " of rank ", r.rank));
        }
      }
    }
    for (const RankCheckpointResult& c : r.checkpoints) {
      if (c.rank != r.rank || bad_time(c.duration_s)) {
        return absl::InvalidArgumentError(absl::StrCat("a malformed checkpoint timing of rank ", r.rank));
      }
    }
  }
  return absl::OkStatus();
}

void PhaseDriver::Begin(Setup setup, Clock::time_point now) {
  const size_t n = setup.agents->size();
  active_ = true;
  setup_ = std::move(setup);
  owes_done_.assign(n, 0);
  unsettled_ = 0;
  barrier_step_ = 0;
  links_.assign(n, nullptr);
  PlanTree();
  const size_t units = tree_.tree() ? tree_.top().size() : n;
  arrived_.assign(units, 0);
  announces_.assign(units, barrier_timing::Announce());
  arrived_count_ = 0;
  first_arrival_ = Clock::time_point();
  last_advance_ = now;
  progress_ = PhaseProgress(n, generate());
  results_.clear();
  error_.clear();
  refused_ = false;
}

void PhaseDriver::PlanTree() {
  const std::vector<AgentInfo>& agents = *setup_.agents;
  names_.clear();
  std::vector<bool> can_relay;
  bool every = true;  // every agent has a listener: none is an older agent or swarm session that knows no tree
  for (const AgentInfo& a : agents) {
    names_.push_back(a.name);
    can_relay.push_back(!a.relay_endpoint.empty());
    every = every && can_relay.back();
  }
  tree_ = train() && every ? barrier_tree::BuildTree(agents.size(), can_relay, setup_.barrier_fanout,
                                                     setup_.barrier_tree_min_agents)
                           : barrier_tree::TreePlan();
}

void PhaseDriver::Order(size_t i, std::shared_ptr<AgentLink> link, const PhaseOrder& order) {
  if (!owes_done_[i]) ++unsettled_;
  owes_done_[i] = 1;
  links_[i] = std::move(link);
  if (!tree_.tree()) {
    links_[i]->RunPhase(order);
    return;
  }
  PhaseOrder o = order;
  // Its parent: the relay it sends its arrivals to; itself when it relays a group under the coordinator.
  const size_t parent = tree_.parent[i] == barrier_tree::TreePlan::kNone ? i : tree_.parent[i];
  o.barrier_relay = NameAt(parent);
  o.barrier_relay_endpoint = (*setup_.agents)[parent].relay_endpoint;
  o.barrier_relay_tls_name = (*setup_.agents)[parent].relay_tls_name;
  for (size_t l = 0; l < tree_.relay_levels[i]; ++l) {
    std::vector<std::string> names;
    for (size_t m : tree_.RelayedAt(i, l).members) names.push_back(NameAt(m));
    if (l == 0) {
      o.barrier_group = std::move(names);
    } else {
      o.barrier_upper.push_back(std::move(names));
    }
  }
  links_[i]->RunPhase(o);
}

std::string PhaseDriver::UnitText(size_t u) const {
  if (!tree_.tree()) return absl::StrCat(NameAt(u), " (", RanksOf(NameAt(u)), ")");
  const size_t r = tree_.top()[u].relay;
  return absl::StrCat("relay ", NameAt(r), " (group ", barrier_tree::GroupText(tree_.Subtree(r), names_), ")");
}

void PhaseDriver::Detached(size_t i) {
  Fail(absl::StrCat("agent '", NameAt(i), "' (", RanksOf(NameAt(i)), ") detached before job ", setup_.job_id,
                    " phase ", setup_.phase_id));
}

std::optional<size_t> PhaseDriver::IndexOf(const std::string& agent) const {
  const auto it = setup_.index->find(agent);
  if (it == setup_.index->end() || it->second >= owes_done_.size()) return std::nullopt;
  return it->second;
}

void PhaseDriver::SettleAt(size_t i) {
  if (!owes_done_[i]) return;
  owes_done_[i] = 0;
  --unsettled_;
}

PhaseDriver::Arrival PhaseDriver::Arrive(const std::string& agent, const std::string& job_id,
                                         const std::string& phase_id, uint64_t step, Clock::time_point now,
                                         Clock::duration* wait, int64_t compute_left_ns, Clock::time_point received,
                                         const std::function<Clock::time_point()>& release_clock,
                                         std::optional<barrier_timing::EndInterval> end) {
  if (!Is(job_id, phase_id) || step != barrier_step_) return Arrival::kStale;
  const std::optional<size_t> agent_i = IndexOf(agent);
  // The barrier's unit: the agent (star), or the top-level group it relays (tree: the coordinator's relays only).
  const size_t unit = tree_.tree() && agent_i ? tree_.top_unit[*agent_i] : agent_i.value_or(0);
  if (!agent_i || unit == barrier_tree::TreePlan::kNone) return Arrival::kStale;
  const std::optional<size_t> i = unit;
  if (arrived_count_ == 0) first_arrival_ = now;
  auto ns = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  if (barrier_timing::HopsOn()) barrier_timing::Hop("locked", step, barrier_timing::SteadyNs(), agent);
  if (!arrived_[*i]) {
    arrived_[*i] = 1;
    ++arrived_count_;
    announces_[*i] =
        barrier_timing::Announce{ns(received == Clock::time_point{} ? now : received), compute_left_ns, end};
  }
  if (arrived_count_ < arrived_.size()) return Arrival::kCounted;
  *wait = now - first_arrival_;
  std::fill(arrived_.begin(), arrived_.end(), 0);
  arrived_count_ = 0;
  ++barrier_step_;
  last_advance_ = now;
  // The slowest placed compute end, and how far after it the slowest true end may lie (base/barrier_timing.h Place).
  int64_t slowest = std::numeric_limits<int64_t>::min(), slack = 0;
  for (const barrier_timing::Announce& a : announces_) {
    const barrier_timing::Placed p = barrier_timing::Place(a);
    slowest = std::max(slowest, p.at_ns);
    slack = std::max(slack, p.late_ns);
  }
  for (size_t k = 0; k < announces_.size(); ++k) {
    if (const std::shared_ptr<AgentLink>& link = links_[UnitAgent(k)]) {
      const int64_t at = ns(release_clock ? release_clock() : now);  // this release's queueing: its hold ends here
      barrier_timing::Release r = barrier_timing::ReleaseFor(announces_[k], slowest, at, slack);
      r.announce_received_ns = announces_[k].received_ns;  // the agent's offset interval (OffsetWindow)
      link->ReleaseBarrierTimed(job_id, phase_id, step, r);
      if (barrier_timing::HopsOn()) barrier_timing::Hop("queued", step, at, NameAt(UnitAgent(k)));  // t3
    }
  }
  return Arrival::kReleased;
}

void PhaseDriver::Report(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                         const AgentProgress& progress) {
  if (!Is(job_id, phase_id)) return;
  if (const std::optional<size_t> i = IndexOf(agent)) progress_.Report(*i, progress);
}

bool PhaseDriver::Done(const std::string& agent, const std::string& job_id, const std::string& phase_id,
                       std::vector<RankEpochResult> ranks) {
  if (!Is(job_id, phase_id)) return false;
  const std::optional<size_t> i = IndexOf(agent);
  if (!i || !owes_done_[*i]) return false;  // a repeated PhaseDone, or none was asked of it
  SettleAt(*i);
  if (absl::Status s = CheckPhaseResults((*setup_.agents)[*i], ranks); !s.ok()) {
    Fail(absl::StrCat("agent '", agent, "' (", RanksOf(agent), ") sent an invalid result for job ", job_id,
                      " phase ", phase_id, ": ", s.message()));
    return true;
  }
  for (RankEpochResult& r : ranks) results_.push_back(std::move(r));
  return true;
}

void PhaseDriver::Settle(const std::string& agent) {
  if (const std::optional<size_t> i = IndexOf(agent)) SettleAt(*i);
}

void PhaseDriver::Lost(const std::string& agent, const std::string& why) {
  const std::optional<size_t> i = IndexOf(agent);
  if (!i) return;
  SettleAt(*i);
  if (!error_.empty()) return;
  std::string where;
  if (generate()) {
    const AgentProgress* p = progress_.Of(*i);
    where = p == nullptr ? std::string("before reporting progress")
                         : absl::StrCat("after writing ", p->done, " of its ", p->total, " files");
  } else {
    where = StepText();
  }
  // A relay takes its subtree's barrier with it (every level under it): say so first, naming the agents.
  const std::string relay =
      tree_.tree() && tree_.relay_levels[*i] > 0
          ? absl::StrCat("relay ", agent, " lost: group ", barrier_tree::GroupText(tree_.Subtree(*i), names_), "; ")
          : std::string();
  Fail(absl::StrCat(relay, "agent '", agent, "' (", RanksOf(agent), ") lost during job ", setup_.job_id, " phase ",
                    setup_.phase_id, " ", where, ": ", why));
}

bool PhaseDriver::MemberLost(const std::string& relay, const std::string& job_id, const std::string& phase_id,
                             const std::string& member, const std::string& why) {
  if (!Is(job_id, phase_id) || !tree_.tree()) return false;
  const std::optional<size_t> r = IndexOf(relay), m = IndexOf(member);
  if (!r || !m || tree_.parent[*m] != *r) return false;  // only a member's own relay (at any level) reports it
  Lost(member, absl::StrCat("reported by its relay ", relay, ": ", why));
  return true;
}

bool PhaseDriver::BarrierTimedOut(Clock::time_point now, std::chrono::milliseconds timeout) {
  // A single-agent job's barrier is local to the agent (no arrivals here), so only jobs over several agents time out.
  if (!train() || arrived_.size() <= 1 || timeout.count() <= 0 || now - last_advance_ <= timeout || !error_.empty()) {
    return false;
  }
  std::vector<std::string> missing;
  for (size_t u = 0; u < arrived_.size(); ++u) {
    if (owes_done_[UnitAgent(u)] && !arrived_[u]) missing.push_back(UnitText(u));
  }
  Fail(absl::StrCat("job ", setup_.job_id, " phase ", setup_.phase_id, ": no step barrier released for ",
                    SecsText(timeout), " (barrier timeout) at step ", barrier_step_, ": ", arrived_count_, " of ",
                    arrived_.size(), tree_.tree() ? " relay(s)" : " agent(s)", " arrived; waiting for ",
                    missing.empty() ? std::string("none") : NameList(missing)));
  return true;
}

std::vector<std::string> PhaseDriver::Unsettled() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < owes_done_.size(); ++i) {
    if (owes_done_[i]) names.push_back(NameAt(i));
  }
  return names;
}

std::string PhaseDriver::StepText() const {
  const auto [done, total] = progress_.Furthest();
  // A single-agent job has no barrier here: its last progress report says how far it got.
  const uint64_t step = arrived_.size() > 1 ? barrier_step_ : done;
  return absl::StrCat("after step ", step, total > 0 ? absl::StrCat(" of ", total) : std::string());
}

std::string PhaseDriver::RanksOf(const std::string& agent) const {
  const auto it = setup_.index->find(agent);
  if (it == setup_.index->end()) return "no ranks";
  const AgentInfo& a = (*setup_.agents)[it->second];
  return RankRange(a.first_rank, a.ranks);
}

}  // namespace dlio
