// Distribution: a duration in seconds drawn per step (computation_time, eval_time) or per sample
// (preprocess_time), in DLIO's five forms (dlio_benchmark/utils/utility.py:sleep):
//   3.5                                         constant
//   {mean: m} / {mean: m, stdev: s}             constant / normal(m, s)
//   {type: normal, mean: m, stdev: s}           normal
//   {type: uniform, min: a, max: b}             uniform
//   {type: gamma, shape: k, scale: t}           gamma
//   {type: exponential, scale: t}               exponential
//   {type: poisson, lam: l}                     poisson
// plus DLIO's sibling key `<name>_stdev` that turns a constant into normal(constant, stdev). As in DLIO, a negative
// draw is made positive with abs().
// Ranges (checked by Parse): every parameter is at most a day (86400; seconds, or a gamma shape); means, stdevs,
// uniform bounds and poisson's lam are >= 0, gamma's shape and scale and exponential's scale > 0 (so a negative mean
// is refused in every form, as a plain negative number is). Draws are capped at a day.
// Parse() errors are one line naming the key: "train.computation_time: stdev must be a number >= 0, got -1".
// Sampling uses our own generator (one per rank or loader thread), so a run is reproducible from train.seed.
// Thread-safety: immutable value; Sample() mutates only the generator passed in.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "base/random.h"

namespace YAML {
class Node;
}

namespace dlio {

struct Distribution {
  enum class Kind { kConstant, kNormal, kUniform, kGamma, kExponential, kPoisson };
  Kind kind = Kind::kConstant;
  // kConstant: a = value; kNormal: a = mean, b = stdev; kUniform: a = min, b = max; kGamma: a = shape, b = scale;
  // kExponential: a = scale; kPoisson: a = lam.
  double a = 0, b = 0;
  // DLIO's `<name>_stdev` sibling key: with a constant, the draw is normal(a, extra_stdev).
  double extra_stdev = 0;

  // Parses one of DLIO's forms; `key` names the setting in errors.
  static absl::StatusOr<Distribution> Parse(const YAML::Node& node, const std::string& key);
  // The expected value (before abs()), for plans and --explain.
  double Mean() const;
  // One draw in seconds, >= 0.
  double Sample(Xoshiro256& rng) const;
  bool IsZero() const { return kind == Kind::kConstant && a == 0 && extra_stdev == 0; }
  // YAML text of the distribution (a plain number for a constant), parseable by Parse().
  std::string ToYaml() const;
  bool operator==(const Distribution& o) const {
    return kind == o.kind && a == o.a && b == o.b && extra_stdev == o.extra_stdev;
  }
};

}  // namespace dlio
