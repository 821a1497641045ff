#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// base/results (the results folder), base/results/job (a job's folder, held open) and base/outside (where a link
// planted by someone who can write to the results folder points).
class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("dlio-atomic-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "results");
    fs::create_directories(base_ / "outside");
    auto root = ConfinedDir::OpenRoot((base_ / "results").string(),
                                      {"--results-dir", "the coordinator", "its results folder"});
    ASSERT_TRUE(root.ok()) << root.status();
    auto job = (*root)->Sub("job", ConfinedDir::Mode::kCreate, "results of job job");
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *job;
  }
  void TearDown() override { fs::remove_all(base_); }
  // The job folder renamed away and a link to the outside folder put at its name, as the attack of issue 24 did.
  void SwapJobFolderForALink() {
    fs::rename(base_ / "results" / "job", base_ / "results" / "moved");
    fs::create_directory_symlink(base_ / "outside", base_ / "results" / "job");
  }
  static std::vector<std::string> Names(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  fs::path base_;
  std::shared_ptr<const ConfinedDir> job_;
};

// Issue 24 item 5: the coordinator checked the job folder once and then wrote by path, so a folder swapped for a
// link mid-job sent summary.json and its .tmp files outside. Written through the held descriptor, the file lands in
// the folder that was opened, wherever it went, and nothing at all appears outside.
TEST_F(AtomicFileTest, AJobFolderSwappedForALinkStillReceivesTheFilesAndNothingAppearsOutside) {
  SwapJobFolderForALink();
  ASSERT_TRUE(WriteFileAtomic(*job_, "summary.json", "{}\n").ok());
  absl::StatusOr<AtomicFile> f = AtomicFile::Create(job_->fd(), "trace.json", job_->path() + "/trace.json");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->Write("[").ok());
  ASSERT_TRUE(f->Write("]").ok());
  ASSERT_TRUE(f->Commit(/*sync=*/false).ok());
  EXPECT_EQ(Names(base_ / "outside"), std::vector<std::string>{}) << "nothing may appear through the link";
  EXPECT_EQ(Names(base_ / "results" / "moved"), (std::vector<std::string>{"summary.json", "trace.json"}));
  EXPECT_EQ(Read(base_ / "results" / "moved" / "summary.json"), "{}\n");
  EXPECT_EQ(Read(base_ / "results" / "moved" / "trace.json"), "[]");
  absl::StatusOr<std::string> back = ReadFileIn(*job_, "summary.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, "{}\n");
}

// A link planted at the final name is replaced, never written through.
TEST_F(AtomicFileTest, ALinkAtTheFinalNameIsReplacedNotFollowed) {
  std::ofstream(base_ / "outside" / "victim") << "keep";
  fs::create_symlink(base_ / "outside" / "victim", base_ / "results" / "job" / "summary.json");
  ASSERT_TRUE(WriteFileAtomic(*job_, "summary.json", "new").ok());
  EXPECT_EQ(Read(base_ / "outside" / "victim"), "keep");
  EXPECT_FALSE(fs::is_symlink(base_ / "results" / "job" / "summary.json"));
  EXPECT_EQ(Read(base_ / "results" / "job" / "summary.json"), "new");
}

// A failed write (here the rename: a folder holds the final name) and a file dropped before Commit leave no
// temporary behind.
TEST_F(AtomicFileTest, AFailedOrAbandonedWriteLeavesNoTemporary) {
  fs::create_directories(base_ / "results" / "job" / "summary.json" / "x");
  const absl::Status s = WriteFileAtomic(*job_, "summary.json", "{}");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(job_->path() + "/summary.json: cannot write ("));
  {
    absl::StatusOr<AtomicFile> f = AtomicFile::Create(job_->fd(), "trace.json", "trace.json");
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_TRUE(f->Write("partial").ok());
  }
  EXPECT_EQ(Names(base_ / "results" / "job"), std::vector<std::string>{"summary.json"});
}

// Only one name in the folder: a path with '/' or ".." is refused before anything is created.
TEST_F(AtomicFileTest, NamesWithASlashOrDotsAreRefusedNamingThePath) {
  for (const char* name : {"../outside/x", "a/b", "..", ".", ""}) {
    const absl::Status s = WriteFileAtomic(*job_, name, "x");
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_THAT(std::string(s.message()), HasSubstr(": cannot write (Invalid argument)")) << name;
  }
  EXPECT_EQ(Names(base_ / "results" / "job"), std::vector<std::string>{});
  EXPECT_EQ(Names(base_ / "outside"), std::vector<std::string>{});
}

// Reading follows no link and opens no FIFO (which would block the reader).
TEST_F(AtomicFileTest, ReadFileInRefusesLinksAndWhatIsNotARegularFile) {
  std::ofstream(base_ / "outside" / "secret") << "s";
  fs::create_symlink(base_ / "outside" / "secret", base_ / "results" / "job" / "0_output.json");
  ASSERT_EQ(::mkfifo((base_ / "results" / "job" / "fifo.json").c_str(), 0600), 0);
  EXPECT_FALSE(ReadFileIn(*job_, "0_output.json").ok());
  const absl::StatusOr<std::string> fifo = ReadFileIn(*job_, "fifo.json");
  ASSERT_FALSE(fifo.ok());
  EXPECT_THAT(std::string(fifo.status().message()), HasSubstr("not a regular file"));
}

TEST(ErrnoStatus, MapsErrnoToACodeAndNamesTheCause) {
  EXPECT_EQ(ErrnoStatus(ENOENT, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrnoStatus(EACCES, "x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoStatus(ENOSPC, "x").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoStatus(ENOSPC, "x").message(), "x (No space left on device)");
}

}  // namespace
}  // namespace dlio
