#include "storage/storage.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "storage/io_util.h"

namespace dlio {
namespace {

using internal::ErrnoError;
using internal::NowNs;

// A request is complete when it got all it asked for or reached the end of the file (size from Open()).
bool Complete(const ReadRequest& r, uint64_t file_size) { return r.got == r.len || r.off + r.got >= file_size; }

absl::Status Misaligned(const std::string& path, const ReadRequest& r) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": O_DIRECT read of ", r.len, " bytes at offset ", r.off,
                                                 " into a buffer not aligned to ", kDirectAlign,
                                                 " bytes (dlio_ext.io_engine: odirect needs aligned reads)"));
}

// posix and odirect: one pread per request (more only for a short read before the end of the file).
class PreadReader final : public StorageReader {
 public:
  explicit PreadReader(IoEngine e) : StorageReader(e) {}

 protected:
  absl::Status DoRead(ReadRequest* reqs, size_t n, IoStats& stats) override {
    const bool direct = engine() == IoEngine::kODirect;
    for (size_t i = 0; i < n; ++i) {
      ReadRequest& r = reqs[i];
      r.got = 0;
      if (direct && ((reinterpret_cast<uintptr_t>(r.buf) | r.off | r.len) % kDirectAlign) != 0) {
        return Misaligned(path_, r);
      }
      while (!Complete(r, size_)) {
        const uint64_t t0 = NowNs();
        const ssize_t got = ::pread(fd_, r.buf + r.got, r.len - r.got, static_cast<off_t>(r.off + r.got));
        const uint64_t t1 = NowNs();
        if (got < 0) {
          if (errno == EINTR) continue;
          return ErrnoError(path_, "read", errno);
        }
        if (got == 0) break;  // the file shrank under us; the caller sees got < len
        stats.AddOp(static_cast<uint64_t>(got), t1 - t0);
        r.got += static_cast<size_t>(got);
        // O_DIRECT continues a short read at an unaligned offset only if the kernel gave an unaligned count,
        // which it does only at the end of the file (Complete() stops there).
      }
    }
    return absl::OkStatus();
  }
};

// mmap: the open file is mapped (read-only, shared) at its first read and each request is copied out of the mapping,
// so the page faults do the I/O, as fio's mmap engine does; the mapping goes when the file is closed. One op per
// request, its latency the copy (faults included).
class MmapReader final : public StorageReader {
 public:
  MmapReader() : StorageReader(IoEngine::kMmap) {}
  ~MmapReader() override { OnClose(); }

 protected:
  absl::Status DoRead(ReadRequest* reqs, size_t n, IoStats& stats) override {
    if (map_ == nullptr && size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
      if (p == MAP_FAILED) return ErrnoError(path_, "mmap", errno);
      map_ = static_cast<const uint8_t*>(p);
      map_len_ = size_;
    }
    for (size_t i = 0; i < n; ++i) {
      ReadRequest& r = reqs[i];
      r.got = r.off >= map_len_ ? 0 : static_cast<size_t>(std::min<uint64_t>(r.len, map_len_ - r.off));
      if (r.got == 0) continue;
      const uint64_t t0 = NowNs();
      std::memcpy(r.buf, map_ + r.off, r.got);
      stats.AddOp(r.got, NowNs() - t0);
    }
    return absl::OkStatus();
  }
  void OnClose() override {
    if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), map_len_);
    map_ = nullptr;
    map_len_ = 0;
  }

 private:
  const uint8_t* map_ = nullptr;
  uint64_t map_len_ = 0;
};

// io_uring: up to kUringDepth reads in flight; one io_uring_enter submits new reads and waits for a completion.
class UringReader final : public StorageReader {
 public:
  UringReader() : StorageReader(IoEngine::kIoUring) {}
  ~UringReader() override {
    if (ready_) io_uring_queue_exit(&ring_);
  }
  absl::Status Init() {
    const int rc = io_uring_queue_init(kUringDepth, &ring_, 0);
    if (rc < 0) {
      return absl::FailedPreconditionError(absl::StrCat("dlio_ext.io_engine: io_uring set-up failed: ",
                                                        std::strerror(-rc),
                                                        " (io_uring disabled or RLIMIT_MEMLOCK too low?)"));
    }
    ready_ = true;
    return absl::OkStatus();
  }

