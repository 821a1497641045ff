// The arithmetic of the announce step barrier (dlio_ext.barrier: announce; docs/architecture.md, "Step barrier"),
// shared by the coordinator (coordinator/phase_driver.h) and the agent (agent/step_barrier.h), so that one unit test
// can run both halves against a fake clock, a skewed clock or a slow link.
//
// No clock is shared: every instant here is in the clock of the side that reads it (steady clocks, ns), and only
// durations cross the wire. An agent announces its step when its ranks' compute starts, with how long after the
// send its latest compute end is (`compute_left`). The coordinator estimates that end in its own clock as
// receipt + compute_left (late by the announce's one-way latency u); once every agent of the job announced, it
// tells each agent i how long after its own compute end to wait: wait_i = max_j(E_j) - E_i. Agent i ends the step at
// its compute end + wait_i, or when the release comes if that is later, and never before its own compute end. So
// agent i ends at (slowest compute end) + u_slowest - u_i: the only error is a difference of one-way latencies, and
// the step never ends before the slowest compute end minus u_i <= the round trip of this step's announce and release
// less the time the coordinator held the announce (ErrorBound: the agent computes it itself, from durations).
// Once an agent's OffsetWindow holds a step, its announce also carries its compute end in the coordinator's clock as
// an interval (OffsetWindow::Offset); the coordinator then places that end at the interval's middle (Place), so the
// announce's latency is no longer the error, and the bound is the step's slack plus the agent's own placement
// uncertainty (PlacedBound).
// BoundHistogram keeps a phase's per-step bounds so that their median can be exported beside their maximum.
// Hop() stamps the hops of a step for profiling (DLIO_BARRIER_HOPS; off by default).
// Thread-safety: pure functions; a BoundHistogram is not synchronised (its owner's lock guards it); Hop() from any
// thread.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace dlio::barrier_timing {

// --- the coordinator's half (its steady clock) ---

// An agent's latest compute end in the coordinator's clock as the agent's OffsetWindow places it: in [lo_ns, hi_ns].
struct EndInterval {
  int64_t lo_ns = 0, hi_ns = 0;
};

// One agent's announce as the coordinator received it.
struct Announce {
  int64_t received_ns = 0;      // coordinator clock
  int64_t compute_left_ns = 0;  // from the agent's send to its latest compute end (0: compute already over)
  // The agent's compute end placed in this clock by its offset window: sent from its second step (not by relays).
  std::optional<EndInterval> end = std::nullopt;
};

// The agent's compute end, estimated in the coordinator's clock (late by the announce's one-way latency).
inline int64_t EstimatedEnd(const Announce& a) { return a.received_ns + std::max<int64_t>(0, a.compute_left_ns); }

// Where the coordinator places an agent's compute end (its clock), and how far the true end may lie from there.
// The receipt's estimate is late by the announce's one-way latency: never early, but by an amount only the agent
// can bound (early_ns -1). With the agent's interval, cut at the receipt's estimate (a true upper end: the
// announce cannot arrive before it was sent), the end is placed at the middle and may lie early_ns before it or
// late_ns after it: the announce's latency no longer matters, only how well the agent knows the clock offset.
struct Placed {
  int64_t at_ns = 0;
  int64_t early_ns = -1;  // the true end is at most this much before at_ns; -1: unknown (placed by the receipt)
  int64_t late_ns = 0;    // the true end is at most this much after at_ns
};
inline Placed Place(const Announce& a) {
  const int64_t by_receipt = EstimatedEnd(a);
  if (a.end) {
    const int64_t lo = a.end->lo_ns, hi = std::min(a.end->hi_ns, by_receipt);
    if (lo <= hi) {  // else the offset moved beyond the agent's allowance: its interval is not trusted
      const int64_t mid = lo + (hi - lo) / 2;
      return {mid, mid - lo, hi - mid};
    }
  }
  return {by_receipt, -1, 0};
}

// What the release tells one agent: durations only.
struct Release {
  int64_t wait_after_end_ns = 0;  // how long after its own compute end the agent ends the step (>= 0)
  int64_t held_ns = 0;            // how long the coordinator held its announce (receipt to this release)
  // The coordinator's clock at the announce's receipt (Announce::received_ns), for OffsetWindow; 0: not sent (a
  // relay's release, whose hold is not a span of the coordinator's clock). Set by PhaseDriver, not by ReleaseFor.
  int64_t announce_received_ns = 0;
  // How far after the latest placed end the slowest true end may lie (the largest Placed::late_ns of the step's
  // agents; 0 when every end was placed by its receipt), and how far before this agent's placed end its own true
  // end may lie (Placed::early_ns: -1 when placed by the receipt, the agent then bounds it by its round trip).
  int64_t slack_ns = 0;
  int64_t placed_early_ns = -1;
};

