#include "common/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"

namespace basalt {
namespace {

// The text of error `e` ("unknown error" for 0), and clears this thread's queue.
std::string ErrorText(unsigned long e) {
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

// A context with what both sides share: TLS 1.2 at least, no tickets.
SSL_CTX* NewContext(const SSL_METHOD* method) {
  SSL_CTX* ctx = SSL_CTX_new(method);
  if (ctx == nullptr) return nullptr;
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 || SSL_CTX_set_num_tickets(ctx, 0) != 1) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  return ctx;
}

absl::Status Files(SSL_CTX* ctx, const std::string& cert, const std::string& key) {
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("certificate ", cert, ", key ", key, ": ", OpenSslError()));
  }
  return absl::OkStatus();
}

absl::Status Ca(SSL_CTX* ctx, const std::string& ca) {
  if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("CA ", ca, ": ", OpenSslError()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string OpenSslError() { return ErrorText(ERR_get_error()); }

std::string VerifiedCommonName(ssl_st* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string cn;
  if (SSL_get_verify_result(ssl) == X509_V_OK) {
    char buf[256];
    const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf));
    if (n > 0) cn.assign(buf, static_cast<size_t>(n));
  }
  X509_free(cert);
  return cn;
}

absl::StatusOr<std::shared_ptr<TlsContext>> TlsContext::Server(const std::string& cert, const std::string& key,
                                                               const std::string& ca) {
  SSL_CTX* ctx = NewContext(TLS_server_method());
  if (ctx == nullptr) return absl::InternalError(absl::StrCat("TLS: ", OpenSslError()));
  std::shared_ptr<TlsContext> context(new TlsContext(ctx, true));
  if (absl::Status s = Files(ctx, cert, key); !s.ok()) return s;
  if (!ca.empty()) {
    if (absl::Status s = Ca(ctx, ca); !s.ok()) return s;
    SSL_CTX_set_client_CA_list(ctx, SSL_load_client_CA_file(ca.c_str()));
    // Asked for, verified when given, not required: as the gRPC port (a token authenticates too).
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  return context;
}

absl::StatusOr<std::shared_ptr<TlsContext>> TlsContext::Client(const std::string& ca, const std::string& cert,
                                                               const std::string& key) {
  SSL_CTX* ctx = NewContext(TLS_client_method());
  if (ctx == nullptr) return absl::InternalError(absl::StrCat("TLS: ", OpenSslError()));
  std::shared_ptr<TlsContext> context(new TlsContext(ctx, false));
  if (absl::Status s = Ca(ctx, ca); !s.ok()) return s;
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!cert.empty() || !key.empty()) {
    if (absl::Status s = Files(ctx, cert, key); !s.ok()) return s;
  }
  return context;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

absl::StatusOr<std::unique_ptr<TlsStream>> TlsStream::New(std::shared_ptr<const TlsContext> context,
                                                          const std::string& server_name) {
  SSL* ssl = SSL_new(context->get());
  if (ssl == nullptr) return absl::InternalError(absl::StrCat("TLS: ", OpenSslError()));
  const bool server = context->server();
  std::unique_ptr<TlsStream> stream(new TlsStream(std::move(context), ssl));
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  if (in == nullptr || out == nullptr) {
    BIO_free(in);
    BIO_free(out);
    return absl::ResourceExhaustedError("TLS: no memory for a connection's buffers");
  }
  BIO_set_mem_eof_return(in, -1);  // empty: "read again later", not the end
  BIO_set_mem_eof_return(out, -1);
  SSL_set_bio(ssl, in, out);
  // One BIO_read a record, not two (its header, then its body): what it reads past the record is
  // held, and Read asks for it (SSL_has_pending). (Not on the context: the HTTP port's socket
  // BIOs would hold bytes its epoll does not see.)
  SSL_set_read_ahead(ssl, 1);
  if (server) {
    SSL_set_accept_state(ssl);
    return stream;
  }
  SSL_set_connect_state(ssl);
  // Without a name any certificate the CA signed would do.
  if (server_name.empty()) return absl::InvalidArgumentError("TLS: a client must name the server it checks");
  // An address is checked against the certificate's IP names, a host name against its DNS names
  // (and sent as SNI), as gRPC checks the gRPC port's.
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str()) != 1) {
    if (SSL_set1_host(ssl, server_name.c_str()) != 1 ||
        SSL_set_tlsext_host_name(ssl, const_cast<char*>(server_name.c_str())) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("TLS: server name '", server_name, "': ", OpenSslError()));
    }
  }
  return stream;
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

