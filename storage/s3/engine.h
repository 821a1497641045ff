// The s3 engine of storage.h and the object writer of generation and checkpoints (internal to dlio::formats and the
// agent). Within storage/, only storage/open.cc (the factory) and the files of s3/ include this.
//
// S3StorageReader (NewStorageReader() of storage/open.h for IoEngine::kS3): a path is an object key of the
// configured bucket.
//  - Open() is a HEAD (its answer remembered for the key last opened, so reading several samples of one object in a
//    row costs one HEAD); each read request is one ranged GET; ReadFile() is one whole-object GET, the object's size
//    coming with the answer. Every GET is one IoStats op (its bytes and its latency, retries included); every Open()
//    and ReadFile() counts one file.
//  - Read-ahead: when the thread has a key source (S3KeySourceScope, read_ahead.h: the loader installs it) and
//    S3Config::requests_in_flight > 1, ReadFile() takes the object from the reader's S3ReadAhead, which keeps up to
//    that many GETs of the source's next keys in flight; the op's latency is then the GET's own, issue to answer.
// S3ObjectWriter: the WriteSink of an object (storage/write_sink.h: FileWriter writes through it when the target is
//  s3; NewWriteSink() of storage/open.h makes it). Writes one object from appended bytes with at most one part of
//  memory: an object of up to `part_bytes` goes in one PUT at Finish(); a larger one as a multipart upload, a part
//  uploaded whenever the buffer is full (parts of `part_bytes`, the last smaller). Each PUT or part is one IoStats
//  op; Finish() counts the file. On any error, and when destroyed unfinished, it aborts the multipart upload, so no
//  part is left in the bucket (a single PUT is atomic: the object appears whole or not at all).
// Thread-safety: none; one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "results/io_stats.h"
#include "storage/s3/client.h"
#include "storage/storage.h"
#include "storage/write_sink.h"

namespace dlio {

std::unique_ptr<StorageReader> NewS3StorageReader(std::shared_ptr<const S3Config> config);

class S3ObjectWriter final : public internal::WriteSink {
 public:
  // The writer has its own client (connection) to the bucket `config` names.
  S3ObjectWriter(std::shared_ptr<const S3Config> config, size_t part_bytes = kS3PartBytes);
  ~S3ObjectWriter() override;
  S3ObjectWriter(const S3ObjectWriter&) = delete;
  S3ObjectWriter& operator=(const S3ObjectWriter&) = delete;

  // Starts object `key` (abandoning, and aborting, an unfinished previous one). Never fails: the first request is
  // made by Append() or Finish().
  absl::Status Open(const std::string& key) override;
  absl::Status Append(const void* data, size_t n, IoStats& stats) override;
  // Uploads `n` bytes of `data` as the next part straight from the caller's memory (no copy), after what was appended
  // before; n must be >= kS3MinPartBytes unless it is the object's last part. Used by the checkpoint writer.
  absl::Status AppendPart(const void* data, size_t n, IoStats& stats);
  absl::Status Finish(IoStats& stats) override;
  // Appends are gathered into the part buffer here: FileWriter passes them through without a staging copy.
  bool Gathers() const override { return true; }
  // Aborts the multipart upload in progress, if any (best effort).
  void Abort();
  uint64_t bytes_written() const { return written_ + used_; }
  S3Client& client() { return client_; }

 private:
  absl::Status UploadPart(const uint8_t* p, size_t n, IoStats& stats);
  absl::Status Fail(absl::Status s);

  S3Client client_;
  const size_t part_bytes_;
  std::string key_;
  AlignedBuffer buf_;
  size_t used_ = 0;
  uint64_t written_ = 0;     // bytes of uploaded parts
  std::string upload_id_;    // non-empty while a multipart upload is open
  std::vector<std::string> etags_;
};

}  // namespace dlio
