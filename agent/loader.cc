#include "agent/loader.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "base/scheduling.h"
#include "base/sleep.h"
#include "job/format_traits.h"
#include "storage/s3/endpoints.h"
#include "storage/s3/read_ahead.h"

namespace dlio {
namespace {

// Whole-object GETs of s3 with more than one in flight (dlio_ext.s3_requests_in_flight): the formats read through
// ReadFile(), one GET per file (format_traits.h).
bool ReadsAhead(const Format& f) {
  const FormatOptions& o = f.options();
  if (o.io_engine != IoEngine::kS3 || o.s3 == nullptr || o.s3->requests_in_flight <= 1) return false;
  const FormatTraits& tr = FormatTraitsOf(f.name());
  return tr.reads_objects && !tr.ranged_gets && !tr.streams;
}

}  // namespace

namespace internal {

IndexKeySource::IndexKeySource(const EpochPlan& plan, const DataFileNames& files, int64_t rank, int64_t first_batch,
                               int64_t stride, int64_t steps, int64_t batch, bool keep_last, const int64_t* reading,
                               std::function<int64_t()> free)
    : plan_(plan), files_(files), rank_(rank), k_(first_batch), stride_(stride), steps_(steps), batch_(batch),
      keep_last_(keep_last), reading_(reading), free_(std::move(free)),
      slice_(static_cast<size_t>(std::min<int64_t>(batch, kSlice))), ring_(files.derived() ? kKeyRing : 0) {
  next_ = k_ * batch_;
}

bool IndexKeySource::MayWalk(int64_t next) {
  const int64_t ahead = (next - *reading_) / stride_;  // of the thread's batches; <= 0: the walk is behind
  if (ahead <= 0) return true;
  // While the thread reads the same batch its queue only empties (the step thread takes), so what free() said
  // stays a lower bound: asked again only when that is not enough, and at most once per batch read, but for the
  // next batch (ahead 1), asked at every refill while held back, as the step thread may make room at any time.
  if (ahead <= free_seen_ && reading_seen_ == *reading_) return true;
  if (reading_seen_ == *reading_ && ahead > 1) return false;
  reading_seen_ = *reading_;
  free_seen_ = free_();
  return ahead <= free_seen_;
}

const std::string* IndexKeySource::Next() {
  while (k_ < steps_) {
    if (j_ == count_) {  // the next slice of this batch, or the thread's next batch
      if (next_ == (k_ + 1) * batch_) {
        if (!MayWalk(k_ + stride_)) return nullptr;
        k_ += stride_;
        next_ = k_ * batch_;
        continue;
      }
      count_ = std::min(kSlice, (k_ + 1) * batch_ - next_);
      plan_.RankSlice(rank_, next_, count_, slice_.data());
      next_ += count_;
      j_ = 0;
    }
    const int64_t file = slice_[static_cast<size_t>(j_++)].file;
    if (keep_last_ && file == last_) continue;
    last_ = file;
    std::string* buf = ring_.empty() ? nullptr : &ring_[next_buf_++ % ring_.size()];
    return &files_.Name(file, buf);
  }
  return nullptr;
}

}  // namespace internal

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

std::unique_ptr<Loader> Loader::StartIndex(const LoaderConfig& cfg, const EpochPlan& plan, int64_t rank,
                                           int64_t steps, const std::atomic<bool>* cancel) {
  std::unique_ptr<Loader> l(new Loader(cfg, steps, cancel));
  l->index_plan_ = &plan;
  l->index_rank_ = rank;
  const int64_t t_count = l->cfg_.threads;
  // torch: prefetch_factor = ceil(prefetch_size / read_threads) batches per worker.
  const int64_t per_thread = std::max<int64_t>(1, (l->cfg_.prefetch + t_count - 1) / t_count);
  for (int64_t t = 0; t < t_count; ++t) {
    l->queues_.push_back(std::make_unique<Queue>());
    l->queues_.back()->capacity = per_thread;
  }
  auto loop = [p = l.get()](int t) { p->IndexThread(t); };
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
  l->stream_plan_ = std::move(a);
  const size_t n = std::min(l->stream_plan_.threads.size(), static_cast<size_t>(l->cfg_.threads));
  auto loop = [p = l.get()](int t) {
    if (p->stream_plan_.threads[static_cast<size_t>(t)].records > 0) p->StreamThread(t);
  };
  if (l->cfg_.pool != nullptr) {
    l->cfg_.pool->Run(static_cast<int>(n), loop);
  } else {
    for (size_t t = 0; t < n; ++t) {
      if (l->stream_plan_.threads[t].records > 0) l->threads_.emplace_back(loop, static_cast<int>(t));
    }
  }
  return l;
}

uint64_t Loader::BytesRead() const {
  uint64_t bytes = 0;
  for (const auto& st : stats_) bytes += st->bytes();
  return bytes;
}

int64_t Loader::QueueDepth() const {
  int64_t depth = 0;
  for (const auto& q : queues_) {
    MutexLock lk(&q->mu);
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
    MutexLock lk(&q->mu);
    q->cv.notify_all();
  }
}

bool Loader::Push(Queue& q) {
  MutexLock lk(&q.mu);
  // Short timed waits so an external cancel (a flag we cannot be notified of) is seen within 50 ms.
  while (q.ready >= q.capacity && !Stopped()) q.cv.WaitFor(&lk, std::chrono::milliseconds(50));
  if (Stopped()) return false;
  ++q.ready;
  q.cv.notify_all();
  return true;
}

void Loader::Fail(Queue& q, absl::Status s) {
  MutexLock lk(&q.mu);
  if (q.error.ok()) q.error = std::move(s);
  q.cv.notify_all();
}

void Loader::Finish(Queue& q) {
  MutexLock lk(&q.mu);
  q.done = true;
  q.cv.notify_all();
}

void Loader::IndexThread(int t) {
  RequestBulkSlices();
  Queue& q = *queues_[t];
  IoStats& stats = *stats_[t];
  const ScopedS3Rank s3_rank(cfg_.rank);  // the reader's S3 client picks its endpoint by the rank
  std::unique_ptr<SampleReader> reader = cfg_.format->NewSampleReader();
  const int64_t b = cfg_.batch;
  // The batch's samples come from the plan a slice at a time: one buffer per thread, allocated once.
  constexpr int64_t kSlice = 1024;
  std::vector<SampleRef> slice(static_cast<size_t>(std::min(b, kSlice)));
  Xoshiro256 rng(cfg_.seed ^ (static_cast<uint64_t>(t + 1) * 0x9E3779B97F4A7C15ull));
  uint64_t charged = stats.bytes();
  // s3 read-ahead: the thread's keys in its order, for the s3 engine to ask for ahead (null: one GET at a time).
  int64_t reading = t;
  std::unique_ptr<internal::IndexKeySource> keys;
  if (ReadsAhead(*cfg_.format)) {
    auto free = [&q]() -> int64_t {  // at batch boundaries of the key source, not per sample
      MutexLock lk(&q.mu);
      return q.capacity - q.ready;
    };
    keys = std::make_unique<internal::IndexKeySource>(*index_plan_, cfg_.files, index_rank_, t, cfg_.threads, steps_,
                                                      b, cfg_.format->options().read_in_memory, &reading, free);
  }
  S3KeySourceScope scope(keys.get());
  std::string name;  // a derived file name (agent/data_file_names.h); grows once to the longest
  for (int64_t k = t; k < steps_; k += cfg_.threads) {
    reading = k;
    for (int64_t first = k * b; first < (k + 1) * b; first += kSlice) {
      const int64_t count = std::min(kSlice, (k + 1) * b - first);
      index_plan_->RankSlice(index_rank_, first, count, slice.data());
      for (int64_t j = 0; j < count; ++j) {
        if (Stopped()) return;
        const SampleRef s = slice[static_cast<size_t>(j)];
        absl::StatusOr<uint64_t> n = reader->ReadSample(cfg_.files.Name(s.file, &name), s.sample, stats);
        if (!n.ok()) return Fail(q, n.status());  // the reader counted the sample itself
        if (cfg_.limiter != nullptr) Throttle(stats, &charged);
        Preprocess(rng);
      }
    }
    if (!Push(q)) return;
  }
  Finish(q);
}

bool Loader::Admit(Queue& q, int64_t claim) {
  const int64_t batch = claim / cfg_.batch;
  if (batch < taken_.load(std::memory_order_acquire) + q.capacity) return true;  // the usual case: no lock
  MutexLock lk(&q.mu);
  // Short timed waits so an external cancel (a flag we cannot be notified of) is seen within 50 ms.
  while (batch >= taken_.load(std::memory_order_acquire) + q.capacity && !Stopped()) {
    q.cv.WaitFor(&lk, std::chrono::milliseconds(50));
  }
  return !Stopped();
}

void Loader::StreamThread(int t) {
  RequestBulkSlices();
  Queue& q = *queues_[0];
  IoStats& stats = *stats_[t];
  const StreamAssignment& plan = stream_plan_;
  const ThreadStream& mine = plan.threads[static_cast<size_t>(t)];
  const ScopedS3Rank s3_rank(cfg_.rank);  // the reader's S3 client picks its endpoint by the rank
  std::unique_ptr<StreamReader> reader = cfg_.format->NewStreamReader();
  Xoshiro256 rng(cfg_.seed ^ (static_cast<uint64_t>(t + 1) * 0x9E3779B97F4A7C15ull));
  if (!reader) return Fail(q, absl::UnimplementedError(absl::StrCat(cfg_.format->name(), ": no stream reader")));
  const int64_t per_pass = plan.PassRecords(static_cast<size_t>(t));
  int64_t k = 0;        // record of this thread within the pass
  size_t file = 0;      // its file being read (index into mine.files)
  int64_t in_file = 0;  // records read from that file
  uint64_t charged = stats.bytes();
  std::string name;  // a derived file name (agent/data_file_names.h)
  const std::string* path = nullptr;
  for (int64_t i = 0; i < mine.records; ++i) {
    if (Stopped()) return;
    if (k == per_pass) {  // the pass is over: DLIO's repeat() starts the rank's files again
      k = 0;
      file = 0;
    }
    if (in_file == 0) {
      path = &cfg_.files.Name(mine.files[file], &name);
      if (absl::Status s = reader->Open(*path, stats); !s.ok()) return Fail(q, s);
    }
    const bool deliver = plan.Delivered(plan.Position(static_cast<size_t>(t), k));
    if (deliver && !Admit(q, claimed_.fetch_add(1, std::memory_order_relaxed))) return;
    absl::StatusOr<bool> more = deliver ? reader->Next(stats) : reader->Skip(stats);
    if (!more.ok()) return Fail(q, more.status());
    if (!*more) {
      return Fail(q, absl::DataLossError(absl::StrCat(*path, ": ended after ", in_file,
                                                      " records; the plan reads dataset.num_samples_per_file = ",
                                                      plan.samples_per_file, " from every file")));
    }
    if (cfg_.limiter != nullptr) Throttle(stats, &charged);
    if (deliver) {
      Preprocess(rng);
      // The record that completes a batch of the rank's stream hands the batch over.
      if ((delivered_.fetch_add(1, std::memory_order_acq_rel) + 1) % cfg_.batch == 0) {
        MutexLock lk(&q.mu);
        ++q.ready;
        q.cv.notify_all();
      }
    }
    ++k;
    if (++in_file == plan.samples_per_file) {
      reader->Close();
      in_file = 0;
      ++file;
    }
  }
  reader->Close();
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
  MutexLock lk(&q.mu);
  while (q.ready == 0 && q.error.ok() && !Stopped()) q.cv.WaitFor(&lk, std::chrono::milliseconds(50));
  if (!q.error.ok()) return q.error;
  if (q.ready == 0) {
    lk.Unlock();
    Cancel();  // the reader threads sleep on cancel_ only (preprocess, bandwidth cap): wake them
    return absl::CancelledError("loader cancelled");
  }
  --q.ready;
  if (stream_) taken_.fetch_add(1, std::memory_order_release);  // opens the prefetch window by one batch
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
