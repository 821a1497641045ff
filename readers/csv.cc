#include "readers/whole_file.h"
#include "readers/csv.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "readers/dtype.h"
#include "storage/io_util.h"
#include "storage/open.h"

namespace dlio {
namespace {

template <typename T>
T LoadAs(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Appends element `p` of type t as pandas would print it.
void AppendValue(const internal::DType& t, const uint8_t* p, std::string& out) {
  char buf[64];
  std::to_chars_result r{buf, std::errc()};
  char* end = buf + sizeof buf;
  if (t.kind == 'f') {
    if (t.itemsize == 8) r = std::to_chars(buf, end, LoadAs<double>(p));
    else if (t.itemsize == 4) r = std::to_chars(buf, end, LoadAs<float>(p));
    else r = std::to_chars(buf, end, internal::HalfToFloat(LoadAs<uint16_t>(p)));
  } else if (t.kind == 'u') {
    uint64_t v = 0;
    std::memcpy(&v, p, t.itemsize);  // little-endian host
    r = std::to_chars(buf, end, v);
  } else {
    int64_t v;
    switch (t.itemsize) {
      case 1: v = LoadAs<int8_t>(p); break;
      case 2: v = LoadAs<int16_t>(p); break;
      case 4: v = LoadAs<int32_t>(p); break;
      default: v = LoadAs<int64_t>(p); break;
    }
    r = std::to_chars(buf, end, v);
  }
  out.append(buf, r.ptr);
}

// Stores a parsed value as element type t at p (integers wrap as numpy's astype would; floats round).
void StoreValue(const internal::DType& t, bool is_int, int64_t iv, double dv, uint8_t* p) {
  if (t.kind == 'f') {
    const double v = is_int ? static_cast<double>(iv) : dv;
    if (t.itemsize == 8) {
      std::memcpy(p, &v, 8);
    } else {
      const float f = static_cast<float>(v);
      if (t.itemsize == 4) {
        std::memcpy(p, &f, 4);
      } else {
        // float16 by truncation of the float's bits: enough for a check of what was read.
        const uint16_t h = internal::HalfBitsOfExact(f);
        std::memcpy(p, &h, 2);
      }
    }
    return;
  }
  const int64_t v = is_int ? iv : static_cast<int64_t>(dv);
  std::memcpy(p, &v, t.itemsize);  // the low bytes on a little-endian host
}

class CsvSampleReader final : public SampleReader {
 public:
  CsvSampleReader(const internal::DType& t, StorageTarget target, bool keep, bool gzip)
      : t_(t), file_(std::move(target), keep), gzip_(gzip) {}
  CsvSampleReader(const CsvSampleReader&) = delete;
  CsvSampleReader& operator=(const CsvSampleReader&) = delete;
  ~CsvSampleReader() override {
    if (zinit_) inflateEnd(&zs_);
  }

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    last_bytes_ = 0;
    absl::StatusOr<uint64_t> size = file_.Read(path, stats);
    if (!size.ok()) return size.status();
    const char* p = reinterpret_cast<const char*>(file_.data());
    if (gzip_) {  // dataset.compression: gzip, as pandas' read_csv(compression="gzip") would
      absl::StatusOr<uint64_t> n = Gunzip(file_.data(), *size, path);
      if (!n.ok()) return n.status();
      p = reinterpret_cast<const char*>(text_.get());
      size = *n;
    }
    const char* end = p + *size;
    // Row `sample`: skip that many line ends.
    const char* row = p;
    for (uint32_t r = 0; r < sample; ++r) {
      const char* nl = static_cast<const char*>(std::memchr(row, '\n', static_cast<size_t>(end - row)));
      if (nl == nullptr || nl + 1 >= end) {
        return absl::OutOfRangeError(absl::StrCat(path, ": sample ", sample, " requested, file has ", r + 1, " rows"));
      }
      row = nl + 1;
    }
    if (row >= end) return absl::OutOfRangeError(absl::StrCat(path, ": sample ", sample, " requested, file is empty"));
    const char* row_end = static_cast<const char*>(std::memchr(row, '\n', static_cast<size_t>(end - row)));
    if (row_end == nullptr) row_end = end;
    if (row_end > row && row_end[-1] == '\r') --row_end;
    const std::string_view text(row, static_cast<size_t>(row_end - row));
    if (text.empty()) return absl::DataLossError(absl::StrCat(path, ": row ", sample, " is empty"));

    size_t values = 1;
    for (char c : text) values += c == ',';
    const uint64_t need = values * t_.itemsize;
    if (need > row_cap_ || !row_) {
      row_.reset(new uint8_t[need]);
      row_cap_ = need;
    }
    size_t i = 0;
    for (const char* v = text.data(); i < values; ++i) {
      const char* stop = static_cast<const char*>(std::memchr(v, ',', static_cast<size_t>(row_end - v)));
      if (stop == nullptr) stop = row_end;
      int64_t iv = 0;
      double dv = 0;
      bool is_int = true;
      auto ri = std::from_chars(v, stop, iv);
      if (ri.ec != std::errc() || ri.ptr != stop) {
        is_int = false;
        auto rd = std::from_chars(v, stop, dv);
        if (rd.ec != std::errc() || rd.ptr != stop) {
          return absl::DataLossError(absl::StrCat(path, ": row ", sample, " value ", i, " '",
                                                  std::string(v, static_cast<size_t>(std::min<ptrdiff_t>(stop - v, 32))),
                                                  "' is not a number"));
        }
      }
      StoreValue(t_, is_int, iv, dv, row_.get() + i * t_.itemsize);
      v = stop + 1;
    }
    last_bytes_ = need;
    stats.AddSamples(1);
    return need;
  }

  std::string_view last_sample() const override {
    return {reinterpret_cast<const char*>(row_.get()), static_cast<size_t>(last_bytes_)};
  }

 private:
  const internal::DType& t_;
  // Inflates a gzip file into text_ (grow-only; sized from the gzip trailer's ISIZE; the zlib state is made once
  // and reset per file, so no allocation per sample once warm). Returns the text's size.
  absl::StatusOr<uint64_t> Gunzip(const uint8_t* src, uint64_t n, const std::string& path) {
    if (n < 18) return absl::DataLossError(absl::StrCat(path, ": not a gzip file (", n, " bytes)"));
    uint32_t isize;
    std::memcpy(&isize, src + n - 4, 4);  // little-endian host; the size modulo 2^32
    if (!zinit_) {
      zs_ = {};
      if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("zlib: inflateInit2 failed");
      zinit_ = true;
    } else if (inflateReset(&zs_) != Z_OK) {
      return absl::InternalError("zlib: inflateReset failed");
    }
    uint64_t cap = std::max<uint64_t>(isize, 1);
    if (cap > text_cap_ || !text_) {
      text_.reset(new uint8_t[cap]);
      text_cap_ = cap;
    }
    zs_.next_in = const_cast<Bytef*>(src);
    zs_.avail_in = static_cast<uInt>(std::min<uint64_t>(n, UINT32_MAX));
    zs_.next_out = text_.get();
    zs_.avail_out = static_cast<uInt>(std::min<uint64_t>(text_cap_, UINT32_MAX));
    const int rc = inflate(&zs_, Z_FINISH);
    if (rc != Z_STREAM_END) {
      return absl::DataLossError(absl::StrCat(path, ": gzip data does not inflate (zlib: ",
                                              zs_.msg != nullptr ? zs_.msg : "stream ended early", ")"));
    }
    return zs_.total_out;
  }

  internal::WholeFileReader file_;  // the whole file (dlio_ext.io_engine, reader.read_type)
  const bool gzip_;
  z_stream zs_{};
  bool zinit_ = false;
  std::unique_ptr<uint8_t[]> text_;  // the inflated text of a gzip file; never shrinks
  uint64_t text_cap_ = 0;
  std::unique_ptr<uint8_t[]> row_;  // the parsed row in the element type; never shrinks
  uint64_t row_cap_ = 0, last_bytes_ = 0;
};

class CsvFormat final : public Format {
 public:
  explicit CsvFormat(FormatOptions o) : Format(std::move(o)), t_(*internal::FindDType(options_.element_type)) {}
  const char* name() const override { return "csv"; }
  // DLIO's generator appends ".gz" to the name of a gzip-compressed csv file (pandas to_csv with compression).
  const char* extension() const override { return gzip() ? "csv.gz" : "csv"; }
  std::unique_ptr<SampleReader> NewSampleReader() const override {
    return std::make_unique<CsvSampleReader>(t_, options_.target(), options_.read_in_memory, gzip());
  }

  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    uint64_t n = 1;
    for (int64_t d : options_.sample_dims) n *= static_cast<uint64_t>(d);
    std::vector<uint8_t> record(n * t_.itemsize);
    internal::Rng rng(seed);
    internal::FillRandom(t_, rng, record.data(), n);
    std::string row;
    row.reserve(n * 4);
    for (uint64_t i = 0; i < n; ++i) {
      if (i > 0) row.push_back(',');
      AppendValue(t_, record.data() + i * t_.itemsize, row);
    }
    row.push_back('\n');
    internal::FileWriter w(NewWriteSink(options_.target()));
    absl::Status st = w.Open(path);
    if (gzip()) {
      // The whole text deflated at once into a gzip stream (zlib, compression_level), then written.
      std::string text;
      text.reserve(row.size() * static_cast<size_t>(options_.samples_per_file));
      for (int64_t r = 0; r < options_.samples_per_file; ++r) text += row;
      uLongf bound = static_cast<uLongf>(compressBound(static_cast<uLong>(text.size())) + 32);
      std::vector<uint8_t> gz(bound);
      z_stream zs{};
      if (deflateInit2(&zs, options_.compression_level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        return absl::InternalError("zlib: deflateInit2 failed");
      }
      zs.next_in = reinterpret_cast<Bytef*>(text.data());
      zs.avail_in = static_cast<uInt>(text.size());
      zs.next_out = gz.data();
      zs.avail_out = static_cast<uInt>(gz.size());
      const int rc = deflate(&zs, Z_FINISH);
      const uint64_t out = zs.total_out;
      deflateEnd(&zs);
      if (rc != Z_STREAM_END) return absl::InternalError(absl::StrCat(path, ": zlib deflate failed (", rc, ")"));
      if (st.ok()) st = w.AppendDirect(gz.data(), out, stats);
      if (st.ok()) st = w.Finish(stats);
      if (st.ok()) stats.AddSamples(static_cast<uint64_t>(options_.samples_per_file));
      return st;
    }
    for (int64_t r = 0; st.ok() && r < options_.samples_per_file; ++r) st = w.Append(row.data(), row.size(), stats);
    if (st.ok()) st = w.Finish(stats);
    if (st.ok()) stats.AddSamples(static_cast<uint64_t>(options_.samples_per_file));
    return st;
  }

 private:
  bool gzip() const { return options_.compression == "gzip"; }
  const internal::DType& t_;
};

}  // namespace

std::unique_ptr<Format> NewCsvFormat(const FormatOptions& options) { return std::make_unique<CsvFormat>(options); }

}  // namespace dlio
