#include "results/s3_stats.h"

namespace dlio {

const char* S3OpName(S3Op op) {
  switch (op) {
    case S3Op::kGet: return "get";
    case S3Op::kGetRange: return "get_range";
    case S3Op::kHead: return "head";
    case S3Op::kPut: return "put";
    case S3Op::kMultipartPart: return "multipart_part";
    case S3Op::kMultipartControl: return "multipart_control";
    case S3Op::kList: return "list";
    case S3Op::kDelete: return "delete";
  }
  return "get";
}

const char* S3StatusLabel(int slot) {
  static const char* const kLabels[] = {"400", "403", "404", "409", "412", "416", "429",
                                        "500", "502", "503", "504", "none", "other"};
  static_assert(sizeof(kLabels) / sizeof(kLabels[0]) == kS3StatusSlots);
  return slot >= 0 && slot < kS3StatusSlots ? kLabels[slot] : "other";
}

S3OpSnapshot& S3OpSnapshot::operator+=(const S3OpSnapshot& o) {
  requests += o.requests;
  bytes += o.bytes;
  retries += o.retries;
  redirects += o.redirects;
  for (int i = 0; i < kS3StatusSlots; ++i) errors[i] += o.errors[i];
  latency += o.latency;
  return *this;
}

S3EndpointSnapshot& S3EndpointSnapshot::operator+=(const S3EndpointSnapshot& o) {
  requests += o.requests;
  bytes += o.bytes;
  errors += o.errors;
  failovers += o.failovers;
  latency += o.latency;
  return *this;
}

S3EndpointSnapshot& S3Snapshot::Endpoint(const std::string& endpoint) {
  for (S3EndpointSnapshot& e : endpoints) {
    if (e.endpoint == endpoint) return e;
  }
  endpoints.emplace_back();
  endpoints.back().endpoint = endpoint;
  return endpoints.back();
}

uint64_t S3Snapshot::total_failovers() const {
  uint64_t n = 0;
  for (const S3EndpointSnapshot& e : endpoints) n += e.failovers;
  return n;
}

S3Snapshot& S3Snapshot::operator+=(const S3Snapshot& o) {
  for (int i = 0; i < kS3OpCount; ++i) ops[i] += o.ops[i];
  for (const S3EndpointSnapshot& e : o.endpoints) Endpoint(e.endpoint) += e;
  return *this;
}

uint64_t S3Snapshot::total_requests() const {
  uint64_t n = 0;
  for (const S3OpSnapshot& o : ops) n += o.requests;
  return n;
}

S3Snapshot S3Difference(const S3Snapshot& a, const S3Snapshot& b) {
  S3Snapshot d;
  for (int i = 0; i < kS3OpCount; ++i) {
    const S3OpSnapshot& x = a.ops[i];
    const S3OpSnapshot& y = b.ops[i];
    S3OpSnapshot& o = d.ops[i];
    o.requests = x.requests - y.requests;
    o.bytes = x.bytes - y.bytes;
    o.retries = x.retries - y.retries;
    o.redirects = x.redirects - y.redirects;
    for (int k = 0; k < kS3StatusSlots; ++k) o.errors[k] = x.errors[k] - y.errors[k];
    for (int k = 0; k < LatencyHistogram::kNumBuckets; ++k) o.latency.set_bucket(k, x.latency.bucket(k) - y.latency.bucket(k));
    o.latency.set_totals(x.latency.sum_ns() - y.latency.sum_ns(), x.latency.count() - y.latency.count());
  }
  for (const S3EndpointSnapshot& x : a.endpoints) {
    S3EndpointSnapshot y;
    for (const S3EndpointSnapshot& e : b.endpoints) {
      if (e.endpoint == x.endpoint) y = e;
    }
    S3EndpointSnapshot& o = d.Endpoint(x.endpoint);
    o.requests = x.requests - y.requests;
    o.bytes = x.bytes - y.bytes;
    o.errors = x.errors - y.errors;
    o.failovers = x.failovers - y.failovers;
    for (int k = 0; k < LatencyHistogram::kNumBuckets; ++k) o.latency.set_bucket(k, x.latency.bucket(k) - y.latency.bucket(k));
    o.latency.set_totals(x.latency.sum_ns() - y.latency.sum_ns(), x.latency.count() - y.latency.count());
  }
  return d;
}

}  // namespace dlio
