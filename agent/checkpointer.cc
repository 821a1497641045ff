#include "agent/checkpointer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/preflight.h"
#include "base/random.h"
#include "storage/s3/engine.h"

namespace dlio {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  const int err = errno;
  if (err == ELOOP || err == EXDEV) {
    return absl::PermissionDeniedError(absl::StrCat("checkpoint: ", what, " ", path, ": refused: ",
                                                    err == ELOOP ? "a symbolic link on the way (the agent follows "
                                                                   "none below its data root)"
                                                                 : "outside the checkpoint folder"));
  }
  return absl::InternalError(absl::StrCat("checkpoint: ", what, " ", path, ": ", std::strerror(err)));
}

bool SingleComponent(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

absl::Status CheckNames(const std::string& dir_name, const std::vector<CheckpointFile>& files) {
  if (!SingleComponent(dir_name)) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint: bad directory name '", dir_name, "'"));
  }
  for (const CheckpointFile& f : files) {
    if (!SingleComponent(f.name)) return absl::InvalidArgumentError(absl::StrCat("checkpoint: bad file name '", f.name, "'"));
    if (f.bytes < 0) return absl::InvalidArgumentError(absl::StrCat("checkpoint: negative size for ", f.name));
  }
  return absl::OkStatus();
}

absl::Status FsyncPath(const ConfinedDir& dir, const std::string& path, int flags) {
  const int fd = dir.Open(path, flags);
  if (fd < 0) return Errno("open", path);
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) return Errno("fsync", path);
  return absl::OkStatus();
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Checkpointer::Checkpointer(std::shared_ptr<const ConfinedDir> folder, bool fsync, uint64_t seed, size_t buffer_bytes,
                           std::shared_ptr<const S3Config> s3, std::string s3_prefix)
    : folder_(std::move(folder)),
      fsync_(fsync),
      seed_(seed),
      // s3 parts (the buffer) are at least S3's minimum part size.
      max_buffer_(std::max<size_t>(buffer_bytes, s3 ? kS3MinPartBytes : 4096)),
      s3_(std::move(s3)),
      s3_prefix_(std::move(s3_prefix)) {}

Checkpointer::~Checkpointer() = default;

absl::StatusOr<CheckpointIo> Checkpointer::SaveObjects(const std::string& dir_name,
                                                       const std::vector<CheckpointFile>& files) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!writer_) writer_ = std::make_unique<S3ObjectWriter>(s3_);
  EnsureBuffer(files);
  IoStats stats;  // the bytes are counted by the caller; requests by the client's S3 metrics
  CheckpointIo io;
  for (const CheckpointFile& f : files) {
    const std::string key = S3Join(s3_prefix_, dir_name + "/" + f.name);
    if (Cancelled()) return absl::CancelledError(absl::StrCat("checkpoint: save of s3 object '", key, "' cancelled"));
    absl::Status s = writer_->Open(key);  // never fails for an object; on error, neither branch sends anything
    if (s.ok() && static_cast<uint64_t>(f.bytes) <= buffer_.size()) {  // one PUT straight from the buffer
      s = writer_->client().Put(key, reinterpret_cast<const uint8_t*>(buffer_.data()), static_cast<size_t>(f.bytes));
      if (s.ok() && limiter_ != nullptr) limiter_->Acquire(static_cast<uint64_t>(f.bytes), cancel_);
    } else {  // multipart: every part is the buffer itself
      for (int64_t left = f.bytes; s.ok() && left > 0;) {
        const size_t part = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buffer_.size())));
        s = Cancelled() ? absl::CancelledError(absl::StrCat("save of s3 object '", key, "' cancelled"))
                        : writer_->AppendPart(buffer_.data(), part, stats);
        if (s.ok() && limiter_ != nullptr) limiter_->Acquire(part, cancel_);
        left -= static_cast<int64_t>(part);
      }
      if (s.ok()) s = writer_->Finish(stats);
    }
    if (!s.ok()) {
      writer_->Abort();
      return absl::Status(s.code(), absl::StrCat("checkpoint: ", s.message()));
    }
    io.files += 1;
    io.bytes += f.bytes;
  }
  io.seconds = Since(t0);
  return io;
}

