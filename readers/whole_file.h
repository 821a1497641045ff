// WholeFileReader (internal): the whole-file read of npy, csv, jpeg and png through a StorageReader (storage.h), so
// dlio_ext.io_engine (posix, odirect, io_uring, mmap) and s3 (one GET per object) apply to them as to npz, and
// reader.read_type: memory.
//
// Contract: Read(path) opens the file (one AddFile), reads all of it into an aligned buffer that grows only (no
// allocation per file once warm: the buffer and the StorageReader are made on first use and reused), closes it and
// returns its size; data() holds the bytes until the next Read(). Pieces of kWholeFileReadChunk (kUringPiece with
// io_uring, so several are in flight), rounded up to 4 KiB with odirect as DLIO's O_DIRECT readers do.
// With `keep` (reader.read_type: memory) a Read() of the file read last returns the bytes already in memory without
// any I/O: DLIO's memory read type keeps opened files, and since a loader thread reads a file's samples one after
// another (index mode, unshuffled) keeping the most recent file gives the same I/O with bounded memory.
// Thread-safety: none; one per loader thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "results/io_stats.h"
#include "storage/io_util.h"
#include "storage/open.h"
#include "storage/storage.h"

namespace dlio::internal {

class WholeFileReader {
 public:
  WholeFileReader(StorageTarget target, bool keep) : target_(std::move(target)), keep_(keep) { cached_.reserve(256); }

  absl::StatusOr<uint64_t> Read(const std::string& path, IoStats& stats) {
    if (keep_ && valid_ && path == cached_) return size_;
    valid_ = false;
    if (!storage_) {  // made on first use so that an io_uring set-up error reaches the caller as a Status
      absl::StatusOr<std::unique_ptr<StorageReader>> s = NewStorageReader(target_);
      if (!s.ok()) return s.status();
      storage_ = std::move(*s);
    }
    const size_t piece = target_.engine == IoEngine::kIoUring ? kUringPiece : kWholeFileReadChunk;
    absl::StatusOr<uint64_t> size = storage_->ReadFile(path, buf_, piece, stats);
    if (!size.ok()) return size.status();
    size_ = *size;
    if (keep_) {
      cached_.assign(path);  // no allocation while paths fit the reserved capacity
      valid_ = true;
    }
    return size_;
  }
  const uint8_t* data() const { return buf_.data(); }

 private:
  const StorageTarget target_;
  const bool keep_;
  std::unique_ptr<StorageReader> storage_;
  AlignedBuffer buf_;
  std::string cached_;
  bool valid_ = false;
  uint64_t size_ = 0;
};

}  // namespace dlio::internal
