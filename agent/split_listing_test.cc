// The compact form of a split's listing (agent/split_listing.h): a listing of DLIO's names travels as a pattern and
// one of other names as the names compressed; either gives every agent exactly the listed names under its own data
// folder or key prefix. (The listing phase itself runs on real agents in tests/listing_test.cc.)
#include "agent/split_listing.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agent/test_dir.h"
#include "readers/format.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;

using Dir = TestDir;

std::vector<std::string> Derived(const std::string& head, int64_t count, int64_t subfolders) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < count; ++i) {
    out.push_back(head + DataFileRelPath("train", "img", i, count, subfolders, "npz"));
  }
  return out;
}

// DLIO's names (with subfolders) become the pattern: a few fields whatever the count, and another agent's data folder
// (another path) gets the same names under its own path.
TEST(SplitListing, DlioNamesTravelAsAPatternAndRebuildUnderAnotherFolder) {
  Dir lister, reader;
  absl::StatusOr<SplitListing> l =
      CompactListing(Derived(lister.path().string() + "/", 1000, 4), DatasetLocation::Folder(lister.root()), "train", "npz", 4,
                     "img");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->pattern);
  EXPECT_TRUE(l->names_zstd.empty());
  EXPECT_EQ(l->count, 1000);
  EXPECT_EQ(l->file_prefix, "img");
  EXPECT_EQ(l->subfolders, 4);
  EXPECT_EQ(l->ext, "npz");
  EXPECT_TRUE(Shareable(*l));
  absl::StatusOr<DataFileNames> names =
      ListingNames(*l, DatasetLocation::Folder(reader.root()), 1000, "dataset.num_files_train");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_TRUE(names->derived());
  EXPECT_EQ(names->All(), Derived(reader.path().string() + "/", 1000, 4));
}

// Other names (not the job's file_prefix, one out of order of the convention) travel compressed and come back
// exactly, in the listing's order, under the reader's own location: a folder, and a bucket's key prefix.
TEST(SplitListing, OtherNamesTravelCompressedAndRoundTripExactly) {
  Dir lister, reader;
  const std::vector<std::string> rel = {"a.npz", "sub/b_1.npz", "zz/unicode-\xc3\xa9.npz", "img_3_of_9.npz"};
  std::vector<std::string> names;
  for (const std::string& r : rel) names.push_back(lister.path().string() + "/train/" + r);
  absl::StatusOr<SplitListing> l =
      CompactListing(names, DatasetLocation::Folder(lister.root()), "train", "npz", 0, "img");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_FALSE(l->pattern);
  EXPECT_FALSE(l->names_zstd.empty());
  EXPECT_TRUE(Shareable(*l));
  absl::StatusOr<DataFileNames> back =
      ListingNames(*l, DatasetLocation::Folder(reader.root()), 4, "dataset.num_files_train");
  ASSERT_TRUE(back.ok()) << back.status();
  std::vector<std::string> want;
  for (const std::string& r : rel) want.push_back(reader.path().string() + "/train/" + r);
  EXPECT_EQ(back->All(), want);

  auto s3 = std::make_shared<S3Config>();
  std::vector<std::string> keys;
  for (const std::string& r : rel) keys.push_back("data/valid/" + r);
  absl::StatusOr<SplitListing> k = CompactListing(keys, DatasetLocation::Bucket(s3, "data"), "valid", "npz", 0, "img");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_FALSE(k->pattern);
  absl::StatusOr<DataFileNames> kb =
      ListingNames(*k, DatasetLocation::Bucket(s3, "data/"), 4, "dataset.num_files_eval");
  ASSERT_TRUE(kb.ok()) << kb.status();
  EXPECT_EQ(kb->All(), keys);
}

// A listing that does not fit the job is an error naming the key and the agent; corrupt names are refused.
TEST(SplitListing, AListingOfAnotherCountOrCorruptNamesIsRefusedNamingTheKey) {
  Dir d;
  absl::StatusOr<SplitListing> l =
      CompactListing({d.path().string() + "/train/x.npz"}, DatasetLocation::Folder(d.root()), "train", "npz", 0, "img");
  ASSERT_TRUE(l.ok());
  l->agent = "agent-0";
  absl::StatusOr<DataFileNames> more =
      ListingNames(*l, DatasetLocation::Folder(d.root()), 2, "dataset.num_files_train");
  EXPECT_EQ(more.status().message(),
            "dataset.num_files_train: the job's listing of train by agent 'agent-0' has 1 names, the job 2");
  l->names_zstd[l->names_zstd.size() / 2] ^= 0x5a;
  l->names_zstd.resize(l->names_zstd.size() - 1);
  absl::StatusOr<DataFileNames> bad =
      ListingNames(*l, DatasetLocation::Folder(d.root()), 1, "dataset.num_files_train");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dataset.num_files_train: the job's listing of train by agent 'agent-0'"),
            std::string::npos)
      << bad.status();
}

// Names that compress to more than kMaxListingNamesBytes are not shared (every agent then lists, as before); 200,000
// generated-looking names of another prefix compress far below it.
TEST(SplitListing, NamesTooLargeToShareAreNotSharedAndLargeRealisticSetsFit) {
  Dir d;
  std::mt19937 rng(7);
  std::vector<std::string> random;
  for (int i = 0; i < 120000; ++i) {
    std::string n(40, ' ');
    for (char& c : n) c = static_cast<char>('!' + rng() % 90);
    for (char& c : n) c = c == '/' ? '_' : c;
    random.push_back(d.path().string() + "/train/" + std::to_string(1000000 + i) + n + ".npz");
  }
  absl::StatusOr<SplitListing> big = CompactListing(random, DatasetLocation::Folder(d.root()), "train", "npz", 0, "");
  ASSERT_TRUE(big.ok());
  EXPECT_FALSE(Shareable(*big));
  EXPECT_EQ(big->count, 120000);

  std::vector<std::string> other;
  for (int64_t i = 0; i < 200000; ++i) {
    other.push_back(d.path().string() + "/" + DataFileRelPath("train", "sample", i, 200000, 8, "jpeg"));
  }
  absl::StatusOr<SplitListing> l = CompactListing(other, DatasetLocation::Folder(d.root()), "train", "jpeg", 8, "img");
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(l->pattern);
  EXPECT_TRUE(Shareable(*l));
  EXPECT_LT(l->names_zstd.size(), size_t{1} << 20) << "200,000 names compressed to " << l->names_zstd.size();
  absl::StatusOr<DataFileNames> back = ListingNames(*l, DatasetLocation::Folder(d.root()), 200000, "k");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->All(), other);
}

}  // namespace
}  // namespace dlio
