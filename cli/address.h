// The network addresses of the command line, checked before anything connects or listens, so a mistake is one line
// naming the flag and the address (exit 2) instead of gRPC's or CivetServer's own words:
//  - CoordinatorAddress(): the validator of --coordinator (dlio-agent and every client verb of dlio-coordinator). An
//    address is HOST:PORT (HOST a name, an IPv4 address or a bracketed IPv6 one, PORT 1-65535), or one of gRPC's
//    target forms that name a place to connect to: unix:PATH, unix-abstract:NAME, dns:[//AUTHORITY/]HOST:PORT,
//    ipv4:HOST:PORT, ipv6:[ADDR]:PORT. Anything else ("7543", "host", "host:", ":7543", "host:http") is refused as
//    "--coordinator: expected HOST:PORT, got '7543'" (CLI11 prefixes the flag).
//  - CheckCoordinatorAddress(): the same rule for an address from elsewhere ($DLIO_COORDINATOR), naming it.
//  - CheckCanListen(): whether this host lets us listen on a HOST:PORT (--listen, --metrics-listen): a probe bind
//    (SO_REUSEADDR as the servers set it, no SO_REUSEPORT: the coordinator turns it off) of every address HOST
//    resolves to. An address in use, not of this host, or a port needing privileges is InvalidArgument, e.g.
//    "--metrics-listen: cannot listen on '127.0.0.1:9464': the address is in use (another process listens there)".
//    Port 0, unix: addresses, and whatever the probe cannot judge (a name that does not resolve, a form that is not
//    HOST:PORT) pass: the server's own check answers them. A port taken between the probe and the server's bind
//    still fails there, with the server's message.
// Thread-safety: pure functions (the probe's sockets are its own).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace CLI {
class Validator;
}  // namespace CLI

namespace dlio {

// HOST:PORT split; `host` without the brackets of an IPv6 address.
struct HostPort {
  std::string host;
  int port = 0;
};

// `address` as HOST:PORT with PORT in [0, 65535] and a non-empty HOST (one with ':' in brackets); nullopt otherwise.
std::optional<HostPort> ParseHostPort(std::string_view address);

// Whether `address` is a coordinator address as the header says (PORT 0 is refused: nothing listens there).
bool IsCoordinatorAddress(std::string_view address);

// The validator of a --coordinator option; its error reads "expected HOST:PORT, got 'ADDRESS'".
CLI::Validator CoordinatorAddress();

// OK when `address` is a coordinator address; else InvalidArgument "SOURCE: expected HOST:PORT, got 'ADDRESS'".
absl::Status CheckCoordinatorAddress(const std::string& source, const std::string& address);

// The probe of the header for the listen flag `flag` ("--listen", "--metrics-listen") and its `address`.
absl::Status CheckCanListen(const std::string& flag, const std::string& address);

}  // namespace dlio