absl::StatusOr<CheckpointIo> Checkpointer::LoadObjects(const std::string& dir_name,
                                                       const std::vector<CheckpointFile>& files) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!reader_) reader_ = std::make_unique<S3Client>(s3_);
  EnsureBuffer(files);
  CheckpointIo io;
  for (const CheckpointFile& f : files) {
    const std::string key = S3Join(s3_prefix_, dir_name + "/" + f.name);
    absl::StatusOr<uint64_t> size = reader_->Head(key);
    if (!size.ok()) return absl::Status(size.status().code(), absl::StrCat("checkpoint: ", size.status().message()));
    if (*size != static_cast<uint64_t>(f.bytes)) {
      return absl::DataLossError(absl::StrCat("checkpoint: s3 object '", key, "' in ", s3_->Describe(), " has ",
                                              *size, " bytes, the plan says ", f.bytes));
    }
    for (uint64_t off = 0; off < *size;) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(*size - off, buffer_.size()));
      absl::StatusOr<size_t> got =
          reader_->GetRange(key, off, len, reinterpret_cast<uint8_t*>(buffer_.data()));
      if (!got.ok()) return absl::Status(got.status().code(), absl::StrCat("checkpoint: ", got.status().message()));
      if (*got == 0) {
        return absl::DataLossError(absl::StrCat("checkpoint: s3 object '", key, "' ended at byte ", off));
      }
      if (limiter_ != nullptr) limiter_->Acquire(*got, cancel_);
      if (Cancelled()) {
        return absl::CancelledError(absl::StrCat("checkpoint: load of s3 object '", key, "' cancelled"));
      }
      off += *got;
    }
    io.files += 1;
    io.bytes += f.bytes;
  }
  io.seconds = Since(t0);
  return io;
}

void Checkpointer::EnsureBuffer(const std::vector<CheckpointFile>& files) {
  int64_t largest = 0;
  for (const CheckpointFile& f : files) largest = std::max(largest, f.bytes);
  const size_t want = std::min(max_buffer_, static_cast<size_t>(std::max<int64_t>(largest, 1)));
  if (buffer_.size() >= want) return;
  const size_t old = buffer_.size();
  buffer_.resize(want);
  if (!randomize_) {
    std::memset(buffer_.data() + old, 1, want - old);
    return;
  }
  Xoshiro256 rng(seed_ + old);
  for (size_t i = old; i < want; i += 8) {
    const uint64_t v = rng.Next();
    std::memcpy(buffer_.data() + i, &v, std::min<size_t>(8, want - i));
  }
}

absl::Status Checkpointer::CheckFits(const std::string& dir, const std::vector<CheckpointFile>& files) const {
  uint64_t need = 0, existing = 0, largest = 0;
  absl::StatusOr<std::vector<ConfinedDir::Entry>> there = folder_->List(dir, /*sizes=*/true);
  for (const CheckpointFile& f : files) {
    need += static_cast<uint64_t>(f.bytes);
    if (!there.ok()) continue;  // a new directory: nothing to replace
    for (const ConfinedDir::Entry& e : *there) {
      if (e.type == ConfinedDir::Entry::Type::kFile && e.name == f.name) {
        existing += e.size;
        largest = std::max(largest, e.size);
      }
    }
  }
  if (need == 0) return absl::OkStatus();
  absl::Status s = CheckSpace(dir, "checkpoint.checkpoint_folder", need, existing - largest,
                              absl::StrCat("the save of ", files.size(), " file(s)"));
  // Only a save known not to fit is refused: a file system that cannot tell its free space (statvfs failing on some
  // FUSE or network mounts) is written to as before this check existed.
  return s.code() == absl::StatusCode::kResourceExhausted ? s : absl::OkStatus();
}

