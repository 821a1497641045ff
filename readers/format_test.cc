#include "readers/format.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cerrno>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "readers/io_util.h"
#include "readers/npz.h"
#include "readers/test_util.h"
#include "readers/tfrecord.h"

namespace dlio {
namespace {

FormatOptions Small() {
  FormatOptions o;
  o.samples_per_file = 3;
  o.sample_dims = {8, 8};
  return o;
}

TEST(MakeFormat, KnownNamesAndExtensions) {
  for (const char* name : {"npz", "hdf5", "tfrecord"}) {
    auto f = MakeFormat(name, Small());
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_STREQ((*f)->name(), name);
    EXPECT_STREQ((*f)->extension(), name);
    EXPECT_EQ((*f)->streaming(), std::string(name) == "tfrecord");
    EXPECT_NE((*f)->NewSampleReader(), nullptr);
    EXPECT_EQ((*f)->NewStreamReader() != nullptr, (*f)->streaming());
  }
}

TEST(MakeFormat, UnknownNameListsAllowed) {
  auto f = MakeFormat("x", Small());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message(), "dataset.format: unknown format 'x' (allowed: npz, hdf5, tfrecord)");
}

TEST(MakeFormat, RejectsOptionsItCannotHonour) {
  auto rejected = [](const std::string& name, FormatOptions o) {
    auto f = MakeFormat(name, o);
    return !f.ok() && f.status().code() == absl::StatusCode::kInvalidArgument;
  };
  FormatOptions o = Small();
  o.samples_per_file = 0;
  EXPECT_TRUE(rejected("npz", o));
  o = Small();
  o.sample_dims = {};
  EXPECT_TRUE(rejected("tfrecord", o));
  o.sample_dims = {8, 0};
  EXPECT_TRUE(rejected("hdf5", o));
  o = Small();
  o.transfer_size = 0;
  EXPECT_TRUE(rejected("tfrecord", o));
  o = Small();
  o.compression = "lzf";  // an h5py-only filter, not in libhdf5
  EXPECT_TRUE(rejected("hdf5", o));
  EXPECT_FALSE(rejected("npz", o));  // DLIO ignores compression for npz
  o = Small();
  o.hdf5_chunk_dims = {1, 8};  // wrong rank
  EXPECT_TRUE(rejected("hdf5", o));
  o.hdf5_chunk_dims = {1, 8, 9};  // larger than the sample
  EXPECT_TRUE(rejected("hdf5", o));
  o.hdf5_chunk_dims = {4, 8, 8};  // larger than samples_per_file
  EXPECT_TRUE(rejected("hdf5", o));
  o.hdf5_chunk_dims = {1, 4, 8};
  EXPECT_FALSE(rejected("hdf5", o));
}

TEST(DataFileName, PadsIndexToDigitsOfTotal) {
  EXPECT_EQ(DataFileName("img", 0, 4, "npz"), "img_0_of_4.npz");
  EXPECT_EQ(DataFileName("img", 0, 12, "hdf5"), "img_00_of_12.hdf5");
  EXPECT_EQ(DataFileName("img", 11, 12, "hdf5"), "img_11_of_12.hdf5");
  EXPECT_EQ(DataFileName("img", 7, 1024, "tfrecord"), "img_0007_of_1024.tfrecord");
  EXPECT_EQ(DataFileName("img", 0, 10, "npz"), "img_00_of_10.npz");  // len(str(10)) == 2
}

TEST(DataFileRelPath, RoundRobinSubfolders) {
  EXPECT_EQ(DataFileRelPath("train", "img", 3, 4, 0, "npz"), "train/img_3_of_4.npz");
  EXPECT_EQ(DataFileRelPath("train", "img", 3, 4, 1, "npz"), "train/img_3_of_4.npz");  // 1 subfolder = none
  EXPECT_EQ(DataFileRelPath("train", "img", 5, 12, 3, "npz"), "train/2/img_05_of_12.npz");
  EXPECT_EQ(DataFileRelPath("valid", "img", 11, 100, 10, "hdf5"), "valid/01/img_011_of_100.hdf5");
}

TEST(NpyHeader, MatchesNumpyLayout) {
  // DLIO's 64x64x2 files (MANIFEST: npy_header_len=128) and numpy 1.24's text for it.
  const std::string h = NpyHeader("|u1", {64, 64, 2});
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(h[8]) | (static_cast<unsigned char>(h[9]) << 8), 118);
  EXPECT_EQ(h.substr(10, 64), "{'descr': '|u1', 'fortran_order': False, 'shape': (64, 64, 2), }");
  EXPECT_EQ(h.back(), '\n');
  EXPECT_EQ(NpyHeader("<i8", {2}).size(), 128u);
  EXPECT_NE(NpyHeader("<i8", {2}).find("'shape': (2,), }"), std::string::npos);
  for (int64_t d : {1, 9, 100, 4096, 123456789}) EXPECT_EQ(NpyHeader("|u1", {d, d, 7}).size() % 64, 0u) << d;
}

// zlib_crc32.cc replaces zlib's crc32() for the process (libzip's member CRCs); it must give libz.so's own results,
// alone and chained.
TEST(ZlibCrc32, IsalBehindZlibsApiGivesZlibsResults) {
  void* z = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(z, nullptr) << ::dlerror();
  using Fn = uLong (*)(uLong, const Bytef*, uInt);
  auto zlib_crc32 = reinterpret_cast<Fn>(::dlsym(z, "crc32"));
  ASSERT_NE(zlib_crc32, nullptr);
  ASSERT_NE(reinterpret_cast<void*>(zlib_crc32), reinterpret_cast<void*>(&crc32)) << "crc32 is not interposed";
  std::vector<uint8_t> buf(100003);
  internal::Rng(5).Fill(buf.data(), buf.size());
  for (uInt len : {0u, 1u, 7u, 64u, 4095u, 100003u}) {
    EXPECT_EQ(crc32(0, buf.data(), len), zlib_crc32(0, buf.data(), len)) << len;
  }
  EXPECT_EQ(crc32(crc32(0, buf.data(), 333), buf.data() + 333, 999), zlib_crc32(0, buf.data(), 1332));
  EXPECT_EQ(crc32_z(0, buf.data(), buf.size()), zlib_crc32(0, buf.data(), static_cast<uInt>(buf.size())));
  EXPECT_EQ(crc32(0, nullptr, 0), zlib_crc32(0, nullptr, 0));
  EXPECT_EQ(crc32(0, reinterpret_cast<const Bytef*>("123456789"), 9), 0xCBF43926u);  // the CRC-32 check value
  ::dlclose(z);
}

TEST(Crc32c, KnownVector) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(Crc32c("", 0), 0u);
}

}  // namespace
}  // namespace dlio

// Counting allocator for dlio::testing::AllocationCounter (test_util.h): the malloc family is interposed (glibc's
// __libc_* entry points do the work), so operator new (libstdc++ calls malloc), aligned_alloc (AlignedBuffer) and
// C libraries are all counted.
namespace {
thread_local bool g_counting = false;
thread_local uint64_t g_allocations = 0;
inline void Count() {
  if (g_counting) ++g_allocations;
}
}  // namespace

dlio::testing::AllocationCounter::AllocationCounter() {
  g_allocations = 0;
  g_counting = true;
}
dlio::testing::AllocationCounter::~AllocationCounter() { g_counting = false; }
uint64_t dlio::testing::AllocationCounter::count() const { return g_allocations; }

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
