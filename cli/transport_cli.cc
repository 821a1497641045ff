#include "cli/transport_cli.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace dlio {

namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

// OpenSSL's reason for the last failure on this thread ("no start line", "bad base64 decode", ...); the queue is
// cleared so the next check starts empty.
std::string OpenSslReason() {
  unsigned long code = 0, last = 0;
  while ((code = ERR_get_error()) != 0) last = code;
  const char* reason = last != 0 ? ERR_reason_error_string(last) : nullptr;
  return reason != nullptr ? reason : "not PEM";
}

// A key protected by a pass phrase is refused rather than prompted for: gRPC cannot use one either.
int NoPassphrase(char*, int, int, void*) { return 0; }

std::unique_ptr<BIO, BioFree> Memory(const std::string& pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

absl::StatusOr<std::unique_ptr<X509, X509Free>> ParseCertificate(const std::string& pem, const std::string& flag,
                                                                  const std::string& file) {
  ERR_clear_error();
  auto bio = Memory(pem);
  std::unique_ptr<X509, X509Free> cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": '", file, "' holds no certificate OpenSSL can read (", OpenSslReason(), ")"));
  }
  return cert;
}

}  // namespace

absl::Status CheckTlsFiles(const TransportFiles& files, const Transport& loaded) {
  if (!loaded.ca_pem.empty()) {
    if (auto ca = ParseCertificate(loaded.ca_pem, "--tls-ca", files.tls_ca); !ca.ok()) return ca.status();
  }
  if (loaded.cert_pem.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<X509, X509Free>> cert =
      ParseCertificate(loaded.cert_pem, "--tls-cert", files.tls_cert);
  if (!cert.ok()) return cert.status();
  ERR_clear_error();
  auto bio = Memory(loaded.key_pem);
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr);
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-key: '", files.tls_key,
                                                   "' holds no unencrypted private key OpenSSL can read (",
                                                   OpenSslReason(), ")"));
  }
  if (X509_check_private_key(cert->get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("--tls-key: does not match --tls-cert ('", files.tls_key,
                                                   "' is not the private key of the certificate in '", files.tls_cert,
                                                   "')"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RelayTls> LoadRelayTls(const RelayTlsFiles& files, const TransportFiles& agent,
                                      const std::string& default_name) {
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError(files.cert.empty() ? "--relay-tls-key needs --relay-tls-cert"
                                                         : "--relay-tls-cert needs --relay-tls-key");
  }
  if (files.cert.empty()) {
    if (!files.name.empty()) return absl::InvalidArgumentError("--relay-tls-name needs --relay-tls-cert");
    return RelayTls();
  }
  if (agent.tls_ca.empty()) {
    return absl::InvalidArgumentError(
        "--relay-tls-cert needs --tls-ca (members verify a relay with the CA they trust the coordinator with; the "
        "relays of a plaintext fleet are plaintext)");
  }
  // The checks of a server's --tls-cert/--tls-key, worded with this agent's flags.
  TransportFiles f;
  f.tls_cert = files.cert;
  f.tls_key = files.key;
  absl::StatusOr<Transport> loaded = LoadTransport(f, /*server=*/true);
  absl::Status s = loaded.ok() ? CheckTlsFiles(f, *loaded) : loaded.status();
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrReplaceAll(s.message(), {{"--tls-", "--relay-tls-"}}));
  }
  RelayTls out;
  out.cert_pem = loaded->cert_pem;
  out.key_pem = loaded->key_pem;
  out.name = files.name.empty() ? default_name : files.name;
  return out;
}

std::string CertificateNameProblem(const std::string& cert_pem, const std::string& name) {
  absl::StatusOr<std::unique_ptr<X509, X509Free>> cert = ParseCertificate(cert_pem, "--relay-tls-cert", "");
  if (!cert.ok()) return std::string(cert.status().message());
  if (X509_check_host(cert->get(), name.data(), name.size(), 0, nullptr) == 1 ||
      X509_check_ip_asc(cert->get(), name.c_str(), 0) == 1) {
    return "";
  }
  std::vector<std::string> held;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert->get(), NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    if (g->type == GEN_DNS) {
      const ASN1_STRING* dns = g->d.dNSName;
      held.push_back(absl::StrCat("DNS:", std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                                                      static_cast<size_t>(ASN1_STRING_length(dns)))));
    } else if (g->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = g->d.iPAddress;
      const unsigned char* b = ASN1_STRING_get0_data(ip);
      held.push_back(ASN1_STRING_length(ip) == 4
                         ? absl::StrCat("IP:", int{b[0]}, ".", int{b[1]}, ".", int{b[2]}, ".", int{b[3]})
                         : std::string("IP:(IPv6)"));
    }
  }
  if (names != nullptr) GENERAL_NAMES_free(names);
  ERR_clear_error();
  return absl::StrCat("the certificate holds ", held.empty() ? "no subjectAltName" : absl::StrJoin(held, ", "),
                      ", not '", name, "'");
}

}  // namespace dlio
