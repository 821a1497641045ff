// IoStats: per-thread I/O counters and latency histogram, the only thing the read hot path touches.
//
// Contract: each loader/generator thread owns one IoStats and calls Add*() with no lock and no allocation
// (plain relaxed atomics for counters so a scrape can read them without tearing; the histogram is guarded by a
// tiny per-thread spinlock that only the owner and the rare snapshot take, so it is never contended on the hot
// path). Exporters and phase-end aggregation call Snapshot() and merge the copies (IoSnapshot::operator+=).
#pragma once

#include <atomic>
#include <cstdint>

#include "results/latency_histogram.h"
#include "results/trace_buffer.h"

namespace dlio {

struct IoSnapshot {
  uint64_t bytes = 0;     // bytes returned by read (or passed to write) calls
  uint64_t ops = 0;       // read (or write) calls
  uint64_t samples = 0;   // samples completed
  uint64_t files = 0;     // files opened (read) or completed (write)
  LatencyHistogram latency;
  IoSnapshot& operator+=(const IoSnapshot& o);
};

class IoStats {
 public:
  // One read/write call of `bytes` that took `ns`.
  void AddOp(uint64_t bytes, uint64_t ns) {
    if (trace_ != nullptr) {
      trace_->Record(TraceKind::kRead, SteadyNs() - static_cast<int64_t>(ns), ns, bytes);
    }
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
    ops_.fetch_add(1, std::memory_order_relaxed);
    Lock();
    latency_.Record(ns);
    Unlock();
  }
  void AddSamples(uint64_t n) { samples_.fetch_add(n, std::memory_order_relaxed); }
  void AddFile() {
    if (trace_ != nullptr) trace_->Record(TraceKind::kOpen, SteadyNs(), 0, 0);
    files_.fetch_add(1, std::memory_order_relaxed);
  }
  // --trace: every AddOp() becomes a read event and every AddFile() an open event in `t` (owned by the same thread
  // as this IoStats; null = not tracing, the default).
  void set_trace(TraceBuffer* t) { trace_ = t; }

  IoSnapshot Snapshot() const;
  void Reset();
  // Bytes so far (one relaxed load; the read-bandwidth cap charges its limiter from it).
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  void Lock() const {
    while (lock_.exchange(true, std::memory_order_acquire)) {
    }
  }
  void Unlock() const { lock_.store(false, std::memory_order_release); }

  std::atomic<uint64_t> bytes_{0}, ops_{0}, samples_{0}, files_{0};
  mutable std::atomic<bool> lock_{false};
  LatencyHistogram latency_;  // guarded by lock_
  TraceBuffer* trace_ = nullptr;
};

}  // namespace dlio
