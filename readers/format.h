// Format: one data format (DLIO's npz, npy, hdf5, tfrecord, csv, jpeg, png, indexed_binary, mmap_indexed_binary,
// synthetic) behind one interface: write a file, read samples back.
//
// Contract:
//  - Layout is DLIO's (../shared/reference/dlio.md §2.1 and ../shared/testdata/dlio-generated/README.md): file names
//    `<prefix>_<i>_of_<N>.<ext>` (i zero-padded to the digits of N) under `<data_folder>/train/` (round-robin
//    subfolders when num_subfolders_train > 1); array names, dtypes and shapes as DLIO writes them (each format's
//    header says which). A sample is `sample_dims` elements of `element_type` (DLIO's record_dims and
//    record_element_type; {d, d} uint8 by default).
//  - Generate() builds the file with the real library (libzip, libhdf5, libjpeg-turbo, libpng, our TFRecord framing
//    over ISA-L CRC32C, plain text for csv) and writes it to `path` exactly, with our own accounted pwrite()s of up
//    to 8 MiB (formats built in memory first peak at ~2x the file); the caller writes to a temporary name and
//    renames. Files that belong to a data file (indexed_binary's `.off.idx`/`.sz.idx`, the tfrecord index) are
//    written at CompanionPaths(path) by the same call; the caller renames them too.
//  - Reading follows DLIO's I/O per format (§2.3): whole-file reads for npz, npy, csv, jpeg and png (re-read per
//    sample in on_demand mode), hdf5 partial reads of one sample's hyperslab, indexed_binary one pread of exactly the
//    sample, mmap_indexed_binary a page-touching read of the sample's mapped bytes, tfrecord sequential streaming in
//    transfer_size pieces, synthetic no I/O at all.
//    The caller makes a generated file durable with SyncGeneratedFile() (fdatasync) before renaming it.
//  - Accounting (the caller must not count these again): every read/write syscall on a data file (or its companion
//    files) is one IoStats::AddOp(bytes, ns); each file a reader opens, and each file Generate() completes
//    (companions included), is one AddFile(); each sample delivered by ReadSample()/Next() or written by Generate()
//    is counted with AddSamples(). libhdf5 reads through our virtual file driver, so its reads (metadata included)
//    are counted as the others' (see hdf5.h); mmap_indexed_binary counts one op of the sample's bytes per sample (the
//    page faults are the I/O, see indexed_binary.h).
//  - npz, npy, csv, images and tfrecord read through a StorageReader (storage.h: posix, odirect or io_uring, per
//    FormatOptions::io_engine); hdf5 through libhdf5 over a StorageReader (hdf5_vfd.h), indexed_binary with
//    pread (posix only).
//  - Object storage (FormatOptions::s3 set, io_engine kS3): paths are object keys; every format but
//    mmap_indexed_binary reads through the s3 StorageReader (indexed_binary too; hdf5 through our HDF5 driver over
//    it, hdf5_vfd.h) and Generate() PUTs its objects through FileWriter (docs/object-storage.md).
//  - Hot path: a SampleReader/StreamReader belongs to one loader thread; it reuses its buffers (no allocation per
//    sample once warmed up) and takes no lock of ours.
// Errors: absl::Status whose message names the file and what is wrong.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/confined_dir.h"
#include "job/format_traits.h"
#include "job/parquet_spec.h"
#include "results/io_stats.h"
#include "storage/storage.h"

