#include "agent/preflight.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

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

// Issue 26 item 6: no dataset to read and none generated is refused at the first epoch, naming the folder; one
// file of the format is enough here (the epoch's own listing says what is missing of the rest).
TEST(Preflight, AnAbsentDatasetIsRefusedAtTheFirstEpochWhenItIsNotGenerated) {
  const fs::path dir = fs::temp_directory_path() / ("dlio-preflight-absent-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  WorkloadSpec spec;
  spec.generate_data = false;
  spec.train = true;
  spec.num_files_train = 8;
  PhaseOrder first;
  first.kind = PhaseKind::kTrainEpoch;
  first.epoch = 1;
  EXPECT_TRUE(ReadsExistingDataset(first, spec));
  absl::Status s = CheckDatasetPresent(dir, first, spec, "npz");  // no folder at all
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(s.message()),
            "dataset.data_folder '" + (dir / "train").string() + "': no .npz file of the dataset there (8 expected "
            "by dataset.num_files_train) and workflow.generate_data is false: generate it first "
            "(workflow.generate_data: true) or point dataset.data_folder at it; refused before the run");
  fs::create_directories(dir / "train" / "sub");
  std::ofstream(dir / "train" / "other.npy") << "x";  // another format's file is no dataset of this job
  EXPECT_FALSE(CheckDatasetPresent(dir, first, spec, "npz").ok());
  std::ofstream(dir / "train" / "sub" / "img_1_of_8.npz") << "x";
  EXPECT_TRUE(CheckDatasetPresent(dir, first, spec, "npz").ok());
  fs::remove_all(dir / "train");
  // Not the first epoch, a generated dataset, or object storage: nothing to check here.
  PhaseOrder second = first;
  second.epoch = 2;
  EXPECT_TRUE(CheckDatasetPresent(dir, second, spec, "npz").ok());
  spec.generate_data = true;
  EXPECT_TRUE(CheckDatasetPresent(dir, first, spec, "npz").ok());
  fs::remove_all(dir);
}

// Issue 24 item 2: a checkpoint-only job whose checkpoint (1 PiB of model_size_bytes, within the key's range) is
// larger than the data root's file system is refused at its first save, with both numbers, before any file.
TEST(Preflight, CheckpointsLargerThanTheFreeSpaceAreRefusedAtTheFirstWritingPhase) {
  const fs::path dir = fs::temp_directory_path() / ("dlio-preflight-ckpt-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> root = ConfinedDir::OpenRoot(dir.string());
  ASSERT_TRUE(root.ok()) << root.status();
  WorkloadSpec spec;
  spec.checkpoint = true;
  spec.train = false;
  spec.generate_data = false;
  spec.checkpoint_folder = "ckpt";
  spec.num_checkpoints_write = 2;
  spec.model_size_bytes = kMaxModelBytes;  // rank 0 writes model_states-0.pt
  PhaseOrder order;
  order.kind = PhaseKind::kCheckpoint;
  order.world = 2;
  order.local_ranks = 2;
  order.checkpoint_index = 1;
  const absl::Status s = CheckCheckpointsFit(**root, order, spec, "npz");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  const std::string msg(s.message());
  EXPECT_NE(msg.find("checkpoint.checkpoint_folder '" + (dir / "ckpt").string() + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ranks 0-1 (2 save(s) x 1125899906842624 bytes)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs about 2251799813685248 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("but its file system has only "), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir / "ckpt"));

  // Only the job's first writing phase checks: not the second save, not a load; and not an agent without files.
  order.checkpoint_index = 2;
  EXPECT_TRUE(CheckCheckpointsFit(**root, order, spec, "npz").ok());
  order.checkpoint_index = 1;
  order.checkpoint_load = true;
  EXPECT_TRUE(CheckCheckpointsFit(**root, order, spec, "npz").ok());
  order.checkpoint_load = false;
  order.first_rank = 1;
  order.local_ranks = 1;
  EXPECT_TRUE(CheckCheckpointsFit(**root, order, spec, "npz").ok());
  order.first_rank = 0;
  spec.model_size_bytes = 10240;
  EXPECT_TRUE(CheckCheckpointsFit(**root, order, spec, "npz").ok());
  fs::remove_all(dir);
}

TEST(Preflight, FirstWritingPhaseIsGenerateElseTheFirstEpochElseTheFirstSave) {
  WorkloadSpec spec;
  PhaseOrder order;
  spec.generate_data = true;
  order.kind = PhaseKind::kGenerate;
  EXPECT_TRUE(FirstWritingPhase(order, spec));
  order.kind = PhaseKind::kTrainEpoch;
  order.epoch = 1;
  EXPECT_FALSE(FirstWritingPhase(order, spec));
  spec.generate_data = false;
  EXPECT_TRUE(FirstWritingPhase(order, spec));
  order.epoch = 2;
  EXPECT_FALSE(FirstWritingPhase(order, spec));
  spec.train = false;
  order.kind = PhaseKind::kCheckpoint;
  order.checkpoint_index = 1;
  EXPECT_TRUE(FirstWritingPhase(order, spec));
  order.checkpoint_load = true;
  EXPECT_FALSE(FirstWritingPhase(order, spec));
}

}  // namespace
}  // namespace dlio
