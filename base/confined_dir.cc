#include "base/confined_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/text.h"

namespace dlio {

namespace {

// openat2 where the kernel (and a seccomp filter, which may answer EPERM) allows it; decided once per process.
bool UseOpenat2() {
  static const bool use = [] {
    const char* force = std::getenv("DLIO_CONFINE_WALK");
    if (force != nullptr && std::string(force) == "1") return false;
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH;
    const long fd = ::syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof how);
    if (fd < 0) return false;
    ::close(static_cast<int>(fd));
    return true;
  }();
  return use;
}

// A component opened with O_NOFOLLOW that failed with ENOTDIR (O_DIRECTORY on a link) is reported as the link.
int LinkAware(int dir, const char* name, int err) {
  struct stat st {};
  if (err == ENOTDIR && ::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) return ELOOP;
  return err;
}

// Opens the lexically clean relative path `rel` beneath `dir` (see the header); -1 with errno.
int OpenBeneath(int dir, const char* rel, int flags, mode_t mode) {
  flags |= O_CLOEXEC;
  if (UseOpenat2()) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags);
    how.mode = (flags & O_CREAT) != 0 ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    for (int attempt = 0;; ++attempt) {
      const long fd = ::syscall(SYS_openat2, dir, rel, &how, sizeof how);
      // EAGAIN: the kernel saw a concurrent rename and could not vouch for the walk; it is safe to retry.
      if (fd >= 0 || errno != EAGAIN || attempt == 8) return static_cast<int>(fd);
    }
  }
  int cur = dir;
  const char* p = rel;
  for (;;) {
    const char* slash = std::strchr(p, '/');
    if (slash == nullptr) break;
    const std::string name(p, static_cast<size_t>(slash - p));
    const int next = ::openat(cur, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = next < 0 ? LinkAware(cur, name.c_str(), errno) : 0;
    if (cur != dir) ::close(cur);
    if (next < 0) {
      errno = err;
      return -1;
    }
    cur = next;
    p = slash + 1;
  }
  const int fd = ::openat(cur, p, flags | O_NOFOLLOW, mode);
  const int err = fd < 0 ? LinkAware(cur, p, errno) : 0;
  if (cur != dir) ::close(cur);
  if (fd < 0) errno = err;
  return fd;
}

// Walks `parts` beneath `dir` creating missing folders; the last folder's O_PATH descriptor, or -1 with errno.
int WalkCreating(int dir, const std::vector<std::string>& parts) {
  int cur = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  for (const std::string& name : parts) {
    if (cur < 0) return -1;
    int next = ::openat(cur, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT) {
      if (::mkdirat(cur, name.c_str(), 0755) != 0 && errno != EEXIST) {
        const int err = errno;
        ::close(cur);
        errno = err;
        return -1;
      }
      next = ::openat(cur, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    const int err = next < 0 ? LinkAware(cur, name.c_str(), errno) : 0;
    ::close(cur);
    if (next < 0) {
      errno = err;
      return -1;
    }
    cur = next;
  }
  return cur;
}

std::vector<std::string> Parts(const std::string& rel) {
  if (rel == ".") return {};
  return absl::StrSplit(rel, '/');
}

}  // namespace

ConfinedDir::~ConfinedDir() { ::close(fd_); }

absl::StatusOr<std::shared_ptr<const ConfinedDir>> ConfinedDir::OpenRoot(const std::string& root) {
  return OpenRoot(root, Names{"--data-root", "the agent", "its data root"});
}

absl::StatusOr<std::shared_ptr<const ConfinedDir>> ConfinedDir::OpenRoot(const std::string& root, Names names) {
  const int fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(names.flag, ": '", EscapeText(root), "': ", std::strerror(errno)));
  }
  char buf[PATH_MAX];
  std::string path = ::realpath(root.c_str(), buf) != nullptr ? std::string(buf) : root;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return std::shared_ptr<const ConfinedDir>(
      new ConfinedDir(fd, path, std::make_shared<const Names>(std::move(names))));
}

