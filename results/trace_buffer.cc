#include "results/trace_buffer.h"

namespace dlio {

TraceBuffer::TraceBuffer(uint32_t tid, int64_t capacity)
    : tid_(tid), cap_(static_cast<size_t>(capacity > 0 ? capacity : 1)), events_(new PackedTraceEvent[cap_]) {}

TraceBuffer::~TraceBuffer() { delete[] events_; }

std::unique_ptr<TraceBuffer> TraceBuffer::Make(uint32_t tid, int64_t capacity) {
  return std::make_unique<TraceBuffer>(tid, capacity);
}

}  // namespace dlio
