// Mutex, MutexLock, CondVar: std::mutex and std::condition_variable carrying Clang's thread-safety attributes, so
// the lock contracts written with ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED are checked at build time (clang
// -Wthread-safety -Werror: the extra build of scripts/test.sh, cmake -DDLIO_THREAD_SAFETY=ON). libstdc++'s
// std::mutex has no such attributes, so annotations naming one were never checked. GCC ignores the attributes; the
// code is the same std::mutex either way.
//
// Usage:
//   Mutex mu_;
//   int n_ ABSL_GUARDED_BY(mu_);
//   void Add() { MutexLock lk(&mu_); ++n_; cv_.notify_all(); }
//   void WaitPositive() {
//     MutexLock lk(&mu_);
//     cv_.Wait(&lk, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return n_ > 0; });  // the predicate runs locked
//   }
// A predicate reads guarded state, so it says it needs the lock (the analysis then checks its body); CondVar's
// waits are the one place the analysis is told to trust (they call the predicate with the lock held).
// A function that must let go of a lock its caller holds (slow work such as writing files) is marked
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) and calls mu_.Unlock() ... mu_.Lock() around that work.
// Thread-safety: as std::mutex and std::condition_variable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace dlio {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope; Unlock() and Lock() let go of it around work the lock must not cover.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : lk_(mu->mu_) {}
  ~MutexLock() ABSL_UNLOCK_FUNCTION() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  void Unlock() ABSL_UNLOCK_FUNCTION() { lk_.unlock(); }
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { lk_.lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lk_;
};

class CondVar {
 public:
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }
  // Waits (the lock released meanwhile) until `pred` holds.
  template <class Pred>
  void Wait(MutexLock* lk, Pred pred) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    cv_.wait(lk->lk_, pred);
  }
  // Until `pred` holds or `timeout` passed; returns pred's last value.
  template <class Rep, class Period, class Pred>
  bool WaitFor(MutexLock* lk, std::chrono::duration<Rep, Period> timeout, Pred pred) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return cv_.wait_for(lk->lk_, timeout, pred);
  }
  template <class Clock, class Duration, class Pred>
  bool WaitUntil(MutexLock* lk, std::chrono::time_point<Clock, Duration> deadline, Pred pred)
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return cv_.wait_until(lk->lk_, deadline, pred);
  }
  // One wait of at most `timeout` (a wake-up, a timeout or a spurious return: re-check the state).
  template <class Rep, class Period>
  void WaitFor(MutexLock* lk, std::chrono::duration<Rep, Period> timeout) {
    cv_.wait_for(lk->lk_, timeout);
  }
  template <class Clock, class Duration>
  void WaitUntil(MutexLock* lk, std::chrono::time_point<Clock, Duration> deadline) {
    cv_.wait_until(lk->lk_, deadline);
  }

 private:
  std::condition_variable cv_;
};

}  // namespace dlio
