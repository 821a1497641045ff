// Command-line parsing for both binaries with one error convention: a parse error is ONE line on stderr,
// "<program> <subcommand>: <what>; see <program> <subcommand> --help", exit status 2 (bad input), and a misspelt
// option or subcommand names the nearest known one ("unknown option --agnets (did you mean --agents?)").
// --help prints the help of the command it follows and exits 0, as CLI11 does; --version (AddVersionFlag) prints one
// line, "<program> <version> (commit <commit>)" (base/host_facts.h), and exits 0.
// Not thread-safe (parses into the App's bound variables); call once from main.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace dlio {

// DRAM of one host (--host-memory of dlio-agent and run): at most 1 PiB; the largest machines hold tens of TiB, and
// a value past it is a typo or a wrapped negative (2^64 - 1 read as 16 EiB).
inline constexpr uint64_t kMaxHostMemoryBytes = uint64_t{1} << 50;

// A byte size flag: a number with an optional unit (KB/MB/GB/TB: powers of 1000, KiB/MiB/GiB/TiB: of 1024;
// CLI11's AsSizeValue) turned into bytes, refused when negative (AsSizeValue reads "-1" as 2^64 - 1), not a whole
// number of bytes in uint64_t, or above `max`. The parse error names the flag (CLI11 prefixes the option's name):
// "--host-memory: must be a size in bytes in [0, 1125899906842624] (1 PiB), got '-1'".
CLI::Validator SizeInBytes(uint64_t max, const char* max_text);

// Adds --version to `app` (the top level of a binary), printing the line of the header with app's name.
void AddVersionFlag(CLI::App& app);

// Parses argv into `app`. std::nullopt: carry on. Otherwise the process's exit status (0 after --help, 2 after a
// parse error, whose one line went to `err`).
std::optional<int> ParseCommandLine(CLI::App& app, int argc, const char* const* argv, std::ostream& err);

}  // namespace dlio
