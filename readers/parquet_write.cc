// parquet_internal.h WriteParquetFile: the Parquet writer, from the format specification: "PAR1", the row groups
// (for each, every column's chunk of data pages v1: repetition levels, definition levels, PLAIN values, the body
// compressed with the codec), the footer (FileMetaData, Thrift compact protocol), its length and "PAR1".
#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "readers/dtype.h"
#include "readers/format.h"
#include "readers/parquet_internal.h"
#include "storage/io_util.h"
#include "storage/open.h"

namespace dlio::parquet_internal {
namespace {

constexpr char kMagic[4] = {'P', 'A', 'R', '1'};
constexpr uint8_t kMaxDefLevel = 3;  // optional list, repeated group, optional element: a present value

void PutLe32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}

void PutVarint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
}

// One RLE run of the RLE/bit-packing hybrid: header (count << 1), then the value in one byte (bit widths <= 8).
void PutRun(std::string& s, uint64_t count, uint8_t value) {
  if (count == 0) return;
  PutVarint(s, count << 1);
  s.push_back(static_cast<char>(value));
}

// Min and max of a page's values, kept as the physical type's PLAIN bytes (Statistics.min_value/max_value).
struct MinMax {
  bool any = false;
  double fmin = 0, fmax = 0;  // floats (float16 as its value)
  int64_t imin = 0, imax = 0;
  uint64_t umin = 0, umax = 0;
  void Merge(const MinMax& o, char kind) {
    if (!o.any) return;
    if (!any) {
      *this = o;
      return;
    }
    fmin = std::min(fmin, o.fmin), fmax = std::max(fmax, o.fmax);
    imin = std::min(imin, o.imin), imax = std::max(imax, o.imax);
    umin = std::min(umin, o.umin), umax = std::max(umax, o.umax);
  }
};

// Min and max of n unsigned words of W bytes at p: a loop the compiler vectorises. Our floats are in [0, 1), whose
// IEEE bit patterns order as their values, so the floats' extremes come from their bits too.
template <typename W>
void WordMinMax(const uint8_t* p, size_t n, uint64_t* lo, uint64_t* hi) {
  W mn = std::numeric_limits<W>::max(), mx = 0;
  for (size_t i = 0; i < n; ++i) {
    W v;
    std::memcpy(&v, p + i * sizeof(W), sizeof(W));
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  *lo = mn;
  *hi = mx;
}

double FloatOfBits(uint64_t bits, size_t bytes) {
  if (bytes == 2) return internal::HalfToFloat(static_cast<uint16_t>(bits));
  if (bytes == 4) {
    float f;
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&f, &b, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

// Min and max of n signed or unsigned integers of `bytes` (4 or 8) at p.
MinMax IntMinMax(const uint8_t* p, size_t n, size_t bytes) {
  MinMax m;
  m.any = n > 0;
  m.imin = std::numeric_limits<int64_t>::max(), m.imax = std::numeric_limits<int64_t>::min();
  m.umin = std::numeric_limits<uint64_t>::max(), m.umax = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t v;
    uint64_t u;
    if (bytes == 8) {
      std::memcpy(&v, p + 8 * i, 8);
      u = static_cast<uint64_t>(v);
    } else {
      int32_t w;
      std::memcpy(&w, p + 4 * i, 4);
      v = w;
      u = static_cast<uint32_t>(w);
    }
    m.imin = std::min(m.imin, v), m.imax = std::max(m.imax, v);
    m.umin = std::min(m.umin, u), m.umax = std::max(m.umax, u);
  }
  return m;
}

// n float32 (bytes 4) or float64 (bytes 8) values in [0, 1) at p, as FillRandom draws them (24 or 53 random bits
// scaled), but from one bulk fill of random words converted in place: a loop the compiler vectorises, where
// FillRandom's value-by-value draw made the generator CPU-bound (bench/ case pqgen).
void FillUnitFloats(internal::Rng& rng, uint8_t* p, size_t n, size_t bytes) {
  rng.Fill(p, n * bytes);
  if (bytes == 4) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t w;
      std::memcpy(&w, p + 4 * i, 4);
      const float v = static_cast<float>(w >> 8) * 0x1.0p-24f;
      std::memcpy(p + 4 * i, &v, 4);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    const double v = static_cast<double>(w >> 11) * 0x1.0p-53;
    std::memcpy(p + 8 * i, &v, 8);
  }
}

// The page's values: `n` values of column `c` in PLAIN form at `out` (n * file_bytes), drawn from `rng` (floats in
// [0, 1) as the fork's np.random.rand; integers uniformly), with their min and max.
MinMax FillValues(const PhysicalColumn& c, internal::Rng& rng, uint8_t* out, size_t n, std::vector<uint8_t>& tmp) {
  const internal::DType& t = *internal::FindDType(c.dtype);
  if (c.kind == 'f' && c.file_bytes >= 4) {
    FillUnitFloats(rng, out, n, c.file_bytes);
  } else if (c.file_bytes == c.mem_bytes) {
    internal::FillRandom(t, rng, out, n);
  } else {  // 8- and 16-bit integers widened to INT32
    tmp.resize(n * c.mem_bytes);
    internal::FillRandom(t, rng, tmp.data(), n);
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      if (c.mem_bytes == 1) {
        v = c.kind == 'i' ? static_cast<int8_t>(tmp[i]) : static_cast<int32_t>(tmp[i]);
      } else {
        uint16_t u;
        std::memcpy(&u, tmp.data() + 2 * i, 2);
        v = c.kind == 'i' ? static_cast<int16_t>(u) : static_cast<int32_t>(u);
      }
      std::memcpy(out + 4 * i, &v, 4);
    }
  }
  if (c.kind != 'f') return IntMinMax(out, n, c.file_bytes);
  MinMax m;
  m.any = n > 0;
  uint64_t lo = 0, hi = 0;
  if (c.file_bytes == 2) WordMinMax<uint16_t>(out, n, &lo, &hi);
  if (c.file_bytes == 4) WordMinMax<uint32_t>(out, n, &lo, &hi);
  if (c.file_bytes == 8) WordMinMax<uint64_t>(out, n, &lo, &hi);
  m.fmin = FloatOfBits(lo, c.file_bytes), m.fmax = FloatOfBits(hi, c.file_bytes);
  return m;
}

