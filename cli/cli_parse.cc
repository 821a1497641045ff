#include "cli/cli_parse.h"

#include <charconv>
#include <string>
#include <system_error>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/host_facts.h"
#include "base/nearest.h"

namespace dlio {
namespace {

// The subcommand the arguments reached: the deepest parsed one.
CLI::App* Reached(CLI::App* app) {
  for (CLI::App* sub : app->get_subcommands()) return Reached(sub);
  return app;
}

std::string CommandPath(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent()) path = p->get_name() + " " + path;
  return path;
}

std::vector<std::string> SubcommandNames(CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* s : app->get_subcommands([](CLI::App*) { return true; })) names.push_back(s->get_name());
  return names;
}

// A known name `word` was meant as: the only one it abbreviates, else the nearest within a typo's distance.
std::string Meant(const std::string& word, const std::vector<std::string>& known) {
  std::string only;
  for (const std::string& k : known) {
    if (absl::StartsWith(k, word)) {
      if (!only.empty()) {
        only.clear();
        break;
      }
      only = k;
    }
  }
  return only.empty() ? NearestName(word, known) : only;
}

// What went wrong, in words, for an argument CLI11 could not place: a misspelt option or subcommand.
std::string Unplaced(CLI::App* at, const std::string& arg) {
  if (absl::StartsWith(arg, "-")) {
    const std::string name = arg.substr(0, arg.find('='));
    std::vector<std::string> known = {"--help"};
    for (const CLI::Option* o : at->get_options()) {
      for (const std::string& l : o->get_lnames()) known.push_back("--" + l);
      for (const std::string& s : o->get_snames()) known.push_back("-" + s);
    }
    const std::string meant = Meant(name, known);
    return "unknown option " + name + (meant.empty() ? "" : " (did you mean " + meant + "?)");
  }
  const std::vector<std::string> subs = SubcommandNames(at);
  if (subs.empty()) return "unexpected argument '" + arg + "'";
  const std::string meant = Meant(arg, subs);
  return "unknown command '" + arg + "' (" + (meant.empty() ? "one of " + absl::StrJoin(subs, ", ")
                                                            : "did you mean " + meant + "?") + ")";
}

}  // namespace

CLI::Validator SizeInBytes(uint64_t max, const char* max_text) {
  return CLI::Validator(
      [max, max_text](std::string& in) -> std::string {
        const std::string given = in;
        const std::string refused =
            "must be a size in bytes in [0, " + std::to_string(max) + "] (" + max_text + "), got '" + given + "'";
        const std::string trimmed(absl::StripAsciiWhitespace(in));
        if (trimmed.empty() || trimmed[0] == '-' || trimmed[0] == '+') return refused;
        try {
          if (!CLI::AsSizeValue(true)(in).empty()) return refused;
        } catch (const CLI::ValidationError&) {  // an overflow of the unit's factor, or no number at all
          return refused;
        }
        uint64_t bytes = 0;
        const auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), bytes);
        if (ec != std::errc() || end != in.data() + in.size() || bytes > max) return refused;
        return std::string();
      },
      "BYTES");
}

void AddVersionFlag(CLI::App& app) {
  app.set_version_flag("--version", app.get_name() + " " + ToolVersion() + " (commit " + ToolCommit() + ")",
                       "Print the version and the git commit of this build (one line) and exit");
}

std::optional<int> ParseCommandLine(CLI::App& app, int argc, const char* const* argv, std::ostream& err) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    CLI::App* at = Reached(&app);
    const std::vector<std::string> left = at->remaining();
    std::string what = e.what();
    if (!left.empty()) {
      what = Unplaced(at, left.front());
    } else if (absl::StrContains(what, "A subcommand is required")) {
      what = "a command is required (one of " + absl::StrJoin(SubcommandNames(at), ", ") + ")";
    }
    const std::string path = CommandPath(at);
    err << path << ": " << absl::StrReplaceAll(what, {{"\n", "; "}}) << "; see " << path << " --help\n";
    return 2;
  }
}

}  // namespace dlio
