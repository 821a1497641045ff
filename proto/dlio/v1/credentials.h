// gRPC credentials from the loaded Transport (dlio/v1/transport.h): the one place the token and TLS material become
// gRPC objects, for the three facades (CoordinatorServer, AgentServer, the client verbs).
// Thread-safety: pure functions.
#pragma once

#include <memory>

#include "dlio/v1/transport.h"
#include "grpcpp/grpcpp.h"

namespace dlio {

// TLS when a certificate is loaded (mutual TLS when a CA is loaded too), else plaintext.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const Transport& t);
// TLS when a CA is loaded (presenting the client certificate when loaded), else plaintext.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const Transport& t);
// Channel arguments for clients and agents: message size limits and, with TLS, the expected server name.
grpc::ChannelArguments ChannelArgs(const Transport& t);
// ChannelArgs for an agent's session (Attach), a stream of small control messages both ways: without HTTP/2
// bandwidth-delay probing, whose pings and window updates are pure overhead there (bench/grpc_floor.cc: a bare echo
// server spends 21-23 instead of 27 us per message pair with probing off on both sides). The client verbs keep
// it: they download result files and traces of up to 256 MiB.
grpc::ChannelArguments SessionChannelArgs(const Transport& t);
// The same, for the coordinator's server (every stream it serves: the sessions and the client verbs' small requests).
inline constexpr int kServerBdpProbe = 0;
// Adds the token (if any) to a call.
void AddToken(grpc::ClientContext* ctx, const Transport& t);

}  // namespace dlio
