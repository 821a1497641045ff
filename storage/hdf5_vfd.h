// Hdf5StorageDriver: an HDF5 virtual file driver of ours ("dlio_storage") that does libhdf5's file I/O through a
// StorageReader (storage/storage.h), so that every read libhdf5 makes of a data file or object (superblock, object
// headers, B-trees and chunk index, the sieve-buffered or chunked data) reaches the thread's IoStats as one op of the
// bytes the engine returned, exactly as the other formats' reads are counted (format.h, "Accounting"), and opening a
// file counts one file. The one HDF5 driver for every storage engine libhdf5 can read through.
//
// Contract:
//  - Read-only: a file opened through fapl() with H5F_ACC_RDONLY; any write or create is refused with an error.
//  - Files: the driver announces the feature flags of libhdf5's default sec2 driver (metadata accumulation and
//    aggregation, data sieving, small-data aggregation), so libhdf5 issues the same reads it issues through sec2,
//    the driver h5py (DLIO's reader) uses: only their accounting changes. Reads past the end of the file return
//    zeros, as sec2's do.
//  - Objects (the s3 engine: the "file name" is the object key, Open() a HEAD, each read one ranged GET): no
//    feature flags, so only the bytes libhdf5 asks for travel (no 64 KiB sieve reads around a small sample), and the
//    object's first kHeadBytes (where h5py's and our files keep the superblock and object headers) are fetched with
//    one ranged GET when a key is opened and kept while the reader stays on that key, so re-opening the same object
//    per sample (DLIO's on_demand reader) costs no metadata request. Reads served from the kept head are no I/O and
//    are not counted; the head's GET is.
//  - Over any StorageReader whose alignment() is 1 (posix, io_uring, mmap, s3): libhdf5's buffers and offsets are
//    arbitrary, so an aligned engine (odirect) is refused by New().
//  - One file open at a time per Hdf5StorageAccess (libhdf5 closes a file before a reader opens the next); the
//    driver's file record lives inside the access object, so an open allocates nothing of ours.
//  - No `cmp` callback: two loader threads opening the same file get two opens, each reading the file's metadata and
//    its own sieve buffer, as DLIO's loader worker processes do. (Through sec2, libhdf5 recognises the same inode
//    and lets the threads of one process share a single open file, metadata cache and sieve buffer, which reads
//    less than DLIO does: about 0.8 GB instead of 1.06 GB over 16,384 4 KiB contiguous samples.)
//  - set_stats() names the IoStats the next opens and reads are counted in (the calling loader thread's).
//  - Replay (readers/hdf5_replay.h): Open()/Read()/Close() issue an open, a read or a close exactly as libhdf5's
//    calls of the driver do (the same head cache, zero fill and accounting), without libhdf5. set_asked_log()
//    records the calls libhdf5 (or a replay) makes of the driver, set_issued_log() what of them reached the
//    StorageReader (each file read one pread, each object read one ranged GET): the plan is built from the first,
//    tests compare the second. set_probe(true) makes every read fail without I/O (Fail() with a message saying so):
//    a libhdf5 query then succeeds only from what libhdf5 already holds in memory.
// Thread-safety: one Hdf5StorageAccess per thread. libhdf5 calls the driver under its global lock (thread-safe
// build), so the reads of several loader threads never overlap: libhdf5's limit for every driver, sharper over a
// network.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "results/io_stats.h"
#include "storage/storage.h"

