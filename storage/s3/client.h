// S3 object storage: the client every S3 code path of the agent goes through (readers, generation, checkpoints,
// listing, the preflight), over libcurl (Debian's 7.88) with its built-in SigV4 signing (CURLOPT_AWS_SIGV4).
//
// Contract:
//  - S3Config names the endpoint, region, bucket and credentials. The secret is held in S3Secret, which has no
//    printing: no error message, log line or metric ever contains it; errors name the endpoint, the bucket, the object
//    key, the HTTP status and the S3 error code, and (for credential errors) the access key id.
//  - S3Client: one per thread (one libcurl easy handle, so its connection is kept alive and reused request after
//    request). Operations: GET (whole object into a growing buffer), ranged GET (into the caller's buffer), HEAD,
//    PUT, multipart upload (create, part, complete, abort), ListObjectsV2 (one page, the caller pages), DELETE.
//  - libcurl 7.88 workarounds (measured against Ceph RGW 16): every request carries `x-amz-content-sha256:
//    UNSIGNED-PAYLOAD` (RGW answers 403 without it); the query string is built here already canonical (keys sorted,
//    URI-encoded, always `k=v`), because 7.88 signs it as given; no custom header is ever empty (7.88 signs it too);
//    object keys are URI-encoded once, here ('/' kept); PUT bodies have a known length.
//  - Redirects (301, 302, 307, 308, as AIStore's proxy answers with the target node): followed only when
//    S3Config::redirect_check is set (the agent sets it to its endpoint rule, agent/object_store.h) and accepts the
//    target's origin; the hop is a new request to the named URL, signed again by libcurl for the new host, with the
//    same method and body. At most kMaxRedirectHops hops per attempt; a loop (a URL already visited), a target that
//    is not http(s), one the check refuses, or one more hop than the bound is a one-line error naming the URL, never
//    retried. Without a check a redirect is not followed ("a redirect, not followed"). One attempt's latency and
//    bytes include its hops; each hop is counted in the op's `redirects`.
//  - Retries: 5xx, 429/SlowDown/RequestTimeout and transport errors (connection refused or reset, timeouts) are
//    retried with exponential backoff (kRetryBaseMs doubling, at most kRetryMaxMs, with jitter) up to
//    S3Config::max_attempts attempts in all (DLIO's s3_max_attempts, default 5); each retry is counted. Other 4xx
//    fail at once.
//  - Endpoints (storage/s3/endpoints.h): S3Config::endpoints names every endpoint of the store (empty = `endpoint`
//    alone); the client starts on the one its policy picks, moves on per request under per_request, and fails over
//    to the next one when an attempt fails with attempts left (counted, per endpoint). Every error names the
//    endpoint the failed attempt went to.
//  - Metrics: every attempt is counted in the client's S3Stats per operation (requests, bytes, latency histogram,
//    retries, errors by HTTP status) and per endpoint (requests, bytes, errors, failovers, latency); S3Metrics::Global() merges the live clients' stats (and those of clients
//    gone) at scrape time. No lock of ours is shared between threads per request: a client's stats take only its
//    own uncontended spinlock (as IoStats does).
//  - Allocation: a warmed-up client does no heap allocation of ours per GET or ranged GET (reused URL string, a
//    header list built once, buffers that grow only); libcurl's own allocations (it copies the URL per request) are
//    its own, reported apart by bench/alloc_bench.cc.
// Thread-safety: S3Client none (one per thread); S3Config is immutable once shared; S3Metrics is thread-safe.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "results/latency_histogram.h"
#include "base/mutex.h"
#include "job/s3_limits.h"
#include "results/s3_stats.h"
#include "storage/s3/endpoints.h"

typedef void CURL;
struct curl_slist;

