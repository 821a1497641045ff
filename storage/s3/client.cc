#include "storage/s3/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pugixml.hpp"
#include "storage/io_util.h"
#include "storage/storage.h"

namespace dlio {
namespace {

void GlobalInit() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);  // once, thread-safe (C++ static init)
  (void)rc;
}

bool Unreserved(unsigned char c) {
  return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

// Percent-encodes `s` into out (appending); '/' is kept when keep_slash.
void Encode(absl::string_view s, bool keep_slash, std::string* out) {
  static const char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (Unreserved(c) || (keep_slash && c == '/')) {
      out->push_back(static_cast<char>(c));
    } else {
      out->push_back('%');
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    }
  }
}

// An IP address or localhost cannot carry a bucket as a subdomain (boto3 falls back to path style there too).
bool HostTakesBucketSubdomain(absl::string_view host) {
  if (host == "localhost" || absl::StartsWith(host, "[")) return false;
  bool digits_and_dots = true;
  for (char c : host) digits_and_dots &= absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.';
  return !digits_and_dots;
}

// Addressing: virtual-hosted (bucket.host) unless forced to path style or the host cannot take a subdomain.
std::string BaseUrl(const S3Config& c, const std::string& endpoint) {
  const size_t scheme_end = endpoint.find("://");
  const size_t host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  absl::string_view host(endpoint);
  host = host.substr(host_start);
  host = host.substr(0, std::min(host.find(':'), host.find('/')));
  if (!c.force_path_style && HostTakesBucketSubdomain(host)) {
    return absl::StrCat(endpoint.substr(0, host_start), c.bucket, ".", endpoint.substr(host_start));
  }
  return absl::StrCat(endpoint, "/", c.bucket);
}

int StatusSlot(int status) {
  for (size_t i = 0; i < kS3ErrorStatuses.size(); ++i) {
    if (kS3ErrorStatuses[i] == status) return static_cast<int>(i);
  }
  return kS3StatusSlots - 1;
}

bool RetryableStatus(int status, absl::string_view code) {
  return status >= 500 || status == 429 || code == "SlowDown" || code == "RequestTimeout" ||
         code == "InternalError" || code == "ServiceUnavailable";
}

bool RetryableCurl(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

// <Error><Code>..</Code><Message>..</Message></Error> of an S3 error body (empty strings if it is not one).
void ParseErrorXml(const std::string& body, std::string* code, std::string* message) {
  code->clear();
  message->clear();
  if (body.empty()) return;
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size())) return;
  pugi::xml_node e = doc.child("Error");
  if (!e) return;
  *code = e.child_value("Code");
  *message = e.child_value("Message");
}

}  // namespace

std::string S3Config::Describe() const {
  if (endpoints.size() > 1) return absl::StrCat("endpoints ", absl::StrJoin(endpoints, ", "), " bucket '", bucket, "'");
  return absl::StrCat("endpoint ", endpoint, " bucket '", bucket, "'");
}

std::vector<std::string> S3Config::EndpointList() const {
  return endpoints.empty() ? std::vector<std::string>{endpoint} : endpoints;
}

void S3Stats::SetEndpoints(const std::vector<std::string>& endpoints) {
  Lock();
  data_.endpoints.assign(endpoints.size(), S3EndpointSnapshot());  // one slot per index (a name given twice too)
  for (size_t i = 0; i < endpoints.size(); ++i) data_.endpoints[i].endpoint = endpoints[i];
  Unlock();
  failovers_ = std::vector<std::atomic<uint64_t>>(std::max<size_t>(1, endpoints.size()));
}

void S3Stats::Record(S3Op op, uint64_t bytes, uint64_t ns, int http_status, bool failed, size_t endpoint) {
  Lock();
  S3OpSnapshot& o = data_.ops[static_cast<int>(op)];
  ++o.requests;
  o.bytes += bytes;
  if (failed) ++o.errors[StatusSlot(http_status)];
  o.latency.Record(ns);
  if (endpoint < data_.endpoints.size()) {
    S3EndpointSnapshot& e = data_.endpoints[endpoint];
    ++e.requests;
    e.bytes += bytes;
    e.errors += failed ? 1 : 0;
    e.latency.Record(ns);
  }
  Unlock();
}

