// An HDF5 virtual file driver of ours ("dlio_s3") that turns libhdf5's reads of a file into ranged GETs of an S3
// object (readers/s3.h), so the hdf5 format reads a sample's hyperslab from a bucket as it reads it from a file:
// only the bytes libhdf5 asks for travel.
//
// Contract:
//  - Read-only: open with H5F_ACC_RDONLY through a file access property list from Hdf5S3Access::fapl(); the "file
//    name" is the object key. Writing is refused (generation builds the file in memory and PUTs the image).
//  - The object's first kHeadBytes (where h5py's and our files keep the superblock and object headers) are fetched
//    with one ranged GET when a key is opened and kept while the reader stays on that key, so re-opening the same
//    object per sample (DLIO's on_demand reader) costs no metadata requests; every other read is one ranged GET.
//    The size comes from a HEAD, remembered the same way.
//  - The context (client, cache) belongs to one Hdf5S3Access, i.e. one loader thread's reader; libhdf5 calls the
//    driver under its global lock (thread-safe build), so GETs of several loader threads do not overlap: this is
//    libhdf5's limit for every driver, sharper over a network.
// Thread-safety: one Hdf5S3Access per thread.
#pragma once

#include <hdf5.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "readers/s3.h"
#include "readers/storage.h"

namespace dlio {

class Hdf5S3Access {
 public:
  // 64 KiB covers the metadata of DLIO's files (superblock v3, the root group, a few dataset headers) in one GET.
  static constexpr size_t kHeadBytes = size_t{64} << 10;

  static absl::StatusOr<std::unique_ptr<Hdf5S3Access>> New(std::shared_ptr<const S3Config> config);
  ~Hdf5S3Access();
  hid_t fapl() const { return fapl_; }

  // Driver internals (called by libhdf5 through the driver's callbacks).
  absl::Status OpenKey(absl::string_view key, uint64_t* size);
  absl::Status ReadAt(uint64_t off, size_t len, void* dst);
  // The last error message of a callback (libhdf5's error stack has only a generic one).
  const std::string& last_error() const { return last_error_; }
  void set_last_error(std::string e) { last_error_ = std::move(e); }

 private:
  explicit Hdf5S3Access(std::shared_ptr<const S3Config> config) : client_(std::move(config)) {}
  S3Client client_;
  hid_t fapl_ = -1;
  std::string key_;        // the object the cache and size belong to
  uint64_t size_ = 0;
  AlignedBuffer head_;     // its first head_len_ bytes
  size_t head_len_ = 0;
  bool valid_ = false;
  std::string last_error_;
};

}  // namespace dlio
