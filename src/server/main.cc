// basalt-server: parses settings, opens the tables, serves gRPC until SIGTERM or SIGINT, then
// shuts down cleanly (finishes calls in flight, closes every region) and exits 0.
// Exit codes: 0 clean shutdown, 1 start-up or shutdown failure, 2 bad settings, 3 its ZooKeeper
// session expired or its lease lapsed, or it found itself fenced (a master is fencing it and will
// reopen its regions elsewhere), 4 a cluster's
// region server aborted (a region's close could not flush: the master splits its log).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/env.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/rados_env.h"
#include "common/status.h"
#include "common/zookeeper.h"
#include "src/security/access_control.h"
#include "src/security/auth.h"
#include "src/cluster/cluster_member.h"
#include "src/base/config.h"
#include "src/front/grpc_server.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/hbase_front.h"
#include "src/front/hbase/hbase_services.h"
#include "src/front/hbase/hbase_zk.h"
#include "src/front/hbase/zk_records.h"
#include "src/base/http_front.h"
#include "src/schema/meta.h"
#include "src/security/quotas.h"
#include "src/transactions/queue_eviction.h"
#include "src/services/server_metrics.h"
#include "src/services/service.h"
#include "src/front/status_page.h"
#include "src/catalog/catalog.h"
#include "src/front/verbs_front.h"
#include "src/daemon/daemon.h"
#include "storage/block_cache.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {
namespace {

// Calls in flight get this long to finish after SIGTERM before they are cancelled.
constexpr std::chrono::seconds kShutdownGrace{10};

int Run(int argc, char** argv) {
  Daemon daemon("basalt-server");
  absl::StatusOr<ParsedArgs> parsed = ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (std::optional<int> exit = daemon.Settle(parsed.status(), parsed.ok() && parsed->help, HelpText)) return *exit;
  const ServerConfig& config = parsed->config;
  if (!daemon.Start(config).ok()) return Daemon::kFailed;

  std::shared_ptr<BlockCache> cache;
  if (config.block_cache_size > 0) cache = NewBlockCache(config.block_cache_size);
  // Shared storage: the data directory lives in a Ceph pool instead of on local disk. A cluster's
  // region server fenced by a master (blocklisted) stops at once.
  absl::StatusOr<std::unique_ptr<RadosEnv>> connected =
      daemon.ConnectRados(config, config.cluster ? "by the master: its regions are served elsewhere" : nullptr);
  if (!connected.ok()) {
    log::Error(std::string(connected.status().message()));
    return Daemon::kFailed;
  }
  std::unique_ptr<RadosEnv> rados = *std::move(connected);
  if (rados != nullptr) {
    std::cout << "basalt-server: data in RADOS pool " << config.rados_pool << ", namespace " << config.rados_namespace
              << " (client " << rados->ClientAddress() << ")" << std::endl;
  }
  std::string host;
  int unused_port;
  SplitHostPort(config.listen, &host, &unused_port).IgnoreError();  // validated by ParseCommandLine
  // When it started (ms): tells this run of the server apart from others at the same address.
  const int64_t start_code = absl::ToUnixMillis(absl::Now());
  // Its ZooKeeper session's lease (common/zookeeper.h): unbounded until the session is made,
  // then no region is served while it lapses, and the server stops.
  SessionLease lease;  // (before zk: its session keeps it)
  // The cluster's ZooKeeper, once joined (below), which outlives the tables: a region that
  // passes the split size is split by the master, which this server asks through it.
  std::unique_ptr<ZooKeeper> zk;
  std::atomic<ZooKeeper*> joined_zk{nullptr};
  ClusterPaths paths;
  paths.parent = config.zookeeper_znode_parent;
  // Its calls to the master (splits, the grants) go as this server: its certificate, the CA.
  absl::StatusOr<ChannelSecurity> own_security = OwnChannelSecurity(config);
  if (!own_security.ok()) {
    log::Error(std::string(own_security.status().message()));
    return Daemon::kFailed;
  }
  const ChannelSecurity to_master = *std::move(own_security);
  // Its ZooKeeper session's settings, the identity (zookeeper_auth_file) read before anything starts.
  absl::StatusOr<ZooKeeper::Options> zo = daemon.ZooKeeperSession(config);
  if (!zo.ok()) {
    log::Error(std::string(zo.status().message()));
    return Daemon::kBadSettings;
  }
  Env* env = rados != nullptr ? static_cast<Env*>(rados.get()) : nullptr;
  RegionOptions region_options;
  region_options.block_cache = cache.get();
  region_options.memstore_flush_size = config.memstore_flush_size;
  region_options.wal_recovery = config.wal_recovery;
  region_options.log = [](std::string_view line) { log::Info(line); };
  // The transaction service (transactions.h): a standalone server's, its state log beside the
  // data (on RADOS when the data is). Before the tables: their queues' compactions ask it.
  std::unique_ptr<TransactionManager> transactions;
  // What this process serves: a standalone server's catalogue and regions (Catalog), or a
  // cluster's region server's regions, which the master opens here (RegionHost).
  std::unique_ptr<Catalog> catalog;
  std::unique_ptr<RegionHost> region_host;
  TableSource* tables = nullptr;
  // A region server's log is this run's own (its ZooKeeper registration names it for the master).
  const std::string own_wal_dir =
      config.cluster ? absl::StrCat(config.data_dir, "/wals/", host, ",", start_code, ",", ::getpid()) : "";
  if (config.cluster) {
    // A region server: the master assigns its regions; its log is this run's own, which the
    // master splits by region if the server dies.
    RegionHost::Options ho;
    ho.env = env;
    ho.data_dir = config.data_dir;
    ho.region = region_options;
    ho.wal_roll_size = config.wal_roll_size;
    ho.wal_max_logs = config.wal_max_logs;
    ho.region_max_size = config.region_max_size;
    ho.auto_split = config.auto_split;
    ho.start_code = start_code;
    ho.lease = &lease;
    ho.log_dir = own_wal_dir;
    ho.request_split = [&joined_zk, &paths, &to_master](const std::string& encoded_name) {
      ZooKeeper* z = joined_zk.load();
      if (z == nullptr) return absl::UnavailableError("not in the cluster yet");
      return AskMasterToSplit(z, paths, encoded_name, to_master);
    };
    ho.abort = [](const absl::Status& why) {
      log::Error(absl::StrCat("aborting: ", why.message()));
      std::_Exit(4);
    };
    absl::StatusOr<std::unique_ptr<RegionHost>> opened = RegionHost::Open(ho);
    if (!opened.ok()) {
      log::Error(absl::StrCat("opening data dir ", config.data_dir, ": ", opened.status().ToString()));
      return Daemon::kFailed;
    }
    region_host = *std::move(opened);
    tables = region_host.get();
  } else {
    Catalog::Options topts;
    topts.data_dir = config.data_dir;
    topts.env = env;
    topts.region = region_options;
    topts.wal_roll_size = config.wal_roll_size;
    topts.wal_max_logs = config.wal_max_logs;
    topts.region_max_size = config.region_max_size;
    topts.auto_split = config.auto_split;
    topts.rebuild_catalog = config.rebuild_catalog;
    TransactionManager::Options xo;
    xo.env = env;
    xo.dir = absl::StrCat(config.data_dir, "/transactions");
    xo.default_timeout_ms = config.transaction_timeout_ms;
    xo.max_in_progress_per_owner = static_cast<int>(config.max_transactions_per_user);
    absl::StatusOr<std::unique_ptr<TransactionManager>> opened = TransactionManager::Open(xo);
    if (!opened.ok()) {
      log::Error(absl::StrCat("opening the transaction log: ", opened.status().ToString()));
      return Daemon::kFailed;
    }
    transactions = *std::move(opened);
    topts.queue_compaction_filter = QueueEvictionFilter(transactions.get());
    absl::StatusOr<std::unique_ptr<Catalog>> catalog_opened = Catalog::Open(topts);
    if (!catalog_opened.ok()) {
      log::Error(absl::StrCat("opening data dir ", config.data_dir, ": ", catalog_opened.status().ToString()));
      return Daemon::kFailed;
    }
    catalog = *std::move(catalog_opened);
    tables = catalog.get();
  }

  ServerCounters counters;
  counters.block_cache = cache.get();
  // Metrics (docs/DESIGN.md §11): counted by the transports, read at scrape from the tables, served on the
  // HTTP port. The registry outlives the HTTP port (declared first, gone last).
  metrics::Registry registry;
  RegisterScrapedMetrics(&registry, tables, &counters);
  DataService data(tables, config, transactions.get());
  // A cluster's transactions are the master's: a transactional write's writer is checked there.
  if (config.cluster) data.SetRemoteWriterCheck(MasterWriterCheck(&joined_zk, paths, to_master));
  std::unique_ptr<AdminService> admin_service = region_host != nullptr
                                                   ? std::make_unique<AdminService>(region_host.get(), &counters)
                                                   : std::make_unique<AdminService>(catalog.get(), &counters);
  AdminService& admin = *admin_service;
  // The status page's latency graph, made once the transports have registered their histograms
  // (the pages show none before).
  std::unique_ptr<LatencyHistory> history;
  std::atomic<const LatencyHistory*> history_ready{nullptr};
  auto page_data = [&admin, &history_ready, tables] {
    StatusPageData d;
    d.program = "basalt-server";
    d.server_name = tables->ServerName();
    d.now = absl::Now();
    FillFromAdmin(&admin, &d);
    d.log = log::Recent(200);
    if (const LatencyHistory* h = history_ready.load()) {
      d.latency = h->Get();
      d.latency_interval = h->interval();
    }
    return d;
  };
  GrpcServer::Options gopts;
  gopts.listen = config.listen;
  gopts.cq_threads = config.cq_threads;
  gopts.handler_threads = config.handler_threads;
  gopts.max_concurrent_calls = config.max_concurrent_calls;
  gopts.max_request_bytes = config.max_request_bytes;
  gopts.enable_echo = config.enable_echo;
  gopts.max_reply_bytes_in_flight = static_cast<int64_t>(config.max_reply_bytes_in_flight);
  gopts.stalled_reply_timeout_ms = config.stalled_reply_timeout_ms;
  gopts.scanner_lease_ms = config.scanner_lease_ms;
  gopts.max_scanners_per_user = static_cast<int>(config.max_scanners_per_user);
  gopts.echo_max_reply_bytes = static_cast<uint32_t>(config.echo_max_reply_bytes);
  gopts.reserved_fds = config.reserved_fds;
  gopts.log = [](std::string_view line) { log::Warning(line); };
  gopts.metrics = &registry;
  // Security (docs/DESIGN.md §12): who may do what (kept in basalt:acl), who is calling, and TLS.
  AccessController::Options acopts;
  acopts.enabled = config.auth;
  acopts.superusers = config.superusers;
  absl::StatusOr<std::unique_ptr<AccessController>> access = AccessController::Open(acopts, catalog != nullptr ? catalog->acl_region() : nullptr);
  // Quotas (docs/DESIGN.md §12): kept in basalt:quota by a standalone server; a region server
  // follows the master's (FollowQuotas, below).
  absl::StatusOr<std::unique_ptr<Quotas>> quotas = Quotas::Open(catalog != nullptr ? catalog->quota_region() : nullptr);
  // The ZooKeeper session, whose watches load the grants into `access` (FollowGrants), ends
  // before `access` goes.
  absl::Cleanup end_zk_first = [&zk, &joined_zk] {
    joined_zk.store(nullptr);
    zk.reset();
  };
  std::unique_ptr<Authenticator> authn;
  absl::Status security = access.status();
  if (security.ok() && config.auth) {
    absl::StatusOr<std::unique_ptr<Authenticator>> a = Authenticator::Open(config.auth_users_file, access->get());
    security = a.status();
    if (a.ok()) authn = *std::move(a);
  }
  if (security.ok() && !config.tls_cert.empty()) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tls =
        ServerTlsCredentials(config.tls_cert, config.tls_key, config.tls_ca);
    security = tls.status();
    if (tls.ok()) gopts.tls = *std::move(tls);
  }
  if (!security.ok()) {
    log::Error(std::string(security.message()));
    tables->CloseAll().IgnoreError();
    return Daemon::kFailed;
  }
  gopts.access = access->get();
  gopts.authn = authn.get();
  if (!quotas.ok()) {
    log::Error(absl::StrCat("loading ", kQuotaTableName, ": ", quotas.status().message()));
    tables->CloseAll().IgnoreError();
    return Daemon::kFailed;
  }
  gopts.quotas = quotas->get();
  // The HTTP port; with auth, global A for the pages.
  std::string http_off;  // why there is no HTTP port, said once serving
  absl::StatusOr<std::unique_ptr<HttpFront>> http_started =
      daemon.StartHttp(config, StatusRoutes(&registry, page_data, [&config] { return SettingsInForce(config); }),
                       HttpAuthorizer(authn.get(), access->get(), config.metrics_users), &http_off);
  if (!http_started.ok()) {
    log::Error(std::string(http_started.status().message()));
    tables->CloseAll().IgnoreError();
    return Daemon::kFailed;
  }
  std::unique_ptr<HttpFront> http = *std::move(http_started);
  if (http != nullptr) counters.http_address = http->address();
  daemon.WarnIfExposed(config, "read, write, create and drop every table");
  GrpcServer server(gopts, &data, &admin, &counters);
  if (absl::Status s = server.Start(); !s.ok()) {
    log::Error(std::string(s.message()));
    tables->CloseAll().IgnoreError();
    return Daemon::kFailed;
  }
  VerbsControl verbs_control;
  absl::StatusOr<std::unique_ptr<verbs::VerbsServer>> verbs_server =
      StartVerbs(config, &data, server.Scheduler(), &verbs_control, &registry, access->get(), quotas->get());
  if (!verbs_server.ok()) {
    log::Error(std::string(verbs_server.status().message()));
    server.Shutdown(std::chrono::milliseconds(0));
    tables->CloseAll().IgnoreError();
    return Daemon::kFailed;
  }
  counters.verbs.store(&verbs_control);
  // The HBase port (docs/DESIGN.md §15), its writes on the gRPC pool as the verbs transport's.
  std::unique_ptr<hbase::HBaseFront> hbase_front;
  std::unique_ptr<hbase::ZkPublisher> hbase_zk;  // its records in ZooKeeper, when published
  if (!config.hbase_listen.empty()) {
    hbase::HBaseFront::Options ho;
    ho.port.listen = config.hbase_listen;
    // Its reads run on its loops, as the gRPC front end's on its completion queues: as many.
    ho.port.loop_threads = config.cq_threads > 0 ? config.cq_threads : static_cast<int>(std::thread::hardware_concurrency());
    ho.port.max_calls_in_flight = config.max_concurrent_calls;
    ho.port.max_request_bytes = static_cast<uint32_t>(config.max_request_bytes);
    ho.port.log = [](std::string_view line) { log::Warning(absl::StrCat("hbase port: ", AV(line))); };
    ho.advertised_host = host;
    ho.start_code = start_code;
    ho.schedule = server.Scheduler();
    ho.process = config.cluster ? "a region server" : "a standalone server";
    hbase::ServiceParts parts;
    parts.data = &data;
    parts.admin = &admin;
    parts.quotas = quotas->get();
    parts.cluster_id =
        config.cluster ? hbase::ClusterIdForParent(paths.parent) : absl::StrCat("basalt-", host, ":", server.port());
    parts.scanner_lease_ms = config.scanner_lease_ms;
    parts.log = [](std::string_view line) { log::Warning(line); };
    hbase_front = std::make_unique<hbase::HBaseFront>(ho);
    // A cluster's region server serves its regions; the master the rest (and the records).
    if (config.cluster) {
      hbase::ServeAsRegionServer(hbase_front.get(), parts, [&joined_zk, &paths]() -> absl::StatusOr<ServerRegistration> {
        ZooKeeper* z = joined_zk.load();
        if (z == nullptr) return absl::UnavailableError("it has not joined its cluster yet");
        return ReadHBaseMaster(z, paths);
      });
    } else {
      hbase::ServeAsStandalone(hbase_front.get(), parts);
    }
    absl::Status s = hbase_front->Start();
    if (s.ok() && !config.hbase_port_file.empty()) {
      s = Env::Default()->WriteFileDurably(config.hbase_port_file, absl::StrCat(hbase_front->port(), "\n"));
    }
    if (!s.ok()) {
      log::Error(absl::StrCat("the HBase port (", config.hbase_listen, "): ", s.message()));
      if (*verbs_server != nullptr) (*verbs_server)->Shutdown();
      server.Shutdown(std::chrono::milliseconds(0));
      tables->CloseAll().IgnoreError();
      return Daemon::kFailed;
    }
    hbase_front->RegisterMetrics(&registry);
    std::cout << "basalt-server: HBase clients on " << host << ":" << hbase_front->port() << std::endl;
    if (!config.hbase_zookeeper_quorum.empty()) {
      hbase::ZkPublisher::Options zp;
      zp.session.quorum = config.hbase_zookeeper_quorum;
      zp.session.session_timeout = absl::Milliseconds(config.zookeeper_session_timeout_ms);
      zp.parent = config.hbase_znode_parent;
      zp.self = hbase::ServerNameOf(host, hbase_front->port(), static_cast<uint64_t>(start_code));
      zp.cluster_id = parts.cluster_id;
      zp.log = [](std::string_view line) { log::Warning(line); };
      absl::StatusOr<std::unique_ptr<hbase::ZkPublisher>> published = hbase::ZkPublisher::Start(zp);
      if (!published.ok()) {
        log::Error(absl::StrCat("publishing the HBase port in ZooKeeper ", config.hbase_zookeeper_quorum, ": ",
                                published.status().message()));
        hbase_front->Shutdown();
        if (*verbs_server != nullptr) (*verbs_server)->Shutdown();
        server.Shutdown(std::chrono::milliseconds(0));
        tables->CloseAll().IgnoreError();
        return Daemon::kFailed;
      }
      hbase_zk = *std::move(published);
      std::cout << "basalt-server: HBase port published in ZooKeeper " << config.hbase_zookeeper_quorum << " under "
                << config.hbase_znode_parent << std::endl;
    }
  }
  // Stopped before the gRPC pool its writes run on.
  absl::Cleanup stop_hbase = [&hbase_front, &hbase_zk] {
    hbase_zk.reset();  // unpublished first: no client is sent to a port that is closing
    if (hbase_front != nullptr) hbase_front->Shutdown();
  };
  // From here every exit stops the HTTP port first: its pages read the verbs server and the
  // gRPC server's counters, which go before it would.
  absl::Cleanup stop_http = [&http] { http.reset(); };
  {
    // The graph's series: the data operations' latency histograms, as /metrics has them.
    std::vector<LatencyHistory::Series> series;
    for (const char* op : {"Get", "Mutate", "Scan"}) {
      series.push_back({SnakeCase(op), MakeOpMetrics(&registry, op, "grpc", true).latency});
    }
    if (*verbs_server != nullptr) {
      for (const char* op : {"Get", "Mutate"}) {
        series.push_back({SnakeCase(op) + " (verbs)", MakeOpMetrics(&registry, op, "verbs", true).latency});
      }
    }
    history = std::make_unique<LatencyHistory>(std::move(series),
                                               absl::Milliseconds(config.latency_graph_interval_ms), 30);
    history_ready.store(history.get());
  }
  std::cout << "basalt-server: verbs " << verbs_control.state << std::endl;
  log::Record(log::Level::kInfo, absl::StrCat("verbs ", verbs_control.state));
  if (absl::Status named = tables->SetServerName(absl::StrCat(host, ":", server.port())); !named.ok()) {
    log::Error(std::string(named.message()));
  }
  // (Said with the other start-up facts, on stdout, as "verbs off: ..." is: the default port
  // taken is not an error.)
  if (http != nullptr) {
    const std::string url = absl::StrCat(http->tls() ? "https://" : "http://", http->address());
    std::cout << "basalt-server: metrics on " << url << "/metrics, status on " << url << "/" << std::endl;
  } else {
    std::cout << "basalt-server: metrics off: " << http_off << std::endl;
  }
  log::Record(log::Level::kInfo, absl::StrCat("listening on ", host, ":", server.port(), " (data dir ",
                                              config.data_dir, ", ", tables->size(), " tables)"));
  std::cout << "basalt-server listening on " << host << ":" << server.port() << " (data dir " << config.data_dir
            << ", " << tables->size() << " tables)" << std::endl;
  // Cluster membership: registered once it serves. When ZooKeeper ends the session, a master
  // fences this server (its RADOS client can no longer write) and its regions go elsewhere, so
  // it stops at once, as an HBase region server aborts on YouAreDeadException.
  if (!config.zookeeper_quorum.empty()) {
    if (config.cluster) zo->lease = &lease;
    zo->on_expired = [](std::string_view why) {
      log::Error(absl::StrCat(AV(why), ": this server is being fenced and its regions reopened elsewhere; stopping now"));
      std::_Exit(Daemon::kFenced);
    };
    ServerRegistration me;
    me.name = absl::StrCat(host, ":", server.port());
    me.start_code = start_code;
    if (rados != nullptr) me.rados_client = rados->ClientAddress();
    me.wal_dir = own_wal_dir;
    if (hbase_front != nullptr) me.hbase = absl::StrCat(host, ":", hbase_front->port());
    absl::StatusOr<std::unique_ptr<ZooKeeper>> joined = JoinCluster(*zo, paths, me);
    if (!joined.ok()) {
      log::Error(absl::StrCat("joining the cluster at ", config.zookeeper_quorum, ": ", joined.status().message()));
      if (hbase_front != nullptr) hbase_front->Shutdown();
      if (*verbs_server != nullptr) (*verbs_server)->Shutdown();
      server.Shutdown(std::chrono::milliseconds(0));
      tables->CloseAll().IgnoreError();
      return Daemon::kFailed;
    }
    zk = *std::move(joined);
    joined_zk.store(zk.get());
    if (config.cluster && config.auth) {
      // The grants are the master's (basalt:acl): loaded now, and again whenever it says they
      // changed. Until the first load every call but a superuser's is refused.
      absl::Status followed = FollowGrants(zk.get(), paths, to_master, access->get());
      if (!followed.ok()) {
        log::Warning(absl::StrCat("the grants are not loaded yet (", followed.message(),
                                  "); they will be when the master announces them"));
      }
    }
    if (config.cluster) {
      // The quotas are the master's (basalt:quota), loaded likewise; until then none apply.
      absl::Status followed = FollowQuotas(zk.get(), paths, to_master, quotas->get());
      if (!followed.ok()) {
        log::Warning(absl::StrCat("the quotas are not loaded yet (", followed.message(),
                                  "); they will be when the master announces them"));
      }
    }
    std::cout << "basalt-server: registered in ZooKeeper " << config.zookeeper_quorum << " as "
              << paths.live() << "/" << me.NodeName() << " (session 0x" << absl::StrCat(absl::Hex(zk->session_id()))
              << ")" << std::endl;
  }
  if (!config.port_file.empty()) {
    // WriteFileDurably writes PORT_FILE.tmp and renames it: a reader never sees half a number.
    // Written after the "listening" line, so whoever waits for the file also sees the line.
    absl::Status s = Env::Default()->WriteFileDurably(config.port_file, absl::StrCat(server.port(), "\n"));
    if (!s.ok()) {
      log::Error(absl::StrCat("writing port file: ", s.message()));
      if (hbase_front != nullptr) hbase_front->Shutdown();
      if (*verbs_server != nullptr) (*verbs_server)->Shutdown();
      server.Shutdown(std::chrono::milliseconds(0));
      tables->CloseAll().IgnoreError();
      return Daemon::kFailed;
    }
  }

  // Serving (and registered, in a cluster): systemd's Type=notify unit is started.
  daemon.Ready(absl::StrCat("serving on ", host, ":", server.port()));
  const int sig = daemon.WaitForStop();
  std::cout << "basalt-server: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ", shutting down" << std::endl;
  http.reset();  // no page reads what the shutdown takes down
  hbase_zk.reset();                                           // unpublished before it stops
  if (hbase_front != nullptr) hbase_front->Shutdown();        // its writes run on the gRPC pool
  if (*verbs_server != nullptr) (*verbs_server)->Shutdown();  // as these do
  server.Shutdown(kShutdownGrace);
  absl::Status closed = tables->CloseAll();
  if (!closed.ok()) {
    log::Error(closed.ToString());
    return Daemon::kFailed;
  }
  std::cout << "basalt-server: stopped" << std::endl;
  return Daemon::kStopped;
}

}  // namespace
}  // namespace basalt::server

int main(int argc, char** argv) { return basalt::server::Run(argc, argv); }
