#include "common/epoch_plan.h"

#include <chrono>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;

PlanParams Index(int64_t files, int64_t spf, int64_t batch, int64_t world) {
  PlanParams p;
  p.num_files = files;
  p.samples_per_file = spf;
  p.batch = batch;
  p.world = world;
  p.mode = AccessMode::kIndex;
  return p;
}

PlanParams Stream(int64_t files, int64_t spf, int64_t batch, int64_t world, int64_t threads) {
  PlanParams p = Index(files, spf, batch, world);
  p.read_threads = threads;
  p.mode = AccessMode::kStream;
  return p;
}

EpochPlan MakeOk(const PlanParams& p, int64_t epoch = 1) {
  absl::StatusOr<EpochPlan> plan = EpochPlan::Make(p, epoch);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *std::move(plan);
}

std::vector<std::pair<uint32_t, uint32_t>> Flatten(const std::vector<SampleRef>& v) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const SampleRef& r : v) out.emplace_back(r.file, r.sample);
  return out;
}

// Every sample at most once across the fleet; exactly steps*B*P consumed; the rest counted as dropped.
void ExpectIndexCoverage(const PlanParams& p, int64_t epoch) {
  const EpochPlan plan = MakeOk(p, epoch);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (int64_t r = 0; r < p.world; ++r) {
    const std::vector<SampleRef> mine = plan.RankSamples(r);
    ASSERT_EQ(static_cast<int64_t>(mine.size()), plan.steps() * p.batch);
    for (const SampleRef& s : mine) {
      ASSERT_LT(s.file, p.num_files);
      ASSERT_LT(s.sample, p.samples_per_file);
      ASSERT_TRUE(seen.insert({s.file, s.sample}).second) << "sample read twice: " << s.file << "/" << s.sample;
    }
  }
  const int64_t n = p.num_files * p.samples_per_file;
  EXPECT_EQ(static_cast<int64_t>(seen.size()), plan.steps() * p.batch * p.world);
  EXPECT_EQ(plan.DroppedSamples(), n - static_cast<int64_t>(seen.size()));
  if (p.max_steps < 0) {
    EXPECT_LT(plan.DroppedSamples(), p.batch * p.world);  // only the drop-last remainder
  }
}

// 3 agents x 2 ranks = world 6; even and uneven file counts; every shuffle combination.
TEST(EpochPlan, IndexModeReadsEverySampleOnceAcrossTheFleet) {
  for (auto [files, spf] : std::vector<std::pair<int64_t, int64_t>>{{17, 3}, {18, 4}, {24, 1}, {7, 11}}) {
    for (ShuffleMode fs : {ShuffleMode::kOff, ShuffleMode::kSeed, ShuffleMode::kRandom}) {
      for (ShuffleMode ss : {ShuffleMode::kOff, ShuffleMode::kSeed}) {
        PlanParams p = Index(files, spf, 4, 6);
        p.file_shuffle = fs;
        p.sample_shuffle = ss;
        SCOPED_TRACE(testing::Message() << files << "x" << spf << " file_shuffle " << ShuffleModeName(fs)
                                        << " sample_shuffle " << ShuffleModeName(ss));
        ExpectIndexCoverage(p, 1);
        ExpectIndexCoverage(p, 2);
      }
    }
  }
}

TEST(EpochPlan, IndexModeStepsAndDropsAsDlio) {
  // 17 files x 3 samples, batch 4, world 6: floor(51 / 24) = 2 steps, 3 samples dropped.
  const EpochPlan uneven = MakeOk(Index(17, 3, 4, 6));
  EXPECT_EQ(uneven.steps(), 2);
  EXPECT_EQ(uneven.DroppedSamples(), 3);
  const EpochPlan even = MakeOk(Index(18, 4, 4, 6));
  EXPECT_EQ(even.steps(), 3);
  EXPECT_EQ(even.DroppedSamples(), 0);
  EXPECT_EQ(*EpochPlan::Steps(Index(17, 3, 4, 6)), 2);
}

