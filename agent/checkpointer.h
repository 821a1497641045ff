// Checkpointer: writes and reads back one rank's checkpoint files (plan/checkpoint_plan.h) under a folder that
// the caller resolved below the agent's --data-root (base/confined_dir.h); every file is opened, created and
// renamed through it, so no symbolic link below the folder is followed.
//
// Memory: every file is written from, and read into, one reusable buffer of random bytes (constant 0x01 bytes with
// checkpoint.randomize_tensor false; 64 MiB by default,
// smaller when every file is smaller), so agent memory does not grow with the checkpoint size. DLIO instead
// allocates the whole shard as tensors in RAM.
// Writes: each file goes to "<name>.tmp" and is renamed to <name> once complete, so a reader never sees a short
// file; with fsync set, every file is fsync()ed before the rename and the directory after it (DLIO's fsync key is
// ignored by DLIO, see ../shared/reference/dlio.md §1.9). Reads: the whole file, sequentially, and an error if its
// size is not the planned one.
// Object storage (an S3Config given): `folder` is a key prefix of the bucket and each file an object
// <folder>/<dir_name>/<name>. A file of up to the buffer's size is one PUT from the buffer; a larger one a multipart
// upload whose parts are the buffer itself (64 MiB; objects up to 10,000 parts, ~625 GiB), so memory stays at one
// buffer for any checkpoint size. An object appears whole or not at all (a failed upload is aborted: no parts left
// behind), so no temporary key is needed; fsync has no meaning there (an object is durable once the PUT or the
// multipart completion is answered). Loads: a HEAD (the size must be the planned one), then ranged GETs of the
// buffer's size into the buffer.
// Names: dir_name and file names must be single path components (no '/', not "." or "..").
// Space: before a save writes anything, its files are checked against the free space of the folder's file system
// (agent/preflight.h CheckSpace; the files it replaces count as free, less the largest, whose old copy stands beside
// its temporary file until the rename): a save that cannot fit is refused with both numbers (ResourceExhausted).
// A save that fails (no space after all, an I/O error, a cancel) removes its temporary file, so no "<name>.tmp"
// is left to fill the file system for the next job; the files it completed before stay.
// Cancel: with a cancel flag (set_cancel: the job's, which the agent sets on Cancel), a save or load stops between
// chunks and inside the cap's sleep (base/sleep.h slices of 50 ms) once the flag is set, with kCancelled: a
// capped save of any size gives the agent back within the coordinator's 2 s stop grace.
// Rate: with a limiter (dlio_ext.checkpoint_bandwidth_limit, shared by the agent's ranks), every chunk written or read
// (for objects: a PUT, a multipart part, a ranged GET) is charged to it after the call, which sleeps while the agent
// runs ahead of the cap; the time counts in the save or load as the device's would.
// Thread-safety: one Checkpointer per thread (the limiter is shared and thread-safe).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/bandwidth_limiter.h"
#include "plan/checkpoint_plan.h"
#include "base/confined_dir.h"
#include "job/s3_limits.h"
#include "storage/s3/client.h"

namespace dlio {

class S3ObjectWriter;
class S3Client;

struct CheckpointIo {
  int64_t files = 0;
  int64_t bytes = 0;
  double seconds = 0;  // wall time of the whole save or load (directory creation included)
};

class Checkpointer {
 public:
  static constexpr size_t kDefaultBufferBytes = kCheckpointBufferBytes;  // job/s3_limits.h

  // Object storage: `s3` set, `folder` null and `s3_prefix` the key prefix of the checkpoints in the bucket.
  Checkpointer(std::shared_ptr<const ConfinedDir> folder, bool fsync, uint64_t seed,
               size_t buffer_bytes = kDefaultBufferBytes, std::shared_ptr<const S3Config> s3 = nullptr,
               std::string s3_prefix = "");
  ~Checkpointer();

  // Writes `files` into folder/dir_name (created if needed).
  absl::StatusOr<CheckpointIo> Save(const std::string& dir_name, const std::vector<CheckpointFile>& files);
  // Reads `files` back from folder/dir_name.
  absl::StatusOr<CheckpointIo> Load(const std::string& dir_name, const std::vector<CheckpointFile>& files);

  // Cache hygiene before a load (dlio_ext.checkpoint_evict_cache): flushes each file's dirty pages (fdatasync) and
  // drops its cached pages (posix_fadvise DONTNEED), so the load reads the storage, not the page cache.
  absl::Status Evict(const std::string& dir_name, const std::vector<CheckpointFile>& files);

  // The agent's checkpoint-bandwidth cap, or null (uncapped). Not owned; must outlive the saves and loads.
  void set_limiter(BandwidthLimiter* limiter) { limiter_ = limiter; }
  // The job's cancel flag, or null (never cancelled). Not owned; must outlive the saves and loads.
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }
  // checkpoint.randomize_tensor: true (the default) fills the buffer with random bytes; false with constant 0x01
  // bytes (DLIO's ones), which a compressing or deduplicating store shrinks. Call before the first Save.
  void set_randomize(bool randomize) { randomize_ = randomize; }

  // Bytes currently held by the buffer (for tests and the memory bound).
  size_t buffer_size() const { return buffer_.size(); }

 private:
  void EnsureBuffer(const std::vector<CheckpointFile>& files);
  bool Cancelled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }
  absl::Status CheckFits(const std::string& dir, const std::vector<CheckpointFile>& files) const;
  // Writes `bytes` of the buffer into a new file `tmp` (fsync()ed when asked); the caller removes it on an error.
  absl::Status WriteTemporary(const std::string& tmp, int64_t bytes);
  absl::StatusOr<CheckpointIo> SaveObjects(const std::string& dir_name, const std::vector<CheckpointFile>& files);
  absl::StatusOr<CheckpointIo> LoadObjects(const std::string& dir_name, const std::vector<CheckpointFile>& files);

  std::shared_ptr<const ConfinedDir> folder_;
  bool fsync_;
  uint64_t seed_;
  bool randomize_ = true;
  size_t max_buffer_;
  std::vector<char> buffer_;
  std::shared_ptr<const S3Config> s3_;
  std::string s3_prefix_;
  std::unique_ptr<S3ObjectWriter> writer_;  // s3: made at the first save (one connection, reused)
  std::unique_ptr<S3Client> reader_;        // s3: made at the first load
  BandwidthLimiter* limiter_ = nullptr;
  const std::atomic<bool>* cancel_ = nullptr;
};

}  // namespace dlio
