// Scalar values of a workload's YAML, as DLIO (OmegaConf) reads them, and the one-line messages the loader gives
// about them. Internal to dlio::job (the loader's files share it); not a public API.
//
// Contract:
//  - Parse*() accept only plain scalars (a quoted "8" is a string, as for DLIO); they return false, never throw.
//  - Describe() shows a value as an error message does: numbers and booleans bare, strings quoted and escaped.
//  - CheckKeyText() is the one check of every text value (folders, names, prefixes): base/text.h's CheckText (valid
//    UTF-8, no control characters, a length bound) and no Unicode format characters (general category Cf: bidi
//    controls such as U+202E, zero-width characters, the BOM), which make a path print as another one.
//  - MustBe() and friends make the loader's messages: "KEY: must be WHAT, got VALUE" (InvalidArgument) and the
//    "not supported yet" forms (Unimplemented, which LoadOptions::plan_only tolerates).
// Thread-safety: free functions without state; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "yaml-cpp/yaml.h"

namespace dlio::workload_internal {

bool IsPlainScalar(const YAML::Node& n);
bool ParseInt(const YAML::Node& n, int64_t* out);
bool ParseNumber(const YAML::Node& n, double* out);
// YAML 1.2 booleans, as OmegaConf reads them (yes/no/on/off stay strings there).
bool ParseBool(const YAML::Node& n, bool* out);

// A value as an error message shows it: numbers and booleans bare, strings in single quotes.
std::string Describe(const YAML::Node& n);
// A string as a YAML double-quoted scalar.
std::string Quote(const std::string& s);
// A double in shortest round-trip form.
std::string FormatDouble(double v);
// The value as YAML flow text ("~" for null or undefined), as --explain lists it.
std::string FlowText(const YAML::Node& n);
// "[a, b, c]".
std::string DimsText(const std::vector<int64_t>& v);

// OK when `s` is valid UTF-8 of at most `max_bytes` bytes without control characters (base/text.h CheckText) and
// without Unicode format characters (category Cf, Unicode 15); otherwise InvalidArgument naming `path`, e.g.
// "dataset.data_folder: must be text without Unicode format characters (bidi controls, zero-width characters:
// category Cf), got 'data\u202e' (U+202E at byte 4)".
absl::Status CheckKeyText(const std::string& s, const std::string& path, size_t max_bytes);
// True for a code point of Unicode general category Cf (format characters), Unicode 15.
bool IsFormatCharacter(uint32_t cp);

// "PATH: must be WHAT, got VALUE" (InvalidArgument).
absl::Status MustBe(const std::string& path, const std::string& what, const YAML::Node& n);
// "PATH: DLIO key not supported yet by this version[ (HINT)]" (Unimplemented).
absl::Status NotSupportedYet(const std::string& path, const std::string& hint = "");
// "PATH: 'VALUE' is a DLIO KIND not supported yet (supported: ...)" (Unimplemented).
absl::Status ValueNotSupportedYet(const std::string& path, const std::string& value, const char* kind,
                                  const std::vector<std::string>& supported);
// Enum-like value: `supported` are implemented, `dlio_only` are DLIO values not implemented yet.
absl::Status ParseChoice(const YAML::Node& n, const std::string& path, const std::vector<std::string>& supported,
                         const std::vector<std::string>& dlio_only, const char* kind, std::string* out);
// A YAML list of integers in [1, kMaxFiles], at most kMaxDims of them (or [] / null = empty) into `out`; `what`
// describes the expected value.
absl::Status ParseDims(const YAML::Node& n, const std::string& p, const char* what, std::vector<int64_t>* out);

// A value equal to DLIO's default `def` (numbers compared as numbers, booleans as booleans).
bool SameValue(const YAML::Node& user, const YAML::Node& def);

}  // namespace dlio::workload_internal
