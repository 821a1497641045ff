#include "agent/worker_pool.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "agent/loader.h"
#include "plan/epoch_plan.h"
#include "readers/format.h"

namespace dlio {
namespace {

TEST(WorkerPool, RunsEachIndexOnceOnItsOwnWorkerBatchAfterBatch) {
  WorkerPool pool(4);
  EXPECT_EQ(pool.size(), 4);
  for (int batch = 0; batch < 50; ++batch) {
    const int n = 1 + batch % 4;
    std::vector<std::atomic<int>> hits(4);
    std::vector<std::thread::id> ids(4);
    pool.Run(n, [&](int t) {
      hits[t]++;
      ids[t] = std::this_thread::get_id();
    });
    pool.Wait();
    std::set<std::thread::id> distinct;
    for (int t = 0; t < 4; ++t) {
      EXPECT_EQ(hits[t].load(), t < n ? 1 : 0) << "batch " << batch << " index " << t;
      if (t < n) distinct.insert(ids[t]);
    }
    EXPECT_EQ(distinct.size(), static_cast<size_t>(n));
    EXPECT_EQ(distinct.count(std::this_thread::get_id()), 0u);
  }
}

TEST(WorkerPool, WaitBlocksUntilEveryLoopReturned) {
  WorkerPool pool(2);
  std::atomic<int> done{0};
  pool.Run(2, [&](int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    done++;
  });
  pool.Wait();
  EXPECT_EQ(done.load(), 2);
  pool.Wait();  // nothing running: returns at once
}

TEST(WorkerPool, DestructorWaitsForARunningBatch) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(3);
    pool.Run(3, [&](int) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      done++;
    });
  }
  EXPECT_EQ(done.load(), 3);
}

// A Loader on a pool, epoch after epoch, in both modes: every batch arrives and the pool's threads are reused.
TEST(WorkerPool, LoaderReusesThePoolAcrossEpochs) {
  char tmpl[] = "/tmp/dlio_worker_pool_test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  for (const char* name : {"npz", "tfrecord"}) {
    FormatOptions o;
    o.samples_per_file = 4;
    o.sample_dims = {32, 32};
    o.transfer_size = 4096;
    absl::StatusOr<std::unique_ptr<Format>> f = MakeFormat(name, o);
    ASSERT_TRUE(f.ok());
    LoaderConfig cfg;
    cfg.format = f->get();
    cfg.batch = 2;
    cfg.threads = 3;
    for (int i = 0; i < 6; ++i) {
      cfg.files.push_back(dir + "/" + DataFileName("img", i, 6, name));
      IoStats st;
      ASSERT_TRUE((*f)->Generate(cfg.files.back(), i, st).ok());
    }
    WorkerPool pool(3);
    cfg.pool = &pool;
    PlanParams p;
    p.num_files = 6;
    p.samples_per_file = 4;
    p.batch = 2;
    p.read_threads = 3;
    p.mode = (*f)->streaming() ? AccessMode::kStream : AccessMode::kIndex;
    std::atomic<bool> cancel{false};
    for (int epoch = 1; epoch <= 3; ++epoch) {
      absl::StatusOr<EpochPlan> plan = EpochPlan::Make(p, epoch);
      ASSERT_TRUE(plan.ok());
      std::unique_ptr<Loader> l = p.mode == AccessMode::kStream
                                      ? Loader::StartStream(cfg, plan->RankStream(0), plan->steps(), &cancel)
                                      : Loader::StartIndex(cfg, *plan, 0, plan->steps(), &cancel);
      for (int64_t s = 0; s < plan->steps(); ++s) ASSERT_TRUE(l->Next().ok()) << name << " epoch " << epoch;
      EXPECT_EQ(l->Next().code(), absl::StatusCode::kOutOfRange);
      l.reset();  // waits for the pool's loops before the next epoch's Run()
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlio
