// Counting operator new for dlio::testing::AllocationCounter (test_util.h), replaced for the whole formats_test
// binary. In its own file: GCC's -Wmismatched-new-delete fires wherever a test's inlined std::allocator code meets
// this malloc/free-based replacement in one translation unit.
#include <cstdint>
#include <cstdlib>
#include <new>

#include "readers/test_util.h"

// Counting operator new for dlio::testing::AllocationCounter (test_util.h).
namespace {
thread_local bool g_counting = false;
thread_local uint64_t g_allocations = 0;
}  // namespace

dlio::testing::AllocationCounter::AllocationCounter() {
  g_allocations = 0;
  g_counting = true;
}
dlio::testing::AllocationCounter::~AllocationCounter() { g_counting = false; }
uint64_t dlio::testing::AllocationCounter::count() const { return g_allocations; }

void* operator new(std::size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