// The release for agent `a`, once the slowest placed end of the step and the step's largest Placed::late_ns are
// known, sent at `now_ns`.
inline Release ReleaseFor(const Announce& a, int64_t slowest_end_ns, int64_t now_ns, int64_t slack_ns = 0) {
  const Placed p = Place(a);
  Release r;
  r.wait_after_end_ns = std::max<int64_t>(0, slowest_end_ns - p.at_ns);
  r.held_ns = std::max<int64_t>(0, now_ns - a.received_ns);
  r.slack_ns = std::max<int64_t>(0, slack_ns);
  r.placed_early_ns = p.early_ns;
  return r;
}

// --- the agent's half (its steady clock) ---

// One agent's step as it announced it.
struct AgentStep {
  int64_t announced_ns = 0;   // when the announce was sent
  int64_t compute_end_ns = 0;  // the latest compute end of its local ranks
};

// The instant the agent ends the step: its compute end plus the wait, or the release's arrival if later; never
// before its own compute end.
inline int64_t StepEnd(const AgentStep& s, const Release& r, int64_t received_ns) {
  return std::max({s.compute_end_ns + std::max<int64_t>(0, r.wait_after_end_ns), received_ns, s.compute_end_ns});
}

// The bound on how early this agent may end the step against the slowest compute end of the fleet: its announce's
// one-way latency, at most the round trip from its send to the release's arrival less the coordinator's hold.
inline int64_t ErrorBound(const AgentStep& s, const Release& r, int64_t received_ns) {
  return std::max<int64_t>(0, received_ns - s.announced_ns - std::max<int64_t>(0, r.held_ns));
}

// The whole bound of a step whose own end was placed as the release says: the slowest true end lies at most
// slack_ns after the latest placed end, and this agent's true end at most placed_early_ns before its placed end, or
// (placed by the receipt) `latency_bound_ns` (ErrorBound, or OffsetWindow::Add's tighter one) before.
inline int64_t PlacedBound(const Release& r, int64_t latency_bound_ns) {
  return std::max<int64_t>(0, r.slack_ns) + (r.placed_early_ns >= 0 ? r.placed_early_ns : latency_bound_ns);
}

// The error bound tightened over recent steps (docs/architecture.md, "Timing error"). Step k's exchange places the
// clock offset theta = (coordinator clock) - (agent clock) in [t3 - t4, t2 - t1]: t1 the announce's send and t4 the
// release's arrival (agent clock), t2 the announce's receipt and t3 = t2 + held the release's queueing (coordinator
// clock); the interval's width is the step's ErrorBound. The offset drifts by at most kDriftPpm of the time elapsed
// (two steady clocks, NTP's slew included; 0 on one machine), so an interval measured `age` ago is widened by
// kDriftPpm x age, and the intervals of the last kSteps steps are intersected. This step's announce latency is
// u = t2 - t1 - theta <= (t2 - t1) - lo, lo the intersection's lower end: the bound Add() returns, never above the
// step's own ErrorBound (the step's interval is in the intersection), near the window's smallest when only the
// releases were slow. A release without announce_received_ns gets the step's own ErrorBound; an empty intersection
// (a drift beyond the allowance) restarts the window at this step.
// Thread-safety: none (its owner's lock guards it).
class OffsetWindow {
 public:
  static constexpr int kSteps = 16;
  static constexpr int64_t kDriftPpm = 200;