 protected:
  absl::Status DoRead(ReadRequest* reqs, size_t n, IoStats& stats) override {
    if (!ready_) return absl::FailedPreconditionError(absl::StrCat(path_, ": io_uring reader failed earlier"));
    struct Slot {
      size_t req;
      uint64_t t0;
    };
    Slot slots[kUringDepth];
    unsigned free_slots[kUringDepth];
    unsigned n_free = kUringDepth;
    for (unsigned s = 0; s < kUringDepth; ++s) free_slots[s] = kUringDepth - 1 - s;
    absl::Status error;
    size_t next = 0;
    unsigned inflight = 0;

    auto issue = [&](unsigned slot) {
      ReadRequest& r = reqs[slots[slot].req];
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // never null: at most kUringDepth in flight
      // One SQE reads at most 1 GiB (its length is 32-bit); a longer request continues as a short read would.
      const size_t len = std::min<size_t>(r.len - r.got, size_t{1} << 30);
      io_uring_prep_read(sqe, fd_, r.buf + r.got, static_cast<unsigned>(len), r.off + r.got);
      io_uring_sqe_set_data64(sqe, slot);
      slots[slot].t0 = NowNs();
    };

    for (;;) {
      while (error.ok() && n_free > 0 && next < n) {
        ReadRequest& r = reqs[next];
        r.got = 0;
        if (Complete(r, size_)) {  // nothing to read (zero length or at the end of the file)
          ++next;
          continue;
        }
        const unsigned slot = free_slots[--n_free];
        slots[slot].req = next++;
        issue(slot);
        ++inflight;
      }
      if (inflight == 0) break;
      const int rc = io_uring_submit_and_wait(&ring_, 1);
      if (rc < 0 && rc != -EINTR) {
        // The ring is in an unknown state (prepared reads may be left in it): tear it down so that nothing stale
        // is ever submitted into a buffer we no longer own; this reader fails from now on.
        io_uring_queue_exit(&ring_);
        ready_ = false;
        return ErrnoError(path_, "io_uring submit", -rc);
      }
      unsigned head, seen = 0;
      io_uring_cqe* cqe;
      const uint64_t t1 = NowNs();
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        const unsigned slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
        ReadRequest& r = reqs[slots[slot].req];
        const int res = cqe->res;
        bool again = false;
        if (res == -EINTR || res == -EAGAIN) {
          again = true;
        } else if (res < 0) {
          if (error.ok()) error = ErrnoError(path_, "read", -res);
        } else if (res > 0) {
          stats.AddOp(static_cast<uint64_t>(res), t1 - slots[slot].t0);
          r.got += static_cast<size_t>(res);
          again = error.ok() && !Complete(r, size_);
        }
        if (again && error.ok()) {
          issue(slot);  // the rest of a short read, in the same slot
        } else {
          free_slots[n_free++] = slot;
          --inflight;
        }
      }
      io_uring_cq_advance(&ring_, seen);
    }
    return error;
  }

 private:
  io_uring ring_{};
  bool ready_ = false;
};

std::atomic<uint64_t> g_iolog_seq{0};

}  // namespace

absl::StatusOr<IoEngine> ParseIoEngine(std::string_view name) {
  if (name == "posix") return IoEngine::kPosix;
  if (name == "odirect") return IoEngine::kODirect;
  if (name == "io_uring") return IoEngine::kIoUring;
  if (name == "mmap") return IoEngine::kMmap;
  return absl::InvalidArgumentError(absl::StrCat("dlio_ext.io_engine: unknown engine '", std::string(name),
                                                 "' (allowed: posix, odirect, io_uring, mmap)"));
}

const char* IoEngineName(IoEngine e) {
  switch (e) {
    case IoEngine::kS3: return "s3";
    case IoEngine::kPosix: return "posix";
    case IoEngine::kODirect: return "odirect";
    case IoEngine::kIoUring: return "io_uring";
    case IoEngine::kMmap: return "mmap";
  }
  return "posix";
}

