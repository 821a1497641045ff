// Every list of format names in common/ asks the one registry (job/format_traits.h): the spec's allowed values and
// the epoch plan's access pattern follow it. (readers/format_test.cc ties the format library's factories to it.)
#include "job/format_traits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "absl/strings/str_join.h"
#include "plan/epoch_plan.h"
#include "job/workload_spec.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;

TEST(FormatTraits, NamesAreUniqueAndFindable) {
  std::set<std::string> seen;
  for (const FormatTraits& f : Formats()) {
    EXPECT_TRUE(seen.insert(f.name).second) << f.name << " twice";
    EXPECT_EQ(FindFormatTraits(f.name), &f);
  }
  EXPECT_EQ(FormatNames().size(), Formats().size());
  EXPECT_EQ(FindFormatTraits("hdf5_opt"), nullptr);
}

TEST(FormatTraits, TheSpecAcceptsExactlyTheRegistry) {
  for (const std::string& name : FormatNames()) {
    auto s = LoadWorkload("dataset:\n  format: " + name + "\n", {});
    EXPECT_TRUE(s.ok()) << name << ": " << s.status();
  }
  auto bad = LoadWorkload("dataset:\n  format: nosuch\n", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("one of " + absl::StrJoin(FormatNames(), ", ")));
}

TEST(FormatTraits, ThePlanStreamsExactlyTheStreamingFormats) {
  WorkloadSpec s;
  for (const FormatTraits& f : Formats()) {
    s.format = f.name;
    EXPECT_EQ(AccessModeFor(s), f.streams ? AccessMode::kStream : AccessMode::kIndex) << f.name;
  }
}

TEST(FormatTraits, ObjectStorageRulesFollowTheRegistry) {
  for (const FormatTraits& f : Formats()) {
    EXPECT_EQ(CheckFormatReadsObjects(f.name).ok(), f.reads_objects) << f.name;
  }
}

}  // namespace
}  // namespace dlio
