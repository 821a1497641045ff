#include "readers/parquet.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "readers/dtype.h"
#include "readers/parquet_internal.h"
#include "storage/io_util.h"
#include "storage/open.h"
#include "storage/storage.h"

namespace dlio {
namespace {

namespace pi = parquet_internal;
namespace pf = ::dlio::parquet_format;

constexpr uint64_t kTailBytes = 64 * 1024;  // the first footer read (pyarrow's default footer read size too)
// Reads of a byte range come in windows of this size (one request each, or kUringPiece pieces with io_uring): big
// enough that a page-cached read is at memcpy speed, small enough for eight loader threads' buffers.
constexpr size_t kWindow = size_t{8} << 20;
// Over s3 each window is one ranged GET: larger windows, fewer requests (the fork GETs a row group at once).
constexpr size_t kS3Window = size_t{64} << 20;
// A page header is at most this long before its body (statistics of fixed-size values are small).
constexpr size_t kMaxPageHeader = 64 * 1024;

// One column chunk a reader reads: its byte range and codec.
struct Chunk {
  uint64_t off = 0, len = 0;
  pf::CompressionCodec::type codec = pf::CompressionCodec::UNCOMPRESSED;
};

struct Group {
  int64_t first_row = 0, rows = 0;
  std::vector<Chunk> chunks;        // the selected columns' chunks, in file order
  uint64_t span_off = 0, span_len = 0;  // from the first selected chunk to the end of the last
  bool fetched = false;             // read in this reader's epoch
};

// What a reader keeps of a file (its footer, parsed once per reader, i.e. per epoch).
struct FileInfo {
  std::vector<Group> groups;
  uint64_t row_bytes = 0;  // bytes a sample delivers: its row of the selected columns
};

// Bytes per value of a leaf as a sample holds it: our configured column's numpy size, else the physical width.
uint64_t ValueBytes(const pf::SchemaElement& leaf) {
  if (leaf.__isset.logicalType && leaf.logicalType.__isset.INTEGER) {
    return static_cast<uint64_t>(leaf.logicalType.INTEGER.bitWidth / 8);
  }
  switch (leaf.type) {
    case pf::Type::INT32:
    case pf::Type::FLOAT: return 4;
    case pf::Type::INT64:
    case pf::Type::DOUBLE: return 8;
    case pf::Type::INT96: return 12;
    case pf::Type::FIXED_LEN_BYTE_ARRAY: return static_cast<uint64_t>(std::max(leaf.type_length, 1));
    default: return 1;
  }
}

// The leaves of a schema (elements without children, the root excluded), in column-chunk order.
std::vector<const pf::SchemaElement*> Leaves(const pf::FileMetaData& m) {
  std::vector<const pf::SchemaElement*> v;
  for (size_t i = 1; i < m.schema.size(); ++i) {
    if (!m.schema[i].__isset.num_children || m.schema[i].num_children == 0) v.push_back(&m.schema[i]);
  }
  return v;
}

// The columns a reader selects: storage_options.columns, else the configured read: true ones.
std::set<std::string> Wanted(const FormatOptions& o) {
  std::set<std::string> s(o.parquet.read_columns.begin(), o.parquet.read_columns.end());
  if (!s.empty()) return s;
  for (const ParquetColumn& c : o.parquet_columns) {
    if (c.read) s.insert(c.name);
  }
  return s;
}

absl::StatusOr<FileInfo> Describe(const pf::FileMetaData& m, const FormatOptions& o, const std::string& path) {
  if (m.num_rows != o.samples_per_file) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": holds ", m.num_rows, " rows; dataset.num_samples_per_file is ", o.samples_per_file,
        " (every parquet file must hold exactly that many samples; regenerate the data or set the key to the "
        "files' row count)"));
  }
  const std::vector<const pf::SchemaElement*> leaves = Leaves(m);
  std::set<std::string> wanted = Wanted(o), present;
  for (const pf::RowGroup& rg : m.row_groups) {
    for (const pf::ColumnChunk& cc : rg.columns) {
      if (!cc.meta_data.path_in_schema.empty()) present.insert(cc.meta_data.path_in_schema[0]);
    }
  }
  for (const std::string& n : o.parquet.read_columns) {
    if (present.count(n) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(path, ": has no column '", n, "' (storage.storage_options."
                                                        "columns; the file's columns: ",
                                                        absl::StrJoin(present, ", "), ")"));
    }
  }
  bool any = false;
  for (const std::string& n : wanted) any |= present.count(n) > 0;
  if (!any) wanted = present;  // a file of other columns than the job's (an independent writer's): read them all
  FileInfo f;
  int64_t first = 0;
  for (const pf::RowGroup& rg : m.row_groups) {
    Group g;
    g.first_row = first;
    g.rows = rg.num_rows;
    first += rg.num_rows;
    uint64_t end = 0;
    for (size_t i = 0; i < rg.columns.size(); ++i) {
      const pf::ColumnMetaData& md = rg.columns[i].meta_data;
      if (md.path_in_schema.empty() || wanted.count(md.path_in_schema[0]) == 0) continue;
      Chunk c;
      c.off = static_cast<uint64_t>(md.__isset.dictionary_page_offset && md.dictionary_page_offset > 0
                                        ? std::min(md.dictionary_page_offset, md.data_page_offset)
                                        : md.data_page_offset);
      c.len = static_cast<uint64_t>(md.total_compressed_size);
      c.codec = md.codec;
      if (g.chunks.empty()) g.span_off = c.off;
      g.span_off = std::min(g.span_off, c.off);
      end = std::max(end, c.off + c.len);
      g.chunks.push_back(c);
      if (&rg == &m.row_groups[0] && rg.num_rows > 0 && i < leaves.size()) {
        f.row_bytes += static_cast<uint64_t>(md.num_values / rg.num_rows) * ValueBytes(*leaves[i]);
      }
    }
    g.span_len = end > g.span_off ? end - g.span_off : 0;
    f.groups.push_back(std::move(g));
  }
  return f;
}

