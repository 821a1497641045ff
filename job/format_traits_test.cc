// The loader's format rules follow the rows of the registry (job/format_traits.h): compressions, image shapes and
// types, the io engines refused at load, chunking, the warnings where DLIO differs, the sample-shape checks. (The
// format library's side is readers/format_test.cc; the epoch plan's, plan/format_traits_test.cc.)
#include "job/format_traits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "job/workload_spec.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<WorkloadSpec> LoadFormat(const FormatTraits& f, const std::string& more,
                                        std::vector<std::string>* warnings = nullptr) {
  return LoadWorkload(std::string("dataset:\n  format: ") + f.name + "\n" + more, {}, "job.yaml", warnings);
}

bool Warns(const std::vector<std::string>& warnings, const std::string& prefix) {
  for (const std::string& w : warnings) {
    if (absl::StartsWith(w, prefix)) return true;
  }
  return false;
}

TEST(FormatRules, CompressionsFollowTheRows) {
  for (const FormatTraits& f : Formats()) {
    EXPECT_TRUE(f.Compresses("none")) << f.name;
    for (const std::string& c : f.compressions) {
      auto s = LoadFormat(f, "  compression: " + c + "\n");
      EXPECT_TRUE(s.ok()) << f.name << " " << c << ": " << s.status();
    }
    for (const char* c : {"none", "gzip", "szip", "lzf", "zip"}) {
      if (f.Compresses(c)) continue;
      auto s = LoadFormat(f, std::string("  compression: ") + c + "\n");
      ASSERT_FALSE(s.ok()) << f.name << " " << c;
      if (f.dlio_compresses_more) {
        EXPECT_EQ(s.status().code(), absl::StatusCode::kUnimplemented) << f.name << " " << c;
        EXPECT_THAT(std::string(s.status().message()), HasSubstr("is a DLIO compression not supported yet"));
      } else {
        EXPECT_EQ(s.status().message(),
                  std::string("dataset.compression: ") + c + " is not available for " + f.name +
                      " files (parquet: none, snappy, zstd, lz4, gzip; hdf5: none, gzip, szip, lzf; npz: none, zip; csv: "
                      "none, gzip; other formats: none)");
      }
    }
  }
}

TEST(FormatRules, ImagesAreTwoDimensionalUint8WithALimitedSide) {
  for (const FormatTraits& f : Formats()) {
    auto three = LoadFormat(f, "  record_dims: [4, 4, 4]\n");
    EXPECT_EQ(three.ok(), !f.image) << f.name;
    std::vector<std::string> warnings;
    auto typed = LoadFormat(f, "  record_element_type: float32\n", &warnings);
    ASSERT_TRUE(typed.ok()) << f.name << ": " << typed.status();
    EXPECT_EQ(typed->record_element_type, f.image ? "uint8" : "float32") << f.name;
    EXPECT_EQ(Warns(warnings, "dataset.record_element_type: "), f.image) << f.name;
    WorkloadSpec wide;
    wide.format = f.name;
    EXPECT_EQ(CheckSampleShape(wide, {f.max_side + 1, 1}, true).ok(), !f.image) << f.name;
    if (f.image) {
      EXPECT_TRUE(CheckSampleShape(wide, {f.max_side, 1}, true).ok()) << f.name;
    }
  }
}

TEST(FormatRules, EnginesRefusedAtLoadFollowTheRows) {
  for (const FormatTraits& f : Formats()) {
    auto s = LoadFormat(f, "dlio_ext:\n  io_engine: odirect\n");
    const bool refused = !f.io_engines && f.no_engines_at_load;
    ASSERT_EQ(s.ok(), !refused) << f.name << ": " << s.status();
    if (refused) {
      EXPECT_EQ(s.status().message(),
                std::string("dlio_ext.io_engine: odirect is not available for ") + f.name + f.no_engines);
    }
    if (!f.io_engines) {
      EXPECT_NE(std::string(f.no_engines), "") << f.name << " needs its refusal text";
    }
  }
}

TEST(FormatRules, ChunkingAndTheDatasetChecksFollowTheRows) {
  for (const FormatTraits& f : Formats()) {
    std::vector<std::string> warnings;
    auto s = LoadFormat(f, "  enable_chunking: true\n  chunk_size: 1024\n", &warnings);
    ASSERT_TRUE(s.ok()) << f.name << ": " << s.status();
    EXPECT_EQ(Warns(warnings, "dataset.enable_chunking: "), f.chunking) << f.name;
    EXPECT_EQ(Warns(warnings, "dataset.format: "), std::string(f.dlio_differs) != "") << f.name;
    if (*f.dlio_differs != '\0') {
      EXPECT_THAT(warnings, testing::Contains(std::string("dataset.format: ") + f.dlio_differs)) << f.name;
    }
    WorkloadSpec split;
    split.format = f.name;
    split.hdf5_num_dset_per_record = 3;
    EXPECT_EQ(CheckSampleShape(split, {4, 4}, true).ok(), !f.chunking) << f.name;
    EXPECT_EQ(f.shape_rules(), f.chunking || f.image) << f.name;
  }
}

TEST(FormatRules, CompressingFormatsListTheMostChoicesFirst) {
  std::vector<std::string> names;
  for (const FormatTraits* f : CompressingFormats()) names.push_back(f->name);
  EXPECT_EQ(names, (std::vector<std::string>{"parquet", "hdf5", "npz", "csv"}));
  EXPECT_EQ(FormatTraitsOf("nosuch").name, std::string(""));
  EXPECT_EQ(&FormatTraitsOf("hdf5"), FindFormatTraits("hdf5"));
}

}  // namespace
}  // namespace dlio
