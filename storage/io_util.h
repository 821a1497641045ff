// io_util: internal helpers shared by the format implementations (not part of dlio::formats' public API).
//
//  - Fd: an owning file descriptor.
//  - PreadAccounted / ReadWholeFile / FileWriter: the only places our own code touches a data file; every syscall
//    is timed with the steady clock and recorded as one IoStats::AddOp(bytes, ns).
//  - Rng: xoshiro256** seeded through splitmix64, filling 8 bytes per step, so generating a GiB of sample bytes
//    costs well under a second (DLIO's numpy generation is the slow part of its data generation).
// Thread-safety: none needed; every object here belongs to one thread.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/confined_dir.h"
#include "results/io_stats.h"
#include "base/random.h"
#include "storage/s3/engine.h"
#include "storage/storage.h"

namespace dlio::internal {

// Generation writes in pieces of this size: large enough that syscall cost is noise (< 1 % at GB/s), small enough
// that one write's latency still means something in the histogram.
inline constexpr size_t kWriteChunk = size_t{8} << 20;

inline uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

inline absl::Status ErrnoError(const std::string& path, const char* what, int err) {
  std::string msg = absl::StrCat(path, ": ", what, ": ", std::strerror(err));
  // The two refusals of a confined open (base/confined_dir.h).
  if (err == ELOOP) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", what, ": refused: a symbolic link on the way (the "
                                                    "agent follows none below its data root)"));
  }
  if (err == EXDEV) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", what, ": refused: outside the data folder"));
  }
  switch (err) {
    case ENOENT: return absl::NotFoundError(msg);
    case EACCES: case EPERM: return absl::PermissionDeniedError(msg);
    default: return absl::InternalError(msg);
  }
}

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) { Reset(); fd_ = o.fd_; o.fd_ = -1; }
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes and reports the close() error (which is where NFS and friends report delayed write errors).
  int Close() {
    int rc = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = -1;
    return rc;
  }

 private:
  int fd_ = -1;
};

// open(2) of `path`, below `dir` when given (base/confined_dir.h); -1 with errno.
inline int OpenFile(const ConfinedDir* dir, const std::string& path, int flags, mode_t mode = 0) {
  return dir != nullptr ? dir->Open(path, flags, mode) : ::open(path.c_str(), flags | O_CLOEXEC, mode);
}

// One pread() of up to n bytes at off, retried on EINTR, accounted as one op. Returns the bytes read (0 = EOF).
inline absl::StatusOr<size_t> PreadAccounted(int fd, void* buf, size_t n, uint64_t off, const std::string& path,
                                             IoStats& stats) {
  for (;;) {
    uint64_t t0 = NowNs();
    ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(off));
    uint64_t t1 = NowNs();
    if (r >= 0) {
      stats.AddOp(static_cast<uint64_t>(r), t1 - t0);
      return static_cast<size_t>(r);
    }
    if (errno != EINTR) return ErrnoError(path, "read", errno);
  }
}

// Whole-file reads (npz, npy, csv, images) go in pieces of this size: a few syscalls even for DLIO's 140 MB unet3d
// files, and one op's latency stays comparable between small and large files.
inline constexpr size_t kWholeFileReadChunk = size_t{8} << 20;

// Opens `path` (one AddFile), reads all of it with PreadAccounted() calls of up to kWholeFileReadChunk into `buf`,
// which grows to the largest file seen and never shrinks (no allocation per call once warm), and closes it.
// Returns the file size. A file that ends early is DataLoss naming the file.
inline absl::StatusOr<uint64_t> ReadWholeFile(const std::string& path, std::unique_ptr<uint8_t[]>& buf,
                                              uint64_t& cap, IoStats& stats, const ConfinedDir* dir = nullptr) {
  Fd fd(OpenFile(dir, path, O_RDONLY));
  if (!fd.valid()) return ErrnoError(path, "open", errno);
  stats.AddFile();
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(path, "stat", errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > cap || !buf) {
    buf.reset(new uint8_t[std::max<uint64_t>(size, 1)]);
    cap = std::max<uint64_t>(size, 1);
  }
  for (uint64_t off = 0; off < size;) {
    absl::StatusOr<size_t> r =
        PreadAccounted(fd.get(), buf.get() + off, std::min<uint64_t>(kWholeFileReadChunk, size - off), off, path, stats);
    if (!r.ok()) return r.status();
    if (*r == 0) {
      return absl::DataLossError(absl::StrCat(path, ": file ended at byte ", off, " of ", size, " while reading"));
    }
    off += *r;
  }
  return size;
}

// SyncFile: waits until a written file's data is on the storage (fdatasync through a new read-only descriptor).
inline absl::Status SyncFile(const std::string& path, const ConfinedDir* dir = nullptr) {
  Fd fd(OpenFile(dir, path, O_RDONLY));
  if (!fd.valid()) return ErrnoError(path, "open to sync", errno);
  if (::fdatasync(fd.get()) != 0) return ErrnoError(path, "fdatasync", errno);
  return absl::OkStatus();
}

