// DLIO's file discovery (agent/dataset_files.h) over a data folder: which files count, their order, and the errors,
// which name the key, the folder and how to make the files. (The bucket side runs against a real gateway in
// tests/s3_test.cc.)
#include "agent/dataset_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "agent/test_dir.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;

using Dir = TestDir;

DatasetLocation Folder(const Dir& d) { return DatasetLocation::Folder(d.root()); }

std::vector<std::string> Names(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) out.push_back(fs::path(p).filename().string());
  return out;
}
std::vector<std::string> Names(const DataFileNames& names) { return Names(names.All()); }

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
  auto files = ListDataFiles(Folder(d), "train", "indexed_binary", 2);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Names(*files), (std::vector<std::string>{"img_0_of_3.indexed_binary", "img_1_of_3.indexed_binary"}));
  auto all = ListDataFiles(Folder(d), "train", "indexed_binary", 3);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  auto too_many = ListDataFiles(Folder(d), "train", "indexed_binary", 4);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(too_many.status().message()).find("found 3"), std::string::npos) << too_many.status();
  auto mmap = ListDataFiles(Folder(d), "train", "mmap_indexed_binary", 1);
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
  auto files = ListDataFiles(Folder(d), "train", "npy", 4);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Names(*files),
            (std::vector<std::string>{"img_0_of_4.npy", "img_1_of_4.npy", "img_2_of_4.npy", "img_3_of_4.npy"}));
}

