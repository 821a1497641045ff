#include "agent/dataset_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "job/format_traits.h"
#include "readers/format.h"
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
  o.hdf5_replay = spec.hdf5_engine != "libhdf5";
  o.transfer_size = spec.transfer_size;
  o.parquet = spec.parquet;
  o.parquet_columns = ParquetFileColumns(spec);
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

// Folders or key prefixes listed at once (issue 27 item 3: listing parallel across the subfolders): on a bucket each
// subfolder is its own ListObjectsV2 chain, on a parallel file system its own readdir round trips.
constexpr size_t kListInFlight = 8;

// Runs `work` on `n` threads, the caller's one of them (at least one), and returns when every one has.
void RunWorkers(size_t n, const std::function<void()>& work) {
  std::vector<std::thread> workers;
  for (size_t w = 1; w < n; ++w) workers.emplace_back(work);
  work();
  for (std::thread& t : workers) t.join();
}

// Lists item k into `part`.
using Lister = std::function<absl::Status(size_t k, Found* part)>;

// Items [0, n) listed kListInFlight at a time: each worker thread makes its own Lister (`make`: e.g. with its own
// S3Client, reused for every item it takes), each item into its own part; the parts appended to `found` in order.
// The first failure in that order is the answer (as a sequential walk would give it).
absl::Status ListConcurrently(size_t n, const std::function<Lister()>& make, Found& found) {
  if (n == 0) return absl::OkStatus();
  std::vector<Found> parts(n);
  std::vector<absl::Status> status(n);
  std::atomic<size_t> next{0};
  RunWorkers(std::min(kListInFlight, n), [&] {
    const Lister list = make();
    for (size_t k = next.fetch_add(1); k < n; k = next.fetch_add(1)) status[k] = list(k, &parts[k]);
  });
  for (size_t k = 0; k < n; ++k) {
    if (!status[k].ok()) return status[k];
    found.insert(found.end(), std::make_move_iterator(parts[k].begin()), std::make_move_iterator(parts[k].end()));
  }
  return absl::OkStatus();
}

// The data files of `folder`, and the paths of its subfolders into `subfolders` when that is given (else they are
// skipped). No link is followed (base/confined_dir.h): a symbolic link here is refused, not silently skipped.
absl::Status ListFolder(const ConfinedDir& data_dir, const std::string& folder, const std::string& suffix,
                        Found& found, std::vector<std::string>* subfolders) {
  absl::StatusOr<std::vector<ConfinedDir::Entry>> entries = data_dir.List(folder);
  if (!entries.ok()) return entries.status();
  for (const ConfinedDir::Entry& e : *entries) {
    const std::string path = folder + "/" + e.name;
    if (e.type == ConfinedDir::Entry::Type::kLink) {
      return absl::PermissionDeniedError(absl::StrCat("dataset.data_folder: '", path, "' is a symbolic link; the "
                                                      "agent follows none below its data root (docs/fleet.md)"));
    }
    if (e.type == ConfinedDir::Entry::Type::kDir && subfolders != nullptr) {
      subfolders->push_back(path);
    } else if (e.type == ConfinedDir::Entry::Type::kFile && IsDataFile(e.name, suffix)) {
      found.emplace_back(e.name, path);
    }
  }
  return absl::OkStatus();
}

// The data files of `dir` and of its subfolders (one level down), the subfolders read concurrently; `*reads`: the
// folders read.
absl::Status ListFolderTree(const ConfinedDir& data_dir, const std::string& dir, const std::string& suffix,
                            Found& found, uint64_t* reads) {
  std::vector<std::string> subfolders;
  if (absl::Status s = ListFolder(data_dir, dir, suffix, found, &subfolders); !s.ok()) return s;
  *reads = 1 + subfolders.size();
  return ListConcurrently(
      subfolders.size(),
      [&]() -> Lister {
        return [&](size_t k, Found* part) { return ListFolder(data_dir, subfolders[k], suffix, *part, nullptr); };
      },
      found);
}

