#include "job/yaml_scalar.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "base/text.h"
#include "fmt/format.h"
#include "job/workload_spec.h"
#include "nlohmann/json.hpp"

namespace dlio::workload_internal {

// yaml-cpp tags a quoted scalar "!" and a plain one "?". A quoted "8" is a string, as it is for DLIO (OmegaConf).
bool IsPlainScalar(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "!"; }

bool ParseInt(const YAML::Node& n, int64_t* out) {
  if (!IsPlainScalar(n)) return false;
  std::string_view t = n.Scalar();
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (t.empty()) return false;
  const char* end = t.data() + t.size();
  auto [p, ec] = std::from_chars(t.data(), end, *out);
  return ec == std::errc() && p == end;
}

bool ParseNumber(const YAML::Node& n, double* out) {
  if (!IsPlainScalar(n)) return false;
  const std::string& t = n.Scalar();
  if (t.empty()) return false;
  const char c = t[0];
  if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')) return false;
  if (absl::StrContains(t, "x") || absl::StrContains(t, "X")) return false;  // no hex floats
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool ParseBool(const YAML::Node& n, bool* out) {
  if (!IsPlainScalar(n)) return false;
  const std::string t = absl::AsciiStrToLower(n.Scalar());
  if (t == "true") {
    *out = true;
    return true;
  }
  if (t == "false") {
    *out = false;
    return true;
  }
  return false;
}

std::string Describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsScalar()) {
    double d;
    bool b;
    if (ParseNumber(n, &d) || ParseBool(n, &b)) return n.Scalar();
    return fmt::format("'{}'", EscapeText(n.Scalar(), 128));
  }
  if (n.IsSequence()) {
    std::vector<std::string> items;
    for (const YAML::Node& e : n) {
      if (!e.IsScalar() || items.size() >= 8) return "a list";
      items.push_back(Describe(e));
    }
    return fmt::format("[{}]", absl::StrJoin(items, ", "));
  }
  return "a mapping";
}

std::string Quote(const std::string& s) {
  // A JSON string is a valid YAML double-quoted scalar.
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Data table: the ranges of Unicode general category Cf (format characters), Unicode 15.0.
bool IsFormatCharacter(uint32_t cp) {
  static constexpr std::pair<uint32_t, uint32_t> kCf[] = {
      {0xAD, 0xAD},         {0x600, 0x605},     {0x61C, 0x61C},     {0x6DD, 0x6DD},     {0x70F, 0x70F},
      {0x890, 0x891},       {0x8E2, 0x8E2},     {0x180E, 0x180E},   {0x200B, 0x200F},   {0x202A, 0x202E},
      {0x2060, 0x2064},     {0x2066, 0x206F},   {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD},
      {0x110CD, 0x110CD},   {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
      {0xE0020, 0xE007F}};
  for (const auto& [lo, hi] : kCf) {
    if (cp >= lo && cp <= hi) return true;
  }
  return false;
}

namespace {

// The code point of the UTF-8 sequence at s[i] (`s` is valid UTF-8) and its length.
std::pair<uint32_t, size_t> DecodeAt(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k])); };
  const uint32_t c = b(0);
  if (c < 0x80) return {c, 1};
  if (c < 0xE0) return {((c & 0x1F) << 6) | (b(1) & 0x3F), 2};
  if (c < 0xF0) return {((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F), 3};
  return {((c & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F), 4};
}

}  // namespace

absl::Status CheckKeyText(const std::string& s, const std::string& path, size_t max_bytes) {
  if (absl::Status t = CheckText(s, path, max_bytes); !t.ok()) return t;
  std::string shown;  // the value with every format character written as \uXXXX, so the message shows it
  size_t first = std::string::npos;
  uint32_t first_cp = 0;
  for (size_t i = 0; i < s.size();) {
    const auto [cp, n] = DecodeAt(s, i);
    if (IsFormatCharacter(cp)) {
      if (first == std::string::npos) first = i, first_cp = cp;
      shown += fmt::format("\\u{:04x}", cp);
    } else {
      shown.append(s, i, n);
    }
    i += n;
  }
  if (first == std::string::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "{}: must be text without Unicode format characters (bidi controls such as U+202E, zero-width characters: "
      "category Cf), got '{}' (U+{:04X} at byte {})",
      path, EscapeText(shown, 128), first_cp, first));
}

