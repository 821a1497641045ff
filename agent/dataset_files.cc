#include "agent/dataset_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "job/format_traits.h"
#include "storage/storage.h"

namespace dlio {

FormatOptions FormatOptionsFor(const WorkloadSpec& spec, std::shared_ptr<const ConfinedDir> data_dir,
                               const std::string& split, const std::shared_ptr<const S3Config>& s3) {
  FormatOptions o;
  o.dir = data_dir;
  o.samples_per_file = spec.num_samples_per_file;
  o.sample_dims = spec.SampleShape();
  o.element_type = spec.record_element_type;
  o.hdf5_chunk_dims = spec.Hdf5ChunkDims();
  o.hdf5_num_dset_per_record = spec.hdf5_num_dset_per_record;
  o.hdf5_max_shape = spec.hdf5_max_shape;
  o.compression = spec.compression;
  o.compression_level = spec.compression_level;
  o.transfer_size = spec.transfer_size;
  if (FormatTraitsOf(spec.format).index_folder && data_dir) o.tfrecord_index_dir = data_dir->path() + "/index/" + split;
  // The spec was validated when loaded: an unknown engine name cannot reach this point.
  if (absl::StatusOr<IoEngine> e = ParseIoEngine(spec.io_engine); e.ok()) o.io_engine = *e;
  o.read_in_memory = spec.read_type == "memory";
  if (s3) {
    o.io_engine = IoEngine::kS3;
    o.s3 = s3;
    if (FormatTraitsOf(spec.format).index_folder) o.tfrecord_index_dir = S3Join(spec.S3DataPrefix(), "index/" + split);
  }
  return o;
}

namespace {

// The data files found, each as (basename, full path or key): DLIO sorts by basename.
using Found = std::vector<std::pair<std::string, std::string>>;

bool IsDataFile(const std::string& name, const std::string& suffix) {
  return name.size() > suffix.size() && absl::EndsWith(name, suffix);
}

// The data files of `folder` and, when `descend`, of its subfolders (not deeper). No link is followed
// (base/confined_dir.h): a symbolic link here is refused, not silently skipped.
absl::Status ListFolder(const ConfinedDir& data_dir, const std::string& folder, bool descend,
                        const std::string& suffix, Found& found) {
  absl::StatusOr<std::vector<ConfinedDir::Entry>> entries = data_dir.List(folder);
  if (!entries.ok()) return entries.status();
  for (const ConfinedDir::Entry& e : *entries) {
    const std::string path = folder + "/" + e.name;
    if (e.type == ConfinedDir::Entry::Type::kLink) {
      return absl::PermissionDeniedError(absl::StrCat("dataset.data_folder: '", path, "' is a symbolic link; the "
                                                      "agent follows none below its data root (docs/fleet.md)"));
    }
    if (e.type == ConfinedDir::Entry::Type::kDir && descend) {
      if (absl::Status s = ListFolder(data_dir, path, false, suffix, found); !s.ok()) return s;
    } else if (e.type == ConfinedDir::Entry::Type::kFile && IsDataFile(e.name, suffix)) {
      found.emplace_back(e.name, path);
    }
  }
  return absl::OkStatus();
}

// The data objects under `dir` (a key prefix ending in '/') and one level of "subfolders" below it.
absl::Status ListBucket(const std::shared_ptr<const S3Config>& config, const std::string& dir,
                        const std::string& suffix, Found& found) {
  S3Client client(config);
  absl::StatusOr<std::vector<S3Object>> objects = client.List(dir);
  if (!objects.ok()) return objects.status();
  for (S3Object& o : *objects) {
    const std::string rel = o.key.substr(dir.size());
    if (std::count(rel.begin(), rel.end(), '/') > 1) continue;  // the split folder and one level of subfolders
    std::string base = rel.substr(rel.rfind('/') + 1);
    if (IsDataFile(base, suffix)) found.emplace_back(std::move(base), std::move(o.key));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ListDataFiles(const DatasetLocation& where, const std::string& split,
                                                       const std::string& ext, int64_t count,
                                                       const std::string& count_key, const std::string& hint) {
  const std::string suffix = "." + ext;
  Found found;
  std::string under;  // where the files were looked for, for the error
  if (where.s3) {
    const std::string dir = S3Join(where.prefix, split) + "/";
    if (absl::Status s = ListBucket(where.s3, dir, suffix, found); !s.ok()) return s;
    under = absl::StrCat(" objects expected under s3://", where.s3->bucket, "/", dir, " (", where.s3->Describe(),
                         ")");
  } else {
    const std::string dir = where.folder->path() + "/" + split;
    if (absl::Status s = ListFolder(*where.folder, dir, true, suffix, found); !s.ok()) {
      if (s.code() != absl::StatusCode::kNotFound) return s;
      return absl::NotFoundError(absl::StrCat("dataset.data_folder: cannot list ", s.message(),
                                              " (generate the dataset with workflow.generate_data: true)", hint));
    }
    under = absl::StrCat(" files expected under '", dir, "'");
  }
  // The basenames are cut once, while listing: building two fs::paths per comparison made this ~0.7 ms of every
  // epoch's start for 128 files.
  std::sort(found.begin(), found.end());
  if (static_cast<int64_t>(found.size()) < count) {
    return absl::NotFoundError(absl::StrCat(count_key, ": ", count, " .", ext, under, ", found ", found.size(),
                                            " (generate them with workflow.generate_data: true)", hint));
  }
  std::vector<std::string> files;
  files.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) files.push_back(std::move(found[static_cast<size_t>(i)].second));
  return files;
}

namespace {

// The generator made its folders before writing (agent/generate_phase.cc): one it cannot find as it was was moved,
// removed or replaced since.
std::string NotInPlace(const std::string& path) {
  return absl::StrCat("dataset.data_folder: the folder '", path,
                      "' is no longer where it was (moved or replaced during generation); generation stopped and "
                      "removed its temporary files");
}

}  // namespace

absl::StatusOr<std::shared_ptr<const HeldFolder>> HeldFolder::Open(std::shared_ptr<const ConfinedDir> root,
                                                                   const ConfinedDir& data, const std::string& path) {
  const int fd = data.Open(path, O_RDONLY | O_DIRECTORY);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(NotInPlace(path), " (", data.Explain(path, err), ")"));
  }
  return std::shared_ptr<const HeldFolder>(new HeldFolder(std::move(root), path, fd, st.st_dev, st.st_ino));
}

HeldFolder::~HeldFolder() { ::close(fd_); }

absl::Status HeldFolder::StillInPlace() const {
  const int now = root_->Open(path_, O_PATH | O_DIRECTORY);
  struct stat st {};
  const bool same = now >= 0 && ::fstat(now, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
  if (now >= 0) ::close(now);
  if (same) return absl::OkStatus();
  return absl::FailedPreconditionError(NotInPlace(path_));
}

int HeldFolder::Unlink(const std::string& name) const { return ::unlinkat(fd_, name.c_str(), 0); }

}  // namespace dlio
