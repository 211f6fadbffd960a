// The HBase port's I/O: a TCP listener and event loops that read HBase's RPC framing
// (rpc_codec.h) off each connection and hand each whole call to a handler, which answers it
// through the call's Responder, on any thread and in any order.
//
// The loops, bounds and queued answers are the StreamPort's (src/base/stream_port.h); this is
// HBase's side of them: a connection's bytes read as HBase's RPC framing (its preamble, its
// connection header, then calls), a call past max_calls_in_flight answered at once with
// CallQueueTooBigException (which the HBase client retries after a pause), a connection
// refused or unreadable told so with HBase's FatalConnectionException, and a frame (a call
// with its cell block) longer than max_request_bytes ending its connection.
//
// Thread-safety: Start and Shutdown from one thread; the handler is called on the loop
// threads; Responder::Send from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "src/base/stream_port.h"
#include "src/security/access_control.h"
#include "src/front/hbase/rpc_codec.h"

namespace basalt::hbase {

using server::PortCounters;

// The way back for one call. Send exactly once; a Responder dropped without sending answers
// the call with an IOException saying so (a call is never left unanswered).
class Responder {
 public:
  Responder(std::shared_ptr<server::StreamConnection> connection, uint32_t call_id);
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  uint32_t call_id() const { return call_id_; }
  // The connection's header (its service, its user, its cell block codec).
  const ConnectionHeader& connection_header() const;
  // Who the connection's calls are from (Options::authenticate); null without authentication.
  const server::Identity* caller() const;
  // A short name of the peer, "host:port", for logs.
  const std::string& peer() const;
  // Queues the answer's frame (EncodeResponse or EncodeException for this call id). A
  // connection closed meanwhile drops it.
  void Send(std::string frame);

 private:
  std::shared_ptr<server::StreamConnection> connection_;
  const uint32_t call_id_;
  bool sent_ = false;
};

class HBasePort {
 public:
  // The StreamPort's (listen, loops, bounds, log), and the longest frame read.
  struct Options : server::StreamPort::Options {
    uint32_t max_request_bytes = 64 << 20;
    // Who a connection's calls are from, decided once when its header is read, from its TLS
    // client certificate's verified common name ("" none) and the header (its user); `peer` for
    // logs. A refusal ends the connection, told why (FatalConnectionException). Empty: no
    // authentication (Responder::caller is null).
    using Authenticate = std::function<absl::StatusOr<server::Identity>(
        const ConnectionHeader& header, std::string_view certificate_user, std::string_view peer)>;
    Authenticate authenticate;
  };
  // A whole call of a connection whose header has been read. Called on a loop thread: it may
  // answer inline or hand the Responder to another thread.
  using Handler = std::function<void(Call call, std::unique_ptr<Responder> responder)>;

  // Binds and starts the loops. Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HBasePort>> Start(const Options& options, Handler handler);
  ~HBasePort();  // Shutdown()s
  HBasePort(const HBasePort&) = delete;
  HBasePort& operator=(const HBasePort&) = delete;

  int port() const;
  const PortCounters& counters() const;
  // The counters on /metrics (basalt_hbase_*), read at each scrape; the registry must not be
  // scraped after the port is destroyed.
  void RegisterMetrics(metrics::Registry* registry) const;

  // Stops accepting, closes every connection (answers not yet written are dropped; HBase
  // clients retry them elsewhere) and joins the loops. Idempotent.
  void Shutdown();

  struct Impl;

 private:
  explicit HBasePort(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace basalt::hbase
