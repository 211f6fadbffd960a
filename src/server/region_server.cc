#include "src/server/region_server.h"

#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "common/tls.h"
#include "src/front/hbase/zk_records.h"
#include "src/schema/meta.h"
#include "src/security/authorize.h"
#include "src/services/server_metrics.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

RegionServer::RegionServer(Daemon* daemon, const ServerConfig& config, ZooKeeper::Options zk)
    : daemon_(daemon), config_(config), start_code_(absl::ToUnixMillis(absl::Now())), zk_options_(std::move(zk)) {}

absl::StatusOr<std::unique_ptr<RegionServer>> RegionServer::Start(Daemon* daemon, const ServerConfig& config,
                                                                  ZooKeeper::Options zk) {
  std::unique_ptr<RegionServer> s(new RegionServer(daemon, config, std::move(zk)));
  BASALT_RETURN_IF_ERROR(s->OpenTables());
  BASALT_RETURN_IF_ERROR(s->StartSecurity());
  BASALT_RETURN_IF_ERROR(s->StartHttp());
  daemon->WarnIfExposed(config, "read, write, create and drop every table");
  BASALT_RETURN_IF_ERROR(s->StartFronts());
  BASALT_RETURN_IF_ERROR(s->StartHBase());
  s->StartLatencyGraph();
  std::cout << "basalt-server: verbs " << s->verbs_control_.state << std::endl;
  log::Record(log::Level::kInfo, absl::StrCat("verbs ", s->verbs_control_.state));
  std::cout << "basalt-server: tcp path " << s->tcp_control_.state << std::endl;
  log::Record(log::Level::kInfo, absl::StrCat("tcp path ", s->tcp_control_.state));
  if (absl::Status named = s->tables_->tables()->SetServerName(s->address()); !named.ok()) {
    log::Error(std::string(named.message()));
  }
  std::cout << "basalt-server: " << s->http_said_ << std::endl;
  const size_t tables = s->tables_->tables()->size();
  log::Record(log::Level::kInfo, absl::StrCat("listening on ", s->address(), " (data dir ", config.data_dir, ", ",
                                              tables, " tables)"));
  std::cout << "basalt-server listening on " << s->address() << " (data dir " << config.data_dir << ", " << tables
            << " tables)" << std::endl;
  BASALT_RETURN_IF_ERROR(s->JoinCluster());
  if (!config.port_file.empty()) {
    // WriteFileDurably writes PORT_FILE.tmp and renames it: a reader never sees half a number.
    // Written after the "listening" line, so whoever waits for the file also sees the line.
    absl::Status written = Env::Default()->WriteFileDurably(config.port_file, absl::StrCat(s->grpc_->port(), "\n"));
    if (!written.ok()) return absl::Status(written.code(), absl::StrCat("writing port file: ", written.message()));
  }
  return s;
}

RegionServer::~RegionServer() {
  if (!stopped_) Shutdown(std::chrono::milliseconds(0)).IgnoreError();
  joined_zk_.store(nullptr);
  zk_.reset();  // before access_ and quotas_, whose watches it runs
}

std::string RegionServer::address() const { return absl::StrCat(host_, ":", grpc_->port()); }

absl::Status RegionServer::Stop() { return Shutdown(kShutdownGrace); }

absl::Status RegionServer::Shutdown(std::chrono::milliseconds grace) {
  stopped_ = true;
  http_.reset();      // no page reads what the shutdown takes down
  hbase_zk_.reset();  // unpublished before the port stops: no client is sent to a port that is closing
  if (hbase_ != nullptr) hbase_->Shutdown();  // its writes run on the gRPC pool
  if (verbs_ != nullptr) verbs_->Shutdown();  // as these do
  if (tcp_ != nullptr) tcp_->Shutdown();
  if (grpc_ != nullptr) grpc_->Shutdown(grace);
  if (tables_ == nullptr) return absl::OkStatus();
  return tables_->Close();
}

