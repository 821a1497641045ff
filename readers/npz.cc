#include "readers/npz.h"

#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "readers/dtype.h"
#include "storage/io_util.h"
#include "storage/open.h"
#include "readers/npy.h"
#include "storage/storage.h"

namespace dlio {
namespace {

// libzip stamps members with the current time; a fixed one (2020-01-01 00:00 UTC) makes a seed reproduce the file.
constexpr time_t kZipMtime = 1577836800;
// numpy.savez_compressed deflates with zlib's default level (zipfile's compresslevel None); libzip's own default
// would be 9.
constexpr zip_uint32_t kNumpyDeflateLevel = 6;

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
  uint64_t size = 0;         // bytes in the file (compressed size)
  uint64_t usize = 0;        // uncompressed size
  uint16_t method = 0;       // 0 stored, 8 deflated
};

// Finds `name` through the central directory (zip64 aware) and returns where its data starts according to its
// LOCAL header.
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
      if (method != 0 && method != 8) {
        return absl::UnimplementedError(absl::StrCat(path, ": member ", std::string(name), " uses zip method ",
                                                     method, "; only stored (numpy.savez) and deflated "
                                                     "(numpy.savez_compressed) members are read"));
      }
      if (!Fits(local, 30, n) || Le32(p + local) != 0x04034b50) return Corrupt(path, "bad local header");
      const uint64_t data = local + 30 + Le16(p + local + 26) + Le16(p + local + 28);
      if (!Fits(data, csize, n)) {
        return Corrupt(path, absl::StrCat("member ", std::string(name), " runs past the end of the file"));
      }
      out->data_offset = data;
      out->size = csize;
      out->usize = method == 0 ? csize : usize;
      out->method = method;
      return absl::OkStatus();
    }
    c += 46 + nlen + xlen + clen;
  }
  return absl::NotFoundError(absl::StrCat(path, ": npz has no member ", std::string(name)));
}

class NpzSampleReader final : public SampleReader {
 public:
  NpzSampleReader(StorageTarget target, bool keep) : target_(std::move(target)), keep_(keep) { cached_.reserve(256); }
  NpzSampleReader(const NpzSampleReader&) = delete;
  NpzSampleReader& operator=(const NpzSampleReader&) = delete;
  ~NpzSampleReader() override {
    if (zinit_) inflateEnd(&zs_);
  }

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    s_ = {};
    if (!storage_) {  // made on first use so that an io_uring set-up error reaches the caller as a Status
      absl::StatusOr<std::unique_ptr<StorageReader>> s = NewStorageReader(target_);
      if (!s.ok()) return s.status();
      storage_ = std::move(*s);
    }
    uint64_t size = cached_size_;
    // reader.read_type: memory serves the samples of the file read last from memory (whole_file.h says why).
    if (!(keep_ && cached_valid_ && path == cached_)) {
      cached_valid_ = false;
      // The buffer grows only: no allocation after the largest file. s3: one GET.
      const size_t piece = target_.engine == IoEngine::kIoUring ? kUringPiece : kNpzReadChunk;
      absl::StatusOr<uint64_t> got = storage_->ReadFile(path, buf_, piece, stats);
      if (!got.ok()) return got.status();
      size = *got;
      cached_size_ = size;
      if (keep_) {
        cached_.assign(path);
        cached_valid_ = true;
      }
    }

