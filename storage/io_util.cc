#include "storage/io_util.h"

namespace dlio::internal {

absl::Status FileSink::Open(const std::string& path) {
  path_ = path;
  if (dir_ != nullptr) dir_->Unlink(path);  // ENOENT is the usual answer
  fd_ = Fd(dir_ != nullptr ? dir_->Open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)
                           : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd_.valid()) return ErrnoError(path, "create", errno);
  off_ = 0;
  return absl::OkStatus();
}

absl::Status FileSink::Append(const void* data, size_t n, IoStats& stats) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
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

absl::Status FileSink::Finish(IoStats& stats) {
  // Best effort: a filesystem without it (EINVAL, ENOSYS) just writes back later; SyncFile() still waits.
  ::sync_file_range(fd_.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
  if (fd_.Close() != 0) return ErrnoError(path_, "close after write", errno);
  stats.AddFile();
  return absl::OkStatus();
}

}  // namespace dlio::internal