namespace dlio {

struct FormatOptions {
  int64_t samples_per_file = 1;
  // Sample shape in elements (DLIO's record_dims; without them {d, d} with d = floor(sqrt(record_length_bytes))).
  std::vector<int64_t> sample_dims;
  // numpy name of the element type (DLIO's record_element_type): uint8, int8, uint16, int16, uint32, int32, uint64,
  // int64, float16, float32, float64. jpeg and png take uint8 only (DLIO forces it; the loader does too).
  std::string element_type = "uint8";
  // hdf5: chunk shape of every records_k dataset (its rank: 1 + that of Hdf5RecordDims()); empty = contiguous, or
  // h5py's guess_chunk() when a filter or max shape needs chunks (h5py does the same).
  std::vector<int64_t> hdf5_chunk_dims;
  int64_t hdf5_num_dset_per_record = 1;  // hdf5: records_0..k-1 (DLIO's hdf5.num_dset_per_record)
  std::vector<int64_t> hdf5_max_shape;   // hdf5: maxshape after the samples axis (DLIO's hdf5.max_shape); empty = fixed
  std::string compression = "none";      // hdf5: none | gzip | szip | lzf; npz: none | zip; ignored by the others
  int compression_level = 4;             // gzip level
  // hdf5: dlio_ext.hdf5_engine: replay (true: libhdf5's recorded reads replayed for a file's later samples,
  // readers/hdf5_replay.h) or libhdf5 (false: libhdf5 reads every sample). The same reads either way.
  bool hdf5_replay = true;
  int64_t transfer_size = 262144;        // tfrecord read size
  // tfrecord: folder of DLIO's DALI index files (`<data_folder>/index/train`); a data file `.../<name>` gets
  // `<dir>/<name>.idx` with one "offset length" line per record. Empty = no index.
  std::string tfrecord_index_dir;
  // parquet: the columns of a row (job/parquet_spec.h ParquetFileColumns) and the layout, read-mode, selection and
  // decode keys (ParquetSpec; its `columns` is not used here: parquet_columns is the resolved list).
  std::vector<ParquetColumn> parquet_columns;
  ParquetSpec parquet;
  // How npz, npy, csv, jpeg, png and tfrecord read (storage.h); hdf5 reads through libhdf5, indexed_binary with
  // pread (posix only).
  IoEngine io_engine = IoEngine::kPosix;
  // Object storage (storage.storage_type: s3): set together with io_engine = kS3; paths are then object keys of
  // this bucket (storage/s3/client.h) for reading and for Generate().
  std::shared_ptr<const S3Config> s3;
  StorageTarget target() const { return StorageTarget{io_engine, s3, dir}; }
  // reader.read_type: memory. Whole-file formats (npz, npy, csv, jpeg, png) keep the file a loader thread read
  // last and serve its further samples from memory; false (on_demand) re-reads the file for every sample.
  bool read_in_memory = false;
  // The folder every data file is opened, created and renamed in (the job's data folder, resolved below the agent's
  // data root; base/confined_dir.h): paths given to Generate(), ReadSample() and Open() must lie below it, and
  // no symbolic link is followed. Null (tools, format tests): plain open(2) of the path.
  std::shared_ptr<const ConfinedDir> dir;
};

// One per loader thread, index-mode reads: ReadSample(path, i) reads sample i of the file at path.
class SampleReader {
 public:
  virtual ~SampleReader() = default;
  // Returns the number of sample bytes delivered (the payload, not counting headers).
  virtual absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) = 0;
  // The bytes of the sample the last successful ReadSample() delivered, C order (as DLIO slices it), valid until
  // the next call on this reader. For checks and tests: it may copy (npz gathers its strided sample here).
  virtual std::string_view last_sample() const = 0;
};

// One per loader thread, stream-mode reads (tfrecord): Open a file, then Next() record by record.
class StreamReader {
 public:
  virtual ~StreamReader() = default;
  virtual absl::Status Open(const std::string& path, IoStats& stats) = 0;
  // Reads the next record; returns false at the end of the file.
  virtual absl::StatusOr<bool> Next(IoStats& stats) = 0;
  // Reads the next record without delivering it: its reads are counted, but it is no sample (DLIO's pipeline reads
  // records it then drops: another rank's under record sharding, a pass's drop-last remainder). False at the end.
  virtual absl::StatusOr<bool> Skip(IoStats& stats) = 0;
  // The record the last Next() returned (for tfrecord: the serialized tf.train.Example), valid until the next
  // Next()/Open()/Close().
  virtual std::string_view last_record() const = 0;
  virtual void Close() = 0;
};

