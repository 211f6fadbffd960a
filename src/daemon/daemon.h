// The process base both daemons start through (src/server/main.cc, src/master/main.cc): their
// settings' outcome (--help, exit 2), the log, signals, the descriptor limit, shared storage and
// its fencing, the ZooKeeper session's settings, the HTTP port, the warnings about an exposed
// port, readiness to systemd, and the wait for SIGTERM or SIGINT. What a daemon serves is its own
// (the tables and gRPC, or the election); how it starts and stops is this.
//
//   Daemon d("basalt-master");
//   if (std::optional<int> exit = d.Settle(parsed.status(), parsed.ok() && parsed->help, MasterHelpText)) return *exit;
//   if (!d.Start(config.server).ok()) return Daemon::kFailed;
//   ... serve ...
//   d.Ready("active master");
//   d.WaitForStop();
//
// Exit codes, the same for both: 0 a clean stop, 1 a start-up failure, 2 bad settings, 3 the
// ZooKeeper session expired or the process was fenced (4 and above are a program's own).
#pragma once

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/rados_env.h"
#include "common/zookeeper.h"
#include "src/base/config.h"
#include "src/base/http_front.h"

namespace basalt::server {

class Daemon {
 public:
  static constexpr int kStopped = 0;
  static constexpr int kFailed = 1;
  static constexpr int kBadSettings = 2;
  static constexpr int kFenced = 3;

  explicit Daemon(std::string program);

  // The outcome of parsing the settings: --help prints help_text() and gives exit 0; an error is
  // printed as "PROGRAM: why" and gives exit 2; nullopt: the program goes on.
  std::optional<int> Settle(const absl::Status& parsed, bool help, const std::function<std::string()>& help_text) const;

  // The process: the log as configured (log_level, log_dir, log_max_file_size); SIGTERM and
  // SIGINT blocked in this thread and every thread started after it (WaitForStop takes them, so
  // no handler runs inside gRPC or the engine); SIGPIPE ignored; the mutexes' deadlock detection
  // off; the descriptor limit raised to the hard limit (said on stdout; a failure is a warning).
  // An error (the log cannot be opened) is printed; the program exits kFailed.
  absl::Status Start(const ServerConfig& config);

  // Shared storage: a RADOS client when rados_pool is set (nullptr otherwise). With
  // `fenced_words`, being fenced (blocklisted by the master that fences this process) ends it at
  // once with kFenced, logging them (common/rados_env.h SetFencedHandler).
  absl::StatusOr<std::unique_ptr<RadosEnv>> ConnectRados(const ServerConfig& config,
                                                         const char* fenced_words = nullptr) const;

  // The ZooKeeper session's settings: the quorum, the session timeout and the daemons' identity
  // (read from zookeeper_auth_file). The program adds its lease and what expiry does.
  absl::StatusOr<ZooKeeper::Options> ZooKeeperSession(const ServerConfig& config) const;

  // Warns when `listen` is reachable from other hosts in plain text or without authentication;
  // `what_anyone_may_do` completes "anyone who reaches it may ...".
  void WarnIfExposed(const ServerConfig& config, std::string_view what_anyone_may_do) const;

  // The HTTP port on http_listen, with the gRPC port's TLS settings. nullptr, with *off saying
  // why, when it is off or the default address was taken (as HBase's info port is skipped); an
  // error when an address given explicitly could not be bound.
  absl::StatusOr<std::unique_ptr<HttpFront>> StartHttp(
      const ServerConfig& config, std::vector<HttpFront::Route> routes,
      std::function<absl::Status(const HttpCaller&, const HttpFront::Route&)> authorize, std::string* off) const;

  // Says READY=1 with `status` to systemd (a Type=notify unit is started); a failure is logged.
  void Ready(std::string_view status) const;

  // Waits for SIGTERM or SIGINT, calling `tick` every `period` meanwhile (none: just waits).
  // Then logs which came, says STOPPING=1 to systemd and returns the signal.
  int WaitForStop(const std::function<void()>& tick = nullptr, absl::Duration period = absl::Milliseconds(100));

  const std::string& program() const { return program_; }

 private:
  std::string program_;
  sigset_t stop_signals_;
};

}  // namespace basalt::server
