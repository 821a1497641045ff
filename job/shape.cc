// Shape geometry of a job's samples: the side DLIO derives from record_length_bytes, the per-file sides under a
// size spread, the hdf5 chunk shape, element sizes, and the checks of a sample shape against the format's row
// (job/format_traits.h).
#include <algorithm>
#include <cmath>
#include <map>

#include "fmt/format.h"
#include "job/format_traits.h"
#include "job/workload_spec.h"
#include "job/yaml_scalar.h"

namespace dlio {

using workload_internal::DimsText;

int64_t WorkloadSpec::SampleDim() const {
  if (!(record_length_bytes >= 1)) return 0;
  auto d = static_cast<int64_t>(std::floor(std::sqrt(record_length_bytes)));
  // sqrt of a double can land one off an exact square; settle on the largest d with d*d <= L.
  while (static_cast<double>((d + 1) * (d + 1)) <= record_length_bytes) ++d;
  while (d > 0 && static_cast<double>(d * d) > record_length_bytes) --d;
  return d;
}

int64_t WorkloadSpec::SampleDimForFile(int64_t file) const {
  if (record_length_bytes_stdev <= 0) return SampleDim();
  // splitmix64 of the file index -> two uniforms -> one Box-Muller normal. Fixed seed (10, DLIO's dimension seed).
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  const uint64_t a = mix(10u * 0x100000001b3ull + static_cast<uint64_t>(file) * 2);
  const uint64_t b = mix(10u * 0x100000001b3ull + static_cast<uint64_t>(file) * 2 + 1);
  const double u1 = (static_cast<double>(a >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
  const double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;           // [0, 1)
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  // Made positive as DLIO does, and capped at the largest sample the keys allow (a 6-sigma draw of a wide spread
  // must not ask for more).
  const double size = std::clamp(std::abs(record_length_bytes + record_length_bytes_stdev * z), 1.0,
                                 static_cast<double>(kMaxRecordBytes));
  auto d = static_cast<int64_t>(std::floor(std::sqrt(size)));
  while (static_cast<double>((d + 1) * (d + 1)) <= size) ++d;
  while (d > 1 && static_cast<double>(d * d) > size) --d;
  return std::max<int64_t>(1, d);
}

std::vector<int64_t> WorkloadSpec::SampleShape() const {
  if (!record_dims.empty()) return record_dims;
  const int64_t d = SampleDim();
  return {d, d};
}

namespace {

// Shape of one sample inside each hdf5 records_k dataset: DLIO's generator divides the first sample axis by
// num_dset_per_record and drops a leading axis of 1 (readers/format.h Hdf5RecordDims, which formats use; repeated
// here because dlio::job does not depend on dlio::readers).
std::vector<int64_t> Hdf5RecordDimsOf(const WorkloadSpec& s, std::vector<int64_t> d) {
  if (d.empty()) return d;
  if (s.hdf5_num_dset_per_record > 1) d[0] /= s.hdf5_num_dset_per_record;
  if (d[0] == 1) d.erase(d.begin());
  return d;
}

}  // namespace

size_t ElementBytes(const std::string& t) {
  static const std::map<std::string, size_t> sizes = {
      {"uint8", 1}, {"int8", 1},   {"uint16", 2}, {"int16", 2},   {"uint32", 4},  {"int32", 4},
      {"uint64", 8}, {"int64", 8}, {"float16", 2}, {"float32", 4}, {"float64", 8}};
  auto it = sizes.find(t);
  return it == sizes.end() ? 0 : it->second;
}

std::vector<int64_t> WorkloadSpec::Hdf5ChunkDims() const {
  if (!hdf5_chunk_dims.empty() || !enable_chunking) return hdf5_chunk_dims;
  const std::vector<int64_t> rec = Hdf5RecordDimsOf(*this, SampleShape());
  std::vector<int64_t> chunks = {1};
  const size_t item = std::max<size_t>(1, ElementBytes(record_element_type));
  const double elems = static_cast<double>(chunk_size) / static_cast<double>(item);
  for (int64_t extent : rec) {
    int64_t c = extent;
    if (chunk_size > 0 && !rec.empty()) {
      c = static_cast<int64_t>(std::ceil(std::pow(elems, 1.0 / static_cast<double>(rec.size())) - 1e-9));
      c = std::min(extent, std::max<int64_t>(1, c));
    }
    chunks.push_back(c);
  }
  return chunks;
}

namespace {

// The datasets of a chunked format (hdf5): num_dset_per_record divides the first sample axis; max_shape and (when
// check_chunks) chunk_dims fit the records_k dataset the sample makes.
absl::Status CheckChunkedShape(const WorkloadSpec& s, const std::vector<int64_t>& sample, bool check_chunks) {
  if (s.hdf5_num_dset_per_record > 1 && sample[0] % s.hdf5_num_dset_per_record != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "dataset.hdf5.num_dset_per_record: {} does not divide the first sample dimension {} (sample shape {})",
        s.hdf5_num_dset_per_record, sample[0], DimsText(sample)));
  }
  const std::vector<int64_t> rec = Hdf5RecordDimsOf(s, sample);
  std::vector<int64_t> shape = {s.num_samples_per_file};
  shape.insert(shape.end(), rec.begin(), rec.end());
  std::vector<int64_t> max_shape = shape;
  if (!s.hdf5_max_shape.empty()) {
    if (s.hdf5_max_shape.size() != rec.size()) {
      return absl::InvalidArgumentError(fmt::format(
          "dataset.hdf5.max_shape: {} must have {} entries (the dataset shape {} after its samples axis)",
          DimsText(s.hdf5_max_shape), rec.size(), DimsText(shape)));
    }
    for (size_t i = 0; i < rec.size(); ++i) {
      if (s.hdf5_max_shape[i] < rec[i]) {
        return absl::InvalidArgumentError(fmt::format(
            "dataset.hdf5.max_shape: {} is smaller than the dataset shape {} after its samples axis",
            DimsText(s.hdf5_max_shape), DimsText(shape)));
      }
      max_shape[i + 1] = s.hdf5_max_shape[i];
    }
  }
  if (!s.hdf5_chunk_dims.empty() && check_chunks) {
    if (s.hdf5_chunk_dims.size() != shape.size()) {
      return absl::InvalidArgumentError(fmt::format(
          "dataset.hdf5.chunk_dims: {} must have {} entries, the rank of each records dataset {} (samples, then "
          "the sample shape)",
          DimsText(s.hdf5_chunk_dims), shape.size(), DimsText(shape)));
    }
    for (size_t i = 0; i < shape.size(); ++i) {
      if (s.hdf5_chunk_dims[i] > max_shape[i]) {
        return absl::InvalidArgumentError(fmt::format(
            "dataset.hdf5.chunk_dims: {} exceeds the dataset's maximum shape {} (num_samples_per_file, then the "
            "sample shape)",
            DimsText(s.hdf5_chunk_dims), DimsText(max_shape)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSampleShape(const WorkloadSpec& s, const std::vector<int64_t>& sample, bool check_chunks) {
  const FormatTraits& format = FormatTraitsOf(s.format);
  if (format.image) {  // the side limit of the row (readers/format.cc refuses larger images too)
    for (int64_t d : sample) {
      if (d > format.max_side) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: {} images are at most {} pixels a side, a sample of shape {} is not",
            s.record_dims.empty() ? "dataset.record_length_bytes" : "dataset.record_dims", s.format, format.max_side,
            DimsText(sample)));
      }
    }
  }
  return format.chunking ? CheckChunkedShape(s, sample, check_chunks) : absl::OkStatus();
}

}  // namespace dlio
