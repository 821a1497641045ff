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

// Every candidate a typo away from `word` (the rule of NearestName) or holding it, case aside ("unet3d" is near
// unet3d_a100 and unet3d_h100): the nearest first (ties in name order), at most `most`.
std::vector<std::string> NearNames(std::string_view word, const std::vector<std::string>& candidates, size_t most);

}  // namespace dlio
