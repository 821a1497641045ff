// BandwidthLimiter: the per-agent bandwidth caps (dlio_ext.read_bandwidth_limit, shared by every loader thread of
// the agent; dlio_ext.checkpoint_bandwidth_limit, shared by its ranks' checkpoint saves and loads), an atomic token
// bucket.
//
// Contract:
//  - Acquire(bytes) is called by a reader thread *after* it read `bytes`; it sleeps as long as needed so that the
//    bytes acquired by all threads together never run ahead of rate x elapsed time by more than the burst
//    (kBurst of the rate). The cap is an average over any window longer than the burst; short windows may exceed
//    it by one burst.
//  - The algorithm is GCRA (the "virtual scheduling" form of a token bucket): one atomic "theoretical arrival time"
//    advanced by bytes / rate with a compare-and-swap; no mutex, no allocation. Idle time does not accumulate
//    credit beyond the burst.
//  - A cancel wakes the sleep: given the job's cancel flag, Acquire() sleeps in base/sleep.h slices (50 ms) and
//    returns once the flag is set, so a cap of 1 MiB/s on a 64 MiB chunk (a minute's sleep) never holds a
//    cancelled job's agent past the coordinator's 2 s stop grace; the caller checks the flag and stops.
//  - The arithmetic is bounded: the rate is taken in [kMinRate, kMaxRate] (1 B/s .. 1 PB/s; the job keys refuse
//    anything else but 0, which means no limiter at all), one Acquire() costs at most kMaxCostNs, and the schedule
//    saturates instead of wrapping, so no rate or byte count makes a wait negative (which would mean "no cap").
//  - Uncapped is zero cost: the loader holds a null pointer and checks it (no limiter object exists).
//  - Time is injected (Options::now_ns / sleep_ns) so the unit test runs on a fake clock.
// Units: rate in bytes per second; clock values in nanoseconds of the steady clock.
// Thread-safety: Acquire() from any number of threads.
// Usage:
//   BandwidthLimiter::Options o;
//   o.bytes_per_second = 100 << 20;
//   auto lim = std::make_shared<BandwidthLimiter>(o);
//   ... after each read of n bytes: if (lim) lim->Acquire(n);
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace dlio {

class BandwidthLimiter {
 public:
  // Burst allowance: 20 ms of the rate. Long enough that a reader is not put to sleep for every small read (a
  // sleep shorter than ~0.1 ms mostly measures the scheduler), short enough that a 1 s trial sees the cap within
  // ~2 %.
  static constexpr int64_t kBurstNs = 20'000'000;
  // The rates the limiter works with (bytes/s); a rate outside is taken as the nearest bound. 1 B/s: the slowest
  // cap a job can set; 1e15 (1 PB/s): the fastest (job/workload_spec.h kMaxBandwidth).
  static constexpr double kMinRate = 1;
  static constexpr double kMaxRate = 1e15;
  // The most one Acquire() adds to the schedule: 2^60 ns (36 years), far beyond any job, far below int64's end, so
  // the sums of the schedule cannot wrap.
  static constexpr int64_t kMaxCostNs = int64_t{1} << 60;

  struct Options {
    double bytes_per_second = 0;               // in [kMinRate, kMaxRate]; outside, the nearest bound
    std::function<int64_t()> now_ns;           // steady clock; default std::chrono::steady_clock
    std::function<void(int64_t)> sleep_ns;     // default std::this_thread::sleep_for
  };
  explicit BandwidthLimiter(Options o);

  // Accounts `bytes` just read (or written); sleeps until they fit under the cap, or until `cancel` (may be null)
  // is set (base/sleep.h: a cancelled job's reader or checkpoint never sleeps out a long wait). Returns the
  // nanoseconds it asked to sleep. An injected Options::sleep_ns is called with the whole wait (tests).
  int64_t Acquire(uint64_t bytes, const std::atomic<bool>* cancel = nullptr);
  double bytes_per_second() const { return rate_; }

 private:
  int64_t Now() const;
  const double rate_;
  const double ns_per_byte_;
  Options opt_;
  std::atomic<int64_t> tat_ns_{0};  // theoretical arrival time of the next byte (steady clock ns); 0 = never used
};

// Parses a rate: a plain number of bytes per second (123456), or a number with a unit: B, KB/MB/GB/TB (powers of
// 1000) or KiB/MiB/GiB/TiB (powers of 1024), optionally followed by "/s" ("200MiB/s", "1.5GB"). 0 = no cap.
// Errors name what is allowed.
absl::StatusOr<double> ParseByteRate(const std::string& text);

}  // namespace dlio
