// Storage engines: how the format readers read data files. posix (pread, the default), odirect (O_DIRECT with
// aligned buffers, offsets and lengths, as DLIO's NPZReaderODIRECT), io_uring (liburing, several reads in flight),
// mmap (the file mapped, requests copied out of the mapping: page faults do the I/O, as fio's mmap engine) and s3
// (objects of a bucket: a path is an object key; Open() is a HEAD, each read request a ranged GET, ReadFile() one
// whole-object GET). This file holds the interface and the file engines only; the s3 engine lives in storage/s3/
// (engine.h), and NewStorageReader() of storage/open.h is the one factory that makes any engine from a StorageTarget.
//
// Contract:
//  - A StorageReader belongs to one loader thread and reads one open file at a time. Open() counts the file
//    (IoStats::AddFile); every read request that reaches the kernel is one IoStats::AddOp(bytes returned, latency
//    from issue to completion). The format readers do no other I/O accounting for these files.
//  - Read(): a request is complete when it got `len` bytes or reached the end of the file (got < len only at EOF);
//    a short read in the middle of a file is re-issued for the rest (and counted as its own op). posix and odirect
//    issue the requests one after another; io_uring keeps up to kUringDepth of them in flight.
//  - odirect: buffer addresses, file offsets and request lengths must be multiples of alignment() (kDirectAlign);
//    a whole-file read is rounded up to it, as DLIO's O_DIRECT readers do (the kernel returns only the file's bytes).
//    A filesystem without O_DIRECT support (tmpfs) fails Open() with an error naming dlio_ext.io_engine.
//  - No heap allocation per request or per file once warm: the io_uring ring and per-request slots are set up in
//    New(); buffers belong to the caller (AlignedBuffer grows only).
//  - ReadFile(): opens, reads all of it and closes in one call: the whole-file formats use it, so that s3 does it in
//    one GET (the size comes with the answer, no HEAD first), as DLIO's S3 readers do.
//  - Recording: when the environment variable DLIO_IOLOG_DIR names a folder, every StorageReader also writes the
//    reads it issues as a fio "version 2" iolog (<dir>/iolog.<pid>.<n>, one per reader, i.e. per loader thread and
//    epoch), so bench/ can replay the agent's own I/O with fio. Off (no cost beyond one branch per call) otherwise.
// Thread-safety: none; one reader per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/confined_dir.h"
#include "results/io_stats.h"

namespace dlio {

enum class IoEngine { kPosix, kODirect, kIoUring, kMmap, kS3 };

struct S3Config;

// Where data lives and how it is read: a file engine, or s3 with the bucket's configuration (s3 set iff kS3;
// S3Config is storage/s3/client.h's, only named here). storage/open.h makes readers and write sinks from it.
// `dir`: for files, every Open() resolves its path below it (base/confined_dir.h); null = plain open(2).
struct StorageTarget {
  IoEngine engine = IoEngine::kPosix;
  std::shared_ptr<const S3Config> s3;
  std::shared_ptr<const ConfinedDir> dir;
};

// "posix" | "odirect" | "io_uring" | "mmap" (s3 comes from storage.storage_type, not from this name); anything else
// is InvalidArgument naming the allowed values.
absl::StatusOr<IoEngine> ParseIoEngine(std::string_view name);
const char* IoEngineName(IoEngine e);

// O_DIRECT alignment of buffer addresses, offsets and lengths: the logical block size is 512 or 4096 on the
// filesystems we meet; 4096 satisfies both (an unaligned O_DIRECT pread fails with EINVAL).
inline constexpr size_t kDirectAlign = 4096;
// io_uring: reads kept in flight per reader. 8 x 1 MiB reached ~970 MiB/s on this machine's virtio disk with
// O_DIRECT (../shared/reference/ecosystem.md §7), where fewer left the device idle between completions.
inline constexpr unsigned kUringDepth = 8;
// io_uring whole-file reads are cut into pieces of this size so that kUringDepth of them are in flight for one
// file (an 8 MiB unet3d-like sample is 8 reads at once).
inline constexpr size_t kUringPiece = size_t{1} << 20;

inline uint64_t RoundUp(uint64_t n, uint64_t align) { return (n + align - 1) / align * align; }

// Bytes the buffer pool may keep while no buffer uses them: room for the read buffers of a few loader threads with
// DLIO's largest samples (unet3d: ~140 MB each). Beyond it freed buffers go back to the allocator. The environment
// variable DLIO_BUFFER_POOL_BYTES, read once, replaces it (0 switches the pool off).
inline constexpr size_t kBufferPoolBytes = size_t{1} << 30;
// Frees every pooled buffer (the agent calls it when a job ends, so an idle agent keeps no read buffers).
void TrimBufferPool();
// Bytes currently held by the pool (for tests).
size_t BufferPoolBytes();

// A heap buffer whose start is kDirectAlign-aligned, for every engine. Grows only.
// Memory comes from, and goes back to, a process-wide pool of recently freed buffers (at most kBufferPoolBytes in
// all): the readers of a Loader live for one epoch, and the next epoch's readers then get buffers whose pages are
// already mapped instead of faulting in (and the kernel zeroing) a whole file's worth per loader thread again; in
// the unet3d-like bench case that was ~9 % of the agent's CPU. The pool takes its lock only when a buffer is
// created, grows or is destroyed, never per read.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();
  uint8_t* data() const { return data_; }
  size_t capacity() const { return cap_; }
  // Ensures capacity() >= n (rounded up to kDirectAlign), keeping the first `keep` bytes.
  void Reserve(size_t n, size_t keep = 0);
  // Exchanges the two buffers' memory (no copy, no allocation): the s3 read-ahead hands a finished GET's buffer to
  // the reader this way (storage/s3/read_ahead.h).
  void Swap(AlignedBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(cap_, o.cap_);
  }

