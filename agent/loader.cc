#include "agent/loader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/scheduling.h"
#include "common/sleep.h"

namespace dlio {

Loader::Loader(const LoaderConfig& cfg, int64_t steps, const std::atomic<bool>* cancel)
    : cfg_(cfg), steps_(steps), external_cancel_(cancel) {
  cfg_.threads = std::max<int64_t>(1, cfg_.threads);
  cfg_.prefetch = std::max<int64_t>(1, cfg_.prefetch);
  for (int64_t t = 0; t < cfg_.threads; ++t) {
    stats_.push_back(std::make_unique<IoStats>());
    if (static_cast<size_t>(t) < cfg_.trace.size()) stats_.back()->set_trace(cfg_.trace[static_cast<size_t>(t)]);
  }
}

Loader::~Loader() {
  Cancel();
  if (cfg_.pool != nullptr) cfg_.pool->Wait();
  for (auto& th : threads_) th.join();
}

std::unique_ptr<Loader> Loader::StartIndex(const LoaderConfig& cfg, std::vector<SampleRef> samples, int64_t steps,
                                           const std::atomic<bool>* cancel) {
  std::unique_ptr<Loader> l(new Loader(cfg, steps, cancel));
  l->samples_ = std::move(samples);
  const int64_t t_count = l->cfg_.threads;
  // torch: prefetch_factor = ceil(prefetch_size / read_threads) batches per worker.
  const int64_t per_thread = std::max<int64_t>(1, (l->cfg_.prefetch + t_count - 1) / t_count);
  for (int64_t t = 0; t < t_count; ++t) {
    l->queues_.push_back(std::make_unique<Queue>());
    l->queues_.back()->capacity = per_thread;
  }
  auto loop = [p = l.get()](int t) { p->IndexThread(t, &p->samples_); };
  if (l->cfg_.pool != nullptr) {
    l->cfg_.pool->Run(static_cast<int>(t_count), loop);
  } else {
    for (int64_t t = 0; t < t_count; ++t) l->threads_.emplace_back(loop, static_cast<int>(t));
  }
  return l;
}

std::unique_ptr<Loader> Loader::StartStream(const LoaderConfig& cfg, StreamAssignment a, int64_t steps,
                                            const std::atomic<bool>* cancel) {
  std::unique_ptr<Loader> l(new Loader(cfg, steps, cancel));
  l->stream_ = true;
  l->queues_.push_back(std::make_unique<Queue>());
  l->queues_.back()->capacity = l->cfg_.prefetch;
  const size_t n = std::min(a.thread_files.size(), static_cast<size_t>(l->cfg_.threads));
  l->stream_files_ = std::move(a.thread_files);
  l->stream_quota_ = std::move(a.thread_batches);
  int live = 0;
  for (size_t t = 0; t < n; ++t) live += l->stream_quota_[t] > 0;
  if (live == 0) {
    l->Finish(*l->queues_[0]);
    return l;
  }
  auto loop = [p = l.get()](int t) {
    if (p->stream_quota_[t] > 0) p->StreamThread(t, std::move(p->stream_files_[t]), p->stream_quota_[t]);
  };
  if (l->cfg_.pool != nullptr) {
    l->cfg_.pool->Run(static_cast<int>(n), loop);
  } else {
    for (size_t t = 0; t < n; ++t) {
      if (l->stream_quota_[t] > 0) l->threads_.emplace_back(loop, static_cast<int>(t));
    }
  }
  return l;
}

int64_t Loader::QueueDepth() const {
  int64_t depth = 0;
  for (const auto& q : queues_) {
    std::lock_guard<std::mutex> lk(q->mu);
    depth += q->ready;
  }
  return depth;
}

bool Loader::Stopped() const {
  return cancel_.load(std::memory_order_relaxed) ||
         (external_cancel_ != nullptr && external_cancel_->load(std::memory_order_relaxed)) ||
         (cfg_.cancel != nullptr && cfg_.cancel->load(std::memory_order_relaxed));
}

void Loader::Cancel() {
  cancel_ = true;
  for (auto& q : queues_) {
    std::lock_guard<std::mutex> lk(q->mu);
    q->cv.notify_all();
  }
}

bool Loader::Push(Queue& q) {
  std::unique_lock<std::mutex> lk(q.mu);
  // Short timed waits so an external cancel (a flag we cannot be notified of) is seen within 50 ms.
  while (q.ready >= q.capacity && !Stopped()) q.cv.wait_for(lk, std::chrono::milliseconds(50));
  if (Stopped()) return false;
  ++q.ready;
  q.cv.notify_all();
  return true;
}

void Loader::Fail(Queue& q, absl::Status s) {
  std::lock_guard<std::mutex> lk(q.mu);
  if (q.error.ok()) q.error = std::move(s);
  q.cv.notify_all();
}

void Loader::Finish(Queue& q) {
  std::lock_guard<std::mutex> lk(q.mu);
  q.done = true;
  q.cv.notify_all();
}

void Loader::IndexThread(int t, const std::vector<SampleRef>* samples) {
  RequestBulkSlices();
  Queue& q = *queues_[t];
  IoStats& stats = *stats_[t];
  std::unique_ptr<SampleReader> reader = cfg_.format->NewSampleReader();
  const int64_t b = cfg_.batch;
  Xoshiro256 rng(cfg_.seed ^ (static_cast<uint64_t>(t + 1) * 0x9E3779B97F4A7C15ull));
  uint64_t charged = stats.bytes();
  for (int64_t k = t; k < steps_; k += cfg_.threads) {
    for (int64_t i = k * b; i < (k + 1) * b; ++i) {
      if (Stopped()) return;
      const SampleRef s = (*samples)[i];
      absl::StatusOr<uint64_t> n = reader->ReadSample(cfg_.files[s.file], s.sample, stats);
      if (!n.ok()) return Fail(q, n.status());  // the reader counted the sample itself
      if (cfg_.limiter != nullptr) Throttle(stats, &charged);
      Preprocess(rng);
    }
    if (!Push(q)) return;
  }
  Finish(q);
}

void Loader::StreamThread(int t, std::vector<uint32_t> files, int64_t quota) {
  RequestBulkSlices();
  Queue& q = *queues_[0];
  IoStats& stats = *stats_[t];
  std::unique_ptr<StreamReader> reader = cfg_.format->NewStreamReader();
  Xoshiro256 rng(cfg_.seed ^ (static_cast<uint64_t>(t + 1) * 0x9E3779B97F4A7C15ull));
  if (!reader) return Fail(q, absl::UnimplementedError(absl::StrCat(cfg_.format->name(), ": no stream reader")));
  int64_t in_batch = 0;
  uint64_t charged = stats.bytes();
  for (uint32_t f : files) {
    if (quota == 0) break;
    if (absl::Status s = reader->Open(cfg_.files[f], stats); !s.ok()) return Fail(q, s);
    while (quota > 0) {
      if (Stopped()) return;
      absl::StatusOr<bool> more = reader->Next(stats);
      if (!more.ok()) return Fail(q, more.status());
      if (cfg_.limiter != nullptr) Throttle(stats, &charged);
      if (!*more) break;  // the reader counted the record as a sample
      Preprocess(rng);
      if (++in_batch == cfg_.batch) {
        in_batch = 0;
        --quota;
        if (!Push(q)) return;
      }
    }
    reader->Close();
  }
  // The plan's quotas guarantee enough records; running short means the files are not what the plan expects.
  if (quota > 0) {
    return Fail(q, absl::DataLossError(absl::StrCat("loader thread ", t, ": files ended ", quota,
                                                    " batches short of the plan (fewer records than "
                                                    "dataset.num_samples_per_file?)")));
  }
}

void Loader::Throttle(const IoStats& stats, uint64_t* charged) {
  const uint64_t now = stats.bytes();
  if (now > *charged) cfg_.limiter->Acquire(now - *charged, &cancel_);
  *charged = now;
}

void Loader::Preprocess(Xoshiro256& rng) {
  if (cfg_.preprocess.IsZero()) return;
  SleepFor(cfg_.preprocess.Sample(rng), &cancel_);
}

absl::Status Loader::Next() {
  if (next_batch_ >= steps_) return absl::OutOfRangeError("loader: no batch left in this epoch");
  Queue& q = stream_ ? *queues_[0] : *queues_[next_batch_ % cfg_.threads];
  std::unique_lock<std::mutex> lk(q.mu);
  while (q.ready == 0 && q.error.ok() && !Stopped()) q.cv.wait_for(lk, std::chrono::milliseconds(50));
  if (!q.error.ok()) return q.error;
  if (q.ready == 0) {
    lk.unlock();
    Cancel();  // the reader threads sleep on cancel_ only (preprocess, bandwidth cap): wake them
    return absl::CancelledError("loader cancelled");
  }
  --q.ready;
  q.cv.notify_all();
  ++next_batch_;
  return absl::OkStatus();
}

IoSnapshot Loader::Snapshot() const {
  IoSnapshot s;
  for (const auto& st : stats_) s += st->Snapshot();
  return s;
}

}  // namespace dlio
