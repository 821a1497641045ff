// hdf5_internal: what hdf5.cc (the format and the libhdf5 engine) and hdf5_replay.cc (the replay engine) share;
// not for use outside readers/hdf5*.
//
// Contract:
//  - Hdf5LibReader is the libhdf5 engine (hdf5.h, "Reader"): per sample, H5Fopen through our driver
//    (storage/hdf5_vfd.h), H5Dopen2 + H5Dread of the sample's hyperslab per records_k, H5Dclose, H5Fclose. A
//    dataset's shape and type are learnt when a file's sample first opens it (no read of its own: the object header
//    was read by the open) and kept per path.
//  - ReadSample() with a Hdf5DatasetProbe calls it for each dataset after its H5Dread, while the dataset and file
//    are open: the replay engine learns the storage layout there (hdf5_replay.h).
// Thread-safety: one reader per loader thread; libhdf5 serialises its calls behind its global lock.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "readers/format.h"
#include "storage/hdf5_vfd.h"
#include "storage/storage.h"

namespace dlio::hdf5_internal {

inline constexpr int kMaxRank = 16;  // records_k rank limit (DLIO writes 3); HDF5's own limit is 32
// The registered id of the LZF filter (h5py's lzf_filter.h H5PY_FILTER_LZF).
inline constexpr H5Z_filter_t kLzfFilter = 32000;

// Owns one HDF5 identifier and closes it with the matching H5*close.
class Hid {
 public:
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  // Gives up ownership: the caller closes the identifier.
  hid_t release() {
    const hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// Turns HDF5's stderr error printing off for the calling thread (once per thread).
void SilenceHdf5();
// True when HDF5 can use the LZF filter (liblzf loaded globally first; see hdf5.cc). Once per process.
bool LzfAvailable();
// "<path>: HDF5 <what> failed: <innermost HDF5 error>"; clears the thread's error stack.
absl::Status Hdf5Error(const std::string& path, const char* what);
std::string RecordsName(int64_t k);
// HDF5's metadata checksum (lookup3 hashlittle, initval 0; H5_checksum_lookup3), which libhdf5 does not export.
uint32_t Lookup3(const uint8_t* k, size_t n);

// Called by Hdf5LibReader::ReadSample for dataset k of the file, after its H5Dread (see the contract).
class Hdf5DatasetProbe {
 public:
  virtual ~Hdf5DatasetProbe() = default;
  virtual void Probe(int64_t k, hid_t dset, uint64_t sample_bytes) = 0;
};

// The libhdf5 engine (see the contract).
class Hdf5LibReader final : public SampleReader {
 public:
  Hdf5LibReader(int64_t datasets, StorageTarget target);
  Hdf5LibReader(const Hdf5LibReader&) = delete;
  Hdf5LibReader& operator=(const Hdf5LibReader&) = delete;
  ~Hdf5LibReader() override;

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    return ReadSample(path, sample, stats, nullptr);
  }
  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats,
                                      Hdf5DatasetProbe* probe);
  std::string_view last_sample() const override {
    return {reinterpret_cast<const char*>(buf_.data()), static_cast<size_t>(last_bytes_)};
  }
  // The driver's context, made at the first use (one per reader, kept). Errors: the storage's.
  absl::StatusOr<Hdf5StorageAccess*> Access();
  int64_t datasets() const { return datasets_; }

 private:
  // A dataset shape: its extent and element type (the file's), a file dataspace of that extent (its selection is
  // reset per sample) and the memory dataspace of one sample, (1, d1, ...), the selection's own shape as h5py
  // makes it (with a flat one libhdf5 maps chunk elements one by one, H5S_select_iterate, ~4x the cost of a 4 KiB
  // sample read in perf).
  struct Shape {
    int rank = 0;
    hsize_t dims[kMaxRank] = {};
    uint64_t bytes = 0;  // per sample
    hid_t mtype = -1, fspace = -1, mspace = -1;
  };
  static constexpr size_t kUnknown = ~size_t{0};

  absl::StatusOr<size_t> Learn(hid_t dset, const std::string& name, const std::string& path);
  absl::StatusOr<uint64_t> ReadDataset(hid_t file, int64_t k, std::vector<size_t>& known, const std::string& path,
                                       uint32_t sample, uint64_t total, Hdf5DatasetProbe* probe);

  const int64_t datasets_;
  const StorageTarget target_;
  std::unique_ptr<Hdf5StorageAccess> access_;  // the driver's context, made at the first sample; outlives its files
  const std::vector<std::string> names_;
  std::vector<Shape> shapes_;                                       // distinct shapes seen (usually one)
  std::unordered_map<std::string, std::vector<size_t>> shape_of_;  // path -> shapes_ index per dataset (or kUnknown)
  AlignedBuffer buf_;  // one sample of every records_k, back to back, page-aligned; never shrinks
  uint64_t last_bytes_ = 0;
};

}  // namespace dlio::hdf5_internal
