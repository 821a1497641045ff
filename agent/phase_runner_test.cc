#include "agent/phase_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <fstream>
#include <string>
#include <vector>

namespace dlio {
namespace {

namespace fs = std::filesystem;

class Dir {
 public:
  Dir() {
    std::string t = "/tmp/dlio_phase_runner_test.XXXXXX";
    path_ = ::mkdtemp(t.data());
  }
  ~Dir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void Touch(const std::string& rel) const {
    fs::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel) << "x";
  }

 private:
  fs::path path_;
};

std::vector<std::string> Names(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) out.push_back(fs::path(p).filename().string());
  return out;
}

// Only data files: indexed_binary's index files, agents' temporary names and other formats' files are left out.
TEST(ListDataFiles, KeepsOnlyDataFilesSortedAndTakesTheFirstN) {
  Dir d;
  for (const char* f : {"img_1_of_3.indexed_binary", "img_0_of_3.indexed_binary", "img_2_of_3.indexed_binary"}) {
    d.Touch(std::string("train/") + f);
    d.Touch(std::string("train/") + f + ".off.idx");
    d.Touch(std::string("train/") + f + ".sz.idx");
  }
  d.Touch("train/img_3_of_4.indexed_binary.tmp-123");
  d.Touch("train/img_0_of_1.mmap_indexed_binary");
  d.Touch("train/notes.txt");
  auto files = ListDataFiles(**ConfinedDir::OpenRoot(d.path().string()), "train", "indexed_binary", 2);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Names(*files), (std::vector<std::string>{"img_0_of_3.indexed_binary", "img_1_of_3.indexed_binary"}));
  auto all = ListDataFiles(**ConfinedDir::OpenRoot(d.path().string()), "train", "indexed_binary", 3);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  auto too_many = ListDataFiles(**ConfinedDir::OpenRoot(d.path().string()), "train", "indexed_binary", 4);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(too_many.status().message()).find("found 3"), std::string::npos) << too_many.status();
  auto mmap = ListDataFiles(**ConfinedDir::OpenRoot(d.path().string()), "train", "mmap_indexed_binary", 1);
  ASSERT_TRUE(mmap.ok());
  EXPECT_EQ(Names(*mmap), std::vector<std::string>{"img_0_of_1.mmap_indexed_binary"});
}

// DLIO's subfolders (train/<i % S>/...): files are found in them and sorted by name.
TEST(ListDataFiles, FindsFilesInSubfolders) {
  Dir d;
  d.Touch("train/1/img_1_of_4.npy");
  d.Touch("train/0/img_0_of_4.npy");
  d.Touch("train/1/img_3_of_4.npy");
  d.Touch("train/0/img_2_of_4.npy");
  auto files = ListDataFiles(**ConfinedDir::OpenRoot(d.path().string()), "train", "npy", 4);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Names(*files),
            (std::vector<std::string>{"img_0_of_4.npy", "img_1_of_4.npy", "img_2_of_4.npy", "img_3_of_4.npy"}));
}

// A checkpoint phase run directly: one agent holding rank 0 of 2, a non-transformer model (only rank 0 writes).
// Loads read rank 0's own file, or with recovery_rank_shift the files of rank (0 + 1) % 2 = 1, which holds none.
TEST(CheckpointPhase, SavesThePlannedFileAndShiftedLoadsReadAnotherRanksFiles) {
  Dir d;
  PhaseRunner runner(d.path(), "a", nullptr);
  PhaseCommand cmd;
  cmd.job_id = "j";
  cmd.kind = PhaseKind::kCheckpoint;
  cmd.spec.checkpoint = true;
  cmd.spec.train = false;
  cmd.spec.checkpoint_folder = "ck";
  cmd.spec.model_size_bytes = 12345;
  cmd.world = 2;
  cmd.first_rank = 0;
  cmd.local_ranks = 1;
  cmd.epoch = 1;
  cmd.checkpoint_step = 1;
  int barriers = 0;
  auto barrier = [&](uint64_t) {
    ++barriers;
    return absl::OkStatus();
  };
  cmd.phase_id = "save-checkpoint-1";
  auto saved = runner.Run(cmd, barrier, nullptr);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_EQ(saved->size(), 1u);
  ASSERT_EQ((*saved)[0].checkpoints.size(), 1u);
  EXPECT_EQ((*saved)[0].checkpoints[0].bytes, 12345u);
  EXPECT_FALSE((*saved)[0].checkpoints[0].load);
  EXPECT_EQ(fs::file_size(d.path() / "ck" / "global_epoch1_step1" / "model_states-0.pt"), 12345u);
  EXPECT_EQ(barriers, 1);  // before the save; none after it without rank_sync

  cmd.phase_id = "load-checkpoint-1";
  cmd.checkpoint_load = true;
  cmd.spec.checkpoint_rank_sync = true;
  cmd.spec.checkpoint_evict_cache = true;
  auto own = runner.Run(cmd, barrier, nullptr);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ((*own)[0].checkpoints[0].bytes, 12345u);
  EXPECT_TRUE((*own)[0].checkpoints[0].load);
  EXPECT_EQ(barriers, 3);  // before, and rank_sync after

  cmd.spec.recovery_rank_shift = true;
  auto shifted = runner.Run(cmd, barrier, nullptr);
  ASSERT_TRUE(shifted.ok()) << shifted.status();
  EXPECT_EQ((*shifted)[0].checkpoints[0].bytes, 0u);

  cmd.spec.checkpoint_folder = "../escape";
  auto escaped = runner.Run(cmd, barrier, nullptr);
  EXPECT_FALSE(escaped.ok());
  EXPECT_NE(std::string(escaped.status().message()).find("checkpoint.checkpoint_folder"), std::string::npos)
      << escaped.status();
}

// D5 of issue 13: a cancel stops a rank inside a long emulated compute step and a reader held back by the bandwidth
// cap, well within the coordinator's 2 s stop grace (before, a 20 s compute step ran out and a 1 MiB/s cap on 4 MiB
// samples held the phase for minutes).
TEST(Steps, CancelInterruptsComputeAndTheBandwidthCap) {
  Dir d;
  PhaseRunner runner(d.path(), "a", nullptr);
  PhaseCommand cmd;
  cmd.job_id = "j";
  cmd.spec.format = "npy";
  cmd.spec.num_files_train = 2;
  cmd.spec.num_samples_per_file = 1;
  cmd.spec.record_length_bytes = 4 << 20;
  cmd.spec.data_folder = "data";
  auto none = [](uint64_t) { return absl::OkStatus(); };
  cmd.phase_id = "generate";
  cmd.kind = PhaseKind::kGenerate;
  ASSERT_TRUE(runner.Run(cmd, none, nullptr).ok());
  cmd.kind = PhaseKind::kTrainEpoch;
  cmd.epoch = 1;
  struct Case {
    const char* what;
    double compute;
    int64_t cap;
  };
  for (const Case& c : {Case{"compute", 20.0, 0}, Case{"bandwidth cap", 0.0, 1 << 20}}) {
    cmd.phase_id = std::string("train-") + c.what;
    cmd.spec.computation_time.a = c.compute;
    cmd.spec.read_bandwidth_limit = c.cap;
    std::atomic<bool> cancel{false};
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cancel = true;
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto r = runner.Run(cmd, none, &cancel);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stopper.join();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << c.what << ": " << r.status();
    EXPECT_LT(took, 1.5) << c.what << ": the phase did not stop promptly";
  }
}

}  // namespace
}  // namespace dlio
