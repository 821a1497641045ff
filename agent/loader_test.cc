#include "agent/loader.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plan/epoch_plan.h"
#include "readers/format.h"

namespace dlio {
namespace {

namespace fs = std::filesystem;

// `files` tfrecord files of `spf` 1 KiB records in a fresh folder, removed with the object.
class Records {
 public:
  Records(int64_t files, int64_t spf) {
    std::string t = "/tmp/dlio_loader_test.XXXXXX";
    dir_ = ::mkdtemp(t.data());
    FormatOptions o;
    o.samples_per_file = spf;
    o.sample_dims = {32, 32};
    o.transfer_size = 4096;
    format_ = *MakeFormat("tfrecord", o);
    IoStats gen;
    for (int64_t i = 0; i < files; ++i) {
      paths_.push_back((dir_ / DataFileName("img", i, files, "tfrecord")).string());
      EXPECT_TRUE(format_->Generate(paths_.back(), static_cast<uint64_t>(i), gen).ok());
    }
  }
  ~Records() { fs::remove_all(dir_); }
  LoaderConfig Config(int64_t batch, int64_t threads, int64_t prefetch) const {
    LoaderConfig c;
    c.format = format_.get();
    c.files = paths_;
    c.batch = batch;
    c.threads = threads;
    c.prefetch = prefetch;
    return c;
  }

 private:
  fs::path dir_;
  std::unique_ptr<Format> format_;
  std::vector<std::string> paths_;
};

PlanParams Stream(int64_t files, int64_t spf, int64_t batch, int64_t world, int64_t threads) {
  PlanParams p;
  p.num_files = files;
  p.samples_per_file = spf;
  p.batch = batch;
  p.world = world;
  p.read_threads = threads;
  p.mode = AccessMode::kStream;
  return p;
}

// Runs rank `rank`'s epoch to the end and returns what its threads read.
IoSnapshot RunEpoch(const Records& data, const PlanParams& p, int64_t rank, int64_t prefetch = 2) {
  absl::StatusOr<EpochPlan> plan = EpochPlan::Make(p, 1);
  EXPECT_TRUE(plan.ok()) << plan.status();
  std::atomic<bool> cancel{false};
  std::unique_ptr<Loader> l = Loader::StartStream(data.Config(p.batch, p.read_threads, prefetch),
                                                  plan->RankStream(rank), plan->steps(), &cancel);
  for (int64_t s = 0; s < plan->steps(); ++s) EXPECT_TRUE(l->Next().ok()) << "step " << s;
  EXPECT_EQ(l->Next().code(), absl::StatusCode::kOutOfRange);
  const IoSnapshot io = l->Snapshot();
  return io;
}

// 2 files of 3 records on 2 threads, batch 2: DLIO batches the interleaved stream (3 steps); batches per thread
// would give one each (2 steps). The middle batch holds a record of each thread's file.
TEST(StreamLoader, BatchesSpanThreadsAsDlioInterleavedStream) {
  Records data(2, 3);
  const PlanParams p = Stream(2, 3, 2, 1, 2);
  ASSERT_EQ(*EpochPlan::Steps(p), 3);
  const IoSnapshot io = RunEpoch(data, p, 0);
  EXPECT_EQ(io.samples, 6u);
  EXPECT_EQ(io.files, 2u);
}

// resnet50_a100's shape scaled down: 8 threads, batch 400 over 16 files of 100 records: 4 steps, every batch
// made of 8 threads' records, every record read once.
TEST(StreamLoader, Resnet50ShapeFormsBatchesOfFourHundredFromEightThreads) {
  Records data(16, 100);
  const IoSnapshot io = RunEpoch(data, Stream(16, 100, 400, 1, 8), 0);
  EXPECT_EQ(io.samples, 1600u);
  EXPECT_EQ(io.files, 16u);
}

// Fewer files than ranks: rank 1 of 3 reads the interleaved stream up to its last record (positions 1, 4, 7, 10:
// 11 records of both files) and delivers only its own 4; the others are read (Skip) but are no samples.
TEST(StreamLoader, RecordShardingReadsTheStreamAndDeliversEveryPthRecord) {
  Records data(2, 6);
  const PlanParams p = Stream(2, 6, 2, 3, 2);
  ASSERT_EQ(*EpochPlan::Steps(p), 2);
  const IoSnapshot io = RunEpoch(data, p, 1);
  EXPECT_EQ(io.samples, 4u);
  EXPECT_EQ(io.files, 2u);
}

// A rank with fewer files wraps around (DLIO's repeat()): 3 files x 10 records, batch 5, 2 ranks, 3 steps; rank
// 1's single file gives 2 batches a pass, so it opens it again for the third.
TEST(StreamLoader, ShortRankStartsANewPassAsRepeat) {
  Records data(3, 10);
  const IoSnapshot io = RunEpoch(data, Stream(3, 10, 5, 2, 1), 1);
  EXPECT_EQ(io.samples, 15u);
  EXPECT_EQ(io.files, 2u) << "the one file opened twice";
}

// Reading runs at most prefetch_size batches ahead of the step thread (tf.data's prefetch).
TEST(StreamLoader, ReadsAtMostPrefetchBatchesAhead) {
  Records data(4, 8);
  const PlanParams p = Stream(4, 8, 2, 1, 2);
  absl::StatusOr<EpochPlan> plan = EpochPlan::Make(p, 1);
  ASSERT_TRUE(plan.ok());
  std::atomic<bool> cancel{false};
  std::unique_ptr<Loader> l =
      Loader::StartStream(data.Config(2, 2, 3), plan->RankStream(0), plan->steps(), &cancel);
  // With nobody taking batches, the threads stop after 3 batches' records (and stay stopped: 100 ms more).
  auto settle = [&](uint64_t want) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (l->Snapshot().samples < want && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return l->Snapshot().samples;
  };
  EXPECT_EQ(settle(6), 6u);
  EXPECT_EQ(l->QueueDepth(), 3);
  ASSERT_TRUE(l->Next().ok());
  EXPECT_EQ(settle(8), 8u) << "one batch taken, one more read";
}

}  // namespace
}  // namespace dlio