class Format {
 public:
  virtual ~Format() = default;
  virtual const char* name() const = 0;
  // File extension without the dot (DLIO uses the format name: "npz", "hdf5", "mmap_indexed_binary", ...).
  virtual const char* extension() const = 0;
  // True for formats read by streaming (tfrecord).
  virtual bool streaming() const { return false; }
  // Writes one complete file with options().samples_per_file samples of random bytes; accounts the written bytes
  // and write calls in `stats`. `seed` makes the bytes reproducible.
  virtual absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const = 0;
  // The files Generate(data_path) writes besides the data file (indexed_binary's index files, the tfrecord index).
  virtual std::vector<std::string> CompanionPaths(const std::string& data_path) const { return {}; }
  virtual std::unique_ptr<SampleReader> NewSampleReader() const = 0;
  virtual std::unique_ptr<StreamReader> NewStreamReader() const { return nullptr; }

  const FormatOptions& options() const { return options_; }

 protected:
  explicit Format(FormatOptions o) : options_(std::move(o)) {}
  FormatOptions options_;
};

// Waits until a file Generate() wrote is on the storage (fdatasync). Errors name the file.
absl::Status SyncGeneratedFile(const std::string& path, const ConfinedDir* dir = nullptr);

// The format names MakeFormat() knows: job/format_traits.h FormatNames(), the one registry.
// The factory of each (name, make), the same names as the registry's (format_test checks it).
const std::vector<std::pair<std::string, std::unique_ptr<Format> (*)(const FormatOptions&)>>& FormatFactories();

// Unknown names: InvalidArgument naming the allowed ones. Also InvalidArgument for options the format cannot honour
// (samples_per_file < 1, empty or non-positive sample_dims, an unknown element type, images that are not 2-D uint8,
// hdf5 chunk dims or max shape of the wrong rank or extent, num_dset_per_record not dividing sample_dims[0], a
// compression the format does not have, transfer_size < 1).
absl::StatusOr<std::unique_ptr<Format>> MakeFormat(const std::string& name, const FormatOptions& options);

// Shape of one sample inside each records_k dataset of an hdf5 file, as DLIO's generator derives it: sample_dims
// with the first axis divided by num_dset_per_record, then a leading axis of 1 dropped. Its dataset has shape
// (samples_per_file, *this).
std::vector<int64_t> Hdf5RecordDims(const std::vector<int64_t>& sample_dims, int64_t num_dset_per_record);
// h5py's guess_chunk(shape, maxshape, itemsize) (h5py/_hl/filters.py), the chunk shape h5py picks when a filter or
// a max shape needs chunks and none are given.
std::vector<int64_t> H5pyGuessChunk(const std::vector<int64_t>& shape, size_t itemsize);
// Bytes of one element of a known numpy type name; 0 for an unknown name.
size_t ElementSize(const std::string& element_type);

// DLIO's file name for file `index` of `total`: "<prefix>_<index padded to digits(total)>_of_<total>.<ext>".
std::string DataFileName(const std::string& prefix, int64_t index, int64_t total, const std::string& ext);
// Path of data file `index` relative to the data folder: "train/[<subfolder>/]<name>". DLIO puts file i in
// subfolder i % num_subfolders (zero-padded to the digits of num_subfolders) when num_subfolders > 1.
std::string DataFileRelPath(const std::string& split, const std::string& prefix, int64_t index, int64_t total,
                            int64_t num_subfolders, const std::string& ext);

// The folders DLIO's generator makes under the data folder (its data_generator.py and tf_generator.py), relative to
// it, parents first: "train" and "valid" always (DLIO's main.py lists both before training and stops on a missing
// one, even with no evaluation files), "train/<s>" for every s < num_subfolders_train when it is > 1 (empty ones
// too) and likewise "valid/<s>", and for tfrecord "index/train" and, with evaluation files, "index/valid" (the DALI
// index files, flat even with subfolders).
std::vector<std::string> DatasetFolders(const std::string& format, int64_t num_files_train,
                                        int64_t num_subfolders_train, int64_t num_files_eval,
                                        int64_t num_subfolders_eval);

}  // namespace dlio
