// The parquet format (readers/parquet.h): the layout the writer makes (row groups, columns, rows), the reader's
// I/O (footer once per file and reader, a row group once, the selected columns only, iterable spans), decoding of
// every codec, and the refusals. tests/js/check_parquet.mjs reads the same files with an independent reader.
#include "readers/parquet.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "readers/format.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using testing::TempDir;

std::vector<ParquetColumn> FluxLike() {
  return {{"t5_encodings", "float32", 64, true}, {"clip_encodings", "float32", 9, true},
          {"mean", "float16", 8, false}, {"label", "int8", 1, true}};
}

FormatOptions Options(int64_t rows, std::vector<ParquetColumn> cols, const std::string& codec = "none") {
  FormatOptions o;
  o.samples_per_file = rows;
  o.sample_dims = {16, 16};
  o.parquet_columns = std::move(cols);
  o.compression = codec;
  return o;
}

std::unique_ptr<Format> Make(const FormatOptions& o) {
  auto f = MakeFormat("parquet", o);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

// The footer length written before the trailing "PAR1".
uint32_t FooterLen(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t{static_cast<uint8_t>(all[all.size() - 8 + i])} << (8 * i);
  return len;
}

TEST(Parquet, GenerateWritesTheRowsRowGroupsAndColumns) {
  TempDir dir;
  FormatOptions o = Options(10, FluxLike());
  o.parquet.row_group_size = 3;
  const std::string path = dir.File("img_0_of_1.parquet");
  IoStats gen;
  ASSERT_TRUE(Make(o)->Generate(path, 7, gen).ok());
  EXPECT_EQ(gen.Snapshot().bytes, testing::FileSize(path));
  EXPECT_EQ(gen.Snapshot().samples, 10u);
  absl::StatusOr<ParquetFileSummary> s = ReadParquetSummary(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rows, 10);
  EXPECT_EQ(s->row_group_rows, (std::vector<int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(s->columns, (std::vector<std::string>{"t5_encodings", "clip_encodings", "mean", "label"}));
}

TEST(Parquet, RowGroupsNeverSpanTwoGenerationBatches) {
  TempDir dir;
  FormatOptions o = Options(10, FluxLike());
  o.parquet.row_group_size = 3;
  o.parquet.generation_batch_size = 4;
  const std::string path = dir.File("a.parquet");
  IoStats gen;
  ASSERT_TRUE(Make(o)->Generate(path, 1, gen).ok());
  EXPECT_EQ(ReadParquetSummary(path)->row_group_rows, (std::vector<int64_t>{3, 1, 3, 1, 2}));
}

TEST(Parquet, WithoutColumnsOneDataColumnOfTheSample) {
  TempDir dir;
  FormatOptions o = Options(4, {});
  const std::string path = dir.File("a.parquet");
  IoStats gen, st;
  auto f = Make(o);
  ASSERT_TRUE(f->Generate(path, 1, gen).ok());
  EXPECT_EQ(ReadParquetSummary(path)->columns, (std::vector<std::string>{"data"}));
  auto n = f->NewSampleReader()->ReadSample(path, 0, st);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 256u) << "16 x 16 uint8 values";
}

// One row group, every column read: the footer's tail, then the data between the magic and the footer.
TEST(Parquet, IterableReadsTheFooterOnceAndEachRowGroupOnce) {
  TempDir dir;
  std::vector<ParquetColumn> cols = FluxLike();
  for (ParquetColumn& c : cols) c.read = true;
  FormatOptions o = Options(6, cols);
  o.parquet.read_mode = "iterable";
  const std::string path = dir.File("a.parquet");
  IoStats gen, st;
  auto f = Make(o);
  ASSERT_TRUE(f->Generate(path, 3, gen).ok());
  const uint64_t size = testing::FileSize(path), footer = FooterLen(path);
  auto r = f->NewSampleReader();
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < 6; ++i) {
      auto n = r->ReadSample(path, i, st);
      ASSERT_TRUE(n.ok()) << n.status();
      EXPECT_EQ(*n, 64u * 4 + 9 * 4 + 8 * 2 + 1) << "the row's bytes as numpy holds them";
    }
  }
  const IoSnapshot s = st.Snapshot();
  EXPECT_EQ(s.bytes, std::min<uint64_t>(size, 64 * 1024) + (size - 4 - 8 - footer));
  EXPECT_EQ(s.files, 1u) << "one open per file and reader";
  EXPECT_EQ(s.samples, 12u);
}

