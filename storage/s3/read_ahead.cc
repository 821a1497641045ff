#include "storage/s3/read_ahead.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "storage/io_util.h"

namespace dlio {
namespace {

thread_local S3KeySource* t_source = nullptr;

}  // namespace

S3KeySourceScope::S3KeySourceScope(S3KeySource* source) { t_source = source; }
S3KeySourceScope::~S3KeySourceScope() { t_source = nullptr; }
S3KeySource* CurrentS3KeySource() { return t_source; }

size_t ReadAheadLimit(size_t window, uint64_t largest) {
  window = std::max<size_t>(1, window);
  // Before the first answer the size is unknown: one GET alone, as without read-ahead, so that a thread of huge
  // objects never holds `window` of them.
  if (largest == 0) return 1;
  const uint64_t fit = kReadAheadBytes / largest;
  return static_cast<size_t>(std::clamp<uint64_t>(fit, 1, window));
}

int ReadAheadWindow::Push(const std::string* key, size_t limit) {
  if (count_ >= std::min(limit, keys_.size())) return -1;
  const size_t slot = (head_ + count_) % keys_.size();
  keys_[slot] = key;
  done_[slot] = false;
  ++count_;
  return static_cast<int>(slot);
}

int ReadAheadWindow::Find(absl::string_view key) const {
  for (size_t p = 0; p < count_; ++p) {
    if (*keys_[(head_ + p) % keys_.size()] == key) return static_cast<int>(p);
  }
  return -1;
}

int ReadAheadWindow::PopFront() {
  const size_t slot = head_;  // its key stays readable until the slot is pushed again
  done_[slot] = false;
  head_ = (head_ + 1) % keys_.size();
  --count_;
  return static_cast<int>(slot);
}

// ---------------------------------------------------------------------------------------------------------------

struct S3ReadAhead::Slot {
  CURL* easy = nullptr;
  int index = 0;
  std::string url;              // reused: grows only
  AlignedBuffer buf;            // the answer (2xx); swapped with the reader's buffer when taken
  int status = 0;               // HTTP status of the answer
  int64_t content_length = -1;  // of the answer, when it says
  uint64_t got = 0;             // body bytes stored (2xx)
  uint64_t t0 = 0, t1 = 0;      // issue and completion (steady clock, ns)
  int rc = 0;                   // libcurl's result (CURLcode)
  size_t endpoint = 0;          // index of the endpoint asked (S3Client::endpoints())
  bool active = false;          // added to the multi handle and not yet removed
};

namespace {

size_t OnSlotHeader(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<S3ReadAhead::Slot*>(user);
  const size_t len = size * n;
  absl::string_view line(data, len);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (absl::StartsWith(line, "HTTP/")) {
    const size_t sp = line.find(' ');
    int status = 0;
    if (sp != absl::string_view::npos && absl::SimpleAtoi(line.substr(sp + 1, 3), &status)) s->status = status;
    s->content_length = -1;
    return len;
  }
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos && absl::EqualsIgnoreCase(line.substr(0, colon), "content-length")) {
    uint64_t v = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(colon + 1)), &v)) {
      s->content_length = static_cast<int64_t>(v);
    }
  }
  return len;
}

size_t OnSlotWrite(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<S3ReadAhead::Slot*>(user);
  const size_t len = size * n;
  if (s->status < 200 || s->status >= 300) return len;  // not taken: the one-request path asks again
  AlignedBuffer& b = s->buf;
  if (s->got == 0 && s->content_length > 0) b.Reserve(static_cast<size_t>(s->content_length));
  if (s->got + len > b.capacity()) b.Reserve(std::max<size_t>(s->got + len, b.capacity() * 2), s->got);
  std::memcpy(b.data() + s->got, data, len);
  s->got += len;
  return len;
}

}  // namespace

