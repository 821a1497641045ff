// Counting allocator for tests and benchmarks: one interposition of the malloc family and operator new, shared by
// the readers' unit tests (formats_test) and dlio-bench-alloc. Link `dlio::alloc_counter` ONLY into a test or
// benchmark executable: its object replaces malloc, calloc, realloc, memalign, aligned_alloc, posix_memalign and
// operator new/delete for the whole process (glibc's __libc_* entry points do the work; the hooks only count).
//
// Every call is counted in exactly one class:
//   cxx      operator new / new[] (our code, absl and libstdc++ allocate through it; its own malloc is not counted
//            again)
//   aligned  aligned_alloc (AlignedBuffer in storage/storage.cc is its only caller on the read path)
//   library  every other malloc-family call (C libraries: libhdf5, libjpeg, libpng, libcurl)
//
// Thread-safety: the counters are updated from any thread. AllocationCounter counts the calls made by the thread
// that constructed it (thread-local, no atomics); GlobalAllocationCounter counts every thread's calls (relaxed
// atomics) while it is alive. At most one GlobalAllocationCounter at a time.
#pragma once

#include <cstdint>

namespace dlio::testing {

struct AllocationCounts {
  uint64_t cxx = 0;
  uint64_t aligned = 0;
  uint64_t library = 0;
  // Every allocation, C libraries' included.
  uint64_t total() const { return cxx + aligned + library; }
  // The allocations our code asks for (operator new and our aligned_alloc).
  uint64_t ours() const { return cxx + aligned; }
};

// Allocations made by this thread while the counter is alive.
class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  AllocationCounts counts() const;
  uint64_t count() const { return counts().total(); }
  uint64_t cxx_count() const { return counts().cxx; }
};

// Allocations made by every thread of the process while the counter is alive.
class GlobalAllocationCounter {
 public:
  GlobalAllocationCounter();
  ~GlobalAllocationCounter();
  GlobalAllocationCounter(const GlobalAllocationCounter&) = delete;
  GlobalAllocationCounter& operator=(const GlobalAllocationCounter&) = delete;
  AllocationCounts counts() const;
};

}  // namespace dlio::testing