TEST(EpochPlan, UnshuffledRanksTakeContiguousFileMajorSlices) {
  const EpochPlan plan = MakeOk(Index(5, 2, 2, 2));  // 10 samples, 2 steps of 2 per rank, 2 dropped
  EXPECT_EQ(Flatten(plan.RankSamples(0)), (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  EXPECT_EQ(Flatten(plan.RankSamples(1)), (std::vector<std::pair<uint32_t, uint32_t>>{{2, 0}, {2, 1}, {3, 0}, {3, 1}}));
  EXPECT_TRUE(plan.RankSamples(2).empty());
  EXPECT_TRUE(plan.RankStream(0).thread_files.empty());
}

TEST(EpochPlan, FileShuffleKeepsSamplesOfAFileTogether) {
  PlanParams p = Index(10, 3, 3, 1);
  p.file_shuffle = ShuffleMode::kSeed;
  const std::vector<SampleRef> s = MakeOk(p).RankSamples(0);
  ASSERT_EQ(s.size(), 30u);
  bool moved = false;
  for (size_t i = 0; i < s.size(); i += 3) {
    EXPECT_EQ(s[i].file, s[i + 1].file);
    EXPECT_EQ(s[i].file, s[i + 2].file);
    EXPECT_EQ(s[i].sample, 0u);
    moved |= s[i].file != i / 3;
  }
  EXPECT_TRUE(moved);
}

TEST(EpochPlan, SampleShuffleIsAGlobalPermutation) {
  PlanParams p = Index(64, 4, 4, 2);
  p.sample_shuffle = ShuffleMode::kSeed;
  const std::vector<SampleRef> r0 = MakeOk(p).RankSamples(0);
  std::set<uint32_t> files;
  for (const SampleRef& s : r0) files.insert(s.file);
  // Unshuffled, rank 0 would read files 0..31 only.
  EXPECT_GT(*files.rbegin(), 32u);
  int split_batches = 0;  // a file's samples land in different batches
  for (size_t i = 0; i + 1 < r0.size(); ++i) split_batches += r0[i].file != r0[i + 1].file;
  EXPECT_GT(split_batches, 100);
}

TEST(EpochPlan, SeedsMakePlansReproducibleAndEpochsDifferent) {
  for (ShuffleMode mode : {ShuffleMode::kSeed, ShuffleMode::kRandom}) {
    PlanParams p = Index(50, 2, 5, 2);
    p.sample_shuffle = mode;
    EXPECT_EQ(Flatten(MakeOk(p, 1).RankSamples(1)), Flatten(MakeOk(p, 1).RankSamples(1)));
    EXPECT_NE(Flatten(MakeOk(p, 1).RankSamples(1)), Flatten(MakeOk(p, 2).RankSamples(1)));
    PlanParams other = p;
    other.seed = 124;
    EXPECT_NE(Flatten(MakeOk(p, 1).RankSamples(0)), Flatten(MakeOk(other, 1).RankSamples(0)));
    p.seed_change_epoch = false;
    EXPECT_EQ(Flatten(MakeOk(p, 1).RankSamples(1)), Flatten(MakeOk(p, 2).RankSamples(1)));
  }
  PlanParams files = Index(50, 2, 5, 2);
  files.file_shuffle = ShuffleMode::kSeed;
  EXPECT_NE(Flatten(MakeOk(files, 1).RankSamples(0)), Flatten(MakeOk(files, 2).RankSamples(0)));
}

// Pins the generator: coordinator and agents built at different times must still agree on a plan. The values were
// cross-checked with an independent Python rendering of splitmix64 + xoshiro256** + Lemire + Fisher-Yates.
TEST(EpochPlan, PermutationsAreStableAcrossBuilds) {
  PlanParams p = Index(10, 1, 1, 1);
  p.file_shuffle = ShuffleMode::kSeed;
  std::vector<uint32_t> files;
  for (const SampleRef& s : MakeOk(p, 1).RankSamples(0)) files.push_back(s.file);
  EXPECT_EQ(files, (std::vector<uint32_t>{7, 5, 3, 2, 6, 4, 1, 0, 9, 8}));
  PlanParams q = Index(4, 3, 1, 1);
  q.sample_shuffle = ShuffleMode::kSeed;
  std::vector<uint32_t> ids;
  for (const SampleRef& s : MakeOk(q, 3).RankSamples(0)) ids.push_back(s.file * 3 + s.sample);
  EXPECT_EQ(ids, (std::vector<uint32_t>{8, 5, 6, 11, 4, 2, 9, 1, 10, 0, 3, 7}));
}

// Larger permutations than the test above, past the prefetching Fisher-Yates' look-ahead and with a samples-per-file
// divisor that is not a power of two; the hashes were taken with the plain (unprefetched, hardware-division) code.
TEST(EpochPlan, LargerPermutationsAreStableAcrossBuilds) {
  auto fnv = [](const std::vector<uint32_t>& v) {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
    return h;
  };
  PlanParams p = Index(1000, 1, 1, 1);
  p.file_shuffle = ShuffleMode::kSeed;
  std::vector<uint32_t> files;
  for (const SampleRef& s : MakeOk(p, 1).RankSamples(0)) files.push_back(s.file);
  EXPECT_EQ(files[0], 146u);
  EXPECT_EQ(files.back(), 802u);
  EXPECT_EQ(fnv(files), 1238470648090378655ull);
  PlanParams q = Index(250, 7, 1, 1);
  q.sample_shuffle = ShuffleMode::kSeed;
  std::vector<uint32_t> ids;
  for (const SampleRef& s : MakeOk(q, 2).RankSamples(0)) {
    ASSERT_LT(s.sample, 7u);
    ids.push_back(s.file * 7 + s.sample);
  }
  EXPECT_EQ(ids[0], 1023u);
  EXPECT_EQ(ids.back(), 1113u);
  EXPECT_EQ(fnv(ids), 18228826741910222328ull);
}

TEST(EpochPlan, TotalTrainingStepsCapsAnEpoch) {
  PlanParams p = Index(17, 3, 4, 6);
  p.max_steps = 1;
  const EpochPlan plan = MakeOk(p);
  EXPECT_EQ(plan.steps(), 1);
  EXPECT_EQ(plan.DroppedSamples(), 51 - 24);
  ExpectIndexCoverage(p, 1);
  p.max_steps = 3;
  absl::StatusOr<EpochPlan> bad = EpochPlan::Make(p, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("train.total_training_steps: 3 steps per epoch wanted"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("only 2"));
}

TEST(EpochPlan, ErrorsNameTheKey) {
  absl::StatusOr<EpochPlan> p = EpochPlan::Make(Index(2, 1, 4, 6), 1);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("reader.batch_size"));
  p = EpochPlan::Make(Stream(5, 10, 1, 6, 1), 1);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "dataset.num_files_train: 5 files for world size 6; tfrecord streams whole files, so every rank needs at "
            "least one file");
  p = EpochPlan::Make(Stream(6, 1, 2, 6, 1), 1);  // one 1-sample file per rank: no batch of 2
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("reader.batch_size"));
  p = EpochPlan::Make(Index(0, 1, 1, 1), 1);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("dataset.num_files_train"));
}

