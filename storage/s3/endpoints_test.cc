// The endpoint choice of storage/s3/endpoints.h (pure), and the client's failover across endpoints against loopback
// ports of the test's own: one nobody listens on, one an HTTP stub answering 200.
#include "storage/s3/endpoints.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/s3/client.h"

namespace dlio {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(S3Endpoints, PolicyNamesParseAndBadOnesAreNamed) {
  EXPECT_EQ(*ParseS3EndpointPolicy("round_robin", "k"), S3EndpointPolicy::kRoundRobin);
  EXPECT_EQ(*ParseS3EndpointPolicy("per_agent", "k"), S3EndpointPolicy::kPerAgent);
  EXPECT_EQ(*ParseS3EndpointPolicy("per_request", "k"), S3EndpointPolicy::kPerRequest);
  EXPECT_EQ(ParseS3EndpointPolicy("random", "dlio_ext.s3_endpoint_policy").status().message(),
            "dlio_ext.s3_endpoint_policy: unknown endpoint policy 'random' (allowed: round_robin, per_agent, "
            "per_request)");
  EXPECT_STREQ(S3EndpointPolicyName(S3EndpointPolicy::kPerRequest), "per_request");
}

TEST(S3Endpoints, CommaSeparatedListsSplitTrimmed) {
  EXPECT_THAT(SplitS3Endpoints(" http://a:1/, http://b:2 ,,http://c:3"),
              ElementsAre("http://a:1", "http://b:2", "http://c:3"));
  EXPECT_TRUE(SplitS3Endpoints("").empty());
  EXPECT_THAT(SplitS3Endpoints("http://a"), ElementsAre("http://a"));
}

TEST(S3Endpoints, RoundRobinIsPerRankAndEvenly) {
  std::map<size_t, int> per_endpoint;
  for (int64_t rank = 0; rank < 12; ++rank) {
    const size_t e = FirstS3Endpoint(S3EndpointPolicy::kRoundRobin, 3, rank, /*agent_index=*/rank / 4, 99);
    EXPECT_EQ(e, static_cast<size_t>(rank % 3));
    ++per_endpoint[e];
  }
  EXPECT_EQ(per_endpoint, (std::map<size_t, int>{{0, 4}, {1, 4}, {2, 4}}));
  // No rank known: the client's turn spreads them.
  EXPECT_EQ(FirstS3Endpoint(S3EndpointPolicy::kRoundRobin, 3, -1, 0, 7), 1u);
  EXPECT_EQ(FirstS3Endpoint(S3EndpointPolicy::kRoundRobin, 3, -1, 1, 7), 2u);  // offset by the agent
  EXPECT_EQ(FirstS3Endpoint(S3EndpointPolicy::kRoundRobin, 1, 5, 0, 7), 0u);
  EXPECT_EQ(FirstS3Endpoint(S3EndpointPolicy::kRoundRobin, 0, 5, 0, 7), 0u);
}

TEST(S3Endpoints, PerAgentIgnoresTheRank) {
  for (int64_t rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(FirstS3Endpoint(S3EndpointPolicy::kPerAgent, 2, rank, 3, rank), 1u);
    EXPECT_EQ(FirstS3Endpoint(S3EndpointPolicy::kPerAgent, 2, rank, 4, rank), 0u);
  }
}

TEST(S3Endpoints, PerRequestRotatesAndFailoverMovesOn) {
  size_t e = 0;
  std::vector<size_t> seen;
  for (int i = 0; i < 6; ++i) seen.push_back(e = NextS3EndpointForRequest(S3EndpointPolicy::kPerRequest, e, 3));
  EXPECT_THAT(seen, ElementsAre(1, 2, 0, 1, 2, 0));
  EXPECT_EQ(NextS3EndpointForRequest(S3EndpointPolicy::kRoundRobin, 2, 3), 2u);
  EXPECT_EQ(NextS3EndpointForRequest(S3EndpointPolicy::kPerAgent, 1, 3), 1u);
  EXPECT_EQ(S3FailoverEndpoint(2, 3), 0u);
  EXPECT_EQ(S3FailoverEndpoint(0, 1), 0u);
}

TEST(S3Endpoints, ScopedRankNestsPerThread) {
  EXPECT_EQ(ScopedS3Rank::Current(), -1);
  {
    ScopedS3Rank a(3);
    EXPECT_EQ(ScopedS3Rank::Current(), 3);
    {
      ScopedS3Rank b(5);
      EXPECT_EQ(ScopedS3Rank::Current(), 5);
      std::thread([] { EXPECT_EQ(ScopedS3Rank::Current(), -1); }).join();
    }
    EXPECT_EQ(ScopedS3Rank::Current(), 3);
  }
  EXPECT_EQ(ScopedS3Rank::Current(), -1);
}

// A loopback port that is bound but not listening: connecting is refused at once.
struct DeadPort {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  DeadPort() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~DeadPort() { ::close(fd); }
};

// An HTTP stub answering every request "200, Content-Length: 0", counting them.
class OkServer {
 public:
  OkServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 16);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~OkServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  int requests() const { return requests_; }

