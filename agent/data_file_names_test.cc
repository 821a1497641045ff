// DataFileNames (agent/data_file_names.h): derived names are DLIO's names under the location, they cost nothing per
// file (measured: heap bytes and allocations, and the process's heap while a loader over 1,000,000 derived names
// runs), and the loaders read through them. Linked with the counting allocator (base/alloc_counter.h).
#include "agent/data_file_names.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "agent/dataset_files.h"
#include "agent/loader.h"
#include "agent/test_dir.h"
#include "base/alloc_counter.h"
#include "plan/epoch_plan.h"
#include "readers/format.h"
#include "storage/s3/client.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;

using Dir = TestDir;

size_t HeapInUse() {
  const struct mallinfo2 m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}

// The names are readers/format.h's DataFileRelPath under the folder, or S3Join'ed to the key prefix, for every
// subfolder layout (none, one, several) and padding (10 and 1,000,000 files).
TEST(DataFileNames, DerivedNamesAreDlioNamesUnderTheLocation) {
  for (const int64_t count : {int64_t{1}, int64_t{10}, int64_t{1000000}}) {
    for (const int64_t sub : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{12}}) {
      const DataFileNames folder = DataFileNames::Derived("/data/ds", false, "train", "img", count, sub, "npz");
      const DataFileNames keys = DataFileNames::Derived("data/ds/", true, "valid", "img", count, sub, "jpeg");
      const DataFileNames bare = DataFileNames::Derived("", true, "train", "f", count, sub, "npy");
      ASSERT_EQ(folder.size(), static_cast<size_t>(count));
      ASSERT_TRUE(folder.derived());
      std::string buf;
      for (const int64_t i : {int64_t{0}, count / 2, count - 1}) {
        const std::string at = "count " + std::to_string(count) + " subfolders " + std::to_string(sub);
        EXPECT_EQ(folder.Name(i, &buf), "/data/ds/" + DataFileRelPath("train", "img", i, count, sub, "npz")) << at;
        EXPECT_EQ(keys.Name(i, &buf), S3Join("data/ds/", DataFileRelPath("valid", "img", i, count, sub, "jpeg")))
            << at;
        EXPECT_EQ(bare[static_cast<size_t>(i)], DataFileRelPath("train", "f", i, count, sub, "npy")) << at;
      }
    }
  }
  const DataFileNames held(std::vector<std::string>{"a", "b"});
  std::string unused = "kept";
  EXPECT_EQ(&held.Name(1, &unused), &held.Name(1, nullptr));  // a held name by reference, the buffer untouched
  EXPECT_EQ(unused, "kept");
  EXPECT_EQ(held.All(), (std::vector<std::string>{"a", "b"}));
}

// Issue 27 item 3's target: with dataset.skip_listing the agent's memory does not grow with the dataset. Measured
// three ways: the names' own heap bytes at 10,000 and 1,000,000 files (equal, a few strings), the allocations
// DeriveDataFiles makes (a handful, not one per file) and a warm Name() (none). A listing's 1,000,000 names held
// as strings would be ~70 MB.
TEST(DataFileNames, DerivedNamesHoldNothingPerFile) {
  Dir d;
  absl::StatusOr<DataFileNames> small =
      DeriveDataFiles(DatasetLocation::Folder(d.root()), "train", "npz", 10000, 4, "img", 0);
  ASSERT_TRUE(small.ok()) << small.status();
  const size_t heap_before = HeapInUse();
  testing::AllocationCounter count;
  absl::StatusOr<DataFileNames> large =
      DeriveDataFiles(DatasetLocation::Folder(d.root()), "train", "npz", 1000000, 4, "img", 0);
  const uint64_t derive_allocations = count.count();
  const size_t heap_after = HeapInUse();
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_EQ(large->size(), 1000000u);
  EXPECT_EQ(large->HeapBytes(), small->HeapBytes());
  EXPECT_LT(large->HeapBytes(), 256u);
  EXPECT_LT(derive_allocations, 16u) << "allocations to derive 1,000,000 names";
  EXPECT_LT(heap_after - std::min(heap_after, heap_before), size_t{64} << 10) << "heap bytes of 1,000,000 names";
  std::string buf;
  large->Name(999999, &buf);  // the buffer grows once to the longest name
  testing::AllocationCounter warm;
  size_t chars = 0;
  for (int64_t i = 0; i < 1000000; ++i) chars += large->Name(i, &buf).size();
  EXPECT_EQ(warm.count(), 0u) << "allocations of 1,000,000 warm Name() calls";
  EXPECT_GT(chars, 0u);
  const DataFileNames listed(large->All());  // the same names held, as a listing gives them
  EXPECT_GT(listed.HeapBytes(), size_t{60} << 20);
}

