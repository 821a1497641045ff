#include "base/nearest.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace dlio {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

namespace {

// The largest edit distance that is still a typo of `word`, not another word.
size_t TypoDistance(std::string_view word) { return std::max<size_t>(2, word.size() / 4); }

}  // namespace

std::string NearestName(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= TypoDistance(word) ? best : "";
}

std::vector<std::string> NearNames(std::string_view word, const std::vector<std::string>& candidates, size_t most) {
  const std::string lower_word = absl::AsciiStrToLower(std::string(word));
  std::vector<std::pair<size_t, std::string>> near;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d <= TypoDistance(word) || (!word.empty() && absl::StrContains(absl::AsciiStrToLower(c), lower_word))) {
      near.emplace_back(d, c);
    }
  }
  std::sort(near.begin(), near.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < near.size() && i < most; ++i) out.push_back(std::move(near[i].second));
  return out;
}

}  // namespace dlio