absl::Status RegionServer::OpenTables() {
  if (config_.block_cache_size > 0) cache_ = NewBlockCache(config_.block_cache_size);
  // Shared storage: the data directory lives in a Ceph pool instead of on local disk. A cluster's
  // region server fenced by a master (blocklisted) stops at once.
  BASALT_ASSIGN_OR_RETURN(rados_, daemon_->ConnectRados(config_, ServerTables::FencedWords(config_)));
  if (rados_ != nullptr) {
    std::cout << "basalt-server: data in RADOS pool " << config_.rados_pool << ", namespace "
              << config_.rados_namespace << " (client " << rados_->ClientAddress() << ")" << std::endl;
  }
  int unused_port;
  SplitHostPort(config_.listen, &host_, &unused_port).IgnoreError();  // validated by ParseCommandLine
  paths_.parent = config_.zookeeper_znode_parent;
  BASALT_ASSIGN_OR_RETURN(to_master_, OwnChannelSecurity(config_));
  tables_context_.config = &config_;
  tables_context_.env = rados_.get();
  tables_context_.region.block_cache = cache_.get();
  tables_context_.region.memstore_flush_size = config_.memstore_flush_size;
  tables_context_.region.wal_recovery = config_.wal_recovery;
  tables_context_.region.log = [](std::string_view line) { log::Info(line); };
  tables_context_.host = host_;
  tables_context_.start_code = start_code_;
  tables_context_.lease = &lease_;
  tables_context_.zk = &joined_zk_;
  tables_context_.paths = &paths_;
  tables_context_.to_master = &to_master_;
  BASALT_ASSIGN_OR_RETURN(tables_, ServerTables::Open(tables_context_));
  counters_.block_cache = cache_.get();
  RegisterScrapedMetrics(&registry_, tables_->tables(), &counters_);
  data_ = tables_->Data();
  admin_ = tables_->Admin(&counters_);
  RegisterPeerMetrics(&registry_, [admin = admin_.get()](rpc::ListPeersResponse* all) {
    return admin->ListPeers(rpc::ListPeersRequest(), all);
  });
  return absl::OkStatus();
}

absl::Status RegionServer::StartSecurity() {
  AccessController::Options acopts;
  acopts.enabled = config_.auth;
  acopts.superusers = config_.superusers;
  BASALT_ASSIGN_OR_RETURN(access_, AccessController::Open(acopts, tables_->acl_region()));
  if (config_.auth) {
    BASALT_ASSIGN_OR_RETURN(authn_, Authenticator::Open(config_.auth_users_file, access_.get()));
  }
  if (!config_.tls_cert.empty()) {
    BASALT_ASSIGN_OR_RETURN(tls_, ServerTlsCredentials(config_.tls_cert, config_.tls_key, config_.tls_ca));
  }
  absl::StatusOr<std::unique_ptr<Quotas>> quotas = Quotas::Open(tables_->quota_region());
  if (!quotas.ok()) {
    return absl::Status(quotas.status().code(), absl::StrCat("loading ", kQuotaTableName, ": ", quotas.status().message()));
  }
  quotas_ = *std::move(quotas);
  admin_->set_namespace_cleanup(
      [grants = access_.get(), quotas = quotas_.get()](const std::string& ns) { return ForgetNamespace(grants, quotas, ns); });
  admin_->set_table_cleanup([grants = access_.get(), quotas = quotas_.get()](const std::string& table) {
    return ForgetTable(grants, quotas, table);
  });
  return absl::OkStatus();
}

StatusPageData RegionServer::PageData() {
  StatusPageData d;
  d.program = "basalt-server";
  d.server_name = tables_->tables()->ServerName();
  d.now = absl::Now();
  FillFromAdmin(admin_.get(), &d);
  d.log = log::Recent(200);
  if (const LatencyHistory* h = history_ready_.load()) {
    d.latency = h->Get();
    d.latency_interval = h->interval();
  }
  return d;
}

// The HTTP port; with auth, global A for the pages.
absl::Status RegionServer::StartHttp() {
  std::string off;  // why there is no HTTP port, said once serving
  BASALT_ASSIGN_OR_RETURN(http_, daemon_->StartHttp(config_,
                                                    StatusRoutes(&registry_, [this] { return PageData(); },
                                                                 [this] { return SettingsInForce(config_); }),
                                                    HttpAuthorizer(authn_.get(), access_.get(), config_.metrics_users),
                                                    &off));
  if (http_ == nullptr) {
    // (Said with the other start-up facts, on stdout, as "verbs off: ..." is: the default port
    // taken is not an error.)
    http_said_ = absl::StrCat("metrics off: ", off);
    return absl::OkStatus();
  }
  counters_.http_address = http_->address();
  const std::string url = absl::StrCat(http_->tls() ? "https://" : "http://", http_->address());
  http_said_ = absl::StrCat("metrics on ", url, "/metrics, status on ", url, "/");
  return absl::OkStatus();
}

