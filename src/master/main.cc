// basalt-master: joins the masters' election in ZooKeeper; the active one serves the catalogue and
// basalt:meta, places regions on the region servers, and fences and recovers each server that
// dies (src/master/master.h). Runs until SIGTERM or SIGINT. It starts and stops as basalt-server
// does (src/daemon/daemon.h), with its settings from master_config.h.
// Exit codes: 0 clean stop, 1 start-up failure (or, once active, its storage or port failed),
// 2 bad settings, 3 its ZooKeeper session expired or its lease lapsed, or it found itself fenced
// (another master has taken over).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status.h"
#include "common/tls.h"
#include "src/base/http_front.h"
#include "src/daemon/daemon.h"
#include "src/front/status_page.h"
#include "src/master/master.h"
#include "src/master/master_config.h"
#include "src/security/auth.h"
#include "src/services/server_metrics.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::master {
namespace {

using server::Daemon;

int Run(int argc, char** argv) {
  Daemon daemon("basalt-master");
  absl::StatusOr<ParsedMasterArgs> parsed = ParseMasterCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (std::optional<int> exit = daemon.Settle(parsed.status(), parsed.ok() && parsed->help, MasterHelpText)) {
    return *exit;
  }
  const MasterConfig& config = parsed->config;
  const server::ServerConfig& sc = config.server;
  if (!daemon.Start(sc).ok()) return Daemon::kFailed;
  // Fenced by the master that took over: this one is deposed (common/rados_env.h).
  absl::StatusOr<std::unique_ptr<RadosEnv>> connected = daemon.ConnectRados(sc, "by the master that took over");
  if (!connected.ok()) {
    log::Error(std::string(connected.status().message()));
    return Daemon::kFailed;
  }
  std::unique_ptr<RadosEnv> rados = *std::move(connected);
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  // /metrics: the gRPC calls once active, and the process.
  metrics::Registry registry;
  server::RegisterProcessMetrics(&registry, std::chrono::steady_clock::now());
  Master::Options mo;
  mo.metrics = &registry;
  mo.log = [](std::string_view line) { log::Info(line); };
  mo.name = config.name.empty() ? absl::StrCat(host, ":", ::getpid()) : config.name;
  absl::StatusOr<ZooKeeper::Options> zo = daemon.ZooKeeperSession(sc);
  if (!zo.ok()) {
    log::Error(std::string(zo.status().message()));
    return Daemon::kBadSettings;
  }
  mo.zk = *std::move(zo);
  mo.paths.parent = sc.zookeeper_znode_parent;
  mo.rados = rados.get();
  mo.listen = sc.listen;
  mo.port_file = sc.port_file;
  mo.hbase_listen = sc.hbase_listen;
  mo.hbase_port_file = sc.hbase_port_file;
  mo.hbase_znode_parent = sc.hbase_znode_parent;
  mo.data_dir = sc.data_dir;
  mo.balancer_period = absl::Milliseconds(config.balancer_period_ms);
  // Security: the same settings, and the same checks, as basalt-server's (config.h).
  if (!sc.tls_cert.empty()) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tls =
        server::ServerTlsCredentials(sc.tls_cert, sc.tls_key, sc.tls_ca);
    absl::StatusOr<ChannelSecurity> client = server::OwnChannelSecurity(sc);
    absl::Status made = !tls.ok() ? tls.status() : client.status();
    if (!made.ok()) {
      log::Error(std::string(made.message()));
      return Daemon::kBadSettings;
    }
    mo.tls = *std::move(tls);
    mo.client = *std::move(client);
    absl::StatusOr<std::shared_ptr<TlsContext>> hbase_tls = TlsContext::Server(sc.tls_cert, sc.tls_key, sc.tls_ca);
    if (!hbase_tls.ok()) {
      log::Error(absl::StrCat("the HBase port's TLS: ", hbase_tls.status().message()));
      return Daemon::kBadSettings;
    }
    mo.hbase_tls = *std::move(hbase_tls);
  }
  mo.auth = sc.auth;
  mo.users_file = sc.auth_users_file;
  mo.superusers = sc.superusers;
  mo.metrics_users = sc.metrics_users;
  mo.http_tls_cert = sc.tls_cert;
  mo.http_tls_key = sc.tls_key;
  mo.http_tls_ca = sc.tls_ca;
  daemon.WarnIfExposed(sc, "create and drop tables, move regions and read meta");
  absl::StatusOr<std::unique_ptr<Master>> master = Master::Start(mo);
  if (!master.ok()) {
    log::Error(std::string(master.status().message()));
    return Daemon::kFailed;
  }
  // The master the pages show: replaced when a backup joins the election again.
  struct Current {
    absl::Mutex mu;
    Master* master ABSL_GUARDED_BY(mu) = nullptr;
  } current;
  {
    absl::MutexLock l(&current.mu);
    current.master = master->get();
  }
  // The snapshots' gauges: the active master's catalogue's.
  server::RegisterSnapshotMetrics(&registry, [&current] {
    absl::ReaderMutexLock l(&current.mu);
    return current.master->Snapshots();
  });
  // The HTTP port: up as soon as the master is (a backup's page names the active master).
  auto page = [&current] {
    server::StatusPageData d;
    d.now = absl::Now();
    {
      absl::ReaderMutexLock l(&current.mu);
      current.master->FillPage(&d);
    }
    d.log = log::Recent(200);
    return d;
  };
  std::string http_off;
  absl::StatusOr<std::unique_ptr<server::HttpFront>> http_started = daemon.StartHttp(
      sc, server::StatusRoutes(&registry, page, [conf = parsed->in_force] { return conf; }),
      [&current](const server::HttpCaller& caller, const server::HttpFront::Route& route) {
        absl::ReaderMutexLock l(&current.mu);
        return current.master->AuthorizeHttp(caller, route);
      },
      &http_off);
  if (!http_started.ok()) {
    log::Error(std::string(http_started.status().message()));
    return Daemon::kFailed;
  }
  std::unique_ptr<server::HttpFront> http = *std::move(http_started);
  absl::Cleanup stop_http = [&http] { http.reset(); };  // before the master goes
  if (http != nullptr) {
    std::cout << "basalt-master: status on " << (http->tls() ? "https://" : "http://") << http->address() << "/"
              << std::endl;
  } else {
    std::cout << "basalt-master: status page off: " << http_off << std::endl;
  }
  // In the election (active, or a backup ready to take over): systemd's Type=notify unit is started.
  daemon.Ready((*master)->active() ? "active master" : "backup master");
  // SIGTERM and SIGINT stop it; so does a failure to serve once active (checked every 100 ms).
  daemon.WaitForStop([&] {
    if (absl::Status f = (*master)->fatal(); !f.ok()) {
      log::Error(absl::StrCat("stopping: ", f.message()));
      std::_Exit(Daemon::kFailed);  // its session ends with the process: a backup takes over
    }
    // A backup whose session expired (ZooKeeper or this host starved for the session timeout)
    // held nothing: it is replaced at once rather than leaving the cluster without a backup
    // until its unit restarts it (an HBase backup master aborts there).
    if ((*master)->expired_backup()) {
      absl::MutexLock l(&current.mu);
      master->reset();
      absl::StatusOr<std::unique_ptr<Master>> again = Master::Start(mo);
      if (!again.ok()) {
        log::Error(absl::StrCat("joining the election again: ", again.status().message(), "; stopping now"));
        std::_Exit(Daemon::kFenced);
      }
      master = *std::move(again);
      current.master = master->get();
    }
  });
  http.reset();
  master->reset();
  return Daemon::kStopped;
}

}  // namespace
}  // namespace basalt::master

int main(int argc, char** argv) { return basalt::master::Run(argc, argv); }
