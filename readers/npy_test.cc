#include "readers/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "readers/format.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using testing::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::unique_ptr<Format> Npy(int64_t nspf, std::vector<int64_t> dims, const std::string& type = "uint8") {
  FormatOptions o;
  o.samples_per_file = nspf;
  o.sample_dims = std::move(dims);
  o.element_type = type;
  auto f = MakeFormat("npy", o);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

TEST(Npy, RoundTripEverySampleWholeFilePerSample) {
  TempDir dir;
  const int64_t nspf = 3, d1 = 5, d2 = 7;  // not square: a transposed read would show
  auto f = Npy(nspf, {d1, d2}, "int16");
  const std::string path = dir.File("img_0_of_1.npy");
  IoStats gen;
  ASSERT_TRUE(f->Generate(path, 2, gen).ok());
  const std::string bytes = Slurp(path);
  const std::string hdr = NpyHeader("<i2", {d1, d2, nspf});
  ASSERT_EQ(bytes.size(), hdr.size() + d1 * d2 * nspf * 2);
  EXPECT_EQ(bytes.substr(0, hdr.size()), hdr);
  EXPECT_EQ(gen.Snapshot().bytes, bytes.size());
  EXPECT_EQ(gen.Snapshot().files, 1u);
  EXPECT_EQ(gen.Snapshot().samples, 3u);

  auto r = f->NewSampleReader();
  IoStats st;
  for (uint32_t i = 0; i < nspf; ++i) {
    IoSnapshot before = st.Snapshot();
    auto n = r->ReadSample(path, i, st);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, static_cast<uint64_t>(d1 * d2 * 2));
    IoSnapshot after = st.Snapshot();
    EXPECT_EQ(after.bytes - before.bytes, bytes.size()) << "DLIO's NPYReader loads the whole file per sample";
    EXPECT_EQ(after.ops - before.ops, 1u);
    EXPECT_EQ(after.files - before.files, 1u);
    EXPECT_EQ(after.samples - before.samples, 1u);
    std::string want;
    for (int64_t e = 0; e < d1 * d2; ++e) want += bytes.substr(hdr.size() + (e * nspf + i) * 2, 2);
    EXPECT_EQ(r->last_sample(), want) << "sample " << i;
  }
  EXPECT_EQ(r->ReadSample(path, 3, st).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(Npy, FloatSamplesAreNumbersInUnitInterval) {
  TempDir dir;
  for (const char* type : {"float16", "float32", "float64"}) {
    auto f = Npy(2, {16, 16}, type);
    IoStats st;
    const std::string path = dir.File(std::string(type) + ".npy");
    ASSERT_TRUE(f->Generate(path, 1, st).ok());
    const std::string bytes = Slurp(path);
    const size_t item = ElementSize(type);
    for (size_t off = 128; off < bytes.size(); off += item) {
      double v;
      if (item == 8) {
        std::memcpy(&v, bytes.data() + off, 8);
      } else if (item == 4) {
        float x;
        std::memcpy(&x, bytes.data() + off, 4);
        v = x;
      } else {
        uint16_t h;
        std::memcpy(&h, bytes.data() + off, 2);
        ASSERT_LT(h & 0x7C00, 0x3C00) << "binary16 below 1.0";
        v = 0;
      }
      ASSERT_TRUE(v >= 0 && v < 1) << type << " value " << v;
    }
  }
}

TEST(Npy, ReadsDlioGeneratedFiles) {
  EXPECT_EQ(testing::ReadEveryDlioSample("npy", "npy",
                                         [](const testing::ManifestFile& f, const testing::ManifestSample&) {
                                           return f.size;
                                         }),
            8);
  const std::string path = testing::DlioCase("npy") + "/train/img_0_of_4.npy";
  EXPECT_EQ(Slurp(path).substr(0, 128), NpyHeader("|u1", {64, 64, 2})) << "our header is DLIO's (numpy's)";
}

TEST(Npy, NoHeapAllocationPerSampleOnceWarm) {
  TempDir dir;
  auto f = Npy(4, {32, 32});
  IoStats st;
  const std::string path = dir.File("a.npy");
  ASSERT_TRUE(f->Generate(path, 1, st).ok());
  auto r = f->NewSampleReader();
  ASSERT_TRUE(r->ReadSample(path, 0, st).ok());
  testing::AllocationCounter allocs;
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(r->ReadSample(path, i, st).ok());
  EXPECT_EQ(allocs.count(), 0u);
}

TEST(Npy, ErrorsNameTheFile) {
  TempDir dir;
  auto r = Npy(1, {4})->NewSampleReader();
  IoStats st;
  auto missing = r->ReadSample(dir.File("nope.npy"), 0, st);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  const std::string junk = dir.File("junk.npy");
  std::ofstream(junk) << "not an npy file";
  auto bad = r->ReadSample(junk, 0, st);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(bad.status().message()).find(junk), std::string::npos);
  // A header that promises more data than the file holds.
  const std::string cut = dir.File("cut.npy");
  std::ofstream(cut, std::ios::binary) << NpyHeader("|u1", {64, 64, 2}) << std::string(100, 'x');
  auto short_read = r->ReadSample(cut, 1, st);
  EXPECT_EQ(short_read.status().code(), absl::StatusCode::kDataLoss) << short_read.status();
}

}  // namespace
}  // namespace dlio
