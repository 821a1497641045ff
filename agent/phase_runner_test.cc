#include "agent/phase_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
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
  auto files = ListDataFiles(d.path(), "train", "indexed_binary", 2);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Names(*files), (std::vector<std::string>{"img_0_of_3.indexed_binary", "img_1_of_3.indexed_binary"}));
  auto all = ListDataFiles(d.path(), "train", "indexed_binary", 3);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  auto too_many = ListDataFiles(d.path(), "train", "indexed_binary", 4);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(too_many.status().message()).find("found 3"), std::string::npos) << too_many.status();
  auto mmap = ListDataFiles(d.path(), "train", "mmap_indexed_binary", 1);
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
  auto files = ListDataFiles(d.path(), "train", "npy", 4);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Names(*files),
            (std::vector<std::string>{"img_0_of_4.npy", "img_1_of_4.npy", "img_2_of_4.npy", "img_3_of_4.npy"}));
}

}  // namespace
}  // namespace dlio
