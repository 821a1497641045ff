#include "readers/npz.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "readers/io_util.h"
#include "readers/storage.h"

namespace dlio {
namespace {

// libzip stamps members with the current time; a fixed one (2020-01-01 00:00 UTC) makes a seed reproduce the file.
constexpr time_t kZipMtime = 1577836800;
// numpy reserves room for the first axis to grow to this many digits (format.GROWTH_AXIS_MAX_DIGITS).
constexpr size_t kNpyGrowthDigits = 21;
constexpr size_t kNpyAlign = 64;  // numpy.lib.format.ARRAY_ALIGN

uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t Le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t Le64(const uint8_t* p) { return uint64_t{Le32(p)} | (uint64_t{Le32(p + 4)} << 32); }

// True when [off, off + len) lies inside a buffer of n bytes (no overflow for offsets read from the file).
bool Fits(uint64_t off, uint64_t len, uint64_t n) { return off <= n && len <= n - off; }

absl::Status Corrupt(const std::string& path, std::string_view what) {
  return absl::DataLossError(absl::StrCat(path, ": not a readable npz file: ", std::string(what)));
}

struct Member {
  uint64_t data_offset = 0;  // first byte of the member's data in the file
  uint64_t size = 0;
};

// Finds `name` through the central directory (zip64 aware) and returns where its stored data starts according to
// its LOCAL header.
absl::Status FindMember(const uint8_t* p, uint64_t n, std::string_view name, const std::string& path, Member* out) {
  constexpr uint64_t kEocdLen = 22, kMaxComment = 65535;
  if (n < kEocdLen) return Corrupt(path, "shorter than a zip end record");
  uint64_t eocd = n - kEocdLen;
  const uint64_t lowest = n - kEocdLen > kMaxComment ? n - kEocdLen - kMaxComment : 0;
  while (Le32(p + eocd) != 0x06054b50) {
    if (eocd == lowest) return Corrupt(path, "no zip end-of-central-directory record");
    --eocd;
  }
  uint64_t entries = Le16(p + eocd + 10);
  uint64_t cd_off = Le32(p + eocd + 16);
  if (entries == 0xFFFF || cd_off == 0xFFFFFFFF) {  // ZIP64: the locator sits right before the end record
    if (eocd < 20 || Le32(p + eocd - 20) != 0x07064b50) return Corrupt(path, "missing zip64 locator");
    uint64_t z = Le64(p + eocd - 20 + 8);
    if (!Fits(z, 56, n) || Le32(p + z) != 0x06064b50) return Corrupt(path, "bad zip64 end record");
    entries = Le64(p + z + 32);
    cd_off = Le64(p + z + 48);
  }
  uint64_t c = cd_off;
  for (uint64_t e = 0; e < entries; ++e) {
    if (!Fits(c, 46, n) || Le32(p + c) != 0x02014b50) return Corrupt(path, "bad central directory entry");
    const uint16_t method = Le16(p + c + 10);
    uint64_t csize = Le32(p + c + 20), usize = Le32(p + c + 24);
    const uint16_t nlen = Le16(p + c + 28), xlen = Le16(p + c + 30), clen = Le16(p + c + 32);
    uint64_t local = Le32(p + c + 42);
    if (!Fits(c, 46 + nlen + xlen, n)) return Corrupt(path, "central directory entry runs past the end");
    if (std::string_view(reinterpret_cast<const char*>(p + c + 46), nlen) == name) {
      // ZIP64 extra (id 1): the 64-bit values of exactly the fields saturated above, in this order.
      const uint64_t xend = c + 46 + nlen + xlen;
      for (uint64_t x = c + 46 + nlen; x + 4 <= xend;) {
        const uint16_t id = Le16(p + x), len = Le16(p + x + 2);
        if (x + 4 + len > xend) return Corrupt(path, "extra field runs past its entry");
        if (id == 0x0001) {
          uint64_t f = x + 4;
          for (uint64_t* v : {&usize, &csize, &local}) {
            if (*v != 0xFFFFFFFF) continue;
            if (f + 8 > x + 4 + len) return Corrupt(path, "short zip64 extra field");
            *v = Le64(p + f);
            f += 8;
          }
        }
        x += 4 + len;
      }
      if (method != 0) {
        return absl::UnimplementedError(absl::StrCat(path, ": member ", std::string(name),
                                                     " is compressed (zip method ", method,
                                                     "); only stored members (numpy.savez) are read"));
      }
      if (!Fits(local, 30, n) || Le32(p + local) != 0x04034b50) return Corrupt(path, "bad local header");
      const uint64_t data = local + 30 + Le16(p + local + 26) + Le16(p + local + 28);
      if (!Fits(data, csize, n)) {
        return Corrupt(path, absl::StrCat("member ", std::string(name), " runs past the end of the file"));
      }
      out->data_offset = data;
      out->size = csize;
      return absl::OkStatus();
    }
    c += 46 + nlen + xlen + clen;
  }
  return absl::NotFoundError(absl::StrCat(path, ": npz has no member ", std::string(name)));
}

using NpyArray = NpyHeaderInfo;

// Returns the text after `'key':` with leading spaces skipped, or an empty view.
std::string_view AfterKey(std::string_view h, std::string_view key) {
  size_t k = h.find(key);
  if (k == std::string_view::npos) return {};
  std::string_view rest = h.substr(k + key.size());
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return {};
  rest = rest.substr(colon + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

absl::Status ParseNpyImpl(const uint8_t* p, uint64_t n, const std::string& path, NpyArray* a) {
  if (n < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) return Corrupt(path, "x.npy has no NPY magic");
  uint64_t hlen, start;
  if (p[6] == 1) {
    hlen = Le16(p + 8);
    start = 10;
  } else if (p[6] == 2 || p[6] == 3) {
    if (n < 12) return Corrupt(path, "x.npy header truncated");
    hlen = Le32(p + 8);
    start = 12;
  } else {
    return Corrupt(path, absl::StrCat("x.npy has unknown NPY version ", p[6]));
  }
  if (start + hlen > n) return Corrupt(path, "x.npy header runs past the member");
  std::string_view h(reinterpret_cast<const char*>(p + start), hlen);

  std::string_view descr = AfterKey(h, "'descr'");
  if (descr.size() < 4 || descr[0] != '\'') return Corrupt(path, "x.npy header has no descr");
  descr.remove_prefix(1);
  descr = descr.substr(0, descr.find('\''));
  // '|u1', '<i8', ...: byte order, kind, item size. Object and structured dtypes never appear in DLIO files.
  auto bad_dtype = [&] { return absl::StrCat("x.npy has unsupported dtype '", std::string(descr), "'"); };
  size_t itemsize = 0;
  for (char ch : descr.substr(2)) {
    if (ch < '0' || ch > '9' || itemsize > 1024) return Corrupt(path, bad_dtype());
    itemsize = itemsize * 10 + static_cast<size_t>(ch - '0');
  }
  if (itemsize == 0) return Corrupt(path, bad_dtype());
  if (AfterKey(h, "'fortran_order'").substr(0, 5) != "False") {
    return absl::UnimplementedError(absl::StrCat(path, ": x.npy is Fortran-ordered; only C order is read"));
  }
  std::string_view s = AfterKey(h, "'shape'");
  if (s.empty() || s[0] != '(') return Corrupt(path, "x.npy header has no shape");
  s.remove_prefix(1);
  a->rank = 0;
  for (;;) {
    while (!s.empty() && (s.front() == ' ' || s.front() == ',')) s.remove_prefix(1);
    if (s.empty()) return Corrupt(path, "x.npy shape is not closed");
    if (s.front() == ')') break;
    if (s.front() < '0' || s.front() > '9') return Corrupt(path, "x.npy shape is not a tuple of integers");
    if (a->rank == kNpyMaxRank) return Corrupt(path, "x.npy shape has too many axes");
    // Shapes come from the file: a value that could overflow the size arithmetic is corruption.
    int64_t v = 0;
    while (!s.empty() && s.front() >= '0' && s.front() <= '9') {
      v = v * 10 + (s.front() - '0');
      s.remove_prefix(1);
      if (v > (int64_t{1} << 48)) return Corrupt(path, "x.npy shape value out of range");
    }
    a->shape[a->rank++] = v;
  }
  a->itemsize = itemsize;
  a->data_offset = start + hlen;
  return absl::OkStatus();
}

class NpzSampleReader final : public SampleReader {
 public:
  explicit NpzSampleReader(IoEngine engine) : engine_(engine) {}

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    base_ = nullptr;
    if (!storage_) {  // made on first use so that an io_uring set-up error reaches the caller as a Status
      absl::StatusOr<std::unique_ptr<StorageReader>> s = StorageReader::New(engine_);
      if (!s.ok()) return s.status();
      storage_ = std::move(*s);
    }
    uint64_t size = 0;
    if (absl::Status s = storage_->Open(path, &size, stats); !s.ok()) return s;
    buf_.Reserve(RoundUp(size, storage_->alignment()));  // grows only: no allocation after the largest file
    const size_t piece = engine_ == IoEngine::kIoUring ? kUringPiece : kNpzReadChunk;
    absl::Status read = storage_->ReadWhole(buf_.data(), size, piece, stats);
    storage_->Close();
    if (!read.ok()) return read;

    Member x;
    if (absl::Status s = FindMember(buf_.data(), size, "x.npy", path, &x); !s.ok()) return s;
    NpyArray a;
    if (absl::Status s = ParseNpyImpl(buf_.data() + x.data_offset, x.size, path, &a); !s.ok()) return s;
    if (a.rank < 1) return Corrupt(path, "x.npy is a scalar; samples are on its last axis");
    const uint64_t nspf = static_cast<uint64_t>(a.shape[a.rank - 1]);
    if (sample >= nspf) {
      return absl::OutOfRangeError(absl::StrCat(path, ": sample ", sample, " requested, file has ", nspf));
    }
    // The array must fit in the member; checked factor by factor so a hostile shape cannot overflow the product.
    uint64_t elems = 1, total = a.itemsize * nspf;
    for (int d = 0; d + 1 < a.rank; ++d) {
      const uint64_t dim = static_cast<uint64_t>(a.shape[d]);
      if (dim != 0 && total > x.size / dim) return Corrupt(path, "x.npy data shorter than its shape");
      total *= dim;
      elems *= dim;
    }
    if (!Fits(a.data_offset, total, x.size)) return Corrupt(path, "x.npy data shorter than its shape");

    base_ = buf_.data() + x.data_offset + a.data_offset + uint64_t{sample} * a.itemsize;
    elems_ = elems;
    itemsize_ = a.itemsize;
    stride_ = nspf * a.itemsize;
    internal::TouchPages(base_, elems_, stride_);
    stats.AddSamples(1);
    return elems * a.itemsize;
  }

  std::string_view last_sample() const override {
    if (base_ == nullptr) return {};
    gathered_.resize(elems_ * itemsize_);
    for (uint64_t e = 0; e < elems_; ++e) std::memcpy(&gathered_[e * itemsize_], base_ + e * stride_, itemsize_);
    return gathered_;
  }

 private:
  const IoEngine engine_;
  std::unique_ptr<StorageReader> storage_;
  AlignedBuffer buf_;  // the whole file (rounded up to the engine's alignment); never shrinks
  // The last sample: elems_ items of itemsize_ bytes, stride_ bytes apart, starting at base_ (inside buf_).
  const uint8_t* base_ = nullptr;
  uint64_t elems_ = 0, itemsize_ = 0, stride_ = 0;
  mutable std::string gathered_;  // last_sample()'s contiguous copy (checks only)
};

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};

// libzip source of the x.npy member: the NPY header, then `n` random bytes made on demand into libzip's own read
// buffer, so the member never exists in memory as a whole. The bytes are exactly header + Rng(seed).Fill(n):
// whole 8-byte words of the generator, little-endian, the last one cut (a word split by a read is kept for the
// next one). OPEN restarts the stream, so a second pass reads the same bytes.
class RandomNpySource {
 public:
  RandomNpySource(std::string header, uint64_t n, uint64_t seed)
      : header_(std::move(header)), n_(n), seed_(seed), rng_(seed) {}

