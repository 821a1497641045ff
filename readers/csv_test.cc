#include "readers/csv.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
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

std::unique_ptr<Format> Csv(int64_t nspf, std::vector<int64_t> dims, const std::string& type = "uint8") {
  FormatOptions o;
  o.samples_per_file = nspf;
  o.sample_dims = std::move(dims);
  o.element_type = type;
  auto f = MakeFormat("csv", o);
  EXPECT_TRUE(f.ok()) << f.status();
  return std::move(*f);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string v; std::getline(in, v, ',');) out.push_back(v);
  return out;
}

TEST(Csv, IdenticalRowsOfTheFlattenedRecordNoHeaderNoIndexLf) {
  TempDir dir;
  auto f = Csv(3, {4, 5});
  const std::string path = dir.File("img_0_of_1.csv");
  IoStats gen;
  ASSERT_TRUE(f->Generate(path, 9, gen).ok());
  const std::string text = Slurp(path);
  EXPECT_EQ(gen.Snapshot().bytes, text.size());
  EXPECT_EQ(gen.Snapshot().files, 1u);
  EXPECT_EQ(gen.Snapshot().samples, 3u);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  ASSERT_EQ(text.back(), '\n');
  const auto lines = Lines(text);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], lines[1]);
  EXPECT_EQ(lines[0], lines[2]);
  const auto values = Split(lines[0]);
  ASSERT_EQ(values.size(), 20u);
  std::string want;
  for (const std::string& v : values) {
    const int x = std::stoi(v);
    ASSERT_TRUE(x >= 0 && x <= 255) << v;
    EXPECT_EQ(std::to_string(x), v) << "plain decimal integers";
    want.push_back(static_cast<char>(x));
  }

  auto r = f->NewSampleReader();
  IoStats st;
  for (uint32_t i = 0; i < 3; ++i) {
    IoSnapshot before = st.Snapshot();
    auto n = r->ReadSample(path, i, st);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 20u);
    IoSnapshot after = st.Snapshot();
    EXPECT_EQ(after.bytes - before.bytes, text.size()) << "DLIO's CSVReader reads the whole file per sample";
    EXPECT_EQ(after.ops - before.ops, 1u);
    EXPECT_EQ(after.files - before.files, 1u);
    EXPECT_EQ(after.samples - before.samples, 1u);
    EXPECT_EQ(r->last_sample(), want);
  }
  EXPECT_EQ(r->ReadSample(path, 3, st).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(Csv, ElementTypesAsText) {
  TempDir dir;
  for (const char* type : {"int8", "int64", "uint64", "float16", "float32", "float64"}) {
    auto f = Csv(2, {3, 3}, type);
    const std::string path = dir.File(std::string(type) + ".csv");
    IoStats st;
    ASSERT_TRUE(f->Generate(path, 5, st).ok());
    const auto lines = Lines(Slurp(path));
    ASSERT_EQ(lines.size(), 2u);
    const auto values = Split(lines[0]);
    ASSERT_EQ(values.size(), 9u);
    for (const std::string& v : values) {
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      ASSERT_EQ(*end, '\0') << type << ": " << v;
      if (type[0] == 'f') {
        EXPECT_TRUE(x >= 0 && x < 1) << type << ": " << v;
      }
      if (std::string(type) == "int8") {
        EXPECT_TRUE(x >= -128 && x <= 127) << v;
      }
    }
    auto r = f->NewSampleReader();
    auto n = r->ReadSample(path, 1, st);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 9 * ElementSize(type));
  }
}

TEST(Csv, ReadsDlioGeneratedFiles) {
  // pandas would give int64; our uint8 reader keeps the values as bytes: the MANIFEST's sums and heads.
  EXPECT_EQ(testing::ReadEveryDlioSample("csv", "csv",
                                         [](const testing::ManifestFile& f, const testing::ManifestSample&) {
                                           return f.size;
                                         }),
            6);
}

TEST(Csv, NoHeapAllocationPerSampleOnceWarm) {
  TempDir dir;
  auto f = Csv(4, {32, 32});
  IoStats st;
  const std::string path = dir.File("a.csv");
  ASSERT_TRUE(f->Generate(path, 1, st).ok());
  auto r = f->NewSampleReader();
  ASSERT_TRUE(r->ReadSample(path, 0, st).ok());
  testing::AllocationCounter allocs;
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(r->ReadSample(path, i, st).ok());
  EXPECT_EQ(allocs.count(), 0u);
}

TEST(Csv, ErrorsNameTheFile) {
  TempDir dir;
  auto r = Csv(1, {4})->NewSampleReader();
  IoStats st;
  EXPECT_EQ(r->ReadSample(dir.File("nope.csv"), 0, st).status().code(), absl::StatusCode::kNotFound);
  const std::string junk = dir.File("junk.csv");
  std::ofstream(junk) << "1,2,x3\n";
  auto bad = r->ReadSample(junk, 0, st);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(bad.status().message()).find(junk), std::string::npos);
}

}  // namespace
}  // namespace dlio