S3ReadAhead::S3ReadAhead(S3Client& client)
    : client_(client),
      in_flight_(static_cast<size_t>(std::max(1, client.config().requests_in_flight))),
      window_(2 * in_flight_) {
  const S3Config& c = client.config();
  multi_ = curl_multi_init();
  const long window = static_cast<long>(in_flight_);
  // One connection per slot, kept in the multi handle's cache between requests (HTTP/1.1: one request each).
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, window);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, window);
  headers_ = curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");  // as S3Client's requests
  const std::string sigv4 = absl::StrCat("aws:amz:", c.region, ":s3");
  std::string userpwd = absl::StrCat(c.access_key_id, ":", c.secret_access_key.reveal());
  for (size_t i = 0; i < window_.capacity(); ++i) {
    auto s = std::make_unique<Slot>();
    s->index = static_cast<int>(i);
    s->url.reserve(1024);
    CURL* h = s->easy = curl_easy_init();
    if (h != nullptr) {
      SetS3HandleOptions(h, sigv4, userpwd, headers_, c);  // as S3Client's handle, for a GET
      curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnSlotHeader);
      curl_easy_setopt(h, CURLOPT_HEADERDATA, s.get());
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnSlotWrite);
      curl_easy_setopt(h, CURLOPT_WRITEDATA, s.get());
      curl_easy_setopt(h, CURLOPT_PRIVATE, s.get());
      curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);  // a 3xx goes to the one-request path, which checks it
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    slots_.push_back(std::move(s));
  }
  std::fill(userpwd.begin(), userpwd.end(), '\0');
  stats_.SetEndpoints(client_.endpoints());  // counted per endpoint as the client's own requests are
  S3Metrics::Global().Register(&stats_);
}

S3ReadAhead::~S3ReadAhead() {
  if (const char* e = std::getenv("DLIO_S3_READ_AHEAD_STATS"); e != nullptr && gets_ > 0) {
    const InFlight f = in_flight();
    std::fprintf(stderr,
                 "s3 read-ahead: %llu GETs taken, %.2f of %zu requests in flight on average over %.2f s (most %zu), "
                 "%llu Gets left fewer in flight for want of keys\n",
                 static_cast<unsigned long long>(f.gets), f.mean, in_flight_, f.seconds, f.high_water,
                 static_cast<unsigned long long>(f.short_gets));
  }
  S3Metrics::Global().Unregister(&stats_);
  for (auto& s : slots_) {
    if (s->active) curl_multi_remove_handle(multi_, s->easy);
    if (s->easy != nullptr) curl_easy_cleanup(s->easy);
  }
  if (multi_ != nullptr) curl_multi_cleanup(multi_);
  curl_slist_free_all(headers_);
}

void S3ReadAhead::Account() {
  const uint64_t now = internal::NowNs();
  if (first_ns_ == 0) first_ns_ = now;
  if (last_ns_ != 0) area_ += active_ * (now - last_ns_);
  last_ns_ = now;
}

S3ReadAhead::InFlight S3ReadAhead::in_flight() const {
  InFlight f;
  const uint64_t end = internal::NowNs();
  const uint64_t area = area_ + (last_ns_ != 0 ? active_ * (end - last_ns_) : 0);
  if (first_ns_ != 0 && end > first_ns_) {
    f.seconds = static_cast<double>(end - first_ns_) / 1e9;
    f.mean = static_cast<double>(area) / static_cast<double>(end - first_ns_);
  }
  f.high_water = high_water_;
  f.gets = gets_;
  f.short_gets = short_gets_;
  return f;
}

void S3ReadAhead::Start(int slot, const std::string& key) {
  Slot& s = *slots_[static_cast<size_t>(slot)];
  s.status = 0;
  s.content_length = -1;
  s.got = 0;
  s.rc = CURLE_OK;
  s.t0 = internal::NowNs();
  s.t1 = s.t0;
  if (multi_ == nullptr || s.easy == nullptr) {  // no handle: the front goes to the one-request path
    s.rc = CURLE_FAILED_INIT;
    window_.MarkDone(slot);
    return;
  }
  s.endpoint = client_.ObjectUrl(key, &s.url);
  curl_easy_setopt(s.easy, CURLOPT_URL, s.url.c_str());
  if (curl_multi_add_handle(multi_, s.easy) != CURLM_OK) {
    s.rc = CURLE_FAILED_INIT;
    window_.MarkDone(slot);
    return;
  }
  Account();
  s.active = true;
  high_water_ = std::max(high_water_, ++active_);
}

