// operator== of WorkloadSpec compares every field of job/workload_fields.h's list but the secret, and that list is
// every field: a new field that is in neither list fails here (its count), and one the comparison skipped fails
// the field-by-field test.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "job/workload_fields.h"
#include "job/workload_spec.h"

namespace dlio {
namespace {

// Converts to any field's type; never called (only its conversions are looked at, in unevaluated contexts).
struct AnyField {
  template <typename T>
  operator T() const;  // NOLINT: implicit on purpose
};

// T{AnyField x N} is well-formed exactly for N <= the number of fields of the aggregate T (every field takes an
// AnyField as it is, so no brace elision spreads them into a field's own members).
template <typename T, typename Seq, typename = void>
struct TakesFields : std::false_type {};
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
template <typename T, size_t... I>
struct TakesFields<T, std::index_sequence<I...>, std::void_t<decltype(T{(void(I), AnyField{})...})>>
    : std::true_type {};
#pragma GCC diagnostic pop

template <typename T, size_t N = 0>
constexpr size_t FieldCount() {
  if constexpr (TakesFields<T, std::make_index_sequence<N + 1>>::value) {
    return FieldCount<T, N + 1>();
  } else {
    return N;
  }
}

#define DLIO_COUNT_FIELD(f) +1
constexpr size_t kCompared = 0 DLIO_WORKLOAD_COMPARED_FIELDS(DLIO_COUNT_FIELD);
constexpr size_t kUncompared = 0 DLIO_WORKLOAD_UNCOMPARED_FIELDS(DLIO_COUNT_FIELD);
#undef DLIO_COUNT_FIELD

static_assert(std::is_aggregate_v<WorkloadSpec>, "FieldCount needs WorkloadSpec to stay an aggregate");

TEST(WorkloadSpecEquality, TheFieldListsHoldEveryField) {
  EXPECT_EQ(FieldCount<WorkloadSpec>(), kCompared + kUncompared)
      << "a field of WorkloadSpec is in neither list of job/workload_fields.h";
  EXPECT_EQ(kUncompared, 1u);
}

// A different value of every field type.
void Change(int64_t& v) { v += 1; }
void Change(int& v) { v += 1; }
void Change(double& v) { v += 0.5; }
void Change(bool& v) { v = !v; }
void Change(std::string& v) { v += "x"; }
void Change(std::vector<int64_t>& v) { v.push_back(7); }
void Change(ShuffleMode& v) { v = v == ShuffleMode::kOff ? ShuffleMode::kSeed : ShuffleMode::kOff; }
void Change(Distribution& v) { v.extra_stdev += 0.5; }
void Change(ParquetSpec& v) { v.row_group_size += 1; }

TEST(WorkloadSpecEquality, SpecsDifferingInOneComparedFieldAreUnequal) {
  const WorkloadSpec base;
  size_t checked = 0;
#define DLIO_CHECK_FIELD(f)                               \
  {                                                       \
    WorkloadSpec other;                                   \
    Change(other.f);                                      \
    EXPECT_FALSE(base == other) << #f " is not compared"; \
    EXPECT_TRUE(base != other) << #f;                     \
    EXPECT_TRUE(other == other) << #f;                    \
    ++checked;                                            \
  }
  DLIO_WORKLOAD_COMPARED_FIELDS(DLIO_CHECK_FIELD)
#undef DLIO_CHECK_FIELD
  EXPECT_EQ(checked, kCompared);
}

TEST(WorkloadSpecEquality, TheSecretIsNeverCompared) {
  WorkloadSpec a, b;
  a.s3_secret_access_key = "one";
  b.s3_secret_access_key = "two";
  EXPECT_TRUE(a == b);
#define DLIO_CHECK_FIELD(f)        \
  {                                \
    WorkloadSpec other;            \
    Change(other.f);               \
    EXPECT_TRUE(a == other) << #f; \
  }
  DLIO_WORKLOAD_UNCOMPARED_FIELDS(DLIO_CHECK_FIELD)
#undef DLIO_CHECK_FIELD
}

}  // namespace
}  // namespace dlio
