// Transport security shared by the three gRPC facades (CoordinatorServer, AgentServer, the client verbs): the
// shared token and TLS / mutual TLS material, loaded from files once at start-up, and turned into gRPC credentials.
//
// Token: one line of printable ASCII in a file (--token-file; surrounding whitespace ignored). Clients and agents
// send it on every call as the metadata `authorization: Bearer <token>`; the coordinator compares it in constant
// time (TokenMatches) and refuses anything else with UNAUTHENTICATED. Without TLS the token crosses the network in
// clear text, so it only keeps out whoever cannot read the traffic.
// TLS: the coordinator needs --tls-cert and --tls-key (PEM); with --tls-ca as well it requires and verifies client
// certificates signed by that CA (mutual TLS). Clients and agents turn TLS on with --tls-ca (the CA that signed
// the coordinator's certificate), and present --tls-cert/--tls-key to a mutual-TLS coordinator.
// No gRPC in this header (facade Options carry these types); the gRPC credentials are built by
// dlio/v1/credentials.h, which only the facades include.
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace dlio {

// The file names as given on the command line (empty = not used).
struct TransportFiles {
  std::string token_file;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  std::string tls_server_name;   // client side: expected name in the coordinator's certificate (default: its host)
};

// The loaded material.
struct Transport {
  std::string token;             // empty = no token
  std::string cert_pem, key_pem, ca_pem;
  std::string server_name;
  bool tls() const { return !cert_pem.empty() || !ca_pem.empty(); }
};

// Reads and checks the files. `server` selects the rules: a server needs cert and key together (and a CA only
// with them); a client needs --tls-ca for TLS and cert and key together. Errors name the option and the file.
absl::StatusOr<Transport> LoadTransport(const TransportFiles& files, bool server);

// The metadata key carrying the token (gRPC keys are lower case).
inline constexpr char kAuthMetadataKey[] = "authorization";

// Constant-time comparison of a presented `authorization` value with the expected token: the time depends only on
// the lengths, never on where the first difference is.
bool TokenMatches(std::string_view presented_header, std::string_view token);

}  // namespace dlio