namespace dlio {
namespace {

// Heap bytes in use (glibc: the arenas and the mmapped chunks).
size_t HeapInUse() {
  const struct mallinfo2 m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}

// The process's peak resident bytes (VmHWM); ResetPeakRss() sets it to the current RSS (false when not allowed).
uint64_t PeakRss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}
bool ResetPeakRss() { return static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5"); }

// Issue 24 item 4: an index loader over 2^27 samples (a computed shuffle) holds nothing per sample; it used to take
// the rank's whole list, 8 bytes per sample (1 GiB here; 32 GiB at the documented maximum of 2^32). Measured while
// it starts (heap in use) and over its reader threads' whole run (peak RSS: they fail their first read, so Next()
// returns once they did whatever they do before reading).
TEST(IndexLoader, HoldsNothingPerSampleOfTheEpoch) {
  PlanParams p;
  p.num_files = 1;
  p.samples_per_file = int64_t{1} << 27;
  p.batch = 4;
  p.read_threads = 2;
  p.sample_shuffle = ShuffleMode::kSeed;
  absl::StatusOr<EpochPlan> plan = EpochPlan::Make(p, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->MemoryBytes(), 0u);
  FormatOptions o;
  o.samples_per_file = p.samples_per_file;
  o.sample_dims = {32, 32};
  o.transfer_size = 4096;
  absl::StatusOr<std::unique_ptr<Format>> format = MakeFormat("npz", o);
  ASSERT_TRUE(format.ok()) << format.status();
  LoaderConfig cfg;
  cfg.format = format->get();
  cfg.files = {"/nonexistent/dlio_loader_test/img_0_of_1.npz"};  // the reads fail; only the memory matters here
  cfg.batch = p.batch;
  cfg.threads = p.read_threads;
  std::atomic<bool> cancel{false};
  const bool peak_resets = ResetPeakRss();
  const uint64_t peak_before = PeakRss();
  const size_t before = HeapInUse();
  std::unique_ptr<Loader> l = Loader::StartIndex(cfg, *plan, 0, plan->steps(), &cancel);
  const size_t during = HeapInUse();
  EXPECT_FALSE(l->Next().ok());  // every reader thread failed its first read
  const uint64_t peak_after = PeakRss();
  cancel = true;
  l.reset();
  EXPECT_LT(during - std::min(during, before), size_t{4} << 20) << "heap bytes held by a loader of 2^27 samples";
  if (peak_resets) {
    EXPECT_LT(peak_after - std::min(peak_after, peak_before), uint64_t{64} << 20)
        << "peak resident bytes over a loader of 2^27 samples";
  }
}

}  // namespace
}  // namespace dlio