// A value of column `c` in its PLAIN bytes.
std::string Plain(const PhysicalColumn& c, double f, int64_t i, uint64_t u) {
  std::string s(c.file_bytes, '\0');
  if (c.kind == 'f') {
    if (c.file_bytes == 8) {
      std::memcpy(s.data(), &f, 8);
    } else if (c.file_bytes == 4) {
      const float v = static_cast<float>(f);
      std::memcpy(s.data(), &v, 4);
    } else {
      const uint16_t h = internal::HalfBitsOfExact(static_cast<float>(f));
      std::memcpy(s.data(), &h, 2);
    }
  } else if (c.kind == 'i') {
    std::memcpy(s.data(), &i, c.file_bytes);  // little-endian: the low bytes
  } else {
    std::memcpy(s.data(), &u, c.file_bytes);
  }
  return s;
}

pf::Statistics StatsOf(const PhysicalColumn& c, const MinMax& m) {
  pf::Statistics st;
  st.__set_null_count(0);
  if (!m.any) return st;
  st.__set_min_value(Plain(c, c.kind == 'f' && m.fmin == 0 ? -0.0 : m.fmin, m.imin, m.umin));
  st.__set_max_value(Plain(c, m.fmax, m.imax, m.umax));
  if (c.kind == 'f') st.__set_nan_count(0);
  return st;
}

// Writes one column chunk of `rows` rows; fills its ColumnMetaData.
class ChunkWriter {
 public:
  ChunkWriter(const FormatOptions& o, internal::FileWriter& w, internal::Rng& rng)
      : w_(w), rng_(rng), codec_(CodecOf(o.compression)) {}

  absl::Status Write(const PhysicalColumn& c, int64_t rows, IoStats& stats, pf::ColumnChunk* out) {
    const int64_t start = static_cast<int64_t>(w_.bytes_written());
    const uint64_t row_bytes = static_cast<uint64_t>(c.size) * c.file_bytes;
    const int64_t per_page = std::max<int64_t>(1, static_cast<int64_t>(kPageBytes / std::max<uint64_t>(row_bytes, 1)));
    int64_t uncompressed = 0;
    MinMax chunk;
    for (int64_t r = 0; r < rows; r += per_page) {
      const int64_t n = std::min(per_page, rows - r);
      const uint64_t values = static_cast<uint64_t>(n) * static_cast<uint64_t>(c.size);
      body_.clear();
      levels_.clear();
      if (c.size == 1) {
        PutRun(levels_, values, 0);
      } else {
        for (int64_t k = 0; k < n; ++k) PutRun(levels_, 1, 0), PutRun(levels_, static_cast<uint64_t>(c.size) - 1, 1);
      }
      PutLe32(body_, static_cast<uint32_t>(levels_.size()));
      body_ += levels_;
      levels_.clear();
      PutRun(levels_, values, kMaxDefLevel);
      PutLe32(body_, static_cast<uint32_t>(levels_.size()));
      body_ += levels_;
      const size_t head = body_.size();
      body_.resize(head + values * c.file_bytes);
      const MinMax m = FillValues(c, rng_, reinterpret_cast<uint8_t*>(body_.data()) + head, values, tmp_);
      chunk.Merge(m, c.kind);
      const std::string* page = &body_;
      if (codec_ != pf::CompressionCodec::UNCOMPRESSED) {
        if (absl::Status s = Compress(codec_, reinterpret_cast<const uint8_t*>(body_.data()), body_.size(), packed_);
            !s.ok()) {
          return s;
        }
        page = &packed_;
      }
      pf::PageHeader h;
      h.__set_type(pf::PageType::DATA_PAGE);
      h.__set_uncompressed_page_size(static_cast<int32_t>(body_.size()));
      h.__set_compressed_page_size(static_cast<int32_t>(page->size()));
      pf::DataPageHeader dp;
      dp.__set_num_values(static_cast<int32_t>(values));
      dp.__set_encoding(pf::Encoding::PLAIN);
      dp.__set_definition_level_encoding(pf::Encoding::RLE);
      dp.__set_repetition_level_encoding(pf::Encoding::RLE);
      dp.__set_statistics(StatsOf(c, m));
      h.__set_data_page_header(dp);
      const std::string header = Serialize(h);
      uncompressed += static_cast<int64_t>(header.size() + body_.size());
      if (absl::Status s = w_.Append(header.data(), header.size(), stats); !s.ok()) return s;
      if (absl::Status s = w_.Append(page->data(), page->size(), stats); !s.ok()) return s;
    }
    pf::ColumnMetaData md;
    md.__set_type(c.type);
    md.__set_encodings({pf::Encoding::PLAIN, pf::Encoding::RLE});
    md.__set_path_in_schema({c.name, "list", "element"});
    md.__set_codec(codec_);
    md.__set_num_values(rows * c.size);
    md.__set_total_uncompressed_size(uncompressed);
    md.__set_total_compressed_size(static_cast<int64_t>(w_.bytes_written()) - start);
    md.__set_data_page_offset(start);
    md.__set_statistics(StatsOf(c, chunk));
    out->__set_file_offset(start);
    out->__set_meta_data(md);
    return absl::OkStatus();
  }