S3Snapshot S3Stats::Snapshot() const {
  Lock();
  S3Snapshot s = data_;
  Unlock();
  for (int i = 0; i < kS3OpCount; ++i) {
    s.ops[i].retries = retries_[i].load(std::memory_order_relaxed);
    s.ops[i].redirects = redirects_[i].load(std::memory_order_relaxed);
  }
  for (size_t i = 0; i < s.endpoints.size() && i < failovers_.size(); ++i) {
    s.endpoints[i].failovers = failovers_[i].load(std::memory_order_relaxed);
  }
  return s;
}

S3Metrics& S3Metrics::Global() {
  static S3Metrics* m = new S3Metrics;  // never destroyed: clients may unregister during static destruction
  return *m;
}

void S3Metrics::Register(const S3Stats* s) {
  MutexLock lk(&mu_);
  live_.push_back(s);
}

void S3Metrics::Unregister(const S3Stats* s) {
  S3Snapshot snap = s->Snapshot();
  MutexLock lk(&mu_);
  live_.erase(std::remove(live_.begin(), live_.end(), s), live_.end());
  retired_ += snap;
}

S3Snapshot S3Metrics::Snapshot() const {
  MutexLock lk(&mu_);
  S3Snapshot s = retired_;
  for (const S3Stats* l : live_) s += l->Snapshot();
  return s;
}

// ---------------------------------------------------------------------------------------------------------------

struct S3Client::Request {
  enum class Sink { kBuffer, kFixed, kBody, kNone };
  S3Op op = S3Op::kGet;
  const char* method = "GET";  // GET, HEAD, PUT, POST, DELETE
  absl::string_view key;        // for messages
  Sink sink = Sink::kBody;
  AlignedBuffer* buffer = nullptr;  // kBuffer
  uint8_t* fixed = nullptr;         // kFixed
  size_t fixed_cap = 0;
  const uint8_t* upload = nullptr;  // PUT / POST body
  size_t upload_len = 0;
  char range[64] = {0};             // "a-b" for a ranged GET, "" otherwise
  // Filled per attempt.
  int status = 0;
  uint64_t got = 0;             // body bytes stored (2xx)
  size_t sent = 0;              // upload bytes handed to curl
  int64_t content_length = -1;  // of a 2xx answer
  char etag[128] = {0};
  bool overflow = false;        // a kFixed answer larger than asked for
  std::string* body = nullptr;  // error / XML bodies
  std::string* location = nullptr;  // the answer's Location header
  const char* curl_error = "";  // libcurl's text for a transport failure
};

namespace {

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<S3Client::Request*>(user);
  const size_t len = size * n;
  absl::string_view line(data, len);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (absl::StartsWith(line, "HTTP/")) {  // a new status line (also after a 100 Continue)
    const size_t sp = line.find(' ');
    int status = 0;
    if (sp != absl::string_view::npos && absl::SimpleAtoi(line.substr(sp + 1, 3), &status)) r->status = status;
    r->content_length = -1;
    r->location->clear();
    return len;
  }
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return len;
  absl::string_view name = line.substr(0, colon), value = line.substr(colon + 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (absl::EqualsIgnoreCase(name, "content-length")) {
    uint64_t v = 0;
    if (absl::SimpleAtoi(value, &v)) r->content_length = static_cast<int64_t>(v);
  } else if (absl::EqualsIgnoreCase(name, "location")) {
    r->location->assign(value.data(), value.size());
  } else if (absl::EqualsIgnoreCase(name, "etag")) {
    const size_t k = std::min(value.size(), sizeof(r->etag) - 1);
    std::memcpy(r->etag, value.data(), k);
    r->etag[k] = '\0';
  }
  return len;
}

size_t OnWrite(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<S3Client::Request*>(user);
  const size_t len = size * n;
  if (r->status < 200 || r->status >= 300 || r->sink == S3Client::Request::Sink::kBody) {
    if (r->body->size() < (size_t{1} << 20)) r->body->append(data, len);  // error and XML bodies: bounded
    if (r->status >= 200 && r->status < 300) r->got += len;
    return len;
  }
  switch (r->sink) {
    case S3Client::Request::Sink::kBuffer: {
      AlignedBuffer& b = *r->buffer;
      if (r->got == 0 && r->content_length > 0) b.Reserve(static_cast<size_t>(r->content_length));
      if (r->got + len > b.capacity()) b.Reserve(std::max<size_t>(r->got + len, b.capacity() * 2), r->got);
      std::memcpy(b.data() + r->got, data, len);
      break;
    }
    case S3Client::Request::Sink::kFixed:
      if (r->got + len > r->fixed_cap) {
        r->overflow = true;
        return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
      }
      std::memcpy(r->fixed + r->got, data, len);
      break;
    default:
      break;
  }
  r->got += len;
  return len;
}

size_t OnRead(char* dst, size_t size, size_t n, void* user) {
  auto* r = static_cast<S3Client::Request*>(user);
  const size_t k = std::min(size * n, r->upload_len - r->sent);
  std::memcpy(dst, r->upload + r->sent, k);
  r->sent += k;
  return k;
}

}  // namespace

