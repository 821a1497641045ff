// Pure parts of the S3 client (storage/s3/client.h): key encoding, s3:// URLs, key joins, the statistics' arithmetic,
// the retry path against a loopback port nobody listens on, a redirect to another port that is never followed
// without a redirect check, and redirects followed, bounded and refused with one (loopback HTTP fronts of the test's
// own; the real gateway behind a redirecting front is tests/s3_test.cc's).
#include "storage/s3/client.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/storage.h"

namespace dlio {
namespace {

using ::testing::HasSubstr;

TEST(S3Keys, EncodedOnceWithSlashesKept) {
  std::string out;
  S3EncodeKey("data/train/img 1_of+2~a.npz", &out);
  EXPECT_EQ(out, "data/train/img%201_of%2B2~a.npz");
  out.clear();
  S3EncodeKey("ü%", &out);
  EXPECT_EQ(out, "%C3%BC%25");
}

TEST(S3Keys, UrlsAndJoins) {
  std::string bucket, prefix;
  ASSERT_TRUE(ParseS3Url("s3://my-bucket/a/b/", "dataset.data_folder", &bucket, &prefix).ok());
  EXPECT_EQ(bucket, "my-bucket");
  EXPECT_EQ(prefix, "a/b");
  ASSERT_TRUE(ParseS3Url("s3://bkt", "k", &bucket, &prefix).ok());
  EXPECT_EQ(prefix, "");
  EXPECT_EQ(ParseS3Url("s3://ab/x", "k", &bucket, &prefix).message(),
            "k: 's3://ab/x' names bucket 'ab'; a bucket name has at least 3 characters");
  EXPECT_EQ(ParseS3Url("http://x", "k", &bucket, &prefix).message(), "k: 'http://x' is not an s3://bucket/prefix URL");
  EXPECT_EQ(S3Join("a/b/", "/train/x"), "a/b/train/x");
  EXPECT_EQ(S3Join("", "train/x"), "train/x");
}

TEST(S3Stats, SnapshotsAddAndSubtractPerOperation) {
  S3Stats st;
  st.Record(S3Op::kGet, 100, 2000, 200, false);
  const S3Snapshot before = st.Snapshot();
  st.Record(S3Op::kGet, 50, 3000, 200, false);
  st.Record(S3Op::kGet, 0, 1000, 503, true);
  st.AddRetry(S3Op::kGet);
  const S3Snapshot d = S3Difference(st.Snapshot(), before);
  const S3OpSnapshot& g = d.ops[static_cast<int>(S3Op::kGet)];
  EXPECT_EQ(g.requests, 2u);
  EXPECT_EQ(g.bytes, 50u);
  EXPECT_EQ(g.retries, 1u);
  EXPECT_EQ(g.latency.count(), 2u);
  EXPECT_EQ(g.errors[9], 1u);  // the 503 slot
  EXPECT_STREQ(S3StatusLabel(9), "503");
  EXPECT_STREQ(S3StatusLabel(11), "none");
  EXPECT_EQ(d.total_requests(), 2u);
}

// A closed loopback port: every attempt fails in transport, is retried with backoff and counted; the final message
// names the endpoint, bucket, object and the attempts, never the secret.
TEST(S3Client, TransportErrorsAreRetriedUpToMaxAttemptsAndCounted) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);  // nobody listens there now
  auto c = std::make_shared<S3Config>();
  c->endpoint = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  c->bucket = "bkt";
  c->access_key_id = "AKID";
  c->secret_access_key = S3Secret("TopSecret");
  c->max_attempts = 3;
  S3Client client(c);
  AlignedBuffer buf;
  absl::StatusOr<uint64_t> r = client.Get("k/obj.npz", buf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  const std::string msg(r.status().message());
  EXPECT_THAT(msg, HasSubstr("s3 GET endpoint " + c->endpoint + " bucket 'bkt' object 'k/obj.npz': no HTTP status ("));
  EXPECT_THAT(msg, HasSubstr("after 3 attempts"));
  EXPECT_EQ(msg.find("TopSecret"), std::string::npos);
  const S3Snapshot snap = client.stats().Snapshot();  // a copy: the reference below must not dangle
  const S3OpSnapshot& g = snap.ops[static_cast<int>(S3Op::kGet)];
  EXPECT_EQ(g.requests, 3u);
  EXPECT_EQ(g.retries, 2u);
  EXPECT_EQ(g.errors[11], 3u);  // "none": no HTTP answer
}

// A listening loopback socket (port 0, read back); closed with the object.
struct LoopbackListener {
  LoopbackListener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 8) == 0 &&
         ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    port = ntohs(a.sin_port);
  }
  ~LoopbackListener() { ::close(fd); }
  // True when a connection is waiting to be accepted within `ms`.
  bool Pending(int ms) const {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
  }
  int fd = -1;
  int port = 0;
  bool ok = false;
};