// The footer in the last `n` bytes at `tail` of a file of `size` bytes: its length, or an error.
absl::StatusOr<uint32_t> FooterLength(const uint8_t* tail, uint64_t n, uint64_t size, const std::string& path) {
  if (size < 12 || n < 8 || std::memcmp(tail + n - 4, "PAR1", 4) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": not a parquet file (no PAR1 magic at its end)"));
  }
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t{tail[n - 8 + i]} << (8 * i);
  if (len + 12 > size) {
    return absl::DataLossError(absl::StrCat(path, ": parquet footer of ", len, " bytes is longer than the file"));
  }
  return len;
}

absl::StatusOr<pf::FileMetaData> ParseFooter(const uint8_t* p, uint32_t len, const std::string& path) {
  pf::FileMetaData m;
  absl::StatusOr<uint32_t> used = pi::Deserialize(p, len, &m);
  if (!used.ok()) return absl::DataLossError(absl::StrCat(path, ": ", used.status().message()));
  return m;
}

class ParquetSampleReader final : public SampleReader {
 public:
  explicit ParquetSampleReader(const FormatOptions& o)
      : o_(o), window_(o.io_engine == IoEngine::kS3 ? kS3Window : kWindow) {}

  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    auto it = files_.find(path);
    if (it == files_.end()) {
      absl::StatusOr<FileInfo> f = Footer(path, stats);
      if (!f.ok()) return f.status();
      it = files_.emplace(path, std::move(*f)).first;
    }
    FileInfo& f = it->second;
    if (sample >= static_cast<uint64_t>(o_.samples_per_file)) {
      return absl::OutOfRangeError(absl::StrCat(path, ": sample ", sample, " requested, file has ",
                                                o_.samples_per_file));
    }
    auto g = std::upper_bound(f.groups.begin(), f.groups.end(), static_cast<int64_t>(sample),
                              [](int64_t s, const Group& x) { return s < x.first_row; });
    if (g == f.groups.begin()) {
      return absl::DataLossError(absl::StrCat(path, ": the footer lists no row group holding sample ", sample));
    }
    Group& group = *(g - 1);
    if (!group.fetched) {
      if (absl::Status s = EnsureOpen(path, stats); !s.ok()) return s;
      if (o_.parquet.read_mode == "iterable") {
        for (Group& each : f.groups) {
          if (each.fetched) continue;
          if (absl::Status s = ReadRange(each.span_off, each.span_len, nullptr, stats); !s.ok()) return s;
          each.fetched = true;
        }
      } else {
        for (const Chunk& c : group.chunks) {
          if (absl::Status s = ReadRange(c.off, c.len, o_.parquet.decode ? &c : nullptr, stats); !s.ok()) return s;
        }
        group.fetched = true;
      }
    }
    last_bytes_ = f.row_bytes;
    stats.AddSamples(1);
    return f.row_bytes;
  }

  // The delivered bytes are not materialised (the fork's readers drop them too): empty.
  std::string_view last_sample() const override { return {}; }

  // Bytes and pages decompressed so far (dlio_ext.parquet_decode), for tests and bench/.
  uint64_t decoded_bytes() const { return decoded_bytes_; }
  uint64_t decoded_pages() const { return decoded_pages_; }

 private:
  absl::Status EnsureOpen(const std::string& path, IoStats& stats) {
    if (!storage_) {
      absl::StatusOr<std::unique_ptr<StorageReader>> s = NewStorageReader(o_.target());
      if (!s.ok()) return s.status();
      storage_ = std::move(*s);
    }
    if (open_path_ == path) return absl::OkStatus();
    open_path_.clear();
    if (absl::Status s = storage_->Open(path, &size_, stats); !s.ok()) return s;
    open_path_ = path;
    return absl::OkStatus();
  }

  absl::StatusOr<FileInfo> Footer(const std::string& path, IoStats& stats) {
    if (absl::Status s = EnsureOpen(path, stats); !s.ok()) return s;
    const uint64_t tail = std::min<uint64_t>(size_, kTailBytes);
    absl::StatusOr<const uint8_t*> p = Fill(size_ - tail, tail, stats);
    if (!p.ok()) return p.status();
    absl::StatusOr<uint32_t> len = FooterLength(*p, tail, size_, path);
    if (!len.ok()) return len.status();
    if (*len + 8 > tail) {  // a footer longer than the first read: read it whole
      p = Fill(size_ - 8 - *len, *len + 8, stats);
      if (!p.ok()) return p.status();
    } else {
      *p += tail - 8 - *len;
    }
    absl::StatusOr<pf::FileMetaData> m = ParseFooter(*p, *len, path);
    if (!m.ok()) return m.status();
    return Describe(*m, o_, path);
  }

  // Reads [off, off+len) of the open file into buf_ (widened to the engine's alignment), returning where `off` is.
  absl::StatusOr<const uint8_t*> Fill(uint64_t off, uint64_t len, IoStats& stats) {
    const size_t align = storage_->alignment();
    const uint64_t a = off / align * align;
    buf_.Reserve(static_cast<size_t>(RoundUp(off + len, align) - a));
    bstart_ = bend_ = a;
    if (absl::Status s = ReadMore(RoundUp(off + len, align), stats); !s.ok()) return s;
    if (bend_ < off + len) {
      return absl::DataLossError(absl::StrCat(storage_->path(), ": ends at byte ", bend_, "; the parquet metadata "
                                              "says bytes up to ", off + len, " exist"));
    }
    return buf_.data() + (off - a);
  }

  // Reads from bend_ up to `to` (aligned) into the buffer behind the bytes it holds; several requests in flight
  // with io_uring. Stops early at the end of the file.
  absl::Status ReadMore(uint64_t to, IoStats& stats) {
    const bool uring = storage_->engine() == IoEngine::kIoUring;
    const size_t piece = uring ? kUringPiece : window_;
    while (bend_ < to) {
      ReadRequest reqs[kUringDepth];
      size_t k = 0;
      for (uint64_t at = bend_; k < (uring ? kUringDepth : 1) && at < to; ++k) {
        reqs[k].off = at;
        reqs[k].len = static_cast<size_t>(std::min<uint64_t>(piece, to - at));
        reqs[k].buf = buf_.data() + (at - bstart_);
        at += reqs[k].len;
      }
      if (absl::Status s = storage_->Read(reqs, k, stats); !s.ok()) return s;
      for (size_t i = 0; i < k; ++i) {
        bend_ += reqs[i].got;
        if (reqs[i].got < reqs[i].len) return absl::OkStatus();  // the end of the file
      }
    }
    return absl::OkStatus();
  }

  // Makes [p, p+n) of the file available in the buffer (p >= bstart_), keeping from p on: the bytes before p are
  // dropped, and the read reaches at least a window past what is held (up to `limit`, the range's aligned end).
  absl::StatusOr<const uint8_t*> Need(uint64_t p, uint64_t n, uint64_t limit, IoStats& stats) {
    if (p + n <= bend_) return buf_.data() + (p - bstart_);
    const size_t align = storage_->alignment();
    const uint64_t keep_from = std::max(bstart_, p / align * align);
    const size_t kept = static_cast<size_t>(bend_ > keep_from ? bend_ - keep_from : 0);
    if (kept > 0 && keep_from != bstart_) std::memmove(buf_.data(), buf_.data() + (keep_from - bstart_), kept);
    bstart_ = keep_from;
    bend_ = keep_from + kept;
    const uint64_t to = std::min(limit, std::max(RoundUp(p + n, align), bend_ + window_));
    buf_.Reserve(static_cast<size_t>(to - bstart_), kept);
    if (absl::Status s = ReadMore(to, stats); !s.ok()) return s;
    if (bend_ < p + n) {
      return absl::DataLossError(absl::StrCat(storage_->path(), ": ends at byte ", bend_, " inside a parquet "
                                              "column chunk that reaches byte ", p + n));
    }
    return buf_.data() + (p - bstart_);
  }

  // Reads the byte range [off, off+len) window by window; with `decode`, the range is that column chunk and each of
  // its pages is decompressed as it arrives.
  absl::Status ReadRange(uint64_t off, uint64_t len, const Chunk* decode, IoStats& stats) {
    const size_t align = storage_->alignment();
    const uint64_t limit = RoundUp(off + len, align);
    bstart_ = bend_ = off / align * align;
    buf_.Reserve(window_ + align);
    if (decode == nullptr) {
      for (uint64_t p = bstart_; p < limit;) {
        const uint64_t n = std::min<uint64_t>(window_, limit - p);
        absl::StatusOr<const uint8_t*> got = Need(p, std::min(n, off + len > p ? off + len - p : 0), limit, stats);
        if (!got.ok()) return got.status();
        p = std::max(p + n, bend_);
      }
      return absl::OkStatus();
    }
    for (uint64_t p = off; p < off + len;) {
      absl::StatusOr<const uint8_t*> h = Need(p, std::min<uint64_t>(kMaxPageHeader, off + len - p), limit, stats);
      if (!h.ok()) return h.status();
      pf::PageHeader ph;
      absl::StatusOr<uint32_t> used = pi::Deserialize(*h, static_cast<size_t>(std::min<uint64_t>(
                                                               kMaxPageHeader, off + len - p)), &ph);
      if (!used.ok()) return absl::DataLossError(absl::StrCat(storage_->path(), ": page header at byte ", p, ": ",
                                                              used.status().message()));
      p += *used;
      if (ph.compressed_page_size < 0 || ph.uncompressed_page_size < 0 ||
          p + static_cast<uint64_t>(ph.compressed_page_size) > off + len) {
        return absl::DataLossError(absl::StrCat(storage_->path(), ": page at byte ", p, " overruns its column chunk"));
      }
      absl::StatusOr<const uint8_t*> body = Need(p, static_cast<uint64_t>(ph.compressed_page_size), limit, stats);
      if (!body.ok()) return body.status();
      if (absl::Status s = DecodePage(ph, *body, decode->codec); !s.ok()) {
        return absl::DataLossError(absl::StrCat(storage_->path(), ": page at byte ", p, ": ", s.message()));
      }
      p += static_cast<uint64_t>(ph.compressed_page_size);
    }
    return absl::OkStatus();
  }

  // Decompresses one page's body into scratch_ (a data page v2 keeps its levels uncompressed in front).
  absl::Status DecodePage(const pf::PageHeader& ph, const uint8_t* body, pf::CompressionCodec::type codec) {
    size_t levels = 0;
    bool compressed = codec != pf::CompressionCodec::UNCOMPRESSED;
    if (ph.type == pf::PageType::DATA_PAGE_V2) {
      const pf::DataPageHeaderV2& v2 = ph.data_page_header_v2;
      levels = static_cast<size_t>(v2.definition_levels_byte_length + v2.repetition_levels_byte_length);
      compressed &= !v2.__isset.is_compressed || v2.is_compressed;
    }
    const size_t in = static_cast<size_t>(ph.compressed_page_size), want = static_cast<size_t>(ph.uncompressed_page_size);
    if (levels > in || levels > want) return absl::DataLossError("levels longer than the page");
    if (scratch_.size() < want) scratch_.resize(want);
    std::memcpy(scratch_.data(), body, levels);
    absl::Status s = pi::Decompress(compressed ? codec : pf::CompressionCodec::UNCOMPRESSED, body + levels,
                                    in - levels, scratch_.data() + levels, want - levels);
    if (!s.ok()) return s;
    decoded_bytes_ += want;
    ++decoded_pages_;
    return absl::OkStatus();
  }

  const FormatOptions o_;
  const size_t window_;
  std::unique_ptr<StorageReader> storage_;
  std::string open_path_;  // the file storage_ has open ("" = none)
  uint64_t size_ = 0;
  std::unordered_map<std::string, FileInfo> files_;  // footers read in this reader's life (an epoch)
  AlignedBuffer buf_;
  uint64_t bstart_ = 0, bend_ = 0;  // buf_ holds the file's bytes [bstart_, bend_)
  std::vector<uint8_t> scratch_;    // decompressed page (grow only)
  uint64_t last_bytes_ = 0, decoded_bytes_ = 0, decoded_pages_ = 0;
};