  // Records this step's exchange (`received_ns`: the release's arrival, agent clock) and returns its bound, ns.
  int64_t Add(const AgentStep& s, const Release& r, int64_t received_ns) {
    if (r.announce_received_ns == 0) return ErrorBound(s, r, received_ns);
    const int64_t t2 = r.announce_received_ns;
    const Interval now{t2 + std::max<int64_t>(0, r.held_ns) - received_ns, t2 - s.announced_ns, s.announced_ns};
    ring_[static_cast<size_t>(next_)] = now;
    next_ = (next_ + 1) % kSteps;
    n_ = std::min(n_ + 1, kSteps);
    int64_t lo = now.lo, hi = now.hi;
    for (int k = 0; k < n_; ++k) {
      const Interval& i = ring_[static_cast<size_t>(k)];
      const int64_t drift = (std::max<int64_t>(0, received_ns - i.sent) * kDriftPpm + 999'999) / 1'000'000;
      lo = std::max(lo, i.lo - drift);
      hi = std::min(hi, i.hi + drift);
    }
    if (lo > hi) {  // the offset moved more than the allowance: keep only this step
      ring_[0] = now;
      n_ = 1;
      next_ = 1 % kSteps;
      lo = now.lo;
    }
    return std::max<int64_t>(0, now.hi - lo);
  }

  // The offset's interval at `at_ns` (agent clock) from the steps recorded, each widened by its drift to `at_ns`;
  // nullopt before the first step (or when they disagree). Placing a compute end E (agent clock) in the
  // coordinator's clock: [E + lo_ns, E + hi_ns].
  std::optional<EndInterval> Offset(int64_t at_ns) const {
    if (n_ == 0) return std::nullopt;
    EndInterval o{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    for (int k = 0; k < n_; ++k) {
      const Interval& i = ring_[static_cast<size_t>(k)];
      const int64_t drift = (std::max<int64_t>(0, at_ns - i.sent) * kDriftPpm + 999'999) / 1'000'000;
      o.lo_ns = std::max(o.lo_ns, i.lo - drift);
      o.hi_ns = std::min(o.hi_ns, i.hi + drift);
    }
    if (o.lo_ns > o.hi_ns) return std::nullopt;
    return o;
  }
  // The compute end `end_ns` (agent clock) placed in the coordinator's clock: Offset(end_ns) shifted by it; what an
  // announce carries (Announce::end). nullopt as Offset.
  std::optional<EndInterval> PlaceEnd(int64_t end_ns) const {
    std::optional<EndInterval> o = Offset(end_ns);
    if (o) {
      o->lo_ns += end_ns;
      o->hi_ns += end_ns;
    }
    return o;
  }

 private:
  struct Interval {
    int64_t lo = 0, hi = 0;  // the offset's interval (ns)
    int64_t sent = 0;        // t1 of its exchange (agent clock): its age is measured from there
  };
  std::array<Interval, kSteps> ring_{};
  int n_ = 0, next_ = 0;
};

// The error bounds of a phase's steps, for their quantiles: a log-scale histogram of fixed size (no allocation per
// step), kPerDoubling buckets per doubling from 1 us up to 2^kDoublings us (~16.8 s; larger bounds count in the last
// bucket, read as the largest seen). A quantile is read as the upper edge of its bucket, capped by the largest bound
// seen: never below the true quantile and at most 2^(1/8) - 1 = 9 % above it (or 1 us, in the first bucket).
class BoundHistogram {
 public:
  static constexpr int kPerDoubling = 8, kDoublings = 24, kBuckets = kPerDoubling * kDoublings + 1;

  void Add(int64_t ns) {
    ns = std::max<int64_t>(0, ns);
    ++counts_[static_cast<size_t>(BucketOf(ns))];
    ++count_;
    max_ = std::max(max_, ns);
  }
  // The q-quantile (0 < q <= 1) of the bounds added, ns; -1 when none was.
  int64_t Quantile(double q) const {
    if (count_ == 0) return -1;
    const double want = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_));
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(want));
    uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      seen += counts_[static_cast<size_t>(b)];
      if (seen >= rank) return b == kBuckets - 1 ? max_ : std::min(UpperEdge(b), max_);
    }
    return max_;
  }
  uint64_t count() const { return count_; }

  // Bucket b holds the bounds in (UpperEdge(b - 1), UpperEdge(b)]; bucket 0 those up to 1 us.
  static int64_t UpperEdge(int b) {
    return static_cast<int64_t>(std::ceil(1000.0 * std::exp2(static_cast<double>(b) / kPerDoubling)));
  }
  static int BucketOf(int64_t ns) {
    if (ns <= 1000) return 0;
    int b = static_cast<int>(std::ceil(std::log2(static_cast<double>(ns) / 1000.0) * kPerDoubling));
    b = std::clamp(b, 1, kBuckets - 1);
    while (b < kBuckets - 1 && UpperEdge(b) < ns) ++b;  // rounding of log2: the bucket's edge is never below ns
    while (b > 1 && UpperEdge(b - 1) >= ns) --b;
    return b;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  int64_t max_ = 0;
};

// --- profiling: the hops of a step (docs/architecture.md, "Where the time goes") ---

// CLOCK_MONOTONIC in ns: one clock for every process of one machine, so the hops of the agents and the coordinator
// line up.
int64_t SteadyNs();
// True when the environment variable DLIO_BARRIER_HOPS named a folder at the first call (read once per process).
bool HopsOn();
// When HopsOn(): appends "<hop> <step> <ns> <who>" to <DLIO_BARRIER_HOPS>/<pid>.hops (one write(2), no allocation).
// A debug aid: each stamp costs a system call, so runs that measure the error itself leave the variable unset.
void Hop(std::string_view hop, uint64_t step, int64_t ns, std::string_view who = {});

}  // namespace dlio::barrier_timing
