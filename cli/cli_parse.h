// Command-line parsing for both binaries with one error convention: a parse error is ONE line on stderr,
// "<program> <subcommand>: <what>; see <program> <subcommand> --help", exit status 2 (bad input), and a misspelt
// option or subcommand names the nearest known one ("unknown option --agnets (did you mean --agents?)").
// --help prints the help of the command it follows and exits 0, as CLI11 does.
// Not thread-safe (parses into the App's bound variables); call once from main.
#pragma once

#include <optional>
#include <ostream>

namespace CLI {
class App;
}

namespace dlio {

// Parses argv into `app`. std::nullopt: carry on. Otherwise the process's exit status (0 after --help, 2 after a
// parse error, whose one line went to `err`).
std::optional<int> ParseCommandLine(CLI::App& app, int argc, const char* const* argv, std::ostream& err);

}  // namespace dlio
