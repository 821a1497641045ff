// TLS on the relay hop (agent/relay_credentials.h) as values, no gRPC: which transport a relay serves with and a
// member dials with, that a member with TLS never dials a plaintext relay, and the one line a failed handshake gives.
#include "agent/relay_credentials.h"

#include "gtest/gtest.h"

namespace dlio {
namespace {

Transport TlsAgent() {
  Transport t;
  t.token = "tok";
  t.ca_pem = "CA";
  t.cert_pem = "CLIENT";
  t.key_pem = "CLIENTKEY";
  t.server_name = "coordinator.example";
  return t;
}

TEST(RelayCredentialsTest, ARelayServesItsOwnCertificateAndAsksNoClientCertificate) {
  RelayTls relay{"RELAY", "RELAYKEY", "relay-0.example"};
  const Transport s = RelayServerTransport(TlsAgent(), relay);
  EXPECT_EQ(s.token, "tok");
  EXPECT_EQ(s.cert_pem, "RELAY");
  EXPECT_EQ(s.key_pem, "RELAYKEY");
  EXPECT_TRUE(s.ca_pem.empty()) << "a CA would make ServerCredentials require client certificates";
  Transport plain;
  plain.token = "tok";
  const Transport p = RelayServerTransport(plain, RelayTls());
  EXPECT_FALSE(p.tls());
  EXPECT_EQ(p.token, "tok");
}

TEST(RelayCredentialsTest, UnderTlsOnlyARelayCertificateOffersAListener) {
  EXPECT_TRUE(OffersRelayListener(Transport(), RelayTls()));                 // a plaintext fleet
  EXPECT_FALSE(OffersRelayListener(TlsAgent(), RelayTls()));                 // TLS without a relay certificate: the star
  EXPECT_TRUE(OffersRelayListener(TlsAgent(), RelayTls{"C", "K", "name"}));  // TLS with one
}

TEST(RelayCredentialsTest, AMemberExpectsTheRelaysNameNotTheCoordinators) {
  absl::StatusOr<Transport> t = RelayMemberTransport(TlsAgent(), "agent-1", "agent-0", "127.0.0.1:7001",
                                                     "relay-0.example");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->server_name, "relay-0.example");
  EXPECT_EQ(t->ca_pem, "CA");
  EXPECT_EQ(t->token, "tok");
  Transport plain;
  plain.token = "tok";
  absl::StatusOr<Transport> p = RelayMemberTransport(plain, "agent-1", "agent-0", "127.0.0.1:7001", "");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->tls());
}

TEST(RelayCredentialsTest, AMemberWithTlsRefusesAPlaintextRelayNamingIt) {
  absl::StatusOr<Transport> t = RelayMemberTransport(TlsAgent(), "agent-1", "agent-0", "127.0.0.1:7001", "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string m(t.status().message());
  EXPECT_NE(m.find("agent 'agent-1': relay agent-0 (127.0.0.1:7001) serves no TLS"), std::string::npos) << m;
  EXPECT_NE(m.find("--relay-tls-cert"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(RelayCredentialsTest, AFailedHandshakeIsOneLineNamingTheRelayAndTheCertificateProblem) {
  EXPECT_TRUE(IsHandshakeFailure("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7001: "
                                 "Peer name wrong.example is not in peer certificate"));
  EXPECT_TRUE(IsHandshakeFailure("Ssl handshake failed: SSL_ERROR_SSL: error:0A000086:SSL routines::certificate "
                                 "verify failed"));
  EXPECT_FALSE(IsHandshakeFailure("failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:7001: "
                                  "Connection refused"));
  const std::string name = RelayHandshakeCause("Peer name wrong.example is not in\npeer certificate", "agent-1",
                                               "agent-0", "127.0.0.1:7001", "wrong.example");
  EXPECT_EQ(name, "agent 'agent-1': TLS handshake with relay agent-0 (127.0.0.1:7001) failed: its certificate does not "
                  "hold the name 'wrong.example' it announced (--relay-tls-name, --relay-tls-cert on agent-0) (Peer "
                  "name wrong.example is not in peer certificate)");
  const std::string ca = RelayHandshakeCause("certificate verify failed", "agent-1", "agent-0", "127.0.0.1:7001", "r");
  EXPECT_NE(ca.find("its certificate is not one this agent trusts"), std::string::npos) << ca;
  EXPECT_NE(ca.find("--tls-ca"), std::string::npos) << ca;
}

}  // namespace
}  // namespace dlio