S3Client::S3Client(std::shared_ptr<const S3Config> config) : config_(std::move(config)) {
  GlobalInit();
  curl_ = curl_easy_init();
  headers_ = curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  const S3Config& c = *config_;
  endpoints_ = c.EndpointList();
  for (const std::string& endpoint : endpoints_) bases_.push_back(BaseUrl(c, endpoint));
  const int64_t rank = ScopedS3Rank::Current();
  current_ = FirstS3Endpoint(c.endpoint_policy, endpoints_.size(), rank, c.agent_index,
                             rank < 0 && c.endpoint_policy != S3EndpointPolicy::kPerAgent ? NextUnrankedS3Client() : 0);
  // per_request moves on before each request: start one before the first endpoint so the first request goes there.
  if (c.endpoint_policy == S3EndpointPolicy::kPerRequest) current_ = (current_ + endpoints_.size() - 1) % endpoints_.size();
  userpwd_ = absl::StrCat(c.access_key_id, ":", c.secret_access_key.reveal());
  sigv4_ = absl::StrCat("aws:amz:", c.region, ":s3");
  url_.reserve(bases_[0].size() + 1024);
  path_.reserve(1024);
  body_.reserve(4096);
  jitter_state_ = reinterpret_cast<uintptr_t>(this) ^ internal::NowNs();
  if (curl_ != nullptr) {
    SetS3HandleOptions(curl_, sigv4_, userpwd_, headers_, c);
    curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, OnWrite);
    curl_easy_setopt(curl_, CURLOPT_READFUNCTION, OnRead);
    // libcurl never follows a redirect itself (its default, made explicit): the signed request and the access key id
    // go only where S3Config::redirect_check allows, which PerformOnce asks before each hop (see the header).
    curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 0L);
    // RGW answers a 100-continue at once; without the header curl would wait for it anyway on large bodies.
  }
  stats_.SetEndpoints(endpoints_);
  S3Metrics::Global().Register(&stats_);
}

S3Client::~S3Client() {
  S3Metrics::Global().Unregister(&stats_);
  if (curl_ != nullptr) curl_easy_cleanup(curl_);
  curl_slist_free_all(headers_);
  // The secret's copy in userpwd_ is wiped before the memory goes back.
  std::fill(userpwd_.begin(), userpwd_.end(), '\0');
}

void S3Client::BuildUrl(absl::string_view key, absl::string_view query) {
  path_.assign("/");
  Encode(key, true, &path_);
  if (!query.empty()) {
    path_.push_back('?');
    path_.append(query.data(), query.size());
  }
}

size_t S3Client::ObjectUrl(absl::string_view key, std::string* out) {
  current_ = NextS3EndpointForRequest(config_->endpoint_policy, current_, endpoints_.size());  // as Perform does
  out->assign(bases_[current_]);
  out->push_back('/');
  Encode(key, true, out);
  return current_;
}

std::string S3Client::Describe() const {
  return absl::StrCat("endpoint ", endpoints_[current_], " bucket '", config_->bucket, "'");
}

