#include "plan/epoch_plan.h"

#include <algorithm>
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
    std::vector<SampleRef> batch(static_cast<size_t>(p.batch));
    for (size_t i = 0; i < mine.size(); ++i) {
      const SampleRef& s = mine[i];
      const SampleRef one = plan.RankSample(r, static_cast<int64_t>(i));
      ASSERT_EQ(std::make_pair(one.file, one.sample), std::make_pair(s.file, s.sample)) << "rank " << r << " " << i;
      if (i % batch.size() == 0) plan.RankSlice(r, static_cast<int64_t>(i), p.batch, batch.data());
      const SampleRef& sliced = batch[i % batch.size()];
      ASSERT_EQ(std::make_pair(sliced.file, sliced.sample), std::make_pair(s.file, s.sample)) << "rank " << r << " " << i;
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
  EXPECT_TRUE(plan.RankStream(0).threads.empty());
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
  p = EpochPlan::Make(Stream(5, 100, 120, 4, 8), 1);  // rank 3 holds 1 file of 100 samples: no batch of 120
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("reader.batch_size: rank 3 of world size 4 streams 1 of the 5 files"));
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("less than one batch of 120"));
  p = EpochPlan::Make(Stream(6, 1, 2, 6, 1), 1);  // 6 samples, one step of the fleet needs 12
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("reader.batch_size"));
  p = EpochPlan::Make(Index(0, 1, 1, 1), 1);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("dataset.num_files_train"));
}

// --- Stream mode against DLIO's TensorFlow pipeline ----------------------------------------------------------------

// A (file, record) pair of a rank's stream.
using Rec = std::pair<uint32_t, int64_t>;

// What one rank of DLIO reads and delivers in one epoch, simulated record by record from its tf_reader.py pipeline,
// independently of EpochPlan's arithmetic:
//   list_files(shuffle=False) -> shard(P, r) on files when files >= P -> TFRecordDataset(num_parallel_reads = T),
//   i.e. interleave(cycle_length = T, block_length = 1) whose emptied slot takes the next file when the cycle comes
//   back to it -> shard(P, r) on records when files < P -> batch(B, drop_remainder) -> repeat() -> `steps` batches.
// read[t]: records interleave slot t read; delivered: the records in the rank's batches.
struct DlioRank {
  std::vector<int64_t> read;
  std::multiset<Rec> delivered;
};

DlioRank SimulateDlio(int64_t files, int64_t spf, int64_t batch, int64_t world, int64_t threads, int64_t rank,
                      int64_t steps) {
  const int64_t t_count = std::max<int64_t>(1, threads);
  std::vector<uint32_t> list;
  for (int64_t f = 0; f < files; ++f) {
    if (files < world || f % world == rank) list.push_back(static_cast<uint32_t>(f));
  }
  DlioRank out;
  out.read.assign(static_cast<size_t>(t_count), 0);
  int64_t batches = 0;
  std::vector<Rec> pending;  // the batch being formed
  while (batches < steps) {  // one pass (repeat() restarts the pipeline)
    struct Slot {
      bool open = false;
      uint32_t file = 0;
      int64_t next = 0;
    };
    std::vector<Slot> slots(static_cast<size_t>(t_count));
    size_t next_input = 0, cycle = 0;
    int64_t open = 0, position = 0, delivered_in_pass = 0;
    pending.clear();
    while ((next_input < list.size() || open > 0) && batches < steps) {
      Slot& s = slots[cycle];
      if (!s.open) {
        if (next_input < list.size()) {
          s = Slot{true, list[next_input++], 0};
          ++open;
        } else {
          cycle = (cycle + 1) % slots.size();
        }
        continue;
      }
      if (s.next == spf) {  // end of this file: the slot empties, the cycle moves on
        s.open = false;
        --open;
        cycle = (cycle + 1) % slots.size();
        continue;
      }
      const Rec rec{s.file, s.next++};
      ++out.read[cycle];
      cycle = (cycle + 1) % slots.size();
      const bool mine = files >= world || position++ % world == rank;
      if (!mine) continue;
      pending.push_back(rec);
      if (static_cast<int64_t>(pending.size()) == batch) {
        out.delivered.insert(pending.begin(), pending.end());
        pending.clear();
        ++batches;
        ++delivered_in_pass;
      }
    }
    if (delivered_in_pass == 0) break;  // a pass without a batch: DLIO's rank gets nothing (refused by the plan)
  }
  return out;
}

