#include "agent/relay_credentials.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace dlio {

Transport RelayServerTransport(const Transport& agent, const RelayTls& relay) {
  Transport t;
  t.token = agent.token;
  if (relay.on()) {
    t.cert_pem = relay.cert_pem;
    t.key_pem = relay.key_pem;
    // No ca_pem: ServerCredentials would then require client certificates of that CA; the token guards the hop.
  }
  return t;
}

absl::StatusOr<Transport> RelayMemberTransport(const Transport& agent, const std::string& member,
                                               const std::string& relay, const std::string& endpoint,
                                               const std::string& tls_name) {
  if (!agent.tls()) return agent;  // a plaintext fleet: the relay's listener is plaintext too
  if (tls_name.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("agent '", member, "': relay ", relay, " (", endpoint, ") serves no TLS and this agent uses TLS ",
                     "(--tls-ca): it never sends its barrier in plain text; give the relay --relay-tls-cert and ",
                     "--relay-tls-key"));
  }
  Transport t = agent;
  t.server_name = tls_name;  // the relay's name, not the coordinator's --tls-server-name
  return t;
}

bool IsHandshakeFailure(const std::string& why) {
  const std::string lower = absl::AsciiStrToLower(why);
  for (const char* word : {"handshake", "certificate", "ssl", "tls", "wrong version number", "wrong_version_number"}) {
    if (absl::StrContains(lower, word)) return true;
  }
  return false;
}

std::string RelayHandshakeCause(std::string why, const std::string& member, const std::string& relay,
                                const std::string& endpoint, const std::string& tls_name) {
  why = absl::StrReplaceAll(why, {{"\n", " "}, {"\r", " "}});
  const std::string head = absl::StrCat("agent '", member, "': TLS handshake with relay ", relay, " (", endpoint,
                                        ") failed: ");
  if (absl::StrContains(why, "not in peer certificate")) {  // "Peer name X is not in peer certificate"
    return absl::StrCat(head, "its certificate does not hold the name '", tls_name, "' it announced (",
                        "--relay-tls-name, --relay-tls-cert on ", relay, ") (", why, ")");
  }
  const std::string lower = absl::AsciiStrToLower(why);
  if (absl::StrContains(lower, "wrong version number") || absl::StrContains(lower, "wrong_version_number")) {
    return absl::StrCat(head, "it answers in plain text, not TLS (", why, ")");
  }
  return absl::StrCat(head, "its certificate is not one this agent trusts (", why, "); the relay's --relay-tls-cert ",
                      "must be signed by the CA of this agent's --tls-ca");
}

}  // namespace dlio
