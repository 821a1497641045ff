// AtomicFile and WriteFileAtomic: whole files written through a directory descriptor, complete or not at all.
// The one implementation of "temporary name, write, fsync, rename" (results/results.h's WriteFileAtomic(path) and
// the coordinator's result folders, docs/fleet.md "Results", use it).
//
// Guarantee: every system call is relative to the directory descriptor it is given (openat, renameat, unlinkat) and
// names a single component (a name without '/', not "." or ".."), so whatever happens to the directory's path
// meanwhile (renamed, replaced by a symbolic link), the file lands in the directory that was opened, never through a
// link: the temporary name is created with O_CREAT | O_EXCL | O_NOFOLLOW (a file or link planted there fails the
// write), and renameat() replaces a link at the final name instead of following it. A write that fails (or an
// AtomicFile dropped before Commit) removes its temporary with unlinkat(); nothing named ".tmp" is left behind.
// Temporary name: ".<name>.tmp.<pid>.<n>" in the same directory (rename is atomic only within a file system;
// hidden; unique per process and call; readers of result folders skip names containing ".tmp").
// Errors: "<shown>: cannot write (<strerror>)", with the code errno implies (ErrnoStatus).
// Usage:
//   absl::Status s = WriteFileAtomic(*job_dir, "summary.json", text);  // job_dir: a ConfinedDir
// Thread-safety: an AtomicFile belongs to one writer; the free functions may be called from any thread. The
// directory descriptor must stay open until Commit() or the AtomicFile's destruction.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/confined_dir.h"

namespace dlio {

// `message` + " (<strerror(err)>)": NotFound for ENOENT/ENOTDIR, PermissionDenied for EACCES/EPERM/EROFS,
// ResourceExhausted for ENOSPC/EDQUOT, Internal otherwise.
absl::Status ErrnoStatus(int err, const std::string& message);

class AtomicFile {
 public:
  // Creates the temporary of `name` in the directory `dir` (a descriptor, O_PATH is enough); `shown` is the path
  // messages name (e.g. "<dir path>/<name>").
  static absl::StatusOr<AtomicFile> Create(int dir, const std::string& name, std::string shown);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Not committed: closes and removes the temporary.
  ~AtomicFile();

  // Appends `bytes` (retrying short writes and EINTR); on failure the temporary is removed.
  absl::Status Write(std::string_view bytes);
  // fsync(2) when `sync`, close, then renameat() to the final name; on failure the temporary is removed.
  absl::Status Commit(bool sync);

 private:
  AtomicFile(int dir, int fd, std::string name, std::string tmp, std::string shown);
  absl::Status Fail(int err);  // closes, removes the temporary, and names `shown_`

  int dir_ = -1;
  int fd_ = -1;  // -1 once committed or failed
  std::string name_, tmp_, shown_;
};

// Writes `content` to `name` in the directory `dir` via AtomicFile, fsync'ed.
absl::Status WriteFileAtomicAt(int dir, const std::string& name, const std::string& content,
                               const std::string& shown);
// The same in a ConfinedDir (messages name dir.path() + "/" + name).
absl::Status WriteFileAtomic(const ConfinedDir& dir, const std::string& name, const std::string& content);

// The whole regular file `name` of `dir`, opened with O_NOFOLLOW (a symbolic link is refused, not followed).
absl::StatusOr<std::string> ReadFileIn(const ConfinedDir& dir, const std::string& name);

}  // namespace dlio
