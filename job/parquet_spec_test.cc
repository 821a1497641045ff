// The parquet keys (job/keys_parquet.cc, job/parquet_spec.h): every key loads, survives ToYaml, and every bad value
// is one line naming the key and what is allowed.
#include "job/parquet_spec.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job/workload_spec.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;

constexpr const char* kFlux = R"(
dataset:
  format: parquet
  num_files_train: 4
  num_samples_per_file: 8
  record_length_bytes: 2164832
  compression: zstd
  parquet:
    row_group_size: 4
    generation_batch_size: 8
    read_mode: iterable
    columns:
      - {name: t5_encodings, dtype: float32, size: 524328}
      - {name: clip_encodings, dtype: float32, size: 409}
      - {name: timestamp, dtype: float16, size: 7, read: false}
storage:
  storage_options:
    columns: [t5_encodings]
train:
  epochs: 1
)";

std::string Error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(yaml, overrides, "job.yaml");
  return s.ok() ? "<loaded>" : std::string(s.status().message());
}

TEST(ParquetKeys, EveryKeyLoadsAndSurvivesToYaml) {
  absl::StatusOr<WorkloadSpec> s = LoadWorkload(kFlux, {"dlio_ext.parquet_decode=false"}, "job.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  const ParquetSpec& p = s->parquet;
  ASSERT_EQ(p.columns.size(), 3u);
  EXPECT_EQ(p.columns[0], (ParquetColumn{"t5_encodings", "float32", 524328, true}));
  EXPECT_EQ(p.columns[2], (ParquetColumn{"timestamp", "float16", 7, false}));
  EXPECT_EQ(p.row_group_size, 4);
  EXPECT_EQ(p.generation_batch_size, 8);
  EXPECT_EQ(p.read_mode, "iterable");
  EXPECT_EQ(p.read_columns, std::vector<std::string>{"t5_encodings"});
  EXPECT_FALSE(p.decode);
  EXPECT_EQ(s->compression, "zstd");
  absl::StatusOr<WorkloadSpec> again = LoadWorkload(ToYaml(*s), {}, "again.yaml");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << ToYaml(*s);
  EXPECT_EQ(*again, *s);
}

TEST(ParquetKeys, DefaultsAreTheForksAndPyarrows) {
  absl::StatusOr<WorkloadSpec> s = LoadWorkload("dataset:\n  format: parquet\n  record_length_bytes: 512\n", {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->parquet.row_group_size, 1048576);
  EXPECT_EQ(s->parquet.read_mode, "row_group");
  EXPECT_TRUE(s->parquet.columns.empty());
  const std::vector<ParquetColumn> cols = ParquetFileColumns(*s);
  ASSERT_EQ(cols.size(), 1u);
  EXPECT_EQ(cols[0], (ParquetColumn{"data", "uint8", 512, true}));
  absl::StatusOr<WorkloadSpec> d = LoadWorkload("dataset:\n  format: parquet\n  parquet:\n    columns:\n      - name: x\n", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->parquet.columns[0], (ParquetColumn{"x", "float32", 1, true}));
  EXPECT_TRUE(LoadWorkload("dataset:\n  format: parquet\n", {"dlio_ext.parquet_decode=true"})->parquet.decode);
}

TEST(ParquetKeys, EveryBadValueNamesItsKey) {
  const std::string base = "dataset:\n  format: parquet\n  record_length_bytes: 512\n";
  EXPECT_THAT(Error(base + "  parquet:\n    columns:\n      - {name: a, dtype: complex64}\n"),
              HasSubstr("dataset.parquet.columns[0].dtype"));
  EXPECT_THAT(Error(base + "  parquet:\n    columns:\n      - {name: a, size: 0}\n"),
              HasSubstr("dataset.parquet.columns[0].size: must be an integer in [1,"));
  EXPECT_THAT(Error(base + "  parquet:\n    columns:\n      - {name: a, sise: 3}\n"),
              HasSubstr("dataset.parquet.columns[0].sise: unknown key of a parquet column (allowed: name, dtype, size, "
                        "read)"));
  EXPECT_THAT(Error(base + "  parquet:\n    columns:\n      - {dtype: int8}\n"),
              HasSubstr("dataset.parquet.columns[0].name: missing"));
  EXPECT_THAT(Error(base + "  parquet:\n    columns: [{name: a}, {name: a}]\n"),
              HasSubstr("dataset.parquet.columns[1].name: 'a' is named twice"));
  EXPECT_THAT(Error(base + "  parquet:\n    columns: 3\n"), HasSubstr("dataset.parquet.columns: must be a list"));
  EXPECT_THAT(Error(base + "  parquet:\n    row_group_size: 0\n"),
              HasSubstr("dataset.parquet.row_group_size: must be an integer in [1,"));
  EXPECT_THAT(Error(base + "  parquet:\n    generation_batch_size: -1\n"),
              HasSubstr("dataset.parquet.generation_batch_size: must be an integer in [0,"));
  EXPECT_THAT(Error(base + "  parquet:\n    read_mode: mmap\n"), HasSubstr("dataset.parquet.read_mode"));
  EXPECT_THAT(Error(base + "  parquet:\n    read_mode: mmap\n"), HasSubstr("row_group, iterable"));
  EXPECT_THAT(Error(base + "  parquet:\n    partition_by: day\n"), HasSubstr("dataset.parquet.partition_by"));
  EXPECT_THAT(Error(base + "  compression: brotli\n"), HasSubstr("dataset.compression"));
  EXPECT_THAT(Error(base + "  compression: brotli\n"), HasSubstr("snappy"));
  EXPECT_THAT(Error(base + "storage:\n  storage_options:\n    columns: [nope]\n"),
              HasSubstr("storage.storage_options.columns: 'nope' is not a column of the parquet files (columns: data)"));
  EXPECT_THAT(Error(base + "storage:\n  storage_options:\n    columns: []\n"),
              HasSubstr("storage.storage_options.columns: must be a non-empty list"));
  EXPECT_THAT(Error(base + "  parquet:\n    columns: [{name: a, read: false}]\n"),
              HasSubstr("dataset.parquet.columns: every column has read: false"));
  EXPECT_THAT(Error(base + "  parquet:\n    read_mode: iterable\n", {"dlio_ext.parquet_decode=true"}),
              HasSubstr("dlio_ext.parquet_decode: true needs dataset.parquet.read_mode: row_group"));
  EXPECT_THAT(Error(base, {"dlio_ext.parquet_decode=yes"}), HasSubstr("dlio_ext.parquet_decode: must be true or false"));
}

// Without columns the one column holds record_length_bytes in record_element_type: a whole number of elements.
TEST(ParquetKeys, RefusesAColumnSizeThatIsNotAMultipleOfItsDtype) {
  EXPECT_THAT(Error("dataset:\n  format: parquet\n  record_length_bytes: 514\n  record_element_type: float32\n"),
              HasSubstr("dataset.record_length_bytes: 514 is not a multiple of float32 (4 bytes"));
  EXPECT_EQ(Error("dataset:\n  format: parquet\n  record_length_bytes: 516\n  record_element_type: float32\n"),
            "<loaded>");
}

TEST(ParquetKeys, OtherFormatsIgnoreTheParquetKeys) {
  EXPECT_EQ(Error("dataset:\n  format: npy\n  parquet:\n    read_mode: iterable\n"), "<loaded>");
}

TEST(ParquetKeys, SpecsDifferingInAnyParquetFieldAreUnequal) {
  const ParquetSpec base;
  ParquetSpec a = base, b = base, c = base, d = base, e = base, f = base;
  a.columns.push_back({"x", "int8", 1, true});
  b.row_group_size = 7;
  c.generation_batch_size = 3;
  d.read_mode = "iterable";
  e.read_columns = {"x"};
  f.decode = true;
  for (const ParquetSpec* p : {&a, &b, &c, &d, &e, &f}) EXPECT_NE(*p, base);
}

}  // namespace
}  // namespace dlio
