// io_util: internal helpers shared by the format implementations (not part of dlio::formats' public API).
//
//  - Fd: an owning file descriptor.
//  - PreadAccounted / ReadWholeFile / FileSink: the only places our own code touches a data file; every syscall
//    is timed with the steady clock and recorded as one IoStats::AddOp(bytes, ns).
//  - FileWriter: writes a file, or an object, through a WriteSink (write_sink.h) that storage/open.h makes: this
//    header knows files only, nothing of S3.
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
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/confined_dir.h"
#include "results/io_stats.h"
#include "base/random.h"
#include "storage/storage.h"
#include "storage/write_sink.h"

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

// FileSink: the WriteSink of a file. Open() creates (truncates) it; below `dir` (when given) the file is always a new
// one: an existing name (a stale temporary, or a hard link planted there) is removed first, so no existing inode is
// ever written through. Append() writes with pwrite(), each one accounted as one op. Finish() starts the file's
// writeback without waiting for it (sync_file_range WRITE: the caller makes the file durable later with SyncFile(),
// by then mostly written, so the wait overlaps other work), closes (reporting close errors) and counts the file.
class FileSink final : public WriteSink {
 public:
  explicit FileSink(std::shared_ptr<const ConfinedDir> dir = nullptr) : dir_(std::move(dir)) {}
  absl::Status Open(const std::string& path) override;
  absl::Status Append(const void* data, size_t n, IoStats& stats) override;
  absl::Status Finish(IoStats& stats) override;

 private:
  std::shared_ptr<const ConfinedDir> dir_;
  std::string path_;
  Fd fd_;
  uint64_t off_ = 0;  // bytes written since Open()
};

// FileWriter: writes one file or object at a time through its sink (write_sink.h; NewWriteSink() in storage/open.h
// makes the one a StorageTarget needs: a FileSink, or for s3 an S3ObjectWriter, one PUT or a multipart upload above
// kS3MultipartThreshold, no temporary name needed since an object appears whole). Small appends are gathered in a
// kWriteChunk buffer and handed to the sink a chunk at a time; an append of >= kWriteChunk with an empty buffer, and
// AppendDirect(), go to the sink straight from the caller's memory, in kWriteChunk pieces. Finish() hands over what
// is left and finishes the sink (a file: writeback started, closed, counted; an object: uploaded, counted). A sink
// that gathers appends itself (WriteSink::Gathers(): S3's part buffer) gets every append as it comes, uncopied.
class FileWriter {
 public:
  explicit FileWriter(std::unique_ptr<WriteSink> sink) : sink_(std::move(sink)), pass_through_(sink_->Gathers()) {}
  absl::Status Open(const std::string& path) {
    handed_ = 0;
    used_ = 0;
    return sink_->Open(path);
  }
  absl::Status Append(const void* data, size_t n, IoStats& stats) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    if (pass_through_) return Write(p, n, stats);  // the sink gathers (S3 parts): no staging copy
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
  absl::Status Finish(IoStats& stats) {
    if (absl::Status s = Flush(stats); !s.ok()) return s;
    return sink_->Finish(stats);
  }
  // Bytes appended since Open() (handed to the sink or still gathered).
  uint64_t bytes_written() const { return handed_ + used_; }

 private:
  absl::Status Flush(IoStats& stats) {
    if (used_ == 0) return absl::OkStatus();
    absl::Status s = Write(buf_.data(), used_, stats);
    used_ = 0;
    return s;
  }
  // One chunk to the sink: the only virtual call of the write path.
  absl::Status Write(const uint8_t* p, size_t n, IoStats& stats) {
    absl::Status s = sink_->Append(p, n, stats);
    if (s.ok()) handed_ += n;
    return s;
  }

  std::unique_ptr<WriteSink> sink_;
  const bool pass_through_;  // sink_->Gathers(): appends go to it as they come
  uint64_t handed_ = 0;  // bytes handed to the sink since Open()
  size_t used_ = 0;      // bytes gathered in buf_
  AlignedBuffer buf_;
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
