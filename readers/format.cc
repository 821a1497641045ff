#include "readers/format.h"

#include <set>
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "job/format_traits.h"
#include "job/workload_spec.h"
#include "readers/csv.h"
#include "readers/dtype.h"
#include "readers/hdf5.h"
#include "readers/image.h"
#include "readers/indexed_binary.h"
#include "readers/npy.h"
#include "storage/io_util.h"
#include "readers/npz.h"
#include "readers/parquet.h"
#include "readers/synthetic.h"
#include "readers/tfrecord.h"

namespace dlio {
namespace {

// Ranks above this are refused: the readers keep shapes in fixed arrays (no allocation per sample), and DLIO's
// samples are 2-D.
constexpr size_t kMaxSampleRank = 15;

std::string Dims(const std::vector<int64_t>& v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }

// The records_k datasets of a chunked format (hdf5; its row's `chunking`): gzip level, num_dset_per_record, max
// shape and chunk shape against the samples.
absl::Status ValidateChunked(const FormatOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (o.compression == "gzip" && (o.compression_level < 0 || o.compression_level > 9)) {
    return bad("dataset.compression_level: gzip level must be 0..9, got ", o.compression_level);
  }
  const int64_t k = o.hdf5_num_dset_per_record;
  if (k < 1 || o.sample_dims[0] % k != 0) {
    return bad("dataset.hdf5.num_dset_per_record: ", k, " must be >= 1 and divide the first sample dimension ",
               o.sample_dims[0], " (sample shape ", Dims(o.sample_dims), ")");
  }
  const std::vector<int64_t> rec = Hdf5RecordDims(o.sample_dims, k);
  std::vector<int64_t> shape = {o.samples_per_file};
  shape.insert(shape.end(), rec.begin(), rec.end());
  std::vector<int64_t> max_shape = shape;
  if (!o.hdf5_max_shape.empty()) {
    if (o.hdf5_max_shape.size() != rec.size()) {
      return bad("dataset.hdf5.max_shape: ", Dims(o.hdf5_max_shape), " must have ", rec.size(),
                 " entries (the dataset shape ", Dims(shape), " after its samples axis)");
    }
    for (size_t i = 0; i < rec.size(); ++i) {
      if (o.hdf5_max_shape[i] < rec[i]) {
        return bad("dataset.hdf5.max_shape: ", Dims(o.hdf5_max_shape), " is smaller than the dataset shape ",
                   Dims(shape), " after its samples axis");
      }
      max_shape[i + 1] = o.hdf5_max_shape[i];
    }
  }
  if (!o.hdf5_chunk_dims.empty()) {
    const std::string chunks = Dims(o.hdf5_chunk_dims);
    if (o.hdf5_chunk_dims.size() != shape.size()) {
      return bad("dataset.hdf5.chunk_dims: ", chunks, " must have ", shape.size(), " entries (the rank of the dataset ",
                 Dims(shape), ": samples, then the sample shape)");
    }
    for (size_t i = 0; i < shape.size(); ++i) {
      if (o.hdf5_chunk_dims[i] < 1 || o.hdf5_chunk_dims[i] > max_shape[i]) {
        return bad("dataset.hdf5.chunk_dims: ", chunks, " entry ", i, " must be in 1..", max_shape[i],
                   " (HDF5 chunks may not exceed the dataset's maximum shape ", Dims(max_shape), ")");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const std::string& name, const FormatOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (o.samples_per_file < 1) return bad("dataset.num_samples_per_file: must be >= 1, got ", o.samples_per_file);
  if (o.sample_dims.empty() || o.sample_dims.size() > kMaxSampleRank) {
    return bad("dataset: sample shape must have 1..", kMaxSampleRank, " dimensions, got ", o.sample_dims.size());
  }
  for (int64_t d : o.sample_dims) {
    if (d < 1) return bad("dataset: sample dimensions must be >= 1, got ", Dims(o.sample_dims));
  }
  const internal::DType* t = internal::FindDType(o.element_type);
  if (t == nullptr) {
    return bad("dataset.record_element_type: '", o.element_type, "' is not one of ", internal::DTypeNames());
  }
  if (o.transfer_size < 1) return bad("reader.transfer_size: must be >= 1, got ", o.transfer_size);
  const FormatTraits& traits = FormatTraitsOf(name);
  if (traits.image) {
    if (t->itemsize != 1 || t->kind != 'u') {
      return bad("dataset.record_element_type: ", name, " images are uint8 (DLIO forces it), got ", o.element_type);
    }
    if (o.sample_dims.size() != 2) {
      return bad("dataset.record_dims: ", name, " format needs 2 dimensions (height, width), got ",
                 Dims(o.sample_dims));
    }
    for (int64_t d : o.sample_dims) {
      if (d > traits.max_side) {
        return bad("dataset: ", name, " images are at most ", traits.max_side, " pixels a side, got ",
                   Dims(o.sample_dims));
      }
    }
  }
  if (o.io_engine == IoEngine::kS3) {
    if (!o.s3) return bad("storage.storage_type: s3 without a bucket configuration");
    if (absl::Status s = CheckFormatReadsObjects(name); !s.ok()) return s;
  } else if (o.io_engine != IoEngine::kPosix && !traits.io_engines) {
    return bad("dlio_ext.io_engine: ", IoEngineName(o.io_engine), " is not available for ", name, traits.no_engines);
  }
  // DLIO ignores compression for the formats without compressions.
  if (!traits.compressions.empty() && !traits.Compresses(o.compression)) {
    const std::string allowed = absl::StrJoin(traits.compressions, ", ");
    return traits.dlio_compresses_more
               ? bad("dataset.compression: '", o.compression, "' for ", name, " is not supported yet (allowed: ",
                     allowed, ")")
               : bad("dataset.compression: '", o.compression, "' is not supported for ", name, " (allowed: ",
                     allowed, ")");
  }
  if (traits.chunking) return ValidateChunked(o);
  return absl::OkStatus();  // DLIO ignores chunking for the other formats
}

size_t Digits(int64_t v) { return std::to_string(v).size(); }

std::string Padded(int64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

}  // namespace

// The factory of every format of the registry (job/format_traits.h); format_test checks they are the same set.
using FormatFactory = std::unique_ptr<Format> (*)(const FormatOptions&);
const std::vector<std::pair<std::string, FormatFactory>>& FormatFactories() {
  static const std::vector<std::pair<std::string, FormatFactory>> factories = {
      {"npz", NewNpzFormat},
      {"npy", NewNpyFormat},
      {"hdf5", NewHdf5Format},
      {"tfrecord", NewTfrecordFormat},
      {"csv", NewCsvFormat},
      {"jpeg", NewJpegFormat},
      {"png", NewPngFormat},
      {"indexed_binary", NewIndexedBinaryFormat},
      {"mmap_indexed_binary", NewMmapIndexedBinaryFormat},
      {"parquet", NewParquetFormat},
      {"synthetic", NewSyntheticFormat},
  };
  return factories;
}

absl::StatusOr<std::unique_ptr<Format>> MakeFormat(const std::string& name, const FormatOptions& options) {
  FormatFactory make = nullptr;
  for (const auto& [n, f] : FormatFactories()) {
    if (n == name && FindFormatTraits(name) != nullptr) make = f;
  }
  if (make == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("dataset.format: unknown format '", name, "' (allowed: ",
                                                   absl::StrJoin(FormatNames(), ", "), ")"));
  }
  if (absl::Status s = Validate(name, options); !s.ok()) return s;
  return make(options);
}

absl::Status SyncGeneratedFile(const std::string& path, const ConfinedDir* dir) {
  return internal::SyncFile(path, dir);
}

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

std::vector<std::string> DatasetFolders(const std::string& format, int64_t num_files_train,
                                        int64_t num_subfolders_train, int64_t num_files_eval,
                                        int64_t num_subfolders_eval) {
  std::vector<std::string> out = {"train", "valid"};
  auto subfolders = [&](const char* split, int64_t n) {
    for (int64_t i = 0; n > 1 && i < n; ++i) out.push_back(absl::StrCat(split, "/", Padded(i, Digits(n))));
  };
  subfolders("train", num_subfolders_train);
  subfolders("valid", num_subfolders_eval);
  if (FormatTraitsOf(format).index_folder) {  // tfrecord's DALI index files
    out.push_back("index");
    if (num_files_train > 0) out.push_back("index/train");
    if (num_files_eval > 0) out.push_back("index/valid");
  }
  return out;
}

std::vector<int64_t> Hdf5RecordDims(const std::vector<int64_t>& sample_dims, int64_t num_dset_per_record) {
  std::vector<int64_t> d = sample_dims;
  if (d.empty()) return d;
  if (num_dset_per_record > 1) d[0] /= num_dset_per_record;
  if (d[0] == 1) d.erase(d.begin());  // DLIO: `if dim1[0] == 1: dim1 = dim1[1:]`
  return d;
}

// h5py/_hl/filters.py guess_chunk: halve the axes round-robin until the chunk is under a target size that grows
// with the dataset (8 KiB..1 MiB), or within 50 % of it.
std::vector<int64_t> H5pyGuessChunk(const std::vector<int64_t>& shape, size_t itemsize) {
  constexpr double kBase = 16 * 1024, kMin = 8 * 1024, kMax = 1024 * 1024;  // CHUNK_BASE, CHUNK_MIN, CHUNK_MAX
  std::vector<double> chunks;
  for (int64_t v : shape) chunks.push_back(v != 0 ? static_cast<double>(v) : 1024.0);
  if (chunks.empty()) return {};
  auto product = [&] {
    double p = 1;
    for (double c : chunks) p *= c;
    return p;
  };
  const double dset_size = product() * static_cast<double>(itemsize);
  double target = kBase * std::pow(2.0, std::log10(dset_size / (1024.0 * 1024.0)));
  target = std::min(kMax, std::max(kMin, target));
  for (size_t idx = 0;; ++idx) {
    const double bytes = product() * static_cast<double>(itemsize);
    if ((bytes < target || std::abs(bytes - target) / target < 0.5) && bytes < kMax) break;
    if (product() == 1) break;
    double& c = chunks[idx % chunks.size()];
    c = std::ceil(c / 2.0);
  }
  std::vector<int64_t> out;
  for (double c : chunks) out.push_back(static_cast<int64_t>(c));
  return out;
}

size_t ElementSize(const std::string& element_type) {
  const internal::DType* t = internal::FindDType(element_type);
  return t == nullptr ? 0 : t->itemsize;
}

}  // namespace dlio
