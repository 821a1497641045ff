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
#include "common/random.h"

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

Checkpointer::Checkpointer(std::shared_ptr<const ConfinedDir> folder, bool fsync, uint64_t seed, size_t buffer_bytes)
    : folder_(std::move(folder)), fsync_(fsync), seed_(seed), max_buffer_(std::max<size_t>(buffer_bytes, 4096)) {}

void Checkpointer::EnsureBuffer(const std::vector<CheckpointFile>& files) {
  int64_t largest = 0;
  for (const CheckpointFile& f : files) largest = std::max(largest, f.bytes);
  const size_t want = std::min(max_buffer_, static_cast<size_t>(std::max<int64_t>(largest, 1)));
  if (buffer_.size() >= want) return;
  const size_t old = buffer_.size();
  buffer_.resize(want);
  Xoshiro256 rng(seed_ + old);
  for (size_t i = old; i < want; i += 8) {
    const uint64_t v = rng.Next();
    std::memcpy(buffer_.data() + i, &v, std::min<size_t>(8, want - i));
  }
}

absl::StatusOr<CheckpointIo> Checkpointer::Save(const std::string& dir_name, const std::vector<CheckpointFile>& files) {
  if (absl::Status s = CheckNames(dir_name, files); !s.ok()) return s;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = folder_->path() + "/" + dir_name;
  if (folder_->MakeParents(dir + "/x") != 0) return Errno("cannot create", dir);
  EnsureBuffer(files);
  CheckpointIo io;
  for (const CheckpointFile& f : files) {
    const std::string final_path = dir + "/" + f.name;
    const std::string tmp = final_path + ".tmp";
    folder_->Unlink(tmp);  // a new file, never an existing inode (a stale temporary, a planted hard link)
    const int fd = folder_->Open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return Errno("open", tmp);
    int64_t left = f.bytes;
    while (left > 0) {
      const size_t chunk = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buffer_.size())));
      const ssize_t n = ::write(fd, buffer_.data(), chunk);
      if (n < 0) {
        if (errno == EINTR) continue;
        absl::Status s = Errno("write", tmp);
        ::close(fd);
        return s;
      }
      left -= n;
    }
    if (fsync_ && ::fsync(fd) != 0) {
      absl::Status s = Errno("fsync", tmp);
      ::close(fd);
      return s;
    }
    if (::close(fd) != 0) return Errno("close", tmp);
    if (folder_->Rename(tmp, final_path) != 0) return Errno("rename", tmp);
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
      const ssize_t n = ::read(fd, buffer_.data(), buffer_.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        absl::Status s = Errno("read", path);
        ::close(fd);
        return s;
      }
      if (n == 0) break;
      got += n;
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
