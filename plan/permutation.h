// Permutation: a seeded order of the ids [0, n), n <= 2^32, the same on every agent, every build and every standard
// library (the epoch plan's file and sample shuffles).
//
// Two ways to hold one, chosen by n:
//  - stored (n <= kStoredMaxIds = 2^24, at most 64 MiB): our own Fisher-Yates over xoshiro256** (base/random.h),
//    4 bytes per id. The orders of these sizes are the ones earlier versions gave, and golden tests pin them.
//  - computed (above): KeyedPermutation, a keyed bijection evaluated per id, O(1) memory whatever n is. A stored
//    order of the largest datasets was 16 GiB on every agent (issue 24), built before any file was listed.
// At(i) is O(1) either way (computed: expected; fewer than two passes on average) and allocates nothing; the
// computed one costs a few dozen integer operations per id, 5-12 ns read in runs with Fill() (2^24 + 3 ids: about
// the 11 ns per id the stored order's Fisher-Yates costs, with no memory).
// Thread-safety: immutable after construction; const methods are safe from any thread.
//
//   Permutation order = Permutation::Make(n, seed);  // or Permutation() for the identity (shuffle off)
//   for (uint32_t pos = 0; pos < n; ++pos) Read(order.At(pos));
//   order.Fill(first, count, ids);  // ids[j] = order.At(first + j)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace dlio {

// A bijection of [0, n), n in [1, 2^32], computed: a 4-round Feistel network over the k-bit numbers (k = bits of
// n - 1), split into a high half of ceil(k/2) bits and a low half of floor(k/2), rounds alternating which half they
// change (so k may be odd), with cycle walking: an id mapped to n or more is mapped again until it lands in [0, n).
// That is a bijection of [0, n) because the network is one of [0, 2^k); as 2^k < 2n, an id takes fewer than two
// passes on average. Round keys come from `seed` through SplitMix64; the round function is a multiply-xorshift
// finaliser of (half ^ key) whose top 16 bits are taken (a half is at most 16 bits).
class KeyedPermutation {
 public:
  KeyedPermutation(uint64_t n, uint64_t seed);

  uint64_t size() const { return n_; }
  // The id at position i (i < size()).
  uint32_t At(uint32_t i) const {
    uint64_t x = i;
    do {
      x = Encrypt(x);
    } while (x >= n_);
    return static_cast<uint32_t>(x);
  }
  // out[j] = At(first + j) for j < count (first + count <= size()), up to twice as fast per id as At: the ids
  // of a block are encrypted in one loop without a branch, so the CPU overlaps their multiplications, and those
  // that left [0, n) are gathered (branch-free) and walked again.
  void Fill(uint32_t first, size_t count, uint32_t* out) const;

 private:
  static uint64_t Round(uint64_t half, uint64_t key) {
    uint64_t z = (half ^ key) * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 31;
    z *= 0x94D049BB133111EBull;
    return z >> 48;
  }
  uint64_t Encrypt(uint64_t x) const {
    uint64_t hi = x >> low_bits_;
    uint64_t lo = x & low_mask_;
    hi ^= Round(lo, keys_[0]) & high_mask_;
    lo ^= Round(hi, keys_[1]) & low_mask_;
    hi ^= Round(lo, keys_[2]) & high_mask_;
    lo ^= Round(hi, keys_[3]) & low_mask_;
    return hi << low_bits_ | lo;
  }

  uint64_t n_ = 1;
  int low_bits_ = 0;
  uint64_t low_mask_ = 0;
  uint64_t high_mask_ = 0;
  uint64_t keys_[4] = {};
};

class Permutation {
 public:
  // Ids up to which an order is stored (64 MiB): the sizes whose orders earlier versions gave and tests pin.
  static constexpr uint64_t kStoredMaxIds = uint64_t{1} << 24;

  // The identity (a shuffle that is off): At(i) == i, nothing held.
  Permutation() = default;
  // A seeded order of [0, n), n in [1, 2^32]: stored up to kStoredMaxIds ids, computed above.
  static Permutation Make(uint64_t n, uint64_t seed);
  // The two kinds whatever n is (tests; Make chooses).
  static Permutation Stored(uint64_t n, uint64_t seed);
  static Permutation Computed(uint64_t n, uint64_t seed);

  bool identity() const { return table_.empty() && !keyed_.has_value(); }
  uint32_t At(uint32_t i) const {
    if (!table_.empty()) return table_[i];
    return keyed_.has_value() ? keyed_->At(i) : i;
  }
  // out[j] = At(first + j) for j < count: the fast way to read a run of positions.
  void Fill(uint32_t first, size_t count, uint32_t* out) const;
  // Calls f once with a callable uint32_t(uint32_t) for the kind held, so a loop over many ids can run without a
  // branch on the kind per id.
  template <typename F>
  void Visit(F&& f) const {
    if (!table_.empty()) {
      const uint32_t* t = table_.data();
      f([t](uint32_t i) { return t[i]; });
    } else if (keyed_.has_value()) {
      const KeyedPermutation& k = *keyed_;
      f([&k](uint32_t i) { return k.At(i); });
    } else {
      f([](uint32_t i) { return i; });
    }
  }
  // Heap bytes held: 4 per id when stored, 0 otherwise.
  size_t MemoryBytes() const { return table_.capacity() * sizeof(uint32_t); }

 private:
  std::vector<uint32_t> table_;
  std::optional<KeyedPermutation> keyed_;
};

}  // namespace dlio
