// S3 request statistics as plain data (storage/s3/client.h counts them; the agent exports them on /metrics and ships a
// phase's worth in its results; the coordinator sums them into summary.json's dlio_ext.s3). Per operation: requests
// (attempts), payload bytes, retries, redirects followed, failed attempts by HTTP status slot, and a latency
// histogram (nanoseconds, results/latency_histogram.h's layout, so merging is a sum). Per endpoint (issue 27 item 1,
// storage/s3/endpoints.h): requests, bytes, failed attempts, failovers away from it and latency, every operation
// together; merged by endpoint name.
// Thread-safety: plain value types.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "results/latency_histogram.h"

namespace dlio {

// Operations, for the metrics (label `operation`).
enum class S3Op { kGet = 0, kGetRange, kHead, kPut, kMultipartPart, kMultipartControl, kList, kDelete };
inline constexpr int kS3OpCount = 8;
// "get", "get_range", "head", "put", "multipart_part", "multipart_control", "list", "delete".
const char* S3OpName(S3Op op);

// HTTP statuses kept apart in the error counters (label `status`); anything else is "other", a request that got
// no HTTP answer (refused, reset, timed out) is "none".
inline constexpr std::array<int, 12> kS3ErrorStatuses = {400, 403, 404, 409, 412, 416, 429, 500, 502, 503, 504, 0};
inline constexpr int kS3StatusSlots = static_cast<int>(kS3ErrorStatuses.size()) + 1;  // + "other"
const char* S3StatusLabel(int slot);

struct S3OpSnapshot {
  uint64_t requests = 0;  // attempts that got an answer or failed in transport
  uint64_t bytes = 0;     // payload bytes received (GET, LIST) or sent (PUT, part)
  uint64_t retries = 0;
  uint64_t redirects = 0;  // redirect hops followed (storage/s3/client.h)
  std::array<uint64_t, kS3StatusSlots> errors{};  // failed attempts by status slot
  LatencyHistogram latency;
  S3OpSnapshot& operator+=(const S3OpSnapshot& o);
};
// One endpoint's share of the requests (every operation).
struct S3EndpointSnapshot {
  std::string endpoint;    // as the job names it (scheme://host[:port], no trailing '/')
  uint64_t requests = 0;   // attempts sent to it
  uint64_t bytes = 0;      // payload bytes of its successful attempts
  uint64_t errors = 0;     // its failed attempts (any status, or none)
  uint64_t failovers = 0;  // attempts moved from it to the next endpoint after it failed
  LatencyHistogram latency;
  S3EndpointSnapshot& operator+=(const S3EndpointSnapshot& o);
};

struct S3Snapshot {
  std::array<S3OpSnapshot, kS3OpCount> ops;
  std::vector<S3EndpointSnapshot> endpoints;  // in the order first seen; names unique once merged (+=)
  // The entry of `endpoint`, added (zero) when missing.
  S3EndpointSnapshot& Endpoint(const std::string& endpoint);
  uint64_t total_failovers() const;
  S3Snapshot& operator+=(const S3Snapshot& o);
  uint64_t total_requests() const;
};

// a - b, operation by operation (a phase's share of a process-wide running total; b taken before a).
S3Snapshot S3Difference(const S3Snapshot& a, const S3Snapshot& b);

}  // namespace dlio
