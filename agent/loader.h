// Loader: one rank's data pipeline: read_threads reader threads filling a prefetch queue of batches.
//
// Index mode (pytorch-style): batch k of the rank's plan is read by thread k % T, sample after sample, like a
// torch DataLoader worker; each thread keeps at most ceil(prefetch_size / T) finished batches ahead (torch's
// prefetch_factor), and Next() hands batches out in order.
// Stream mode (tfrecord, DLIO's TensorFlow pipeline; plan/epoch_plan.h): thread t streams its files in
// transfer_size reads, the records it is given (StreamAssignment), and the rank's batches are cut from all threads'
// delivered records together, as tf.data batches its interleaved stream: a batch holds records of several files
// and threads. Each delivered record claims a place in the rank's stream (one atomic add) and may be read only
// while its batch is within prefetch_size batches of the step thread (tf.data's prefetch); the thread that
// completes a batch hands it over (one mutex/condvar hand-off per batch), and Next() takes batches in order.
// Batches are completion tokens: as in DLIO, the bytes read are not handed to the accelerator.
//
// Threads: the caller's WorkerPool (persistent across epochs, as torch's persistent_workers) or the Loader's own.
// Hot path: each thread owns its reader (reusable buffers) and its IoStats; the only synchronisation is one
// mutex/condvar hand-off per *batch* on a per-thread (index) or per-rank (stream) queue, never per I/O.
// S3 read-ahead (dlio_ext.s3_requests_in_flight > 1, formats with one whole-object GET per file): an index-mode
// thread installs its key source (storage/s3/read_ahead.h) so the s3 engine keeps that many GETs of its next samples
// in flight; samples are still taken in the plan's order, and the keys of a batch are given only once the thread
// would read it without waiting: its queue has room for the batches between (the prefetch depth, not only the next
// batch: with few objects per batch, one batch ahead left the GETs' window short of keys; IndexKeySource below).
// Cancellation: Cancel() (or the shared flag) stops the threads between samples; Next() then returns Cancelled.
// Thread-safety: Next() is called by the rank's step thread only; Snapshot() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "job/distribution.h"
#include "plan/epoch_plan.h"
#include "results/io_stats.h"
#include "results/trace_buffer.h"
#include "agent/data_file_names.h"
#include "agent/worker_pool.h"
#include "base/bandwidth_limiter.h"
#include "base/mutex.h"
#include "readers/format.h"
#include "storage/s3/read_ahead.h"

namespace dlio {

struct LoaderConfig {
  const Format* format = nullptr;
  // The name (absolute path or object key) of every file id of the split: held, or derived from DLIO's naming
  // (agent/data_file_names.h); a derived name is written into a per-thread buffer when the thread reaches it.
  DataFileNames files;
  int64_t batch = 1;
  int64_t threads = 1;             // read_threads; 0 is treated as 1
  int64_t prefetch = 2;            // prefetch_size in batches; 0 is treated as 1
  Distribution preprocess;         // reader.preprocess_time: slept per sample in the reader thread, as DLIO does
  uint64_t seed = 0;               // of the preprocess draws (mixed with the thread index)
  // Persistent loader threads (at least `threads` of them) kept from epoch to epoch by the caller; null: the Loader
  // creates its own threads.
  WorkerPool* pool = nullptr;
  // dlio_ext.read_bandwidth_limit: the agent's shared limiter, charged with the bytes each thread's IoStats counted
  // after every sample (index) or record (stream). Null = uncapped: one pointer check per sample, nothing else.
  BandwidthLimiter* limiter = nullptr;
  // --trace: per reader thread t, the TraceBuffer its IoStats records open and read events into (trace[t]); empty
  // (the default) = no tracing. The buffers belong to the caller and must outlive the Loader.
  std::vector<TraceBuffer*> trace;
  // The phase's cancel flag (the agent was told to stop); null = none. Next() then returns Cancelled within 50 ms
  // and the reader threads stop, their preprocess and bandwidth-cap sleeps cut short (base/sleep.h).
  const std::atomic<bool>* cancel = nullptr;
  // The global rank the loader reads for: S3 clients its threads make pick their endpoint by it
  // (storage/s3/endpoints.h); -1 = none.
  int64_t rank = -1;
};

namespace internal {

// The keys an index-mode loader thread reads, in its order (storage/s3/read_ahead.h): the files of its batches'
// samples, walked through the plan a slice at a time as the thread itself does, a file read again right after itself
// named once when the reader keeps the file read last (reader.read_type: memory, readers/whole_file.h).
// The prefetch bound holds for the GETs too: the thread reads batch `*reading` and its queue can take `free()` more
// batches without waiting, so it reads the next free() of its batches without waiting: their keys are given, the
// ones beyond are not (null: the read-ahead asks again). free() takes the queue's mutex: it is asked when the walk
// reaches a batch beyond what it last said, at most once per batch the thread reads, except for the thread's very
// next batch, which is asked again at every refill while held back (the step thread may make room meanwhile).
// Derived names (agent/data_file_names.h) are written into a ring of kKeyRing buffers: a key must stay valid while
// the read-ahead's window holds it, and the window holds at most 2 x dlio_ext.s3_requests_in_flight (at most 64)
// keys, handed out in order and released in order, so a buffer is reused only long after its key left the window.
// Thread-safety: the thread's own (`*reading` is its variable); free() is the only look at shared state.
class IndexKeySource final : public S3KeySource {
 public:
  // The batches first_batch, first_batch + stride, ... below `steps` of `rank`'s plan, `batch` samples each.
  IndexKeySource(const EpochPlan& plan, const DataFileNames& files, int64_t rank, int64_t first_batch,
                 int64_t stride, int64_t steps, int64_t batch, bool keep_last, const int64_t* reading,
                 std::function<int64_t()> free);

