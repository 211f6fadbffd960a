#include "src/daemon/daemon.h"

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "src/base/acceptor.h"
#include "src/base/notify.h"
#include "src/cluster/cluster_member.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {
namespace {

// What a fenced process logs before it ends (SetFencedHandler takes a plain function).
std::atomic<const char*> fenced_words{nullptr};

}  // namespace

Daemon::Daemon(std::string program) : program_(std::move(program)) {
  sigemptyset(&stop_signals_);
  sigaddset(&stop_signals_, SIGTERM);
  sigaddset(&stop_signals_, SIGINT);
}

std::optional<int> Daemon::Settle(const absl::Status& parsed, bool help,
                                  const std::function<std::string()>& help_text) const {
  if (!parsed.ok()) {
    std::cerr << program_ << ": " << parsed.message() << "\n";
    return kBadSettings;
  }
  if (help) {
    std::cout << help_text();
    return kStopped;
  }
  return std::nullopt;
}

absl::Status Daemon::Start(const ServerConfig& config) {
  DisableMutexDeadlockDetection();
  log::Options lo;
  lo.program = program_;
  lo.level = config.log_level;
  lo.dir = config.log_dir;
  lo.max_file_bytes = config.log_max_file_size;
  if (absl::Status s = log::Configure(lo); !s.ok()) {
    std::cerr << program_ << ": " << s.message() << "\n";
    return s;
  }
  pthread_sigmask(SIG_BLOCK, &stop_signals_, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Every connection and data file takes a descriptor; the usual soft limit (1024) is far below
  // what a server needs, and the hard limit is the operator's (LimitNOFILE=, ulimit -Hn).
  uint64_t before = 0;
  if (absl::StatusOr<uint64_t> raised = RaiseDescriptorLimit(&before); !raised.ok()) {
    log::Warning(absl::StrCat(raised.status().message(), " (keeping ", before, ")"));
  } else if (*raised != before) {
    std::cout << program_ << ": descriptor limit raised from " << before << " to " << *raised << std::endl;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RadosEnv>> Daemon::ConnectRados(const ServerConfig& config,
                                                               const char* fenced) const {
  if (config.rados_pool.empty()) return std::unique_ptr<RadosEnv>();
  RadosEnvOptions ro;
  ro.ceph_conf = config.ceph_conf;
  ro.pool = config.rados_pool;
  ro.root = config.rados_namespace;
  ro.client_name = config.rados_client;
  ro.chunk_bytes = config.rados_object_size;
  ro.write_bytes = std::min<uint64_t>(ro.write_bytes, ro.chunk_bytes);
  ro.op_timeout = absl::Seconds(config.rados_op_timeout_s);
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<RadosEnv> env, RadosEnv::Connect(ro));
  if (fenced != nullptr) {
    // It ends before any caller sees the refusal, so the callers go elsewhere.
    fenced_words.store(fenced);
    SetFencedHandler(+[](std::string_view what) {
      log::Error(absl::StrCat("fenced (", AV(what), "): ", fenced_words.load(), "; stopping now"));
      std::_Exit(kFenced);
    });
  }
  return env;
}

absl::StatusOr<ZooKeeper::Options> Daemon::ZooKeeperSession(const ServerConfig& config) const {
  ZooKeeper::Options zo;
  zo.quorum = config.zookeeper_quorum;
  zo.session_timeout = absl::Milliseconds(config.zookeeper_session_timeout_ms);
  if (!config.zookeeper_auth_file.empty()) {
    BASALT_ASSIGN_OR_RETURN(zo.digest, ReadZooKeeperIdentity(config.zookeeper_auth_file));
  }
  return zo;
}

void Daemon::WarnIfExposed(const ServerConfig& config, std::string_view what_anyone_may_do) const {
  std::string host;
  int port = 0;
  if (!SplitHostPort(config.listen, &host, &port).ok() || IsLoopbackHost(host)) return;
  if (config.tls_cert.empty()) {
    log::Warning(absl::StrCat("serving without TLS on ", config.listen,
                              ", which is not a loopback address: calls cross the network in plain text (set "
                              "tls_cert and tls_key)"));
  }
  if (!config.auth) {
    log::Warning(absl::StrCat("serving without authentication on ", config.listen, ": anyone who reaches it may ",
                              AV(what_anyone_may_do), " (set auth=true)"));
  }
}

absl::StatusOr<std::unique_ptr<HttpFront>> Daemon::StartHttp(
    const ServerConfig& config, std::vector<HttpFront::Route> routes,
    std::function<absl::Status(const HttpCaller&, const HttpFront::Route&)> authorize, std::string* off) const {
  if (config.http_listen.empty()) {
    *off = "http_listen=off";
    return std::unique_ptr<HttpFront>();
  }
  HttpFront::Options hopts;
  hopts.listen = config.http_listen;
  hopts.routes = std::move(routes);
  // The gRPC port's certificate and callers (docs/DESIGN.md §12): TLS whenever it has TLS.
  hopts.tls_cert = config.tls_cert;
  hopts.tls_key = config.tls_key;
  hopts.tls_ca = config.tls_ca;
  hopts.authorize = std::move(authorize);
  hopts.log = [](std::string_view line) { log::Warning(line); };
  absl::StatusOr<std::unique_ptr<HttpFront>> started = HttpFront::Start(std::move(hopts));
  if (started.ok() || config.http_listen_set) return started;
  *off = std::string(started.status().message());
  return std::unique_ptr<HttpFront>();
}

void Daemon::Ready(std::string_view status) const {
  if (absl::Status s = NotifySystemd(absl::StrCat("READY=1\nSTATUS=", AV(status))); !s.ok()) {
    log::Warning(std::string(s.message()));
  }
}

int Daemon::WaitForStop(const std::function<void()>& tick, absl::Duration period) {
  int sig = 0;
  if (tick == nullptr) {
    while (sigwait(&stop_signals_, &sig) != 0) {
    }
  } else {
    const timespec wait = absl::ToTimespec(period);
    for (;;) {
      sig = sigtimedwait(&stop_signals_, nullptr, &wait);
      if (sig == SIGTERM || sig == SIGINT) break;
      tick();
    }
  }
  log::Info(absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT", ", stopping"));
  NotifySystemd("STOPPING=1").IgnoreError();
  return sig;
}

}  // namespace basalt::server