// The data objects of one listing level: its objects whose basename (after the last '/') is a data file.
void TakeDataObjects(std::vector<S3Object>& objects, const std::string& suffix, Found& found) {
  for (S3Object& o : objects) {
    std::string base = o.key.substr(o.key.rfind('/') + 1);
    if (IsDataFile(base, suffix)) found.emplace_back(std::move(base), std::move(o.key));
  }
}

// The data objects under `dir` (a key prefix ending in '/') and one level of "subfolders" below it: the level of
// `dir` with the delimiter '/', then each subfolder's level, kListInFlight at once (deeper prefixes are skipped).
absl::Status ListBucket(const std::shared_ptr<const S3Config>& config, const std::string& dir,
                        const std::string& suffix, Found& found) {
  absl::StatusOr<S3Listing> top = S3Client(config).ListLevel(dir);
  if (!top.ok()) return top.status();
  TakeDataObjects(top->objects, suffix, found);
  const std::vector<std::string>& subfolders = top->common_prefixes;
  return ListConcurrently(
      subfolders.size(),
      [&]() -> Lister {
        auto client = std::make_shared<S3Client>(config);  // this worker's connection, for every subfolder it takes
        return [&, client](size_t k, Found* part) -> absl::Status {
          absl::StatusOr<S3Listing> level = client->ListLevel(subfolders[k]);
          if (!level.ok()) return level.status();
          TakeDataObjects(level->objects, suffix, *part);
          return absl::OkStatus();
        };
      },
      found);
}