// Stream mode: each file on exactly one rank and thread; quotas fit the thread's samples and sum to the same steps
// on every rank.
void ExpectStreamCoverage(const PlanParams& p, int64_t epoch) {
  const EpochPlan plan = MakeOk(p, epoch);
  std::set<uint32_t> seen;
  int64_t consumed = 0;
  for (int64_t r = 0; r < p.world; ++r) {
    const StreamAssignment a = plan.RankStream(r);
    ASSERT_EQ(a.thread_files.size(), static_cast<size_t>(std::max<int64_t>(1, p.read_threads)));
    ASSERT_EQ(a.thread_batches.size(), a.thread_files.size());
    int64_t steps = 0;
    for (size_t t = 0; t < a.thread_files.size(); ++t) {
      for (uint32_t f : a.thread_files[t]) {
        ASSERT_LT(f, p.num_files);
        ASSERT_TRUE(seen.insert(f).second) << "file " << f << " streamed twice";
      }
      const int64_t samples = static_cast<int64_t>(a.thread_files[t].size()) * p.samples_per_file;
      EXPECT_GE(a.thread_batches[t], 0);
      EXPECT_LE(a.thread_batches[t] * p.batch, samples);
      steps += a.thread_batches[t];
    }
    EXPECT_EQ(steps, plan.steps()) << "rank " << r;
    consumed += steps * p.batch;
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), p.num_files);
  EXPECT_EQ(plan.DroppedSamples(), p.num_files * p.samples_per_file - consumed);
  EXPECT_TRUE(plan.RankSamples(0).empty());
}