// An endpoint that answers 307 with a Location on another loopback port: the client does not follow it (the signed
// request would go to a host the endpoint named), and says the answer was a redirect. Never reached: `trap`.
TEST(S3Client, RedirectsToAnotherHostAreNeverFollowed) {
  LoopbackListener endpoint, trap;
  ASSERT_TRUE(endpoint.ok && trap.ok);
  std::string request;
  std::thread server([&] {
    if (!endpoint.Pending(10000)) return;
    const int c = ::accept(endpoint.fd, nullptr, nullptr);
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    const std::string answer = "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:" +
                               std::to_string(trap.port) + "/bkt/k/obj.npz\r\nContent-Length: 0\r\n"
                               "Connection: close\r\n\r\n";
    EXPECT_EQ(::write(c, answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
    ::close(c);
  });
  auto c = std::make_shared<S3Config>();
  c->endpoint = "http://127.0.0.1:" + std::to_string(endpoint.port);
  c->bucket = "bkt";
  c->access_key_id = "AKID";
  c->secret_access_key = S3Secret("TopSecret");
  c->max_attempts = 1;
  c->stall_timeout_s = 2;  // a followed redirect would wait on `trap` (which never answers) this long, not 30 s
  S3Client client(c);
  AlignedBuffer buf;
  absl::StatusOr<uint64_t> r = client.Get("k/obj.npz", buf);
  server.join();
  EXPECT_THAT(request, HasSubstr("Authorization: AWS4-HMAC-SHA256 Credential=AKID/"));  // the endpoint's own request
  EXPECT_FALSE(trap.Pending(200)) << "the client followed the redirect to port " << trap.port;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "s3 GET endpoint " + c->endpoint + " bucket 'bkt' object 'k/obj.npz': HTTP 307: a "
                                  "redirect, not followed (requests go to the endpoint only)");
}

// A loopback HTTP server answering every request (one per connection, "Connection: close") with answer(head);
// records the request heads in order. Stops when destroyed.
class Front {
 public:
  explicit Front(std::function<std::string(const std::string& head)> answer) : answer_(std::move(answer)) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~Front() {
    stop_ = true;
    thread_.join();
  }
  bool ok() const { return listener_.ok; }
  std::string origin() const { return "http://127.0.0.1:" + std::to_string(listener_.port); }
  std::vector<std::string> heads() {
    std::lock_guard<std::mutex> l(mu_);
    return heads_;
  }

 private:
  void Serve() {
    while (!stop_) {
      if (!listener_.Pending(50)) continue;  // 50 ms: how soon the destructor's stop is seen
      const int c = ::accept(listener_.fd, nullptr, nullptr);
      if (c < 0) continue;
      std::string head;
      char buf[4096];
      pollfd cp{c, POLLIN, 0};
      while (head.find("\r\n\r\n") == std::string::npos && ::poll(&cp, 1, 1000) == 1) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      {
        // Kept before the answer is written: once the client has its answer, heads() must hold the request.
        std::lock_guard<std::mutex> l(mu_);
        heads_.push_back(head);
      }
      const std::string a = answer_(head);
      EXPECT_EQ(::write(c, a.data(), a.size()), static_cast<ssize_t>(a.size()));
      ::close(c);
    }
  }
  LoopbackListener listener_;
  std::function<std::string(const std::string&)> answer_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> heads_;  // guarded by mu_
  std::thread thread_;
};

std::string Redirect(int status, const std::string& location) {
  return "HTTP/1.1 " + std::to_string(status) + " Redirect\r\nLocation: " + location +
         "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

std::shared_ptr<S3Config> RedirectConfig(const std::string& endpoint, std::vector<std::string>* asked) {
  auto c = std::make_shared<S3Config>();
  c->endpoint = endpoint;
  c->bucket = "bkt";
  c->access_key_id = "AKID";
  c->secret_access_key = S3Secret("TopSecret");
  c->max_attempts = 3;
  c->stall_timeout_s = 2;
  c->redirect_check = [asked](const std::string& origin) {
    asked->push_back(origin);
    return absl::OkStatus();
  };
  return c;
}

// The store's front answers 301, 302, 307 and 308 in turn with the node: each GET goes there, signed again for that
// host, and its bytes come back; every hop is counted, and the attempt's latency is one sample covering both hops.
TEST(S3Client, RedirectsAreFollowedToTheNodeAndResignedForItsHost) {
  const std::string payload = "0123456789abcdef";
  Front node([&](const std::string&) {
    return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(payload.size()) + "\r\nConnection: close\r\n\r\n" +
           payload;
  });
  const int statuses[] = {301, 302, 307, 308};
  std::atomic<int> n{0};
  Front proxy([&](const std::string&) { return Redirect(statuses[n++ % 4], node.origin() + "/bkt/k/obj.npz"); });
  ASSERT_TRUE(node.ok() && proxy.ok());
  std::vector<std::string> asked;
  S3Client client(RedirectConfig(proxy.origin(), &asked));
  AlignedBuffer buf;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<uint64_t> r = client.Get("k/obj.npz", buf);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(buf.data()), *r), payload);
  }
  ASSERT_EQ(node.heads().size(), 4u);
  const std::string host = node.origin().substr(7);
  EXPECT_THAT(node.heads()[0], HasSubstr("GET /bkt/k/obj.npz HTTP/1.1\r\nHost: " + host + "\r\n"));
  EXPECT_THAT(node.heads()[0], HasSubstr("Authorization: AWS4-HMAC-SHA256 Credential=AKID/"));
  EXPECT_THAT(node.heads()[0], HasSubstr("SignedHeaders=host;"));
  EXPECT_EQ(asked, std::vector<std::string>(4, node.origin()));
  const S3Snapshot snap = client.stats().Snapshot();
  const S3OpSnapshot& g = snap.ops[static_cast<int>(S3Op::kGet)];
  EXPECT_EQ(g.requests, 4u);
  EXPECT_EQ(g.redirects, 4u);
  EXPECT_EQ(g.retries, 0u);
  EXPECT_EQ(g.bytes, 4 * payload.size());
  EXPECT_EQ(g.latency.count(), 4u);
}