  static zip_int64_t Callback(void* ud, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    auto* self = static_cast<RandomNpySource*>(ud);
    switch (cmd) {
      case ZIP_SOURCE_OPEN:
        self->pos_ = 0;
        self->rng_ = internal::Rng(self->seed_);
        self->left_ = 0;
        return 0;
      case ZIP_SOURCE_READ:
        return static_cast<zip_int64_t>(self->Read(static_cast<uint8_t*>(data), len));
      case ZIP_SOURCE_CLOSE:
        return 0;
      case ZIP_SOURCE_STAT: {
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->valid |= ZIP_STAT_SIZE;
        st->size = self->header_.size() + self->n_;
        return sizeof(*st);
      }
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&self->error_, data, len);
      case ZIP_SOURCE_FREE:
        return 0;  // owned by Generate()
      case ZIP_SOURCE_SUPPORTS:
        return ZIP_SOURCE_SUPPORTS_READABLE;
      default:
        zip_error_set(&self->error_, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }

 private:
  uint64_t Read(uint8_t* out, uint64_t len) {
    const uint64_t total = header_.size() + n_;
    len = std::min(len, total - pos_);
    uint64_t done = 0;
    while (done < len && pos_ < header_.size()) {
      const uint64_t k = std::min<uint64_t>(len - done, header_.size() - pos_);
      std::memcpy(out + done, header_.data() + pos_, k);
      done += k;
      pos_ += k;
    }
    while (done < len && left_ > 0) {  // the rest of a word a previous read split
      out[done++] = static_cast<uint8_t>(word_ >> (8 * (8 - left_)));
      --left_;
      ++pos_;
    }
    const uint64_t whole = (len - done) / 8 * 8;
    rng_.Fill(out + done, whole);
    done += whole;
    pos_ += whole;
    if (done < len) {  // a tail shorter than a word: take a word, keep what this read does not use
      word_ = rng_.Next();
      left_ = 8;
      while (done < len) {
        out[done++] = static_cast<uint8_t>(word_ >> (8 * (8 - left_)));
        --left_;
        ++pos_;
      }
    }
    return done;
  }

  const std::string header_;
  const uint64_t n_, seed_;
  internal::Rng rng_;
  uint64_t pos_ = 0;
  uint64_t word_ = 0;
  int left_ = 0;  // bytes of word_ not yet delivered (its high bytes)
  zip_error_t error_{};
};

// libzip write destination: the archive lands in a caller-owned buffer that is reused from file to file (so its
// pages are mapped once), from where Generate() writes it to the file with its own accounted pwrite()s.
class BufferDestination {
 public:
  explicit BufferDestination(AlignedBuffer* buf) : buf_(buf) {}
  const uint8_t* data() const { return buf_->data(); }
  uint64_t size() const { return size_; }

