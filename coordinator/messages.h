// How the coordinator's messages name things: lists of agents, rank ranges, durations. Shared by the registry, the
// job runner and the phase driver, so a message reads the same whichever part writes it.
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dlio {

// "a, b, c and 5 more": keeps messages about big fleets on one readable line.
inline std::string NameList(const std::vector<std::string>& names, size_t max = 8) {
  if (names.size() <= max) return absl::StrJoin(names, ", ");
  std::vector<std::string> head(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(max));
  return absl::StrCat(absl::StrJoin(head, ", "), " and ", names.size() - max, " more");
}

// "rank 3" or "ranks 4-7".
inline std::string RankRange(int first, int count) {
  if (count <= 1) return absl::StrCat("rank ", first);
  return absl::StrCat("ranks ", first, "-", first + count - 1);
}

inline double Secs(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// "2.5 s": an option's duration as a message names it.
inline std::string SecsText(std::chrono::milliseconds d) { return absl::StrFormat("%g s", d.count() / 1000.0); }

}  // namespace dlio
