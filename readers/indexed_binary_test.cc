#include "readers/indexed_binary.h"

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

std::vector<uint64_t> Longs(const std::string& path) {
  const std::string b = Slurp(path);
  std::vector<uint64_t> v(b.size() / 8);
  std::memcpy(v.data(), b.data(), v.size() * 8);
  return v;
}

std::unique_ptr<Format> Indexed(const std::string& name, int64_t nspf, std::vector<int64_t> dims,
                                const std::string& type = "uint8") {
  FormatOptions o;
  o.samples_per_file = nspf;
  o.sample_dims = std::move(dims);
  o.element_type = type;
  auto f = MakeFormat(name, o);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

class IndexedBinary : public ::testing::TestWithParam<std::string> {};

TEST_P(IndexedBinary, RawSamplesAndUint64IndexFilesRoundTrip) {
  const std::string name = GetParam();
  TempDir dir;
  const int64_t nspf = 4;
  auto f = Indexed(name, nspf, {10, 3}, "float32");
  const std::string path = dir.File("img_0_of_1." + name);
  IoStats gen;
  ASSERT_TRUE(f->Generate(path, 6, gen).ok());
  EXPECT_EQ(f->CompanionPaths(path), (std::vector<std::string>{path + ".off.idx", path + ".sz.idx"}));
  const uint64_t sample = 10 * 3 * 4;
  const std::string data = Slurp(path);
  ASSERT_EQ(data.size(), nspf * sample);
  EXPECT_EQ(Longs(path + ".off.idx"), (std::vector<uint64_t>{0, sample, 2 * sample, 3 * sample}));
  EXPECT_EQ(Longs(path + ".sz.idx"), std::vector<uint64_t>(nspf, sample));
  EXPECT_EQ(gen.Snapshot().bytes, data.size() + 2 * 8 * nspf) << "index files are accounted too";
  EXPECT_EQ(gen.Snapshot().files, 3u);
  EXPECT_EQ(gen.Snapshot().samples, static_cast<uint64_t>(nspf));

  auto r = f->NewSampleReader();
  IoStats st;
  for (uint32_t i = 0; i < nspf; ++i) {
    IoSnapshot before = st.Snapshot();
    auto n = r->ReadSample(path, i, st);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, sample);
    IoSnapshot after = st.Snapshot();
    // The first read loads both index files (one whole-file read each); afterwards exactly the sample is read.
    const uint64_t index_bytes = i == 0 ? 2 * 8 * nspf : 0;
    EXPECT_EQ(after.bytes - before.bytes, sample + index_bytes) << name << " sample " << i;
    EXPECT_EQ(after.ops - before.ops, 1u + (i == 0 ? 2u : 0u)) << name << " sample " << i;
    EXPECT_EQ(after.samples - before.samples, 1u);
    if (name == "indexed_binary") {
      EXPECT_EQ(after.files - before.files, 1u + (i == 0 ? 2u : 0u)) << "on_demand: the data file per sample";
    } else {
      EXPECT_EQ(after.files - before.files, i == 0 ? 3u : 0u) << "mmap: mapped once per file";
    }
    EXPECT_EQ(r->last_sample(), data.substr(i * sample, sample)) << "sample " << i;
  }
  auto oob = r->ReadSample(path, static_cast<uint32_t>(nspf), st);
  EXPECT_EQ(oob.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(std::string(oob.status().message()).find(path), std::string::npos);
}

TEST_P(IndexedBinary, ReadsDlioGeneratedFiles) {
  // DLIO's mmap_indexed_binary writes the same layout; the case holds .indexed_binary files.
  EXPECT_EQ(testing::ReadEveryDlioSample("indexed_binary", GetParam(),
                                         [](const testing::ManifestFile&, const testing::ManifestSample&) {
                                           return uint64_t{0};
                                         },
                                         "indexed_binary"),
            16);
}

TEST_P(IndexedBinary, NoHeapAllocationPerSampleOnceWarm) {
  TempDir dir;
  auto f = Indexed(GetParam(), 8, {16, 16});
  IoStats st;
  const std::string path = dir.File("a.bin");
  ASSERT_TRUE(f->Generate(path, 1, st).ok());
  auto r = f->NewSampleReader();
  ASSERT_TRUE(r->ReadSample(path, 0, st).ok());
  testing::AllocationCounter allocs;
  for (uint32_t i = 0; i < 8; ++i) ASSERT_TRUE(r->ReadSample(path, i, st).ok());
  EXPECT_EQ(allocs.count(), 0u);
}

TEST_P(IndexedBinary, BadIndexIsDataLossNamingTheFile) {
  TempDir dir;
  auto f = Indexed(GetParam(), 2, {4});
  IoStats st;
  const std::string path = dir.File("a.bin");
  ASSERT_TRUE(f->Generate(path, 1, st).ok());
  std::ofstream(path + ".sz.idx", std::ios::binary | std::ios::trunc).write("\x00\x00\x00\x00\x00\x00\x00\x01"
                                                                            "\x04\x00\x00\x00\x00\x00\x00\x00", 16);
  auto r = f->NewSampleReader();
  auto bad = r->ReadSample(path, 0, st);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_NE(std::string(bad.status().message()).find(path), std::string::npos);
  auto missing = f->NewSampleReader()->ReadSample(dir.File("none.bin"), 0, st);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Formats, IndexedBinary, ::testing::Values("indexed_binary", "mmap_indexed_binary"));

}  // namespace
}  // namespace dlio
