// "Did you mean": the known name a misspelt one most likely meant. One place for every such suggestion (unknown
// workload keys in workload_spec.cc, command-line typos in cli_parse.cc).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dlio {

// Levenshtein distance (insertions, deletions, substitutions each cost 1).
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` by edit distance when that distance is at most max(2, word.size() / 4) (a typo,
// not another word); "" when none is that close. Ties: the first candidate.
std::string NearestName(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace dlio