// FileWriter: creates (truncates) a data file and writes it in kWriteChunk pieces, each pwrite() accounted as one
// op; Finish() flushes, starts writeback, closes (reporting close errors) and counts the completed file. Small appends
// are gathered in a kWriteChunk buffer; an append of >= kWriteChunk with an empty buffer, and AppendDirect(), are
// written straight from the caller's memory.
// Object storage: Open(key, target) with target.engine == kS3 writes object `key` instead (storage/s3/engine.h:
// one PUT, or a multipart upload above kS3MultipartThreshold; no temporary name needed, an object appears whole).
class FileWriter {
 public:
  absl::Status Open(const std::string& path, const StorageTarget& target) {
    if (target.engine != IoEngine::kS3) return Open(path, target.dir.get());
    if (!s3_) s3_ = std::make_unique<S3ObjectWriter>(target.s3);
    s3_->Open(path);
    s3_active_ = true;
    return absl::OkStatus();
  }
  // Below `dir` (when given) the file is always a new one: an existing name (a stale temporary, or a hard link
  // planted there) is removed first, so no existing inode is ever written through.
  absl::Status Open(const std::string& path, const ConfinedDir* dir = nullptr) {
    s3_active_ = false;
    path_ = path;
    if (dir != nullptr) dir->Unlink(path);  // ENOENT is the usual answer
    fd_ = Fd(dir != nullptr ? dir->Open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)
                            : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_.valid()) return ErrnoError(path, "create", errno);
    off_ = 0;
    used_ = 0;
    return absl::OkStatus();
  }
  absl::Status Append(const void* data, size_t n, IoStats& stats) {
    if (s3_active_) return s3_->Append(data, n, stats);
    const uint8_t* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      if (used_ == 0 && n >= kWriteChunk) {
        if (absl::Status s = Write(p, kWriteChunk, stats); !s.ok()) return s;
        p += kWriteChunk;
        n -= kWriteChunk;
        continue;
      }
      buf_.Reserve(kWriteChunk);  // page-aligned and pooled (storage.h AlignedBuffer)
      size_t take = std::min(n, kWriteChunk - used_);
      std::memcpy(buf_.data() + used_, p, take);
      used_ += take;
      p += take;
      n -= take;
      if (used_ == kWriteChunk) {
        if (absl::Status s = Flush(stats); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }
  // Writes [data, data+n) from the caller's memory in kWriteChunk pieces, after anything appended before it (no copy
  // into the staging buffer: for callers that hold the whole file, e.g. an archive built in memory).
  absl::Status AppendDirect(const void* data, size_t n, IoStats& stats) {
    if (s3_active_) return s3_->Append(data, n, stats);
    if (absl::Status s = Flush(stats); !s.ok()) return s;
    const uint8_t* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      const size_t k = std::min(n, kWriteChunk);
      if (absl::Status s = Write(p, k, stats); !s.ok()) return s;
      p += k;
      n -= k;
    }
    return absl::OkStatus();
  }
  // Flushes, starts the file's writeback without waiting for it (sync_file_range WRITE: the caller makes the file
  // durable later with SyncFile(), by then mostly written, so the wait overlaps other work), closes (reporting close
  // errors) and counts the completed file.
  absl::Status Finish(IoStats& stats) {
    if (s3_active_) {
      s3_active_ = false;
      return s3_->Finish(stats);
    }
    if (absl::Status s = Flush(stats); !s.ok()) return s;
    // Best effort: a filesystem without it (EINVAL, ENOSYS) just writes back later; SyncFile() still waits.
    ::sync_file_range(fd_.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
    if (fd_.Close() != 0) return ErrnoError(path_, "close after write", errno);
    stats.AddFile();
    return absl::OkStatus();
  }
  uint64_t bytes_written() const { return s3_active_ ? s3_->bytes_written() : off_ + used_; }

 private:
  absl::Status Flush(IoStats& stats) {
    if (used_ == 0) return absl::OkStatus();
    absl::Status s = Write(buf_.data(), used_, stats);
    used_ = 0;
    return s;
  }
  absl::Status Write(const uint8_t* p, size_t n, IoStats& stats) {
    while (n > 0) {
      uint64_t t0 = NowNs();
      ssize_t w = ::pwrite(fd_.get(), p, n, static_cast<off_t>(off_));
      uint64_t t1 = NowNs();
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(path_, "write", errno);
      }
      stats.AddOp(static_cast<uint64_t>(w), t1 - t0);
      p += w;
      n -= static_cast<size_t>(w);
      off_ += static_cast<uint64_t>(w);
    }
    return absl::OkStatus();
  }

  std::string path_;
  Fd fd_;
  uint64_t off_ = 0;  // file offset of buf_[0]
  size_t used_ = 0;
  AlignedBuffer buf_;
  std::unique_ptr<S3ObjectWriter> s3_;  // made at the first object
  bool s3_active_ = false;
};

// xoshiro256** (Blackman & Vigna), state seeded by splitmix64 so that any seed, 0 included, gives a good state.
using Rng = ::dlio::Xoshiro256;  // base/random.h: the generated bytes of every format

// Sums one byte per 4 KiB page of [p, p+n) (and the last byte) into a volatile sink, so the compiler cannot drop
// the loads. For mapped memory, where these page faults are the reads (mmap_indexed_binary); a buffer a read()
// filled needs no touch. Costs n/4096 loads.
inline void TouchPages(const uint8_t* p, size_t n) {
  static thread_local volatile uint64_t sink;  // per thread: loader threads must not race on one variable
  if (n == 0) return;
  uint64_t acc = 0;
  for (size_t i = 0; i < n; i += 4096) acc += p[i];
  acc += p[n - 1];
  sink = sink + acc;
}

}  // namespace dlio::internal