// The parquet options a format cannot honour (the job's loader refuses them first, CheckParquet and the keys).
absl::Status CheckOptions(const FormatOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (o.parquet_columns.empty()) return bad("dataset.parquet.columns: a parquet file needs at least one column");
  for (const ParquetColumn& c : o.parquet_columns) {
    if (internal::FindDType(c.dtype) == nullptr) {
      return bad("dataset.parquet.columns: column '", c.name, "' has dtype '", c.dtype, "'; allowed: ",
                 internal::DTypeNames());
    }
    if (c.size < 1) return bad("dataset.parquet.columns: column '", c.name, "' has size ", c.size, "; must be >= 1");
  }
  if (o.parquet.row_group_size < 1) return bad("dataset.parquet.row_group_size: must be >= 1");
  if (o.parquet.read_mode != "row_group" && o.parquet.read_mode != "iterable") {
    return bad("dataset.parquet.read_mode: '", o.parquet.read_mode, "' is not one of row_group, iterable");
  }
  if (o.parquet.decode && o.parquet.read_mode == "iterable") {
    return bad("dlio_ext.parquet_decode: needs dataset.parquet.read_mode: row_group (iterable reads row groups as "
               "raw byte ranges, as the fork's iterable readers do)");
  }
  return absl::OkStatus();
}

