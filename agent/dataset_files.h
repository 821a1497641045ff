// The dataset's files as the agent makes and finds them, in a data folder inside the data root (POSIX) or under a
// key prefix in a bucket (s3 jobs, docs/object-storage.md):
// - FormatOptionsFor: the format's options (readers/format.h) for the files of one split, from the job.
// - ListDataFiles: DLIO's file discovery, one function for both: the files of `<location>/<split>/` and of its
//   subfolders (one level down) whose names end in `.<ext>`, sorted by basename (as DLIO sorts with subfolders;
//   the padded names make it the path order too), the first `count` of them. A folder is listed without
//   following a link (base/confined_dir.h), a bucket with ListObjectsV2. Given the job's file prefix, files of
//   several `_of_N` layouts are not mixed: the job's own layout (the names generation gives it) is read when all
//   its files are there, the rest left out and said once; otherwise the listing is refused, naming the layouts.
// - DeriveDataFiles: dataset.skip_listing (the MLCommons fork's): the same names as generation gives them, derived
//   from file_prefix, the index, the count and the subfolder layout (readers/format.h's DataFileRelPath), nothing
//   listed; a sample of them is checked to exist (HEAD or stat). FindDataFiles chooses between the two.
// - HeldFolder: a folder the generator writes into, held open so that generation notices when it is moved or replaced
//   (the held descriptor against the same path from the data root: device and inode) and can still remove its
//   temporary files from it wherever it went (unlinkat through the descriptor).
// Thread-safety: pure functions; the listing only reads the folder or the bucket. A HeldFolder is immutable after
// Open(); any number of threads may use one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/data_file_names.h"
#include "base/confined_dir.h"
#include "job/workload_spec.h"
#include "readers/format.h"
#include "storage/s3/client.h"

namespace dlio {

// The format's options from the job for the files of `split` ("train" or "valid"). `data_dir` locates the
// tfrecord DALI index folder (DLIO: <data_folder>/index/<split>, flat even with subfolders).
// s3 jobs: `s3` is the bucket, `data_dir` null, and paths are object keys (the index folder then a key prefix).
FormatOptions FormatOptionsFor(const WorkloadSpec& spec, std::shared_ptr<const ConfinedDir> data_dir,
                               const std::string& split, const std::shared_ptr<const S3Config>& s3 = nullptr);

// Where the dataset is: a data folder, or a bucket and the data's key prefix (WorkloadSpec::S3DataPrefix).
struct DatasetLocation {
  static DatasetLocation Folder(const ConfinedDir& data_dir) { return {&data_dir, nullptr, ""}; }
  static DatasetLocation Bucket(std::shared_ptr<const S3Config> s3, std::string prefix) {
    return {nullptr, std::move(s3), std::move(prefix)};
  }

