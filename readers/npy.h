// npy: DLIO's NPY format (numpy.save) behind the Format interface, and the NPY helpers npz shares.
//
// File (as np.save(path, records) writes it): one NPY v1.0 array of the element type, shape (*sample_dims, nspf):
// the samples are on the LAST axis, so sample i is a[..., i] and its elements sit nspf items apart in the file. The
// header is padded as numpy pads it (room for the first axis to grow, total a multiple of 64), so DLIO's 64x64x2
// uint8 files have the same 128-byte header as ours.
//
// Reader (DLIO's NPYReader in on_demand mode, np.load of the whole file per sample): every ReadSample() opens the
// file and reads ALL of it with pread()s of up to 8 MiB into a per-reader buffer that only grows, parses the NPY
// header and locates the strided sample (a view, as numpy's x[..., i]; the read already copied the bytes). Shapes
// and item sizes come from the file (any element size the descr names; C order only). Returns the sample payload
// size prod(shape[:-1]) * itemsize.
//
// Thread-safety: a reader belongs to one thread; the Format object itself is immutable and shareable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "readers/format.h"

namespace dlio {

// Options must have been validated (MakeFormat does it).
std::unique_ptr<Format> NewNpyFormat(const FormatOptions& options);

// NPY v1.0 header (magic through the closing '\n') for a C-order array, laid out exactly as numpy 1.24 writes it.
// Exposed for tests.
std::string NpyHeader(const std::string& descr, const std::vector<int64_t>& shape);

namespace internal {

inline constexpr int kMaxNpyRank = 16;  // deeper NPY shapes are rejected (numpy's own limit is 32; DLIO uses 3)

struct NpyArray {
  uint64_t data_offset = 0;  // relative to the start of the NPY bytes
  size_t itemsize = 0;
  int rank = 0;
  int64_t shape[kMaxNpyRank] = {};
};

// Parses the NPY header of the n bytes at p. `what` names the array in errors ("x.npy"); errors name `path`.
absl::Status ParseNpy(const uint8_t* p, uint64_t n, const std::string& path, std::string_view what, NpyArray* a);

// One sample on the last axis of a C-order array: elems items of itemsize bytes, stride bytes apart, from base.
struct StridedSample {
  const uint8_t* base = nullptr;
  uint64_t elems = 0, itemsize = 0, stride = 0;
  uint64_t bytes() const { return elems * itemsize; }
  // Copies the sample into `out` in C order (checks and tests only).
  std::string_view Gather(std::string& out) const;
};

// Locates sample `sample` in the array whose NPY bytes (header included) are [p, p + n): checks the shape against
// the bytes present (no overflow for hostile shapes) and the sample index against the last axis.
absl::Status LastAxisSample(const uint8_t* p, uint64_t n, const NpyArray& a, uint32_t sample,
                            const std::string& path, std::string_view what, StridedSample* out);

}  // namespace internal
}  // namespace dlio