    Member x;
    if (absl::Status s = FindMember(buf_.data(), size, "x.npy", path, &x); !s.ok()) return s;
    const uint8_t* npy = buf_.data() + x.data_offset;
    if (x.method == 8) {  // numpy.savez_compressed: inflate the member first (as zipfile does)
      absl::StatusOr<const uint8_t*> in = Inflate(npy, x, path);
      if (!in.ok()) return in.status();
      npy = *in;
    }
    internal::NpyArray a;
    if (absl::Status s = internal::ParseNpy(npy, x.usize, path, "x.npy", &a); !s.ok()) return s;
    internal::StridedSample smp;
    if (absl::Status s = internal::LastAxisSample(npy, x.usize, a, sample, path, "x.npy", &smp); !s.ok()) return s;
    s_ = smp;
    stats.AddSamples(1);
    return s_.bytes();
  }

  std::string_view last_sample() const override { return s_.Gather(gathered_); }

 private:
  // Inflates the raw-deflate member into inflated_ (grow-only; the zlib state is kept and reset, so no allocation
  // per sample once warm).
  absl::StatusOr<const uint8_t*> Inflate(const uint8_t* src, const Member& m, const std::string& path) {
    if (m.usize > (uint64_t{1} << 40)) return Corrupt(path, "x.npy claims an uncompressed size beyond 1 TiB");
    if (!zinit_) {
      zs_ = {};
      if (inflateInit2(&zs_, -MAX_WBITS) != Z_OK) return absl::InternalError("zlib: inflateInit2 failed");
      zinit_ = true;
    } else if (inflateReset(&zs_) != Z_OK) {
      return absl::InternalError("zlib: inflateReset failed");
    }
    if (m.usize > inflated_cap_ || !inflated_) {
      inflated_.reset(new uint8_t[std::max<uint64_t>(m.usize, 1)]);
      inflated_cap_ = std::max<uint64_t>(m.usize, 1);
    }
    // zlib counts in uInt: feed and drain in pieces of at most 1 GiB. Z_BUF_ERROR (no progress possible: input
    // used up or output full) ends the loop like any other non-Z_OK code.
    constexpr uint64_t kPiece = uint64_t{1} << 30;
    uint64_t in_left = m.size, out_left = m.usize;
    zs_.next_in = const_cast<Bytef*>(src);
    zs_.avail_in = 0;
    zs_.next_out = inflated_.get();
    zs_.avail_out = 0;
    int rc;
    do {
      if (zs_.avail_in == 0 && in_left > 0) {
        zs_.avail_in = static_cast<uInt>(std::min(in_left, kPiece));
        in_left -= zs_.avail_in;
      }
      if (zs_.avail_out == 0 && out_left > 0) {
        zs_.avail_out = static_cast<uInt>(std::min(out_left, kPiece));
        out_left -= zs_.avail_out;
      }
      rc = inflate(&zs_, Z_NO_FLUSH);
    } while (rc == Z_OK);
    if (rc != Z_STREAM_END || zs_.total_out != m.usize) {
      return Corrupt(path, absl::StrCat("x.npy does not inflate to its ", m.usize, " bytes (zlib: ",
                                        zs_.msg != nullptr ? zs_.msg : "stream ended early", ")"));
    }
    return inflated_.get();
  }

  const StorageTarget target_;
  std::unique_ptr<StorageReader> storage_;
  const bool keep_;            // reader.read_type: memory
  std::string cached_;         // the file in buf_ when cached_valid_
  bool cached_valid_ = false;
  uint64_t cached_size_ = 0;
  AlignedBuffer buf_;  // the whole file (rounded up to the engine's alignment); never shrinks
  std::unique_ptr<uint8_t[]> inflated_;  // a deflated x.npy, inflated; never shrinks
  uint64_t inflated_cap_ = 0;
  z_stream zs_{};
  bool zinit_ = false;
  internal::StridedSample s_;     // the last sample, inside buf_ or inflated_
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

// libzip 1.7.3 (Debian 12) fills two static bitmasks on its first zip_open_from_source call without a lock
// (needed_support_read, then needed_support_write; objdump shows the two stores). A thread that sees the first set
// and the second not yet treats every write command as needed, finds the source read-only and refuses to truncate
// it: "libzip open: Read-only archive" on an agent's first npz file (two agents in one clean-clone CI run). One
// archive opened before any generate thread does fills both, under the lock of a C++ function-local static.
void FillLibzipStatics() {
  static const bool filled = [] {
    AlignedBuffer buf;
    BufferDestination dest(&buf);
    zip_error_t err;
    zip_error_init(&err);
    if (zip_source_t* src = zip_source_function_create(BufferDestination::Callback, &dest, &err)) {
      if (zip_t* za = zip_open_from_source(src, ZIP_TRUNCATE, &err)) {
        zip_discard(za);  // frees the source with it
      } else {
        zip_source_free(src);
      }
    }
    zip_error_fini(&err);
    return true;
  }();
  (void)filled;
}

