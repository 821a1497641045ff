// TraceBuffer: a per-thread, preallocated, bounded buffer of trace events (open, read, wait, compute, barrier,
// checkpoint) for `--trace FILE` (Chrome trace-event JSON, written by the coordinator: coordinator/trace_writer.h).
//
// Contract:
//  - One TraceBuffer belongs to one thread (a loader thread or a rank's step thread) while a phase runs; Record()
//    takes no lock, allocates nothing and costs a store of 32 bytes. When the buffer is full, further events are
//    counted in dropped() and not kept (the first `capacity` events of the phase survive: an explicit cap, so an
//    agent's trace memory is capacity x 32 bytes per thread whatever the run length).
//  - Tracing off costs one branch where an event would be recorded (IoStats::AddOp/AddFile test a null pointer).
//  - Times: start_ns on the steady clock (SteadyNs, CLOCK_MONOTONIC); Pack() converts them to Unix-epoch
//    nanoseconds with one offset taken at pack time, so agents on different hosts line up as well as their
//    system clocks do.
//  - Reading (Pack, size) only after the owning thread finished the phase (the caller joins the threads first).
// Wire form (RankResult.trace_events): Pack() concatenates PackedTraceEvent records, little-endian, 32 bytes each.
#pragma once

#include <time.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/steady_ns.h"

namespace dlio {

enum class TraceKind : uint32_t {
  kOpen = 1,             // a data file opened (instant event: open() is not timed separately)
  kRead = 2,             // one read syscall (or io_uring request) on a data file; bytes = bytes returned
  kWait = 3,             // the step thread waiting for its next batch (DLIO's "load" time)
  kCompute = 4,          // the emulated accelerator's compute sleep
  kBarrier = 5,          // the step barrier (local ranks, then the fleet)
  kCheckpointWrite = 6,  // one rank's checkpoint save (bytes = its files' size), on the rank's step track
  kCheckpointRead = 7,   // one rank's checkpoint load
};
const char* TraceKindName(TraceKind k);

// Events kept per thread and phase unless dlio_ext.trace_events_per_thread says otherwise: 65536 x 32 B = 2 MiB
// per thread, enough for a 1000-step epoch with 60 reads per step on each loader thread.
inline constexpr int64_t kDefaultTraceEventsPerThread = 65536;

// tid of a track inside an agent (Chrome trace: pid = agent, tid = track): the rank's step thread is rank * 1000,
// its loader thread t is rank * 1000 + 1 + t.
inline uint32_t StepTrackId(int rank) { return static_cast<uint32_t>(rank) * 1000u; }
inline uint32_t LoaderTrackId(int rank, int thread) { return static_cast<uint32_t>(rank) * 1000u + 1u + thread; }

struct PackedTraceEvent {
  int64_t start_ns;  // steady clock in a TraceBuffer; Unix epoch after Pack()
  uint64_t dur_ns;
  uint64_t bytes;
  uint32_t tid;
  uint32_t kind;     // TraceKind
};
static_assert(sizeof(PackedTraceEvent) == 32, "wire form is 32 bytes per event");

class TraceBuffer {
 public:
  // Out of line (trace_buffer.cc): the allocation stays in one translation unit, away from code that replaces the
  // allocation functions (bench/alloc_bench.cc, where GCC's -Wmismatched-new-delete would fire on inlined new[]).
  TraceBuffer(uint32_t tid, int64_t capacity);
  ~TraceBuffer();
  TraceBuffer(const TraceBuffer&) = delete;
  TraceBuffer& operator=(const TraceBuffer&) = delete;
  // The same, made out of line (for the same reason).
  static std::unique_ptr<TraceBuffer> Make(uint32_t tid, int64_t capacity);

  void Record(TraceKind k, int64_t start_ns, uint64_t dur_ns, uint64_t bytes) {
    if (n_ < cap_) {
      events_[n_++] = PackedTraceEvent{start_ns, dur_ns, bytes, tid_, static_cast<uint32_t>(k)};
    } else {
      ++dropped_;
    }
  }
  // Forgets the events of the last phase (the memory stays allocated).
  void Clear() {
    n_ = 0;
    dropped_ = 0;
  }
  void set_tid(uint32_t tid) { tid_ = tid; }
  size_t size() const { return n_; }
  uint64_t dropped() const { return dropped_; }
  const PackedTraceEvent* events() const { return events_; }

  // Appends this buffer's events to `out` in the wire form, times moved to the Unix epoch by `offset_ns`
  // (= Unix-epoch ns - SteadyNs() at the same instant, see TraceClockOffsetNs()).
  void Pack(int64_t offset_ns, std::string* out) const {
    const size_t at = out->size();
    out->resize(at + n_ * sizeof(PackedTraceEvent));
    for (size_t i = 0; i < n_; ++i) {
      PackedTraceEvent e = events_[i];
      e.start_ns += offset_ns;
      std::memcpy(out->data() + at + i * sizeof(PackedTraceEvent), &e, sizeof(e));
    }
  }

 private:
  uint32_t tid_;
  size_t cap_;
  PackedTraceEvent* events_;  // cap_ entries, owned
  size_t n_ = 0;
  uint64_t dropped_ = 0;
};

// Unix-epoch ns minus SteadyNs(), read now.
inline int64_t TraceClockOffsetNs() {
  timespec real;
  const int64_t mono = SteadyNs();
  clock_gettime(CLOCK_REALTIME, &real);
  return static_cast<int64_t>(real.tv_sec) * 1000000000 + real.tv_nsec - mono;
}

// Splits a wire-form string back into events (a trailing partial record is ignored).
inline std::vector<PackedTraceEvent> UnpackTraceEvents(const std::string& packed) {
  std::vector<PackedTraceEvent> v(packed.size() / sizeof(PackedTraceEvent));
  if (!v.empty()) std::memcpy(v.data(), packed.data(), v.size() * sizeof(PackedTraceEvent));
  return v;
}

inline const char* TraceKindName(TraceKind k) {
  switch (k) {
    case TraceKind::kOpen: return "open";
    case TraceKind::kRead: return "read";
    case TraceKind::kWait: return "wait";
    case TraceKind::kCompute: return "compute";
    case TraceKind::kBarrier: return "barrier";
    case TraceKind::kCheckpointWrite: return "checkpoint_write";
    case TraceKind::kCheckpointRead: return "checkpoint_read";
  }
  return "unknown";
}

}  // namespace dlio
