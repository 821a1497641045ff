#include "readers/whole_file.h"
#include "readers/npy.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "readers/dtype.h"
#include "storage/io_util.h"
#include "storage/open.h"

namespace dlio {
namespace internal {
namespace {

// numpy reserves room for the first axis to grow to this many digits (format.GROWTH_AXIS_MAX_DIGITS).
constexpr size_t kNpyGrowthDigits = 21;
constexpr size_t kNpyAlign = 64;  // numpy.lib.format.ARRAY_ALIGN

uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t Le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

absl::Status Corrupt(const std::string& path, std::string_view what, std::string_view detail) {
  return absl::DataLossError(
      absl::StrCat(path, ": not a readable NPY array (", std::string(what), "): ", std::string(detail)));
}

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

}  // namespace

absl::Status ParseNpy(const uint8_t* p, uint64_t n, const std::string& path, std::string_view what, NpyArray* a) {
  if (n < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) return Corrupt(path, what, "no NPY magic");
  uint64_t hlen, start;
  if (p[6] == 1) {
    hlen = Le16(p + 8);
    start = 10;
  } else if (p[6] == 2 || p[6] == 3) {
    if (n < 12) return Corrupt(path, what, "header truncated");
    hlen = Le32(p + 8);
    start = 12;
  } else {
    return Corrupt(path, what, absl::StrCat("unknown NPY version ", p[6]));
  }
  if (start + hlen > n) return Corrupt(path, what, "header runs past the end");
  std::string_view h(reinterpret_cast<const char*>(p + start), hlen);

  std::string_view descr = AfterKey(h, "'descr'");
  if (descr.size() < 4 || descr[0] != '\'') return Corrupt(path, what, "header has no descr");
  descr.remove_prefix(1);
  descr = descr.substr(0, descr.find('\''));
  // '|u1', '<i8', ...: byte order, kind, item size. Object and structured dtypes never appear in DLIO files.
  auto bad_dtype = [&] { return absl::StrCat("unsupported dtype '", std::string(descr), "'"); };
  size_t itemsize = 0;
  for (char ch : descr.substr(2)) {
    if (ch < '0' || ch > '9' || itemsize > 1024) return Corrupt(path, what, bad_dtype());
    itemsize = itemsize * 10 + static_cast<size_t>(ch - '0');
  }
  if (itemsize == 0) return Corrupt(path, what, bad_dtype());
  if (AfterKey(h, "'fortran_order'").substr(0, 5) != "False") {
    return absl::UnimplementedError(
        absl::StrCat(path, ": ", std::string(what), " is Fortran-ordered; only C order is read"));
  }
  std::string_view s = AfterKey(h, "'shape'");
  if (s.empty() || s[0] != '(') return Corrupt(path, what, "header has no shape");
  s.remove_prefix(1);
  a->rank = 0;
  for (;;) {
    while (!s.empty() && (s.front() == ' ' || s.front() == ',')) s.remove_prefix(1);
    if (s.empty()) return Corrupt(path, what, "shape is not closed");
    if (s.front() == ')') break;
    if (s.front() < '0' || s.front() > '9') return Corrupt(path, what, "shape is not a tuple of integers");
    if (a->rank == kMaxNpyRank) return Corrupt(path, what, "shape has too many axes");
    // Shapes come from the file: a value that could overflow the size arithmetic is corruption.
    int64_t v = 0;
    while (!s.empty() && s.front() >= '0' && s.front() <= '9') {
      v = v * 10 + (s.front() - '0');
      s.remove_prefix(1);
      if (v > (int64_t{1} << 48)) return Corrupt(path, what, "shape value out of range");
    }
    a->shape[a->rank++] = v;
  }
  a->itemsize = itemsize;
  a->data_offset = start + hlen;
  return absl::OkStatus();
}

absl::Status LastAxisSample(const uint8_t* p, uint64_t n, const NpyArray& a, uint32_t sample,
                            const std::string& path, std::string_view what, StridedSample* out) {
  if (a.rank < 1) return Corrupt(path, what, "a scalar; samples are on its last axis");
  const uint64_t nspf = static_cast<uint64_t>(a.shape[a.rank - 1]);
  if (sample >= nspf) {
    return absl::OutOfRangeError(absl::StrCat(path, ": sample ", sample, " requested, file has ", nspf));
  }
  // The array must fit in the bytes present; checked factor by factor so a hostile shape cannot overflow.
  const uint64_t avail = n > a.data_offset ? n - a.data_offset : 0;
  uint64_t elems = 1, total = a.itemsize * nspf;
  if (total > avail) return Corrupt(path, what, "data shorter than its shape");
  for (int d = 0; d + 1 < a.rank; ++d) {
    const uint64_t dim = static_cast<uint64_t>(a.shape[d]);
    if (dim != 0 && total > avail / dim) return Corrupt(path, what, "data shorter than its shape");
    total *= dim;
    elems *= dim;
  }
  out->base = p + a.data_offset + uint64_t{sample} * a.itemsize;
  out->elems = elems;
  out->itemsize = a.itemsize;
  out->stride = nspf * a.itemsize;
  return absl::OkStatus();
}

std::string_view StridedSample::Gather(std::string& out) const {
  if (base == nullptr) return {};
  out.resize(elems * itemsize);
  for (uint64_t e = 0; e < elems; ++e) std::memcpy(&out[e * itemsize], base + e * stride, itemsize);
  return out;
}

}  // namespace internal

namespace {

class NpySampleReader final : public SampleReader {
 public:
  NpySampleReader(StorageTarget target, bool keep) : file_(std::move(target), keep) {}
  absl::StatusOr<uint64_t> ReadSample(const std::string& path, uint32_t sample, IoStats& stats) override {
    s_ = {};
    absl::StatusOr<uint64_t> size = file_.Read(path, stats);
    if (!size.ok()) return size.status();
    const uint8_t* buf = file_.data();
    internal::NpyArray a;
    if (absl::Status st = internal::ParseNpy(buf, *size, path, "npy file", &a); !st.ok()) return st;
    internal::StridedSample s;
    if (absl::Status st = internal::LastAxisSample(buf, *size, a, sample, path, "npy file", &s); !st.ok()) {
      return st;
    }
    s_ = s;
    stats.AddSamples(1);
    return s_.bytes();
  }

