// WorkerPool: a fixed set of threads that run a Loader's per-thread loops epoch after epoch (torch's
// persistent_workers, which DLIO's loaders use).
//
// Why: a Loader lives for one epoch; creating its read_threads threads at every epoch start took 2-16 ms on the
// 2-core bench machine (the new threads, busy at once, competed with the one creating them), a few per cent of an
// epoch of the bench's 1 GiB datasets. Handing the loops to waiting threads costs one wake-up each.
// Contract: Run(n, fn) starts fn(0) .. fn(n-1) on workers 0 .. n-1 (n <= size()) and returns at once; Wait() returns
// when all of them returned. One Run() at a time: Run() after Run() without Wait() in between is a programming
// error. Workers ask for bulk scheduler slices (base/scheduling.h). The destructor waits for a running batch.
// Thread-safety: Run() and Wait() from one owner thread; the workers synchronise with it through mu_.
#pragma once

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace dlio {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }
  void Run(int n, std::function<void(int)> fn);
  void Wait();

 private:
  void Worker(int t);

  Mutex mu_;
  CondVar cv_;       // workers wait for a batch or stop; the owner waits for running_ == 0
  std::function<void(int)> fn_ ABSL_GUARDED_BY(mu_);
  uint64_t batch_ ABSL_GUARDED_BY(mu_) = 0;  // incremented by every Run()
  int n_ ABSL_GUARDED_BY(mu_) = 0;           // workers the current batch uses
  int running_ ABSL_GUARDED_BY(mu_) = 0;     // of them, not finished yet
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace dlio
