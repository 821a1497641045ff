// Format: one data format (npz, hdf5, tfrecord, ...) behind one interface: write a file, read samples back.
//
// Contract:
//  - Layout is DLIO's (../shared/reference/dlio.md §2.1 and ../shared/testdata/dlio-generated/README.md): file names
//    `<prefix>_<i>_of_<N>.<ext>` (i zero-padded to the digits of N) under `<data_folder>/train/` (round-robin
//    subfolders when num_subfolders_train > 1); npz members `x.npy` (uint8, shape (d, d, nspf), sample on the last
//    axis) and `y.npy` (int64 zeros); hdf5 datasets `records_0` (uint8, (nspf, d, d)) and `labels`; tfrecord
//    `tf.train.Example` records with features `image` (bytes) and `size` (int64), framed with masked CRC32C.
//  - Generate() builds the file with the real library (libzip, libhdf5, our TFRecord framing over ISA-L CRC32C)
//    and writes it to `path` exactly, with our own accounted pwrite()s of up to 8 MiB, and starts its writeback
//    (npz and hdf5 are built in memory first: npz in a per-thread buffer of ~1x the file, reused; hdf5 ~2x). The
//    caller writes to a temporary name, makes the file durable with SyncGeneratedFile() (fdatasync), then renames.
//  - Reading follows DLIO's I/O per format (§2.3): npz whole-file reads (re-read per sample in on_demand mode),
//    hdf5 partial reads of one sample's hyperslab, tfrecord sequential streaming in transfer_size pieces.
//  - Accounting (the caller must not count these again): every read/write syscall on a data file is one
//    IoStats::AddOp(bytes, ns); each file a reader opens, and each file Generate() completes, is one AddFile();
//    each sample delivered by ReadSample()/Next() or written by Generate() is counted with AddSamples(). HDF5 does
//    its file I/O inside the library: there one H5Dread is one op of the sample's payload bytes (see hdf5.h).
//  - npz and tfrecord read through a StorageReader (storage.h: posix, odirect or io_uring, per
//    FormatOptions::io_engine), which does their accounting; hdf5 reads through libhdf5 (posix only).
//  - Hot path: a SampleReader/StreamReader belongs to one loader thread; it reuses its buffers (no allocation per
//    sample once warmed up) and takes no lock of ours.
// Errors: absl::Status whose message names the file and what is wrong.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/io_stats.h"
#include "readers/storage.h"

namespace dlio {

struct FormatOptions {
  int64_t samples_per_file = 1;
  // Sample shape in elements (uint8). DLIO: {d, d} with d = floor(sqrt(record_length_bytes)).
  std::vector<int64_t> sample_dims;
  std::vector<int64_t> hdf5_chunk_dims;  // empty = contiguous
  std::string compression = "none";      // hdf5: none | gzip
  int compression_level = 4;
  int64_t transfer_size = 262144;        // tfrecord read size
  IoEngine io_engine = IoEngine::kPosix;  // how npz and tfrecord read (storage.h); hdf5 reads through libhdf5
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
  // The record the last Next() returned (for tfrecord: the serialized tf.train.Example), valid until the next
  // Next()/Open()/Close().
  virtual std::string_view last_record() const = 0;
  virtual void Close() = 0;
};

class Format {
 public:
  virtual ~Format() = default;
  virtual const char* name() const = 0;
  // File extension without the dot ("npz", "hdf5", "tfrecord").
  virtual const char* extension() const = 0;
  // True for formats read by streaming (tfrecord).
  virtual bool streaming() const { return false; }
  // Writes one complete file with options().samples_per_file samples of random bytes; accounts the written bytes
  // and write calls in `stats`. `seed` makes the bytes reproducible.
  virtual absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const = 0;
  virtual std::unique_ptr<SampleReader> NewSampleReader() const = 0;
  virtual std::unique_ptr<StreamReader> NewStreamReader() const { return nullptr; }

  const FormatOptions& options() const { return options_; }

 protected:
  explicit Format(FormatOptions o) : options_(std::move(o)) {}
  FormatOptions options_;
};

// Waits until a file Generate() wrote is on the storage (fdatasync). Errors name the file.
absl::Status SyncGeneratedFile(const std::string& path);

// Known names: npz, hdf5, tfrecord. Unknown names: InvalidArgument naming the allowed ones. Also InvalidArgument
// for options the format cannot honour (samples_per_file < 1, empty or non-positive sample_dims, hdf5 chunk dims
// of the wrong rank, hdf5 compression other than none/gzip, transfer_size < 1).
absl::StatusOr<std::unique_ptr<Format>> MakeFormat(const std::string& name, const FormatOptions& options);

// DLIO's file name for file `index` of `total`: "<prefix>_<index padded to digits(total)>_of_<total>.<ext>".
std::string DataFileName(const std::string& prefix, int64_t index, int64_t total, const std::string& ext);
// Path of data file `index` relative to the data folder: "train/[<subfolder>/]<name>". DLIO puts file i in
// subfolder i % num_subfolders (zero-padded to the digits of num_subfolders) when num_subfolders > 1.
std::string DataFileRelPath(const std::string& split, const std::string& prefix, int64_t index, int64_t total,
                            int64_t num_subfolders, const std::string& ext);

}  // namespace dlio
