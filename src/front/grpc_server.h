// The gRPC front end of basalt-server: one grpc::Server carrying the Basalt, Admin and Echo
// services, served asynchronously. cq_threads threads (default: one per core) each poll their
// own ServerCompletionQueue, on which a request is pre-armed for every method. Gets, scans and
// echoes run inline on the polling thread that received the call (measured on the 2-vCPU
// machine: an async CQ server with inline handlers beat the sync and callback servers, BENCHMARKS.md §6);
// writes and admin calls run on a pool of handler_threads threads, so a write waiting for its
// fdatasync never holds up reads and concurrent writers share a sync. With 2 CQ threads instead
// of 16, YCSB C with 16 clients went from 17.0K to 19.3K ops/s (BENCHMARKS.md). Scan is a
// server-streaming state machine (one batch written at a time; a failed write means the client
// went away, and the scan stops).
//
// Admission: calls the server has taken and not finished (streams included) are counted; past
// max_concurrent_calls a new call fails at once with RESOURCE_EXHAUSTED "server busy: N calls
// in flight". Calls still queued inside gRPC for a free handler thread are not counted.
//
// Security (auth.h, authorize.h): with TLS gRPC listens itself; with an authenticator each
// call is authenticated when it arrives (UNAUTHENTICATED otherwise), then authorised against
// the access controller before its handler runs (PERMISSION_DENIED, with an audit line).
//
// Quotas (quotas.h): a data call is checked after its authorisation; one past a limit is
// refused with RESOURCE_EXHAUSTED saying how long to wait, as HBase's RpcThrottlingException.
// A scan holds a lease (scanner_lease_ms) renewed by each message its client takes, and one user
// holds at most max_scanners_per_user scans.
//
// Connections: Basalt's Acceptor (acceptor.h) listens and hands each connection to gRPC, so a
// flood of connections past the descriptor limit is refused clearly and accepting resumes once
// descriptors are free (gRPC 1.51's own listener stops for good, CVE-2023-4785).
//
// Thread-safety: Start and Shutdown from one thread; the services are called from the
// handler threads.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "proto/basalt.grpc.pb.h"
#include "common/metrics.h"
#include "src/security/access_control.h"
#include "src/security/auth.h"
#include "src/security/quotas.h"
#include "src/services/service.h"

namespace basalt::server {

class GrpcServer {
 public:
  struct Options {
    std::string listen = "127.0.0.1:0";
    int cq_threads = 0;       // 0: one per core
    int handler_threads = 4;  // the write and admin pool; 0: everything inline on the CQ threads
    int max_concurrent_calls = 1000;
    int max_request_bytes = 64 << 20;
    // The benchmark-only Echo service: off, it answers FAILED_PRECONDITION (a small request
    // must not buy a large reply from every server); on, replies are capped at this size.
    bool enable_echo = false;
    uint32_t echo_max_reply_bytes = 1 << 20;
    // Reply bytes handed to gRPC and not yet taken by their clients, server-wide: past this a
    // call gets RESOURCE_EXHAUSTED ("server busy", which clients retry) instead of its reply.
    int64_t max_reply_bytes_in_flight = 256 << 20;
    // A reply (or scan message) its client has not taken after this long is cancelled: its call
    // slot and bytes are freed (a client that stopped reading, or never grants flow control).
    int64_t stalled_reply_timeout_ms = 30000;
    // Descriptors kept free of connections (acceptor.h); 0: no cap below the limit.
    int reserved_fds = 64;
    std::function<void(std::string_view)> log;  // refused connections; empty: stderr
    // Asked first for every call; a call it refuses gets its status (a master that is no longer
    // active refuses everything, naming the active one). Empty: every call admitted.
    std::function<absl::Status()> admit;
    // Where calls are counted (server_metrics.h: requests, errors, bytes per method, latency of
    // the data methods); null: not counted.
    metrics::Registry* metrics = nullptr;
    // TLS (auth.h ServerTlsCredentials): gRPC then listens itself (TLS cannot be handed a socket
    // Basalt accepted, so the Acceptor's descriptor cap does not apply); null: plain text.
    std::shared_ptr<grpc::ServerCredentials> tls;
    // Every call authenticated (authn) and then authorised (access, authorize.h) before it runs;
    // null: neither. The access controller also answers Grant, Revoke, UserPermissions; it and
    // the authenticator must outlive the server.
    const Authenticator* authn = nullptr;
    AccessController* access = nullptr;
    // The quotas every data call passes (quotas.h), which also answer SetQuota and ListQuotas;
    // null: none, and those calls are refused.
    Quotas* quotas = nullptr;
    // A scan whose next message its client has not taken for this long is closed (HBase's
    // scanner lease, hbase.client.scanner.timeout.period, 60 s). Unary replies wait
    // stalled_reply_timeout_ms.
    int64_t scanner_lease_ms = 60000;
    // Scans one authenticated user may hold open at once; past it a new one is refused with
    // RESOURCE_EXHAUSTED (0: no cap). Without authentication there are no users to count.
    int max_scanners_per_user = 100;
  };

  // The services and counters must outlive the server.
  GrpcServer(const Options& options, DataService* data, AdminService* admin, ServerCounters* counters);
  // Shuts down (with no grace) if Shutdown was not called.
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Binds and starts serving. Unavailable when the address cannot be bound, InvalidArgument
  // when it cannot be parsed.
  absl::Status Start();
  int port() const { return port_; }

  // Runs a task on the write/admin handler pool (after Start); empty when handler_threads is 0.
  // The verbs transport sends its writes there too. Valid until Shutdown.
  std::function<void(std::function<void()>)> Scheduler();

  // Stops accepting calls, lets unary calls in flight finish until `grace` has passed (then
  // cancels them, and scans at once: clients resume them), shuts down and drains the
  // completion queues, and joins the handler threads.
  void Shutdown(std::chrono::milliseconds grace);

  // For the call objects (grpc_calls.h) and the method table (grpc_methods.cc).
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace basalt::server
