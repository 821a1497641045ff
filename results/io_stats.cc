#include "results/io_stats.h"

namespace dlio {

IoSnapshot& IoSnapshot::operator+=(const IoSnapshot& o) {
  bytes += o.bytes;
  ops += o.ops;
  samples += o.samples;
  files += o.files;
  latency += o.latency;
  return *this;
}

IoSnapshot IoStats::Snapshot() const {
  IoSnapshot s;
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.ops = ops_.load(std::memory_order_relaxed);
  s.samples = samples_.load(std::memory_order_relaxed);
  s.files = files_.load(std::memory_order_relaxed);
  Lock();
  s.latency = latency_;
  Unlock();
  return s;
}

void IoStats::Reset() {
  bytes_ = 0;
  ops_ = 0;
  samples_ = 0;
  files_ = 0;
  Lock();
  latency_.Reset();
  Unlock();
}

}  // namespace dlio