absl::Status S3Client::HttpError(const Request& req, int status, absl::string_view curl_error, int attempts) const {
  const S3Config& c = *config_;
  std::string code, message;
  if (req.body != nullptr) ParseErrorXml(*req.body, &code, &message);
  std::string where = absl::StrCat("s3 ", req.method, " ", Describe());
  if (!req.key.empty()) absl::StrAppend(&where, " object '", req.key, "'");
  const std::string tries = attempts > 1 ? absl::StrCat(" after ", attempts, " attempts") : "";
  if (status == 0) {
    return absl::UnavailableError(
        absl::StrCat(where, ": no HTTP status (", curl_error, ")", tries, " (storage.storage_options.s3_max_attempts)"));
  }
  std::string what = absl::StrCat(where, ": HTTP ", status, code.empty() ? "" : " ", code);
  if (code == "NoSuchBucket" || (status == 404 && req.key.empty())) {
    return absl::NotFoundError(absl::StrCat(what, ": the bucket does not exist (storage.storage_root)"));
  }
  if (code == "NoSuchKey" || status == 404) {
    return absl::NotFoundError(absl::StrCat(what, ": the object does not exist"));
  }
  if (status == 403 || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied") {
    return absl::PermissionDeniedError(absl::StrCat(
        what, ": credentials rejected for access key id '", c.access_key_id,
        "' (storage.storage_options, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the agent's --s3-credentials file)"));
  }
  if (!message.empty()) absl::StrAppend(&what, " (", message, ")");
  if (status >= 300 && status < 400) {
    absl::StrAppend(&what, ": a redirect, not followed (requests go to the endpoint only)");
  }
  absl::StrAppend(&what, tries);
  return status >= 500 ? absl::UnavailableError(what) : absl::InternalError(what);
}

int S3Client::PerformHop(Request& req, const char* url) {
  req.status = 0;
  req.got = 0;
  req.sent = 0;
  req.content_length = -1;
  req.etag[0] = '\0';
  req.overflow = false;
  req.curl_error = "";
  body_.clear();
  location_.clear();
  req.body = &body_;
  req.location = &location_;
  CURL* h = curl_;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &req);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &req);
  curl_easy_setopt(h, CURLOPT_READDATA, &req);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, nullptr);
  curl_easy_setopt(h, CURLOPT_RANGE, req.range[0] != '\0' ? req.range : nullptr);
  const absl::string_view m(req.method);
  if (m == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (m == "HEAD") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (m == "PUT") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.upload_len));
  } else if (m == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.upload != nullptr ? reinterpret_cast<const char*>(req.upload) : "");
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.upload_len));
  } else {  // DELETE
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method);
  }
  const CURLcode rc = curl_easy_perform(h);
  if (m == "HEAD") curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
  return static_cast<int>(rc);
}

namespace {

bool IsRedirect(int status) { return status == 301 || status == 302 || status == 307 || status == 308; }

// "scheme://authority" of an absolute URL ("" when `url` has no "://").
absl::string_view OriginOf(absl::string_view url) {
  const size_t sep = url.find("://");
  if (sep == absl::string_view::npos) return "";
  return url.substr(0, std::min(url.find('/', sep + 3), url.size()));
}

}  // namespace

