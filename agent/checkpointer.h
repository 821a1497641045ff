// Checkpointer: writes and reads back one rank's checkpoint files (common/checkpoint_plan.h) under a folder that
// the caller resolved below the agent's --data-root (common/confined_dir.h); every file is opened, created and
// renamed through it, so no symbolic link below the folder is followed.
//
// Memory: every file is written from, and read into, one reusable buffer of random bytes (64 MiB by default,
// smaller when every file is smaller), so agent memory does not grow with the checkpoint size. DLIO instead
// allocates the whole shard as tensors in RAM.
// Writes: each file goes to "<name>.tmp" and is renamed to <name> once complete, so a reader never sees a short
// file; with fsync set, every file is fsync()ed before the rename and the directory after it (DLIO's fsync key is
// ignored by DLIO, see ../shared/reference/dlio.md §1.9). Reads: the whole file, sequentially, and an error if its
// size is not the planned one.
// Names: dir_name and file names must be single path components (no '/', not "." or "..").
// Thread-safety: one Checkpointer per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/checkpoint_plan.h"
#include "common/confined_dir.h"

namespace dlio {

struct CheckpointIo {
  int64_t files = 0;
  int64_t bytes = 0;
  double seconds = 0;  // wall time of the whole save or load (directory creation included)
};

class Checkpointer {
 public:
  static constexpr size_t kDefaultBufferBytes = size_t{64} << 20;

  Checkpointer(std::shared_ptr<const ConfinedDir> folder, bool fsync, uint64_t seed,
               size_t buffer_bytes = kDefaultBufferBytes);

  // Writes `files` into folder/dir_name (created if needed).
  absl::StatusOr<CheckpointIo> Save(const std::string& dir_name, const std::vector<CheckpointFile>& files);
  // Reads `files` back from folder/dir_name.
  absl::StatusOr<CheckpointIo> Load(const std::string& dir_name, const std::vector<CheckpointFile>& files);

  // Cache hygiene before a load (dlio_ext.checkpoint_evict_cache): flushes each file's dirty pages (fdatasync) and
  // drops its cached pages (posix_fadvise DONTNEED), so the load reads the storage, not the page cache.
  absl::Status Evict(const std::string& dir_name, const std::vector<CheckpointFile>& files);

  // Bytes currently held by the buffer (for tests and the memory bound).
  size_t buffer_size() const { return buffer_.size(); }

 private:
  void EnsureBuffer(const std::vector<CheckpointFile>& files);

  std::shared_ptr<const ConfinedDir> folder_;
  bool fsync_;
  uint64_t seed_;
  size_t max_buffer_;
  std::vector<char> buffer_;
};

}  // namespace dlio
