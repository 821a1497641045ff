#include "readers/npz.h"

#include <sys/stat.h>
#include <zip.h>
#include <zlib.h>

#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "readers/dtype.h"
#include "readers/io_util.h"
#include "readers/npy.h"

namespace dlio {
namespace {

using internal::ErrnoError;
using internal::Fd;

// libzip stamps members with the current time; a fixed one (2020-01-01 00:00 UTC) makes a seed reproduce the file.
constexpr time_t kZipMtime = 1577836800;
// numpy.savez_compressed deflates with zlib's default level (zipfile's compresslevel None); libzip's own default
// would be 9.
constexpr zip_uint32_t kNumpyDeflateLevel = 6;
static_assert(kNpzReadChunk == internal::kWholeFileReadChunk, "npz.h documents the whole-file read size");

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
  NpzSampleReader() = default;
  NpzSampleReader(const NpzSampleReader&) = delete;
  NpzSampleReader& operator=(const NpzSampleReader&) = delete;
  ~NpzSampleReader() override {
    if (zinit_) inflateEnd(&zs_);
  }

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    s_ = {};
    absl::StatusOr<uint64_t> size = internal::ReadWholeFile(path, buf_, cap_, stats);
    if (!size.ok()) return size.status();

    Member x;
    if (absl::Status s = FindMember(buf_.get(), *size, "x.npy", path, &x); !s.ok()) return s;
    const uint8_t* npy = buf_.get() + x.data_offset;
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
    internal::TouchPages(s_.base, s_.elems, s_.stride);
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

  std::unique_ptr<uint8_t[]> buf_;  // the whole file; never shrinks
  uint64_t cap_ = 0;
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

class NpzFormat final : public Format {
 public:
  explicit NpzFormat(FormatOptions o) : Format(std::move(o)) {}
  const char* name() const override { return "npz"; }
  const char* extension() const override { return "npz"; }
  std::unique_ptr<SampleReader> NewSampleReader() const override { return std::make_unique<NpzSampleReader>(); }

  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    const int64_t nspf = options_.samples_per_file;
    const internal::DType& t = *internal::FindDType(options_.element_type);
    std::vector<int64_t> xshape = options_.sample_dims;
    xshape.push_back(nspf);
    uint64_t xelems = 1;
    for (int64_t d : xshape) xelems *= static_cast<uint64_t>(d);
    const uint64_t xbytes = xelems * t.itemsize;

    std::string xhdr = NpyHeader(t.descr, xshape), yhdr = NpyHeader("<i8", {nspf});
    std::vector<uint8_t> x(xhdr.size() + xbytes), y(yhdr.size() + static_cast<size_t>(nspf) * 8, 0);
    std::memcpy(x.data(), xhdr.data(), xhdr.size());
    std::memcpy(y.data(), yhdr.data(), yhdr.size());
    internal::Rng rng(seed);
    internal::FillRandom(t, rng, x.data() + xhdr.size(), xelems);
    const bool deflate = options_.compression == "zip";

    auto zerr = [&path](const char* what, const char* detail) {
      return absl::InternalError(absl::StrCat(path, ": libzip ", what, ": ", detail));
    };
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t* mem = zip_source_buffer_create(nullptr, 0, 0, &err);
    if (mem == nullptr) return zerr("buffer", zip_error_strerror(&err));
    std::unique_ptr<zip_t, ZipCloser> za(zip_open_from_source(mem, ZIP_TRUNCATE, &err));
    if (!za) {
      zip_source_free(mem);
      return zerr("open", zip_error_strerror(&err));
    }
    zip_source_keep(mem);  // survive zip_close() so the archive bytes can be read back
    struct SourceFree {
      void operator()(zip_source_t* s) const { zip_source_free(s); }
    };
    std::unique_ptr<zip_source_t, SourceFree> mem_owner(mem);

    for (auto [name, buf] : {std::pair<const char*, std::vector<uint8_t>*>{"x.npy", &x}, {"y.npy", &y}}) {
      zip_source_t* src = zip_source_buffer(za.get(), buf->data(), buf->size(), 0);
      if (src == nullptr) return zerr("source", zip_strerror(za.get()));
      zip_int64_t idx = zip_file_add(za.get(), name, src, ZIP_FL_ENC_UTF_8);
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

    if (zip_source_open(mem) != 0) return zerr("reopen", zip_error_strerror(zip_source_error(mem)));
    internal::FileWriter w;
    absl::Status st = w.Open(path);
    // Stream the in-memory archive to the file in kWriteChunk pieces (x is no longer needed, reuse its memory).
    std::vector<uint8_t>& chunk = x;
    chunk.resize(std::max<size_t>(chunk.size(), 1));
    while (st.ok()) {
      zip_int64_t r = zip_source_read(mem, chunk.data(), std::min(chunk.size(), internal::kWriteChunk));
      if (r < 0) st = zerr("read back", zip_error_strerror(zip_source_error(mem)));
      if (r <= 0) break;
      st = w.Append(chunk.data(), static_cast<size_t>(r), stats);
    }
    zip_source_close(mem);
    if (st.ok()) st = w.Finish(stats);
    if (st.ok()) stats.AddSamples(static_cast<uint64_t>(nspf));
    return st;
  }
};

}  // namespace

std::unique_ptr<Format> NewNpzFormat(const FormatOptions& options) { return std::make_unique<NpzFormat>(options); }

}  // namespace dlio
