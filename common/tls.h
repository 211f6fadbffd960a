// TLS over a byte stream its owner moves (OpenSSL with memory BIOs): the owner feeds it the bytes
// its socket read and sends the bytes it produced, so the socket's I/O, its batching and its
// bounds stay the owner's (src/base/stream_port.h's event loops, transport/tcp/client.h's
// sender and reader), and TLS adds a copy of each byte and its cipher, nothing else.
//
//   - TlsContext: the settings of one side, made once from PEM files: a server's certificate
//     and key, asking for (and verifying, when presented) client certificates signed by a CA,
//     as the gRPC port's (src/security/auth.h ServerTlsCredentials); a client's CA, checking the
//     server's certificate against the name it dialled, and its own certificate when it has one.
//     TLS 1.2 at least; no session tickets (connections are long-lived, never resumed).
//   - TlsStream: one connection's state. Feed the peer's bytes, Handshake until it says done,
//     then Read plaintext out and Write plaintext in; TakeOutput has what to send after each.
//
// Thread-safety: a TlsContext is shared by any threads; a TlsStream is used by one thread at a
// time (its owner's lock).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

struct ssl_st;
struct ssl_ctx_st;

namespace basalt {

// The error OpenSSL last queued on this thread ("unknown error" when none), and clears the queue.
std::string OpenSslError();
// The common name of the certificate the handshake of `ssl` verified; "" when none was.
std::string VerifiedCommonName(ssl_st* ssl);

class TlsContext {
 public:
  // A server's: `cert` (chain) and `key` PEM files; `ca` ("" none) the CA whose client
  // certificates are asked for and verified when given. InvalidArgument naming the file.
  static absl::StatusOr<std::shared_ptr<TlsContext>> Server(const std::string& cert, const std::string& key,
                                                            const std::string& ca);
  // A client's: the server's certificate must be signed by `ca`; `cert` and `key` ("" none) its
  // own certificate. InvalidArgument naming the file.
  static absl::StatusOr<std::shared_ptr<TlsContext>> Client(const std::string& ca, const std::string& cert,
                                                            const std::string& key);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  bool server() const { return server_; }
  ssl_ctx_st* get() const { return ctx_; }

 private:
  TlsContext(ssl_ctx_st* ctx, bool server) : ctx_(ctx), server_(server) {}
  ssl_ctx_st* const ctx_;
  const bool server_;
};

class TlsStream {
 public:
  // A server's stream, or a client's that checks the server's certificate names `server_name`
  // (a host name, or an IP address checked against the certificate's IP names; required).
  static absl::StatusOr<std::unique_ptr<TlsStream>> New(std::shared_ptr<const TlsContext> context,
                                                        const std::string& server_name = "");
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Bytes read from the peer.
  void Feed(std::string_view cipher);
  // Goes on with the handshake as far as what was fed allows: true once it is done.
  // Unauthenticated saying why when it failed (the peer is not TLS, a certificate that does not
  // verify, no protocol in common).
  absl::StatusOr<bool> Handshake();
  bool handshake_done() const;
  // Plaintext the peer sent, up to out.size() bytes; 0 when none is whole yet (feed more), and
  // when the peer ended TLS (closed() then says so). DataLoss when the stream is not TLS records
  // any more (a record that does not authenticate, an alert).
  absl::StatusOr<size_t> Read(absl::Span<char> out);
  bool closed() const { return closed_; }
  // Seals `plain` (after the handshake) for the peer.
  absl::Status Write(std::string_view plain);
  // Appends to *out what is to be sent to the peer (handshake messages, sealed records).
  void TakeOutput(std::string* out);
  // After the handshake: the common name of the peer's certificate when the context's CA
  // verified it (VerifiedCommonName); "" when the peer sent none.
  std::string PeerCommonName() const { return VerifiedCommonName(ssl_); }

 private:
  TlsStream(std::shared_ptr<const TlsContext> context, ssl_st* ssl) : context_(std::move(context)), ssl_(ssl) {}
  const std::shared_ptr<const TlsContext> context_;
  ssl_st* const ssl_;
  bool closed_ = false;
};

}  // namespace basalt
