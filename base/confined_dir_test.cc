#include "base/confined_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Runs twice in the suite: with openat2 (when the kernel has it) and with DLIO_CONFINE_WALK=1 (the O_NOFOLLOW walk).
class ConfinedDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("dlio-confined-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "root" / "data" / "train");
    fs::create_directories(base_ / "outside");
    fs::create_directory_symlink(base_ / "outside", base_ / "root" / "lnk");
    std::ofstream(base_ / "outside" / "secret") << "s";
    fs::create_symlink(base_ / "outside" / "secret", base_ / "root" / "data" / "train" / "img_0_of_1.npz");
    auto r = ConfinedDir::OpenRoot((base_ / "root").string());
    ASSERT_TRUE(r.ok()) << r.status();
    root_ = *r;
  }
  void TearDown() override { fs::remove_all(base_); }
  bool OutsideUntouched() const {
    size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(base_ / "outside")) n += e.path().filename() != "secret";
    return n == 0 && fs::file_size(base_ / "outside" / "secret") == 1;
  }
  fs::path base_;
  std::shared_ptr<const ConfinedDir> root_;
};

// D3 of issue 13: "zz/../lnk" (with lnk a link inside the root pointing out) passed the old weakly_canonical check,
// as did "qq/../lnk/ck" for checkpoints and a link below the data folder; now every component is checked when used.
TEST_F(ConfinedDirTest, SymbolicLinksBelowTheRootAreNeverFollowed) {
  for (const char* path : {"lnk", "zz/../lnk", "qq/../lnk/ck", "data/../lnk/x"}) {
    for (auto mode : {ConfinedDir::Mode::kExisting, ConfinedDir::Mode::kCreate}) {
      auto d = root_->Sub(path, mode, "dataset.data_folder");
      ASSERT_FALSE(d.ok()) << path;
      EXPECT_THAT(std::string(d.status().message()), HasSubstr("dataset.data_folder: "));
      EXPECT_THAT(std::string(d.status().message()), HasSubstr("'lnk', a symbolic link")) << d.status();
    }
  }
  EXPECT_EQ(root_->Open((base_ / "root" / "lnk" / "new").string(), O_WRONLY | O_CREAT), -1);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_EQ(root_->Open("data/train/img_0_of_1.npz", O_RDONLY), -1) << "a link planted as a data file";
  EXPECT_EQ(errno, ELOOP);
  EXPECT_EQ(root_->MakeParents("lnk/a/b/c"), -1);
  std::ofstream((base_ / "root" / "data" / "f.tmp").string()) << "x";
  EXPECT_EQ(root_->Rename("data/f.tmp", "lnk/f"), -1);
  auto entries = root_->List("data/train");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].type, ConfinedDir::Entry::Type::kLink);
  EXPECT_FALSE(root_->NearestExisting("lnk/deeper", "k").ok());
  EXPECT_TRUE(OutsideUntouched());
}

// D2 of issue 13 (file_prefix "../../../../x") and ".." or absolute paths leaving the root.
TEST_F(ConfinedDirTest, PathsLeavingTheRootAreRefused) {
  for (const char* path : {"../x", "data/../../x", "data/train/../../../../x_0_of_2.npz"}) {
    EXPECT_EQ(root_->Open(path, O_WRONLY | O_CREAT), -1) << path;
    EXPECT_EQ(errno, EXDEV) << path;
    auto d = root_->Sub(path, ConfinedDir::Mode::kCreate, "dataset.data_folder");
    ASSERT_FALSE(d.ok());
    EXPECT_THAT(std::string(d.status().message()), HasSubstr("through '..'"));
  }
  auto abs = root_->Sub("/etc", ConfinedDir::Mode::kExisting, "dataset.data_folder");
  ASSERT_FALSE(abs.ok());
  EXPECT_THAT(std::string(abs.status().message()), HasSubstr("'/etc' is outside"));
  auto sibling = root_->Sub((base_ / "root-x").string(), ConfinedDir::Mode::kCreate, "k");
  EXPECT_FALSE(sibling.ok()) << "a sibling sharing the root's name as a prefix is outside";
  EXPECT_FALSE(fs::exists(base_ / "x"));
  EXPECT_FALSE(fs::exists(base_ / "root-x"));
  EXPECT_TRUE(OutsideUntouched());
}

TEST_F(ConfinedDirTest, OrdinaryPathsWork) {
  auto data = root_->Sub("new/data", ConfinedDir::Mode::kCreate, "dataset.data_folder");
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ((*data)->path(), (fs::canonical(base_ / "root") / "new" / "data").string());
  const std::string file = (*data)->path() + "/train/0/img_0_of_1.npz";
  ASSERT_EQ((*data)->MakeParents(file), 0);
  const int fd = (*data)->Open(file + ".tmp", O_WRONLY | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::write(fd, "abc", 3), 3);
  ::close(fd);
  ASSERT_EQ((*data)->Rename(file + ".tmp", file), 0);
  const int rd = (*data)->Open(file, O_RDONLY);
  ASSERT_GE(rd, 0);
  ::close(rd);
  auto again = root_->Sub("./new//data/", ConfinedDir::Mode::kExisting, "k");
  ASSERT_TRUE(again.ok()) << again.status();
  auto abs = root_->Sub((base_ / "root" / "new").string(), ConfinedDir::Mode::kExisting, "k");
  EXPECT_TRUE(abs.ok()) << "an absolute path inside the root";
  auto nearest = root_->NearestExisting("new/data/not/yet", "k");
  ASSERT_TRUE(nearest.ok()) << nearest.status();
  EXPECT_EQ((*nearest)->path(), (*data)->path());
  EXPECT_EQ((*data)->Unlink(file), 0);
  // The root's own path may go through a link: the operator chose it.
  fs::create_directory_symlink(base_ / "root", base_ / "root-link");
  EXPECT_TRUE(ConfinedDir::OpenRoot((base_ / "root-link").string()).ok());
}

}  // namespace
}  // namespace dlio
