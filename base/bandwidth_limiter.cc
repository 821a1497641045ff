#include "base/bandwidth_limiter.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/sleep.h"

namespace dlio {

namespace {

// NaN and everything below kMinRate become kMinRate.
double BoundedRate(double r) {
  return std::isnan(r) ? BandwidthLimiter::kMinRate
                       : std::clamp(r, BandwidthLimiter::kMinRate, BandwidthLimiter::kMaxRate);
}

}  // namespace

BandwidthLimiter::BandwidthLimiter(Options o)
    : rate_(BoundedRate(o.bytes_per_second)), ns_per_byte_(1e9 / rate_), opt_(std::move(o)) {}

int64_t BandwidthLimiter::Now() const {
  if (opt_.now_ns) return opt_.now_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t BandwidthLimiter::Acquire(uint64_t bytes, const std::atomic<bool>* cancel) {
  // In double, then bounded: 2^64 bytes at 1 B/s is 1.8e28 ns, which no int64_t holds.
  const int64_t cost = static_cast<int64_t>(
      std::min(static_cast<double>(bytes) * ns_per_byte_, static_cast<double>(kMaxCostNs)));
  const int64_t now = Now();
  int64_t tat = tat_ns_.load(std::memory_order_relaxed);
  int64_t next = 0;
  do {
    // Idle time earns no credit: the schedule restarts at `now`; the burst below is the only allowance. The sum
    // saturates at int64's end (reached only after 2^3 maximal costs): waits stay long, never wrap negative.
    const int64_t from = std::max(tat, now);
    next = from > std::numeric_limits<int64_t>::max() - cost ? std::numeric_limits<int64_t>::max() : from + cost;
  } while (!tat_ns_.compare_exchange_weak(tat, next, std::memory_order_relaxed));
  const int64_t wait = next - now - kBurstNs;
  if (wait <= 0) return 0;
  if (opt_.sleep_ns) {
    opt_.sleep_ns(wait);
  } else {
    SleepFor(static_cast<double>(wait) * 1e-9, cancel);
  }
  return wait;
}

absl::StatusOr<double> ParseByteRate(const std::string& text) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "must be a rate in bytes per second: a number (e.g. 104857600) or a number with a unit B, KB, MB, GB, TB "
        "(powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), optionally with /s (e.g. 100MiB/s); got '",
        text, "'"));
  };
  if (t.size() > 2 && t.compare(t.size() - 2, 2, "/s") == 0) t.resize(t.size() - 2);
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.' || t[i] == 'e' ||
                          t[i] == '+' || t[i] == '-')) {
    // 'e' only as an exponent: stop at a unit beginning with a letter other than a lone exponent.
    if (t[i] == 'e' && (i + 1 >= t.size() || !(std::isdigit(static_cast<unsigned char>(t[i + 1])) ||
                                              t[i + 1] == '+' || t[i + 1] == '-'))) {
      break;
    }
    ++i;
  }
  if (i == 0) return bad();
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(t.substr(0, i), &used);
    if (used != i) return bad();
  } catch (...) {
    return bad();
  }
  std::string unit(absl::StripAsciiWhitespace(t.substr(i)));
  double mult = 0;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "kb") mult = 1e3;
  else if (unit == "mb") mult = 1e6;
  else if (unit == "gb") mult = 1e9;
  else if (unit == "tb") mult = 1e12;
  else if (unit == "kib") mult = 1024.0;
  else if (unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else return bad();
  const double r = v * mult;
  if (!std::isfinite(r) || r < 0) return bad();
  return r;
}

}  // namespace dlio
