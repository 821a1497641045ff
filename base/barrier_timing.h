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
// Once an agent's OffsetWindow holds an exchange (a heartbeat's echo or a step's), its announce also carries its
// compute end in the coordinator's clock as an interval (OffsetWindow::Offset); the coordinator then places that end
// at the interval's middle (Place), so the announce's latency is no longer the error, and the bound is the step's
// slack plus the agent's own placement uncertainty (PlacedBound): 0 when the agent reads the coordinator's clock.
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
#include <string>
#include <string_view>

#include "base/steady_ns.h"

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
  // The agent's compute end placed in this clock by its offset window: sent once the window holds an exchange (its
  // first heartbeat's echo, or its first step's release), not through relays.
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

// The clock offset theta = (coordinator clock) - (agent clock) as an interval, and the error bound tightened by it
// (docs/architecture.md, "Timing error"). Every exchange of a message out and its answer back places theta in
// [t3 - t4, t2 - t1]: t1 the agent's send and t4 the answer's arrival (agent clock), t2 the coordinator's receipt
// and t3 (>= t2) a coordinator instant no later than the answer left (coordinator clock). A step's exchange is its
// announce and release (t3 = t2 + held; Add), a heartbeat's is the heartbeat and its echo (Exchange). The offset
// drifts by at most drift_ppm of the time elapsed (two steady clocks, NTP's slew included: kDriftPpm; 0 when both
// sides read one machine's CLOCK_MONOTONIC, a single clock for every process of one boot, which a time namespace
// only shifts), so an interval measured `age` ago is widened by drift_ppm x age. The window intersects the intervals
// of the last kSteps exchanges and of two anchors, the exchanges with the highest lower end and the lowest upper end
// seen (widened to now, each is replaced by a newer exchange that is tighter now): the min-RTT filter of NTP, which
// with no drift keeps the fastest exchange of each direction for the whole session. A step's announce latency is
// u = t2 - t1 - theta <= (t2 - t1) - lo, lo the intersection's lower end: the bound Add() returns, never above the
// step's own ErrorBound (the step's interval is in the intersection). A release without announce_received_ns gets
// the step's own ErrorBound; an empty intersection (a drift beyond the allowance) restarts the window at the
// exchange that emptied it.
// When both sides read one clock (ClockRelation::kSame: one boot, one time namespace), the offset is known exactly:
// Exact(0) is a window that places every end at its own instant (an interval of width 0) and ignores exchanges.
// Thread-safety: none (its owner's lock guards it; agent/step_barrier.h ClockSync).
class OffsetWindow {
 public:
  static constexpr int kSteps = 16;
  static constexpr int64_t kDriftPpm = 200;

  explicit OffsetWindow(int64_t drift_ppm = kDriftPpm) : drift_ppm_(std::max<int64_t>(0, drift_ppm)) {}
  // A window that knows the offset: `theta_ns` exactly.
  static OffsetWindow Exact(int64_t theta_ns) {
    OffsetWindow w(0);
    w.exact_ = theta_ns;
    return w;
  }
  int64_t drift_ppm() const { return drift_ppm_; }
  bool exact() const { return exact_.has_value(); }

  // Records this step's exchange (`received_ns`: the release's arrival, agent clock) and returns its bound, ns (with
  // an exact offset: the announce's latency itself).
  int64_t Add(const AgentStep& s, const Release& r, int64_t received_ns) {
    if (r.announce_received_ns == 0) return ErrorBound(s, r, received_ns);
    const int64_t t2 = r.announce_received_ns;
    if (exact_) return std::max<int64_t>(0, t2 - s.announced_ns - *exact_);
    const Interval now{t2 + std::max<int64_t>(0, r.held_ns) - received_ns, t2 - s.announced_ns, s.announced_ns};
    const EndInterval o = Record(now, received_ns);
    return std::max<int64_t>(0, now.hi - o.lo_ns);
  }
  // Records an exchange that is not a step's (a heartbeat and its echo): t1, t4 agent clock, t2 <= t3 coordinator
  // clock. An exchange whose answer came before its message left (t4 < t1), or that was held longer than its round
  // trip, cannot be a true one and is ignored.
  void Exchange(int64_t t1, int64_t t2, int64_t t3, int64_t t4) {
    if (exact_ || t4 < t1 || t3 < t2 || t3 - t2 > t4 - t1) return;
    Record(Interval{t3 - t4, t2 - t1, t1}, t4);
  }