// Golden counts from DLIO's formulas (dlio.md §2.4: steps per epoch = floor(nspf x files / batch / ranks), the
// same on every rank; samples per epoch = steps x batch x ranks), and per rank the very records DLIO's pipeline
// reads and delivers.
TEST(EpochPlan, StreamModeReadsAndBatchesAsDlioTensorflowPipeline) {
  struct Case {
    int64_t files, spf, batch, world, threads;
  };
  const std::vector<Case> cases = {
      {16, 100, 400, 1, 8},  // resnet50_a100 scaled to 16 x 100: each batch spans the 8 threads' files
      {16, 100, 400, 2, 8},  {16, 100, 400, 4, 8},  // 4 files per rank: one batch from 4 threads
      {1024, 5, 400, 8, 8},  // resnet50's files and threads, 5 samples each: a batch of 400 spans 80 files
      {17, 8, 4, 3, 2},      // uneven files: rank 2 holds 5
      {3, 10, 5, 2, 1},      // rank 1 holds 1 file (2 batches a pass) of 3 steps: it wraps around (repeat())
      {5, 7, 3, 3, 2},       // wrap-around with a drop-last remainder per pass
      {3, 10, 4, 4, 2},      // fewer files than ranks: every rank reads every file, keeps every 4th record
      {2, 9, 2, 5, 3},       // fewer files than ranks, more threads than files
      {7, 1, 1, 4, 4},       // cosmoflow-like: 1 sample per file, batch 1
      {13, 7, 4, 3, 8},      {16, 4, 4, 4, 0},  {10, 3, 2, 1, 4}};
  for (const Case& c : cases) {
    for (int64_t cap : {int64_t{-1}, int64_t{1}}) {
      PlanParams p = Stream(c.files, c.spf, c.batch, c.world, c.threads);
      p.max_steps = cap;
      SCOPED_TRACE(testing::Message() << c.files << " files x " << c.spf << ", batch " << c.batch << ", world "
                                      << c.world << ", threads " << c.threads << ", total_training_steps " << cap);
      const int64_t dlio_steps = c.spf * c.files / c.batch / c.world;  // DLIO's main.py
      const EpochPlan plan = MakeOk(p);
      EXPECT_EQ(plan.steps(), cap > 0 ? cap : dlio_steps);
      int64_t samples = 0, reread = 0;
      std::set<Rec> unique;
      for (int64_t r = 0; r < c.world; ++r) {
        const StreamAssignment a = plan.RankStream(r);
        const DlioRank dlio = SimulateDlio(c.files, c.spf, c.batch, c.world, c.threads, r, plan.steps());
        ASSERT_EQ(a.threads.size(), dlio.read.size());
        std::multiset<Rec> delivered;
        for (size_t t = 0; t < a.threads.size(); ++t) {
          const ThreadStream& ts = a.threads[t];
          EXPECT_EQ(ts.records, dlio.read[t]) << "rank " << r << " thread " << t;
          // The thread's loop (agent/loader.cc): records in file order, passes restarting at its first file.
          for (int64_t i = 0, k = 0; i < ts.records; ++i, ++k) {
            if (k == a.PassRecords(t)) k = 0;
            const Rec rec{ts.files[static_cast<size_t>(k / c.spf)], k % c.spf};
            if (a.Delivered(a.Position(t, k))) delivered.insert(rec);
          }
        }
        EXPECT_EQ(delivered, dlio.delivered) << "rank " << r;
        EXPECT_EQ(static_cast<int64_t>(delivered.size()), plan.steps() * c.batch) << "rank " << r;
        samples += static_cast<int64_t>(delivered.size());
        reread += static_cast<int64_t>(delivered.size()) - static_cast<int64_t>(std::set<Rec>(delivered.begin(),
                                                                                              delivered.end()).size());
        unique.insert(delivered.begin(), delivered.end());
      }
      EXPECT_EQ(samples, plan.steps() * c.batch * c.world);  // samples per epoch
      EXPECT_EQ(plan.RereadSamples(), reread);
      EXPECT_EQ(plan.DroppedSamples(), c.files * c.spf - static_cast<int64_t>(unique.size()));
    }
  }
}

