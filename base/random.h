// Random numbers we control: the same sequence on every agent, every build and every standard library.
//
// SplitMix64 (Steele, Lea, Flood 2014) turns any seed, 0 included, into well-mixed state; Xoshiro256 is
// xoshiro256** (Blackman, Vigna 2018) seeded through it. Used for the epoch plan's permutations (which must agree
// across the fleet, so std::shuffle with its implementation-defined algorithm is out), per-file sample sizes, and
// the bytes of generated files (8 bytes per step: generation is never limited by the generator).
// Thread-safety: none; one generator per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dlio {

// Advances `state` and returns the next output.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (uint64_t& w : s_) w = SplitMix64(seed);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n), n >= 1, without modulo bias (Lemire 2019, multiply-shift with rejection).
  uint64_t Below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(Next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Uniform in (0, 1].
  double Unit() { return (static_cast<double>(Next() >> 11) + 1.0) / 9007199254740992.0; }
  // The next ceil(n / 8) outputs as little-endian bytes (the last one cut). The state is copied into locals: stores
  // through `p` (a uint8_t*, which may alias anything) would otherwise make the compiler reload and store s_ around
  // every word, which halved the speed (2.3 vs 4.2 GB/s; generation is never limited by the generator).
  void Fill(uint8_t* p, size_t n) {
    uint64_t a = s_[0], b = s_[1], c = s_[2], d = s_[3];
    for (; n >= 8; p += 8, n -= 8) {
      const uint64_t v = Rotl(b * 5, 7) * 9;
      const uint64_t t = b << 17;
      c ^= a;
      d ^= b;
      b ^= c;
      a ^= d;
      c ^= t;
      d = Rotl(d, 45);
      std::memcpy(p, &v, 8);
    }
    s_[0] = a;
    s_[1] = b;
    s_[2] = c;
    s_[3] = d;
    if (n > 0) {
      const uint64_t v = Next();
      std::memcpy(p, &v, n);
    }
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace dlio