  std::string_view last_sample() const override { return s_.Gather(gathered_); }

 private:
  internal::WholeFileReader file_;  // the whole file (dlio_ext.io_engine, reader.read_type)
  internal::StridedSample s_;     // the last sample, inside file_
  mutable std::string gathered_;  // last_sample()'s contiguous copy (checks only)
};

class NpyFormat final : public Format {
 public:
  explicit NpyFormat(FormatOptions o) : Format(std::move(o)) {}
  const char* name() const override { return "npy"; }
  const char* extension() const override { return "npy"; }
  std::unique_ptr<SampleReader> NewSampleReader() const override { return std::make_unique<NpySampleReader>(options_.target(), options_.read_in_memory);
  }

  absl::Status Generate(const std::string& path, uint64_t seed, IoStats& stats) const override {
    const internal::DType& t = *internal::FindDType(options_.element_type);
    std::vector<int64_t> shape = options_.sample_dims;
    shape.push_back(options_.samples_per_file);
    uint64_t elems = 1;
    for (int64_t d : shape) elems *= static_cast<uint64_t>(d);
    const std::string hdr = NpyHeader(t.descr, shape);
    // Header and data in one buffer, filled piecewise so even a multi-GiB file costs one kWriteChunk of memory.
    internal::Rng rng(seed);
    internal::FileWriter w(NewWriteSink(options_.target()));
    absl::Status st = w.Open(path);
    if (st.ok()) st = w.Append(hdr.data(), hdr.size(), stats);
    const uint64_t per_piece = std::max<uint64_t>(1, internal::kWriteChunk / t.itemsize);
    std::vector<uint8_t> piece(std::min(elems, per_piece) * t.itemsize);
    for (uint64_t done = 0; st.ok() && done < elems;) {
      const uint64_t n = std::min(per_piece, elems - done);
      internal::FillRandom(t, rng, piece.data(), n);
      st = w.Append(piece.data(), n * t.itemsize, stats);
      done += n;
    }
    if (st.ok()) st = w.Finish(stats);
    if (st.ok()) stats.AddSamples(static_cast<uint64_t>(options_.samples_per_file));
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
    if (digits < internal::kNpyGrowthDigits) dict.append(internal::kNpyGrowthDigits - digits, ' ');
  }
  // numpy: hlen = len(dict) + 1 ('\n'); pad = ALIGN - (10 + hlen) % ALIGN, so an aligned length still gets ALIGN.
  const size_t hlen = dict.size() + 1;
  const size_t pad = internal::kNpyAlign - (10 + hlen) % internal::kNpyAlign;
  const size_t total_hlen = hlen + pad;
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(total_hlen & 0xFF));
  out.push_back(static_cast<char>(total_hlen >> 8));
  out += dict;
  out.append(pad, ' ');
  out.push_back('\n');
  return out;
}

std::unique_ptr<Format> NewNpyFormat(const FormatOptions& options) { return std::make_unique<NpyFormat>(options); }

}  // namespace dlio
