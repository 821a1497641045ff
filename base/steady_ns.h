// SteadyNs: CLOCK_MONOTONIC in nanoseconds, the one clock every process of one boot reads (libstdc++'s
// std::chrono::steady_clock reads it too). The step barrier's instants and hop stamps (base/barrier_timing.h) and the
// trace's event times (results/trace_buffer.h) read it here. Thread-safety: any thread; no allocation.
#pragma once

#include <time.h>

#include <cstdint>

namespace dlio {

inline int64_t SteadyNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace dlio
