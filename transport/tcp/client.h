// The client side of the TCP fast path (issue 51; docs/DESIGN.md §4; the server is
// src/front/tcp_front.h): a few long-lived connections to one server, each carrying verbs frames
// (transport/verbs/frame.h) both ways, pipelined: any number of calls in flight on a connection,
// each reply matched to its call by the request id it echoes.
//
//   - A session comes first, over gRPC (the caller's SessionSource: OpenVerbsSession with
//     FAST_PATH_TCP); each connection starts with a ConnectData proving it. With TLS the
//     connection's handshake comes before it, within connect_timeout, and every byte after is
//     sealed: the sender seals the batch it sends, the reader opens what it reads (one TLS state
//     per connection, under its own lock).
//   - Writes are batched: a caller appends its frame to its connection's queue, and whichever
//     caller finds no one sending sends everything queued, in one send, until the queue is
//     empty, so calls that arrive together leave together.
//   - One reader thread per connection reads what arrived (one recv for many replies), and
//     finishes each call: a sync caller is woken, an async call's Done runs on the reader.
//   - A deadline passed ends its call with DeadlineExceeded (its reply, if it comes, is
//     dropped). A connection that breaks fails every call on it with Unavailable and
//     transport_failed set (the caller may repeat it elsewhere: the path does, over gRPC), and
//     is opened again by the next call.
//
// Thread-safety: Call and CallAsync from any thread; a sync Call from a reader thread (an async
// call's Done) is refused (it would wait for the thread it blocks): OnReaderThread says so.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/tls.h"
#include "transport/verbs/session.h"

namespace basalt::tcp {

struct TcpClientOptions {
  int connections = 2;  // per server
  absl::Duration connect_timeout = absl::Seconds(5);
  uint32_t max_reply_bytes = 64 << 20;  // told to the server: a larger Get reply is too large
  // TLS (a client's TlsContext: the CA, the client's certificate): every connection is TLS, the
  // server's certificate checked against `tls_server_name`, or, empty, the gRPC target's host
  // (Open's `fallback_host`: the port serves the gRPC port's certificate). Null: plain text.
  std::shared_ptr<const TlsContext> tls;
  std::string tls_server_name;
};

// An async call: Encode writes its request frame; Done gets its reply frame (empty when there is
// none: a failure, whose status says why) on the connection's reader thread, or on the caller's
// when it fails before it is sent.
class TcpCall {
 public:
  virtual ~TcpCall() = default;
  // Encodes the request for `id` into `out`; ResourceExhausted when it does not fit (the
  // client then tries a buffer as large as the session allows, and fails the call oversized).
  virtual absl::StatusOr<size_t> Encode(uint64_t id, absl::Span<uint8_t> out) = 0;
  virtual void Done(uint64_t id, absl::Span<const uint8_t> reply, absl::Status status, bool transport_failed) = 0;
  absl::Time deadline = absl::InfiniteFuture();
};

struct TcpClientStats {
  uint64_t connects = 0;
  uint64_t connections_open = 0;
  uint64_t failures = 0;  // calls failed by a broken connection
  uint64_t sessions = 0;
};

class TcpClient {
 public:
  using SessionSource = std::function<absl::StatusOr<verbs::VerbsSession>()>;

  // Fetches a session and opens the connections. The session's address may be a wildcard
  // ("0.0.0.0", "::", empty): then `fallback_host` (the host the gRPC target names) is dialled.
  static absl::StatusOr<std::unique_ptr<TcpClient>> Open(SessionSource sessions, std::string fallback_host,
                                                         const TcpClientOptions& options);
  ~TcpClient();
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  // Sends the call; its Done runs once, always. `oversized` calls (a request larger than the
  // server takes) are failed with ResourceExhausted and transport_failed false.
  void CallAsync(std::unique_ptr<TcpCall> call);
  // A call and its wait: `decode` reads the reply frame. `failed`: the transport failed (the
  // status says how); `oversized`: the request was too large for the path.
  absl::Status Call(const std::function<absl::StatusOr<size_t>(uint64_t, absl::Span<uint8_t>)>& encode,
                    const std::function<absl::Status(uint64_t, absl::Span<const uint8_t>)>& decode,
                    absl::Time deadline, bool* failed, bool* oversized);

  // Whether this thread is one of a client's readers (where a sync call must not wait).
  static bool OnReaderThread();

  TcpClientStats stats() const;

  struct Connection;

 private:
  TcpClient(SessionSource sessions, std::string fallback_host, const TcpClientOptions& options);
  absl::StatusOr<std::shared_ptr<Connection>> Pick();
  absl::StatusOr<std::shared_ptr<Connection>> Connect();
  absl::StatusOr<std::unique_ptr<TlsStream>> Handshake(int fd, absl::Time deadline) const;

  const SessionSource sessions_;
  const std::string fallback_host_;
  const TcpClientOptions options_;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace basalt::tcp