  const std::string* Next() override;

  static constexpr int64_t kSlice = 1024;  // samples per RankSlice call, as IndexThread
  static constexpr size_t kKeyRing = 256;  // > 128, the largest read-ahead window (see above)

 private:
  // Whether the keys of batch `next` (the thread's batch after the one walked) may be given now.
  bool MayWalk(int64_t next);

  const EpochPlan& plan_;
  const DataFileNames& files_;
  const int64_t rank_;
  int64_t k_;              // the batch being walked
  const int64_t stride_, steps_, batch_;
  const bool keep_last_;
  const int64_t* reading_;             // the batch the thread reads now (its own variable: same thread)
  std::function<int64_t()> free_;      // batches the thread's queue can take without waiting
  int64_t free_seen_ = 0;              // what free() said last, while the thread read batch reading_seen_
  int64_t reading_seen_ = -1;
  std::vector<SampleRef> slice_;
  int64_t next_ = 0;       // the batch's next sample to slice
  int64_t count_ = 0;      // samples in slice_
  int64_t j_ = 0;          // next of them
  int64_t last_ = -1;      // the file of the key handed out last
  std::vector<std::string> ring_;  // derived names: the buffers of the keys handed out last
  size_t next_buf_ = 0;
};

}  // namespace internal

class Loader {
 public:
  // Index mode: rank `rank`'s batches of `plan` (kIndex), computed batch by batch (EpochPlan::RankSlice), so the
  // loader holds nothing per sample of the epoch (a few KiB per thread, whatever the sample count). `plan` must
  // outlive the Loader.
  static std::unique_ptr<Loader> StartIndex(const LoaderConfig& cfg, const EpochPlan& plan, int64_t rank, int64_t steps,
                                            const std::atomic<bool>* cancel);
  static std::unique_ptr<Loader> StartStream(const LoaderConfig& cfg, StreamAssignment assignment, int64_t steps,
                                             const std::atomic<bool>* cancel);
  ~Loader();

  // Blocks until the next batch is ready. Errors name the file that failed.
  absl::Status Next();
  void Cancel();
  // I/O counters merged over the reader threads.
  IoSnapshot Snapshot() const;
  // Bytes the reader threads read so far (one relaxed load per thread: cheap enough for every step).
  uint64_t BytesRead() const;
  // Finished batches waiting in the prefetch queue(s) right now (for the dlio_prefetch_queue_depth gauge). Takes
  // each queue's mutex briefly: meant for scrapes, not for the hot path.
  int64_t QueueDepth() const;

 private:
  // Bounded FIFO of finished batches; one mutex/condvar hand-off per batch.
  struct Queue {
    Mutex mu;
    CondVar cv;
    int64_t ready ABSL_GUARDED_BY(mu) = 0;       // finished batches not yet taken
    int64_t capacity = 1;
    absl::Status error ABSL_GUARDED_BY(mu);      // first reader error
    bool done ABSL_GUARDED_BY(mu) = false;       // producer finished (no more batches)
  };

  Loader(const LoaderConfig& cfg, int64_t steps, const std::atomic<bool>* cancel);
  bool Push(Queue& q);                            // false when cancelled
  void Fail(Queue& q, absl::Status s);
  void Finish(Queue& q);
  bool Stopped() const;
  void Preprocess(Xoshiro256& rng);
  // Charges the limiter with the bytes `stats` counted since `*charged` (and sleeps as it says, until cancelled).
  void Throttle(const IoStats& stats, uint64_t* charged);
  void IndexThread(int t);
  void StreamThread(int t);
  // Stream mode: waits until stream record `claim` (0-based, in claim order) falls within the prefetch window of
  // batches; false when cancelled.
  bool Admit(Queue& q, int64_t claim);

  LoaderConfig cfg_;
  int64_t steps_;
  int64_t next_batch_ = 0;                        // step thread only
  const std::atomic<bool>* external_cancel_;
  std::atomic<bool> cancel_{false};
  bool stream_ = false;
  const EpochPlan* index_plan_ = nullptr;          // index: the rank's plan (outlives the Loader)
  int64_t index_rank_ = 0;
  StreamAssignment stream_plan_;                  // stream: per thread, its files and records
  std::atomic<int64_t> claimed_{0};               // stream: delivered records admitted so far (all threads)
  std::atomic<int64_t> delivered_{0};             // stream: delivered records read so far (all threads)
  std::atomic<int64_t> taken_{0};                 // stream: batches Next() has handed out
  std::vector<std::unique_ptr<Queue>> queues_;    // index: one per thread; stream: one
  std::vector<std::unique_ptr<IoStats>> stats_;   // one per thread
  std::vector<std::thread> threads_;
};

}  // namespace dlio