 private:
  internal::FileWriter& w_;
  internal::Rng& rng_;
  const pf::CompressionCodec::type codec_;
  std::string body_, levels_, packed_;  // reused page by page (grow only)
  std::vector<uint8_t> tmp_;
};

// The row counts of the file's row groups: batches of generation_batch_size rows (0 = all), each cut into groups
// of row_group_size (a group never spans two batches, as one pyarrow write_table per batch).
std::vector<int64_t> RowGroupRows(int64_t rows, int64_t group, int64_t batch) {
  std::vector<int64_t> v;
  if (batch <= 0) batch = rows;
  for (int64_t b = 0; b < rows; b += batch) {
    const int64_t in_batch = std::min(batch, rows - b);
    for (int64_t g = 0; g < in_batch; g += group) v.push_back(std::min(group, in_batch - g));
  }
  return v;
}

}  // namespace

absl::Status WriteParquetFile(const FormatOptions& o, const std::string& path, uint64_t seed, IoStats& stats) {
  std::vector<PhysicalColumn> cols;
  for (const ParquetColumn& c : o.parquet_columns) cols.push_back(PhysicalOf(c));
  internal::Rng rng(seed);
  internal::FileWriter w(NewWriteSink(o.target()));
  absl::Status st = w.Open(path);
  if (st.ok()) st = w.Append(kMagic, 4, stats);
  pf::FileMetaData meta;
  ChunkWriter chunks(o, w, rng);
  int16_t ordinal = 0;
  for (int64_t rows : RowGroupRows(o.samples_per_file, o.parquet.row_group_size, o.parquet.generation_batch_size)) {
    if (!st.ok()) break;
    pf::RowGroup rg;
    rg.__set_num_rows(rows);
    rg.__set_file_offset(static_cast<int64_t>(w.bytes_written()));
    int64_t total = 0, compressed = 0;
    for (size_t i = 0; st.ok() && i < cols.size(); ++i) {
      pf::ColumnChunk cc;
      st = chunks.Write(cols[i], rows, stats, &cc);
      total += cc.meta_data.total_uncompressed_size;
      compressed += cc.meta_data.total_compressed_size;
      rg.columns.push_back(cc);
    }
    rg.__set_total_byte_size(total);
    rg.__set_total_compressed_size(compressed);
    rg.__set_ordinal(ordinal++);
    meta.row_groups.push_back(rg);
  }
  if (!st.ok()) return st;
  meta.__set_version(1);
  meta.__set_schema(SchemaOf(cols));
  meta.__set_num_rows(o.samples_per_file);
  meta.__set_created_by("dlio-cpp parquet writer");
  std::vector<pf::ColumnOrder> orders(cols.size());
  for (pf::ColumnOrder& c : orders) c.__set_TYPE_ORDER(pf::TypeDefinedOrder());
  meta.__set_column_orders(orders);
  std::string footer = Serialize(meta);
  PutLe32(footer, static_cast<uint32_t>(footer.size()));
  footer.append(kMagic, 4);
  st = w.Append(footer.data(), footer.size(), stats);
  if (st.ok()) st = w.Finish(stats);
  if (st.ok()) stats.AddSamples(static_cast<uint64_t>(o.samples_per_file));
  return st;
}

}  // namespace dlio::parquet_internal