namespace {

// Recently freed AlignedBuffer memory (see storage.h). A handful of entries: linear search is fine.
class BufferPool {
 public:
  static BufferPool& Get() {
    static BufferPool* pool = new BufferPool;  // never destroyed: buffers may be freed during static destruction
    return *pool;
  }
  BufferPool() {
    if (const char* env = std::getenv("DLIO_BUFFER_POOL_BYTES"); env != nullptr && *env != '\0') {
      budget_ = std::strtoull(env, nullptr, 10);
    }
  }
  // The smallest pooled buffer of at least `n` bytes, or nullptr.
  uint8_t* Take(size_t n, size_t* cap) {
    MutexLock lk(&mu_);
    size_t best = kMaxEntries;
    for (size_t i = 0; i < count_; ++i) {
      if (entries_[i].cap >= n && (best == kMaxEntries || entries_[i].cap < entries_[best].cap)) best = i;
    }
    if (best == kMaxEntries) return nullptr;
    uint8_t* p = entries_[best].data;
    *cap = entries_[best].cap;
    bytes_ -= *cap;
    entries_[best] = entries_[--count_];
    return p;
  }
  // Keeps the buffer if it fits in the pool's budget, else frees it.
  void Give(uint8_t* p, size_t cap) {
    if (p == nullptr) return;
    {
      MutexLock lk(&mu_);
      if (count_ < kMaxEntries && bytes_ + cap <= budget_) {
        entries_[count_++] = {p, cap};
        bytes_ += cap;
        return;
      }
    }
    std::free(p);
  }
  void Trim() {
    MutexLock lk(&mu_);
    for (size_t i = 0; i < count_; ++i) std::free(entries_[i].data);
    count_ = 0;
    bytes_ = 0;
  }
  size_t bytes() {
    MutexLock lk(&mu_);
    return bytes_;
  }

 private:
  // Enough for the buffers of a few ranks' loader threads; a fixed array, so the pool itself never allocates.
  static constexpr size_t kMaxEntries = 64;
  struct Entry {
    uint8_t* data;
    size_t cap;
  };
  size_t budget_ = kBufferPoolBytes;  // set once, before any other use
  Mutex mu_;
  Entry entries_[kMaxEntries] ABSL_GUARDED_BY(mu_);
  size_t count_ ABSL_GUARDED_BY(mu_) = 0;
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

void TrimBufferPool() { BufferPool::Get().Trim(); }
size_t BufferPoolBytes() { return BufferPool::Get().bytes(); }

AlignedBuffer::~AlignedBuffer() { BufferPool::Get().Give(data_, cap_); }

void AlignedBuffer::Reserve(size_t n, size_t keep) {
  if (n <= cap_) return;
  size_t cap = RoundUp(n, kDirectAlign);
  auto* p = BufferPool::Get().Take(cap, &cap);
  if (p == nullptr) p = static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, cap));
  if (p == nullptr) throw std::bad_alloc();
  if (keep > 0) std::memcpy(p, data_, std::min(keep, cap_));
  BufferPool::Get().Give(data_, cap_);
  data_ = p;
  cap_ = cap;
}

absl::StatusOr<std::unique_ptr<StorageReader>> StorageReader::New(IoEngine engine,
                                                                  std::shared_ptr<const ConfinedDir> dir) {
  if (engine == IoEngine::kS3) {
    return absl::FailedPreconditionError("storage: the s3 engine needs a bucket configuration");
  }
  std::unique_ptr<StorageReader> r;
  if (engine == IoEngine::kIoUring) {
    auto u = std::make_unique<UringReader>();
    if (absl::Status s = u->Init(); !s.ok()) return s;
    r = std::move(u);
  } else if (engine == IoEngine::kMmap) {
    r = std::make_unique<MmapReader>();
  } else {
    r = std::make_unique<PreadReader>(engine);
  }
  r->dir_ = std::move(dir);
  if (const char* log_dir = std::getenv("DLIO_IOLOG_DIR"); log_dir != nullptr && *log_dir != '\0') {
    const std::string name = absl::StrCat(log_dir, "/iolog.", ::getpid(), ".", g_iolog_seq.fetch_add(1));
    r->iolog_ = std::fopen(name.c_str(), "w");
    if (r->iolog_ == nullptr) return ErrnoError(name, "create (DLIO_IOLOG_DIR)", errno);
    std::fputs("fio version 2 iolog\n", r->iolog_);
  }
  return r;
}

