#include "agent/phase_context.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dlio {

std::string PhaseContext::Where(int rank) const {
  return absl::StrCat("agent '", agent, "' rank ", rank, " job ", cmd.job_id, " phase ", cmd.phase_id);
}

void ForEachLocalRank(const PhaseCommand& cmd, const std::function<void(int local, int rank)>& body) {
  if (cmd.local_ranks == 1) return body(0, cmd.first_rank);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(cmd.local_ranks));
  for (int l = 0; l < cmd.local_ranks; ++l) threads.emplace_back(body, l, cmd.first_rank + l);
  for (auto& t : threads) t.join();
}

absl::Status Annotate(const absl::Status& s, const std::string& where) {
  return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
}

}  // namespace dlio
