// S3 read-ahead: many whole-object GETs in flight for one loader thread (issue 27 item 4,
// dlio_ext.s3_requests_in_flight), over libcurl's multi interface.
//
// Contract:
//  - S3KeySource: the object keys one thread is about to read with whole-object GETs (StorageReader::ReadFile), in
//    the order it will read them. The loader installs one for its reader thread with S3KeySourceScope (a
//    thread-local: the format readers between the loader and the s3 engine need not know about it); the s3 engine
//    pulls keys from it while its window has room. Keys are pointers into the source's own storage and must stay
//    valid while the scope lives.
//  - ReadAheadWindow (pure logic, no I/O): up to `limit` keys in flight in a ring of slots, consumed in the order
//    they were issued whatever the order they complete in: what keeps the prefetch queue's order (samples are
//    delivered in the plan's order).
//  - S3ReadAhead keeps up to `requests_in_flight` transfers going and holds up to twice that many answers (a
//    finished answer waiting for its turn does not hold back the next transfer: the window has 2 x that many slots).
//  - ReadAheadLimit(): how many of the window's slots may be used given the largest object seen, so that a thread
//    holds at most kReadAheadBytes of answers (a 140 MB unet3d object reads one at a time, as before).
//  - S3ReadAhead::Get(key): the next whole object, from the window when `key` is its front (the GETs before it that
//    the reader no longer asks for are dropped, and counted as requests with the bytes they got), else by the
//    client's one-request path. Only answers 2xx in one
//    exchange are taken from the window; anything else (a transport error, a 3xx, 4xx or 5xx) is not counted and
//    is asked again through S3Client::Get, which retries, follows redirects and names the error exactly as without
//    read-ahead. Every GET taken is one request of the read-ahead's own S3Stats (registered with S3Metrics, so
//    dlio_s3_* series and summary.json count it as any GET), its latency from issue to completion.
//  - Progress: the transfers are driven on every Get, also when its answer had already arrived, and the GETs that
//    take the freed places are sent before Get returns (the reader's work on an answer overlaps them).
//  - Connections: one easy handle per slot, reused request after request within one multi handle whose connection
//    cache keeps the connections alive (HTTP/1.1 keep-alive, TCP_NODELAY, at most `window` connections to the host).
//  - In flight (a debug counter, issue 27's 2 MiB question): in_flight() says how many transfers were going over the
//    read-ahead's life (the time-weighted mean from the first issue on, and the most at once) and how many Gets
//    ended with fewer than requests_in_flight going because the key source had no key to give (it holds keys
//    back beyond the loader's prefetch bound). Two clock reads per transfer, no lock, no allocation. With the
//    environment variable DLIO_S3_READ_AHEAD_STATS set (to anything), the destructor prints it on stderr, one line.
//  - Allocation: once warm, none of ours per object (slot URLs and buffers grow only; a finished buffer is swapped
//    with the reader's, not copied; tests/s3_read_ahead_alloc_test.cc counts it); libcurl's own allocations (~113
//    mallocs per GET: the URL copy, the signed headers) are its own.
// Thread-safety: none; one S3ReadAhead per reader (per loader thread). S3KeySourceScope is per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/s3/client.h"
#include "storage/storage.h"

typedef void CURLM;
struct curl_slist;