std::string FormatDouble(double v) { return fmt::format("{}", v); }

absl::Status MustBe(const std::string& path, const std::string& what, const YAML::Node& n) {
  return absl::InvalidArgumentError(fmt::format("{}: must be {}, got {}", path, what, Describe(n)));
}

absl::Status NotSupportedYet(const std::string& path, const std::string& hint) {
  return absl::UnimplementedError(hint.empty()
                                      ? fmt::format("{}: DLIO key not supported yet by this version", path)
                                      : fmt::format("{}: DLIO key not supported yet by this version ({})", path, hint));
}

absl::Status ValueNotSupportedYet(const std::string& path, const std::string& value, const char* kind,
                                  const std::vector<std::string>& supported) {
  return absl::UnimplementedError(fmt::format("{}: '{}' is a DLIO {} not supported yet (supported: {})", path, value,
                                              kind, absl::StrJoin(supported, ", ")));
}

absl::Status ParseChoice(const YAML::Node& n, const std::string& path, const std::vector<std::string>& supported,
                         const std::vector<std::string>& dlio_only, const char* kind, std::string* out) {
  if (n.IsScalar()) {
    const std::string& v = n.Scalar();
    if (std::find(supported.begin(), supported.end(), v) != supported.end()) {
      *out = v;
      return absl::OkStatus();
    }
    if (std::find(dlio_only.begin(), dlio_only.end(), v) != dlio_only.end()) {
      return ValueNotSupportedYet(path, v, kind, supported);
    }
  }
  std::vector<std::string> all = supported;
  all.insert(all.end(), dlio_only.begin(), dlio_only.end());
  return MustBe(path, "one of " + absl::StrJoin(all, ", "), n);
}

absl::Status ParseDims(const YAML::Node& n, const std::string& p, const char* what, std::vector<int64_t>* out) {
  if (n.IsNull()) {
    out->clear();
    return absl::OkStatus();
  }
  if (!n.IsSequence()) return MustBe(p, what, n);
  std::vector<int64_t> dims;
  for (const YAML::Node& e : n) {
    int64_t d;
    if (!ParseInt(e, &d) || d < 1 || d > kMaxFiles) return MustBe(p, what, n);
    if (dims.size() >= kMaxDims) return MustBe(p, fmt::format("{} (at most {} entries)", what, kMaxDims), n);
    dims.push_back(d);
  }
  *out = std::move(dims);
  return absl::OkStatus();
}

std::string DimsText(const std::vector<int64_t>& v) { return fmt::format("[{}]", absl::StrJoin(v, ", ")); }

bool SameValue(const YAML::Node& user, const YAML::Node& def) {
  if (def.IsNull()) {
    return user.IsNull() || ((user.IsMap() || user.IsSequence()) && user.size() == 0);
  }
  if (def.IsScalar()) {
    if (!user.IsScalar()) return false;
    double a, b;
    if (ParseNumber(user, &a) && ParseNumber(def, &b)) return a == b;
    bool x, y;
    if (ParseBool(user, &x) && ParseBool(def, &y)) return x == y;
    return user.Scalar() == def.Scalar();
  }
  if (def.IsSequence()) {
    if (!user.IsSequence() || user.size() != def.size()) return false;
    for (size_t i = 0; i < def.size(); ++i) {
      if (!SameValue(user[i], def[i])) return false;
    }
    return true;
  }
  return false;
}

std::string FlowText(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "~";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

}  // namespace dlio::workload_internal