void TlsStream::Feed(std::string_view cipher) {
  while (!cipher.empty()) {
    const int n =
        BIO_write(SSL_get_rbio(ssl_), cipher.data(), static_cast<int>(std::min<size_t>(cipher.size(), INT_MAX)));
    if (n <= 0) return;  // a memory BIO takes all (or the process is out of memory)
    cipher.remove_prefix(static_cast<size_t>(n));
  }
}

absl::StatusOr<bool> TlsStream::Handshake() {
  if (SSL_is_init_finished(ssl_)) return true;
  ERR_clear_error();  // SSL_get_error reads the queue: nothing of an earlier call may be left in it
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) return true;
  const int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return false;
  const long verify = SSL_get_verify_result(ssl_);
  std::string why = OpenSslError();
  if (verify != X509_V_OK) absl::StrAppend(&why, " (", X509_verify_cert_error_string(verify), ")");
  return absl::UnauthenticatedError(absl::StrCat("TLS handshake failed: ", why));
}

bool TlsStream::handshake_done() const { return SSL_is_init_finished(ssl_) == 1; }

absl::StatusOr<size_t> TlsStream::Read(absl::Span<char> out) {
  if (out.empty() || closed_) return 0;
  // Nothing fed and nothing held: no record can be whole, so OpenSSL is not asked (an SSL_read
  // that only says "read again", with the error queue cleared before it, costs more than the
  // record's own decryption: a third of TLS's cost per call, BENCHMARKS.md section 25). A part
  // of a record it holds (SSL_has_pending) is asked about each time, as something fed is.
  if (SSL_has_pending(ssl_) == 0 && BIO_ctrl_pending(SSL_get_rbio(ssl_)) == 0) return 0;
  ERR_clear_error();
  const int r = SSL_read(ssl_, out.data(), static_cast<int>(std::min<size_t>(out.size(), INT_MAX)));
  if (r > 0) return static_cast<size_t>(r);
  const int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
  if (e == SSL_ERROR_ZERO_RETURN) {
    closed_ = true;
    return 0;
  }
  return absl::DataLossError(absl::StrCat("TLS: ", OpenSslError()));
}

absl::Status TlsStream::Write(std::string_view plain) {
  while (!plain.empty()) {
    // (SSL_get_error is not asked, so the queue need not be cleared before: the error this call
    // queued last says why it failed.)
    const int n = SSL_write(ssl_, plain.data(), static_cast<int>(std::min<size_t>(plain.size(), 1 << 30)));
    if (n <= 0) {
      return absl::FailedPreconditionError(absl::StrCat("TLS: cannot seal: ", ErrorText(ERR_peek_last_error())));
    }
    plain.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

void TlsStream::TakeOutput(std::string* out) {
  BIO* wbio = SSL_get_wbio(ssl_);
  for (size_t pending = BIO_ctrl_pending(wbio); pending > 0; pending = BIO_ctrl_pending(wbio)) {
    const size_t at = out->size();
    out->resize(at + pending);
    const int n = BIO_read(wbio, out->data() + at, static_cast<int>(std::min<size_t>(pending, INT_MAX)));
    out->resize(at + static_cast<size_t>(std::max(n, 0)));
    if (n <= 0) return;
  }
}

}  // namespace basalt
