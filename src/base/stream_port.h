// A TCP port of long-lived, pipelined connections served by event loops: the I/O that the HBase
// port (src/front/hbase/hbase_port.h, HBase's RPC framing) and the TCP fast path
// (src/front/tcp_front.h, verbs frames) share. What a connection's bytes mean is the protocol's
// (a StreamSession per connection); the loops, the bounds and the way answers go out are this.
//
// Event-driven, not a thread per connection: loop_threads threads each wait in epoll on their
// share of the connections (level-triggered, non-blocking sockets). An answer is written at
// once by the thread that gives it when nothing is queued before it on its connection; what
// the socket does not take is queued, and the connection's loop writes it when the socket is
// writable again. While the loop processes what it read, answers wait, and leave together in
// one send when it is done: pipelined calls answered inline cost one send, not one each.
//
// Bounds (as the gRPC front end's, src/front/grpc_server.h):
//   - connections: past max_connections a new one is sent the protocol's connection error
//     saying why and is closed; the Acceptor (acceptor.h) keeps reserved_fds descriptors free
//     and survives EMFILE;
//   - calls in flight, port-wide: a session admits each call (AdmitCall) and answers at once
//     with its protocol's "busy" past max_calls_in_flight;
//   - a stream the session cannot read (not its protocol, a frame past its bound) is answered
//     with the protocol's connection error and closed once that is written;
//   - reply bytes queued on one connection: past max_queued_reply_bytes the connection is not
//     read until its client takes them, so a client that stops reading stops itself only;
//   - reply bytes queued on all connections together: past max_reply_bytes_in_flight a session
//     refuses new calls with its protocol's "busy" (over_budget) until clients take them, as the
//     gRPC front end does past its own (the setting bounds each front end);
//   - a connection its session calls expired (one that never proved itself) is closed, so is one
//     whose queued answers have not moved for stalled_write_timeout, and TCP keepalive (60 s
//     idle, then 6 probes 10 s apart) ends those whose client vanished.
//
// TLS (Options::tls, common/tls.h): the socket's bytes are TLS records; the session reads and
// answers plaintext, the connection decrypts what it reads and seals what it sends, under its
// lock (one TLS state per connection, read by its loop and written by any thread). A handshake
// that fails closes the connection (the client has the TLS alert); refusals at accept time are
// a close, not the protocol's error, which the client could not read in the clear. Plaintext
// read and not yet taken by the session (its Space full) is buffered by TLS, where epoll cannot
// see it: the loop is woken for it as for calls left by a pause.
//
// Thread-safety: Start and Shutdown from one thread; sessions run on their loop's thread;
// StreamConnection::Queue and Answer from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/tls.h"

