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
#include <string>
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
#include "src/base/acceptor.h"
#include "src/security/access_control.h"
#include "src/security/auth.h"
#include "src/cluster/cluster_member.h"
#include "src/base/config.h"
#include "src/front/grpc_server.h"
#include "src/base/http_front.h"
#include "src/schema/meta.h"
#include "src/base/notify.h"
#include "src/security/quotas.h"
#include "src/transactions/queue_eviction.h"
#include "src/services/server_metrics.h"
#include "src/services/service.h"
#include "src/front/status_page.h"
#include "src/catalog/catalog.h"
#include "src/front/verbs_front.h"
#include "storage/block_cache.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {
namespace {

// Calls in flight get this long to finish after SIGTERM before they are cancelled.
constexpr std::chrono::seconds kShutdownGrace{10};

int Run(int argc, char** argv) {
  DisableMutexDeadlockDetection();
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<ParsedArgs> parsed = ParseCommandLine(args);
  if (!parsed.ok()) {
    std::cerr << "basalt-server: " << parsed.status().message() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << HelpText();
    return 0;
  }
  const ServerConfig& config = parsed->config;
  {
    log::Options lo;
    lo.program = "basalt-server";
    lo.level = config.log_level;
    lo.dir = config.log_dir;
    lo.max_file_bytes = config.log_max_file_size;
    if (absl::Status s = log::Configure(lo); !s.ok()) {
      std::cerr << "basalt-server: " << s.message() << "\n";
      return 1;
    }
  }

  // Signals are taken synchronously by this thread (sigwait); every thread started from here
  // on inherits the blocked mask, so no handler runs inside gRPC or the engine.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Every connection and data file takes a descriptor; the usual soft limit (1024) is far
  // below what a server needs, and the hard limit is the operator's (LimitNOFILE=, ulimit -Hn).
  uint64_t fd_limit_before = 0;
  if (absl::StatusOr<uint64_t> raised = RaiseDescriptorLimit(&fd_limit_before); !raised.ok()) {
    log::Warning(absl::StrCat(raised.status().message(), " (keeping ", fd_limit_before, ")"));
  } else if (*raised != fd_limit_before) {
    std::cout << "basalt-server: descriptor limit raised from " << fd_limit_before << " to " << *raised << std::endl;
  }

  std::shared_ptr<BlockCache> cache;
  if (config.block_cache_size > 0) cache = NewBlockCache(config.block_cache_size);
  // Shared storage: the data directory lives in a Ceph pool instead of on local disk.
  std::unique_ptr<RadosEnv> rados;
  if (!config.rados_pool.empty()) {
    RadosEnvOptions ro;
    ro.ceph_conf = config.ceph_conf;
    ro.pool = config.rados_pool;
    ro.root = config.rados_namespace;
    ro.client_name = config.rados_client;
    ro.chunk_bytes = config.rados_object_size;
    ro.write_bytes = std::min<uint64_t>(ro.write_bytes, ro.chunk_bytes);
    ro.op_timeout = absl::Seconds(config.rados_op_timeout_s);
    absl::StatusOr<std::unique_ptr<RadosEnv>> env = RadosEnv::Connect(ro);
    if (!env.ok()) {
      log::Error(std::string(env.status().message()));
      return 1;
    }
    rados = *std::move(env);
    if (config.cluster) {
      // Fenced by a master (blocklisted): it ends before any caller sees the refusal, so the
      // callers go elsewhere (common/rados_env.h).
      SetFencedHandler(+[](std::string_view what) {
        log::Error(absl::StrCat("fenced by the master (", AV(what), "): its regions are served elsewhere; stopping now"));
        std::_Exit(3);
      });
    }
    std::cout << "basalt-server: data in RADOS pool " << ro.pool << ", namespace " << ro.root << " (client "
              << rados->ClientAddress() << ")" << std::endl;
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
    return 1;
  }
  const ChannelSecurity to_master = *std::move(own_security);
  // Its ZooKeeper identity (zookeeper_auth_file), read before anything starts.
  std::string zk_identity;
  if (!config.zookeeper_auth_file.empty()) {
    absl::StatusOr<std::string> identity = ReadZooKeeperIdentity(config.zookeeper_auth_file);
    if (!identity.ok()) {
      log::Error(std::string(identity.status().message()));
      return 2;
    }
    zk_identity = *std::move(identity);
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
      return 1;
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
      return 1;
    }
    transactions = *std::move(opened);
    topts.queue_compaction_filter = QueueEvictionFilter(transactions.get());
    absl::StatusOr<std::unique_ptr<Catalog>> catalog_opened = Catalog::Open(topts);
    if (!catalog_opened.ok()) {
      log::Error(absl::StrCat("opening data dir ", config.data_dir, ": ", catalog_opened.status().ToString()));
      return 1;
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
    return 1;
  }
  gopts.access = access->get();
  gopts.authn = authn.get();
  if (!quotas.ok()) {
    log::Error(absl::StrCat("loading ", kQuotaTableName, ": ", quotas.status().message()));
    tables->CloseAll().IgnoreError();
    return 1;
  }
  gopts.quotas = quotas->get();
  std::unique_ptr<HttpFront> http;
  std::string http_off = "http_listen=off";  // why there is no HTTP port, said once serving
  if (!config.http_listen.empty()) {
    HttpFront::Options hopts;
    hopts.listen = config.http_listen;
    hopts.routes = StatusRoutes(&registry, page_data, [&config] { return SettingsInForce(config); });
    // The gRPC port's certificate and callers (docs/DESIGN.md §12): TLS whenever it has TLS; with auth,
    // global A for the pages.
    hopts.tls_cert = config.tls_cert;
    hopts.tls_key = config.tls_key;
    hopts.tls_ca = config.tls_ca;
    hopts.authorize = HttpAuthorizer(authn.get(), access->get(), config.metrics_users);
    hopts.log = [](std::string_view line) { log::Warning(line); };
    absl::StatusOr<std::unique_ptr<HttpFront>> started = HttpFront::Start(std::move(hopts));
    if (started.ok()) {
      http = *std::move(started);
      counters.http_address = http->address();
    } else if (config.http_listen_set) {
      log::Error(std::string(started.status().message()));
      tables->CloseAll().IgnoreError();
      return 1;
    } else {
      http_off = std::string(started.status().message());
    }
  }
  if (!IsLoopbackHost(host)) {
    if (config.tls_cert.empty()) {
      log::Warning(absl::StrCat("serving without TLS on ", config.listen,
                                ", which is not a loopback address: calls cross the network in plain text (set "
                                "tls_cert and tls_key)"));
    }
    if (!config.auth) {
      log::Warning(absl::StrCat("serving without authentication on ", config.listen,
                                ": anyone who reaches it may read, write, create and drop every table (set auth=true)"));
    }
  }
  GrpcServer server(gopts, &data, &admin, &counters);
  if (absl::Status s = server.Start(); !s.ok()) {
    log::Error(std::string(s.message()));
    tables->CloseAll().IgnoreError();
    return 1;
  }
  VerbsControl verbs_control;
  absl::StatusOr<std::unique_ptr<verbs::VerbsServer>> verbs_server =
      StartVerbs(config, &data, server.Scheduler(), &verbs_control, &registry, access->get(), quotas->get());
  if (!verbs_server.ok()) {
    log::Error(std::string(verbs_server.status().message()));
    server.Shutdown(std::chrono::milliseconds(0));
    tables->CloseAll().IgnoreError();
    return 1;
  }
  counters.verbs.store(&verbs_control);
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
    ZooKeeper::Options zo;
    zo.quorum = config.zookeeper_quorum;
    zo.session_timeout = absl::Milliseconds(config.zookeeper_session_timeout_ms);
    zo.digest = zk_identity;
    if (config.cluster) zo.lease = &lease;
    zo.on_expired = [](std::string_view why) {
      log::Error(absl::StrCat(AV(why), ": this server is being fenced and its regions reopened elsewhere; stopping now"));
      std::_Exit(3);
    };
    ServerRegistration me;
    me.name = absl::StrCat(host, ":", server.port());
    me.start_code = start_code;
    if (rados != nullptr) me.rados_client = rados->ClientAddress();
    me.wal_dir = own_wal_dir;
    absl::StatusOr<std::unique_ptr<ZooKeeper>> joined = JoinCluster(zo, paths, me);
    if (!joined.ok()) {
      log::Error(absl::StrCat("joining the cluster at ", config.zookeeper_quorum, ": ", joined.status().message()));
      if (*verbs_server != nullptr) (*verbs_server)->Shutdown();
      server.Shutdown(std::chrono::milliseconds(0));
      tables->CloseAll().IgnoreError();
      return 1;
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
      if (*verbs_server != nullptr) (*verbs_server)->Shutdown();
      server.Shutdown(std::chrono::milliseconds(0));
      tables->CloseAll().IgnoreError();
      return 1;
    }
  }

  // Serving (and registered, in a cluster): systemd's Type=notify unit is started.
  if (absl::Status s = NotifySystemd(absl::StrCat("READY=1\nSTATUS=serving on ", host, ":", server.port())); !s.ok()) {
    log::Warning(std::string(s.message()));
  }
  int sig = 0;
  while (sigwait(&sigs, &sig) != 0) {
  }
  NotifySystemd("STOPPING=1").IgnoreError();
  std::cout << "basalt-server: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ", shutting down" << std::endl;
  http.reset();  // no page reads what the shutdown takes down
  if (*verbs_server != nullptr) (*verbs_server)->Shutdown();  // its writes run on the gRPC pool
  server.Shutdown(kShutdownGrace);
  absl::Status closed = tables->CloseAll();
  if (!closed.ok()) {
    log::Error(closed.ToString());
    return 1;
  }
  std::cout << "basalt-server: stopped" << std::endl;
  return 0;
}

}  // namespace
}  // namespace basalt::server

int main(int argc, char** argv) { return basalt::server::Run(argc, argv); }