// A listing whose names are the derived ones for its count is kept as the pattern (the same names, O(1) memory);
// one of other names (here the first 2 of a generated set of 4, DLIO's subset feature) is held as listed.
TEST(DataFileNames, AListingOfDlioNamesIsKeptAsThePattern) {
  Dir d;
  for (int64_t i = 0; i < 12; ++i) {
    const fs::path p = d.path() / DataFileRelPath("train", "img", i, 12, 3, "npz");
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
  }
  DataFileNaming naming;  // listed
  naming.subfolders = 3;
  const DatasetLocation where = DatasetLocation::Folder(d.root());
  absl::StatusOr<DataFileNames> found =
      FindDataFiles(where, "train", "npz", 12, naming, "dataset.num_files_train", "", "img", nullptr);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->derived());
  EXPECT_EQ(found->All(), *ListDataFiles(where, "train", "npz", 12));
  Dir subset;
  fs::create_directories(subset.path() / "train");
  for (int64_t i = 0; i < 4; ++i) std::ofstream(subset.path() / "train" / DataFileName("img", i, 4, "npz")) << "x";
  naming.subfolders = 0;
  absl::StatusOr<DataFileNames> two = FindDataFiles(DatasetLocation::Folder(subset.root()), "train", "npz", 2, naming,
                                                    "dataset.num_files_train", "", "img", nullptr);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_FALSE(two->derived());
  EXPECT_EQ(two->All(), (std::vector<std::string>{(subset.path() / "train/img_0_of_4.npz").string(),
                                                  (subset.path() / "train/img_1_of_4.npz").string()}));
}

// The loaders read through derived names: an index loader (npz) and a stream loader (tfrecord) over generated files
// in subfolders read every sample; a file missing is named in the loader's error, so the names come from the pattern.
TEST(DataFileNames, LoadersReadTheDerivedNames) {
  for (const std::string fmt : {"npz", "tfrecord"}) {
    Dir d;
    constexpr int64_t kFiles = 6;
    FormatOptions o;
    o.samples_per_file = 2;
    o.sample_dims = {16, 16};
    o.transfer_size = 4096;
    std::unique_ptr<Format> format = *MakeFormat(fmt, o);
    IoStats gen;
    for (int64_t i = 0; i < kFiles; ++i) {
      const fs::path p = d.path() / DataFileRelPath("train", "img", i, kFiles, 3, fmt);
      fs::create_directories(p.parent_path());
      ASSERT_TRUE(format->Generate(p.string(), static_cast<uint64_t>(i), gen).ok()) << p;
    }
    PlanParams p;
    p.num_files = kFiles;
    p.samples_per_file = 2;
    p.batch = 2;
    p.read_threads = 2;
    p.mode = fmt == "tfrecord" ? AccessMode::kStream : AccessMode::kIndex;
    absl::StatusOr<EpochPlan> plan = EpochPlan::Make(p, 1);
    ASSERT_TRUE(plan.ok()) << plan.status();
    LoaderConfig cfg;
    cfg.format = format.get();
    cfg.files = DataFileNames::Derived(d.path().string(), false, "train", "img", kFiles, 3, fmt);
    cfg.batch = p.batch;
    cfg.threads = p.read_threads;
    auto run = [&]() -> absl::Status {
      std::atomic<bool> cancel{false};
      std::unique_ptr<Loader> l = fmt == "tfrecord"
                                      ? Loader::StartStream(cfg, plan->RankStream(0), plan->steps(), &cancel)
                                      : Loader::StartIndex(cfg, *plan, 0, plan->steps(), &cancel);
      for (int64_t s = 0; s < plan->steps(); ++s) {
        if (absl::Status st = l->Next(); !st.ok()) return st;
      }
      EXPECT_EQ(l->Snapshot().samples, static_cast<uint64_t>(kFiles * 2)) << fmt;
      return absl::OkStatus();
    };
    EXPECT_TRUE(run().ok()) << fmt;
    fs::remove(d.path() / ("train/2/img_5_of_6." + fmt));
    const absl::Status missing = run();
    EXPECT_FALSE(missing.ok()) << fmt;
    EXPECT_NE(std::string(missing.message()).find("train/2/img_5_of_6." + fmt), std::string::npos) << missing;
  }
}

}  // namespace
}  // namespace dlio
