#include "agent/paths.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;

class PathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dlio-paths-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "data");
    fs::create_directories(root_.string() + "-outside");
  }
  void TearDown() override {
    fs::remove_all(root_);
    fs::remove_all(root_.string() + "-outside");
  }
  fs::path root_;
};

TEST_F(PathsTest, RelativePathResolvesUnderRoot) {
  auto p = ResolveUnderRoot(root_, "data/train", "dataset.data_folder");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, fs::weakly_canonical(root_ / "data/train"));
}

TEST_F(PathsTest, AbsolutePathInsideRootIsAccepted) {
  auto p = ResolveUnderRoot(root_, (root_ / "data").string(), "dataset.data_folder");
  ASSERT_TRUE(p.ok()) << p.status();
}

TEST_F(PathsTest, DotDotEscapeIsRefusedAndNamesTheKey) {
  auto p = ResolveUnderRoot(root_, "data/../../etc", "dataset.data_folder");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("dataset.data_folder"), std::string::npos);
  EXPECT_NE(p.status().message().find("outside the agent's data root"), std::string::npos);
}

TEST_F(PathsTest, AbsolutePathOutsideRootIsRefused) {
  EXPECT_FALSE(ResolveUnderRoot(root_, "/etc", "dataset.data_folder").ok());
}

TEST_F(PathsTest, SiblingWithCommonPrefixIsRefused) {
  // "<root>-outside" shares a string prefix with "<root>" but is not inside it.
  EXPECT_FALSE(ResolveUnderRoot(root_, root_.string() + "-outside", "dataset.data_folder").ok());
}

TEST_F(PathsTest, SymlinkPointingOutsideIsRefused) {
  fs::create_directory_symlink("/tmp", root_ / "escape");
  EXPECT_FALSE(ResolveUnderRoot(root_, "escape/x", "dataset.data_folder").ok());
}

}  // namespace
}  // namespace dlio
