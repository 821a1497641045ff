// TLS on the step barrier's relay hop (issue 29 item 2; docs/fleet.md, "TLS"): which transport a relay's listener
// serves with and which one a member dials its relay with, as plain Transport values (dlio/v1/transport.h) that
// RelayServer and RelayClient (agent/relay.h) turn into gRPC credentials as every other facade does.
//
// A relay serves TLS with its own certificate (dlio-agent --relay-tls-cert/--relay-tls-key) and announces the name
// that certificate holds (--relay-tls-name, default the agent's host name; Hello.relay_tls_name). It asks members for
// no client certificate: the fleet's token guards the hop, as it guards Attach. A member dials a TLS relay with the CA
// it trusts the coordinator with (--tls-ca) and its client certificate if it has one, and expects the relay's
// announced name in the relay's certificate (gRPC's target name), never the coordinator's --tls-server-name.
// An agent with TLS but no relay certificate offers no listener (its jobs keep the flat star); a member with TLS
// never talks plain text to a relay: a relay that announces no TLS name is refused (RelayMemberTransport).
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "dlio/v1/transport.h"

namespace dlio {

// The relay listener's own TLS material, loaded from --relay-tls-cert/--relay-tls-key (PEM), and the name members
// expect in its certificate. Empty cert = no TLS of its own.
struct RelayTls {
  std::string cert_pem, key_pem;
  std::string name;
  bool on() const { return !cert_pem.empty(); }
};

// Whether an agent with transport `agent` and relay material `relay` offers a relay listener: always without TLS
// (plaintext fleet), only with a relay certificate under TLS.
inline bool OffersRelayListener(const Transport& agent, const RelayTls& relay) { return !agent.tls() || relay.on(); }

// The transport of the relay's listener: the agent's token; TLS with the relay's certificate when `relay` has one (no
// client certificate asked), else plaintext (a plaintext fleet: `agent` has no TLS).
Transport RelayServerTransport(const Transport& agent, const RelayTls& relay);

// The transport member `member` dials relay `relay` at `endpoint` with, whose certificate holds `tls_name` (empty: a
// plaintext listener). A plaintext member dials in plain text. A member with TLS dials TLS, trusting its --tls-ca and
// expecting `tls_name`; FailedPrecondition when `tls_name` is empty, e.g. "agent 'agent-1': relay agent-0
// (10.0.0.5:7001) serves no TLS and this agent uses TLS (--tls-ca): it never sends its barrier in plain text".
absl::StatusOr<Transport> RelayMemberTransport(const Transport& agent, const std::string& member,
                                               const std::string& relay, const std::string& endpoint,
                                               const std::string& tls_name);

// Whether gRPC's reason `why` for a call that failed on a TLS channel is the handshake's (a certificate without the
// expected name, one no trusted CA signed, a plaintext server) rather than an unreachable or vanished peer.
bool IsHandshakeFailure(const std::string& why);

// One line saying why member `member` could not open its TLS connection to relay `relay` at `endpoint` (announced
// name `tls_name`), from gRPC's reason `why`, naming the certificate problem and the flags that fix it, e.g.
// "agent 'agent-1': TLS handshake with relay agent-0 (127.0.0.1:40123) failed: its certificate does not hold the
// name 'relay-0.example' it announced (--relay-tls-name, --relay-tls-cert on agent-0) (Peer name ... certificate)".
std::string RelayHandshakeCause(std::string why, const std::string& member, const std::string& relay,
                                const std::string& endpoint, const std::string& tls_name);

}  // namespace dlio
