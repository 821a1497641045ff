#include "storage/s3/engine.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "storage/io_util.h"
#include "storage/s3/read_ahead.h"

namespace dlio {
namespace {

class S3StorageReader final : public StorageReader {
 public:
  explicit S3StorageReader(std::shared_ptr<const S3Config> config)
      : StorageReader(IoEngine::kS3), client_(std::move(config)) {
    head_key_.reserve(256);
    path_.reserve(256);
  }

  absl::Status Open(const std::string& path, uint64_t* size, IoStats& stats) override {
    open_ = false;
    if (!(head_valid_ && path == head_key_)) {
      head_valid_ = false;
      absl::StatusOr<uint64_t> s = client_.Head(path);
      if (!s.ok()) return s.status();
      head_key_.assign(path);  // no allocation while keys fit the reserved capacity
      head_size_ = *s;
      head_valid_ = true;
    }
    stats.AddFile();
    path_.assign(path);
    size_ = head_size_;
    *size = size_;
    open_ = true;
    return absl::OkStatus();
  }
  void Close() override { open_ = false; }

  absl::StatusOr<uint64_t> ReadFile(const std::string& path, AlignedBuffer& buf, size_t, IoStats& stats) override {
    stats.AddFile();
    S3KeySource* source = CurrentS3KeySource();
    if (source != nullptr && client_.config().requests_in_flight > 1) {  // read-ahead (read_ahead.h)
      if (!ahead_) ahead_ = std::make_unique<S3ReadAhead>(client_);
      uint64_t ns = 0;
      absl::StatusOr<uint64_t> n = ahead_->Get(path, *source, buf, &ns);
      if (!n.ok()) return n.status();
      stats.AddOp(*n, ns);
      if (buf.capacity() == 0) buf.Reserve(1);
      return *n;
    }
    const uint64_t t0 = internal::NowNs();
    absl::StatusOr<uint64_t> n = client_.Get(path, buf);
    if (!n.ok()) return n.status();
    stats.AddOp(*n, internal::NowNs() - t0);
    if (buf.capacity() == 0) buf.Reserve(1);  // an empty object still leaves a valid buffer
    return *n;
  }

 protected:
  absl::Status DoRead(ReadRequest* reqs, size_t n, IoStats& stats) override {
    for (size_t i = 0; i < n; ++i) {
      ReadRequest& r = reqs[i];
      r.got = 0;
      if (r.off >= size_ || r.len == 0) continue;
      const size_t len = static_cast<size_t>(std::min<uint64_t>(r.len, size_ - r.off));
      const uint64_t t0 = internal::NowNs();
      absl::StatusOr<size_t> got = client_.GetRange(path_, r.off, len, r.buf);
      if (!got.ok()) return got.status();
      stats.AddOp(*got, internal::NowNs() - t0);
      r.got = *got;
    }
    return absl::OkStatus();
  }

 private:
  S3Client client_;
  std::unique_ptr<S3ReadAhead> ahead_;  // made on the first ReadFile() with a key source (after client_: uses it)
  std::string head_key_;  // the key of the last HEAD, and its size
  uint64_t head_size_ = 0;
  bool head_valid_ = false;
};

}  // namespace

std::unique_ptr<StorageReader> NewS3StorageReader(std::shared_ptr<const S3Config> config) {
  return std::make_unique<S3StorageReader>(std::move(config));
}

S3ObjectWriter::S3ObjectWriter(std::shared_ptr<const S3Config> config, size_t part_bytes)
    : client_(std::move(config)), part_bytes_(std::max(part_bytes, kS3MinPartBytes)) {}

S3ObjectWriter::~S3ObjectWriter() { Abort(); }

absl::Status S3ObjectWriter::Open(const std::string& key) {
  Abort();
  key_ = key;
  used_ = 0;
  written_ = 0;
  etags_.clear();
  return absl::OkStatus();
}

void S3ObjectWriter::Abort() {
  if (upload_id_.empty()) return;
  (void)client_.AbortMultipart(key_, upload_id_);  // best effort: the first error is what the caller reports
  upload_id_.clear();
  etags_.clear();
}

absl::Status S3ObjectWriter::Fail(absl::Status s) {
  Abort();
  return s;
}

absl::Status S3ObjectWriter::UploadPart(const uint8_t* p, size_t n, IoStats& stats) {
  if (upload_id_.empty()) {
    absl::StatusOr<std::string> id = client_.CreateMultipart(key_);
    if (!id.ok()) return id.status();
    upload_id_ = std::move(*id);
  }
  if (etags_.size() >= static_cast<size_t>(kS3MaxParts)) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("s3: object '", key_, "' needs more than ", kS3MaxParts,
                                                        " parts of ", n, " bytes")));
  }
  const uint64_t t0 = internal::NowNs();
  absl::StatusOr<std::string> etag =
      client_.UploadPart(key_, upload_id_, static_cast<int>(etags_.size()) + 1, p, n);
  if (!etag.ok()) return Fail(etag.status());
  stats.AddOp(n, internal::NowNs() - t0);
  etags_.push_back(std::move(*etag));
  written_ += n;
  return absl::OkStatus();
}

absl::Status S3ObjectWriter::Append(const void* data, size_t n, IoStats& stats) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    buf_.Reserve(part_bytes_);
    // A full buffer is uploaded only when more bytes follow: the last part (or a small object's single PUT) goes
    // at Finish().
    if (used_ == part_bytes_) {
      if (absl::Status s = UploadPart(buf_.data(), used_, stats); !s.ok()) return s;
      used_ = 0;
    }
    const size_t take = std::min(n, part_bytes_ - used_);
    std::memcpy(buf_.data() + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
  }
  return absl::OkStatus();
}

absl::Status S3ObjectWriter::AppendPart(const void* data, size_t n, IoStats& stats) {
  if (used_ > 0) {
    if (absl::Status s = UploadPart(buf_.data(), used_, stats); !s.ok()) return s;
    used_ = 0;
  }
  return UploadPart(static_cast<const uint8_t*>(data), n, stats);
}

absl::Status S3ObjectWriter::Finish(IoStats& stats) {
  if (upload_id_.empty()) {  // a single PUT
    const uint64_t t0 = internal::NowNs();
    if (absl::Status s = client_.Put(key_, buf_.data(), used_); !s.ok()) return s;
    stats.AddOp(used_, internal::NowNs() - t0);
    written_ = used_;
  } else {
    if (used_ > 0) {
      if (absl::Status s = UploadPart(buf_.data(), used_, stats); !s.ok()) return s;
    }
    if (absl::Status s = client_.CompleteMultipart(key_, upload_id_, etags_); !s.ok()) return Fail(s);
    upload_id_.clear();
    etags_.clear();
  }
  used_ = 0;
  stats.AddFile();
  return absl::OkStatus();
}

}  // namespace dlio
