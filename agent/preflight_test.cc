#include "agent/preflight.h"

#include <filesystem>

#include "gtest/gtest.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;

TEST(Preflight, DatasetBytesCountsTheSamplesAndSaturates) {
  WorkloadSpec spec;
  spec.num_files_train = 10;
  spec.num_samples_per_file = 3;
  spec.record_length_bytes = 4096;  // 64 x 64
  EXPECT_EQ(DatasetBytes(spec), 10u * 3u * 4096u);
  spec.num_files_train = int64_t{1} << 40;
  spec.num_samples_per_file = int64_t{1} << 40;
  EXPECT_EQ(DatasetBytes(spec), UINT64_MAX);
}

TEST(Preflight, ADatasetLargerThanTheFreeSpaceIsRefusedWithBothNumbers) {
  const fs::path dir = fs::temp_directory_path() / "dlio-preflight-test" / "not" / "yet";
  WorkloadSpec spec;
  spec.num_files_train = 1000000;
  spec.num_samples_per_file = 1;
  spec.record_length_bytes = 1e9;
  absl::StatusOr<uint64_t> free = FreeBytes(dir);  // the nearest existing ancestor's file system
  ASSERT_TRUE(free.ok()) << free.status();
  const absl::Status s = CheckDatasetFits(dir, spec, "npz");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  const std::string msg(s.message());
  EXPECT_NE(msg.find(std::to_string(DatasetBytes(spec))), std::string::npos) << msg;
  EXPECT_NE(msg.find("bytes"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir));

  spec.num_files_train = 1;
  spec.record_length_bytes = 4096;
  EXPECT_TRUE(CheckDatasetFits(dir, spec, "npz").ok());
}

}  // namespace
}  // namespace dlio
