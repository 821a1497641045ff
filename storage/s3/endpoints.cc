#include "storage/s3/endpoints.h"

#include <atomic>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dlio {
namespace {

thread_local int64_t tls_rank = -1;

}  // namespace

absl::StatusOr<S3EndpointPolicy> ParseS3EndpointPolicy(absl::string_view name, absl::string_view key) {
  if (name == "round_robin") return S3EndpointPolicy::kRoundRobin;
  if (name == "per_agent") return S3EndpointPolicy::kPerAgent;
  if (name == "per_request") return S3EndpointPolicy::kPerRequest;
  return absl::InvalidArgumentError(absl::StrCat(key, ": unknown endpoint policy '", name,
                                                 "' (allowed: round_robin, per_agent, per_request)"));
}

const char* S3EndpointPolicyName(S3EndpointPolicy p) {
  switch (p) {
    case S3EndpointPolicy::kRoundRobin: return "round_robin";
    case S3EndpointPolicy::kPerAgent: return "per_agent";
    case S3EndpointPolicy::kPerRequest: return "per_request";
  }
  return "round_robin";
}

std::vector<std::string> SplitS3Endpoints(absl::string_view csv) {
  std::vector<std::string> out;
  for (absl::string_view e : absl::StrSplit(csv, ',')) {
    e = absl::StripAsciiWhitespace(e);
    while (!e.empty() && e.back() == '/') e.remove_suffix(1);
    if (!e.empty()) out.emplace_back(e);
  }
  return out;
}

size_t FirstS3Endpoint(S3EndpointPolicy policy, size_t n, int64_t rank, int64_t agent_index, uint64_t turn) {
  if (n <= 1) return 0;
  if (policy == S3EndpointPolicy::kPerAgent) return static_cast<size_t>(agent_index < 0 ? 0 : agent_index) % n;
  if (rank >= 0) return static_cast<size_t>(rank) % n;
  // Offset by the agent: the first unranked client of every agent (its listing, say) does not land on endpoint 0.
  return static_cast<size_t>((turn + static_cast<uint64_t>(agent_index < 0 ? 0 : agent_index)) % n);
}

uint64_t NextUnrankedS3Client() {
  static std::atomic<uint64_t> turn{0};
  return turn.fetch_add(1, std::memory_order_relaxed);
}

ScopedS3Rank::ScopedS3Rank(int64_t rank) : previous_(tls_rank) { tls_rank = rank; }
ScopedS3Rank::~ScopedS3Rank() { tls_rank = previous_; }
int64_t ScopedS3Rank::Current() { return tls_rank; }

}  // namespace dlio