class NpzFormat final : public Format {
 public:
  explicit NpzFormat(FormatOptions o) : Format(std::move(o)) {}
  const char* name() const override { return "npz"; }
  const char* extension() const override { return "npz"; }
  std::unique_ptr<SampleReader> NewSampleReader() const override {
    return std::make_unique<NpzSampleReader>(options_.target(), options_.read_in_memory);
  }

  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    const int64_t nspf = options_.samples_per_file;
    const internal::DType& t = *internal::FindDType(options_.element_type);
    std::vector<int64_t> xshape = options_.sample_dims;
    xshape.push_back(nspf);
    uint64_t xelems = 1;
    for (int64_t d : xshape) xelems *= static_cast<uint64_t>(d);
    const uint64_t xbytes = xelems * t.itemsize;
    const std::string yhdr = NpyHeader("<i8", {nspf});
    std::vector<uint8_t> y(yhdr.size() + static_cast<size_t>(nspf) * 8, 0);
    std::memcpy(y.data(), yhdr.data(), yhdr.size());
    // Integer types: random bytes streamed into libzip (the same bytes FillRandom makes). Float types need values in
    // [0, 1): the member is filled in memory first.
    const std::string xhdr = NpyHeader(t.descr, xshape);
    RandomNpySource x(xhdr, xbytes, seed);
    std::vector<uint8_t> xfloat;
    if (t.kind == 'f') {
      xfloat.resize(xhdr.size() + xbytes);
      std::memcpy(xfloat.data(), xhdr.data(), xhdr.size());
      internal::Rng rng(seed);
      internal::FillRandom(t, rng, xfloat.data() + xhdr.size(), xelems);
    }
    const bool deflate = options_.compression == "zip";

    // The archive buffer is reused by this thread's next file: its pages stay mapped (no page faults, no
    // zeroing by the kernel per file).
    thread_local AlignedBuffer archive;
    archive.Reserve(xbytes + y.size() + (size_t{64} << 10));
    BufferDestination dest(&archive);

    auto zerr = [&path](const char* what, const char* detail) {
      return absl::InternalError(absl::StrCat(path, ": libzip ", what, ": ", detail));
    };
    FillLibzipStatics();
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
      zip_source_t* src = m == 1            ? zip_source_buffer(za.get(), y.data(), y.size(), 0)
                           : xfloat.empty() ? zip_source_function(za.get(), RandomNpySource::Callback, &x)
                                            : zip_source_buffer(za.get(), xfloat.data(), xfloat.size(), 0);
      if (src == nullptr) return zerr("source", zip_strerror(za.get()));
      const zip_int64_t idx = zip_file_add(za.get(), m == 0 ? "x.npy" : "y.npy", src, ZIP_FL_ENC_UTF_8);
      if (idx < 0) {
        zip_source_free(src);
        return zerr("add", zip_strerror(za.get()));
      }
      const zip_int32_t method = deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE;
      if (zip_set_file_compression(za.get(), static_cast<zip_uint64_t>(idx), method,
                                   deflate ? kNumpyDeflateLevel : 0) != 0 ||
          zip_file_set_mtime(za.get(), static_cast<zip_uint64_t>(idx), kZipMtime, 0) != 0) {
        return zerr("member settings", zip_strerror(za.get()));
      }
    }
    if (zip_close(za.get()) != 0) return zerr("close", zip_strerror(za.get()));
    za.release();  // zip_close freed it

    internal::FileWriter w(NewWriteSink(options_.target()));
    absl::Status st = w.Open(path);
    if (st.ok()) st = w.AppendDirect(dest.data(), dest.size(), stats);
    if (st.ok()) st = w.Finish(stats);
    if (st.ok()) stats.AddSamples(static_cast<uint64_t>(nspf));
    return st;
  }
};

}  // namespace

std::unique_ptr<Format> NewNpzFormat(const FormatOptions& options) { return std::make_unique<NpzFormat>(options); }


}  // namespace dlio
