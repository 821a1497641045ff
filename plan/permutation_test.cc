#include "plan/permutation.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlio {
namespace {

std::vector<uint32_t> Order(const Permutation& p, uint32_t n) {
  std::vector<uint32_t> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) out.push_back(p.At(i));
  return out;
}

// Every id of [0, n) exactly once.
void ExpectBijection(const Permutation& p, uint32_t n) {
  std::vector<char> seen(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t id = p.At(i);
    ASSERT_LT(id, n) << "position " << i;
    ASSERT_EQ(seen[id], 0) << "id " << id << " twice (position " << i << ")";
    seen[id] = 1;
  }
}

// Sizes around the edges of the Feistel halves: 1 and 2, primes, powers of two and one past them.
const std::vector<uint32_t> kSizes = {1,    2,    3,     5,     7,     8,     9,          64,         97,
                                      1000, 1024, 1025,  4099,  65521, 65536, 65537,      1u << 20,
                                      (1u << 20) + 7, 999983};
const std::vector<uint64_t> kSeeds = {0, 1, 123, uint64_t{1} << 63, ~uint64_t{0}};

TEST(Permutation, ComputedIsABijectionForEverySizeAndSeed) {
  for (uint32_t n : kSizes) {
    for (uint64_t seed : kSeeds) {
      SCOPED_TRACE(testing::Message() << "n " << n << " seed " << seed);
      ExpectBijection(Permutation::Computed(n, seed), n);
    }
  }
}

TEST(Permutation, StoredIsABijectionForEverySizeAndSeed) {
  for (uint32_t n : kSizes) {
    for (uint64_t seed : kSeeds) {
      SCOPED_TRACE(testing::Message() << "n " << n << " seed " << seed);
      ExpectBijection(Permutation::Stored(n, seed), n);
    }
  }
}

TEST(Permutation, SameSeedSameOrderOtherSeedOtherOrder) {
  for (uint32_t n : {uint32_t{8}, uint32_t{97}, uint32_t{1024}, uint32_t{65537}}) {
    std::set<std::vector<uint32_t>> orders;
    for (uint64_t seed : kSeeds) {
      EXPECT_EQ(Order(Permutation::Computed(n, seed), n), Order(Permutation::Computed(n, seed), n));
      orders.insert(Order(Permutation::Computed(n, seed), n));
    }
    EXPECT_EQ(orders.size(), kSeeds.size()) << "n " << n;
  }
  // n = 2 has two orders: both occur over a few seeds.
  std::set<uint32_t> first;
  for (uint64_t seed = 0; seed < 16; ++seed) first.insert(Permutation::Computed(2, seed).At(0));
  EXPECT_EQ(first, (std::set<uint32_t>{0, 1}));
}

// A computed order looks shuffled: neighbours rarely come from one "file" of 100 ids, few ids stay in place, the
// mean displacement is that of a random permutation (n / 3), and the first positions reach across the whole range.
TEST(Permutation, ComputedOrdersLookShuffled) {
  for (uint32_t n : {uint32_t{100000}, uint32_t{1} << 20, (uint32_t{1} << 20) + 7}) {
    for (uint64_t seed : kSeeds) {
      SCOPED_TRACE(testing::Message() << "n " << n << " seed " << seed);
      const std::vector<uint32_t> v = Order(Permutation::Computed(n, seed), n);
      int64_t same_file = 0, fixed = 0;
      double displacement = 0;
      for (uint32_t i = 0; i < n; ++i) {
        if (i > 0) same_file += v[i] / 100 == v[i - 1] / 100;
        fixed += v[i] == i;
        displacement += v[i] > i ? v[i] - i : i - v[i];
      }
      EXPECT_LT(same_file, n / 50);  // a random order: n / 100
      EXPECT_LT(fixed, 20);          // a random order: 1
      EXPECT_NEAR(displacement / n / n, 1.0 / 3, 0.02);
      uint32_t lo = n, hi = 0;
      for (uint32_t i = 0; i < 1000; ++i) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
      EXPECT_LT(lo, n / 100);
      EXPECT_GT(hi, n - n / 100);
    }
  }
}