 private:
  void Serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string in;
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(c, buf, sizeof buf, 0)) > 0) {
        in.append(buf, static_cast<size_t>(n));
        size_t end;
        while ((end = in.find("\r\n\r\n")) != std::string::npos) {  // bodiless requests: one per header block
          in.erase(0, end + 4);
          ++requests_;
          const char kAnswer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
          ::send(c, kAnswer, sizeof kAnswer - 1, MSG_NOSIGNAL);
        }
      }
      ::close(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

std::shared_ptr<S3Config> TwoEndpoints(const std::string& a, const std::string& b, int attempts) {
  auto c = std::make_shared<S3Config>();
  c->endpoints = {a, b};
  c->endpoint = a;
  c->bucket = "bkt";
  c->access_key_id = "AKID";
  c->secret_access_key = S3Secret("secret");
  c->max_attempts = attempts;
  c->connect_timeout_ms = 1000;
  return c;
}

const S3EndpointSnapshot& EndpointOf(const S3Snapshot& s, const std::string& e) {
  for (const S3EndpointSnapshot& x : s.endpoints) {
    if (x.endpoint == e) return x;
  }
  static const S3EndpointSnapshot none;
  return none;
}

TEST(S3ClientEndpoints, AFailedEndpointFailsOverToTheNextAndIsCounted) {
  DeadPort dead;
  OkServer ok;
  const std::string bad = "http://127.0.0.1:" + std::to_string(dead.port);
  const std::string good = "http://127.0.0.1:" + std::to_string(ok.port());
  ScopedS3Rank rank(0);  // round_robin: rank 0 starts on the first (dead) endpoint
  S3Client client(TwoEndpoints(bad, good, 3));
  EXPECT_EQ(client.endpoint(), bad);
  ASSERT_TRUE(client.HeadBucket().ok());
  EXPECT_EQ(client.endpoint(), good);  // and stays there
  ASSERT_TRUE(client.HeadBucket().ok());
  const S3Snapshot s = client.stats().Snapshot();
  EXPECT_EQ(EndpointOf(s, bad).requests, 1u);
  EXPECT_EQ(EndpointOf(s, bad).errors, 1u);
  EXPECT_EQ(EndpointOf(s, bad).failovers, 1u);
  EXPECT_EQ(EndpointOf(s, good).requests, 2u);
  EXPECT_EQ(EndpointOf(s, good).errors, 0u);
  EXPECT_EQ(s.total_failovers(), 1u);
  EXPECT_EQ(ok.requests(), 2);
}

TEST(S3ClientEndpoints, WithoutRetriesTheErrorNamesTheFailedEndpoint) {
  DeadPort dead;
  OkServer ok;
  const std::string bad = "http://127.0.0.1:" + std::to_string(dead.port);
  const std::string good = "http://127.0.0.1:" + std::to_string(ok.port());
  ScopedS3Rank rank(2);
  S3Client client(TwoEndpoints(bad, good, 1));
  const absl::Status s = client.HeadBucket();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("s3 HEAD endpoint " + bad + " bucket 'bkt': no HTTP status ("));
  EXPECT_EQ(client.stats().Snapshot().total_failovers(), 0u);
  EXPECT_EQ(ok.requests(), 0);
}

TEST(S3ClientEndpoints, PerRequestSpreadsRequestsEvenly) {
  OkServer a, b;
  auto c = TwoEndpoints("http://127.0.0.1:" + std::to_string(a.port()), "http://127.0.0.1:" + std::to_string(b.port()), 1);
  c->endpoint_policy = S3EndpointPolicy::kPerRequest;
  S3Client client(c);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(client.HeadBucket().ok());
  EXPECT_EQ(a.requests(), 5);
  EXPECT_EQ(b.requests(), 5);
}

TEST(S3ClientEndpoints, RanksSpreadOverEndpoints) {
  OkServer a, b;
  auto c = TwoEndpoints("http://127.0.0.1:" + std::to_string(a.port()), "http://127.0.0.1:" + std::to_string(b.port()), 1);
  for (int64_t r = 0; r < 4; ++r) {
    ScopedS3Rank rank(r);
    S3Client client(c);
    ASSERT_TRUE(client.HeadBucket().ok());
  }
  EXPECT_EQ(a.requests(), 2);
  EXPECT_EQ(b.requests(), 2);
}

}  // namespace
}  // namespace dlio