// The layout of a generated name: "<p>_<digits>_of_<N><suffix>" is "<p>_*_of_<N><suffix>"; any other name has
// the layout "" (files not named by a generator, e.g. a real dataset).
std::string LayoutOf(const std::string& base, const std::string& suffix) {
  const std::string stem = base.substr(0, base.size() - suffix.size());
  const size_t of = stem.rfind("_of_");
  const size_t us = of == std::string::npos || of == 0 ? std::string::npos : stem.rfind('_', of - 1);
  const auto digits = [](const std::string& t) {
    return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (us == std::string::npos || !digits(stem.substr(us + 1, of - us - 1)) || !digits(stem.substr(of + 4))) return "";
  return absl::StrCat(stem.substr(0, us), "_*_of_", stem.substr(of + 4), suffix);
}

// "img_*_of_8.npz: 8 files, other names: 2 files", in the order of the names.
std::string LayoutCounts(const std::map<std::string, int64_t>& layouts) {
  std::vector<std::string> parts;
  for (const auto& [layout, n] : layouts) {
    parts.push_back(absl::StrCat(layout.empty() ? "other names" : layout, ": ", n, n == 1 ? " file" : " files"));
  }
  return absl::StrJoin(parts, ", ");
}

// Issue 24 item 7: files of another `_of_N` layout in the folder were read with the job's own (a job of 4 files
// read 19.7 MB instead of 6.6 MB). One layout (or none): DLIO's listing, unchanged (its subset feature: the first
// `count` of a larger generated set). Several: the job's own layout when all `count` of its files are there, the
// others left out and said in `*ignored`; else refused, naming every layout.
absl::Status SelectLayout(Found& found, const std::string& prefix, const std::string& suffix, int64_t count,
                          const std::string& count_key, const std::string& place, std::string* ignored) {
  if (prefix.empty()) return absl::OkStatus();
  std::map<std::string, int64_t> layouts;
  for (const auto& f : found) ++layouts[LayoutOf(f.first, suffix)];
  if (layouts.size() <= 1) return absl::OkStatus();
  const std::string own = absl::StrCat(prefix, "_*_of_", count, suffix);
  const auto it = layouts.find(own);
  if (it == layouts.end() || it->second < count) {
    return absl::FailedPreconditionError(absl::StrCat(
        count_key, ": the data files", place, " are of several layouts (", LayoutCounts(layouts), ") and this job's ",
        own, " has ", it == layouts.end() ? 0 : it->second, " of its ", count,
        "; reading the first of mixed layouts would read other files than this job's: remove the other layouts or "
        "generate this job's files (workflow.generate_data: true)"));
  }
  layouts.erase(own);
  if (ignored != nullptr) {
    *ignored = absl::StrCat(count_key, ": read the ", count, " files of this job's layout ", own, place,
                            "; left out the files of other layouts (", LayoutCounts(layouts), ")");
  }
  found.erase(std::remove_if(found.begin(), found.end(),
                             [&](const auto& f) { return LayoutOf(f.first, suffix) != own; }),
              found.end());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ListDataFiles(const DatasetLocation& where, const std::string& split,
                                                       const std::string& ext, int64_t count,
                                                       const std::string& count_key, const std::string& hint,
                                                       const std::string& prefix, std::string* ignored,
                                                       uint64_t* folders_read) {
  const std::string suffix = "." + ext;
  uint64_t reads = 0;
  Found found;
  std::string under;  // where the files were looked for, for the error
  std::string place;  // the same, as " under FOLDER"
  if (where.s3) {
    const std::string dir = S3Join(where.prefix, split) + "/";
    if (absl::Status s = ListBucket(where.s3, dir, suffix, found); !s.ok()) return s;
    place = absl::StrCat(" under s3://", where.s3->bucket, "/", dir);
    under = absl::StrCat(" objects expected", place, " (", where.s3->Describe(), ")");
  } else {
    const std::string dir = where.folder->path() + "/" + split;
    const absl::Status s = ListFolderTree(*where.folder, dir, suffix, found, &reads);
    if (folders_read != nullptr) *folders_read = reads;
    if (!s.ok()) {
      if (s.code() != absl::StatusCode::kNotFound) return s;
      return absl::NotFoundError(absl::StrCat("dataset.data_folder: cannot list ", s.message(),
                                              " (generate the dataset with workflow.generate_data: true)", hint));
    }
    place = absl::StrCat(" under '", dir, "'");
    under = absl::StrCat(" files expected", place);
  }
  // The basenames are cut once, while listing: building two fs::paths per comparison made this ~0.7 ms of every
  // epoch's start for 128 files.
  std::sort(found.begin(), found.end());
  if (absl::Status s = SelectLayout(found, prefix, suffix, count, count_key, place, ignored); !s.ok()) return s;
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

// Whether data file `path` exists: HEAD (bucket) or a confined open (folder). NotFound for a missing one.
absl::Status CheckExists(const DatasetLocation& where, S3Client* client, const std::string& path) {
  if (client != nullptr) return client->Head(path).status();
  const int fd = where.folder->Open(path, O_PATH);
  if (fd >= 0) {
    ::close(fd);
    return absl::OkStatus();
  }
  const int err = errno;
  const std::string why = where.folder->Explain(path, err);
  if (err == ENOENT) return absl::NotFoundError(why);
  return absl::FailedPreconditionError(absl::StrCat("dataset.data_folder: ", why));
}

}  // namespace

namespace {

// HEADs in flight while a bucket's derived names are validated: one after another, a million objects' 1,003 HEADs
// took 2.2 s of the 2.6 s before the first batch (bench/RESULTS.md); 16 at once bring that under the 2 s target.
constexpr size_t kValidationInFlight = 16;

// The indices validation checks: 0, interval, 2 * interval, ... and the last.
std::vector<int64_t> ValidationIndices(int64_t count, int64_t interval) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < count; i = i == count - 1 ? count : std::min(i + interval, count - 1)) idx.push_back(i);
  return idx;
}

// The first (lowest index) of `idx` whose check fails, with its status; -1 when all exist. A bucket's are checked
// kValidationInFlight at a time, each worker with its own client, taking indices in order and skipping those past a
// failure already found, so the answer is the one a sequential walk gives.
std::pair<int64_t, absl::Status> FirstMissing(const DatasetLocation& where, const DataFileNames& files,
                                              const std::vector<int64_t>& idx) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> first_bad{idx.size()};
  std::vector<absl::Status> status(idx.size());
  auto work = [&] {
    std::unique_ptr<S3Client> client = where.s3 ? std::make_unique<S3Client>(where.s3) : nullptr;
    std::string buf;
    for (size_t k = next.fetch_add(1); k < idx.size() && k < first_bad.load(); k = next.fetch_add(1)) {
      status[k] = CheckExists(where, client.get(), files.Name(idx[k], &buf));
      if (status[k].ok()) continue;
      for (size_t seen = first_bad.load(); k < seen && !first_bad.compare_exchange_weak(seen, k);) {
      }
    }
  };
  RunWorkers(where.s3 ? std::min(kValidationInFlight, idx.size()) : 1, work);
  const size_t bad = first_bad.load();
  if (bad >= idx.size()) return {-1, absl::OkStatus()};
  return {idx[bad], status[bad]};
}

}  // namespace