absl::Status S3Client::NextHop(const Request& req, const std::vector<std::string>& visited, int hops,
                               std::string* next) {
  std::string where = absl::StrCat("s3 ", req.method, " ", Describe());
  if (!req.key.empty()) absl::StrAppend(&where, " object '", req.key, "'");
  absl::StrAppend(&where, ": HTTP ", req.status);
  if (location_.empty()) return absl::InternalError(absl::StrCat(where, ": a redirect without a Location header"));
  // A Location of a path only ("/bkt/key") is on the same origin.
  *next = location_.front() == '/' ? absl::StrCat(OriginOf(visited.back()), location_) : location_;
  const std::string to = absl::StrCat(where, " redirect to '", *next, "'");
  if (!absl::StartsWithIgnoreCase(*next, "http://") && !absl::StartsWithIgnoreCase(*next, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat(to, ": not an http:// or https:// URL, not followed"));
  }
  if (std::find(visited.begin(), visited.end(), *next) != visited.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat(to, ": a redirect loop (that URL was already asked), not followed"));
  }
  if (hops >= kMaxRedirectHops) {
    return absl::FailedPreconditionError(
        absl::StrCat(to, ": more than ", kMaxRedirectHops, " redirects in one request, not followed"));
  }
  if (absl::Status s = config_->redirect_check(std::string(OriginOf(*next))); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(to, " refused: ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status S3Client::PerformOnce(Request& req, int* http_status, bool* retryable) {
  const absl::string_view m(req.method);
  *retryable = false;
  url_.assign(bases_[current_]);
  url_.append(path_);
  const uint64_t t0 = internal::NowNs();
  CURLcode rc = static_cast<CURLcode>(PerformHop(req, url_.c_str()));
  absl::Status refused;
  if (rc == CURLE_OK && IsRedirect(req.status) && config_->redirect_check) {  // unset: HttpError says "not followed"
    std::vector<std::string> visited = {url_};  // only a redirected request pays for this
    for (int hops = 0; rc == CURLE_OK && IsRedirect(req.status); ++hops) {
      std::string next;
      refused = NextHop(req, visited, hops, &next);
      if (!refused.ok()) break;
      stats_.AddRedirect(req.op);
      visited.push_back(std::move(next));
      rc = static_cast<CURLcode>(PerformHop(req, visited.back().c_str()));
    }
  }
  const uint64_t ns = internal::NowNs() - t0;  // the hops included
  const bool ok2xx = rc == CURLE_OK && req.status >= 200 && req.status < 300;
  const uint64_t bytes = m == "PUT" || m == "POST" ? req.sent : req.got;
  stats_.Record(req.op, ok2xx ? bytes : 0, ns, rc == CURLE_OK ? req.status : 0, !ok2xx, current_);
  *http_status = rc == CURLE_OK ? req.status : 0;
  if (!refused.ok()) return refused;
  if (rc != CURLE_OK) {
    if (req.overflow) {
      return absl::DataLossError(absl::StrCat("s3 GET ", Describe(), " object '", req.key,
                                              "': the answer is longer than the ", req.fixed_cap,
                                              " bytes asked for"));
    }
    *retryable = RetryableCurl(rc);
    req.curl_error = curl_easy_strerror(rc);
    return HttpError(req, 0, req.curl_error, 1);
  }
  if (!ok2xx) {
    std::string code, message;
    ParseErrorXml(body_, &code, &message);
    *retryable = RetryableStatus(req.status, code);
    return HttpError(req, req.status, "", 1);
  }
  return absl::OkStatus();
}

absl::Status S3Client::Perform(Request& req) {
  if (curl_ == nullptr) return absl::InternalError("s3: curl_easy_init failed");
  const int attempts = std::max(1, config_->max_attempts);
  current_ = NextS3EndpointForRequest(config_->endpoint_policy, current_, endpoints_.size());
  absl::Status last;
  for (int a = 1; a <= attempts; ++a) {
    int status = 0;
    bool retryable = false;
    last = PerformOnce(req, &status, &retryable);
    if (last.ok() || !retryable) return last;
    if (a == attempts) return HttpError(req, status, req.curl_error, attempts);  // says how many attempts
    stats_.AddRetry(req.op);
    if (endpoints_.size() > 1) {  // the next attempt goes to the next endpoint, and the client stays there
      stats_.AddFailover(current_);
      current_ = S3FailoverEndpoint(current_, endpoints_.size());
    }
    // Exponential backoff with +-25 % jitter (xorshift; no shared state).
    jitter_state_ ^= jitter_state_ << 13;
    jitter_state_ ^= jitter_state_ >> 7;
    jitter_state_ ^= jitter_state_ << 17;
    const int base = std::min(kRetryMaxMs, kRetryBaseMs << std::min(a - 1, 16));
    const int jitter = static_cast<int>(jitter_state_ % static_cast<uint64_t>(base / 2 + 1)) - base / 4;
    std::this_thread::sleep_for(std::chrono::milliseconds(base + jitter));
  }
  return last;
}

absl::StatusOr<uint64_t> S3Client::Get(absl::string_view key, AlignedBuffer& buf) {
  BuildUrl(key, "");
  Request r;
  r.op = S3Op::kGet;
  r.key = key;
  r.sink = Request::Sink::kBuffer;
  r.buffer = &buf;
  if (absl::Status s = Perform(r); !s.ok()) return s;
  return r.got;
}

absl::StatusOr<size_t> S3Client::GetRange(absl::string_view key, uint64_t off, size_t len, uint8_t* dst) {
  if (len == 0) return size_t{0};
  BuildUrl(key, "");
  Request r;
  r.op = S3Op::kGetRange;
  r.key = key;
  r.sink = Request::Sink::kFixed;
  r.fixed = dst;
  r.fixed_cap = len;
  std::snprintf(r.range, sizeof r.range, "%llu-%llu", static_cast<unsigned long long>(off),
                static_cast<unsigned long long>(off + len - 1));
  absl::Status s = Perform(r);
  if (!s.ok()) {
    // A range starting at or past the end of the object: nothing there (the caller sees 0 bytes, as at EOF).
    if (r.status == 416) return size_t{0};
    return s;
  }
  // A server that ignores Range answers 200 with the whole object: then only an object that fits counts.
  return static_cast<size_t>(r.got);
}

absl::StatusOr<uint64_t> S3Client::Head(absl::string_view key) {
  BuildUrl(key, "");
  Request r;
  r.op = S3Op::kHead;
  r.method = "HEAD";
  r.key = key;
  if (absl::Status s = Perform(r); !s.ok()) return s;
  if (r.content_length < 0) {
    return absl::InternalError(absl::StrCat("s3 HEAD ", Describe(), " object '", key,
                                            "': no Content-Length in the answer"));
  }
  return static_cast<uint64_t>(r.content_length);
}

absl::Status S3Client::HeadBucket() {
  path_.assign("/");
  Request r;
  r.op = S3Op::kHead;
  r.method = "HEAD";
  return Perform(r);
}

absl::Status S3Client::CreateBucket() {
  path_.assign("/");
  Request r;
  r.op = S3Op::kPut;
  r.method = "PUT";
  absl::Status s = Perform(r);
  if (!s.ok() && r.status == 409) return absl::OkStatus();  // BucketAlreadyOwnedByYou (or exists)
  return s;
}

absl::Status S3Client::Put(absl::string_view key, const uint8_t* data, size_t len) {
  BuildUrl(key, "");
  Request r;
  r.op = S3Op::kPut;
  r.method = "PUT";
  r.key = key;
  r.upload = data;
  r.upload_len = len;
  return Perform(r);
}

absl::StatusOr<std::string> S3Client::CreateMultipart(absl::string_view key) {
  BuildUrl(key, "uploads=");
  Request r;
  r.op = S3Op::kMultipartControl;
  r.method = "POST";
  r.key = key;
  if (absl::Status s = Perform(r); !s.ok()) return s;
  pugi::xml_document doc;
  std::string id;
  if (doc.load_buffer(body_.data(), body_.size())) id = doc.child("InitiateMultipartUploadResult").child_value("UploadId");
  if (id.empty()) {
    return absl::InternalError(absl::StrCat("s3 POST ", Describe(), " object '", key,
                                            "': no UploadId in the CreateMultipartUpload answer"));
  }
  return id;
}

absl::StatusOr<std::string> S3Client::UploadPart(absl::string_view key, const std::string& upload_id, int part,
                                                 const uint8_t* data, size_t len) {
  std::string q = absl::StrCat("partNumber=", part, "&uploadId=");
  Encode(upload_id, false, &q);
  BuildUrl(key, q);
  Request r;
  r.op = S3Op::kMultipartPart;
  r.method = "PUT";
  r.key = key;
  r.upload = data;
  r.upload_len = len;
  if (absl::Status s = Perform(r); !s.ok()) return s;
  if (r.etag[0] == '\0') {
    return absl::InternalError(absl::StrCat("s3 PUT ", Describe(), " object '", key, "': part ", part,
                                            " answered without an ETag"));
  }
  return std::string(r.etag);
}

absl::Status S3Client::CompleteMultipart(absl::string_view key, const std::string& upload_id,
                                         const std::vector<std::string>& etags) {
  std::string q = "uploadId=";
  Encode(upload_id, false, &q);
  BuildUrl(key, q);
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    absl::StrAppend(&xml, "<Part><PartNumber>", i + 1, "</PartNumber><ETag>", etags[i], "</ETag></Part>");
  }
  xml += "</CompleteMultipartUpload>";
  Request r;
  r.op = S3Op::kMultipartControl;
  r.method = "POST";
  r.key = key;
  r.upload = reinterpret_cast<const uint8_t*>(xml.data());
  r.upload_len = xml.size();
  if (absl::Status s = Perform(r); !s.ok()) return s;
  // S3 may answer 200 and report the failure in the body.
  std::string code, message;
  ParseErrorXml(body_, &code, &message);
  if (!code.empty()) {
    return absl::InternalError(absl::StrCat("s3 POST ", Describe(), " object '", key,
                                            "': CompleteMultipartUpload failed: ", code, " (", message, ")"));
  }
  return absl::OkStatus();
}