class ParquetFormat final : public Format {
 public:
  explicit ParquetFormat(FormatOptions o) : Format(std::move(o)) {
    if (options_.parquet_columns.empty()) {  // tools and tests: one column of the sample's elements
      ParquetColumn c;
      c.name = "data";
      c.dtype = options_.element_type;
      c.size = 1;
      for (int64_t d : options_.sample_dims) c.size *= d;
      options_.parquet_columns.push_back(c);
    }
  }
  const char* name() const override { return "parquet"; }
  const char* extension() const override { return "parquet"; }
  std::unique_ptr<SampleReader> NewSampleReader() const override;
  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    if (absl::Status s = CheckOptions(options_); !s.ok()) return s;
    return pi::WriteParquetFile(options_, path, seed, stats);
  }
};

// A reader whose options are refused answers every sample with the refusal.
class RefusingReader final : public SampleReader {
 public:
  explicit RefusingReader(absl::Status s) : s_(std::move(s)) {}
  absl::StatusOr<uint64_t> ReadSample(const std::string&, uint32_t, IoStats&) override { return s_; }
  std::string_view last_sample() const override { return {}; }

 private:
  absl::Status s_;
};

std::unique_ptr<SampleReader> ParquetFormat::NewSampleReader() const {
  if (absl::Status s = CheckOptions(options_); !s.ok()) return std::make_unique<RefusingReader>(s);
  return std::make_unique<ParquetSampleReader>(options_);
}

}  // namespace