void S3ReadAhead::Drop(int slot) {
  Slot& s = *slots_[static_cast<size_t>(slot)];
  // A request that went out is counted, with the bytes it got so far, whether or not it had finished.
  stats_.Record(S3Op::kGet, s.got, (s.active ? internal::NowNs() : s.t1) - s.t0, s.status, false, s.endpoint);
  if (s.active) {
    curl_multi_remove_handle(multi_, s.easy);  // abandons the transfer (its connection may close)
    Account();
    --active_;
  }
  s.active = false;
}

bool S3ReadAhead::Refill(S3KeySource& source) {
  // At most in_flight_ transfers, and at most twice that many answers held (finished ones wait for their turn
  // without holding back the next transfers), all within the byte budget.
  const size_t held = ReadAheadLimit(window_.capacity(), largest_);
  while (active_ < in_flight_ && window_.size() < held) {
    const std::string* key = source.Next();
    if (key == nullptr) return true;  // none now (asked again at the next refill)
    Start(window_.Push(key, held), *key);
  }
  return false;
}

void S3ReadAhead::Pump() {
  int running = 0;
  curl_multi_perform(multi_, &running);
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    Slot* s = nullptr;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &s);
    s->rc = m->data.result;  // read before the handle is removed (the message goes with it)
    s->t1 = internal::NowNs();
    curl_multi_remove_handle(multi_, s->easy);
    s->active = false;
    Account();
    --active_;
    window_.MarkDone(s->index);
  }
}

void S3ReadAhead::WaitFront(S3KeySource& source) {
  const int front = window_.front();
  // The transfers are driven on every Get, even when the front is already done: a reader that takes answers
  // finished earlier must not leave the others (and the transfers just added) idle meanwhile, their sockets full.
  Pump();
  while (!window_.done(front)) {
    Refill(source);  // a finished transfer's place goes to the next key at once
    // 100 ms: a bound on one wait only (any socket event ends it at once); the transfers' own limits are the
    // connect and stall timeouts of S3Config.
    curl_multi_poll(multi_, nullptr, 0, 100, nullptr);
    Pump();
  }
}

absl::StatusOr<uint64_t> S3ReadAhead::Get(const std::string& key, S3KeySource& source, AlignedBuffer& buf,
                                          uint64_t* latency_ns) {
  Refill(source);
  int pos = window_.Find(key);
  if (pos < 0) {  // not asked for ahead: the one-request path
    const uint64_t t0 = internal::NowNs();
    absl::StatusOr<uint64_t> n = client_.Get(key, buf);
    *latency_ns = internal::NowNs() - t0;
    return n;
  }
  for (; pos > 0; --pos) Drop(window_.PopFront());  // keys the reader did not ask for after all
  Refill(source);
  WaitFront(source);
  Slot& s = *slots_[static_cast<size_t>(window_.front())];
  const bool ok = s.rc == CURLE_OK && s.status >= 200 && s.status < 300;
  const uint64_t bytes = s.got, ns = s.t1 - s.t0;
  if (ok) {
    stats_.Record(S3Op::kGet, bytes, ns, s.status, false, s.endpoint);
    buf.Swap(s.buf);
    largest_ = std::max(largest_, bytes);
  }
  window_.PopFront();
  ++gets_;
  if (Refill(source)) ++short_gets_;
  if (active_ > 0) Pump();  // the GETs just added go out now, while the reader works on this answer
  if (!ok) {  // anything but a 2xx answer: asked again the one-request way (retries, redirects, the error's name)
    const uint64_t t0 = internal::NowNs();
    absl::StatusOr<uint64_t> n = client_.Get(key, buf);
    *latency_ns = internal::NowNs() - t0;
    return n;
  }
  *latency_ns = ns;
  return bytes;
}

}  // namespace dlio