absl::Status S3Client::AbortMultipart(absl::string_view key, const std::string& upload_id) {
  std::string q = "uploadId=";
  Encode(upload_id, false, &q);
  BuildUrl(key, q);
  Request r;
  r.op = S3Op::kMultipartControl;
  r.method = "DELETE";
  r.key = key;
  return Perform(r);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> S3Client::ListMultipartUploads(
    absl::string_view prefix) {
  std::string q = "prefix=";
  Encode(prefix, false, &q);
  q += "&uploads=";
  path_.assign("/?");
  path_ += q;
  Request r;
  r.op = S3Op::kList;
  if (absl::Status s = Perform(r); !s.ok()) return s;
  pugi::xml_document doc;
  std::vector<std::pair<std::string, std::string>> out;
  if (!doc.load_buffer(body_.data(), body_.size())) {
    return absl::InternalError(absl::StrCat("s3 GET ", Describe(), " multipart uploads under '", prefix,
                                            "': the answer is not XML"));
  }
  pugi::xml_node root = doc.child("ListMultipartUploadsResult");
  for (pugi::xml_node u = root.child("Upload"); u; u = u.next_sibling("Upload")) {
    out.emplace_back(u.child_value("Key"), u.child_value("UploadId"));
  }
  return out;
}

absl::Status S3Client::Delete(absl::string_view key) {
  BuildUrl(key, "");
  Request r;
  r.op = S3Op::kDelete;
  r.method = "DELETE";
  r.key = key;
  return Perform(r);
}

absl::StatusOr<S3ListPage> S3Client::ListPage(absl::string_view prefix, const std::string& token,
                                              absl::string_view delimiter) {
  // The canonical query: keys in order, every value URI-encoded ('/' too), always k=v.
  std::string q;
  if (!token.empty()) {
    q = "continuation-token=";
    Encode(token, false, &q);
    q += "&";
  }
  if (!delimiter.empty()) {
    q += "delimiter=";
    Encode(delimiter, false, &q);
    q += "&";
  }
  q += "list-type=2&max-keys=1000&prefix=";
  Encode(prefix, false, &q);
  path_.assign("/?");
  path_ += q;
  Request r;
  r.op = S3Op::kList;
  r.key = "";  // not an object: a 404 here is the bucket's
  if (absl::Status s = Perform(r); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), " (list of prefix '", prefix, "')"));
  }
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(body_.data(), body_.size());
  pugi::xml_node root = doc.child("ListBucketResult");
  if (!parsed || !root) {
    return absl::InternalError(absl::StrCat("s3 GET ", Describe(), " list of prefix '", prefix,
                                            "': the answer is not a ListBucketResult (", parsed.description(), ")"));
  }
  S3ListPage page;
  for (pugi::xml_node c = root.child("Contents"); c; c = c.next_sibling("Contents")) {
    S3Object o;
    o.key = c.child_value("Key");
    o.size = c.child("Size").text().as_ullong();
    page.objects.push_back(std::move(o));
  }
  for (pugi::xml_node c = root.child("CommonPrefixes"); c; c = c.next_sibling("CommonPrefixes")) {
    page.common_prefixes.emplace_back(c.child_value("Prefix"));
  }
  if (root.child("IsTruncated").text().as_bool()) page.next_token = root.child_value("NextContinuationToken");
  return page;
}

