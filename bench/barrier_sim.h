// barrier_sim.h: a discrete-event simulation of the training step loop's fleet-wide barrier (issue 29 item 3), to
// project the harness ceiling (AU with free storage / ideal AU) and the coordinator's CPU per step to fleets this
// machine cannot emulate. Pure logic, header-only; dlio-bench-barrier-sim (bench/barrier_sim.cc) prints its tables
// and bench/barrier_sim_test.cc checks it.
//
// The model. N agents (one rank each) run `steps` steps; storage is free, so a step is compute plus the barrier.
//   - Protocol kAfterCompute (main's today): an agent sends its arrival when its compute ends; a node that has heard
//     from all its children forwards one message up; the root (the coordinator) then sends the release to its
//     children one by one in a loop (serial fan-out, child order), and relays forward it the same way; an agent's
//     next step starts when it has read its release.
//   - Protocol kAnnounce (issue 29 item 1): an agent announces when its compute starts, with the instant its compute
//     will end; the release carries the latest such instant of the step, and an agent ends the step at
//     max(that instant, the time it read its release): only the release's latency beyond the compute is exposed.
//     Clocks are taken as perfect (the issue bounds their error below 100 us separately).
//   - Topology: fanout 0 (or fanout >= agents) is the flat star; fanout F > 0 groups the agents F to a relay, the
//     relays F to a relay of the next level, until at most F nodes are left under the coordinator. A relay is a node
//     of its own (its own core) with the relay per-message costs; it aggregates its group's arrivals into one
//     message and forwards one release to each child.
//   - Costs (microseconds): every message costs its sender `*_send_us` of CPU and its receiver `*_recv_us`, on the
//     node's one core (the coordinator's and each relay's work is serial, FIFO in time order), plus `latency_us` on
//     the link. Agents each have a core of their own (agent_cores = 0, a real fleet) or share a pool of agent_cores
//     cores (the swarm on this machine, for validating the model against a measurement).
//   - Compute per step: compute_us, times (1 + jitter * a standard normal draw), clipped at 0, drawn per agent and
//     step from `seed` (std::mt19937_64; deterministic for a given standard library).
// Outputs (SimResult): the AU as DLIO defines it (per agent: sum of compute / elapsed time; mean over agents), the
// ideal AU (the same with a barrier that costs nothing: every step ends when its slowest compute ends), the harness
// ceiling (their ratio), the coordinator's CPU per step, and latency percentiles.
//
// Thread-safety: Simulate() is a pure function of its arguments; call it from any thread.
// Usage: SimParams p; p.agents = 1024; p.fanout = 32; p.protocol = Protocol::kAnnounce; SimResult r = Simulate(p);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <vector>