namespace basalt::server {

class StreamConnection;  // stream_port.cc

// Counters of a port, read by /metrics and the tests.
struct PortCounters {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_refused{0};  // past max_connections or by the Acceptor
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> calls_refused_busy{0};   // past max_calls_in_flight
  std::atomic<uint64_t> calls_in_flight{0};
  std::atomic<uint64_t> reads_paused{0};         // times a connection's reading was paused
  std::atomic<int64_t> queued_bytes{0};          // answers queued on every connection, not yet sent
  std::atomic<uint64_t> calls_refused_memory{0};  // refused past max_reply_bytes_in_flight
};

// The protocol's side of one connection, on its loop's thread: where its bytes are read to, and
// what is done with them. Under TLS, Space and Commit run under the connection's lock (the TLS
// state is read there): they must not call the connection's methods; Process runs outside it.
class StreamSession {
 public:
  virtual ~StreamSession() = default;
  // Where the next recv writes, valid until Commit; empty when the session holds all it may
  // until Process has taken some.
  virtual absl::Span<char> Space() = 0;
  // `n` bytes were written at the start of the last Space().
  virtual void Commit(size_t n) = 0;
  // Hands on every whole call read so far (each answered through `connection`, now or from
  // another thread), stopping early while connection->read_paused(). An error: the stream
  // cannot be read further; the client is sent the protocol's connection error with it, and
  // the connection closes once that is written.
  virtual absl::Status Process(const std::shared_ptr<StreamConnection>& connection) = 0;
  // Whether the connection has outlived what its protocol allows it before it says anything
  // (the TCP path's proof): the loop closes it. Asked about every 250 ms.
  virtual bool Expired(absl::Time now) const {
    (void)now;
    return false;
  }
};

class StreamPort {
 public:
  struct Options {
    std::string listen = "127.0.0.1:0";
    int loop_threads = 1;
    int max_connections = 1000;
    int max_calls_in_flight = 1000;
    std::string calls_in_flight_setting = "max_calls_in_flight";  // its name in refusals
    int64_t max_queued_reply_bytes = 64 << 20;
    int64_t max_reply_bytes_in_flight = 256 << 20;  // all connections together; 0: no bound
    int reserved_fds = 64;
    // A connection whose queued answers have not moved for this long is closed: its client
    // stopped reading, and would otherwise hold its slot and its queued bytes for ever.
    absl::Duration stalled_write_timeout = absl::Seconds(60);
    std::function<void(std::string_view)> log;  // refusals and connection errors; empty: stderr
    std::string name = "port";                  // in logs and metric help: "HBase port"
    std::shared_ptr<const TlsContext> tls;      // a server's (TlsContext::Server); null: plain text
  };
  struct Protocol {
    // A new connection's session.
    std::function<std::unique_ptr<StreamSession>()> new_session;
    // The bytes that tell a client why its connection ends (refused, or its stream unreadable).
    std::function<std::string(const absl::Status&)> connection_error;
  };

  // Binds and starts the loops. Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<StreamPort>> Start(const Options& options, Protocol protocol);
  ~StreamPort();  // Shutdown()s
  StreamPort(const StreamPort&) = delete;
  StreamPort& operator=(const StreamPort&) = delete;

  int port() const;
  const PortCounters& counters() const;
  // The counters on /metrics, named `prefix`_connections and so on, read at each scrape; the
  // registry must not be scraped after the port is destroyed.
  void RegisterMetrics(metrics::Registry* registry, std::string_view prefix) const;

  // Stops accepting, closes every connection (answers not yet written are dropped; clients
  // retry them) and joins the loops. Idempotent.
  void Shutdown();

  struct Impl;