absl::Status RegionServer::StartFronts() {
  GrpcServer::Options o;
  o.listen = config_.listen;
  o.cq_threads = config_.cq_threads;
  o.handler_threads = config_.handler_threads;
  o.max_concurrent_calls = config_.max_concurrent_calls;
  o.max_request_bytes = config_.max_request_bytes;
  o.enable_echo = config_.enable_echo;
  o.max_reply_bytes_in_flight = static_cast<int64_t>(config_.max_reply_bytes_in_flight);
  o.stalled_reply_timeout_ms = config_.stalled_reply_timeout_ms;
  o.scanner_lease_ms = config_.scanner_lease_ms;
  o.max_scanners_per_user = static_cast<int>(config_.max_scanners_per_user);
  o.echo_max_reply_bytes = static_cast<uint32_t>(config_.echo_max_reply_bytes);
  o.reserved_fds = config_.reserved_fds;
  o.log = [](std::string_view line) { log::Warning(line); };
  o.metrics = &registry_;
  o.tls = tls_;
  o.access = access_.get();
  o.authn = authn_.get();
  o.quotas = quotas_.get();
  grpc_ = std::make_unique<GrpcServer>(o, data_.get(), admin_.get(), &counters_);
  BASALT_RETURN_IF_ERROR(grpc_->Start());
  // Verbs: its writes on the gRPC pool, as the HBase port's.
  BASALT_ASSIGN_OR_RETURN(verbs_, StartVerbs(config_, data_.get(), grpc_->Scheduler(), &verbs_control_, &registry_,
                                             access_.get(), quotas_.get()));
  counters_.verbs.store(&verbs_control_);
  // The TCP path: the same handlers, its writes on the gRPC pool too.
  BASALT_ASSIGN_OR_RETURN(tcp_, StartTcp(config_, data_.get(), grpc_->Scheduler(), &tcp_control_, &registry_,
                                         access_.get(), quotas_.get()));
  counters_.tcp.store(&tcp_control_);
  return absl::OkStatus();
}

// The HBase port (docs/DESIGN.md §15), its writes on the gRPC pool as the verbs transport's.
absl::Status RegionServer::StartHBase() {
  if (config_.hbase_listen.empty()) return absl::OkStatus();
  hbase::HBaseFront::Options o;
  o.port.listen = config_.hbase_listen;
  if (!config_.tls_cert.empty()) {
    // HBase 2.6's native TLS (hbase.client.netty.tls.enabled): the gRPC port's certificate, and
    // its CA for client certificates.
    absl::StatusOr<std::shared_ptr<TlsContext>> tls = TlsContext::Server(config_.tls_cert, config_.tls_key, config_.tls_ca);
    if (!tls.ok()) return absl::InvalidArgumentError(absl::StrCat("the HBase port's TLS: ", tls.status().message()));
    o.port.tls = *std::move(tls);
  }
  if (config_.auth) {
    // Every connection names its user by its client certificate, and every call is authorised
    // against the grants, as the gRPC front end's (hbase_service.h).
    o.authn = authn_.get();
    o.access = access_.get();
  }
  // Its reads run on its loops, as the gRPC front end's on its completion queues: as many.
  o.port.loop_threads = config_.cq_threads > 0 ? config_.cq_threads : static_cast<int>(std::thread::hardware_concurrency());
  o.port.max_calls_in_flight = config_.max_concurrent_calls;
  o.port.calls_in_flight_setting = "max_concurrent_calls";
  o.port.max_reply_bytes_in_flight = static_cast<int64_t>(config_.max_reply_bytes_in_flight);
  o.port.max_request_bytes = static_cast<uint32_t>(config_.max_request_bytes);
  o.port.log = [](std::string_view line) { log::Warning(absl::StrCat("hbase port: ", AV(line))); };
  o.advertised_host = host_;
  o.start_code = start_code_;
  o.schedule = grpc_->Scheduler();
  o.process = tables_->what();
  hbase::ServiceParts parts;
  parts.data = data_.get();
  parts.admin = admin_.get();
  parts.quotas = quotas_.get();
  parts.scanner_lease_ms = config_.scanner_lease_ms;
  parts.max_scanners_per_user = static_cast<int>(config_.max_scanners_per_user);
  parts.cluster_id = tables_->cluster_id();
  parts.log = [](std::string_view line) { log::Warning(line); };
  if (config_.cluster) {
    // An HBase source sends a batch to one region server, whatever regions its rows are in.
    BatchRouter::Options ro;
    ro.zk = &joined_zk_;
    ro.paths = paths_;
    ro.security = to_master_;
    ro.self = address();
    ro.local = [data = data_.get()](const rpc::BatchMutateRequest& req, rpc::BatchMutateResponse* resp) {
      return data->BatchMutate(req, resp);
    };
    router_ = std::make_unique<BatchRouter>(std::move(ro));
    parts.apply_replicated = [router = router_.get()](const rpc::BatchMutateRequest& batch) { return router->Apply(batch); };
  }
  hbase_ = std::make_unique<hbase::HBaseFront>(o);
  tables_->ServeHBase(hbase_.get(), parts);
  absl::Status s = hbase_->Start();
  if (s.ok() && !config_.hbase_port_file.empty()) {
    s = Env::Default()->WriteFileDurably(config_.hbase_port_file, absl::StrCat(hbase_->port(), "\n"));
  }
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("the HBase port (", config_.hbase_listen, "): ", s.message()));
  hbase_->RegisterMetrics(&registry_);
  std::cout << "basalt-server: HBase clients on " << host_ << ":" << hbase_->port() << std::endl;
  if (config_.hbase_zookeeper_quorum.empty()) return absl::OkStatus();
  hbase::ZkPublisher::Options zp;
  zp.session.quorum = config_.hbase_zookeeper_quorum;
  zp.session.session_timeout = absl::Milliseconds(config_.zookeeper_session_timeout_ms);
  zp.parent = config_.hbase_znode_parent;
  zp.self = hbase_->self()->name();
  zp.cluster_id = parts.cluster_id;
  zp.sinks = {zp.self};  // (a standalone server: a cluster's active master lists its region servers)
  zp.log = [](std::string_view line) { log::Warning(line); };
  absl::StatusOr<std::unique_ptr<hbase::ZkPublisher>> published = hbase::ZkPublisher::Start(zp);
  if (!published.ok()) {
    return absl::Status(published.status().code(),
                        absl::StrCat("publishing the HBase port in ZooKeeper ", config_.hbase_zookeeper_quorum, ": ",
                                     published.status().message()));
  }
  hbase_zk_ = *std::move(published);
  std::cout << "basalt-server: HBase port published in ZooKeeper " << config_.hbase_zookeeper_quorum << " under "
            << config_.hbase_znode_parent << std::endl;
  return absl::OkStatus();
}