// Position() numbers the records of a pass 0, 1, 2, ... in the interleave's order: one record of each live thread
// per round, threads in order.
TEST(EpochPlan, StreamPositionsEnumerateTheInterleave) {
  const EpochPlan plan = MakeOk(Stream(5, 3, 1, 1, 3));  // threads hold files {0, 3}, {1, 4}, {2}
  const StreamAssignment a = plan.RankStream(0);
  ASSERT_EQ(a.threads.size(), 3u);
  EXPECT_EQ(a.threads[0].files, (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(a.threads[2].files, (std::vector<uint32_t>{2}));
  std::vector<int64_t> order(15, -1);
  for (size_t t = 0; t < 3; ++t) {
    for (int64_t k = 0; k < a.PassRecords(t); ++k) {
      const int64_t pos = a.Position(t, k);
      ASSERT_GE(pos, 0);
      ASSERT_LT(pos, 15);
      order[static_cast<size_t>(pos)] = static_cast<int64_t>(t) * 100 + k;
    }
  }
  // Rounds 0-2: threads 0, 1, 2; rounds 3-5: threads 0 and 1 (thread 2's only file is done).
  EXPECT_EQ(order, (std::vector<int64_t>{0, 100, 200, 1, 101, 201, 2, 102, 202, 3, 103, 4, 104, 5, 105}));
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

// Issue 24: the documented maximum, 2^32 samples in one file with a seeded sample shuffle, was a 16 GiB stored
// permutation built on every agent before any file was listed. The plan's memory no longer grows with the samples.
TEST(EpochPlan, FourBillionShuffledSamplesAreBuiltInBoundedMemoryAndTime) {
  PlanParams p = Index(1, int64_t{1} << 32, 1024, 8);
  p.sample_shuffle = ShuffleMode::kSeed;
  const auto t0 = std::chrono::steady_clock::now();
  const EpochPlan plan = MakeOk(p, 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(plan.MemoryBytes(), size_t{64} << 20);
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(plan.steps(), (int64_t{1} << 32) / (1024 * 8));
  // Read without building the ranks' lists (2^29 samples each): distinct samples, in range, pinned (an independent
  // Python rendering of the seed derivation and the Feistel network gave them).
  const int64_t per_rank = plan.steps() * 1024;
  std::set<uint32_t> seen;
  for (int64_t r : {0, 3, 7}) {
    for (int64_t i : {int64_t{0}, int64_t{1}, per_rank / 2, per_rank - 1}) {
      const SampleRef s = plan.RankSample(r, i);
      EXPECT_EQ(s.file, 0u);
      EXPECT_TRUE(seen.insert(s.sample).second) << "rank " << r << " " << i;
    }
  }
  for (int64_t i = 0; i < 100000; ++i) EXPECT_TRUE(seen.insert(plan.RankSample(3, i + 2).sample).second);
  std::vector<SampleRef> batch(1024);  // a loader's batch 5 of rank 6
  plan.RankSlice(6, 5 * 1024, 1024, batch.data());
  for (size_t j = 0; j < batch.size(); ++j) {
    EXPECT_EQ(batch[j].sample, plan.RankSample(6, 5 * 1024 + static_cast<int64_t>(j)).sample);
    EXPECT_TRUE(seen.insert(batch[j].sample).second);
  }
  EXPECT_EQ(plan.RankSample(0, 0).sample, 3516261535u);
  EXPECT_EQ(plan.RankSample(0, 3).sample, 4263642198u);
  EXPECT_EQ(plan.RankSample(7, per_rank - 1).sample, 1849194874u);
  EXPECT_EQ(MakeOk(p, 1).RankSample(5, 12345).sample, plan.RankSample(5, 12345).sample);
  EXPECT_NE(MakeOk(p, 2).RankSample(5, 12345).sample, plan.RankSample(5, 12345).sample);
}

// Every sample at most once across the fleet, with a bitmap: for plans too large for a std::set of the samples.
// RankSample() and RankSlice() agree with RankSamples() (checked at a stride).
void ExpectLargeIndexCoverage(const PlanParams& p, int64_t epoch) {
  const EpochPlan plan = MakeOk(p, epoch);
  EXPECT_EQ(plan.MemoryBytes(), 0u);
  const int64_t n = p.num_files * p.samples_per_file;
  std::vector<bool> seen(static_cast<size_t>(n), false);
  const int64_t per_rank = plan.steps() * p.batch;
  for (int64_t r = 0; r < p.world; ++r) {
    const std::vector<SampleRef> mine = plan.RankSamples(r);
    ASSERT_EQ(static_cast<int64_t>(mine.size()), per_rank);
    for (size_t i = 0; i < mine.size(); ++i) {
      const SampleRef& s = mine[i];
      ASSERT_LT(s.file, p.num_files);
      ASSERT_LT(s.sample, p.samples_per_file);
      const auto id = static_cast<size_t>(s.file * p.samples_per_file + s.sample);
      ASSERT_FALSE(seen[id]) << "sample read twice: " << s.file << "/" << s.sample;
      seen[id] = true;
      if (i % 997 == 0 || i + 1 == mine.size()) {
        const SampleRef one = plan.RankSample(r, static_cast<int64_t>(i));
        ASSERT_EQ(std::make_pair(one.file, one.sample), std::make_pair(s.file, s.sample)) << "rank " << r << " " << i;
      }
      if (i % 99991 == 0 && i + 600 <= mine.size()) {  // runs longer than RankSlice's block of 512
        std::vector<SampleRef> run(600);
        plan.RankSlice(r, static_cast<int64_t>(i), 600, run.data());
        for (size_t j = 0; j < run.size(); ++j) {
          ASSERT_EQ(std::make_pair(run[j].file, run[j].sample), std::make_pair(mine[i + j].file, mine[i + j].sample));
        }
      }
    }
  }
  EXPECT_EQ(plan.DroppedSamples(), n - per_rank * p.world);
  EXPECT_LT(plan.DroppedSamples(), p.batch * p.world);
}

// Just above the stored orders' 2^24 ids the orders are computed (the sample order, or the file order of 2^24 + 1
// files); the rules stay: each sample at most once, and RankSamples() the list of RankSample().
TEST(EpochPlan, ComputedOrdersAboveTwoToTheTwentyFourReadEverySampleOnce) {
  PlanParams samples = Index(7, 2396749, 5, 3);  // 16,777,243 samples, 3 ranks of 5,592,410
  samples.sample_shuffle = ShuffleMode::kSeed;
  ExpectLargeIndexCoverage(samples, 2);
  const SampleRef first = MakeOk(samples, 2).RankSample(0, 0);  // pinned with the Python rendering, as above
  EXPECT_EQ(std::make_pair(first.file, first.sample), std::make_pair(6u, 1334389u));
  PlanParams files = Index((int64_t{1} << 24) + 1, 1, 4, 2);
  files.file_shuffle = ShuffleMode::kSeed;
  ExpectLargeIndexCoverage(files, 1);
  EXPECT_NE(MakeOk(files, 1).RankSample(0, 0).file, MakeOk(files, 2).RankSample(0, 0).file);
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