namespace dlio {

class AlignedBuffer;

// A secret string: readable only through reveal(); never printed.
class S3Secret {
 public:
  S3Secret() = default;
  explicit S3Secret(std::string s) : value_(std::move(s)) {}
  const std::string& reveal() const { return value_; }
  bool empty() const { return value_.empty(); }
  bool operator==(const S3Secret& o) const { return value_ == o.value_; }

 private:
  std::string value_;
};

struct S3Config {
  std::string endpoint;            // scheme://host[:port], no trailing '/' (the first of `endpoints` when several)
  // Every endpoint of the store, in the job's order (storage/s3/endpoints.h); empty = `endpoint` alone.
  std::vector<std::string> endpoints;
  S3EndpointPolicy endpoint_policy = S3EndpointPolicy::kRoundRobin;  // dlio_ext.s3_endpoint_policy
  int64_t agent_index = 0;         // the agent's index among the job's agents (per_agent)
  std::string region = "us-east-1";
  std::string bucket;
  std::string access_key_id;
  S3Secret secret_access_key;
  bool force_path_style = false;   // virtual-hosted style otherwise, except for IP or localhost endpoints
  int max_attempts = 5;            // DLIO's s3_max_attempts: attempts in all, retries = attempts - 1
  // Per-request limits: connecting, and a transfer making no progress (below 1 byte/s) for this long.
  int connect_timeout_ms = 5000;
  int stall_timeout_s = 30;
  // dlio_ext.s3_requests_in_flight: whole-object GETs a loader thread keeps in flight (storage/s3/read_ahead.h);
  // 1 = one request at a time.
  int requests_in_flight = 1;
  // Redirects (see the contract): OK when a redirect may go to `origin` ("http://host:port", as the Location names
  // it); unset = redirects are not followed. Called on the client's thread; must be thread-safe when the config is
  // shared.
  std::function<absl::Status(const std::string& origin)> redirect_check;

  // "endpoint http://h:p bucket 'b'" ("endpoints http://a, http://b bucket 'b'" when several): how errors name the
  // target (a client's errors name the one endpoint its failed attempt went to).
  std::string Describe() const;
  // `endpoints`, or {endpoint} when it is empty.
  std::vector<std::string> EndpointList() const;
};

// Per-client counters (see the contract).
class S3Stats {
 public:
  // The endpoints counted apart (before the stats are shared: the client's constructor calls it).
  void SetEndpoints(const std::vector<std::string>& endpoints);
  // One attempt; `endpoint`: its index in SetEndpoints' list (not counted per endpoint without a list).
  void Record(S3Op op, uint64_t bytes, uint64_t ns, int http_status, bool failed, size_t endpoint = 0);
  void AddFailover(size_t endpoint) { failovers_[std::min(endpoint, failovers_.size() - 1)].fetch_add(1, std::memory_order_relaxed); }
  void AddRetry(S3Op op) { retries_[static_cast<int>(op)].fetch_add(1, std::memory_order_relaxed); }
  void AddRedirect(S3Op op) { redirects_[static_cast<int>(op)].fetch_add(1, std::memory_order_relaxed); }
  S3Snapshot Snapshot() const;

 private:
  void Lock() const {
    while (lock_.exchange(true, std::memory_order_acquire)) {
    }
  }
  void Unlock() const { lock_.store(false, std::memory_order_release); }
  mutable std::atomic<bool> lock_{false};
  S3Snapshot data_;  // guarded by lock_ (except retries, redirects and failovers); endpoints sized once
  std::array<std::atomic<uint64_t>, kS3OpCount> retries_{};
  // Per endpoint of data_.endpoints (the last slot also takes any index beyond; one slot without a list).
  std::vector<std::atomic<uint64_t>> failovers_ = std::vector<std::atomic<uint64_t>>(1);
  std::array<std::atomic<uint64_t>, kS3OpCount> redirects_{};
};

// The process's S3 statistics: every live client's stats plus those of clients already destroyed.
class S3Metrics {
 public:
  static S3Metrics& Global();
  void Register(const S3Stats* s);
  // Folds the stats into the retired total and forgets them.
  void Unregister(const S3Stats* s);
  S3Snapshot Snapshot() const;