absl::StatusOr<std::string> ConfinedDir::Relative(const std::string& path, const std::string& key) const {
  std::string p = path;
  if (!p.empty() && p[0] == '/') {
    const std::string prefix = path_ == "/" ? "/" : path_ + "/";
    if (p == path_) {
      p = ".";
    } else if (p.compare(0, prefix.size(), prefix) == 0) {
      p = p.substr(prefix.size());
    } else {
      return absl::PermissionDeniedError(absl::StrCat(key, ": '", EscapeText(path), "' is outside '", path_,
                                                      "', the folder ", names_->who, " is confined to (",
                                                      names_->root, ")"));
    }
  }
  std::vector<std::string> parts;
  for (absl::string_view c : absl::StrSplit(p, '/')) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (parts.empty()) {
        return absl::PermissionDeniedError(absl::StrCat(key, ": '", EscapeText(path), "' leaves '", path_,
                                                        "' through '..'; ", names_->who, " is confined to ",
                                                        names_->root));
      }
      parts.pop_back();
      continue;
    }
    parts.emplace_back(c);
  }
  return parts.empty() ? std::string(".") : absl::StrJoin(parts, "/");
}

int ConfinedDir::Open(const std::string& path, int flags, mode_t mode) const {
  // Fast path (every data file of a phase): "<path_>/<clean relative path>" needs no allocation.
  if (path.size() > path_.size() + 1 && path.compare(0, path_.size(), path_) == 0 && path[path_.size()] == '/') {
    const char* rel = path.c_str() + path_.size() + 1;
    const bool clean = rel[0] != '/' && std::strstr(rel, "//") == nullptr && std::strstr(rel, "/./") == nullptr &&
                       std::strstr(rel, "/../") == nullptr && std::strncmp(rel, "./", 2) != 0 &&
                       std::strncmp(rel, "../", 3) != 0 && std::strcmp(rel, "..") != 0 && std::strcmp(rel, ".") != 0;
    const size_t n = std::strlen(rel);
    const bool clean_end = !(n >= 3 && std::strcmp(rel + n - 3, "/..") == 0) &&
                           !(n >= 2 && std::strcmp(rel + n - 2, "/.") == 0) && rel[n - 1] != '/';
    if (clean && clean_end) return OpenBeneath(fd_, rel, flags, mode);
  }
  absl::StatusOr<std::string> rel = Relative(path, "path");
  if (!rel.ok()) {
    errno = EXDEV;
    return -1;
  }
  return OpenBeneath(fd_, rel->c_str(), flags, mode);
}

int ConfinedDir::MakeParents(const std::string& path) const {
  absl::StatusOr<std::string> rel = Relative(path, "path");
  if (!rel.ok()) {
    errno = EXDEV;
    return -1;
  }
  std::vector<std::string> parts = Parts(*rel);
  if (!parts.empty()) parts.pop_back();
  const int fd = WalkCreating(fd_, parts);
  if (fd < 0) return -1;
  ::close(fd);
  return 0;
}

namespace {

// The parent folder of `rel` opened beneath `dir` (O_PATH) and the last component.
int OpenParent(int dir, const std::string& rel, std::string* base) {
  const size_t slash = rel.rfind('/');
  *base = slash == std::string::npos ? rel : rel.substr(slash + 1);
  if (*base == "." || base->empty()) {
    errno = EINVAL;
    return -1;
  }
  return OpenBeneath(dir, slash == std::string::npos ? "." : rel.substr(0, slash).c_str(), O_PATH | O_DIRECTORY, 0);
}

}  // namespace

int ConfinedDir::Rename(const std::string& from, const std::string& to) const {
  absl::StatusOr<std::string> a = Relative(from, "path"), b = Relative(to, "path");
  if (!a.ok() || !b.ok()) {
    errno = EXDEV;
    return -1;
  }
  std::string base_a, base_b;
  const int pa = OpenParent(fd_, *a, &base_a);
  if (pa < 0) return -1;
  const int pb = OpenParent(fd_, *b, &base_b);
  if (pb < 0) {
    const int err = errno;
    ::close(pa);
    errno = err;
    return -1;
  }
  const int rc = ::renameat(pa, base_a.c_str(), pb, base_b.c_str());
  const int err = errno;
  ::close(pa);
  ::close(pb);
  errno = err;
  return rc;
}

