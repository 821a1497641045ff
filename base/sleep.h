// Sleeps that a cancel cuts short: emulated compute (computation_time, eval_time), emulated preprocessing and the
// bandwidth cap all sleep through SleepFor(), so a cancelled job's agent is free within a slice, whatever the
// configured time (a 20 s compute step, a 1 MiB/s cap on a large sample).
//
// The sleep runs to an absolute steady-clock deadline in slices of at most kCancelSlice, so slicing adds no drift
// (only the last wake-up's usual overshoot, as one sleep_for would have), and the flag is read once per slice.
// 50 ms: a cancel is honoured well within the coordinator's 2 s stop grace, at 20 wake-ups per second of sleep.
// Durations are clamped to [0, kMaxSleepSeconds] (a day; the workload keys allow no more), so no value overflows
// the clock.
// Thread-safety: the flag is read with relaxed loads; any number of threads may sleep on one flag.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace dlio {

inline constexpr std::chrono::milliseconds kCancelSlice{50};
inline constexpr double kMaxSleepSeconds = 86400;

// Sleeps `seconds`; returns false when `cancel` (may be null) was set before the time was up.
inline bool SleepFor(double seconds, const std::atomic<bool>* cancel) {
  using Clock = std::chrono::steady_clock;
  if (!(seconds > 0)) return cancel == nullptr || !cancel->load(std::memory_order_relaxed);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::min(seconds, kMaxSleepSeconds)));
  for (;;) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return false;
    const auto now = Clock::now();
    if (now >= deadline) return true;
    std::this_thread::sleep_until(std::min<Clock::time_point>(deadline, now + kCancelSlice));
  }
}

}  // namespace dlio