 private:
  mutable Mutex mu_;
  std::vector<const S3Stats*> live_ ABSL_GUARDED_BY(mu_);
  S3Snapshot retired_ ABSL_GUARDED_BY(mu_);
};

// Retry schedule (see the contract): the wait before retry n (1-based) is min(kRetryMaxMs, kRetryBaseMs * 2^(n-1))
// with +-25 % jitter. 50 ms doubling covers a gateway restart of a few seconds within DLIO's 5 attempts
// (50 + 100 + 200 + 400 ms) without stretching a failing job's last step by more than ~1 s.
inline constexpr int kRetryBaseMs = 50;
inline constexpr int kRetryMaxMs = 2000;

// Redirect hops followed within one attempt (see the contract). AIStore's proxy answers one 307 to the target node;
// 4 leaves room for a chain of proxies, while a loop between two nodes fails after a few milliseconds, not 30 hops.
inline constexpr int kMaxRedirectHops = 4;

// One entry of a listing page.
struct S3Object {
  std::string key;
  uint64_t size = 0;
};
struct S3ListPage {
  std::vector<S3Object> objects;
  std::vector<std::string> common_prefixes;  // with a delimiter: the "subfolders" (each ends in the delimiter)
  std::string next_token;                    // empty = last page
};
// Every page of a listing: the objects and, with a delimiter, the common prefixes.
struct S3Listing {
  std::vector<S3Object> objects;
  std::vector<std::string> common_prefixes;
};

// Multipart upload sizes (kS3PartBytes, kS3MaxParts, ...): job/s3_limits.h.

class S3Client {
 public:
  explicit S3Client(std::shared_ptr<const S3Config> config);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Config& config() const { return *config_; }
  // The endpoint the client's next request goes to (storage/s3/endpoints.h).
  const std::string& endpoint() const { return endpoints_[current_]; }
  const S3Stats& stats() const { return stats_; }
  // The URL of object `key` (the addressing style applied, the key encoded as requests send it) into `out`
  // (assigned: its capacity is reused), on the endpoint a request would go to now (the policy applied as for any
  // request); returns that endpoint's index in endpoints(). For the read-ahead's own handles (read_ahead.h).
  size_t ObjectUrl(absl::string_view key, std::string* out);
  const std::vector<std::string>& endpoints() const { return endpoints_; }

  // GET of the whole object into `buf` (grown to fit the Content-Length, never shrunk); returns its size.
  absl::StatusOr<uint64_t> Get(absl::string_view key, AlignedBuffer& buf);
  // Ranged GET of [off, off + len) into dst; returns the bytes received (fewer only at the end of the object).
  absl::StatusOr<size_t> GetRange(absl::string_view key, uint64_t off, size_t len, uint8_t* dst);
  // HEAD: the object's size.
  absl::StatusOr<uint64_t> Head(absl::string_view key);
  // PUT of [data, data + len).
  absl::Status Put(absl::string_view key, const uint8_t* data, size_t len);
  absl::StatusOr<std::string> CreateMultipart(absl::string_view key);
  // Uploads part `part` (1-based); returns its ETag.
  absl::StatusOr<std::string> UploadPart(absl::string_view key, const std::string& upload_id, int part,
                                         const uint8_t* data, size_t len);
  absl::Status CompleteMultipart(absl::string_view key, const std::string& upload_id,
                                 const std::vector<std::string>& etags);
  absl::Status AbortMultipart(absl::string_view key, const std::string& upload_id);
  // The multipart uploads in progress under `prefix`: (key, upload id) pairs (first 1000).
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ListMultipartUploads(absl::string_view prefix);
  // One page of ListObjectsV2 under `prefix` (at most 1000 keys and common prefixes), continuing at `token` ("" =
  // first page). With a `delimiter` ("/"), keys that hold it after the prefix come back once each as the common
  // prefix up to it (a "subfolder") instead of as objects.
  absl::StatusOr<S3ListPage> ListPage(absl::string_view prefix, const std::string& token,
                                      absl::string_view delimiter = "");
  // Every object under `prefix`, all pages.
  absl::StatusOr<std::vector<S3Object>> List(absl::string_view prefix);
  // One level under `prefix`, all pages: the objects directly below it and the common prefixes up to `delimiter`.
  absl::StatusOr<S3Listing> ListLevel(absl::string_view prefix, absl::string_view delimiter = "/");
  absl::Status Delete(absl::string_view key);
  // HEAD of the bucket (the preflight): NoSuchBucket and credential errors come back as their own messages.
  absl::Status HeadBucket();
  // Creates the bucket (benchmarks and tests); one that this user already owns is fine.
  absl::Status CreateBucket();