  static zip_int64_t Callback(void* ud, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    auto* self = static_cast<BufferDestination*>(ud);
    switch (cmd) {
      case ZIP_SOURCE_OPEN:
        self->read_ = 0;
        return 0;
      case ZIP_SOURCE_READ: {
        const uint64_t k = std::min<uint64_t>(len, self->size_ - self->read_);
        std::memcpy(data, self->buf_->data() + self->read_, k);
        self->read_ += k;
        return static_cast<zip_int64_t>(k);
      }
      case ZIP_SOURCE_CLOSE:
        return 0;
      case ZIP_SOURCE_SEEK: {
        const zip_int64_t off = zip_source_seek_compute_offset(self->read_, self->size_, data, len, &self->error_);
        if (off < 0) return -1;
        self->read_ = static_cast<uint64_t>(off);
        return 0;
      }
      case ZIP_SOURCE_TELL:
        return static_cast<zip_int64_t>(self->read_);
      case ZIP_SOURCE_STAT: {
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->valid |= ZIP_STAT_SIZE;
        st->size = self->size_;
        return sizeof(*st);
      }
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&self->error_, data, len);
      case ZIP_SOURCE_FREE:
        return 0;  // owned by Generate()
      case ZIP_SOURCE_BEGIN_WRITE:
      case ZIP_SOURCE_REMOVE:
        self->size_ = self->pos_ = 0;
        return 0;
      case ZIP_SOURCE_COMMIT_WRITE:
        return 0;
      case ZIP_SOURCE_ROLLBACK_WRITE:
        self->size_ = self->pos_ = 0;
        return 0;
      case ZIP_SOURCE_WRITE: {
        if (self->pos_ + len > self->buf_->capacity()) {
          self->buf_->Reserve(std::max<uint64_t>(2 * self->buf_->capacity(), self->pos_ + len), self->size_);
        }
        std::memcpy(self->buf_->data() + self->pos_, data, len);
        self->pos_ += len;
        self->size_ = std::max(self->size_, self->pos_);
        return static_cast<zip_int64_t>(len);
      }
      case ZIP_SOURCE_SEEK_WRITE: {
        const zip_int64_t off = zip_source_seek_compute_offset(self->pos_, self->size_, data, len, &self->error_);
        if (off < 0) return -1;
        self->pos_ = static_cast<uint64_t>(off);
        return 0;
      }
      case ZIP_SOURCE_TELL_WRITE:
        return static_cast<zip_int64_t>(self->pos_);
      case ZIP_SOURCE_SUPPORTS:
        return ZIP_SOURCE_SUPPORTS_WRITABLE;
      default:
        zip_error_set(&self->error_, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }

 private:
  AlignedBuffer* buf_;
  uint64_t size_ = 0, pos_ = 0, read_ = 0;
  zip_error_t error_{};
};

class NpzFormat final : public Format {
 public:
  explicit NpzFormat(FormatOptions o) : Format(std::move(o)) {}
  const char* name() const override { return "npz"; }
  const char* extension() const override { return "npz"; }
  std::unique_ptr<SampleReader> NewSampleReader() const override {
    return std::make_unique<NpzSampleReader>(options_.io_engine);
  }

  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    const int64_t nspf = options_.samples_per_file;
    std::vector<int64_t> xshape = options_.sample_dims;
    xshape.push_back(nspf);
    uint64_t xbytes = 1;
    for (int64_t d : xshape) xbytes *= static_cast<uint64_t>(d);
    const std::string yhdr = NpyHeader("<i8", {nspf});
    std::vector<uint8_t> y(yhdr.size() + static_cast<size_t>(nspf) * 8, 0);
    std::memcpy(y.data(), yhdr.data(), yhdr.size());
    RandomNpySource x(NpyHeader("|u1", xshape), xbytes, seed);