std::unique_ptr<Format> NewParquetFormat(const FormatOptions& options) {
  return std::make_unique<ParquetFormat>(options);
}

absl::StatusOr<ParquetFileSummary> ReadParquetSummary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  std::vector<uint8_t> all(size);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(all.data()), static_cast<std::streamsize>(size));
  absl::StatusOr<uint32_t> len = FooterLength(all.data(), size, size, path);
  if (!len.ok()) return len.status();
  absl::StatusOr<pf::FileMetaData> m = ParseFooter(all.data() + size - 8 - *len, *len, path);
  if (!m.ok()) return m.status();
  ParquetFileSummary s;
  s.rows = m->num_rows;
  for (const pf::RowGroup& rg : m->row_groups) s.row_group_rows.push_back(rg.num_rows);
  for (size_t i = 1, top = 0; i < m->schema.size() && top < static_cast<size_t>(m->schema[0].num_children); ++top) {
    s.columns.push_back(m->schema[i].name);
    // skip the element's subtree: count the nodes still to visit
    int64_t pending = m->schema[i].__isset.num_children ? m->schema[i].num_children : 0;
    ++i;
    while (pending > 0 && i < m->schema.size()) {
      pending += (m->schema[i].__isset.num_children ? m->schema[i].num_children : 0) - 1;
      ++i;
    }
  }
  s.created_by = m->created_by;
  return s;
}

}  // namespace dlio