absl::StatusOr<DataFileNames> DeriveDataFiles(const DatasetLocation& where, const std::string& split,
                                              const std::string& ext, int64_t count, int64_t subfolders,
                                              const std::string& prefix, int64_t interval,
                                              const std::string& count_key) {
  DataFileNames files = where.s3 ? DataFileNames::Derived(where.prefix, true, split, prefix, count, subfolders, ext)
                                 : DataFileNames::Derived(where.folder->path(), false, split, prefix, count,
                                                          subfolders, ext);
  if (interval <= 0 || count == 0) return files;
  const auto [missing, s] = FirstMissing(where, files, ValidationIndices(count, interval));
  if (missing < 0) return files;
  if (s.code() != absl::StatusCode::kNotFound) return s;
  std::string buf;
  const std::string& name = files.Name(missing, &buf);
  const std::string what = where.s3 ? absl::StrCat("object s3://", where.s3->bucket, "/", name, " (",
                                                   where.s3->Describe(), ")")
                                    : absl::StrCat("file '", name, "'");
  return absl::NotFoundError(absl::StrCat(
      "dataset.skip_listing: ", what, " does not exist; with skip_listing the names are derived from "
      "dataset.file_prefix, ", count_key, " and the subfolders (DLIO's naming), not listed: generate the dataset "
      "(workflow.generate_data: true) or set dataset.skip_listing: false to list it"));
}

DataFileNames CompactNames(std::vector<std::string> names, const DatasetLocation& where, const std::string& split,
                           const std::string& ext, int64_t subfolders, const std::string& prefix) {
  if (names.empty() || prefix.empty()) return names;
  const int64_t count = static_cast<int64_t>(names.size());
  DataFileNames derived =
      where.s3 ? DataFileNames::Derived(where.prefix, true, split, prefix, count, subfolders, ext)
               : DataFileNames::Derived(where.folder->path(), false, split, prefix, count, subfolders, ext);
  std::string buf;
  for (int64_t i = 0; i < count; ++i) {
    if (derived.Name(i, &buf) != names[static_cast<size_t>(i)]) return names;
  }
  return derived;
}

absl::StatusOr<DataFileNames> FindDataFiles(const DatasetLocation& where, const std::string& split,
                                            const std::string& ext, int64_t count, DataFileNaming naming,
                                            const std::string& count_key, const std::string& hint,
                                            const std::string& prefix, std::string* ignored) {
  if (naming.derive) {
    if (naming.list_if_other_names && count > 0) {
      const std::string rel = DataFileRelPath(split, prefix, 0, count, naming.subfolders, ext);
      std::unique_ptr<S3Client> client = where.s3 ? std::make_unique<S3Client>(where.s3) : nullptr;
      const absl::Status first = CheckExists(
          where, client.get(), where.s3 ? S3Join(where.prefix, rel) : absl::StrCat(where.folder->path(), "/", rel));
      if (first.code() == absl::StatusCode::kNotFound) {
        naming.derive = false;  // listed below
      }
    }
    if (naming.derive) {
      return DeriveDataFiles(where, split, ext, count, naming.subfolders, prefix, naming.interval, count_key);
    }
  }
  absl::StatusOr<std::vector<std::string>> listed = ListDataFiles(where, split, ext, count, count_key, hint, prefix,
                                                                  ignored);
  if (!listed.ok()) return listed.status();
  return CompactNames(std::move(*listed), where, split, ext, naming.subfolders, prefix);
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