    // The archive buffer is reused by this thread's next file: its pages stay mapped (no page faults, no
    // zeroing by the kernel per file).
    thread_local AlignedBuffer archive;
    archive.Reserve(xbytes + y.size() + (size_t{64} << 10));
    BufferDestination dest(&archive);

    auto zerr = [&path](const char* what, const char* detail) {
      return absl::InternalError(absl::StrCat(path, ": libzip ", what, ": ", detail));
    };
    zip_error_t err;
    zip_error_init(&err);
    struct SourceFree {
      void operator()(zip_source_t* s) const { zip_source_free(s); }
    };
    std::unique_ptr<zip_source_t, SourceFree> dsrc(zip_source_function_create(BufferDestination::Callback, &dest,
                                                                              &err));
    if (!dsrc) return zerr("destination", zip_error_strerror(&err));
    std::unique_ptr<zip_t, ZipCloser> za(zip_open_from_source(dsrc.get(), ZIP_TRUNCATE, &err));
    if (!za) return zerr("open", zip_error_strerror(&err));
    zip_source_keep(dsrc.get());  // the archive releases its reference at zip_close(); ours frees it

    for (int m = 0; m < 2; ++m) {
      zip_source_t* src = m == 0 ? zip_source_function(za.get(), RandomNpySource::Callback, &x)
                                 : zip_source_buffer(za.get(), y.data(), y.size(), 0);
      if (src == nullptr) return zerr("source", zip_strerror(za.get()));
      const zip_int64_t idx = zip_file_add(za.get(), m == 0 ? "x.npy" : "y.npy", src, ZIP_FL_ENC_UTF_8);
      if (idx < 0) {
        zip_source_free(src);
        return zerr("add", zip_strerror(za.get()));
      }
      if (zip_set_file_compression(za.get(), static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0) != 0 ||
          zip_file_set_mtime(za.get(), static_cast<zip_uint64_t>(idx), kZipMtime, 0) != 0) {
        return zerr("member settings", zip_strerror(za.get()));
      }
    }
    if (zip_close(za.get()) != 0) return zerr("close", zip_strerror(za.get()));
    za.release();  // zip_close freed it