  const ConfinedDir* folder = nullptr;  // POSIX; must outlive the listing
  std::shared_ptr<const S3Config> s3;   // s3 jobs
  std::string prefix;                   // s3: the data's key prefix
};

// DLIO's discovery (see above): full paths (folder) or object keys (bucket). Data files only: a name that merely
// is `.<ext>` is none, and the extension filter leaves out companion files (indexed_binary's `<name>.off.idx` and
// `<name>.sz.idx` end in .idx) and the agents' temporary names (`<name>.tmp-<pid>`). A symbolic link in a folder
// is refused, not skipped. Error if fewer than `count` exist, naming `count_key` (dataset.num_files_train or
// dataset.num_files_eval), the folder or the bucket, with `hint` appended; a missing split folder says how to
// generate it.
// Layouts (`prefix` set: dataset.file_prefix): a generated name `<p>_<i>_of_<N>.<ext>` has the layout
// `<p>_*_of_<N>.<ext>`, any other name the layout "other names". With one layout in the folder the listing is DLIO's
// (the first `count`: a job of 4 files over a generated set of 8 reads the first 4, DLIO's subset feature). With
// several: the job's own layout `<prefix>_*_of_<count>.<ext>` when it holds `count` files, and `*ignored` (may be
// null) says in one line what was left out; else FailedPrecondition naming `count_key` and every layout with its
// file count. An empty `prefix` takes the first `count` whatever their layouts (a probe for one file).
// `folders_read` (may be null): the folders read (one readdir each), for the listing's cost (agent/split_listing.h).
absl::StatusOr<std::vector<std::string>> ListDataFiles(const DatasetLocation& where, const std::string& split,
                                                       const std::string& ext, int64_t count,
                                                       const std::string& count_key = "dataset.num_files_train",
                                                       const std::string& hint = "", const std::string& prefix = "",
                                                       std::string* ignored = nullptr,
                                                       uint64_t* folders_read = nullptr);

// dataset.skip_listing: the `count` names `<split>/[<subfolder>/]<prefix>_<i>_of_<count>.<ext>` under the location
// (full paths or object keys, in index order, which is the sorted order a listing gives) as a derived DataFileNames
// (agent/data_file_names.h: the pattern, O(1) memory whatever the count), with `subfolders` DLIO's
// num_subfolders_<split>. Validation: names 0, `interval`, 2*`interval`, ... and the last (the one a short dataset
// lacks) are checked, by HEAD (bucket, 16 in flight) or a confined open (folder); `interval` 0 checks none. The
// first missing one (lowest index, whatever the order the HEADs answer in) is
// NotFound naming it, `count_key` and how to list instead; other errors (credentials, a link) come back as they are.
absl::StatusOr<DataFileNames> DeriveDataFiles(const DatasetLocation& where, const std::string& split,
                                              const std::string& ext, int64_t count, int64_t subfolders,
                                              const std::string& prefix, int64_t interval,
                                              const std::string& count_key = "dataset.num_files_train");

// Listed names as the compact form when they are exactly the derived names of their count (`prefix` set: the job's
// dataset.file_prefix; `subfolders` DLIO's num_subfolders_<split>): a derived DataFileNames, O(1) memory; else the
// names held as they are.
DataFileNames CompactNames(std::vector<std::string> names, const DatasetLocation& where, const std::string& split,
                           const std::string& ext, int64_t subfolders, const std::string& prefix);

// How a phase finds its split's files (agent/steps_phase.cc): `derive` (WorkloadSpec::SkipsListing) names them with
// DeriveDataFiles, else ListDataFiles lists them. `list_if_other_names` (dataset.skip_listing unset: derived only by
// the dataset's size) lists instead when the first derived name does not exist: the names do not follow the
// convention for this count (a dataset of other names, or the first `count` of a larger generated set, DLIO's subset
// feature), which listing handles as it always did. A listing whose names are DLIO's derived names for its count
// (the usual case: a generated dataset) is kept as the pattern (CompactNames), so the agent holds the names only
// while it lists.
struct DataFileNaming {
  bool derive = false;
  bool list_if_other_names = false;
  int64_t subfolders = 0;  // dataset.num_subfolders_<split>
  int64_t interval = 1000; // dataset.listing_validation_interval
};
absl::StatusOr<DataFileNames> FindDataFiles(const DatasetLocation& where, const std::string& split,
                                            const std::string& ext, int64_t count, DataFileNaming naming,
                                            const std::string& count_key, const std::string& hint,
                                            const std::string& prefix, std::string* ignored);

// A folder of the dataset held open while a file is generated into it (agent/generate_phase.cc). Before a temporary
// file is renamed into place, StillInPlace() compares the held descriptor (fstat) with what the folder's path names
// now, resolved from the data root without following a link (base/confined_dir.h): same device and inode, or the
// folder was moved (out of the data root, say) or replaced, and generation stops. Unlink() removes a temporary file
// through the descriptor, so it goes even from a folder moved elsewhere.
class HeldFolder {
 public:
  // Opens the folder `path` (absolute, below `data` and so below `root`) through `data`, the descriptor the format
  // library's opens go through; `root` is the data root its path is checked from. A folder that cannot be opened is
  // one the generator made and no longer finds: the error is StillInPlace()'s, with the cause appended.
  static absl::StatusOr<std::shared_ptr<const HeldFolder>> Open(std::shared_ptr<const ConfinedDir> root,
                                                                const ConfinedDir& data, const std::string& path);
  ~HeldFolder();
  HeldFolder(const HeldFolder&) = delete;
  HeldFolder& operator=(const HeldFolder&) = delete;

  const std::string& path() const { return path_; }
  // OK while path() from the data root is still this folder; else FailedPrecondition naming it: "dataset.data_folder:
  // the folder '/data/ds/train' is no longer where it was (moved or replaced during generation)".
  absl::Status StillInPlace() const;
  // unlinkat(2) of `name` (a file directly in this folder) through the descriptor; 0, or -1 with errno.
  int Unlink(const std::string& name) const;

 private:
  HeldFolder(std::shared_ptr<const ConfinedDir> root, std::string path, int fd, dev_t dev, ino_t ino)
      : root_(std::move(root)), path_(std::move(path)), fd_(fd), dev_(dev), ino_(ino) {}
  const std::shared_ptr<const ConfinedDir> root_;
  const std::string path_;
  const int fd_;
  const dev_t dev_;
  const ino_t ino_;
};

}  // namespace dlio