// The graph's series: the data operations' latency histograms, as /metrics has them.
void RegionServer::StartLatencyGraph() {
  std::vector<LatencyHistory::Series> series;
  for (const char* op : {"Get", "Mutate", "Scan"}) {
    series.push_back({SnakeCase(op), MakeOpMetrics(&registry_, op, "grpc", true).latency});
  }
  if (verbs_ != nullptr) {
    for (const char* op : {"Get", "Mutate"}) {
      series.push_back({SnakeCase(op) + " (verbs)", MakeOpMetrics(&registry_, op, "verbs", true).latency});
    }
  }
  if (tcp_ != nullptr) {
    for (const char* op : {"Get", "Mutate"}) {
      series.push_back({SnakeCase(op) + " (tcp)", MakeOpMetrics(&registry_, op, "tcp", true).latency});
    }
  }
  history_ = std::make_unique<LatencyHistory>(std::move(series), absl::Milliseconds(config_.latency_graph_interval_ms),
                                              30);
  history_ready_.store(history_.get());
}

// Cluster membership: registered once it serves. When ZooKeeper ends the session, a master fences
// this server (its RADOS client can no longer write) and its regions go elsewhere, so it stops at
// once, as an HBase region server aborts on YouAreDeadException.
absl::Status RegionServer::JoinCluster() {
  if (config_.zookeeper_quorum.empty()) return absl::OkStatus();
  if (tables_->leased()) zk_options_.lease = &lease_;
  zk_options_.on_expired = [](std::string_view why) {
    log::Error(absl::StrCat(AV(why), ": this server is being fenced and its regions reopened elsewhere; stopping now"));
    std::_Exit(Daemon::kFenced);
  };
  ServerRegistration me;
  me.name = address();
  me.start_code = start_code_;
  if (rados_ != nullptr) me.rados_client = rados_->ClientAddress();
  me.wal_dir = tables_->log_dir();
  if (hbase_ != nullptr) me.hbase = absl::StrCat(host_, ":", hbase_->port());
  absl::StatusOr<std::unique_ptr<ZooKeeper>> joined = server::JoinCluster(zk_options_, paths_, me);
  if (!joined.ok()) {
    return absl::Status(joined.status().code(), absl::StrCat("joining the cluster at ", config_.zookeeper_quorum, ": ",
                                                             joined.status().message()));
  }
  zk_ = *std::move(joined);
  joined_zk_.store(zk_.get());
  tables_->Followed(zk_.get(), access_.get(), quotas_.get());
  std::cout << "basalt-server: registered in ZooKeeper " << config_.zookeeper_quorum << " as " << paths_.live() << "/"
            << me.NodeName() << " (session 0x" << absl::StrCat(absl::Hex(zk_->session_id())) << ")" << std::endl;
  return absl::OkStatus();
}

}  // namespace basalt::server