absl::Status Checkpointer::WriteTemporary(const std::string& tmp, int64_t bytes) {
  folder_->Unlink(tmp);  // a new file, never an existing inode (a stale temporary, a planted hard link)
  const int fd = folder_->Open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return Errno("open", tmp);
  absl::Status s;
  for (int64_t left = bytes; left > 0 && s.ok();) {
    if (Cancelled()) {
      s = absl::CancelledError(absl::StrCat("checkpoint: save of ", tmp, " cancelled"));
      break;
    }
    const size_t chunk = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buffer_.size())));
    const ssize_t n = ::write(fd, buffer_.data(), chunk);
    if (n < 0) {
      if (errno != EINTR) s = Errno("write", tmp);
      continue;
    }
    left -= n;
    if (limiter_ != nullptr) limiter_->Acquire(static_cast<uint64_t>(n), cancel_);
  }
  if (s.ok() && fsync_ && ::fsync(fd) != 0) s = Errno("fsync", tmp);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return Errno("close", tmp);
  return absl::OkStatus();
}

absl::StatusOr<CheckpointIo> Checkpointer::Save(const std::string& dir_name, const std::vector<CheckpointFile>& files) {
  if (absl::Status s = CheckNames(dir_name, files); !s.ok()) return s;
  if (s3_) return SaveObjects(dir_name, files);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = folder_->path() + "/" + dir_name;
  if (absl::Status s = CheckFits(dir, files); !s.ok()) return s;
  if (folder_->MakeParents(dir + "/x") != 0) return Errno("cannot create", dir);
  EnsureBuffer(files);
  CheckpointIo io;
  for (const CheckpointFile& f : files) {
    const std::string final_path = dir + "/" + f.name;
    const std::string tmp = final_path + ".tmp";
    absl::Status s = WriteTemporary(tmp, f.bytes);
    if (s.ok() && folder_->Rename(tmp, final_path) != 0) s = Errno("rename", tmp);
    if (!s.ok()) {
      folder_->Unlink(tmp);  // a failed save leaves no temporary file (ENOSPC: the space is given back)
      return s;
    }
    io.files += 1;
    io.bytes += f.bytes;
  }
  if (fsync_ && !files.empty()) {
    if (absl::Status s = FsyncPath(*folder_, dir, O_RDONLY | O_DIRECTORY); !s.ok()) return s;
  }
  io.seconds = Since(t0);
  return io;
}

absl::Status Checkpointer::Evict(const std::string& dir_name, const std::vector<CheckpointFile>& files) {
  if (absl::Status s = CheckNames(dir_name, files); !s.ok()) return s;
  if (s3_) return absl::OkStatus();  // no client page cache for objects (the job refuses the key with s3 anyway)
  for (const CheckpointFile& f : files) {
    const std::string path = folder_->path() + "/" + dir_name + "/" + f.name;
    const int fd = folder_->Open(path, O_RDONLY);
    if (fd < 0) return Errno("open", path);
    // DONTNEED skips dirty pages, so they are written first.
    if (::fdatasync(fd) != 0) {
      absl::Status s = Errno("fdatasync", path);
      ::close(fd);
      return s;
    }
    const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (rc != 0) {
      errno = rc;
      return Errno("posix_fadvise", path);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckpointIo> Checkpointer::Load(const std::string& dir_name, const std::vector<CheckpointFile>& files) {
  if (absl::Status s = CheckNames(dir_name, files); !s.ok()) return s;
  if (s3_) return LoadObjects(dir_name, files);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = folder_->path() + "/" + dir_name;
  EnsureBuffer(files);
  CheckpointIo io;
  for (const CheckpointFile& f : files) {
    const std::string path = dir + "/" + f.name;
    const int fd = folder_->Open(path, O_RDONLY);
    if (fd < 0) return Errno("open", path);
    int64_t got = 0;
    for (;;) {
      if (Cancelled()) {
        ::close(fd);
        return absl::CancelledError(absl::StrCat("checkpoint: load of ", path, " cancelled"));
      }
      const ssize_t n = ::read(fd, buffer_.data(), buffer_.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        absl::Status s = Errno("read", path);
        ::close(fd);
        return s;
      }
      if (n == 0) break;
      got += n;
      if (limiter_ != nullptr) limiter_->Acquire(static_cast<uint64_t>(n), cancel_);
    }
    ::close(fd);
    if (got != f.bytes) {
      return absl::DataLossError(
          absl::StrCat("checkpoint: ", path, " has ", got, " bytes, the plan says ", f.bytes));
    }
    io.files += 1;
    io.bytes += got;
  }
  io.seconds = Since(t0);
  return io;
}

}  // namespace dlio
