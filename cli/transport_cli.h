// The command-line flags of a client of the coordinator's transport (dlio-agent and the client verbs of
// dlio-coordinator): --token-file and the client side of TLS, filling a TransportFiles (transport.h). One place, so
// the agent and the client verbs take the same flags with the same meaning. The server's flags (serve) differ: a
// server presents a certificate rather than trusting one.
#pragma once

#include <string>

#include "CLI/CLI.hpp"
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

}  // namespace dlio
