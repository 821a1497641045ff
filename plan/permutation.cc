#include "plan/permutation.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "base/random.h"

namespace dlio {
namespace {

// Our own generator (base/random.h) and Fisher-Yates, so a plan is the same on every agent whatever standard
// library it was built with (std::shuffle's algorithm is implementation-defined).
void FisherYates(std::vector<uint32_t>& v, Xoshiro256& rng) {
  // The swap partners j are drawn kAhead steps before they are used (the same draws in the same order, so the same
  // permutation) and their cache lines prefetched: a 10 M-entry permutation is 40 MB, and waiting for memory on
  // every random swap was most of EpochPlan::Make's time.
  constexpr size_t kAhead = 16;
  size_t ahead[kAhead];
  const size_t n = v.size();
  size_t drawn = n;  // the next i whose j is drawn (i runs n, n-1, ..., 2)
  auto draw = [&] {
    const size_t j = static_cast<size_t>(rng.Below(drawn));
    ahead[drawn % kAhead] = j;
    __builtin_prefetch(&v[j], 1);
    --drawn;
  };
  while (drawn > 1 && n - drawn < kAhead) draw();
  for (size_t i = n; i > 1; --i) {
    const size_t j = ahead[i % kAhead];
    if (drawn > 1) draw();  // i - kAhead's partner: it lands in ahead[] after j was read
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

KeyedPermutation::KeyedPermutation(uint64_t n, uint64_t seed) : n_(n) {
  int bits = 0;  // bits of n - 1: the smallest power of two >= n is 2^bits
  while (bits < 64 && ((n - 1) >> bits) != 0) ++bits;
  low_bits_ = bits / 2;
  low_mask_ = (uint64_t{1} << low_bits_) - 1;
  high_mask_ = (uint64_t{1} << (bits - low_bits_)) - 1;
  for (uint64_t& key : keys_) key = SplitMix64(seed);
}

void KeyedPermutation::Fill(uint32_t first, size_t count, uint32_t* out) const {
  constexpr size_t kBlock = 256;  // the walk list lives on the stack; long enough to keep the multipliers busy
  uint32_t walk[kBlock];          // positions in the block whose value is still >= n
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t m = std::min(kBlock, count - base);
    uint32_t* o = out + base;
    size_t left = 0;
    for (size_t j = 0; j < m; ++j) {
      const uint64_t x = Encrypt(first + base + j);  // < 2^bits <= 2^32: fits
      o[j] = static_cast<uint32_t>(x);
      walk[left] = static_cast<uint32_t>(j);
      left += x >= n_ ? 1 : 0;
    }
    while (left > 0) {
      size_t still = 0;
      for (size_t w = 0; w < left; ++w) {
        const uint32_t j = walk[w];
        const uint64_t x = Encrypt(o[j]);
        o[j] = static_cast<uint32_t>(x);
        walk[still] = j;
        still += x >= n_ ? 1 : 0;
      }
      left = still;
    }
  }
}

void Permutation::Fill(uint32_t first, size_t count, uint32_t* out) const {
  if (!table_.empty()) {
    std::copy_n(table_.begin() + first, count, out);
  } else if (keyed_.has_value()) {
    keyed_->Fill(first, count, out);
  } else {
    std::iota(out, out + count, first);
  }
}

Permutation Permutation::Make(uint64_t n, uint64_t seed) {
  return n <= kStoredMaxIds ? Stored(n, seed) : Computed(n, seed);
}

Permutation Permutation::Stored(uint64_t n, uint64_t seed) {
  Permutation p;
  p.table_.resize(static_cast<size_t>(n));
  std::iota(p.table_.begin(), p.table_.end(), uint32_t{0});
  Xoshiro256 rng(seed);
  FisherYates(p.table_, rng);
  return p;
}

Permutation Permutation::Computed(uint64_t n, uint64_t seed) {
  Permutation p;
  p.keyed_.emplace(n, seed);
  return p;
}

}  // namespace dlio
