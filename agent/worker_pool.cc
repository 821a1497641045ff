#include "agent/worker_pool.h"

#include "base/scheduling.h"

namespace dlio {

WorkerPool::WorkerPool(int threads) {
  for (int t = 0; t < threads; ++t) threads_.emplace_back([this, t] { Worker(t); });
}

WorkerPool::~WorkerPool() {
  Wait();
  {
    MutexLock lk(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& th : threads_) th.join();
}

void WorkerPool::Run(int n, std::function<void(int)> fn) {
  {
    MutexLock lk(&mu_);
    fn_ = std::move(fn);
    n_ = n;
    running_ = n;
    ++batch_;
  }
  cv_.notify_all();
}

void WorkerPool::Wait() {
  MutexLock lk(&mu_);
  cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ == 0; });
  fn_ = nullptr;  // releases what the loops captured
}

void WorkerPool::Worker(int t) {
  RequestBulkSlices();
  uint64_t seen = 0;
  MutexLock lk(&mu_);
  for (;;) {
    cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || batch_ != seen; });
    if (stop_) return;
    seen = batch_;
    if (t >= n_) continue;  // not part of this batch
    std::function<void(int)>* fn = &fn_;  // stays valid until running_ reaches 0 (Wait() resets it only then)
    lk.Unlock();
    (*fn)(t);
    lk.Lock();
    if (--running_ == 0) cv_.notify_all();
  }
}

}  // namespace dlio