// row_group mode: a row group's selected chunks once each; deselected columns are never read.
TEST(Parquet, RowGroupModeReadsOnlyTheSelectedChunksOnce) {
  TempDir dir;
  FormatOptions o = Options(8, FluxLike());
  o.parquet.row_group_size = 4;
  const std::string path = dir.File("a.parquet");
  IoStats gen;
  auto f = Make(o);
  ASSERT_TRUE(f->Generate(path, 3, gen).ok());
  auto bytes_of = [&](const FormatOptions& opts, std::vector<uint32_t> samples) {
    IoStats st;
    auto r = MakeFormat("parquet", opts).value()->NewSampleReader();
    for (uint32_t i : samples) EXPECT_TRUE(r->ReadSample(path, i, st).ok());
    return st.Snapshot();
  };
  const IoSnapshot one = bytes_of(o, {0});
  const IoSnapshot group = bytes_of(o, {0, 3, 1, 2, 0});
  EXPECT_EQ(one.bytes, group.bytes) << "the rest of a fetched row group costs no I/O";
  EXPECT_EQ(one.ops, group.ops);
  EXPECT_EQ(one.ops, 1u + 3u) << "the footer, then one range per selected column (t5, clip, label; not mean)";
  const IoSnapshot both = bytes_of(o, {0, 4});
  EXPECT_EQ(both.ops, 1u + 6u);
  FormatOptions only = o;
  only.parquet.read_columns = {"clip_encodings"};
  const IoSnapshot clip = bytes_of(only, {0});
  EXPECT_EQ(clip.ops, 2u);
  EXPECT_LT(clip.bytes, one.bytes);
}

TEST(Parquet, EveryCodecDecodes) {
  for (const char* codec : {"none", "snappy", "zstd", "lz4", "gzip"}) {
    TempDir dir;
    FormatOptions o = Options(5, FluxLike(), codec);
    o.parquet.decode = true;
    o.parquet.row_group_size = 2;
    const std::string path = dir.File("a.parquet");
    IoStats gen, st;
    auto f = Make(o);
    ASSERT_TRUE(f->Generate(path, 11, gen).ok()) << codec;
    auto r = f->NewSampleReader();
    for (uint32_t i = 0; i < 5; ++i) {
      auto n = r->ReadSample(path, i, st);
      ASSERT_TRUE(n.ok()) << codec << ": " << n.status();
    }
  }
}

// A damaged page header: decoding finds it, a read without decoding does not look inside.
TEST(Parquet, DecodingChecksEveryPage) {
  TempDir dir;
  FormatOptions o = Options(3, {{"x", "float32", 1000, true}}, "snappy");
  const std::string path = dir.File("a.parquet");
  IoStats gen;
  ASSERT_TRUE(Make(o)->Generate(path, 5, gen).ok());
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(4);  // the first page header, right after "PAR1"
    const std::string junk(16, '\xff');
    io.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  IoStats st;
  EXPECT_TRUE(Make(o)->NewSampleReader()->ReadSample(path, 0, st).ok());
  o.parquet.decode = true;
  auto n = Make(o)->NewSampleReader()->ReadSample(path, 0, st);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find(path), std::string::npos) << n.status();
}

TEST(Parquet, RefusesAFileOfOtherRowCount) {
  TempDir dir;
  const std::string path = dir.File("a.parquet");
  IoStats gen, st;
  ASSERT_TRUE(Make(Options(5, FluxLike()))->Generate(path, 1, gen).ok());
  auto n = Make(Options(6, FluxLike()))->NewSampleReader()->ReadSample(path, 0, st);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(n.status().message().find("holds 5 rows; dataset.num_samples_per_file is 6"), std::string::npos)
      << n.status();
}

