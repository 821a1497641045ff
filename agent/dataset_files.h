// The dataset's files as the agent makes and finds them, in a data folder inside the data root (POSIX) or under a
// key prefix in a bucket (s3 jobs, docs/object-storage.md):
// - FormatOptionsFor: the format's options (readers/format.h) for the files of one split, from the job.
// - ListDataFiles: DLIO's file discovery, one function for both: the files of `<location>/<split>/` and of its
//   subfolders (one level down) whose names end in `.<ext>`, sorted by basename (as DLIO sorts with subfolders;
//   the padded names make it the path order too), the first `count` of them. A folder is listed without
//   following a link (base/confined_dir.h), a bucket with ListObjectsV2. Given the job's file prefix, files of
//   several `_of_N` layouts are not mixed: the job's own layout (the names generation gives it) is read when all
//   its files are there, the rest left out and said once; otherwise the listing is refused, naming the layouts.
// Thread-safety: pure functions; the listing only reads the folder or the bucket.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
absl::StatusOr<std::vector<std::string>> ListDataFiles(const DatasetLocation& where, const std::string& split,
                                                       const std::string& ext, int64_t count,
                                                       const std::string& count_key = "dataset.num_files_train",
                                                       const std::string& hint = "", const std::string& prefix = "",
                                                       std::string* ignored = nullptr);

}  // namespace dlio
