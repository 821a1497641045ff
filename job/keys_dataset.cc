// The rows of the key table (key_table.h) for the dataset section.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "base/text.h"
#include "job/format_traits.h"
#include "job/key_table.h"

namespace dlio::workload_internal {
namespace {

const std::vector<std::string> kDlioOnlyFormats = {"hdf5_opt"};
const std::vector<std::string> kElementTypes = {"uint8",  "int8",  "uint16",  "int16",   "uint32", "int32",
                                                "uint64", "int64", "float16", "float32", "float64"};

// The formats of the registry for the key's note: "npz, ..., synthetic (placeholder files, no reads)".
std::string FormatList() {
  std::vector<std::string> names;
  for (const FormatTraits& f : Formats()) {
    names.push_back(*f.note == '\0' ? std::string(f.name) : fmt::format("{} ({})", f.name, f.note));
  }
  return absl::StrJoin(names, ", ");
}

// Every compression some format writes, the formats with the most choices first: "none, gzip, szip, lzf, zip".
std::vector<std::string> Compressions() {
  std::vector<std::string> all;
  for (const FormatTraits* f : CompressingFormats()) {
    for (const std::string& c : f->compressions) {
      if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
    }
  }
  return all;
}

}  // namespace

// Data table: the dataset section's HDF5 layout and compression rows (AddDatasetKeys adds them last).
void AddDatasetLayoutKeys(std::vector<KeyInfo>& v);

void AddListingKeys(std::vector<KeyInfo>& v);

// Data table: the dataset section.
void AddDatasetKeys(std::vector<KeyInfo>& v) {
  v.push_back(StringKey("dataset.data_folder", &WorkloadSpec::data_folder, false,
                        "root of train/ (and valid/); resolved under the agent's --data-root"));
  v.push_back(Custom(
      "dataset.format", KeyStatus::kImplemented,
      FormatList() +
          "; hdf5_opt has no generator in DLIO either. mmap_indexed_binary warns: our reads touch every page of a "
          "sample, DLIO's only slice a memmap view",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, FormatNames(), kDlioOnlyFormats, "format", &s.format);
      },
      [](const WorkloadSpec& s) { return Quote(s.format); }));
  v.push_back(IntKey("dataset.num_files_train", &WorkloadSpec::num_files_train, 1, kMaxFiles, "training files"));
  v.push_back(IntKey("dataset.num_files_eval", &WorkloadSpec::num_files_eval, 0, kMaxFiles,
                     "evaluation files under valid/ (generated with the training files)"));
  v.push_back(IntKey("dataset.num_samples_per_file", &WorkloadSpec::num_samples_per_file, 1, kMaxSamples, "samples per file"));
  v.push_back(NumberKey("dataset.record_length_bytes", &WorkloadSpec::record_length_bytes, 0, true, kMaxRecordBytes,
                        "mean sample size; floats accepted (resnet50: 114660.07); a sample is floor(sqrt(L))^2 "
                        "uint8 bytes; legacy alias `dataset.record_length`"));
  {
    KeyInfo k = NumberKey("dataset.record_length_bytes_stdev", &WorkloadSpec::record_length_bytes_stdev, 0, false, kMaxRecordBytes,
                          "size spread of the byte size, drawn once per file (warns: DLIO spreads both dimensions "
                          "and realises ~0.71x of it)");
    k.status = KeyStatus::kImplementedDiffers;
    k.differs = [](const YAML::Node&, const WorkloadSpec& s) -> std::string {
      if (s.record_length_bytes_stdev <= 0) return "";
      return fmt::format("{} bytes spreads the sample byte size here; DLIO spreads each of the two sample dimensions "
                         "by stdev/(2*sqrt(L)), which realises only about 0.71x of it in bytes",
                         FormatDouble(s.record_length_bytes_stdev));
    };
    v.push_back(k);
  }
  v.push_back(Label("dataset.record_length_bytes_resize", "0", "in-memory tensor size after decode; no I/O"));
  v.push_back(Custom(
      "dataset.record_dims", KeyStatus::kImplemented,
      "explicit sample shape; record_length_bytes becomes prod(record_dims) x element size (as DLIO derives it); "
      "cannot be combined with record_length_bytes_stdev; jpeg/png need 2 dimensions",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseDims(n, p, "a list of integers in [1, 2147483647] (the sample shape) or []", &s.record_dims);
      },
      [](const WorkloadSpec& s) { return DimsText(s.record_dims); }));
  v.push_back(Custom(
      "dataset.record_element_type", KeyStatus::kImplemented,
      "numpy dtype of the samples: uint8, int8, uint16, int16, uint32, int32, uint64, int64, float16, float32, "
      "float64; jpeg and png are forced to uint8 (as DLIO does, with a warning)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, kElementTypes, {}, "element type", &s.record_element_type);
      },
      [](const WorkloadSpec& s) { return Quote(s.record_element_type); }));
  v.push_back(Label("dataset.record_element_bytes", "4", "parsed, then overwritten from the dtype by DLIO"));
  v.push_back(IntKey("dataset.num_subfolders_train", &WorkloadSpec::num_subfolders_train, 0, kMaxFiles,
                     "files round-robin into zero-padded subfolders when > 1"));
  v.push_back(IntKey("dataset.num_subfolders_eval", &WorkloadSpec::num_subfolders_eval, 0, kMaxFiles,
                     "eval files round-robin into zero-padded subfolders when > 1"));
  {
    KeyInfo k = StringKey("dataset.file_prefix", &WorkloadSpec::file_prefix, false,
                          "file names `{prefix}_{i}_of_{N}.{format}`: a name, not a path (no `/`, not `.` or `..`)");
    k.apply = [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
      if (!n.IsScalar() || n.Scalar().empty()) return MustBe(p, "a non-empty file name prefix", n);
      const std::string& v = n.Scalar();
      if (absl::Status t = CheckKeyText(v, p, kMaxNameBytes); !t.ok()) return t;
      if (absl::StrContains(v, "/") || v == "." || v == "..") {
        return MustBe(p, "a file name prefix without '/' (data files are named {prefix}_{i}_of_{N}.{format} inside "
                         "the data folder)", n);
      }
      s.file_prefix = v;
      return absl::OkStatus();
    };
    v.push_back(k);
  }
  AddDatasetLayoutKeys(v);
  AddListingKeys(v);
}

