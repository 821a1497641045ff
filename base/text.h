// Text from outside (job files, agents, clients) made safe to keep, log and put on the wire.
//
// Every string the coordinator or an agent receives ends up in log lines, error messages (one line each), JSON
// documents and protobuf string fields (which must be valid UTF-8). IsValidUtf8() and CheckText() are the checks
// applied where such text enters; EscapeText() is for text that is only shown (a value in an error message): it
// never yields a control character or invalid UTF-8, so one line stays one line and a name cannot forge a log line.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace dlio {

// Well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(absl::string_view s);

// `s` with every control character (C0, DEL, C1) and every byte of invalid UTF-8 written as an escape (\n, \t, \r,
// \xNN), cut to about `max_bytes` with "... (N bytes)" appended when longer.
std::string EscapeText(absl::string_view s, size_t max_bytes = 256);

// OK when `s` is valid UTF-8 of at most `max_bytes` bytes without control characters; otherwise InvalidArgument
// "<what>: must be <what is allowed>, got '<escaped value>'" (one line).
absl::Status CheckText(absl::string_view s, const std::string& what, size_t max_bytes);

}  // namespace dlio