 private:
  explicit StreamPort(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One client's connection. Its loop reads it and closes it; any thread queues answers on it
// (under mu_, which also orders the epoll interest changes). It may outlive its port (an answer
// given after Shutdown is dropped), so it shares the port's settings and counters.
class StreamConnection {
 public:
  struct Port;  // the port's options, protocol and counters (stream_port.cc)
  // `tls`: the connection's TLS state (null: plain text).
  StreamConnection(int fd, std::string peer, int epoll_fd, std::shared_ptr<Port> port,
                   std::unique_ptr<StreamSession> session, std::unique_ptr<TlsStream> tls);
  StreamConnection(const StreamConnection&) = delete;
  StreamConnection& operator=(const StreamConnection&) = delete;

  // "host:port" of the client, for logs.
  const std::string& peer() const { return peer_; }
  StreamSession* session() const { return session_.get(); }
  // The common name of the client's certificate, verified by the port's CA (tls_ca): "" in
  // plain text, without a certificate, and before the TLS handshake is done (a session's
  // Process runs after it).
  std::string certificate_user() ABSL_LOCKS_EXCLUDED(mu_);
  PortCounters& counters() const;

  // Counts a call and admits it (OK), unless max_calls_in_flight are in flight (Unavailable
  // "server busy: N calls in flight") or the port's queued answers are past
  // max_reply_bytes_in_flight (ResourceExhausted saying so); a refusal is counted, and the session
  // answers it with its protocol's "busy" through Queue, at once. An admitted call is answered
  // with Answer, exactly once.
  absl::Status AdmitCall();
  // The answer of an admitted call: counted out of flight (before the client can have it, so
  // a client that reads it and then asks the counters never finds its call still in flight),
  // then queued.
  void Answer(std::string_view frame);
  // Any thread: writes `frame` now if nothing is queued before it, and queues what the socket
  // does not take. A connection closed meanwhile drops it.
  void Queue(std::string_view frame);
  // Whether reading waits until the client takes its answers (past max_queued_reply_bytes).
  bool read_paused();

  // The loop's: registers the socket with its epoll (reading); on EPOLLOUT writes what is
  // queued; on EPOLLIN reads what the socket has (a bounded amount per round, so one busy
  // connection cannot starve the others) and has the session process it; closes the socket.
  // OnWritable and OnReadable return false when the connection is to be closed now.
  bool Register();
  bool OnWritable();
  bool OnReadable(const std::shared_ptr<StreamConnection>& self);
  void Close();
  // Whether answers are queued, or calls wait for the socket to take more, and nothing has left
  // for `timeout` (as the loop's sweeps, at `now`, have seen it).
  bool Stalled(absl::Time now, absl::Duration timeout);

 private:
  size_t Pending() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return out_.size() - out_offset_; }
  uint32_t Interest() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `frame` after what is queued, sealed under TLS; false when it cannot be sealed.
  bool AppendLocked(std::string_view frame) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends what is queued as far as the socket takes it; false when a write failed.
  bool SendQueued() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Brings the port's queued_bytes in line with what this connection has queued now.
  void Recount() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SendQueued, then what follows from it: false when the connection is to be closed (a write
  // failed, or a closing connection's last answer left); unpauses reading, sets the interest.
  bool FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads what the socket has into the session, plaintext, in up to four recvs; false when the
  // connection is to be closed now (a read failed, a TLS handshake or record). `closed_by_client`:
  // the client ended its side; `full`: TLS holds plaintext the session had no room for.
  bool ReadPlain(bool* closed_by_client);
  bool ReadTls(bool* closed_by_client, bool* full);
  // The plaintext TLS holds, into the session as far as it has room.
  bool DrainTls(bool* closed_by_client, bool* full) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateInterest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int fd_;
  const std::string peer_;
  const int epoll_fd_;
  const std::shared_ptr<Port> port_;
  const std::unique_ptr<StreamSession> session_;  // the loop's
  std::vector<char> cipher_in_;                   // the loop's: TLS records read

  absl::Mutex mu_;
  std::string out_ ABSL_GUARDED_BY(mu_);
  size_t out_offset_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;             // a write failed
  bool paused_ ABSL_GUARDED_BY(mu_) = false;             // too much queued: not read
  bool close_after_flush_ ABSL_GUARDED_BY(mu_) = false;  // refused: closes once written
  bool corked_ ABSL_GUARDED_BY(mu_) = false;             // the loop processes: answers wait for it
  bool nudge_ ABSL_GUARDED_BY(mu_) = false;              // calls read and left: wake the loop for them
  uint32_t registered_ ABSL_GUARDED_BY(mu_);             // the epoll interest set
  // Bytes written; and, for the sweeps (Stalled), what they saw of it and since when it waits.
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t swept_sent_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t counted_ ABSL_GUARDED_BY(mu_) = 0;  // queued here, in the port's queued_bytes
  absl::Time waiting_since_ ABSL_GUARDED_BY(mu_);
  const std::unique_ptr<TlsStream> tls_ ABSL_PT_GUARDED_BY(mu_);  // null: plain text
  // TLS: the answers given while corked, sealed together (one record, not one per answer) when
  // the loop flushes them. Counted with the queued bytes.
  std::string seal_later_ ABSL_GUARDED_BY(mu_);
  std::string certificate_user_ ABSL_GUARDED_BY(mu_);  // set once the handshake is done
};

}  // namespace basalt::server
