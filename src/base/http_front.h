// The daemons' embedded HTTP port (docs/DESIGN.md §11; closed to strangers, §12): `/metrics` in the
// Prometheus text format, the status pages (src/front/status_page.h) and a liveness path, on
// `http_listen` (default 127.0.0.1:16030, HBase's region server UI port; the master's 16010).
//
// Our own small HTTP/1.1 server. It replaced cpp-httplib: Debian 12's 0.11 reads (and gunzips) a
// request's whole body before routing, keeps any number of headers and queues connections
// without bound, none of which it lets a caller change; civetweb, the other candidate, loads
// OpenSSL by the unversioned name libssl.so, which only libssl-dev installs. What it does:
//   - GET and HEAD only. Any other method is answered 405 as soon as its head is in, and no
//     request body is ever read (a GET announcing one is answered 413).
//   - The request line and headers in at most max_head_bytes (431 past it), arriving within
//     head_timeout of the connection, TLS handshake included; else the connection is closed.
//   - One thread reads every connection's head (epoll). Complete requests wait in a queue of at
//     most max_queued for `workers` threads, which make the page and write it. With the queue
//     full, or max_connections open, a request is answered 503 at once. So a slow client holds
//     a connection slot, never a worker, and a scrape goes through while slow clients dawdle.
//   - One request per connection (Connection: close).
//   - TLS with the gRPC port's certificate when tls_cert is set, asking for a client
//     certificate signed by tls_ca (optional: a bearer token also authenticates). With
//     `authorize`, each request is checked against its route's access: 401 for an unknown
//     caller, 403 for one without the right.
//   - Connections are taken by src/base/acceptor.h, which keeps descriptors in reserve.
//
// Thread-safety: Start and the destructor from one thread; the routes' bodies and `authorize`
// run on the worker threads, any number at once.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/tls.h"

namespace basalt::server {

class Acceptor;

// Who sent a request, as far as the connection and its headers say.
struct HttpCaller {
  std::string peer;              // HOST:PORT
  bool tls = false;
  std::string bearer_token;      // "Authorization: Bearer TOKEN" ("" without)
  std::string certificate_user;  // the common name of a client certificate tls_ca verified ("" none)
};

class HttpFront {
 public:
  // Who may read a route when `authorize` is set.
  enum class Access {
    kOpen,     // anyone: a liveness path that names nothing
    kMetrics,  // /metrics: global A, or a scrape identity (metrics_users)
    kAdmin,    // the pages: global A, as the gRPC calls that show the same
  };
  // One page: its path ("/metrics"), content type and body, made at each request.
  struct Route {
    std::string path;
    std::string content_type;
    std::function<std::string()> body;
    Access access = Access::kAdmin;
  };
  struct Options {
    std::string listen;  // HOST:PORT; port 0: a free one
    std::vector<Route> routes;
    // TLS (PEM files) when tls_cert is set; tls_ca: the CA client certificates are verified by.
    std::string tls_cert, tls_key, tls_ca;
    // OK to answer `route` to `caller`; Unauthenticated: 401; any other error: 403. Empty: every
    // route is open.
    std::function<absl::Status(const HttpCaller& caller, const Route& route)> authorize;
    int max_connections = 64;
    int workers = 2;
    int max_queued = 16;
    absl::Duration head_timeout = absl::Seconds(5);
    absl::Duration write_timeout = absl::Seconds(10);
    size_t max_head_bytes = 8192;
    std::function<void(std::string_view)> log;  // refusals and TLS errors; empty: the process log
  };
  // The content types of the pages.
  static constexpr char kPrometheusText[] = "text/plain; version=0.0.4; charset=utf-8";
  static constexpr char kHtml[] = "text/html; charset=utf-8";
  static constexpr char kJson[] = "application/json";
  static constexpr char kText[] = "text/plain; charset=utf-8";

  // Binds and serves. Unavailable naming the address when it cannot bind (in use, not local);
  // InvalidArgument when the TLS files cannot be read.
  static absl::StatusOr<std::unique_ptr<HttpFront>> Start(Options options);
  ~HttpFront();  // stops serving; requests in the queue are dropped
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  const std::string& address() const { return address_; }  // HOST:PORT bound
  bool tls() const { return tls_ != nullptr; }

 private:
  struct Conn;
  struct Job;
  explicit HttpFront(Options options);
  void Loop();  // the reading thread
  void Work();  // a worker thread
  void Add(int fd);
  void Pump(Conn* c);
  void Close(int fd);
  // Answers `code` from the reading thread (a refusal: small, sent without waiting), then lets
  // the connection drain a little before it is closed.
  void Refuse(Conn* c, int code, std::string_view why, std::string_view extra_headers = "");
  void Dispatch(Conn* c, size_t head_end);
  void Answer(Job* job);
  void Log(std::string_view line) const;

  Options options_;
  std::string address_;
  std::shared_ptr<TlsContext> tls_;  // null: plain text
  std::unique_ptr<Acceptor> acceptor_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: new connections, or stop
  std::thread reader_;
  std::vector<std::thread> workers_;

  absl::Mutex mu_;
  std::vector<int> accepted_ ABSL_GUARDED_BY(mu_);               // from the acceptor, for the reader
  std::deque<std::unique_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);  // complete requests, for the workers
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::map<int, std::unique_ptr<Conn>> conns_;  // the reader's own
};

}  // namespace basalt::server