TEST(Parquet, RefusesASelectedColumnTheFileLacks) {
  TempDir dir;
  const std::string path = dir.File("a.parquet");
  IoStats gen, st;
  FormatOptions o = Options(2, FluxLike());
  ASSERT_TRUE(Make(o)->Generate(path, 1, gen).ok());
  o.parquet.read_columns = {"nope"};
  auto n = Make(o)->NewSampleReader()->ReadSample(path, 0, st);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("no column 'nope' (storage.storage_options.columns"), std::string::npos)
      << n.status();
}

TEST(Parquet, RefusesDecodingInIterableMode) {
  FormatOptions o = Options(2, FluxLike());
  o.parquet.read_mode = "iterable";
  o.parquet.decode = true;
  IoStats st;
  auto n = Make(o)->NewSampleReader()->ReadSample("x.parquet", 0, st);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("dlio_ext.parquet_decode"), std::string::npos) << n.status();
}

TEST(Parquet, IoUringReadsTheSameBytes) {
  TempDir dir;
  FormatOptions o = Options(40, {{"x", "float64", 20000, true}}, "zstd");  // a 6 MB chunk: several pieces
  const std::string path = dir.File("a.parquet");
  IoStats gen;
  ASSERT_TRUE(Make(o)->Generate(path, 5, gen).ok());
  IoStats posix, uring;
  EXPECT_TRUE(Make(o)->NewSampleReader()->ReadSample(path, 0, posix).ok());
  o.io_engine = IoEngine::kIoUring;
  auto n = Make(o)->NewSampleReader()->ReadSample(path, 0, uring);
  if (!n.ok() && n.status().message().find("io_uring") != std::string::npos) GTEST_SKIP() << n.status();
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(posix.Snapshot().bytes, uring.Snapshot().bytes);
}

// O_DIRECT: ranges widened to 4 KiB boundaries, so at least the posix bytes; every sample still delivered.
TEST(Parquet, ODirectReadsWidenedRanges) {
  TempDir dir;
  FormatOptions o = Options(12, FluxLike(), "snappy");
  o.parquet.row_group_size = 5;
  o.parquet.decode = true;
  const std::string path = dir.File("a.parquet");
  IoStats gen;
  ASSERT_TRUE(Make(o)->Generate(path, 5, gen).ok());
  IoStats posix, direct;
  auto p = Make(o)->NewSampleReader();
  for (uint32_t i = 0; i < 12; ++i) ASSERT_TRUE(p->ReadSample(path, i, posix).ok());
  o.io_engine = IoEngine::kODirect;
  auto d = Make(o)->NewSampleReader();
  for (uint32_t i = 0; i < 12; ++i) {
    auto n = d->ReadSample(path, i, direct);
    if (!n.ok() && n.status().message().find("dlio_ext.io_engine") != std::string::npos) GTEST_SKIP() << n.status();
    ASSERT_TRUE(n.ok()) << n.status();
  }
  EXPECT_GE(direct.Snapshot().bytes, posix.Snapshot().bytes);
  EXPECT_EQ(direct.Snapshot().samples, 12u);
}

TEST(Parquet, NoAllocationPerSampleOnceARowGroupIsRead) {
  TempDir dir;
  FormatOptions o = Options(64, FluxLike());
  const std::string path = dir.File("a.parquet");
  IoStats gen, st;
  auto f = Make(o);
  ASSERT_TRUE(f->Generate(path, 5, gen).ok());
  auto r = f->NewSampleReader();
  ASSERT_TRUE(r->ReadSample(path, 0, st).ok());
  testing::AllocationCounter allocs;
  for (uint32_t i = 1; i < 64; ++i) ASSERT_TRUE(r->ReadSample(path, i, st).ok());
  EXPECT_EQ(allocs.count(), 0u);
}

}  // namespace
}  // namespace dlio