namespace dlio {

// One call of the driver: an open, a read of [addr, addr + size), a close (addr and size 0).
struct Hdf5Io {
  enum class Kind : uint8_t { kOpen, kRead, kClose };
  Kind kind = Kind::kRead;
  uint64_t addr = 0;
  uint64_t size = 0;
  bool operator==(const Hdf5Io& o) const { return kind == o.kind && addr == o.addr && size == o.size; }
  bool operator!=(const Hdf5Io& o) const { return !(*this == o); }
};

class Hdf5StorageAccess {
 public:
  // 64 KiB covers the metadata of DLIO's files (superblock v3, the root group, a few dataset headers) in one GET.
  static constexpr size_t kHeadBytes = size_t{64} << 10;
  // sec2's flags (H5FD_sec2_query in libhdf5 1.10): the same metadata accumulation and data sieving, hence the same
  // reads. POSIX_COMPAT_HANDLE is left out: we give libhdf5 no descriptor.
  static constexpr unsigned long kFileFeatures = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
                                                 H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA;

  // Errors: a reader whose alignment() is not 1; libhdf5 refusing the driver's registration.
  static absl::StatusOr<std::unique_ptr<Hdf5StorageAccess>> New(std::unique_ptr<StorageReader> reader);
  ~Hdf5StorageAccess();
  Hdf5StorageAccess(const Hdf5StorageAccess&) = delete;
  Hdf5StorageAccess& operator=(const Hdf5StorageAccess&) = delete;

  // The file access property list to pass to H5Fopen.
  hid_t fapl() const { return fapl_; }
  void set_stats(IoStats* stats) { stats_ = stats; }
  // The error of the last failed driver call (libhdf5's own error stack says only "can't open file"); OK after
  // clear_error().
  const absl::Status& last_error() const { return last_error_; }
  void clear_error() { last_error_ = absl::OkStatus(); }

  // Replay (see the contract): the same open, read and close libhdf5's calls make. Errors name the file.
  absl::Status Open(const std::string& path);
  absl::Status Read(uint64_t addr, size_t size, void* buf);
  void Close() { CloseFile(); }
  // The end of address libhdf5 set for the file last opened (its superblock's), kept after the close.
  uint64_t last_eoa() const { return last_eoa_; }
  // Recording and probing (see the contract); null stops a log. The vectors belong to the caller.
  void set_asked_log(std::vector<Hdf5Io>* log) { asked_ = log; }
  // With set_asked_log: the bytes each asked read returned, appended in order (zeros past the end of the file).
  void set_asked_bytes(std::vector<uint8_t>* bytes) { asked_bytes_ = bytes; }
  void set_issued_log(std::vector<Hdf5Io>* log) { issued_ = log; }
  void set_probe(bool on) { probe_ = on; }

  // Driver internals, called from the driver's callbacks (hdf5_vfd.cc).
  struct File;
  File* OpenFile(const char* name);
  void CloseFile();
  bool ReadAt(uint64_t addr, size_t size, void* buf);
  bool ReadAtUnlogged(uint64_t addr, size_t size, void* buf);
  uint64_t size() const { return size_; }
  // The feature flags libhdf5 gets for the open file (see the contract).
  unsigned long features() const;
  void Fail(const absl::Status& s);

 private:
  explicit Hdf5StorageAccess(std::unique_ptr<StorageReader> reader);
  // Objects: reads the open object's head unless it is the one kept (see the contract).
  absl::Status KeepHead();

  std::unique_ptr<StorageReader> reader_;
  std::unique_ptr<File> file_;  // the one open file's driver record (allocated once, in New())
  bool open_ = false;
  uint64_t size_ = 0;           // of the open file
  IoStats* stats_ = nullptr;
  std::string name_;            // the open file's path
  hid_t fapl_ = -1;
  absl::Status last_error_;
  uint64_t last_eoa_ = 0;
  std::vector<Hdf5Io>* asked_ = nullptr;
  std::vector<uint8_t>* asked_bytes_ = nullptr;
  std::vector<Hdf5Io>* issued_ = nullptr;
  bool probe_ = false;
  // Objects only: the first head_len_ bytes of the object head_key_ (valid while head_valid_).
  const bool keep_head_;
  AlignedBuffer head_;
  size_t head_len_ = 0;
  std::string head_key_;
  bool head_valid_ = false;
};

}  // namespace dlio