// The errors name the key, the folder and what to do; the hint follows. A symbolic link is refused, a name that is
// only the extension, a folder so named and a file two subfolders down are no data files.
TEST(ListDataFiles, ErrorsNameKeyAndFolderAndLinksAreRefused) {
  Dir d;
  d.Touch("train/img_0_of_2.npy");
  d.Touch("train/.npy");
  d.Touch("train/0/deeper/img_1_of_2.npy");
  fs::create_directories(d.path() / "train" / "dir.npy");
  const std::string train = d.root().path() + "/train";
  auto few = ListDataFiles(Folder(d), "train", "npy", 2, "dataset.num_files_train", "; HINT");
  EXPECT_EQ(few.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(few.status().message(), "dataset.num_files_train: 2 .npy files expected under '" + train +
                                        "', found 1 (generate them with workflow.generate_data: true); HINT");
  auto missing = ListDataFiles(Folder(d), "valid", "npy", 1, "dataset.num_files_eval", "; HINT");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "dataset.data_folder: cannot list 'valid' does not exist under '" +
                                            d.root().path() +
                                            "' (generate the dataset with workflow.generate_data: true); HINT");
  fs::create_symlink(d.path() / "train" / "img_0_of_2.npy", d.path() / "train" / "img_1_of_2.npy");
  auto linked = ListDataFiles(Folder(d), "train", "npy", 1);
  EXPECT_EQ(linked.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(linked.status().message(), "dataset.data_folder: '" + train + "/img_1_of_2.npy' is a symbolic link; the "
                                       "agent follows none below its data root (docs/fleet.md)");
}

// A held folder is in place until its path from the data root names another folder or none: moved away (out of the
// data root), or replaced by a new folder of the same name. Its files are still removed through it once moved.
TEST(HeldFolder, NoticesAFolderMovedOrReplacedAndUnlinksThroughTheDescriptor) {
  Dir d;
  d.Touch("data/train/a.tmp-1");
  std::shared_ptr<const ConfinedDir> root = *ConfinedDir::OpenRoot(d.path().string());
  std::shared_ptr<const ConfinedDir> data = *root->Sub("data", ConfinedDir::Mode::kExisting, "dataset.data_folder");
  const std::string train = data->path() + "/train";
  absl::StatusOr<std::shared_ptr<const HeldFolder>> held = HeldFolder::Open(root, *data, train);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE((*held)->StillInPlace().ok());
  fs::rename(d.path() / "data" / "train", d.path() / "away");
  const absl::Status moved = (*held)->StillInPlace();
  EXPECT_EQ(moved.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(moved.message(), "dataset.data_folder: the folder '" + train + "' is no longer where it was (moved or "
                             "replaced during generation); generation stopped and removed its temporary files");
  EXPECT_EQ((*held)->Unlink("a.tmp-1"), 0);
  EXPECT_FALSE(fs::exists(d.path() / "away" / "a.tmp-1"));
  fs::create_directories(d.path() / "data" / "train");  // a new folder where the old one was
  EXPECT_FALSE((*held)->StillInPlace().ok());
  // A folder that is not there cannot be held; the error names it.
  fs::remove(d.path() / "data" / "train");
  absl::StatusOr<std::shared_ptr<const HeldFolder>> gone = HeldFolder::Open(root, *data, train);
  EXPECT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find(train), std::string::npos) << gone.status();
}

// Issue 24 item 7: files of another `_of_N` layout in the folder were read with the job's (a job of 4 files read
// 19.7 MB instead of 6.6 MB): the first 4 sorted names mixed img_*_of_4 and img_*_of_8. With the job's prefix the
// job reads its own layout and says what it left out; one layout alone keeps DLIO's subset feature; several without
// the job's own complete are refused, naming them.
TEST(ListDataFiles, ReadsOnlyTheJobsOwnLayoutAndSaysWhatItLeftOut) {
  Dir d;
  for (int i = 0; i < 4; ++i) d.Touch("train/img_" + std::to_string(i) + "_of_4.npz");
  for (int i = 0; i < 8; ++i) d.Touch("train/img_" + std::to_string(i) + "_of_8.npz");
  d.Touch("train/scan_17.npz");
  std::string ignored;
  auto files = ListDataFiles(Folder(d), "train", "npz", 4, "dataset.num_files_train", "", "img", &ignored);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Names(*files),
            (std::vector<std::string>{"img_0_of_4.npz", "img_1_of_4.npz", "img_2_of_4.npz", "img_3_of_4.npz"}));
  EXPECT_EQ(ignored, "dataset.num_files_train: read the 4 files of this job's layout img_*_of_4.npz under '" +
                         d.root().path() + "/train'; left out the files of other layouts (other names: 1 file, "
                         "img_*_of_8.npz: 8 files)");

  // The job of 2 files: its layout is not there, and two others are: refused, naming every layout.
  auto mixed = ListDataFiles(Folder(d), "train", "npz", 2, "dataset.num_files_train", "", "img", &ignored);
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(mixed.status().message())
                .find("dataset.num_files_train: the data files under '" + d.root().path() +
                      "/train' are of several layouts (other names: 1 file, img_*_of_4.npz: 4 files, img_*_of_8.npz: "
                      "8 files) and this job's img_*_of_2.npz has 0 of its 2"),
            std::string::npos)
      << mixed.status();

  // One layout alone: DLIO's subset feature (the first 2 of the 8 generated), whatever the job's prefix.
  Dir one;
  for (int i = 0; i < 8; ++i) one.Touch("train/img_" + std::to_string(i) + "_of_8.npz");
  ignored.clear();
  auto subset = ListDataFiles(Folder(one), "train", "npz", 2, "dataset.num_files_train", "", "img", &ignored);
  ASSERT_TRUE(subset.ok()) << subset.status();
  EXPECT_EQ(Names(*subset), (std::vector<std::string>{"img_0_of_8.npz", "img_1_of_8.npz"}));
  EXPECT_EQ(ignored, "");
  // Zero-padded indices (DLIO pads to the digits of N) and subfolders are the same layout.
  Dir padded;
  for (int i = 0; i < 12; ++i) {
    padded.Touch("train/" + std::to_string(i % 2) + "/img_" + (i < 10 ? "0" : "") + std::to_string(i) + "_of_12.npz");
  }
  padded.Touch("train/img_0_of_3.npz");
  auto twelve = ListDataFiles(Folder(padded), "train", "npz", 12, "dataset.num_files_train", "", "img", &ignored);
  ASSERT_TRUE(twelve.ok()) << twelve.status();
  EXPECT_EQ(twelve->size(), 12u);
  EXPECT_EQ(Names(*twelve).front(), "img_00_of_12.npz");
}