void SetS3HandleOptions(CURL* h, const std::string& sigv4, const std::string& userpwd, curl_slist* headers,
                        const S3Config& c) {
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(h, CURLOPT_USERPWD, userpwd.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(c.connect_timeout_ms));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(c.stall_timeout_s));
}

absl::Status ParseS3Url(const std::string& url, const std::string& key, std::string* bucket, std::string* prefix) {
  if (!absl::StartsWith(url, "s3://")) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": '", url, "' is not an s3://bucket/prefix URL"));
  }
  absl::string_view rest(url);
  rest.remove_prefix(5);
  const size_t slash = rest.find('/');
  *bucket = std::string(rest.substr(0, slash));
  absl::string_view p = slash == absl::string_view::npos ? absl::string_view() : rest.substr(slash + 1);
  while (!p.empty() && p.front() == '/') p.remove_prefix(1);
  while (!p.empty() && p.back() == '/') p.remove_suffix(1);
  *prefix = std::string(p);
  if (bucket->size() < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": '", url, "' names bucket '", *bucket, "'; a bucket name has at least 3 characters"));
  }
  return absl::OkStatus();
}

std::string S3Join(absl::string_view prefix, absl::string_view rel) {
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
  if (prefix.empty()) return std::string(rel);
  return absl::StrCat(prefix, "/", rel);
}

void S3EncodeKey(absl::string_view key, std::string* out) { Encode(key, true, out); }

}  // namespace dlio