// A loop, a non-HTTP target, a chain longer than kMaxRedirectHops and a target the check refuses: each one line
// naming the URL, never retried (one attempt of the 3 allowed), the refused host never reached.
TEST(S3Client, RedirectLoopsOtherSchemesLongChainsAndRefusedHostsAreOneLineErrors) {
  std::vector<std::string> asked;
  std::atomic<int> n{0};
  std::string self;
  Front loop([&](const std::string&) { return Redirect(307, self + "/bkt/k/obj.npz"); });
  self = loop.origin();
  Front ftp([&](const std::string&) { return Redirect(302, "ftp://files.example/bkt/k"); });
  Front chain([&](const std::string&) { return Redirect(307, "/bkt/k/obj.npz?hop=" + std::to_string(n++)); });
  Front refused_node([&](const std::string&) { return std::string("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); });
  Front to_refused([&](const std::string&) { return Redirect(307, refused_node.origin() + "/bkt/k/obj.npz"); });
  AlignedBuffer buf;
  const auto get = [&](const Front& f, std::shared_ptr<S3Config> c) {
    S3Client client(std::move(c));
    absl::StatusOr<uint64_t> r = client.Get("k/obj.npz", buf);
    EXPECT_EQ(client.stats().Snapshot().ops[static_cast<int>(S3Op::kGet)].requests, 1u) << f.origin();
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  const std::string head = "s3 GET endpoint ";
  EXPECT_EQ(get(loop, RedirectConfig(loop.origin(), &asked)),
            head + loop.origin() + " bucket 'bkt' object 'k/obj.npz': HTTP 307 redirect to '" + loop.origin() +
                "/bkt/k/obj.npz': a redirect loop (that URL was already asked), not followed");
  EXPECT_EQ(get(ftp, RedirectConfig(ftp.origin(), &asked)),
            head + ftp.origin() + " bucket 'bkt' object 'k/obj.npz': HTTP 302 redirect to 'ftp://files.example/bkt/k'"
                                  ": not an http:// or https:// URL, not followed");
  EXPECT_EQ(get(chain, RedirectConfig(chain.origin(), &asked)),
            head + chain.origin() + " bucket 'bkt' object 'k/obj.npz': HTTP 307 redirect to '" + chain.origin() +
                "/bkt/k/obj.npz?hop=4': more than 4 redirects in one request, not followed");
  EXPECT_EQ(chain.heads().size(), 5u);  // the request and its 4 hops
  auto c = RedirectConfig(to_refused.origin(), &asked);
  c->redirect_check = [](const std::string& origin) {
    return absl::FailedPreconditionError("s3 endpoint " + origin + " is not allowed");
  };
  EXPECT_EQ(get(to_refused, c),
            head + to_refused.origin() + " bucket 'bkt' object 'k/obj.npz': HTTP 307 redirect to '" +
                refused_node.origin() + "/bkt/k/obj.npz' refused: s3 endpoint " + refused_node.origin() +
                " is not allowed");
  EXPECT_TRUE(refused_node.heads().empty());
}

}  // namespace
}  // namespace dlio
