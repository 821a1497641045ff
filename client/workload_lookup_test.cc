#include "client/workload_lookup.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A folder of workloads (and a working folder) of its own, removed at the end.
class WorkloadLookup : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dlio-lookup-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    folder_ = root_ + "/share/dlio/configs/workloads";
    fs::create_directories(folder_);
    for (const char* name : {"unet3d_a100", "unet3d_h100", "unet3d_v100", "resnet50_h100", "quickstart"}) {
      std::ofstream(folder_ + "/" + name + ".yaml") << "dataset:\n  format: npz\n";
    }
    std::ofstream(folder_ + "/README.md") << "not a workload\n";
    old_cwd_ = fs::current_path();
    fs::create_directories(root_ + "/cwd");
    fs::current_path(root_ + "/cwd");
  }
  void TearDown() override {
    fs::current_path(old_cwd_);
    fs::remove_all(root_);
  }
  std::string Message(const std::string& arg, const std::vector<std::string>& folders) {
    absl::StatusOr<std::string> r = ResolveJobArgument(arg, folders);
    EXPECT_FALSE(r.ok()) << arg << " resolved to " << (r.ok() ? *r : "");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string m(r.status().message());
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  }

  std::string root_, folder_;
  fs::path old_cwd_;
};

TEST_F(WorkloadLookup, DliosWorkloadFormAndABareNameComeFromTheFolder) {
  const std::vector<std::string> folders = {root_ + "/absent", folder_};  // the first existing folder
  EXPECT_EQ(*ResolveJobArgument("workload=unet3d_h100", folders), folder_ + "/unet3d_h100.yaml");
  EXPECT_EQ(*ResolveJobArgument("unet3d_h100", folders), folder_ + "/unet3d_h100.yaml");
  EXPECT_EQ(*ResolveJobArgument("unet3d_h100.yaml", folders), folder_ + "/unet3d_h100.yaml");
  EXPECT_EQ(WorkloadNames(folder_),
            (std::vector<std::string>{"quickstart", "resnet50_h100", "unet3d_a100", "unet3d_h100", "unet3d_v100"}));
}

TEST_F(WorkloadLookup, PathsAndFilesHereStayAsGiven) {
  std::ofstream("unet3d_h100") << "train:\n  epochs: 1\n";  // a file of that name here wins
  EXPECT_EQ(*ResolveJobArgument("unet3d_h100", {folder_}), "unet3d_h100");
  EXPECT_EQ(*ResolveJobArgument("./unet3d_h100", {folder_}), "./unet3d_h100");
  // A path is never looked up: reading it reports what is wrong with it.
  EXPECT_EQ(*ResolveJobArgument("sub/missing.yaml", {folder_}), "sub/missing.yaml");
  EXPECT_EQ(*ResolveJobArgument("/nonexistent/job.yaml", {folder_}), "/nonexistent/job.yaml");
}

TEST_F(WorkloadLookup, AnUnknownNamePointsToTheFolderAndListsNearNames) {
  const std::string typo = Message("unet3d_h10", {folder_});
  EXPECT_EQ(typo, "unet3d_h10: cannot read the job file (No such file or directory), nor is it a workload in " +
                      folder_ + " (near names: unet3d_h100, unet3d_a100, unet3d_v100)");
  EXPECT_THAT(Message("workload=unet3d", {folder_}),
              HasSubstr("workload=unet3d: no workload unet3d in " + folder_ +
                        " (near names: unet3d_a100, unet3d_h100, unet3d_v100)"));
  EXPECT_THAT(Message("workload=bert", {folder_}),
              HasSubstr(" in " + folder_ + " (it holds 5 workloads, e.g. quickstart, resnet50_h100, unet3d_a100, "));
  EXPECT_THAT(Message("workload=README", {folder_}), HasSubstr("no workload README in"));
  EXPECT_THAT(Message("workload=", {folder_}), HasSubstr("workload=: expected workload=NAME"));
  EXPECT_THAT(Message("workload=../x", {folder_}), HasSubstr("expected workload=NAME"));
  EXPECT_THAT(Message("unet3d_h100", {root_ + "/absent"}),
              HasSubstr("nor is it a workload, and no folder of shipped workloads was found (looked in " + root_ +
                        "/absent)"));
}

// The folders searched: beside the binary (PREFIX/bin -> PREFIX/share/dlio/configs/workloads), then the source tree.
TEST(WorkloadFolders, BesideTheBinaryThenTheSourceTree) {
  const std::vector<std::string> folders = ShippedWorkloadFolders();
  ASSERT_EQ(folders.size(), 2u);
  const fs::path self = fs::read_symlink("/proc/self/exe");
  EXPECT_EQ(folders[0], (self.parent_path().parent_path() / "share/dlio/configs/workloads").string());
  EXPECT_EQ(folders[1], std::string(DLIO_SOURCE_DIR) + "/configs/workloads");
  EXPECT_TRUE(fs::is_regular_file(folders[1] + "/unet3d_h100.yaml"));
}

}  // namespace
}  // namespace dlio
