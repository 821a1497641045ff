// dtype: the numpy element types DLIO's `dataset.record_element_type` names, as the formats need them (internal to
// dlio::formats).
//
// One table: numpy name, item size, kind ('u' unsigned, 'i' signed, 'f' IEEE float) and the NPY descr numpy writes
// for it on a little-endian host ('|u1', '<i2', '<f4', ...). FillRandom() makes sample bytes the way this project
// generates them: integer types get uniformly random bytes (every value of the type equally likely, as DLIO's
// gen_random_tensor scales a uniform draw over [min, max)); float types get values in [0, 1) (DLIO: rng.random),
// never NaN or Inf, so numpy, h5py and pandas read ordinary numbers.
// Thread-safety: the table is immutable; FillRandom uses only the caller's Rng.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "storage/io_util.h"

namespace dlio::internal {

struct DType {
  const char* name;   // numpy name: uint8, float16, ...
  size_t itemsize;    // bytes per element
  char kind;          // 'u', 'i' or 'f'
  const char* descr;  // NPY descr (little-endian host)
};

inline constexpr DType kDTypes[] = {
    {"uint8", 1, 'u', "|u1"},   {"int8", 1, 'i', "|i1"},    {"uint16", 2, 'u', "<u2"}, {"int16", 2, 'i', "<i2"},
    {"uint32", 4, 'u', "<u4"},  {"int32", 4, 'i', "<i4"},   {"uint64", 8, 'u', "<u8"}, {"int64", 8, 'i', "<i8"},
    {"float16", 2, 'f', "<f2"}, {"float32", 4, 'f', "<f4"}, {"float64", 8, 'f', "<f8"},
};

// nullptr for a name that is not in the table.
inline const DType* FindDType(std::string_view name) {
  for (const DType& t : kDTypes) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

// "uint8, int8, ..." for error messages.
inline std::string DTypeNames() {
  std::string s;
  for (const DType& t : kDTypes) {
    if (!s.empty()) s += ", ";
    s += t.name;
  }
  return s;
}

// IEEE binary16 bits of a float: exact for values binary16 represents (FillRandom only makes such values: k / 1024);
// other values are truncated toward zero, larger ones become Inf.
inline uint16_t HalfBitsOfExact(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((b >> 23) & 0xFF) - 127 + 15;
  const uint32_t mant = b & 0x7FFFFFu;
  if ((b & 0x7FFFFFFFu) == 0) return static_cast<uint16_t>(sign);
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7C00u);  // beyond binary16: Inf
  if (exp <= 0) {  // subnormal half: value = mant16 * 2^-24
    const uint32_t m = (mant | 0x800000u) >> (14 - exp);
    return static_cast<uint16_t>(sign | m);
  }
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13));
}

// Any IEEE binary16 value as a float (exact: every binary16 value is a float).
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  float f;
  if (exp == 0) {
    f = static_cast<float>(mant) * 0x1.0p-24f;  // zero or subnormal
  } else if (exp == 31) {
    const uint32_t b = 0x7F800000u | (mant << 13);  // Inf or NaN
    std::memcpy(&f, &b, 4);
  } else {
    const uint32_t b = ((exp + 112) << 23) | (mant << 13);
    std::memcpy(&f, &b, 4);
  }
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b |= sign;
  std::memcpy(&f, &b, 4);
  return f;
}

// Fills n elements of type t at p (p holds n * t.itemsize bytes).
inline void FillRandom(const DType& t, Rng& rng, uint8_t* p, size_t n) {
  if (t.kind != 'f') {
    rng.Fill(p, n * t.itemsize);
    return;
  }
  for (size_t i = 0; i < n; ++i, p += t.itemsize) {
    const uint64_t r = rng.Next();
    if (t.itemsize == 8) {
      const double v = static_cast<double>(r >> 11) * 0x1.0p-53;  // 53 random bits in [0, 1)
      std::memcpy(p, &v, 8);
    } else if (t.itemsize == 4) {
      const float v = static_cast<float>(r >> 40) * 0x1.0p-24f;  // 24 random bits in [0, 1)
      std::memcpy(p, &v, 4);
    } else {
      const uint16_t h = HalfBitsOfExact(static_cast<float>(r >> 54) * 0x1.0p-10f);  // k / 1024, exact in binary16
      std::memcpy(p, &h, 2);
    }
  }
}

}  // namespace dlio::internal