// dataset.skip_listing over a folder: the names generation gives (subfolders round-robin, padded), in index order,
// without listing (a stray file of another name changes nothing); the first, every interval-th and the last are
// checked, and a missing one among them is named.
TEST(DeriveDataFiles, NamesFollowDlioNamingAndASampleIsChecked) {
  Dir d;
  for (int i = 0; i < 12; ++i) d.Touch("train/" + DataFileRelPath("train", "img", i, 12, 3, "npz").substr(6));
  d.Touch("train/1/other.npz");
  auto files = DeriveDataFiles(Folder(d), "train", "npz", 12, 3, "img", 5);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 12u);
  EXPECT_EQ((*files)[0], d.path().string() + "/train/0/img_00_of_12.npz");
  EXPECT_EQ((*files)[4], d.path().string() + "/train/1/img_04_of_12.npz");
  EXPECT_EQ((*files)[11], d.path().string() + "/train/2/img_11_of_12.npz");
  // Checked: 0, 5, 10 and the last (11). A missing name between them is not looked for.
  fs::remove(d.path() / "train/0/img_03_of_12.npz");
  EXPECT_TRUE(DeriveDataFiles(Folder(d), "train", "npz", 12, 3, "img", 5).ok());
  fs::remove(d.path() / "train/2/img_11_of_12.npz");
  auto missing = DeriveDataFiles(Folder(d), "train", "npz", 12, 3, "img", 5);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(missing.status().message()).rfind(
                "dataset.skip_listing: file '" + d.path().string() + "/train/2/img_11_of_12.npz' does not exist; with "
                "skip_listing the names are derived from dataset.file_prefix, dataset.num_files_train and the "
                "subfolders (DLIO's naming), not listed: generate the dataset (workflow.generate_data: true) or set "
                "dataset.skip_listing: false to list it", 0),
            0u)
      << missing.status();
  // Interval 1 checks every name: the one in the middle is found missing too; 0 checks none.
  d.Touch("train/2/img_11_of_12.npz");
  auto every = DeriveDataFiles(Folder(d), "train", "npz", 12, 3, "img", 1);
  ASSERT_FALSE(every.ok());
  EXPECT_NE(std::string(every.status().message()).find("img_03_of_12.npz"), std::string::npos);
  EXPECT_TRUE(DeriveDataFiles(Folder(d), "train", "npz", 12, 3, "img", 0).ok());
  // No subfolders: flat names.
  Dir flat;
  flat.Touch("train/img_0_of_2.npz");
  flat.Touch("train/img_1_of_2.npz");
  auto two = DeriveDataFiles(Folder(flat), "train", "npz", 2, 0, "img", 1);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(Names(*two), (std::vector<std::string>{"img_0_of_2.npz", "img_1_of_2.npz"}));
}

// FindDataFiles: derived when asked; with skip_listing unset (list_if_other_names), a dataset whose first derived name
// is missing (here the first 2 of a generated set of 4, DLIO's subset feature) is listed as before; with skip_listing
// set it is an error naming that name. Not derived: listed.
TEST(FindDataFiles, DerivesOrListsAndFallsBackToListingForOtherNamesWhenUnset) {
  Dir d;
  for (int i = 0; i < 4; ++i) d.Touch("train/img_" + std::to_string(i) + "_of_4.npz");
  DataFileNaming naming;
  naming.derive = true;
  naming.list_if_other_names = true;
  naming.interval = 1;
  auto subset = FindDataFiles(Folder(d), "train", "npz", 2, naming, "dataset.num_files_train", "", "img", nullptr);
  ASSERT_TRUE(subset.ok()) << subset.status();
  EXPECT_EQ(Names(*subset), (std::vector<std::string>{"img_0_of_4.npz", "img_1_of_4.npz"}));
  auto all = FindDataFiles(Folder(d), "train", "npz", 4, naming, "dataset.num_files_train", "", "img", nullptr);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 4u);
  naming.list_if_other_names = false;
  auto strict = FindDataFiles(Folder(d), "train", "npz", 2, naming, "dataset.num_files_train", "", "img", nullptr);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(std::string(strict.status().message()).find("img_0_of_2.npz' does not exist"), std::string::npos)
      << strict.status();
  naming.derive = false;
  auto listed = FindDataFiles(Folder(d), "train", "npz", 2, naming, "dataset.num_files_train", "", "img", nullptr);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(Names(*listed), (std::vector<std::string>{"img_0_of_4.npz", "img_1_of_4.npz"}));
}

}  // namespace
}  // namespace dlio
