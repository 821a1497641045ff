#include "job/distribution.h"

#include <cmath>
#include <map>

#include "base/sleep.h"
#include "base/text.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"

namespace dlio {

namespace {

absl::Status Bad(const std::string& key, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", key, what));
}

bool Number(const YAML::Node& n, double* out) {
  if (!n.IsScalar()) return false;
  try {
    *out = n.as<double>();
    return std::isfinite(*out);
  } catch (const YAML::Exception&) {
    return false;
  }
}

double StdNormal(Xoshiro256& rng) {
  const double u1 = rng.Unit(), u2 = rng.Unit();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Marsaglia & Tsang (2000); shape < 1 via the boost k -> k + 1 with U^(1/k).
double Gamma(Xoshiro256& rng, double shape) {
  if (shape < 1) return Gamma(rng, shape + 1) * std::pow(rng.Unit(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = StdNormal(rng);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.Unit();
    if (u < 1 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
  }
}

// Knuth's product method below 30; above, the normal approximation (rounded), whose error there is < 1 %.
double Poisson(Xoshiro256& rng, double lam) {
  if (lam >= 30) return std::max(0.0, std::round(lam + std::sqrt(lam) * StdNormal(rng)));
  const double limit = std::exp(-lam);
  double p = 1.0;
  int k = 0;
  do {
    ++k;
    p *= rng.Unit();
  } while (p > limit);
  return k - 1;
}

std::string Num(double v) { return fmt::format("{}", v); }

// The parameters of a distribution map (and its `type`), read with their ranges checked; errors name `key`.
struct DistributionParams {
  const std::string& key;
  std::map<std::string, double> p;
  std::string type;

  absl::Status Read(const YAML::Node& n) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) return Bad(key, "distribution parameters must be names");
      const std::string k = it->first.Scalar();
      if (k == "type") {
        type = it->second.IsScalar() ? it->second.Scalar() : "";
        continue;
      }
      double v;
      if (!Number(it->second, &v)) return Bad(key, fmt::format("{} must be a number", EscapeText(k, 64)));
      // Seconds, or a gamma shape: a day at most keeps every draw and mean within what a sleep can take.
      if (std::abs(v) > kMaxSleepSeconds) {
        return Bad(key, fmt::format("{} must be in [-86400, 86400], got {}", EscapeText(k, 64), Num(v)));
      }
      p[k] = v;
    }
    return absl::OkStatus();
  }
  // Exactly the parameters `names`.
  absl::Status Need(std::initializer_list<const char*> names) const {
    for (const auto& [k, v] : p) {
      bool known = false;
      for (const char* nm : names) known |= k == nm;
      if (!known) {
        return Bad(key, fmt::format("unknown parameter '{}' for {} (allowed: {})", EscapeText(k, 64),
                                    type.empty() ? "a mean/stdev distribution" : type,
                                    fmt::join(names.begin(), names.end(), ", ")));
      }
    }
    for (const char* nm : names) {
      if (!p.count(nm)) return Bad(key, fmt::format("{} needs {}", type.empty() ? "the distribution" : type, nm));
    }
    return absl::OkStatus();
  }
  absl::Status NonNegative(const char* nm) {
    if (p[nm] < 0) return Bad(key, fmt::format("{} must be a number >= 0, got {}", nm, Num(p[nm])));
    return absl::OkStatus();
  }
  absl::Status Positive(const char* nm) {
    if (!(p[nm] > 0)) return Bad(key, fmt::format("{} must be a number > 0, got {}", nm, Num(p[nm])));
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<Distribution> Distribution::Parse(const YAML::Node& n, const std::string& key) {
  Distribution d;
  if (n.IsScalar()) {
    if (!Number(n, &d.a) || d.a < 0 || d.a > kMaxSleepSeconds) {
      return Bad(key, fmt::format("must be a number of seconds in [0, 86400], got '{}'", EscapeText(n.Scalar(), 64)));
    }
    return d;
  }
  if (!n.IsMap() || n.size() == 0) {
    return Bad(key, "must be a number of seconds or a distribution such as {mean: 0.1, stdev: 0.01} or "
                    "{type: uniform, min: 0.1, max: 0.2}");
  }
  DistributionParams params{key, {}, ""};
  if (absl::Status r = params.Read(n); !r.ok()) return r;
  std::map<std::string, double>& p = params.p;
  const std::string& type = params.type;
  absl::Status s;
  if (type.empty()) {
    if (!p.count("mean")) return Bad(key, "a distribution without `type` needs `mean` (and optionally `stdev`)");
    if (p.count("stdev")) {
      if (!(s = params.Need({"mean", "stdev"})).ok() || !(s = params.NonNegative("stdev")).ok()) return s;
      d.kind = p["stdev"] > 0 ? Kind::kNormal : Kind::kConstant;
      d.a = p["mean"];
      d.b = p["stdev"];
      if (d.kind == Kind::kConstant) d.b = 0;
    } else {
      if (!(s = params.Need({"mean"})).ok()) return s;
      d.a = p["mean"];
    }
    if (d.a < 0) return Bad(key, fmt::format("mean must be a number >= 0, got {}", Num(d.a)));
    return d;
  }
  if (type == "normal") {
    if (!(s = params.Need({"mean", "stdev"})).ok() || !(s = params.NonNegative("stdev")).ok() ||
        !(s = params.NonNegative("mean")).ok()) {
      return s;
    }
    d.kind = Kind::kNormal;
    d.a = p["mean"];
    d.b = p["stdev"];
  } else if (type == "uniform") {
    if (!(s = params.Need({"min", "max"})).ok() || !(s = params.NonNegative("min")).ok()) return s;
    if (p["min"] > p["max"]) return Bad(key, fmt::format("min {} is above max {}", Num(p["min"]), Num(p["max"])));
    d.kind = Kind::kUniform;
    d.a = p["min"];
    d.b = p["max"];
  } else if (type == "gamma") {
    if (!(s = params.Need({"shape", "scale"})).ok() || !(s = params.Positive("shape")).ok() ||
        !(s = params.Positive("scale")).ok()) {
      return s;
    }
    d.kind = Kind::kGamma;
    d.a = p["shape"];
    d.b = p["scale"];
  } else if (type == "exponential") {
    if (!(s = params.Need({"scale"})).ok() || !(s = params.Positive("scale")).ok()) return s;
    d.kind = Kind::kExponential;
    d.a = p["scale"];
  } else if (type == "poisson") {
    if (!(s = params.Need({"lam"})).ok() || !(s = params.NonNegative("lam")).ok()) return s;
    d.kind = Kind::kPoisson;
    d.a = p["lam"];
  } else {
    return Bad(key, fmt::format("unknown distribution type '{}' (allowed: normal, uniform, gamma, exponential, "
                                "poisson)", EscapeText(type, 64)));
  }
  return d;
}

double Distribution::Mean() const {
  switch (kind) {
    case Kind::kConstant: return a;
    case Kind::kNormal: return a;
    case Kind::kUniform: return (a + b) / 2;
    case Kind::kGamma: return a * b;
    case Kind::kExponential: return a;
    case Kind::kPoisson: return a;
  }
  return a;
}

double Distribution::Sample(Xoshiro256& rng) const {
  double v = a;
  switch (kind) {
    case Kind::kConstant: v = extra_stdev > 0 ? a + extra_stdev * StdNormal(rng) : a; break;
    case Kind::kNormal: v = a + b * StdNormal(rng); break;
    case Kind::kUniform: v = a + (b - a) * (rng.Unit() - std::ldexp(1.0, -53)); break;
    case Kind::kGamma: v = Gamma(rng, a) * b; break;
    case Kind::kExponential: v = -a * std::log(rng.Unit()); break;
    case Kind::kPoisson: v = Poisson(rng, a); break;
  }
  // Made positive as DLIO does; capped at a day (a tail draw must not ask a sleep for more than the keys allow).
  return std::min(std::abs(v), kMaxSleepSeconds);
}

std::string Distribution::ToYaml() const {
  switch (kind) {
    case Kind::kConstant: return Num(a);
    case Kind::kNormal: return fmt::format("{{type: normal, mean: {}, stdev: {}}}", Num(a), Num(b));
    case Kind::kUniform: return fmt::format("{{type: uniform, min: {}, max: {}}}", Num(a), Num(b));
    case Kind::kGamma: return fmt::format("{{type: gamma, shape: {}, scale: {}}}", Num(a), Num(b));
    case Kind::kExponential: return fmt::format("{{type: exponential, scale: {}}}", Num(a));
    case Kind::kPoisson: return fmt::format("{{type: poisson, lam: {}}}", Num(a));
  }
  return Num(a);
}

}  // namespace dlio
