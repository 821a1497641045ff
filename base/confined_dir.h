// ConfinedDir: a directory the agent may use, and the only way it opens, creates, renames, removes or lists files
// below it. Confinement of every path an agent touches to its --data-root (docs/fleet.md, "Confinement").
//
// Guarantee: whatever a job says (dataset.data_folder, checkpoint.checkpoint_folder, dataset.file_prefix, ...), the
// agent never opens, creates, renames or removes anything that is not below the directory it opened as its data root
// at start-up, and never follows a symbolic link below it. Every path is resolved against the real file system at
// the moment of the operation, component by component relative to an open directory descriptor, so a link planted
// or swapped in between a check and a use changes nothing:
//  - openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the kernel has it (Linux
//    >= 5.6): one system call per open, the kernel refusing ".." above the directory and every symbolic link;
//  - otherwise a walk: openat(O_PATH | O_DIRECTORY | O_NOFOLLOW) per folder, then openat(O_NOFOLLOW) of the file
//    (the environment variable DLIO_CONFINE_WALK=1 forces it, for tests).
// Paths are taken lexically first: an absolute path must start with path() (else refused), and ".." may not climb
// above the directory (else refused); since no link is followed, this lexical form is also what the kernel resolves.
// The root's own path may contain links (the operator chose it); what lies below it may not. Hard links are not
// detected (they cannot cross file systems, and files are written under temporary names and renamed, never
// rewritten in place).
// The hot path: a phase resolves its data folder once (Sub()); each file is then one Open() relative to it.
// Errors: Open() and friends return -1 with errno (ELOOP: a symbolic link on the way; EXDEV: the path leaves the
// directory), the StatusOr functions one line naming `key`, e.g.
//   "dataset.data_folder: 'zz/../lnk' passes through 'lnk', a symbolic link; the agent follows none below its data
//    root '/data'".
// The coordinator opens its --results-dir the same way (Names below: its messages name the coordinator's results
// folder) and writes a job's result files through the job folder's descriptor (base/atomic_file.h).
// Thread-safety: immutable after creation; any number of threads may use one (descriptors are per call).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dlio {

class ConfinedDir {
 public:
  // How messages name the root and who is confined below it (OpenRoot(root) gives the agent's: "--data-root",
  // "the agent", "its data root").
  struct Names {
    std::string flag, who, root;
  };
  // Opens `root` (following links in its own path) as the anchor every later path stays below.
  static absl::StatusOr<std::shared_ptr<const ConfinedDir>> OpenRoot(const std::string& root);
  static absl::StatusOr<std::shared_ptr<const ConfinedDir>> OpenRoot(const std::string& root, Names names);
  ~ConfinedDir();
  ConfinedDir(const ConfinedDir&) = delete;
  ConfinedDir& operator=(const ConfinedDir&) = delete;

  enum class Mode { kExisting, kCreate };
  // The folder `path` below this one (relative, or absolute under path()); kCreate makes missing folders (0755).
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> Sub(const std::string& path, Mode mode,
                                                         const std::string& key) const;
  // The deepest existing folder on the way to `path` (for a free-space check before anything is created), after
  // the same checks as Sub().
  absl::StatusOr<std::shared_ptr<const ConfinedDir>> NearestExisting(const std::string& path,
                                                                     const std::string& key) const;

  // Absolute path of this folder (no trailing '/'), for messages and for building file paths.
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

  // open(2) of `path` (absolute under path(), or relative) beneath this folder; the file descriptor, or -1 with
  // errno. O_CLOEXEC is added; `mode` is used with O_CREAT only.
  int Open(const std::string& path, int flags, mode_t mode = 0644) const;
  // Creates the missing folders of `path`'s parent (mkdir -p beneath this folder); 0, or -1 with errno.
  int MakeParents(const std::string& path) const;
  // rename(2) / unlink(2) of paths beneath this folder (the links themselves, never what they point to).
  int Rename(const std::string& from, const std::string& to) const;
  int Unlink(const std::string& path) const;

  struct Entry {
    std::string name;
    enum class Type { kFile, kDir, kLink, kOther } type = Type::kOther;
    uint64_t size = 0;  // regular files, when asked for
  };
  // The entries of the folder `path` (not following links); `sizes` adds each regular file's size (one fstatat).
  absl::StatusOr<std::vector<Entry>> List(const std::string& path, bool sizes = false) const;

  // The lexical path of `path` relative to this folder ("." for itself), or an error naming `key` when it leaves it.
  absl::StatusOr<std::string> Relative(const std::string& path, const std::string& key) const;
  // One line saying why an operation on `path` failed with `err` (which component is a link, or missing, ...).
  std::string Explain(const std::string& path, int err) const;

 private:
  ConfinedDir(int fd, std::string path, std::shared_ptr<const Names> names)
      : fd_(fd), path_(std::move(path)), names_(std::move(names)) {}
  const int fd_;
  const std::string path_;
  const std::shared_ptr<const Names> names_;  // shared by the root and every folder opened below it
};

}  // namespace dlio
