// The command-line flags of a client of the coordinator's transport (dlio-agent and the client verbs of
// dlio-coordinator): --token-file and the client side of TLS, filling a TransportFiles (transport.h). One place, so
// the agent and the client verbs take the same flags with the same meaning. The server's flags (serve) differ: a
// server presents a certificate rather than trusting one.
// CheckTlsFiles: the TLS material LoadTransport read, parsed with OpenSSL before anything listens or connects, so a
// key of another certificate or a garbled PEM file is refused naming its flag and file (exit 2) instead of failing
// later inside gRPC (where `serve` could only say that it cannot listen).
// LoadRelayTls: dlio-agent's relay listener certificate (--relay-tls-cert/--relay-tls-key/--relay-tls-name,
// agent/relay_credentials.h) read and checked the same way, each error naming its --relay-tls-* flag.
// Thread-safety: AddClientTransportOptions binds CLI11 variables (call once, from main); CheckTlsFiles,
// LoadRelayTls and CertificateNameProblem are pure functions (OpenSSL's error queue is per thread).
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/relay_credentials.h"
#include "dlio/v1/transport.h"

namespace dlio {

// `token_sent`: when the token is sent, for --token-file's help ("when attaching", "with every call").
inline void AddClientTransportOptions(CLI::App* app, TransportFiles* files, const std::string& token_sent) {
  app->add_option("--token-file", files->token_file, "File holding the coordinator's token (sent " + token_sent + ")");
  app->add_option("--tls-ca", files->tls_ca,
                  "Use TLS, trusting the coordinator's certificate if this CA (PEM) signed it");
  app->add_option("--tls-cert", files->tls_cert, "Client certificate (PEM) for a mutual-TLS coordinator");
  app->add_option("--tls-key", files->tls_key, "Private key (PEM) of --tls-cert");
  app->add_option("--tls-server-name", files->tls_server_name,
                  "Name expected in the coordinator's certificate (default: the host of --coordinator)");
}

// Checks the PEM text `loaded` holds (read by LoadTransport from `files`): --tls-cert and --tls-ca each hold a
// certificate OpenSSL parses, --tls-key an unencrypted private key it parses, and that key is the key of the
// --tls-cert certificate (X509_check_private_key). InvalidArgument naming the flag and the file otherwise, e.g.
// "--tls-key: does not match --tls-cert ('b.key' is not the private key of the certificate in 'a.pem')".
absl::Status CheckTlsFiles(const TransportFiles& files, const Transport& loaded);

// dlio-agent's relay certificate flags as given (empty = not used).
struct RelayTlsFiles {
  std::string cert, key, name;
};

// Reads --relay-tls-cert and --relay-tls-key (PEM, the key that of the certificate, as CheckTlsFiles checks them)
// into a RelayTls named `files.name`, else `default_name` (the host name). Nothing given: an empty RelayTls.
// InvalidArgument naming the flag otherwise: one without the other, --relay-tls-name without them, a relay
// certificate without --tls-ca in `agent` (members verify it with the CA they trust the coordinator with: a plaintext
// fleet's relays are plaintext), an unreadable or garbled file ("--relay-tls-key: cannot read 'k.pem' (...)").
absl::StatusOr<RelayTls> LoadRelayTls(const RelayTlsFiles& files, const TransportFiles& agent,
                                      const std::string& default_name);

// Empty when the certificate `cert_pem` holds `name` (a DNS name its subjectAltName matches, wildcards as TLS
// matches them, or an IP address it lists), else one line saying so with the names it holds, e.g. "the certificate
// holds DNS:relay.example, IP:10.0.0.5, not 'node7'".
std::string CertificateNameProblem(const std::string& cert_pem, const std::string& name);

}  // namespace dlio