StorageReader::~StorageReader() {
  Close();
  if (iolog_ != nullptr) std::fclose(iolog_);
}

absl::Status StorageReader::Open(const std::string& path, uint64_t* size, IoStats& stats) {
  Close();
  const int flags = O_RDONLY | O_CLOEXEC | (engine_ == IoEngine::kODirect ? O_DIRECT : 0);
  fd_ = dir_ ? dir_->Open(path, flags) : ::open(path.c_str(), flags);
  if (fd_ < 0) {
    if (errno == EINVAL && engine_ == IoEngine::kODirect) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": the filesystem does not support O_DIRECT (dlio_ext.io_engine: odirect / reader.odirect)"));
    }
    return ErrnoError(path, "open", errno);
  }
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    Close();
    return ErrnoError(path, "stat", err);
  }
  stats.AddFile();
  path_ = path;
  open_ = true;
  size_ = static_cast<uint64_t>(st.st_size);
  *size = size_;
  if (iolog_ != nullptr) {
    if (logged_paths_.insert(path).second) Log("add");
    Log("open");
  }
  return absl::OkStatus();
}

void StorageReader::Close() {
  open_ = false;
  if (fd_ < 0) return;
  OnClose();
  ::close(fd_);
  fd_ = -1;
  if (iolog_ != nullptr) Log("close");
}

absl::Status StorageReader::Read(ReadRequest* reqs, size_t n, IoStats& stats) {
  if (!open_) return absl::FailedPreconditionError("storage reader: Read() without a successful Open()");
  if (iolog_ != nullptr) {
    for (size_t i = 0; i < n; ++i) Log("read", reqs[i].off, reqs[i].len);
  }
  return DoRead(reqs, n, stats);
}

absl::Status StorageReader::ReadWhole(uint8_t* buf, uint64_t size, size_t piece, IoStats& stats) {
  // Requests go to the engine in groups (a stack array, no allocation); io_uring keeps kUringDepth of a group in
  // flight, so a group is several times the depth to keep the pipeline full across most of a large file.
  constexpr size_t kGroup = 4 * kUringDepth;
  const size_t align = alignment();
  for (uint64_t off = 0; off < size;) {
    ReadRequest reqs[kGroup];
    size_t k = 0;
    uint64_t end = off;
    for (; k < kGroup && end < size; ++k) {
      const uint64_t len = std::min<uint64_t>(piece, RoundUp(size - end, align));
      reqs[k].buf = buf + end;
      reqs[k].off = end;
      reqs[k].len = static_cast<size_t>(len);
      end += len;
    }
    if (absl::Status s = Read(reqs, k, stats); !s.ok()) return s;
    for (size_t i = 0; i < k; ++i) {
      const uint64_t want = std::min<uint64_t>(reqs[i].len, size - reqs[i].off);
      if (reqs[i].got < want) {
        return absl::DataLossError(absl::StrCat(path_, ": file ended at byte ", reqs[i].off + reqs[i].got, " of ",
                                                size, " while reading it"));
      }
    }
    off = std::min<uint64_t>(end, size);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> StorageReader::ReadFile(const std::string& path, AlignedBuffer& buf, size_t piece,
                                                 IoStats& stats) {
  uint64_t size = 0;
  if (absl::Status s = Open(path, &size, stats); !s.ok()) return s;
  buf.Reserve(std::max<uint64_t>(1, RoundUp(size, alignment())));
  absl::Status read = ReadWhole(buf.data(), size, piece, stats);
  Close();
  if (!read.ok()) return read;
  return size;
}

void StorageReader::Log(const char* what, uint64_t off, uint64_t len) {
  if (std::strcmp(what, "read") == 0) {
    std::fprintf(iolog_, "%s read %llu %llu\n", path_.c_str(), static_cast<unsigned long long>(off),
                 static_cast<unsigned long long>(len));
  } else {
    std::fprintf(iolog_, "%s %s\n", path_.c_str(), what);
  }
}

}  // namespace dlio
