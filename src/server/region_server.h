// basalt-server's parts (docs/DESIGN.md §2), a standalone server or a cluster's region server: its
// tables (server_tables.h: a catalogue of its own, or the regions the master opens here), the
// data and admin services over them, security (grants, tokens, TLS) and quotas, the fronts (gRPC,
// verbs, the TCP path, the HBase port, the HTTP port with its status page and metrics) and its membership in
// the cluster's ZooKeeper. The process around it is a Daemon (src/daemon/daemon.h: settings, log,
// signals, shared storage, the HTTP port, readiness), as the master's Master is.
//
//   Daemon daemon("basalt-server");
//   ... daemon.Settle, daemon.Start ...
//   absl::StatusOr<std::unique_ptr<RegionServer>> server = RegionServer::Start(&daemon, config);
//   daemon.Ready(...); daemon.WaitForStop();
//   (*server)->Stop();
//
// Start assembles the parts in order, each started before the ones that call it, and says on
// stdout what it serves where; a part that fails stops what was started and is the error. Stop
// takes them down the other way round: the HTTP port (whose pages read the others), the HBase
// port (unpublished first), verbs, the TCP path, gRPC (calls in flight get kShutdownGrace to finish), then every
// region closes, flushing.
//
// Thread-safety: Start, Stop and the destructor from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "common/rados_env.h"
#include "common/zookeeper.h"
#include "src/base/config.h"
#include "src/base/http_front.h"
#include "src/cluster/batch_router.h"
#include "src/daemon/daemon.h"
#include "src/front/grpc_server.h"
#include "src/front/hbase/hbase_front.h"
#include "src/front/hbase/hbase_zk.h"
#include "src/front/status_page.h"
#include "src/front/tcp_front.h"
#include "src/front/verbs_front.h"
#include "src/security/auth.h"
#include "src/server/server_tables.h"
#include "storage/block_cache.h"

namespace basalt::server {

class RegionServer {
 public:
  // Calls in flight get this long to finish after SIGTERM before they are cancelled.
  static constexpr std::chrono::seconds kShutdownGrace{10};

  // Assembles and starts every part; `zk`: its ZooKeeper session's settings (Daemon::
  // ZooKeeperSession), for its membership. `daemon` and `config` must outlive the server.
  static absl::StatusOr<std::unique_ptr<RegionServer>> Start(Daemon* daemon, const ServerConfig& config,
                                                             ZooKeeper::Options zk);
  ~RegionServer();  // what Start started and Stop did not stop, stopped at once
  RegionServer(const RegionServer&) = delete;
  RegionServer& operator=(const RegionServer&) = delete;

  // HOST:PORT of its gRPC port.
  std::string address() const;
  // Stops serving (calls in flight get kShutdownGrace) and closes every region. The first close
  // error, if any (a region that could not flush).
  absl::Status Stop();

 private:
  RegionServer(Daemon* daemon, const ServerConfig& config, ZooKeeper::Options zk);
  // The steps of Start, in order.
  absl::Status OpenTables();
  absl::Status StartSecurity();
  absl::Status StartHttp();
  absl::Status StartFronts();
  absl::Status StartHBase();
  void StartLatencyGraph();
  absl::Status JoinCluster();
  // The status page's facts, at each view.
  StatusPageData PageData();
  // Stops the fronts (calls in flight get `grace`), then closes the regions.
  absl::Status Shutdown(std::chrono::milliseconds grace);

  Daemon* const daemon_;
  const ServerConfig& config_;
  std::shared_ptr<BlockCache> cache_;
  std::unique_ptr<RadosEnv> rados_;  // the shared storage, when rados_pool is set
  std::string host_;
  const int64_t start_code_;  // when it started (ms): tells this run apart from others at the same address
  // Its ZooKeeper session's lease (common/zookeeper.h): unbounded until the session is made, then
  // no region is served while it lapses, and the server stops.
  SessionLease lease_;
  ClusterPaths paths_;
  ChannelSecurity to_master_;  // its calls to the master (splits, grants) go as this server
  ZooKeeper::Options zk_options_;
  // The cluster's ZooKeeper once joined (null before): the tables ask the master through it.
  std::atomic<ZooKeeper*> joined_zk_{nullptr};
  TablesContext tables_context_;
  std::unique_ptr<ServerTables> tables_;
  ServerCounters counters_;
  // Metrics (docs/DESIGN.md §11): counted by the transports, read at scrape from the tables,
  // served on the HTTP port, which goes before the registry.
  metrics::Registry registry_;
  std::unique_ptr<DataService> data_;
  std::unique_ptr<AdminService> admin_;
  // Security (docs/DESIGN.md §12) and quotas: kept in basalt:acl and basalt:quota by a standalone
  // server; a region server follows the master's.
  std::unique_ptr<AccessController> access_;
  std::unique_ptr<Quotas> quotas_;
  std::unique_ptr<Authenticator> authn_;
  std::shared_ptr<grpc::ServerCredentials> tls_;
  // Its session, whose watches load the grants into access_, ends before access_ goes.
  std::unique_ptr<ZooKeeper> zk_;
  // The status page's latency graph, made once the transports have registered their histograms.
  std::unique_ptr<LatencyHistory> history_;
  std::atomic<const LatencyHistory*> history_ready_{nullptr};
  std::unique_ptr<GrpcServer> grpc_;
  VerbsControl verbs_control_;
  std::unique_ptr<verbs::VerbsServer> verbs_;
  VerbsControl tcp_control_;
  std::unique_ptr<TcpServer> tcp_;
  // A cluster's region server: where its HBase port's replicated rows go (before hbase_: after it).
  std::unique_ptr<BatchRouter> router_;
  std::unique_ptr<hbase::HBaseFront> hbase_;
  std::unique_ptr<hbase::ZkPublisher> hbase_zk_;  // its records in ZooKeeper, when published
  std::unique_ptr<HttpFront> http_;  // its pages read the others: it goes first
  std::string http_said_;            // where its pages are, or why there are none
  bool stopped_ = false;
};

}  // namespace basalt::server
