// basalt-server's TCP fast path (issue 51; docs/DESIGN.md §4): Get and Mutate in the verbs
// transport's frames (transport/verbs/frame.h) over long-lived, pipelined TCP connections, for
// clients on hosts without RDMA. One format and one dispatch for both fast paths: a request is
// decoded by DecodeRequest and served by the same handlers as over verbs (VerbsHandlersFor, so
// authorisation, quotas and metrics are theirs), Gets inline on the port's event loops, Mutates
// on the handler pool shared with gRPC.
//
// The connection: a client first gets a session over gRPC (OpenVerbsSession with path
// FAST_PATH_TCP: a token, a key, an expiry, issued to its caller, as for verbs), then opens
// connections, each starting with a ConnectData (transport/verbs/session.h: the token, the
// largest reply the client takes, a fresh nonce, a MAC with the session's key). Then frames
// follow back to back, each delimited by its header (transport/tcp/frame_stream.h). Replies go
// in the order they are ready, each naming its request's id.
//
// TLS: with tls_cert every connection is TLS from its first byte (the gRPC port's certificate;
// client certificates signed by tls_ca asked for and verified when given, as there), and the
// ConnectData and the frames travel inside it. Who calls is the session's principal: the
// identity the gRPC port authenticated when it issued the token, which only ever travels
// inside TLS. A client that speaks plaintext to a TLS port fails the handshake and is closed.
//
// Refusals: a ConnectData that is not one, a session never issued, expired, a MAC not the
// key's or a nonce seen before ends the connection with one error reply of request id 0 (its
// status PermissionDenied, saying why); so does a proof of a user who holds
// max_connections_per_owner connections already (ResourceExhausted), a stream that is not
// frames, or a frame longer than max_request_bytes. A connection whose proof is not whole within
// hello_timeout is closed (counted with the refused). A frame that is a frame but does not decode
// gets an InvalidArgument reply to its id, and the connection goes on. A call past
// max_calls_in_flight is answered Unavailable at once ("server busy"), which the client retries;
// one while the port's queued replies are past max_reply_bytes_in_flight ResourceExhausted. The
// loops, the connection cap and the queued-reply bounds are the StreamPort's
// (src/base/stream_port.h).
//
// A Get reply is as large as its row, up to the smaller of max_reply_bytes and what the
// client's ConnectData says it takes; a larger one is a too-large reply, and the client asks
// gRPC. Verbs' rendezvous and reply buffers are RDMA's and refused here (a TCP frame may be as
// large as max_request_bytes anyway).
//
// Thread-safety: NewSession and stats from any thread; Start and Shutdown from one.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "src/base/config.h"
#include "src/base/stream_port.h"
#include "src/security/quotas.h"
#include "src/services/service.h"
#include "transport/verbs/server.h"
#include "transport/verbs/session.h"

namespace basalt::server {

struct TcpServerOptions {
  StreamPort::Options port;
  uint32_t max_request_bytes = 64 << 20;  // the longest request frame, header included
  uint64_t max_reply_bytes = 64 << 20;    // the longest Get reply frame
  absl::Duration session_ttl = absl::Minutes(10);
  // A connection that has not sent its whole proof within this is closed (it holds a slot of
  // max_connections, and proved nothing).
  absl::Duration hello_timeout = absl::Seconds(10);
  int max_sessions_per_owner = 0;  // 0: no cap
  int max_connections_per_owner = 0;  // open at once, proved with the owner's sessions; 0: no cap
};

struct TcpServerStats {
  uint64_t connections_open = 0;
  uint64_t requests = 0;
  uint64_t hellos_refused = 0;
  uint64_t malformed_frames = 0;
  uint64_t sessions = 0;
  uint64_t reads_paused = 0;  // times a connection was not read until its client took its replies
  int64_t queued_reply_bytes = 0;     // replies queued for clients that have not taken them yet
  uint64_t calls_refused_memory = 0;  // refused past max_reply_bytes_in_flight
};

class TcpServer {
 public:
  // Listens and starts the loops; Unavailable when the address cannot be bound. `handlers` as
  // the verbs server's (their `schedule` runs the Mutates; empty: inline on the loop).
  static absl::StatusOr<std::unique_ptr<TcpServer>> Start(const TcpServerOptions& options,
                                                          verbs::VerbsHandlers handlers);
  ~TcpServer();
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  // A new session for a client, issued to `principal` (handed to the handlers for every request
  // its connections carry), counted against `owner`'s cap. `address` is what the session tells
  // clients to connect to (the listen host, or the advertised one).
  absl::StatusOr<verbs::VerbsSession> NewSession(std::shared_ptr<const void> principal, const std::string& owner);

  int port() const;
  const std::string& host() const { return host_; }
  TcpServerStats stats() const;
  // basalt_tcp_* on /metrics (the port's connections and calls, refused hellos, malformed
  // frames); the registry must not be scraped after the server is destroyed.
  void RegisterMetrics(metrics::Registry* registry) const;
  void Shutdown();

  struct Impl;

 private:
  TcpServer() = default;
  std::shared_ptr<Impl> impl_;
  std::unique_ptr<StreamPort> port_;
  std::string host_;
};

// tcp=false: nullptr, state "off: tcp=false". Otherwise listens on tcp_listen (empty: the
// listen host, a free port) and fills `control` (OpenVerbsSession with FAST_PATH_TCP, the
// Status counters). `schedule` is the handler pool; Gets and Mutates are counted in `metrics`
// with transport "tcp", authorised with `access` and admitted by `quotas` as over verbs.
// With tls_cert the path is TLS (common/tls.h), with the gRPC port's certificate and tls_ca.
absl::StatusOr<std::unique_ptr<TcpServer>> StartTcp(const ServerConfig& config, DataService* data,
                                                    std::function<void(std::function<void()>)> schedule,
                                                    VerbsControl* control, metrics::Registry* metrics = nullptr,
                                                    const AccessController* access = nullptr,
                                                    Quotas* quotas = nullptr);

}  // namespace basalt::server
