#include "job/distribution.h"

#include <cmath>

#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace dlio {
namespace {

absl::StatusOr<Distribution> P(const std::string& yaml) {
  return Distribution::Parse(YAML::Load(yaml), "train.computation_time");
}

// Mean and standard deviation of n draws.
std::pair<double, double> Moments(const Distribution& d, int n = 200000) {
  Xoshiro256 rng(42);
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double v = d.Sample(rng);
    EXPECT_GE(v, 0);
    s += v;
    s2 += v * v;
  }
  const double m = s / n;
  return {m, std::sqrt(s2 / n - m * m)};
}

TEST(Distribution, EveryDlioFormParsesAndSamplesItsMoments) {
  struct Case {
    const char* yaml;
    double mean, stdev;
  };
  const Case cases[] = {
      {"0.25", 0.25, 0},
      {"{mean: 0.5}", 0.5, 0},
      {"{mean: 1.0, stdev: 0.1}", 1.0, 0.1},
      {"{type: normal, mean: 2.0, stdev: 0.2}", 2.0, 0.2},
      {"{type: uniform, min: 1.0, max: 3.0}", 2.0, 2.0 / std::sqrt(12.0)},
      {"{type: gamma, shape: 2.0, scale: 0.5}", 1.0, std::sqrt(2.0) * 0.5},
      {"{type: gamma, shape: 0.5, scale: 2.0}", 1.0, std::sqrt(0.5) * 2.0},
      {"{type: exponential, scale: 0.3}", 0.3, 0.3},
      {"{type: poisson, lam: 4}", 4.0, 2.0},
      {"{type: poisson, lam: 100}", 100.0, 10.0},
  };
  for (const Case& c : cases) {
    auto d = P(c.yaml);
    ASSERT_TRUE(d.ok()) << c.yaml << ": " << d.status();
    EXPECT_NEAR(d->Mean(), c.mean, 1e-12) << c.yaml;
    const auto [m, s] = Moments(*d);
    EXPECT_NEAR(m, c.mean, 0.01 * c.mean + 1e-9) << c.yaml;
    EXPECT_NEAR(s, c.stdev, 0.03 * c.stdev + 1e-9) << c.yaml;
    // ToYaml round-trips.
    auto back = P(d->ToYaml());
    ASSERT_TRUE(back.ok()) << d->ToYaml();
    EXPECT_EQ(*back, *d) << c.yaml;
  }
}

TEST(Distribution, NegativeDrawsAreMadePositiveLikeDlio) {
  auto d = P("{type: normal, mean: 0, stdev: 1}");
  ASSERT_TRUE(d.ok());
  const auto [m, s] = Moments(*d);
  EXPECT_NEAR(m, std::sqrt(2.0 / M_PI), 0.01);  // mean of |N(0,1)|
}

TEST(Distribution, SiblingStdevTurnsAConstantIntoANormal) {
  auto d = P("0.5");
  ASSERT_TRUE(d.ok());
  d->extra_stdev = 0.05;
  const auto [m, s] = Moments(*d);
  EXPECT_NEAR(m, 0.5, 0.005);
  EXPECT_NEAR(s, 0.05, 0.002);
}

TEST(Distribution, BadFormsAreOneLineErrorsNamingTheKey) {
  const std::pair<const char*, const char*> bad[] = {
      {"{mean: 1, stdev: -1}", "stdev must be a number >= 0"},
      {"{type: normal, mean: 1, stdev: -0.5}", "stdev must be a number >= 0"},
      {"{type: uniform, min: 2, max: 1}", "above max"},
      {"{type: gamma, shape: 0, scale: 1}", "shape must be a number > 0"},
      {"{type: weibull, k: 1}", "unknown distribution type 'weibull'"},
      {"{type: normal, mean: 1}", "needs stdev"},
      {"{type: exponential, scale: 1, lam: 2}", "unknown parameter 'lam'"},
      {"-1", "must be a number of seconds in [0, 86400]"},
      {"abc", "must be a number of seconds in [0, 86400]"},
      {"1e300", "must be a number of seconds in [0, 86400]"},
      {"{mean: -1, stdev: 1}", "mean must be a number >= 0"},
      {"{type: normal, mean: -1, stdev: 1}", "mean must be a number >= 0"},
      {"{type: uniform, min: -5, max: 1}", "min must be a number >= 0"},
      {"{type: gamma, shape: 1e9, scale: 1}", "shape must be in [-86400, 86400]"},
      {"{stdev: 1}", "needs `mean`"},
  };
  for (const auto& [yaml, expect] : bad) {
    auto d = P(yaml);
    ASSERT_FALSE(d.ok()) << yaml;
    const std::string msg(d.status().message());
    EXPECT_EQ(msg.rfind("train.computation_time: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(expect), std::string::npos) << yaml << " -> " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(Distribution, SameSeedSameDraws) {
  auto d = P("{type: gamma, shape: 2, scale: 0.1}");
  ASSERT_TRUE(d.ok());
  Xoshiro256 a(7), b(7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(d->Sample(a), d->Sample(b));
}

}  // namespace
}  // namespace dlio