// Data table: how the agents find the dataset's files (the fork's skip_listing; issue 27 item 3).
void AddListingKeys(std::vector<KeyInfo>& v) {
  v.push_back(Custom(
      "dataset.skip_listing", KeyStatus::kImplemented,
      "true: every agent derives the names of the files or objects from file_prefix, the count and the subfolders "
      "(DLIO's naming) instead of listing them, and checks every listing_validation_interval-th by HEAD or stat; "
      "false: listed; unset: derived from 100,000 files of a split on, listed below (--explain says which)",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        bool b = false;
        if (n.IsNull()) {
          s.skip_listing = -1;
        } else if (ParseBool(n, &b)) {
          s.skip_listing = b ? 1 : 0;
        } else {
          return MustBe(p, "true, false or null (null: by the dataset's size)", n);
        }
        return absl::OkStatus();
      },
      [](const WorkloadSpec& s) {
        return std::string(s.skip_listing < 0 ? "~" : s.skip_listing == 1 ? "true" : "false");
      }));
  v.push_back(IntKey("dataset.listing_validation_interval", &WorkloadSpec::listing_validation_interval, 0, kMaxFiles,
                     "with skip_listing: the first name, every N-th after it and the last are checked by HEAD "
                     "(objects) or stat (files); 0 = none"));
}

// Data table: the dataset section's HDF5 layout and compression rows.
void AddDatasetLayoutKeys(std::vector<KeyInfo>& v) {
  v.push_back(Custom(
      "dataset.hdf5.chunk_dims", KeyStatus::kImplemented,
      "HDF5 chunk shape of each records_k dataset [samples, *sample axes]; [] = contiguous (or h5py's guess when a "
      "filter or max_shape needs chunks); ignored by other formats",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseDims(n, p, "a list of integers in [1, 2147483647] ([samples, *sample shape]) or []",
                         &s.hdf5_chunk_dims);
      },
      [](const WorkloadSpec& s) { return DimsText(s.hdf5_chunk_dims); }));
  v.push_back(IntKey("dataset.hdf5.num_dset_per_record", &WorkloadSpec::hdf5_num_dset_per_record, 1, 4096,
                     "splits each sample over datasets records_0..k-1 along its first axis, which k must divide"));
  v.push_back(Custom(
      "dataset.hdf5.max_shape", KeyStatus::kImplemented,
      "maximum shape of records_k after the samples axis (resizable datasets; chunked as h5py does); [] = fixed",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseDims(n, p, "a list of integers in [1, 2147483647] or []", &s.hdf5_max_shape);
      },
      [](const WorkloadSpec& s) { return DimsText(s.hdf5_max_shape); }));
  v.push_back(Custom(
      "dataset.compression", KeyStatus::kImplemented,
      "hdf5: none, gzip, szip (libhdf5's; not in DLIO's enum), lzf (Debian's hdf5-plugin-lzf); npz: none or zip "
      "(numpy.savez_compressed; warns: DLIO's enum compare never switches it on); csv: none or gzip (zlib; files "
      "named <name>.csv.gz as DLIO's generator names them, which DLIO's own reader does not list); DLIO's other csv "
      "compressions (bz2, zip, xz) are not supported yet; parquet: none, snappy, zstd, lz4 (LZ4_RAW) or gzip, the "
      "codec of every page",
      [](const YAML::Node& n, const std::string& p, WorkloadSpec& s) {
        return ParseChoice(n, p, Compressions(), {"bz2", "xz"}, "compression", &s.compression);
      },
      [](const WorkloadSpec& s) { return Quote(s.compression); }));
  v.push_back(IntKey("dataset.compression_level", &WorkloadSpec::compression_level, 0, 9, "gzip level"));
  KeyInfo chunking = BoolKey("dataset.enable_chunking", &WorkloadSpec::enable_chunking,
                             "HDF5 chunking from chunk_size when hdf5.chunk_dims is empty (warns: DLIO parses it "
                             "and ignores it)");
  chunking.status = KeyStatus::kImplementedDiffers;
  v.push_back(chunking);
  KeyInfo chunk_size = IntKey("dataset.chunk_size", &WorkloadSpec::chunk_size, 0, kMaxRecordBytes,
                              "bytes per HDF5 chunk with enable_chunking: (1, c, c) with c = ceil(sqrt(chunk_size)) "
                              "for 2-D uint8 samples, DLIO's meaning before hdf5.chunk_dims (warns: DLIO ignores it)");
  chunk_size.status = KeyStatus::kImplementedDiffers;
  v.push_back(chunk_size);
  v.push_back(Label("dataset.generation_buffer_size", "2147483648", "indexed_binary generation only"));
  v.push_back(NotYet("dataset.keep_files", "true", Gate::kNone, "false makes DLIO delete data_folder at the end"));
  AddParquetDatasetKeys(v);
}

}  // namespace dlio::workload_internal
