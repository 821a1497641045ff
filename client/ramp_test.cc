#include "client/ramp.h"

#include <gtest/gtest.h>

namespace dlio {
namespace {

TEST(Ramp, ParsesBothAxes) {
  absl::StatusOr<RampSpec> a = ParseRamp("accelerators=1,2,4,8");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->axis, "accelerators");
  EXPECT_EQ(a->points, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(a->max(), 8);
  absl::StatusOr<RampSpec> g = ParseRamp("agents=1,3");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->axis, "agents");
}

TEST(Ramp, RefusesBadValuesNamingTheFlag) {
  for (const char* bad : {"accelerators", "gpus=1,2", "accelerators=1,x", "accelerators=0,1", "accelerators=2,1",
                          "agents=", "accelerators=1,,2"}) {
    absl::StatusOr<RampSpec> r = ParseRamp(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("--ramp: '", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find("expected accelerators=N1,N2"), std::string::npos);
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }
}

RampPoint Point(int n, std::optional<double> au, const std::string& limit) {
  RampPoint p;
  p.n = n;
  p.job_id = "j" + std::to_string(n);
  p.folder = "accelerators-" + std::to_string(n);
  p.outcome.au = au;
  p.outcome.samples_per_second = 10.0 * n;
  p.outcome.mb_per_second = 1.5 * n;
  p.outcome.verdict.status = au && *au >= 90 ? VerdictStatus::kPass : VerdictStatus::kFail;
  p.outcome.verdict.limit_class = limit;
  p.outcome.verdict.limit_evidence = {{"batch_wait_share", 0.25}, {"batch_wait_p99_seconds", 0.0123}};
  return p;
}

TEST(Ramp, KneeIsTheLastPointAtOrAboveTheTarget) {
  RampSpec spec{"accelerators", {1, 2, 4, 8}};
  // 4 falls below, 8 comes back above: the knee is the last point at or above the target (8).
  const nlohmann::json j = RampJson(spec, 90, {Point(1, 99, "none"), Point(2, 90, "none"), Point(4, 70, "storage"),
                                               Point(8, 91, "none")});
  EXPECT_EQ(j["knee"], 8);
  const nlohmann::json k = RampJson(spec, 90, {Point(1, 99, "none"), Point(2, 90, "none"), Point(4, 70, "storage")});
  EXPECT_EQ(k["knee"], 2);
  EXPECT_EQ(k["points"][2]["limit"], "storage");
  EXPECT_EQ(k["points"][2]["verdict"], "FAIL");
  EXPECT_DOUBLE_EQ(k["points"][1]["batch_wait_share"].get<double>(), 0.25);
  const nlohmann::json none = RampJson(spec, 90, {Point(1, 50, "storage"), Point(2, std::nullopt, "")});
  EXPECT_TRUE(none["knee"].is_null());
  EXPECT_TRUE(none["points"][1]["au_percentage"].is_null());
  EXPECT_TRUE(none["points"][1]["limit"].is_null());
}

TEST(Ramp, TableMarksTheKnee) {
  RampSpec spec{"accelerators", {1, 2, 4}};
  const std::string t = RampTable(RampJson(spec, 90, {Point(1, 99, "none"), Point(2, 95, "none"),
                                                      Point(4, 60, "storage")}));
  EXPECT_NE(t.find("2 <- knee"), std::string::npos) << t;
  EXPECT_EQ(t.find("1 <- knee"), std::string::npos) << t;
  EXPECT_NE(t.find("storage"), std::string::npos);
  EXPECT_NE(t.find("knee: 2 accelerators (the last point with AU >= 90.0 %)"), std::string::npos) << t;
  EXPECT_NE(t.find("25.0"), std::string::npos);  // the batch-wait share in %
}

TEST(Ramp, TableHasTheBatchWaitP99Column) {
  RampSpec spec{"accelerators", {1, 2}};
  RampPoint unmeasured = Point(2, 95, "none");
  unmeasured.outcome.verdict.limit_evidence = {{"batch_wait_share", 0.25}};
  const nlohmann::json j = RampJson(spec, 90, {Point(1, 99, "none"), unmeasured});
  EXPECT_DOUBLE_EQ(j["points"][0]["batch_wait_p99_seconds"].get<double>(), 0.0123);
  EXPECT_TRUE(j["points"][1]["batch_wait_p99_seconds"].is_null());
  const std::string t = RampTable(j);
  EXPECT_NE(t.find("wait %  wait p99 ms"), std::string::npos) << t;
  EXPECT_NE(t.find("25.0         12.3"), std::string::npos) << t;  // the p99 in ms beside the share
  EXPECT_NE(t.find("25.0          n/m"), std::string::npos) << t;
}

TEST(Ramp, FindMaxProbesInRampJsonForm) {
  // The search tried 1, 2, 4 (fail), 3 (pass): the points in increasing order, the probes in the order tried.
  const nlohmann::json j = FindMaxRampJson(90, {Point(1, 99, "none"), Point(2, 95, "none"), Point(4, 60, "storage"),
                                                Point(3, 91, "none")}, 3);
  EXPECT_EQ(j["axis"], "accelerators");
  EXPECT_EQ(j["probes"], nlohmann::json({1, 2, 4, 3}));
  EXPECT_EQ(j["find_max"], 3);
  ASSERT_EQ(j["points"].size(), 4u);
  EXPECT_EQ(j["points"][2]["n"], 3);
  EXPECT_EQ(j["points"][3]["n"], 4);
  EXPECT_EQ(j["knee"], 3);
}

}  // namespace
}  // namespace dlio
