#include "cli/address.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace dlio {
namespace {

std::string ExpectedHostPort(const std::string& address) { return "expected HOST:PORT, got '" + address + "'"; }

// Debian's Abseil predates std::string_view in its string helpers: these two are ours.
bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (!StartsWith(*s, prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

bool HasSpace(std::string_view s) {
  for (char c : s) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
      return true;
    }
  }
  return false;
}

// The errno of binding one socket like `ai` (SO_REUSEADDR on, as gRPC and CivetServer set it); 0 when it bound.
int ProbeBind(const addrinfo& ai) {
  const int fd = socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) return errno;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int err = bind(fd, ai.ai_addr, ai.ai_addrlen) == 0 ? 0 : errno;
  close(fd);  // bound, never listened: nothing lingers on the port
  return err;
}

// What a failed bind means to the user; empty for a cause the probe leaves to the server.
std::string BindFailure(int err) {
  switch (err) {
    case EADDRINUSE:
      return "the address is in use (another process listens there)";
    case EADDRNOTAVAIL:
      return "not an address of this host";
    case EACCES:
      return "permission denied (a port below 1024 needs privileges)";
    default:
      return std::string();
  }
}

}  // namespace

std::optional<HostPort> ParseHostPort(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || HasSpace(address)) return std::nullopt;
  std::string_view host = address.substr(0, colon);
  const std::string_view port_text = address.substr(colon + 1);
  if (StartsWith(host, "[")) {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of(":]") != std::string_view::npos) {
    return std::nullopt;  // an IPv6 address without its brackets, or a stray one
  }
  if (host.empty() || port_text.empty() || port_text.size() > 5) return std::nullopt;
  int port = 0;
  for (char c : port_text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port > 65535) return std::nullopt;
  return HostPort{std::string(host), port};
}

bool IsCoordinatorAddress(std::string_view address) {
  for (std::string_view scheme : {"unix:", "unix-abstract:"}) {
    if (StartsWith(address, scheme)) return address.size() > scheme.size() && !HasSpace(address);
  }
  std::string_view rest = address;
  if (ConsumePrefix(&rest, "dns:") && ConsumePrefix(&rest, "//")) {
    const size_t slash = rest.find('/');  // dns://AUTHORITY/HOST:PORT: the DNS server, then the name
    if (slash == std::string_view::npos) return false;
    rest.remove_prefix(slash + 1);
  } else if (!ConsumePrefix(&rest, "ipv4:")) {
    ConsumePrefix(&rest, "ipv6:");
  }
  const std::optional<HostPort> hp = ParseHostPort(rest);
  return hp.has_value() && hp->port > 0;
}

CLI::Validator CoordinatorAddress() {
  // No description: --help shows the option as before; the error text is the validator's.
  return CLI::Validator(
      [](std::string& in) { return IsCoordinatorAddress(in) ? std::string() : ExpectedHostPort(in); }, "");
}

absl::Status CheckCoordinatorAddress(const std::string& source, const std::string& address) {
  if (IsCoordinatorAddress(address)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", ExpectedHostPort(address)));
}

absl::Status CheckCanListen(const std::string& flag, const std::string& address) {
  const std::optional<HostPort> hp = ParseHostPort(address);
  if (!hp.has_value() || hp->port == 0) return absl::OkStatus();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(hp->port);
  if (getaddrinfo(hp->host.c_str(), port.c_str(), &hints, &found) != 0) return absl::OkStatus();
  int first_err = 0;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int err = ProbeBind(*ai);
    if (err == 0) {  // one address that binds is enough: the servers listen on what they can
      first_err = 0;
      break;
    }
    if (first_err == 0) first_err = err;
  }
  freeaddrinfo(found);
  const std::string why = BindFailure(first_err);
  if (why.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot listen on '", address, "': ", why));
}

}  // namespace dlio