  struct Request;  // one request's state (internal; public for libcurl's C callbacks)

 private:
  // Runs `req` with retries; fills its status/body. Errors are the final one-line message.
  absl::Status Perform(Request& req);
  absl::Status PerformOnce(Request& req, int* http_status, bool* retryable);
  // One HTTP exchange with `url` (no retry, no redirect); libcurl's result code.
  int PerformHop(Request& req, const char* url);
  // req answered 3xx: the next URL into `next` (OK), or the one-line refusal (see the contract). `visited`: the URLs
  // this attempt went to.
  absl::Status NextHop(const Request& req, const std::vector<std::string>& visited, int hops, std::string* next);
  // The request's path after the endpoint's base ("/key[?query]") into path_; Perform makes the URL per attempt.
  void BuildUrl(absl::string_view key, absl::string_view query);
  // "endpoint E bucket 'b'" of the endpoint the current attempt goes to.
  std::string Describe() const;
  absl::Status HttpError(const Request& req, int status, absl::string_view curl_error, int attempts) const;

  std::shared_ptr<const S3Config> config_;
  CURL* curl_ = nullptr;
  curl_slist* headers_ = nullptr;        // x-amz-content-sha256, built once
  std::vector<std::string> endpoints_;   // every endpoint (S3Config::EndpointList)
  std::vector<std::string> bases_;       // per endpoint: scheme://host[:port][/bucket] per the addressing style
  size_t current_ = 0;                   // the endpoint of the next attempt
  std::string path_;                     // the current request's "/key[?query]" (reused: grows only)
  std::string url_;                      // the current attempt's URL (reused: grows only)
  std::string body_;                     // XML bodies and error bodies (reused)
  std::string location_;                 // the Location header of the current answer
  std::string userpwd_;
  std::string sigv4_;
  S3Stats stats_;
  uint64_t jitter_state_;
};

// The options every request handle of the store carries (S3Client's and the read-ahead's): SigV4 signing with
// `sigv4` ("aws:amz:REGION:s3") and `userpwd` (KEY:SECRET), the fixed `headers`, no signals, TCP_NODELAY and
// keep-alive, and `c`'s connect and stall timeouts. libcurl copies the strings.
void SetS3HandleOptions(CURL* h, const std::string& sigv4, const std::string& userpwd, curl_slist* headers,
                        const S3Config& c);

// Splits "s3://bucket/prefix" into bucket and prefix (no leading or trailing '/'); InvalidArgument naming `key`
// when the text is not of that form.
absl::Status ParseS3Url(const std::string& url, const std::string& key, std::string* bucket, std::string* prefix);
// The key of `rel` under `prefix` ("a/b" + "train/x" = "a/b/train/x"; an empty prefix gives rel).
std::string S3Join(absl::string_view prefix, absl::string_view rel);
// URI-encodes an object key as SigV4 wants it: unreserved characters and '/' kept, every other byte %XX.
void S3EncodeKey(absl::string_view key, std::string* out);

}  // namespace dlio
