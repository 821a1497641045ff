#include "base/text.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dlio {

namespace {

// Length of the UTF-8 sequence starting at s[i] when it is well formed, else 0.
size_t Utf8Sequence(absl::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

bool IsControl(absl::string_view s, size_t i, size_t n) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (n == 1) return c < 0x20 || c == 0x7F;
  // C1 controls U+0080..U+009F: C2 80 .. C2 9F.
  return n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
}

}  // namespace

bool IsValidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string EscapeText(absl::string_view s, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 16);
  size_t i = 0;
  for (; i < s.size() && out.size() < max_bytes;) {
    const size_t n = Utf8Sequence(s, i);
    if (n == 0 || IsControl(s, i, n)) {
      const size_t bad = n == 0 ? 1 : n;
      for (size_t k = 0; k < bad; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else absl::StrAppendFormat(&out, "\\x%02x", c);
      }
      i += bad;
      continue;
    }
    out.append(s.data() + i, n);
    i += n;
  }
  if (i < s.size()) absl::StrAppend(&out, "... (", s.size(), " bytes)");
  return out;
}

absl::Status CheckText(absl::string_view s, const std::string& what, size_t max_bytes) {
  const char* problem = nullptr;
  if (s.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": must be at most ", max_bytes, " bytes, got ", s.size(),
                                                    " bytes ('", EscapeText(s, 64), "')"));
  }
  if (!IsValidUtf8(s)) {
    problem = "valid UTF-8";
  } else {
    for (size_t i = 0; i < s.size();) {
      const size_t n = Utf8Sequence(s, i);
      if (IsControl(s, i, n)) {
        problem = "text without control characters (newline, tab, NUL, ...)";
        break;
      }
      i += n;
    }
  }
  if (problem == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, ": must be ", problem, ", got '", EscapeText(s, 64), "'"));
}

}  // namespace dlio