  // The offset's interval at `at_ns` (agent clock) from the exchanges recorded, each widened by its drift to `at_ns`;
  // nullopt before the first exchange (or when they disagree). Placing a compute end E (agent clock) in the
  // coordinator's clock: [E + lo_ns, E + hi_ns].
  std::optional<EndInterval> Offset(int64_t at_ns) const {
    if (exact_) return EndInterval{*exact_, *exact_};
    if (n_ == 0) return std::nullopt;
    const EndInterval o = Intersect(at_ns);
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
  int64_t Drift(const Interval& i, int64_t at_ns) const {
    if (drift_ppm_ == 0) return 0;
    return (std::max<int64_t>(0, at_ns - i.sent) * drift_ppm_ + 999'999) / 1'000'000;
  }
  // The intersection of the ring and the anchors, each widened to `at_ns` (lo > hi: they disagree).
  EndInterval Intersect(int64_t at_ns) const {
    EndInterval o{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    auto cut = [&](const Interval& i) {
      const int64_t d = Drift(i, at_ns);
      o.lo_ns = std::max(o.lo_ns, i.lo - d);
      o.hi_ns = std::min(o.hi_ns, i.hi + d);
    };
    for (int k = 0; k < n_; ++k) cut(ring_[static_cast<size_t>(k)]);
    cut(best_lo_);
    cut(best_hi_);
    return o;
  }
  // Adds `now` (its answer arrived at `at_ns`) and returns the intersection at `at_ns`.
  EndInterval Record(const Interval& now, int64_t at_ns) {
    if (n_ == 0) best_lo_ = best_hi_ = now;
    if (now.lo >= best_lo_.lo - Drift(best_lo_, now.sent)) best_lo_ = now;
    if (now.hi <= best_hi_.hi + Drift(best_hi_, now.sent)) best_hi_ = now;
    ring_[static_cast<size_t>(next_)] = now;
    next_ = (next_ + 1) % kSteps;
    n_ = std::min(n_ + 1, kSteps);
    EndInterval o = Intersect(at_ns);
    o.lo_ns = std::max(o.lo_ns, now.lo);  // `now` holds at its own answer's arrival unwidened
    o.hi_ns = std::min(o.hi_ns, now.hi);
    if (o.lo_ns > o.hi_ns) {  // the offset moved more than the allowance: keep only this exchange
      ring_[0] = best_lo_ = best_hi_ = now;
      n_ = 1;
      next_ = 1 % kSteps;
      o = {now.lo, now.hi};
    }
    return o;
  }

  int64_t drift_ppm_;
  std::optional<int64_t> exact_;  // the offset, when known exactly
  std::array<Interval, kSteps> ring_{};
  Interval best_lo_, best_hi_;  // the anchors (valid once n_ > 0)
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

// CLOCK_MONOTONIC in ns (base/steady_ns.h): one clock for every process of one machine, so the hops of the agents
// and the coordinator line up.
using ::dlio::SteadyNs;
// Which CLOCK_MONOTONIC SteadyNs() reads: "<boot id>/<time namespace>" (/proc/sys/kernel/random/boot_id: every
// process of one boot reads one clock; /proc/self/ns/time: a time namespace shifts it by a constant; "-" on a kernel
// without them), or DLIO_CLOCK_DOMAIN when set (tests: agents as if on another machine); empty when the boot id
// cannot be read. Read once per process.
std::string ClockDomain();
// How the steady clocks of two processes relate, from their ClockDomain()s: one clock (offset exactly 0), one boot
// in two time namespaces (a constant offset: no drift), or unrelated (an empty domain is unrelated to any).
enum class ClockRelation { kUnrelated, kSameBoot, kSame };
ClockRelation RelateClocks(std::string_view a, std::string_view b);
// True when the environment variable DLIO_BARRIER_HOPS named a folder at the first call (read once per process).
bool HopsOn();
// When HopsOn(): appends "<hop> <step> <ns> <who>" to <DLIO_BARRIER_HOPS>/<pid>.hops (one write(2), no allocation).
// A debug aid: each stamp costs a system call, so runs that measure the error itself leave the variable unset.
void Hop(std::string_view hop, uint64_t step, int64_t ns, std::string_view who = {});

}  // namespace dlio::barrier_timing