    internal::FileWriter w;
    absl::Status st = w.Open(path);
    if (st.ok()) st = w.AppendDirect(dest.data(), dest.size(), stats);
    if (st.ok()) st = w.Finish(stats);
    if (st.ok()) stats.AddSamples(static_cast<uint64_t>(nspf));
    return st;
  }
};

}  // namespace

std::string NpyHeader(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dict = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (");
  for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&dict, i ? ", " : "", shape[i]);
  absl::StrAppend(&dict, shape.size() == 1 ? ",), }" : "), }");
  if (!shape.empty()) {
    const size_t digits = std::to_string(shape[0]).size();
    if (digits < kNpyGrowthDigits) dict.append(kNpyGrowthDigits - digits, ' ');
  }
  // numpy: hlen = len(dict) + 1 ('\n'); pad = ALIGN - (10 + hlen) % ALIGN, so an aligned length still gets ALIGN.
  const size_t hlen = dict.size() + 1;
  const size_t pad = kNpyAlign - (10 + hlen) % kNpyAlign;
  const size_t total_hlen = hlen + pad;
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(total_hlen & 0xFF));
  out.push_back(static_cast<char>(total_hlen >> 8));
  out += dict;
  out.append(pad, ' ');
  out.push_back('\n');
  return out;
}

std::unique_ptr<Format> NewNpzFormat(const FormatOptions& options) { return std::make_unique<NpzFormat>(options); }

absl::Status ParseNpyHeader(const uint8_t* p, uint64_t n, const std::string& path, NpyHeaderInfo* out) {
  return ParseNpyImpl(p, n, path, out);
}

}  // namespace dlio