 private:
  uint8_t* data_ = nullptr;
  size_t cap_ = 0;
};

struct ReadRequest {
  uint8_t* buf = nullptr;
  size_t len = 0;
  uint64_t off = 0;
  size_t got = 0;  // filled by Read()
};

class StorageReader {
 public:
  // A file engine (kS3 is FailedPrecondition: an object store needs its bucket, see NewStorageReader() in
  // storage/open.h). Errors: io_uring set-up failures (io_uring disabled, RLIMIT_MEMLOCK) name dlio_ext.io_engine.
  static absl::StatusOr<std::unique_ptr<StorageReader>> New(IoEngine engine,
                                                            std::shared_ptr<const ConfinedDir> dir = nullptr);
  virtual ~StorageReader();

  IoEngine engine() const { return engine_; }
  // Alignment every buffer address, offset and length given to Read() must have (1 = none).
  size_t alignment() const { return engine_ == IoEngine::kODirect ? kDirectAlign : 1; }

  // Opens `path` read-only (closing the previous file) and returns its size; counts one file.
  virtual absl::Status Open(const std::string& path, uint64_t* size, IoStats& stats);
  virtual void Close();
  const std::string& path() const { return path_; }

  // Issues the n requests against the open file (see the contract above).
  absl::Status Read(ReadRequest* reqs, size_t n, IoStats& stats);
  // Reads the whole open file of `size` bytes into buf (capacity >= RoundUp(size, alignment())) in pieces of at
  // most `piece` bytes (a multiple of alignment()). Error if the file is shorter than `size`.
  absl::Status ReadWhole(uint8_t* buf, uint64_t size, size_t piece, IoStats& stats);
  // Open + read all of `path` into buf (grown to RoundUp(size, alignment()), never shrunk) + Close; returns its
  // size. s3: one GET.
  virtual absl::StatusOr<uint64_t> ReadFile(const std::string& path, AlignedBuffer& buf, size_t piece, IoStats& stats);

 protected:
  explicit StorageReader(IoEngine e) : engine_(e) {}
  // Completes the requests; implementations account every kernel read as one op.
  virtual absl::Status DoRead(ReadRequest* reqs, size_t n, IoStats& stats) = 0;
  // Called by Close() before the descriptor goes (mmap: unmaps the file).
  virtual void OnClose() {}
  int fd_ = -1;
  bool open_ = false;  // a successful Open() not yet closed
  uint64_t size_ = 0;  // of the open file, from fstat at Open()
  std::string path_;
  std::shared_ptr<const ConfinedDir> dir_;

 private:
  void Log(const char* what, uint64_t off = 0, uint64_t len = 0);
  const IoEngine engine_;
  std::FILE* iolog_ = nullptr;  // DLIO_IOLOG_DIR recording; nullptr when off
  std::unordered_set<std::string> logged_paths_;  // paths already "add"ed to the iolog
};

}  // namespace dlio
