#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dlio {

namespace {

// One component: no '/', not empty, "." or "..".
bool SingleName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

absl::Status CannotWrite(int err, const std::string& shown) {
  return ErrnoStatus(err, absl::StrCat(shown, ": cannot write"));
}

}  // namespace

absl::Status ErrnoStatus(int err, const std::string& message) {
  const std::string msg = absl::StrCat(message, " (", std::strerror(err), ")");
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

AtomicFile::AtomicFile(int dir, int fd, std::string name, std::string tmp, std::string shown)
    : dir_(dir), fd_(fd), name_(std::move(name)), tmp_(std::move(tmp)), shown_(std::move(shown)) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : dir_(other.dir_),
      fd_(std::exchange(other.fd_, -1)),
      name_(std::move(other.name_)),
      tmp_(std::move(other.tmp_)),
      shown_(std::move(other.shown_)) {}

AtomicFile::~AtomicFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlinkat(dir_, tmp_.c_str(), 0);
}

absl::StatusOr<AtomicFile> AtomicFile::Create(int dir, const std::string& name, std::string shown) {
  if (!SingleName(name)) return CannotWrite(EINVAL, shown);
  static std::atomic<uint64_t> counter{0};
  std::string tmp = absl::StrCat(".", name, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
  const int fd = ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return CannotWrite(errno, shown);
  return AtomicFile(dir, fd, name, std::move(tmp), std::move(shown));
}

absl::Status AtomicFile::Fail(int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlinkat(dir_, tmp_.c_str(), 0);
  return CannotWrite(err, shown_);
}

absl::Status AtomicFile::Write(std::string_view bytes) {
  if (fd_ < 0) return CannotWrite(EBADF, shown_);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(errno);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit(bool sync) {
  if (fd_ < 0) return CannotWrite(EBADF, shown_);
  if (sync && ::fsync(fd_) != 0) return Fail(errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return Fail(errno);
  if (::renameat(dir_, tmp_.c_str(), dir_, name_.c_str()) != 0) return Fail(errno);
  return absl::OkStatus();
}

absl::Status WriteFileAtomicAt(int dir, const std::string& name, const std::string& content,
                               const std::string& shown) {
  absl::StatusOr<AtomicFile> f = AtomicFile::Create(dir, name, shown);
  if (!f.ok()) return f.status();
  if (absl::Status s = f->Write(content); !s.ok()) return s;
  return f->Commit(/*sync=*/true);
}

absl::Status WriteFileAtomic(const ConfinedDir& dir, const std::string& name, const std::string& content) {
  return WriteFileAtomicAt(dir.fd(), name, content, absl::StrCat(dir.path(), "/", name));
}

absl::StatusOr<std::string> ReadFileIn(const ConfinedDir& dir, const std::string& name) {
  const std::string shown = absl::StrCat(dir.path(), "/", name);
  if (!SingleName(name)) return ErrnoStatus(EINVAL, absl::StrCat(shown, ": cannot read"));
  // O_NONBLOCK: a FIFO planted under the name must not block the reader (it is refused below, as not a file).
  const int fd = ::openat(dir.fd(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat(shown, ": cannot read"));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(shown, ": cannot read (not a regular file)"));
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(err, absl::StrCat(shown, ": cannot read"));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace dlio