// Pins the computed order: coordinator and agents built at different times must still agree. The values were
// cross-checked with an independent Python rendering of splitmix64 and the Feistel network with cycle walking.
TEST(Permutation, ComputedOrdersAreStableAcrossBuilds) {
  EXPECT_EQ(Order(Permutation::Computed(10, 123), 10), (std::vector<uint32_t>{4, 7, 6, 0, 9, 2, 8, 5, 1, 3}));
  const std::vector<uint32_t> v = Order(Permutation::Computed(1000, 7), 1000);
  uint64_t h = 1469598103934665603ull;
  for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
  EXPECT_EQ(v[0], 748u);
  EXPECT_EQ(v.back(), 425u);
  EXPECT_EQ(h, 2962096377083978999ull);
  const Permutation big = Permutation::Computed(uint64_t{1} << 32, 123);
  EXPECT_EQ(Order(big, 6),
            (std::vector<uint32_t>{267401401, 4242172764, 1531252846, 1298026448, 2008340400, 3199146174}));
  EXPECT_EQ(big.At(UINT32_MAX), 2735559748u);
  EXPECT_EQ(Order(Permutation::Computed((uint64_t{1} << 24) + 3, ~uint64_t{0}), 4),
            (std::vector<uint32_t>{16567627, 3964571, 2315445, 1987309}));
}

// Make keeps the stored order (today's, pinned by the epoch plan's golden tests) up to kStoredMaxIds and computes
// it above, where it holds nothing per id.
TEST(Permutation, MakeStoresSmallOrdersAndComputesLargeOnes) {
  EXPECT_EQ(Order(Permutation::Make(1000, 5), 1000), Order(Permutation::Stored(1000, 5), 1000));
  EXPECT_EQ(Permutation::Make(1000, 5).MemoryBytes(), 1000 * sizeof(uint32_t));
  const uint64_t above = Permutation::kStoredMaxIds + 1;
  const Permutation large = Permutation::Make(above, 5);
  EXPECT_EQ(large.MemoryBytes(), 0u);
  EXPECT_EQ(Order(large, 1000), Order(Permutation::Computed(above, 5), 1000));
  EXPECT_FALSE(large.identity());
  EXPECT_TRUE(Permutation().identity());
  EXPECT_EQ(Permutation().At(77), 77u);
  EXPECT_EQ(Permutation::Make(uint64_t{1} << 32, 5).MemoryBytes(), 0u);
}

TEST(Permutation, VisitGivesTheSameIdsAsAt) {
  for (const Permutation& p : {Permutation(), Permutation::Stored(300, 9), Permutation::Computed(300, 9)}) {
    std::vector<uint32_t> visited;
    p.Visit([&](auto at) {
      for (uint32_t i = 0; i < 300; ++i) visited.push_back(at(i));
    });
    EXPECT_EQ(visited, Order(p, 300));
  }
}

TEST(Permutation, FillGivesTheSameIdsAsAt) {
  for (uint64_t n : {uint64_t{1}, uint64_t{2}, uint64_t{97}, uint64_t{1000}, uint64_t{70001}, uint64_t{1} << 32}) {
    for (const Permutation& p : {Permutation(), Permutation::Stored(std::min<uint64_t>(n, 70001), 3),
                                 Permutation::Computed(n, 3)}) {
      const auto size = static_cast<uint32_t>(std::min<uint64_t>(n, 70001));
      // Runs that start anywhere, shorter and longer than a block (256), ending at the last id.
      for (uint32_t first : {uint32_t{0}, size / 3, size - std::min(size, uint32_t{700})}) {
        const uint32_t count = std::min(size - first, uint32_t{1000});
        std::vector<uint32_t> filled(count);
        p.Fill(first, count, filled.data());
        for (uint32_t j = 0; j < count; ++j) ASSERT_EQ(filled[j], p.At(first + j)) << "n " << n << " at " << first + j;
      }
    }
  }
}

// The cost per id of the computed order read in runs, for the record (the epoch plan reads a rank's slice so).
TEST(Permutation, ComputedCostPerId) {
  const uint32_t n = (uint32_t{1} << 24) + 3;  // about two passes per id: the worst case of cycle walking
  const Permutation p = Permutation::Computed(n, 1);
  uint64_t sum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  uint32_t ids[512];
  for (uint32_t first = 0; first < n; first += 512) {
    const uint32_t count = std::min(n - first, uint32_t{512});
    p.Fill(first, count, ids);
    for (uint32_t j = 0; j < count; ++j) sum += ids[j];
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(sum, uint64_t{n} * (n - 1) / 2);
  RecordProperty("ns_per_id", std::to_string(seconds * 1e9 / n));
}

}  // namespace
}  // namespace dlio
