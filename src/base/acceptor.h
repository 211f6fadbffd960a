// The gRPC server's TCP listener. Debian's gRPC 1.51 stops accepting for good once one
// accept() fails with EMFILE (CVE-2023-4785: its listener drops the socket from its poller and
// never re-arms it), so a burst of clients that exhausts the descriptor limit leaves a server
// that refuses everyone until restarted. Basalt listens itself and hands each accepted socket
// to gRPC (grpc::AddInsecureChannelFromFd), so it can:
//   - cap connections below the descriptor limit: a connection whose descriptor would be
//     number limit - reserved_fds or higher (so at least that many are open: Linux hands out
//     the lowest free number) is refused, keeping reserved_fds descriptors for the data files,
//     logs and sockets the server opens itself;
//   - refuse clearly: the refused client gets an HTTP/2 GOAWAY (ENHANCE_YOUR_CALM) whose debug
//     text says why (gRPC clients see UNAVAILABLE at once, not a hang), and the server logs it
//     (once, then a count every 10 s);
//   - survive EMFILE: one spare descriptor is held open; when accept fails for want of
//     descriptors it is closed, the pending connection taken, refused and closed, and the spare
//     reopened (the libev/nginx idiom), so the backlog drains and accepting resumes by itself
//     as soon as descriptors are free.
// Every address the listen host resolves to is bound (as gRPC does: "localhost" is ::1 and
// 127.0.0.1); "[::]" listens dual-stack.
//
// Thread-safety: Listen, Start and Stop from one thread; the hand-off runs on the acceptor's
// own thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt::server {

class Acceptor {
 public:
  struct Options {
    std::string listen = "127.0.0.1:0";  // HOST:PORT or [IPV6]:PORT; port 0 picks one
    // Descriptors kept free of connections; 0: connections may take every descriptor (the
    // spare descriptor still refuses the rest cleanly).
    int reserved_fds = 64;
    std::function<void(std::string_view)> log;  // where refusals are reported; empty: stderr
    std::atomic<uint64_t>* accepted = nullptr;  // counters bumped per connection, when set
    std::atomic<uint64_t>* refused = nullptr;
    // The bytes a refused connection is sent, given the reason; empty: HTTP/2's (the GOAWAY).
    std::function<std::string(const std::string& why)> refusal;
  };

  // Binds and listens; Unavailable (with the OS's reason) when no address can be bound.
  static absl::StatusOr<std::unique_ptr<Acceptor>> Listen(const Options& options);
  ~Acceptor();  // Stop()s
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  int port() const { return port_; }

  // Starts the accepting thread; `take` owns each accepted, non-blocking socket.
  void Start(std::function<void(int fd)> take);
  // Stops accepting and closes the listening sockets. Idempotent.
  void Stop();

 private:
  explicit Acceptor(const Options& options) : options_(options) {}
  void Run();
  // Accepts what one listening socket has pending (a bounded number per round).
  void AcceptPending(int listen_fd);
  // Sends the refusal (the GOAWAY unless options_.refusal) naming `why`, and closes.
  void Refuse(int fd, const std::string& why);
  void Log(const std::string& line) const;

  Options options_;
  std::vector<int> listen_fds_;
  int wake_fd_ = -1;   // an eventfd: Stop wakes the thread's poll
  int spare_fd_ = -1;  // /dev/null, given up to take a connection when descriptors run out
  int port_ = 0;
  std::function<void(int)> take_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  bool backoff_ = false;  // accept failed for another reason: wait a little before retrying
  // Refusals are logged once, then summarised at most every kLogEvery.
  int64_t refused_unlogged_ = 0;
  int64_t last_refusal_log_ms_ = -1;
  bool refusing_ = false;  // refused since the last accepted connection
};

// Raises this process's soft limit on open descriptors to its hard limit (capped by the
// kernel's fs.nr_open). Returns the limit now in force and, in *before, the one it replaced.
absl::StatusOr<uint64_t> RaiseDescriptorLimit(uint64_t* before);

}  // namespace basalt::server