namespace dlio {

// The keys a loader thread will read next (see the contract).
class S3KeySource {
 public:
  virtual ~S3KeySource() = default;
  // The next key, or null when there is none now (the read-ahead asks again later: a source may hold its keys
  // back, as the loader's does beyond its prefetch bound).
  virtual const std::string* Next() = 0;
};

// Installs `source` as this thread's key source for its lifetime (null: none). Not nestable.
class S3KeySourceScope {
 public:
  explicit S3KeySourceScope(S3KeySource* source);
  ~S3KeySourceScope();
  S3KeySourceScope(const S3KeySourceScope&) = delete;
  S3KeySourceScope& operator=(const S3KeySourceScope&) = delete;
};
// This thread's key source, or null.
S3KeySource* CurrentS3KeySource();

// Bytes of answers a thread may hold in flight: 64 MiB is 8 x 8 MiB or 32 x 2 MiB objects, while a thread with
// objects larger than that keeps one GET at a time (the memory of a thread stays what it was without read-ahead).
inline constexpr uint64_t kReadAheadBytes = uint64_t{64} << 20;
// The slots of a window of `window` that may be in flight when the largest object seen so far has `largest` bytes
// (0 = none seen yet: the whole window): at least 1.
size_t ReadAheadLimit(size_t window, uint64_t largest);

// The ordering logic of the read-ahead (see the contract): a ring of `capacity` slots, pushed at the back,
// consumed at the front.
class ReadAheadWindow {
 public:
  explicit ReadAheadWindow(size_t capacity) : keys_(capacity, nullptr), done_(capacity, false) {}
  size_t capacity() const { return keys_.size(); }
  size_t size() const { return count_; }
  // The slot for `key` at the back, or -1 when `limit` (at most capacity()) keys are already in the window.
  int Push(const std::string* key, size_t limit);
  // The position of `key` from the front (0 = the front), or -1 when it is not in the window.
  int Find(absl::string_view key) const;
  // The front's slot (the window is not empty).
  int front() const { return static_cast<int>(head_); }
  const std::string* key(int slot) const { return keys_[static_cast<size_t>(slot)]; }
  void MarkDone(int slot) { done_[static_cast<size_t>(slot)] = true; }
  bool done(int slot) const { return done_[static_cast<size_t>(slot)]; }
  // Removes the front; returns its slot, free again (key(slot) still names what it held until the next Push).
  int PopFront();

 private:
  std::vector<const std::string*> keys_;
  std::vector<bool> done_;
  size_t head_ = 0;
  size_t count_ = 0;
};

class S3ReadAhead {
 public:
  // `client`: the reader's own client, used for URLs and for the one-request path; it must outlive this object.
  explicit S3ReadAhead(S3Client& client);
  ~S3ReadAhead();
  S3ReadAhead(const S3ReadAhead&) = delete;
  S3ReadAhead& operator=(const S3ReadAhead&) = delete;

  // The whole object `key` into `buf` (grown to fit, never shrunk); returns its size. `source` is asked for the
  // keys that follow while the window has room. `*latency_ns`: from the GET's issue to its completion.
  absl::StatusOr<uint64_t> Get(const std::string& key, S3KeySource& source, AlignedBuffer& buf,
                               uint64_t* latency_ns);

  // See "In flight" in the contract.
  struct InFlight {
    double mean = 0;          // transfers going, averaged over the time since the first one was issued
    size_t high_water = 0;    // the most going at once
    uint64_t gets = 0;        // Get calls
    uint64_t short_gets = 0;  // of them, those that returned with fewer than requests_in_flight going for want of keys
    double seconds = 0;       // the time the mean is taken over
  };
  InFlight in_flight() const;

  struct Slot;  // one GET's state (internal; public for libcurl's C callbacks)

 private:
  // Returns true when it stopped for want of a key (the source gave none) rather than for want of room.
  bool Refill(S3KeySource& source);
  // Before active_ changes: adds the transfers going since the last change to the in-flight time integral.
  void Account();
  void Start(int slot, const std::string& key);
  // Drives the transfers once without waiting and marks the finished ones done.
  void Pump();
  // Runs the transfers (at least once, done front or not) until the front is done (polling the sockets),
  // refilling as transfers finish.
  void WaitFront(S3KeySource& source);
  void Drop(int slot);

  S3Client& client_;
  const size_t in_flight_;  // S3Config::requests_in_flight: transfers at once
  size_t active_ = 0;       // transfers added to multi_ and not finished
  CURLM* multi_ = nullptr;
  curl_slist* headers_ = nullptr;  // x-amz-content-sha256, built once for every slot
  ReadAheadWindow window_;
  std::vector<std::unique_ptr<Slot>> slots_;
  uint64_t largest_ = 0;  // the largest object taken so far (ReadAheadLimit)
  S3Stats stats_;
  // In flight (see the contract): sum of active_ x ns since first_ns_, the last change, and the counters.
  uint64_t area_ = 0, first_ns_ = 0, last_ns_ = 0;
  size_t high_water_ = 0;
  uint64_t gets_ = 0, short_gets_ = 0;
};

}  // namespace dlio
