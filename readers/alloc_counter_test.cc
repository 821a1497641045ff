// Counting allocator for dlio::testing::AllocationCounter (test_util.h), for the whole formats_test binary. In its
// own file: GCC's -Wmismatched-new-delete fires wherever a test's inlined std::allocator code meets a replaced
// allocation function in one translation unit.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "readers/test_util.h"

// Counting allocator for dlio::testing::AllocationCounter (test_util.h): the malloc family is interposed (glibc's
// __libc_* entry points do the work), so operator new (libstdc++ calls malloc), aligned_alloc (AlignedBuffer) and
// C libraries are all counted.
namespace {
thread_local bool g_counting = false;
thread_local uint64_t g_allocations = 0;
thread_local uint64_t g_cxx_allocations = 0;
inline void Count() {
  if (g_counting) ++g_allocations;
}
}  // namespace

dlio::testing::AllocationCounter::AllocationCounter() {
  g_allocations = 0;
  g_cxx_allocations = 0;
  g_counting = true;
}
dlio::testing::AllocationCounter::~AllocationCounter() { g_counting = false; }
uint64_t dlio::testing::AllocationCounter::count() const { return g_allocations; }
uint64_t dlio::testing::AllocationCounter::cxx_count() const { return g_cxx_allocations; }

// operator new goes to malloc (counted there too); this counts it apart.
void* operator new(std::size_t n) {
  if (g_counting) ++g_cxx_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

extern "C" {
void* __libc_malloc(size_t n);
void* __libc_calloc(size_t n, size_t m);
void* __libc_realloc(void* p, size_t n);
void* __libc_memalign(size_t align, size_t n);

void* malloc(size_t n) noexcept {
  Count();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) noexcept {
  Count();
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) noexcept {
  Count();
  return __libc_realloc(p, n);
}
void* memalign(size_t align, size_t n) noexcept {
  Count();
  return __libc_memalign(align, n);
}
void* aligned_alloc(size_t align, size_t n) noexcept {
  Count();
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, size_t align, size_t n) noexcept {
  Count();
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}
