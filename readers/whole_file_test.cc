// The whole-file formats (npz, npy, csv, jpeg, png) through every I/O engine, reader.read_type: memory, and csv
// gzip compression.
#include <zlib.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "readers/format.h"
#include "storage/storage.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using testing::TempDir;

std::unique_ptr<Format> Make(const std::string& name, int64_t nspf, IoEngine engine = IoEngine::kPosix,
                             bool memory = false, const std::string& compression = "none") {
  FormatOptions o;
  o.samples_per_file = nspf;
  o.sample_dims = {24, 24};
  o.io_engine = engine;
  o.read_in_memory = memory;
  o.compression = compression;
  auto f = MakeFormat(name, o);
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? std::move(*f) : nullptr;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct EngineCase {
  std::string format;
  IoEngine engine;
};

class WholeFileEngines : public ::testing::TestWithParam<EngineCase> {};

// Every engine delivers the same samples as posix and counts the file's bytes (odirect: the kernel returns only the
// file's bytes even though the request is rounded up).
TEST_P(WholeFileEngines, SameSamplesAndBytesAsPosix) {
  const EngineCase c = GetParam();
  TempDir dir;
  const int64_t nspf = c.format == "jpeg" || c.format == "png" ? 1 : 3;
  auto posix = Make(c.format, nspf);
  auto other = Make(c.format, nspf, c.engine);
  ASSERT_TRUE(posix && other);
  const std::string path = dir.File("img_0_of_1." + std::string(posix->extension()));
  IoStats gen;
  ASSERT_TRUE(posix->Generate(path, 5, gen).ok());
  auto a = posix->NewSampleReader();
  auto b = other->NewSampleReader();
  IoStats sa, sb;
  for (uint32_t i = 0; i < nspf; ++i) {
    absl::StatusOr<uint64_t> ra = a->ReadSample(path, i, sa);
    absl::StatusOr<uint64_t> rb = b->ReadSample(path, i, sb);
    ASSERT_TRUE(ra.ok()) << ra.status();
    ASSERT_TRUE(rb.ok()) << rb.status();
    EXPECT_EQ(*ra, *rb);
    EXPECT_EQ(a->last_sample(), b->last_sample()) << "sample " << i;
  }
  EXPECT_EQ(sb.Snapshot().bytes, sa.Snapshot().bytes);
  EXPECT_EQ(sb.Snapshot().bytes, static_cast<uint64_t>(nspf) * testing::FileSize(path));
  EXPECT_EQ(sb.Snapshot().files, static_cast<uint64_t>(nspf));
}

std::vector<EngineCase> EngineCases() {
  std::vector<EngineCase> v;
  for (const char* f : {"npy", "csv", "jpeg", "png", "npz"}) {
    for (IoEngine e : {IoEngine::kODirect, IoEngine::kIoUring, IoEngine::kMmap}) v.push_back({f, e});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(All, WholeFileEngines, ::testing::ValuesIn(EngineCases()),
                         [](const ::testing::TestParamInfo<EngineCase>& i) {
                           return i.param.format + "_" + IoEngineName(i.param.engine);
                         });

TEST(WholeFileEngines, IndexedBinaryAndHdf5StayPosixWithAClearError) {
  FormatOptions o;
  o.sample_dims = {8, 8};
  o.io_engine = IoEngine::kIoUring;
  for (const char* f : {"hdf5", "indexed_binary"}) {
    auto r = MakeFormat(f, o);
    ASSERT_FALSE(r.ok()) << f;
    EXPECT_NE(r.status().message().find("dlio_ext.io_engine: io_uring is not available for"), std::string::npos)
        << r.status();
  }
}

class ReadTypeMemory : public ::testing::TestWithParam<std::string> {};

// on_demand re-reads the whole file for every sample (DLIO's index mode); memory reads it once and serves the
// following samples of the same file from memory, with the same bytes.
TEST_P(ReadTypeMemory, ReadsAFileOncePerRunOfItsSamples) {
  TempDir dir;
  auto on_demand = Make(GetParam(), 4);
  auto memory = Make(GetParam(), 4, IoEngine::kPosix, true);
  const std::string p0 = dir.File("img_0_of_2." + std::string(on_demand->extension()));
  const std::string p1 = dir.File("img_1_of_2." + std::string(on_demand->extension()));
  IoStats gen;
  ASSERT_TRUE(on_demand->Generate(p0, 1, gen).ok());
  ASSERT_TRUE(on_demand->Generate(p1, 2, gen).ok());
  auto a = on_demand->NewSampleReader();
  auto b = memory->NewSampleReader();
  IoStats sa, sb;
  for (const std::string* p : {&p0, &p1}) {
    for (uint32_t i = 0; i < 4; ++i) {
      ASSERT_TRUE(a->ReadSample(*p, i, sa).ok());
      ASSERT_TRUE(b->ReadSample(*p, i, sb).ok());
      EXPECT_EQ(a->last_sample(), b->last_sample());
    }
  }
  const uint64_t both = testing::FileSize(p0) + testing::FileSize(p1);
  EXPECT_EQ(sa.Snapshot().files, 8u);
  EXPECT_EQ(sa.Snapshot().bytes, 4 * both);
  EXPECT_EQ(sb.Snapshot().files, 2u);
  EXPECT_EQ(sb.Snapshot().bytes, both);
  EXPECT_EQ(sb.Snapshot().samples, 8u);
  // Back to the first file: read again (only the most recent file is kept).
  ASSERT_TRUE(b->ReadSample(p0, 0, sb).ok());
  EXPECT_EQ(sb.Snapshot().files, 3u);
}

INSTANTIATE_TEST_SUITE_P(WholeFileFormats, ReadTypeMemory, ::testing::Values("npz", "npy", "csv"));

TEST(CsvGzip, GzipFileNamedCsvGzInflatesToTheUncompressedRowsAndReadsTheSameSamples) {
  TempDir dir;
  auto plain = Make("csv", 3);
  auto gz = Make("csv", 3, IoEngine::kPosix, false, "gzip");
  EXPECT_STREQ(gz->extension(), "csv.gz");
  const std::string pp = dir.File("img_0_of_1.csv"), pg = dir.File("img_0_of_1.csv.gz");
  IoStats gen;
  ASSERT_TRUE(plain->Generate(pp, 3, gen).ok());
  ASSERT_TRUE(gz->Generate(pg, 3, gen).ok());
  const std::string text = Slurp(pp), packed = Slurp(pg);
  ASSERT_GE(packed.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(packed[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(packed[1]), 0x8b);
  // zlib's own gunzip of the file gives exactly the plain file's text.
  std::string out(text.size() + 64, '\0');
  z_stream zs{};
  ASSERT_EQ(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  zs.avail_in = static_cast<uInt>(packed.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  EXPECT_EQ(out, text);
  auto a = plain->NewSampleReader();
  auto b = gz->NewSampleReader();
  IoStats sa, sb;
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(a->ReadSample(pp, i, sa).ok());
    absl::StatusOr<uint64_t> r = b->ReadSample(pg, i, sb);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(a->last_sample(), b->last_sample());
  }
  EXPECT_EQ(sb.Snapshot().bytes, 3 * packed.size());  // the compressed bytes are what is read
}

TEST(CsvGzip, OtherDlioCompressionsAreRefusedNamingTheAllowedOnes) {
  FormatOptions o;
  o.sample_dims = {8, 8};
  o.compression = "zip";
  auto r = MakeFormat("csv", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "dataset.compression: 'zip' for csv is not supported yet (allowed: none, gzip)");
}

}  // namespace
}  // namespace dlio
