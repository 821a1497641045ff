#include "readers/tfrecord.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "readers/dtype.h"
#include "storage/io_util.h"
#include "storage/open.h"
#include "storage/storage.h"

namespace dlio {
namespace {

constexpr size_t kHeaderLen = 12;  // uint64 length + masked CRC of it
constexpr size_t kFooterLen = 4;   // masked CRC of the data

// Raw (not inverted) ISA-L CRC over any length: crc32_iscsi takes an int length, so feed it in 1 GiB pieces.
uint32_t Crc32cRaw(uint32_t raw, const uint8_t* p, size_t n) {
  constexpr size_t kPiece = size_t{1} << 30;
  while (n > 0) {
    const size_t len = std::min(n, kPiece);
    raw = crc32_iscsi(const_cast<uint8_t*>(p), static_cast<int>(len), raw);
    p += len;
    n -= len;
  }
  return raw;
}

size_t VarintLen(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

uint8_t* PutBytes(uint8_t* p, const char* s, size_t n) {
  std::memcpy(p, s, n);
  return p + n;
}

void PutLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// The serialized tf.train.Example around an image of `n` bytes: prefix (everything up to the image bytes) and
// suffix (the "size" feature). Field tags: (field_number << 3) | wire type 2 (length-delimited) = 0x0A for field 1,
// 0x12 for field 2, 0x1A for field 3.
struct ExampleFrame {
  uint8_t prefix[64];
  size_t prefix_len;
  uint8_t suffix[64];
  size_t suffix_len;
  uint64_t total_len;  // prefix + n + suffix

  ExampleFrame(uint64_t n, uint64_t size_value) {
    const uint64_t bytes_list = 1 + VarintLen(n) + n;                         // BytesList{value: image}
    const uint64_t feat_image = 1 + VarintLen(bytes_list) + bytes_list;       // Feature{bytes_list = 1}
    const uint64_t entry_image = 1 + 1 + 5 + 1 + VarintLen(feat_image) + feat_image;  // {key "image", value}
    const uint64_t packed = VarintLen(size_value);
    const uint64_t int64_list = 1 + VarintLen(packed) + packed;               // Int64List{value: [v] packed}
    const uint64_t feat_size = 1 + VarintLen(int64_list) + int64_list;        // Feature{int64_list = 3}
    const uint64_t entry_size = 1 + 1 + 4 + 1 + VarintLen(feat_size) + feat_size;     // {key "size", value}
    const uint64_t features = 1 + VarintLen(entry_image) + entry_image + 1 + VarintLen(entry_size) + entry_size;

    uint8_t* p = prefix;
    *p++ = 0x0A;  // Example.features
    p = PutVarint(p, features);
    *p++ = 0x0A;  // Features.feature (map entry "image")
    p = PutVarint(p, entry_image);
    *p++ = 0x0A;  // key
    p = PutVarint(p, 5);
    p = PutBytes(p, "image", 5);
    *p++ = 0x12;  // value: Feature
    p = PutVarint(p, feat_image);
    *p++ = 0x0A;  // Feature.bytes_list
    p = PutVarint(p, bytes_list);
    *p++ = 0x0A;  // BytesList.value
    p = PutVarint(p, n);
    prefix_len = static_cast<size_t>(p - prefix);

    p = suffix;
    *p++ = 0x0A;  // Features.feature (map entry "size")
    p = PutVarint(p, entry_size);
    *p++ = 0x0A;  // key
    p = PutVarint(p, 4);
    p = PutBytes(p, "size", 4);
    *p++ = 0x12;  // value: Feature
    p = PutVarint(p, feat_size);
    *p++ = 0x1A;  // Feature.int64_list
    p = PutVarint(p, int64_list);
    *p++ = 0x0A;  // Int64List.value, packed
    p = PutVarint(p, packed);
    p = PutVarint(p, size_value);
    suffix_len = static_cast<size_t>(p - suffix);

    total_len = 1 + VarintLen(features) + features;
  }
};

class TfrecordStreamReader final : public StreamReader {
 public:
  TfrecordStreamReader(int64_t transfer_size, StorageTarget target)
      : target_(std::move(target)),
        // O_DIRECT needs aligned lengths and offsets: the transfer size is rounded up to the alignment.
        per_(target_.engine == IoEngine::kODirect ? RoundUp(static_cast<uint64_t>(transfer_size), kDirectAlign)
                                          : static_cast<size_t>(transfer_size)),
        depth_(target_.engine == IoEngine::kIoUring ? kUringDepth : 1) {}

  absl::Status Open(const std::string& path, IoStats& stats) override {
    Close();
    if (!storage_) {  // made on first use so that an io_uring set-up error reaches the caller as a Status
      absl::StatusOr<std::unique_ptr<StorageReader>> s = NewStorageReader(target_);
      if (!s.ok()) return s.status();
      storage_ = std::move(*s);
    }
    if (absl::Status s = storage_->Open(path, &file_size_, stats); !s.ok()) return s;
    open_ = true;
    read_off_ = record_off_ = 0;
    begin_ = end_ = 0;
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Next(IoStats& stats) override {
    absl::StatusOr<bool> more = Advance(stats);
    if (more.ok() && *more) stats.AddSamples(1);
    return more;
  }

  absl::StatusOr<bool> Skip(IoStats& stats) override { return Advance(stats); }

  std::string_view last_record() const override {
    return {reinterpret_cast<const char*>(rec_), rec_len_};
  }

  void Close() override {
    if (storage_) storage_->Close();
    open_ = false;
    rec_len_ = 0;
  }

 private:
  // Reads the next record into rec_/rec_len_; false at the end of the file.
  absl::StatusOr<bool> Advance(IoStats& stats) {
    rec_len_ = 0;
    if (!open_) return absl::FailedPreconditionError("tfrecord reader: Next() without a successful Open()");
    if (absl::Status s = Ensure(kHeaderLen, stats); !s.ok()) return s;
    const size_t avail = end_ - begin_;
    if (avail == 0) return false;
    if (avail < kHeaderLen) return Truncated("header");
    uint64_t len;
    std::memcpy(&len, buf_.data() + begin_, 8);  // little-endian host (x86-64, aarch64)
    // Sanity-check the length against the file size (from Open) before growing the buffer to hold the record.
    const uint64_t left = file_size_ > record_off_ + kHeaderLen ? file_size_ - record_off_ - kHeaderLen : 0;
    if (len > left || left - len < kFooterLen) {
      return absl::DataLossError(absl::StrCat(storage_->path(), ": tfrecord record at byte ", record_off_,
                                              " claims ", len, " bytes; only ", left,
                                              " bytes (with its 4-byte CRC) remain"));
    }
    const size_t need = kHeaderLen + static_cast<size_t>(len) + kFooterLen;
    if (absl::Status s = Ensure(need, stats); !s.ok()) return s;
    if (end_ - begin_ < need) return Truncated("data");
    rec_ = buf_.data() + begin_ + kHeaderLen;
    rec_len_ = static_cast<size_t>(len);
    begin_ += need;
    record_off_ += need;
    return true;
  }

  absl::Status Truncated(const char* part) const {
    return absl::DataLossError(absl::StrCat(storage_->path(), ": tfrecord record at byte ", record_off_,
                                            " is truncated (", part, " ends at the end of the file)"));
  }

  // Makes at least `need` unconsumed bytes available, reading depth_ transfers of per_ bytes at a time (one
  // pread each; io_uring keeps them in flight together); fewer only at EOF.
  // The buffer holds kBufferRefills refills: the unconsumed tail (part of a record) is moved to the front only
  // when a whole refill no longer fits behind it, not before every read; with 256 KiB transfers and ~110 KB
  // records that copies a partial record once per 3 reads instead of once per read.
  absl::Status Ensure(size_t need, IoStats& stats) {
    const size_t align = storage_->alignment();
    const size_t refill = per_ * depth_;
    while (end_ - begin_ < need && read_off_ < file_size_) {
      const size_t rem = end_ - begin_;
      if (buf_.capacity() - end_ < refill) {
        // Keep the tail so that the next read lands on an aligned address (O_DIRECT; align is 1 otherwise).
        const size_t pad = (align - rem % align) % align;
        if (begin_ != pad) std::memmove(buf_.data() + pad, buf_.data() + begin_, rem);
        begin_ = pad;
        end_ = pad + rem;
        // grow only: a record longer than the buffer needs room for all of it plus a refill
        const size_t want = std::max(kBufferRefills * refill, RoundUp(end_ + std::max(need - rem, refill), align));
        buf_.Reserve(want, end_);
      }
      ReadRequest reqs[kUringDepth];
      size_t k = 0;
      uint64_t off = read_off_;
      for (; k < depth_ && off < file_size_ && buf_.capacity() - end_ - k * per_ >= per_; ++k) {
        // Up to the end of the file, rounded up to the alignment (an O_DIRECT read returns only the file's bytes).
        const size_t len = static_cast<size_t>(std::min<uint64_t>(per_, RoundUp(file_size_ - off, align)));
        reqs[k].buf = buf_.data() + end_ + k * per_;
        reqs[k].off = off;
        reqs[k].len = len;
        off += len;
      }
      if (absl::Status s = storage_->Read(reqs, k, stats); !s.ok()) return s;
      for (size_t i = 0; i < k; ++i) {
        end_ += reqs[i].got;
        read_off_ += reqs[i].got;
        if (reqs[i].got < reqs[i].len) {  // the end of the file (StorageReader reads on otherwise)
          read_off_ = file_size_;
          break;
        }
      }
    }
    return absl::OkStatus();
  }

  static constexpr size_t kBufferRefills = 4;
  const StorageTarget target_;
  const size_t per_;    // bytes per read
  const size_t depth_;  // reads per refill
  std::unique_ptr<StorageReader> storage_;
  bool open_ = false;
  uint64_t file_size_ = 0;
  uint64_t read_off_ = 0;    // file offset of the next read
  uint64_t record_off_ = 0;  // file offset of the next record (== buf_[begin_])
  AlignedBuffer buf_;
  size_t begin_ = 0, end_ = 0;  // unconsumed bytes are buf_[begin_, end_)
  const uint8_t* rec_ = nullptr;
  size_t rec_len_ = 0;
};

class TfrecordSampleReader final : public SampleReader {
 public:
  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t, IoStats&) override {
    return absl::UnimplementedError(
        absl::StrCat(path, ": tfrecord files are read by streaming (StreamReader), not by sample index"));
  }
  std::string_view last_sample() const override { return {}; }
};

class TfrecordFormat final : public Format {
 public:
  explicit TfrecordFormat(FormatOptions o) : Format(std::move(o)) {}
  const char* name() const override { return "tfrecord"; }
  const char* extension() const override { return "tfrecord"; }
  bool streaming() const override { return true; }
  std::unique_ptr<SampleReader> NewSampleReader() const override {
    return std::make_unique<TfrecordSampleReader>();
  }
  std::unique_ptr<StreamReader> NewStreamReader() const override {
    return std::make_unique<TfrecordStreamReader>(options_.transfer_size, options_.target());
  }

  std::vector<std::string> CompanionPaths(const std::string& data_path) const override {
    if (options_.tfrecord_index_dir.empty()) return {};
    return {options_.tfrecord_index_dir + "/" + std::filesystem::path(data_path).filename().string() + ".idx"};
  }

  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    const internal::DType& t = *internal::FindDType(options_.element_type);
    uint64_t elems = 1;
    for (int64_t d : options_.sample_dims) elems *= static_cast<uint64_t>(d);
    const uint64_t n = elems * t.itemsize;
    const ExampleFrame frame(n, static_cast<uint64_t>(options_.sample_dims[0]));
    std::vector<uint8_t> image(n);
    // DALI's tfrecord2idx lines, "offset length" per record, gathered while writing (DLIO re-reads the file).
    std::string index;
    internal::Rng rng(seed);
    internal::FileWriter w(NewWriteSink(options_.target()));
    absl::Status st = w.Open(path);
    for (int64_t r = 0; st.ok() && r < options_.samples_per_file; ++r) {
      absl::StrAppend(&index, w.bytes_written(), " ", kHeaderLen + frame.total_len + kFooterLen, "\n");
      internal::FillRandom(t, rng, image.data(), elems);
      uint8_t header[kHeaderLen], footer[kFooterLen];
      for (int i = 0; i < 8; ++i) header[i] = static_cast<uint8_t>(frame.total_len >> (8 * i));
      PutLe32(header + 8, MaskCrc32c(Crc32c(header, 8)));
      uint32_t raw = Crc32cRaw(0xFFFFFFFFu, frame.prefix, frame.prefix_len);
      raw = Crc32cRaw(raw, image.data(), image.size());
      raw = Crc32cRaw(raw, frame.suffix, frame.suffix_len);
      PutLe32(footer, MaskCrc32c(~raw));
      st = w.Append(header, kHeaderLen, stats);
      if (st.ok()) st = w.Append(frame.prefix, frame.prefix_len, stats);
      if (st.ok()) st = w.Append(image.data(), image.size(), stats);
      if (st.ok()) st = w.Append(frame.suffix, frame.suffix_len, stats);
      if (st.ok()) st = w.Append(footer, kFooterLen, stats);
    }
    if (st.ok()) st = w.Finish(stats);
    if (st.ok() && !options_.tfrecord_index_dir.empty()) {
      std::error_code ec;
      // Idempotent; races between ranks are harmless. Object keys need no folder.
      if (options_.dir) {
        options_.dir->MakeParents(CompanionPaths(path)[0]);
      } else if (options_.io_engine != IoEngine::kS3) {
        std::filesystem::create_directories(options_.tfrecord_index_dir, ec);
      }
      internal::FileWriter iw(NewWriteSink(options_.target()));
      st = iw.Open(CompanionPaths(path)[0]);
      if (st.ok()) st = iw.Append(index.data(), index.size(), stats);
      if (st.ok()) st = iw.Finish(stats);
    }
    if (st.ok()) stats.AddSamples(static_cast<uint64_t>(options_.samples_per_file));
    return st;
  }
};

}  // namespace

uint32_t Crc32c(const void* p, size_t n) { return ~Crc32cRaw(0xFFFFFFFFu, static_cast<const uint8_t*>(p), n); }

std::unique_ptr<Format> NewTfrecordFormat(const FormatOptions& options) {
  return std::make_unique<TfrecordFormat>(options);
}

}  // namespace dlio