namespace dlio::bench {

enum class Protocol { kAfterCompute, kAnnounce };

struct SimParams {
  Protocol protocol = Protocol::kAfterCompute;
  int agents = 16;
  int fanout = 0;  // 0: flat star; F > 0: a relay tree of fan-out F (a star while agents <= F)
  int steps = 30;
  double compute_us = 47500;
  double jitter = 0;  // standard deviation of a step's compute, as a fraction of compute_us
  double latency_us = 20;  // one-way, every link
  double coord_recv_us = 13, coord_send_us = 17;  // coordinator CPU per message received / sent
  double relay_recv_us = 13, relay_send_us = 17;  // a relay's
  double agent_recv_us = 35, agent_send_us = 35;  // an agent's
  int agent_cores = 0;  // 0: a core per agent; K > 0: the agents share K cores (FIFO)
  uint64_t seed = 1;
};

struct SimResult {
  double au_percent = 0;        // mean over agents of 100 * sum(compute) / elapsed
  double ideal_au_percent = 0;  // the same with a free barrier (a step ends at its slowest compute end)
  double ceiling = 0;           // au_percent / ideal_au_percent
  double coord_cpu_us_per_step = 0;
  int relays = 0, levels = 0;  // relay nodes and relay levels (0: star)
  // Release latency as dlio-bench-swarm measures it: from the step's last arrival (kAfterCompute) or announcement
  // (kAnnounce) leaving its agent to each agent having read its release.
  double release_p50_us = 0, release_p99_us = 0;
  // What the barrier adds to a step: each agent's step end minus the step's slowest compute end.
  double exposed_p50_us = 0, exposed_p99_us = 0;
  double exposed_min_us = 0;  // never below 0: no step ends before its slowest compute
};

namespace sim_internal {

inline double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// Nodes 0..agents-1 are the agents, then the relays level by level, the coordinator last.
struct Tree {
  std::vector<int> parent;                 // -1 for the coordinator
  std::vector<std::vector<int>> children;  // empty for agents
  int relays = 0, levels = 0;
  int root() const { return static_cast<int>(parent.size()) - 1; }
};

inline Tree BuildTree(int agents, int fanout) {
  Tree t;
  std::vector<int> level(static_cast<size_t>(agents));
  for (int i = 0; i < agents; ++i) level[static_cast<size_t>(i)] = i;
  t.parent.assign(static_cast<size_t>(agents), -1);
  t.children.assign(static_cast<size_t>(agents), {});
  auto add_node = [&t](const std::vector<int>& kids) {
    const int id = static_cast<int>(t.parent.size());
    t.parent.push_back(-1);
    t.children.push_back(kids);
    for (int k : kids) t.parent[static_cast<size_t>(k)] = id;
    return id;
  };
  while (fanout > 0 && static_cast<int>(level.size()) > fanout) {
    std::vector<int> up;
    for (size_t i = 0; i < level.size(); i += static_cast<size_t>(fanout)) {
      const size_t end = std::min(level.size(), i + static_cast<size_t>(fanout));
      up.push_back(add_node(std::vector<int>(level.begin() + static_cast<std::ptrdiff_t>(i),
                                             level.begin() + static_cast<std::ptrdiff_t>(end))));
    }
    t.relays += static_cast<int>(up.size());
    ++t.levels;
    level = std::move(up);
  }
  add_node(level);
  return t;
}

class Simulation {
 public:
  explicit Simulation(const SimParams& p)
      : p_(p),
        tree_(BuildTree(p.agents, p.fanout)),
        free_at_(tree_.parent.size(), 0),
        pool_(static_cast<size_t>(std::max(p.agent_cores, 0)), 0),
        heard_(tree_.parent.size(), 0),
        latest_(tree_.parent.size(), 0),
        step_(static_cast<size_t>(p.agents), 0),
        compute_sum_(static_cast<size_t>(p.agents), 0),
        slowest_end_(static_cast<size_t>(p.steps), 0),
        slowest_draw_(static_cast<size_t>(p.steps), 0),
        last_sent_(static_cast<size_t>(p.steps), 0),
        elapsed_(static_cast<size_t>(p.agents), 0),
        rng_(p.seed) {}

  SimResult Run() {
    for (int a = 0; a < p_.agents; ++a) At(0, [this, a] { StepStart(a, 0); });
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      now_ = e.t;
      e.fn();
    }
    return Result();
  }

 private:
  struct Event {
    double t;
    uint64_t seq;  // ties in the order they were set
    std::function<void()> fn;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  void At(double t, std::function<void()> fn) { events_.push(Event{t, seq_++, std::move(fn)}); }
  bool IsAgent(int node) const { return node < p_.agents; }

  // `cost` of CPU on `node`'s core from now on (FIFO: events run in time order); returns when it is done.
  double Work(int node, double cost) {
    double* core = &free_at_[static_cast<size_t>(node)];
    if (IsAgent(node) && !pool_.empty()) core = &*std::min_element(pool_.begin(), pool_.end());
    *core = std::max(*core, now_) + cost;
    if (node == tree_.root()) coord_cpu_us_ += cost;
    return *core;
  }
  double RecvCost(int node) const {
    return IsAgent(node) ? p_.agent_recv_us : node == tree_.root() ? p_.coord_recv_us : p_.relay_recv_us;
  }
  double SendCost(int node) const {
    return IsAgent(node) ? p_.agent_send_us : node == tree_.root() ? p_.coord_send_us : p_.relay_send_us;
  }
  double Draw() {
    if (p_.jitter <= 0) return p_.compute_us;
    return std::max(0.0, p_.compute_us * (1 + p_.jitter * normal_(rng_)));
  }

