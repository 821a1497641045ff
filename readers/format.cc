#include "readers/format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "readers/hdf5.h"
#include "readers/io_util.h"
#include "readers/npz.h"
#include "readers/tfrecord.h"

namespace dlio {
namespace {

// Ranks above this are refused: the readers keep shapes in fixed arrays (no allocation per sample), and DLIO's
// samples are 2-D.
constexpr size_t kMaxSampleRank = 15;

absl::Status Validate(const std::string& name, const FormatOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (o.samples_per_file < 1) return bad("dataset.num_samples_per_file: must be >= 1, got ", o.samples_per_file);
  if (o.sample_dims.empty() || o.sample_dims.size() > kMaxSampleRank) {
    return bad("dataset: sample shape must have 1..", kMaxSampleRank, " dimensions, got ", o.sample_dims.size());
  }
  for (int64_t d : o.sample_dims) {
    if (d < 1) return bad("dataset: sample dimensions must be >= 1, got [", absl::StrJoin(o.sample_dims, ", "), "]");
  }
  if (o.transfer_size < 1) return bad("reader.transfer_size: must be >= 1, got ", o.transfer_size);
  if (name != "hdf5") return absl::OkStatus();  // DLIO ignores compression and chunking for npz and tfrecord

  if (o.io_engine != IoEngine::kPosix) {
    return bad("dlio_ext.io_engine: ", IoEngineName(o.io_engine),
               " is not available for hdf5 (libhdf5 does its own reads; use posix)");
  }

  if (o.compression != "none" && o.compression != "gzip") {
    return bad("dataset.compression: '", o.compression, "' is not supported for hdf5 (allowed: none, gzip)");
  }
  if (o.compression == "gzip" && (o.compression_level < 0 || o.compression_level > 9)) {
    return bad("dataset.compression_level: gzip level must be 0..9, got ", o.compression_level);
  }
  if (!o.hdf5_chunk_dims.empty()) {
    const std::string chunks = absl::StrCat("[", absl::StrJoin(o.hdf5_chunk_dims, ", "), "]");
    if (o.hdf5_chunk_dims.size() != o.sample_dims.size() + 1) {
      return bad("dataset.hdf5.chunk_dims: ", chunks, " must have ", o.sample_dims.size() + 1,
                 " entries (samples, then the sample shape)");
    }
    for (size_t i = 0; i < o.hdf5_chunk_dims.size(); ++i) {
      const int64_t limit = i == 0 ? o.samples_per_file : o.sample_dims[i - 1];
      if (o.hdf5_chunk_dims[i] < 1 || o.hdf5_chunk_dims[i] > limit) {
        return bad("dataset.hdf5.chunk_dims: ", chunks, " entry ", i, " must be in 1..", limit,
                   " (HDF5 chunks may not exceed a fixed-size dataset)");
      }
    }
  }
  return absl::OkStatus();
}

size_t Digits(int64_t v) { return std::to_string(v).size(); }

std::string Padded(int64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Format>> MakeFormat(const std::string& name, const FormatOptions& options) {
  std::unique_ptr<Format> (*make)(const FormatOptions&) = nullptr;
  if (name == "npz") make = NewNpzFormat;
  if (name == "hdf5") make = NewHdf5Format;
  if (name == "tfrecord") make = NewTfrecordFormat;
  if (make == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset.format: unknown format '", name, "' (allowed: npz, hdf5, tfrecord)"));
  }
  if (absl::Status s = Validate(name, options); !s.ok()) return s;
  return make(options);
}

absl::Status SyncGeneratedFile(const std::string& path) { return internal::SyncFile(path); }

// DLIO data_generator.py: "{prefix}_{add_padding(i, len(str(N)))}_of_{N}.{format}".
std::string DataFileName(const std::string& prefix, int64_t index, int64_t total, const std::string& ext) {
  return absl::StrCat(prefix, "_", Padded(index, Digits(total)), "_of_", total, ".", ext);
}

// DLIO data_generator.py: "{split}/{add_padding(i % S, len(str(S)))}/<name>" when S = num_subfolders > 1.
std::string DataFileRelPath(const std::string& split, const std::string& prefix, int64_t index, int64_t total,
                            int64_t num_subfolders, const std::string& ext) {
  std::string name = DataFileName(prefix, index, total, ext);
  if (num_subfolders > 1) {
    return absl::StrCat(split, "/", Padded(index % num_subfolders, Digits(num_subfolders)), "/", name);
  }
  return absl::StrCat(split, "/", name);
}

}  // namespace dlio
