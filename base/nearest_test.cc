#include "base/nearest.h"

#include "gtest/gtest.h"

namespace dlio {
namespace {

TEST(Nearest, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("agents", "agents"), 0u);
  EXPECT_EQ(EditDistance("agnets", "agents"), 2u);  // a transposition is two substitutions
  EXPECT_EQ(EditDistance("agent", "agents"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(Nearest, SuggestsOnlyWhatIsATypoAway) {
  const std::vector<std::string> known = {"--agents", "--accelerators-per-agent", "--output", "--json"};
  EXPECT_EQ(NearestName("--agnets", known), "--agents");
  EXPECT_EQ(NearestName("--outptu", known), "--output");
  EXPECT_EQ(NearestName("--jsno", known), "--json");
  EXPECT_EQ(NearestName("--frobnicate", known), "");  // another word, not a typo
  EXPECT_EQ(NearestName("x", {}), "");
}

}  // namespace
}  // namespace dlio

namespace dlio {
namespace {

TEST(Nearest, NearNamesAreTyposOrHoldTheWordNearestFirst) {
  const std::vector<std::string> names = {"resnet50_h100", "unet3d_a100", "unet3d_h100", "cosmoflow_h100"};
  EXPECT_EQ(NearNames("unet3d_h10", names, 5), (std::vector<std::string>{"unet3d_h100", "unet3d_a100"}));
  EXPECT_EQ(NearNames("UNET3D", names, 1), (std::vector<std::string>{"unet3d_a100"}));
  EXPECT_TRUE(NearNames("bert", names, 5).empty());
}

}  // namespace
}  // namespace dlio