  void StepStart(int a, int step) {
    step_[static_cast<size_t>(a)] = step;
    if (step == p_.steps) {
      elapsed_[static_cast<size_t>(a)] = now_;
      return;
    }
    const double c = Draw();
    compute_sum_[static_cast<size_t>(a)] += c;
    double& slowest = slowest_end_[static_cast<size_t>(step)];
    slowest = std::max(slowest, now_ + c);
    slowest_draw_[static_cast<size_t>(step)] = std::max(slowest_draw_[static_cast<size_t>(step)], c);
    const double end = now_ + c;
    if (p_.protocol == Protocol::kAnnounce) {
      SendUp(a, end);
    } else {
      At(end, [this, a, end] { SendUp(a, end); });
    }
  }
  // An agent's arrival (or announcement) leaves it; `instant` is its compute end.
  void SendUp(int a, double instant) {
    const double sent = Work(a, SendCost(a));
    double& last = last_sent_[static_cast<size_t>(step_[static_cast<size_t>(a)])];
    last = std::max(last, sent);
    const int up = tree_.parent[static_cast<size_t>(a)];
    At(sent + p_.latency_us, [this, up, instant] { Arrive(up, instant); });
  }
  void Arrive(int node, double instant) {
    const double done = Work(node, RecvCost(node));
    const size_t n = static_cast<size_t>(node);
    latest_[n] = std::max(latest_[n], instant);
    if (++heard_[n] < static_cast<int>(tree_.children[n].size())) return;
    const double agg = latest_[n];
    heard_[n] = 0;
    latest_[n] = 0;
    At(done, [this, node, agg] {
      if (node == tree_.root()) {
        FanOut(node, agg);
      } else {
        const double sent = Work(node, SendCost(node));
        const int up = tree_.parent[static_cast<size_t>(node)];
        At(sent + p_.latency_us, [this, up, agg] { Arrive(up, agg); });
      }
    });
  }
  // The release loop: one write per child, in child order, on the node's core.
  void FanOut(int node, double instant) {
    for (int child : tree_.children[static_cast<size_t>(node)]) {
      const double sent = Work(node, SendCost(node));
      At(sent + p_.latency_us, [this, child, instant] { Release(child, instant); });
    }
  }
  void Release(int node, double instant) {
    const double done = Work(node, RecvCost(node));
    if (!IsAgent(node)) {
      At(done, [this, node, instant] { FanOut(node, instant); });
      return;
    }
    const int step = step_[static_cast<size_t>(node)];
    const double end = p_.protocol == Protocol::kAnnounce ? std::max(done, instant) : done;
    release_us_.push_back(done - last_sent_[static_cast<size_t>(step)]);
    exposed_us_.push_back(end - slowest_end_[static_cast<size_t>(step)]);
    At(end, [this, node, step] { StepStart(node, step + 1); });
  }

  SimResult Result() const {
    SimResult r;
    // With a free barrier every step lasts its slowest compute, for every agent.
    double ideal_elapsed = 0;
    for (double c : slowest_draw_) ideal_elapsed += c;
    double au = 0, ideal = 0;
    for (size_t a = 0; a < compute_sum_.size(); ++a) {
      if (elapsed_[a] > 0) au += compute_sum_[a] / elapsed_[a];
      if (ideal_elapsed > 0) ideal += compute_sum_[a] / ideal_elapsed;
    }
    r.au_percent = 100 * au / p_.agents;
    r.ideal_au_percent = 100 * ideal / p_.agents;
    r.ceiling = r.ideal_au_percent > 0 ? r.au_percent / r.ideal_au_percent : 0;
    r.coord_cpu_us_per_step = coord_cpu_us_ / p_.steps;
    r.relays = tree_.relays;
    r.levels = tree_.levels;
    r.release_p50_us = Percentile(release_us_, 0.50);
    r.release_p99_us = Percentile(release_us_, 0.99);
    r.exposed_p50_us = Percentile(exposed_us_, 0.50);
    r.exposed_p99_us = Percentile(exposed_us_, 0.99);
    r.exposed_min_us = exposed_us_.empty() ? 0 : *std::min_element(exposed_us_.begin(), exposed_us_.end());
    return r;
  }

  SimParams p_;
  Tree tree_;
  std::vector<double> free_at_;  // per node: when its core is next free
  std::vector<double> pool_;     // the agents' shared cores (agent_cores > 0)
  std::vector<int> heard_;       // per relay/coordinator: children heard from this step
  std::vector<double> latest_;   // per relay/coordinator: the latest compute end heard this step
  std::vector<int> step_;        // per agent: the step it is in
  std::vector<double> compute_sum_;
  std::vector<double> slowest_end_;   // per step: the latest compute end (absolute)
  std::vector<double> slowest_draw_;  // per step: the longest compute drawn
  std::vector<double> last_sent_;    // per step: when the last arrival/announcement left its agent
  std::vector<double> elapsed_;  // per agent: when its last step ended
  std::vector<double> release_us_, exposed_us_;
  double coord_cpu_us_ = 0;
  double now_ = 0;
  uint64_t seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_;
};

}  // namespace sim_internal

inline SimResult Simulate(const SimParams& p) { return sim_internal::Simulation(p).Run(); }

}  // namespace dlio::bench