TEST(EpochPlan, StreamModeCoversFilesWithEqualStepsOnEveryRank) {
  for (auto [files, spf, batch, world, threads] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>>{
           {17, 8, 4, 3, 2}, {24, 5, 4, 6, 3}, {6, 10, 3, 6, 1}, {13, 7, 4, 3, 8}, {16, 4, 4, 4, 0}}) {
    for (ShuffleMode fs : {ShuffleMode::kOff, ShuffleMode::kSeed}) {
      PlanParams p = Stream(files, spf, batch, world, threads);
      p.file_shuffle = fs;
      SCOPED_TRACE(testing::Message() << files << " files x " << spf << ", batch " << batch << ", world " << world
                                      << ", threads " << threads << ", file_shuffle " << ShuffleModeName(fs));
      ExpectStreamCoverage(p, 1);
      ExpectStreamCoverage(p, 2);
    }
  }
}

TEST(EpochPlan, StreamModeTrimsQuotasFromTheLastThread) {
  // 17 files x 8 samples, batch 4, world 3, 2 threads: ranks 0 and 1 hold 6 files (12 batches), rank 2 holds 5
  // (6 + 4 batches), so every rank does 10 steps and ranks 0 and 1 trim their second thread to 4.
  const EpochPlan plan = MakeOk(Stream(17, 8, 4, 3, 2));
  EXPECT_EQ(plan.steps(), 10);
  EXPECT_EQ(plan.DroppedSamples(), 17 * 8 - 10 * 4 * 3);
  const StreamAssignment a0 = plan.RankStream(0);
  EXPECT_EQ(a0.thread_files[0], (std::vector<uint32_t>{0, 6, 12}));
  EXPECT_EQ(a0.thread_files[1], (std::vector<uint32_t>{3, 9, 15}));
  EXPECT_EQ(a0.thread_batches, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(plan.RankStream(2).thread_batches, (std::vector<int64_t>{6, 4}));
  PlanParams capped = Stream(17, 8, 4, 3, 2);
  capped.max_steps = 5;
  EXPECT_EQ(MakeOk(capped).RankStream(1).thread_batches, (std::vector<int64_t>{5, 0}));
}

// 10 M samples with a global shuffle: 4 bytes per sample, and only the rank's slice is materialised.
TEST(EpochPlan, TenMillionShuffledSamplesStaySmall) {
  PlanParams p = Index(100000, 100, 32, 8);
  p.sample_shuffle = ShuffleMode::kSeed;
  const auto t0 = std::chrono::steady_clock::now();
  const EpochPlan plan = MakeOk(p, 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(plan.MemoryBytes(), 10000000u * sizeof(uint32_t));
  const std::vector<SampleRef> r3 = plan.RankSamples(3);
  EXPECT_EQ(static_cast<int64_t>(r3.size()), plan.steps() * 32);
  EXPECT_EQ(plan.steps(), 10000000 / (32 * 8));
  for (size_t i = 0; i < r3.size(); i += 9973) {
    EXPECT_LT(r3[i].file, 100000u);
    EXPECT_LT(r3[i].sample, 100u);
  }
  RecordProperty("make_seconds", std::to_string(seconds));
  // Without a sample shuffle nothing per sample is stored.
  EXPECT_EQ(MakeOk(Index(100000, 100, 32, 8)).MemoryBytes(), 0u);
}

TEST(EpochPlan, TrainPlanParamsFollowTheSpec) {
  WorkloadSpec s;
  s.format = "tfrecord";
  s.num_files_train = 12;
  s.num_samples_per_file = 3;
  s.batch_size = 2;
  s.read_threads = 4;
  s.file_shuffle = ShuffleMode::kSeed;
  s.sample_shuffle = ShuffleMode::kRandom;
  s.seed = 7;
  s.seed_change_epoch = false;
  s.total_training_steps = 2;
  const PlanParams p = TrainPlanParams(s, 3);
  EXPECT_EQ(p.mode, AccessMode::kStream);
  EXPECT_EQ(p.num_files, 12);
  EXPECT_EQ(p.samples_per_file, 3);
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.world, 3);
  EXPECT_EQ(p.read_threads, 4);
  EXPECT_EQ(p.file_shuffle, ShuffleMode::kSeed);
  EXPECT_EQ(p.sample_shuffle, ShuffleMode::kRandom);
  EXPECT_EQ(p.seed, 7);
  EXPECT_FALSE(p.seed_change_epoch);
  EXPECT_EQ(p.max_steps, 2);
  s.format = "npz";
  EXPECT_EQ(AccessModeFor(s), AccessMode::kIndex);
  s.format = "hdf5";
  EXPECT_EQ(AccessModeFor(s), AccessMode::kIndex);
}

}  // namespace
}  // namespace dlio
