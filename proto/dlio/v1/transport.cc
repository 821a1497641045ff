#include "dlio/v1/transport.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "dlio/v1/credentials.h"

namespace dlio {

namespace {

absl::StatusOr<std::string> ReadWhole(const std::string& option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(option, ": cannot read '", path, "' (", std::strerror(errno), ")"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<std::string> ReadPem(const std::string& option, const std::string& path, const char* what) {
  absl::StatusOr<std::string> text = ReadWhole(option, path);
  if (!text.ok()) return text.status();
  if (text->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(option, ": '", path, "' is not a PEM ", what));
  }
  return text;
}

}  // namespace

absl::StatusOr<Transport> LoadTransport(const TransportFiles& f, bool server) {
  Transport t;
  if (!f.token_file.empty()) {
    absl::StatusOr<std::string> text = ReadWhole("--token-file", f.token_file);
    if (!text.ok()) return text.status();
    const std::string token(absl::StripAsciiWhitespace(*text));
    if (token.empty()) return absl::InvalidArgumentError(absl::StrCat("--token-file: '", f.token_file, "' is empty"));
    for (char c : token) {
      if (c < 0x21 || c > 0x7e) {
        return absl::InvalidArgumentError(absl::StrCat("--token-file: '", f.token_file,
                                                       "' must hold one token of printable ASCII without spaces"));
      }
    }
    t.token = token;
  }
  if (f.tls_cert.empty() != f.tls_key.empty()) {
    return absl::InvalidArgumentError(f.tls_cert.empty() ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key");
  }
  if (server && !f.tls_ca.empty() && f.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls-ca (mutual TLS) needs the coordinator's own --tls-cert and --tls-key");
  }
  if (!server && !f.tls_cert.empty() && f.tls_ca.empty()) {
    return absl::InvalidArgumentError("--tls-cert needs --tls-ca (the CA that signed the coordinator's certificate)");
  }
  if (!server && !f.tls_server_name.empty() && f.tls_ca.empty()) {
    return absl::InvalidArgumentError("--tls-server-name needs --tls-ca");
  }
  if (!f.tls_cert.empty()) {
    absl::StatusOr<std::string> cert = ReadPem("--tls-cert", f.tls_cert, "certificate");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem("--tls-key", f.tls_key, "private key");
    if (!key.ok()) return key.status();
    t.cert_pem = *cert;
    t.key_pem = *key;
  }
  if (!f.tls_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("--tls-ca", f.tls_ca, "certificate");
    if (!ca.ok()) return ca.status();
    t.ca_pem = *ca;
  }
  t.server_name = f.tls_server_name;
  return t;
}

bool TokenMatches(std::string_view presented, std::string_view token) {
  constexpr std::string_view kScheme = "Bearer ";
  std::string_view p = presented.substr(0, kScheme.size()) == kScheme ? presented.substr(kScheme.size())
                                                                      : std::string_view();
  // Every byte of the presented value is compared (against the token repeated), so the time depends only on the
  // lengths; a length mismatch is folded into the same accumulator.
  unsigned char diff = p.size() == token.size() ? 0 : 1;
  if (token.empty()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    diff |= static_cast<unsigned char>(p[i] ^ token[i % token.size()]);
  }
  return diff == 0 && !p.empty();
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const Transport& t) {
  if (t.cert_pem.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions o(t.ca_pem.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                       : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_root_certs = t.ca_pem;
  o.pem_key_cert_pairs.push_back({t.key_pem, t.cert_pem});
  return grpc::SslServerCredentials(o);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const Transport& t) {
  if (!t.tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = t.ca_pem;
  o.pem_private_key = t.key_pem;
  o.pem_cert_chain = t.cert_pem;
  return grpc::SslCredentials(o);
}

grpc::ChannelArguments ChannelArgs(const Transport& t) {
  grpc::ChannelArguments args;
  // Results and job files can exceed gRPC's 4 MiB default message size.
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  if (t.tls() && !t.server_name.empty()) args.SetSslTargetNameOverride(t.server_name);
  return args;
}

grpc::ChannelArguments SessionChannelArgs(const Transport& t) {
  grpc::ChannelArguments args = ChannelArgs(t);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  return args;
}

void AddToken(grpc::ClientContext* ctx, const Transport& t) {
  if (!t.token.empty()) ctx->AddMetadata(kAuthMetadataKey, "Bearer " + t.token);
}

}  // namespace dlio
