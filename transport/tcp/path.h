// The TCP DataPath (issue 51; docs/DESIGN.md §4): Get and Mutate to one server over the TCP fast
// path (transport/tcp/client.h), plugged into the client's NetworkSelector through
// SelectorOptions::tcp_factory, where verbs cannot be had.
//
//   - The session comes from the server over gRPC (OpenVerbsSession with FAST_PATH_TCP); a
//     server that offers no TCP path (tcp=false, or one that predates it) leaves that server to
//     gRPC alone, or, when TCP is `required`, makes the factory fail. With TLS on the client's
//     connection (ClientSecurity::tls_ca) the TCP connections are TLS too.
//   - A request too large for the server's frames, or a Get reply too large for the client's,
//     goes over gRPC (counted as oversized).
//   - A transport failure marks the path down for `retry`, and the call is repeated over gRPC
//     at once; after `retry` TCP is tried again (a new session if the server restarted).
//   - Async calls finish on the connection's reader thread; one started from a reader thread
//     (an async call's callback) that the client cannot start without waiting runs on the
//     path's small pool.
#pragma once

#include "absl/time/time.h"
#include "transport/selector.h"
#include "transport/tcp/client.h"

namespace basalt::tcp {

struct TcpPathOptions {
  TcpClientOptions client;
  absl::Duration retry = absl::Seconds(5);  // how long a failed TCP path stays down
  int async_threads = 2;
  bool required = false;  // TransportChoice::kTcp: the factory fails when the TCP path cannot be had
};

FastPathFactory MakeTcpPathFactory(const TcpPathOptions& options);

}  // namespace basalt::tcp