namespace dlio {
namespace {

// Issue 27 item 4 (2 MiB GETs): an index-mode thread's S3 key source gives the keys of every batch the thread will
// read without waiting on its queue (the prefetch depth), not only those of the next batch: with few objects per
// batch (2 here; 4 x 2 MiB in bench/s3_bench.py's job), one batch ahead left the read-ahead's window of 2 x
// s3_requests_in_flight short of keys, so fewer GETs were in flight than configured.
PlanParams Index(int64_t files, int64_t batch, int64_t threads) {
  PlanParams p;
  p.num_files = files;
  p.batch = batch;
  p.read_threads = threads;
  return p;
}

struct KeyWalk {
  explicit KeyWalk(int64_t files, int64_t batch, int64_t threads = 1)
      : p(Index(files, batch, threads)), plan(*EpochPlan::Make(p, 1)) {
    for (int64_t i = 0; i < files; ++i) names.push_back("k" + std::to_string(i));
  }
  std::unique_ptr<internal::IndexKeySource> Source(int64_t first_batch) {
    return std::make_unique<internal::IndexKeySource>(plan, names, 0, first_batch, p.read_threads, plan.steps(),
                                                      p.batch, false, &reading, [this] {
                                                        ++asked;
                                                        return free;
                                                      });
  }
  // The keys the source gives now, until it holds back.
  std::vector<std::string> Drain(internal::IndexKeySource& s) {
    std::vector<std::string> got;
    for (const std::string* k = s.Next(); k != nullptr; k = s.Next()) got.push_back(*k);
    return got;
  }
  PlanParams p;
  EpochPlan plan;
  DataFileNames names;
  int64_t reading = 0;  // the batch the thread reads
  int64_t free = 0;     // batches its queue can take without waiting
  int asked = 0;        // calls of free(): each takes the queue's mutex in the loader
};

TEST(IndexKeySource, GivesTheKeysOfEveryBatchWithinThePrefetchDepth) {
  KeyWalk w(64, 2);
  w.free = 4;  // prefetch_size 4, one thread, nothing queued: batches 0 (being read) to 4 read without waiting
  std::unique_ptr<internal::IndexKeySource> s = w.Source(0);
  EXPECT_EQ(w.Drain(*s), (std::vector<std::string>{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s->Next(), nullptr) << "batch 5 waits for the queue";
  EXPECT_EQ(w.asked, 1) << "the queue is asked once per batch read, not per key or refill";
  // The thread moves on to batch 1 and pushed batch 0 (nobody took it): still 4 batches ahead at most.
  w.reading = 1;
  w.free = 3;
  EXPECT_TRUE(w.Drain(*s).empty()) << "batch 5 is 4 batches ahead of batch 1, the queue takes 3 more";
  w.reading = 2;
  w.free = 3;  // the step thread took batch 0
  EXPECT_EQ(w.Drain(*s), (std::vector<std::string>{"k10", "k11"}));
  EXPECT_TRUE(w.Drain(*s).empty());
}

// The prefetch bound of before holds for the next batch: with a full queue its keys wait, and are given as soon as
// the step thread makes room, while the thread still reads the same batch.
TEST(IndexKeySource, HoldsTheNextBatchBackWhileTheQueueIsFull) {
  KeyWalk w(32, 2, 2);  // two threads: this one reads batches 1, 3, 5, ...
  w.reading = 1;
  w.free = 0;
  std::unique_ptr<internal::IndexKeySource> s = w.Source(1);
  EXPECT_EQ(w.Drain(*s), (std::vector<std::string>{"k2", "k3"}));
  EXPECT_TRUE(w.Drain(*s).empty());
  w.free = 1;  // the step thread took a batch
  EXPECT_EQ(w.Drain(*s), (std::vector<std::string>{"k6", "k7"}));
  EXPECT_TRUE(w.Drain(*s).empty()) << "batch 5 is two of this thread's batches ahead";
}

}  // namespace
}  // namespace dlio
