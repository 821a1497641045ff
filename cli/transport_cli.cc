#include "cli/transport_cli.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "absl/strings/str_cat.h"

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

}  // namespace dlio