int ConfinedDir::Unlink(const std::string& path) const {
  absl::StatusOr<std::string> rel = Relative(path, "path");
  if (!rel.ok()) {
    errno = EXDEV;
    return -1;
  }
  std::string base;
  const int parent = OpenParent(fd_, *rel, &base);
  if (parent < 0) return -1;
  const int rc = ::unlinkat(parent, base.c_str(), 0);
  const int err = errno;
  ::close(parent);
  errno = err;
  return rc;
}

absl::StatusOr<std::shared_ptr<const ConfinedDir>> ConfinedDir::Sub(const std::string& path, Mode mode,
                                                                    const std::string& key) const {
  absl::StatusOr<std::string> rel = Relative(path, key);
  if (!rel.ok()) return rel.status();
  const int fd = mode == Mode::kCreate ? WalkCreating(fd_, Parts(*rel))
                                       : OpenBeneath(fd_, rel->c_str(), O_PATH | O_DIRECTORY, 0);
  if (fd < 0) {
    const int err = errno;
    const std::string why = Explain(path, err);
    return err == ENOENT ? absl::NotFoundError(absl::StrCat(key, ": ", why))
                         : absl::PermissionDeniedError(absl::StrCat(key, ": ", why));
  }
  return std::shared_ptr<const ConfinedDir>(new ConfinedDir(fd, *rel == "." ? path_ : path_ + "/" + *rel, names_));
}

absl::StatusOr<std::shared_ptr<const ConfinedDir>> ConfinedDir::NearestExisting(const std::string& path,
                                                                                const std::string& key) const {
  absl::StatusOr<std::string> rel = Relative(path, key);
  if (!rel.ok()) return rel.status();
  std::string done;
  int cur = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  for (const std::string& name : Parts(*rel)) {
    if (cur < 0) break;
    const int next = ::openat(cur, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT) break;
    if (next < 0) {
      const int err = LinkAware(cur, name.c_str(), errno);
      ::close(cur);
      return absl::PermissionDeniedError(absl::StrCat(key, ": ", Explain(path, err)));
    }
    ::close(cur);
    cur = next;
    done = done.empty() ? name : done + "/" + name;
  }
  if (cur < 0) return absl::InternalError(absl::StrCat(key, ": ", std::strerror(errno)));
  return std::shared_ptr<const ConfinedDir>(new ConfinedDir(cur, done.empty() ? path_ : path_ + "/" + done, names_));
}

absl::StatusOr<std::vector<ConfinedDir::Entry>> ConfinedDir::List(const std::string& path, bool sizes) const {
  const int fd = Open(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return absl::NotFoundError(Explain(path, errno));
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    ::close(fd);
    return absl::InternalError(absl::StrCat("'", path, "': ", std::strerror(err)));
  }
  std::vector<Entry> out;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    Entry en;
    en.name = e->d_name;
    unsigned char t = e->d_type;
    struct stat st {};
    if (t == DT_UNKNOWN || (sizes && t == DT_REG)) {
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      t = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
      en.size = static_cast<uint64_t>(st.st_size);
    }
    en.type = t == DT_REG   ? Entry::Type::kFile
              : t == DT_DIR ? Entry::Type::kDir
              : t == DT_LNK ? Entry::Type::kLink
                            : Entry::Type::kOther;
    out.push_back(std::move(en));
  }
  ::closedir(d);
  return out;
}

std::string ConfinedDir::Explain(const std::string& path, int err) const {
  absl::StatusOr<std::string> rel = Relative(path, "path");
  if (!rel.ok()) return std::string(rel.status().message());
  std::string prefix;
  int cur = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  std::string why;
  for (const std::string& name : Parts(*rel)) {
    prefix = prefix.empty() ? name : prefix + "/" + name;
    struct stat st {};
    if (cur < 0 || ::fstatat(cur, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      why = absl::StrCat("'", EscapeText(prefix), "' does not exist under '", path_, "'");
      break;
    }
    if (S_ISLNK(st.st_mode)) {
      why = absl::StrCat("'", EscapeText(path), "' passes through '", EscapeText(prefix),
                         "', a symbolic link; ", names_->who, " follows none below ", names_->root, " ('", path_, "')");
      break;
    }
    const int next = ::openat(cur, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    ::close(cur);
    cur = next;
  }
  if (cur >= 0) ::close(cur);
  return why.empty() ? absl::StrCat("'", EscapeText(path), "' under '", path_, "': ", std::strerror(err)) : why;
}

}  // namespace dlio
