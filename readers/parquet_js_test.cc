// An independent reader and writer (tests/js/check_parquet.mjs: hyparquet, hyparquet-compressors and
// hyparquet-writer from npm, run with node): it reads every kind of file our writer makes (schema, rows, row groups,
// codec, decoded values of a few rows), and our reader reads the files it writes with the fork's schemas with the
// right rows and bytes. Skipped without node or the npm packages (`npm ci` at the repository root).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "readers/format.h"
#include "readers/parquet.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

using json = nlohmann::json;
using testing::TempDir;

bool HaveNode() {
  return std::system("node --version >/dev/null 2>&1") == 0 &&
         std::filesystem::exists(std::string(DLIO_SOURCE_DIR) + "/node_modules/hyparquet-writer");
}

// Runs check_parquet.mjs with `args`; returns its exit code and puts its output in `out`.
int Node(const std::string& args, std::string* out) {
  const std::string cmd = std::string("node ") + DLIO_SOURCE_DIR + "/tests/js/check_parquet.mjs " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out->append(buf, n);
  const int rc = ::pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

const char* CodecInFile(const std::string& c) {
  if (c == "snappy") return "SNAPPY";
  if (c == "zstd") return "ZSTD";
  if (c == "lz4") return "LZ4_RAW";
  if (c == "gzip") return "GZIP";
  return "UNCOMPRESSED";
}

TEST(ParquetIndependent, HyparquetReadsEveryFileWeWrite) {
  if (!HaveNode()) GTEST_SKIP() << "node or the npm packages are missing (npm ci)";
  TempDir dir;
  const std::vector<std::vector<ParquetColumn>> schemas = {
      {{"t5_encodings", "float32", 300, true}, {"clip_encodings", "float32", 41, true},
       {"timestamp", "float16", 7, true}},
      {{"f64", "float64", 3, true}, {"i8", "int8", 2, true}, {"u16", "uint16", 4, true}, {"i64", "int64", 1, true},
       {"u8", "uint8", 5, true}, {"i32", "int32", 1, true}},
  };
  json manifest = json::array();
  int k = 0;
  for (const char* codec : {"none", "snappy", "zstd", "lz4", "gzip"}) {
    for (const std::vector<ParquetColumn>& cols : schemas) {
      FormatOptions o;
      o.samples_per_file = 7;
      o.sample_dims = {8, 8};
      o.compression = codec;
      o.parquet_columns = cols;
      o.parquet.row_group_size = 3;
      const std::string path = dir.File("f" + std::to_string(k++) + ".parquet");
      IoStats gen;
      auto f = MakeFormat("parquet", o);
      ASSERT_TRUE(f.ok()) << f.status();
      ASSERT_TRUE((*f)->Generate(path, 17, gen).ok()) << codec;
      json c = json::array();
      for (const ParquetColumn& col : cols) c.push_back({{"name", col.name}, {"dtype", col.dtype}, {"size", col.size}});
      manifest.push_back({{"path", path}, {"rows", 7}, {"row_groups", {3, 3, 1}}, {"codec", CodecInFile(codec)},
                          {"columns", c}});
    }
  }
  std::ofstream(dir.File("manifest.json")) << manifest.dump();
  std::string out;
  EXPECT_EQ(Node("read " + dir.File("manifest.json"), &out), 0) << out;
}

TEST(ParquetIndependent, WeReadHyparquetWriterFilesWithTheRightRowsAndBytes) {
  if (!HaveNode()) GTEST_SKIP() << "node or the npm packages are missing (npm ci)";
  TempDir dir;
  std::string out;
  ASSERT_EQ(Node("write " + dir.path(), &out), 0) << out;
  std::ifstream in(dir.File("expected.json"));
  const json expected = json::parse(in);
  ASSERT_EQ(expected.size(), 2u);
  for (const json& e : expected) {
    const std::string path = e["path"];
    const int64_t rows = e["rows"];
    FormatOptions o;
    o.samples_per_file = rows;
    o.sample_dims = {8, 8};
    o.parquet.read_mode = "iterable";
    IoStats st;
    auto r = MakeFormat("parquet", o).value()->NewSampleReader();
    for (int64_t i = 0; i < rows; ++i) {
      auto n = r->ReadSample(path, static_cast<uint32_t>(i), st);
      ASSERT_TRUE(n.ok()) << path << ": " << n.status();
      EXPECT_EQ(*n, e["row_bytes"].get<uint64_t>()) << path;
    }
    EXPECT_EQ(st.Snapshot().bytes, e["iterable_bytes"].get<uint64_t>()) << path;
    EXPECT_EQ(st.Snapshot().samples, static_cast<uint64_t>(rows));
    // row_group mode with decoding: every page of the independent writer's chunks decompresses
    o.parquet.read_mode = "row_group";
    o.parquet.decode = true;
    IoStats dec;
    auto d = MakeFormat("parquet", o).value()->NewSampleReader();
    for (int64_t i = 0; i < rows; ++i) ASSERT_TRUE(d->ReadSample(path, static_cast<uint32_t>(i), dec).ok()) << path;
    // the wrong row count is refused, naming the key
    o.samples_per_file = rows + 1;
    IoStats bad;
    auto n = MakeFormat("parquet", o).value()->NewSampleReader()->ReadSample(path, 0, bad);
    ASSERT_FALSE(n.ok());
    EXPECT_NE(n.status().message().find("dataset.num_samples_per_file"), std::string::npos) << n.status();
  }
}

}  // namespace
}  // namespace dlio
