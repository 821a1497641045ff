// WriteQueue: the outgoing messages of one stream, with at most one write in flight (gRPC's callback API allows one
// outstanding write per stream). Push() queues a message and starts its write when none is in flight; the stream's
// write completion calls Done(), which starts the next one. Transport-agnostic: `start` is the stream's StartWrite.
//
// Ending: Close() stops the queue (queued messages not yet started are dropped, unless `drain` asks to write them
// first) and says whether a write is still in flight; the stream may finish once Close() or a later Done() returns
// true (nothing left in flight). A failed write breaks the queue (later pushes are refused) without ending it: the
// stream's reader notices the broken stream.
// A queue holding `max_queued` messages refuses more (kFull): its reader stopped reading.
// Thread-safety: every method from any thread. `start` is called without the queue's lock, for one message at a time
// (the message stays valid and unchanged until its Done()).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace dlio {

template <class T>
class WriteQueue {
 public:
  enum class Pushed { kStarted, kQueued, kClosed, kFull };

  WriteQueue(size_t max_queued, std::function<void(const T*)> start)
      : max_queued_(max_queued), start_(std::move(start)) {}

  Pushed Push(T m) {
    const T* first = nullptr;
    {
      MutexLock lk(&mu_);
      if (closed_ || broken_) return Pushed::kClosed;
      if (queue_.size() >= max_queued_) return Pushed::kFull;
      queue_.push_back(std::move(m));  // a deque keeps references to the other elements valid
      if (!in_flight_) {
        in_flight_ = true;
        first = &queue_.front();
      }
    }
    if (first == nullptr) return Pushed::kQueued;
    start_(first);
    return Pushed::kStarted;
  }

  // The write in flight completed (`ok`: it reached the transport). True when the queue was closed and nothing is
  // in flight any more.
  bool Done(bool ok) {
    const T* next = nullptr;
    {
      MutexLock lk(&mu_);
      if (!queue_.empty()) queue_.pop_front();
      if (!ok) {
        broken_ = true;
        queue_.clear();
      }
      if (!queue_.empty() && (!closed_ || draining_)) {
        next = &queue_.front();
      } else {
        queue_.clear();
        in_flight_ = false;
        return closed_;
      }
    }
    start_(next);
    return false;
  }

  // No more pushes; with `drain`, the queued messages are still written. True when nothing is in flight (else the
  // Done() that ends the last write returns true).
  bool Close(bool drain = false) {
    MutexLock lk(&mu_);
    if (!closed_) draining_ = drain;
    closed_ = true;
    if (!in_flight_) queue_.clear();
    return !in_flight_;
  }

  size_t size() const {
    MutexLock lk(&mu_);
    return queue_.size();
  }

 private:
  const size_t max_queued_;
  const std::function<void(const T*)> start_;
  mutable Mutex mu_;
  std::deque<T> queue_ ABSL_GUARDED_BY(mu_);  // front: the write in flight (when in_flight_)
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;  // closed, but the queued messages are still written
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace dlio
