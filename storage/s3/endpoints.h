// Many endpoints of one object store (issue 27 item 1): which endpoint an S3 client sends a request to.
//
// Contract:
//  - A job names one endpoint or several (storage.storage_options.endpoint_url as a list or comma-separated, or the
//    agent's S3_ENDPOINT_URIS; agent/object_store.h says which wins). All of them serve the same buckets.
//  - The policy (dlio_ext.s3_endpoint_policy) picks a client's first endpoint:
//      round_robin (the MLCommons fork's default): by rank, endpoint rank % n. A client made where no rank is known
//                   (generation, checkpoints, listing, the preflight) takes endpoint (turn + agent_index) % n, turn
//                   counting such clients in the process, so they spread evenly too;
//      per_agent:   every client of an agent on endpoint agent_index % n;
//      per_request: each request of a client goes to the endpoint after the one its previous request went to
//                   (clients start staggered as round_robin starts them).
//  - Failover: a request whose attempt fails in a way that is retried (5xx, throttling, transport errors) makes its
//    next attempt on the next endpoint ((i + 1) % n), and the client stays there (an endpoint that failed is not
//    asked again by that client until another fails). Each such move is one failover, counted against the endpoint
//    that failed. Without attempts left, the error names the endpoint that failed.
//  - The loader tells the clients it makes which rank they read for with ScopedS3Rank (a thread-local hint read by
//    S3Client's constructor only).
// Thread-safety: the functions are pure except NextUnrankedS3Client (one atomic); ScopedS3Rank is per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dlio {

enum class S3EndpointPolicy { kRoundRobin, kPerAgent, kPerRequest };

// "round_robin" | "per_agent" | "per_request"; anything else is InvalidArgument naming `key` and the allowed values.
absl::StatusOr<S3EndpointPolicy> ParseS3EndpointPolicy(absl::string_view name, absl::string_view key);
const char* S3EndpointPolicyName(S3EndpointPolicy p);

// "a, b,,c" -> {"a", "b", "c"}: comma-separated endpoints, blanks trimmed, empty entries and trailing '/' dropped.
std::vector<std::string> SplitS3Endpoints(absl::string_view csv);

// The endpoint (0 .. n-1) a new client starts on. `rank`: the rank it reads for (-1 = none known); `agent_index`:
// the agent's index among the job's agents; `turn`: the client's place in the process-wide turn of clients made
// without a rank (NextUnrankedS3Client). n == 0 is treated as 1.
size_t FirstS3Endpoint(S3EndpointPolicy policy, size_t n, int64_t rank, int64_t agent_index, uint64_t turn);

// The endpoint of a client's next request (per_request rotates; the others stay) and of the attempt after a failed
// one (the next endpoint, for every policy).
inline size_t NextS3EndpointForRequest(S3EndpointPolicy policy, size_t current, size_t n) {
  return policy == S3EndpointPolicy::kPerRequest && n > 1 ? (current + 1) % n : current;
}
inline size_t S3FailoverEndpoint(size_t current, size_t n) { return n > 1 ? (current + 1) % n : current; }

// The next place in the process-wide turn of clients made without a rank (0, 1, 2, ...).
uint64_t NextUnrankedS3Client();

// While alive, S3 clients made on this thread read for `rank` (see the contract); nests, restoring the previous.
class ScopedS3Rank {
 public:
  explicit ScopedS3Rank(int64_t rank);
  ~ScopedS3Rank();
  ScopedS3Rank(const ScopedS3Rank&) = delete;
  ScopedS3Rank& operator=(const ScopedS3Rank&) = delete;
  // The rank of the innermost live ScopedS3Rank of this thread; -1 when there is none.
  static int64_t Current();

 private:
  int64_t previous_;
};

}  // namespace dlio
