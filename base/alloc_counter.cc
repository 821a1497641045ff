// The one interposition of the malloc family and operator new (contract in alloc_counter.h). In its own translation
// unit: GCC's -Wmismatched-new-delete fires wherever inlined std::allocator code meets a replaced allocation
// function in one translation unit.
#include "base/alloc_counter.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>

namespace {

enum Class { kCxx, kAligned, kLibrary };

thread_local bool t_on = false;
thread_local uint64_t t_counts[3] = {0, 0, 0};
thread_local int t_in_new = 0;  // inside operator new: its malloc is the new's, counted once as cxx
std::atomic<bool> g_on{false};
std::atomic<uint64_t> g_counts[3];

inline void Count(Class c) {
  if (t_on) ++t_counts[c];
  if (g_on.load(std::memory_order_relaxed)) g_counts[c].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

namespace dlio::testing {

AllocationCounter::AllocationCounter() {
  for (uint64_t& c : t_counts) c = 0;
  t_on = true;
}
AllocationCounter::~AllocationCounter() { t_on = false; }
AllocationCounts AllocationCounter::counts() const { return {t_counts[kCxx], t_counts[kAligned], t_counts[kLibrary]}; }

GlobalAllocationCounter::GlobalAllocationCounter() {
  for (auto& c : g_counts) c.store(0);
  g_on = true;
}
GlobalAllocationCounter::~GlobalAllocationCounter() { g_on = false; }
AllocationCounts GlobalAllocationCounter::counts() const {
  return {g_counts[kCxx].load(), g_counts[kAligned].load(), g_counts[kLibrary].load()};
}

}  // namespace dlio::testing

extern "C" {
void* __libc_malloc(size_t n);
void* __libc_calloc(size_t n, size_t m);
void* __libc_realloc(void* p, size_t n);
void* __libc_memalign(size_t align, size_t n);

void* malloc(size_t n) noexcept {
  if (t_in_new == 0) Count(kLibrary);
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) noexcept {
  Count(kLibrary);
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) noexcept {
  Count(kLibrary);
  return __libc_realloc(p, n);
}
void* memalign(size_t align, size_t n) noexcept {
  Count(kLibrary);
  return __libc_memalign(align, n);
}
void* aligned_alloc(size_t align, size_t n) noexcept {
  Count(kAligned);
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, size_t align, size_t n) noexcept {
  Count(kLibrary);
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}

// operator new is malloc-backed here on purpose (to count it), so delete's free() matches it: GCC cannot see that.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  Count(kCxx);
  ++t_in_new;
  void* p = std::malloc(n == 0 ? 1 : n);
  --t_in_new;
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
