#include "coordinator/targets_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace dlio {
namespace {

namespace fs = std::filesystem;

nlohmann::json Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

TEST(ResolveMetricsEndpoint, WildcardHostBecomesThePeerAddress) {
  EXPECT_EQ(ResolveMetricsEndpoint("0.0.0.0:9464", "ipv4:10.1.2.3:51234"), "10.1.2.3:9464");
  EXPECT_EQ(ResolveMetricsEndpoint(":9464", "ipv4:10.1.2.3:51234"), "10.1.2.3:9464");
  EXPECT_EQ(ResolveMetricsEndpoint("[::]:9464", "ipv6:[fd00::7]:51234"), "[fd00::7]:9464");
  EXPECT_EQ(ResolveMetricsEndpoint("::", "ipv4:10.1.2.3:1"), "::");  // no port: nothing sensible to rewrite
}

TEST(ResolveMetricsEndpoint, ConcreteHostIsKeptAndEmptyStaysEmpty) {
  EXPECT_EQ(ResolveMetricsEndpoint("127.0.0.1:9464", "ipv4:10.1.2.3:1"), "127.0.0.1:9464");
  EXPECT_EQ(ResolveMetricsEndpoint("node7:9464", "ipv4:10.1.2.3:1"), "node7:9464");
  EXPECT_EQ(ResolveMetricsEndpoint("", "ipv4:10.1.2.3:1"), "");
  EXPECT_EQ(ResolveMetricsEndpoint("0.0.0.0:9464", "unix:/tmp/s"), "0.0.0.0:9464");
}

TEST(TargetsFile, ListsAttachedAgentsAsFileSdGroupsAndForgetsDetachedOnes) {
  const fs::path dir = fs::temp_directory_path() / ("targets-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  TargetsFile f((dir / "agents.json").string());
  ASSERT_TRUE(f.Init().ok());
  EXPECT_EQ(Read(dir / "agents.json"), nlohmann::json::array());
  ASSERT_TRUE(f.Add("b", "n2", "10.0.0.2:9464").ok());
  ASSERT_TRUE(f.Add("a", "n1", "10.0.0.1:9464").ok());
  ASSERT_TRUE(f.Add("c", "n3", "").ok());  // no metrics endpoint: not listed
  nlohmann::json j = Read(dir / "agents.json");
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["targets"][0], "10.0.0.1:9464");
  EXPECT_EQ(j[0]["labels"]["node"], "n1");
  EXPECT_EQ(j[0]["labels"]["dlio_agent"], "a");
  EXPECT_FALSE(j[0]["labels"].contains("agent")) << "would clash with the series' own agent label";
  ASSERT_TRUE(f.Remove("a").ok());
  j = Read(dir / "agents.json");
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["labels"]["dlio_agent"], "b");
  // Only the file itself is left: the temporary names were renamed away.
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.is_regular_file();
  EXPECT_EQ(entries, 1u);
  fs::remove_all(dir);
}

TEST(TargetsFile, UnwritablePathIsAnErrorNamingTheOption) {
  TargetsFile f("/nonexistent-dir/agents.json");
  const absl::Status s = f.Init();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("--targets-file"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dlio
