// basalt-master's core (docs/DESIGN.md §6): one active master among any number, elected through
// ZooKeeper. The active one
//  - fences the master active before it (its RADOS client is blocklisted), then keeps the
//    catalogue and basalt:meta on the shared storage and serves them, with every admin call,
//    over gRPC, naming itself in <parent>/meta-server for clients;
//  - places every region of every enabled table on a live region server (`basalt-server
//    --cluster`), the least loaded by region count, adopting the regions a server already holds
//    (a master that takes over finds them open);
//  - when a region server dies (its live node goes): fences it (RadosEnv::Fence: blocklist, newest
//    OSD map, a write into every placement group), so that a paused server that wakes up can
//    never again write or acknowledge; splits its log into its regions' recovered.edits; places
//    its regions on the servers left; then drops its registration. Each step may run again: a
//    master that dies part way leaves the registration, and the next one does the rest;
//  - when a region server joins: assigns what could not be placed (FAILED_OPEN);
//  - moves regions on request (move) and balances them by count (balancer; on its own every
//    balancer_period, as HBase's master does every 5 minutes): a region closes on its server,
//    flushing, and opens on the other, whose clients find it through meta;
//  - shows the region servers with their regions and load (status 'detailed').
//  - unassigns a region (closed, recorded so, left closed by the balancer and a take-over) and
//    assigns it again.
// Work runs on one thread of the master's own, in order (ZooKeeper's callbacks only post it).
// The parts: the catalogue (src/catalog/catalog.h: tables, meta, the regions' states), where the
// regions serve (assignment_manager.h: servers, placement, moves, the balancer's plan), the
// handles on regions servers hold (remote_region.h), and here the election, fencing and
// recovery of dead servers, and serving.
// Not built yet, and refused rather than imitated: procedures for a split or merge a master
// failover cuts short.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/rados_env.h"
#include "common/tls.h"
#include "common/zookeeper.h"
#include "src/master/assignment_manager.h"
#include "src/master/remote_region.h"
#include "src/replication/peers.h"
#include "src/security/access_control.h"
#include "src/security/auth.h"
#include "src/cluster/cluster_member.h"
#include "src/front/grpc_server.h"
#include "src/front/hbase/hbase_front.h"
#include "src/front/hbase/hbase_zk.h"
#include "src/front/hbase/zk_records.h"
#include "src/services/service.h"
#include "src/front/status_page.h"

namespace basalt::server {
class GrpcServer;
class DataService;
class AdminService;
struct ServerCounters;
class Catalog;
}  // namespace basalt::server

namespace basalt::master {

class Master final : public server::ClusterAdmin {
 public:
  struct Options {
    std::string name;                  // how this master is known (HOST:PORT or HOST:PID)
    ZooKeeper::Options zk;
    server::ClusterPaths paths;
    RadosEnv* rados = nullptr;         // the shared storage (nullptr: it can fence nothing and serves nothing)
    std::string data_dir = "./basalt-data";  // in `rados`: the region servers' data_dir
    std::string listen = "127.0.0.1:16000";  // gRPC, once active (port 0: any)
    std::string port_file;             // once serving: the bound port, written atomically
    absl::Duration server_timeout = absl::Seconds(30);  // each call to a region server
    // The balancer runs on its own this often (0: only when asked); HBase's default is 5 min.
    absl::Duration balancer_period = absl::Minutes(5);
    std::function<void(std::string_view)> log;
    metrics::Registry* metrics = nullptr;  // the gRPC calls are counted here once active (none: not counted)
    // Security (docs/DESIGN.md §12), as basalt-server's settings say it: TLS on the
    // master's port (null: plain text); with `auth`, every call authenticated (users_file: the
    // tokens) and authorised against basalt:acl, which the master keeps; `client`: how its
    // channels to the region servers are secured (its certificate as the client's).
    std::shared_ptr<grpc::ServerCredentials> tls;
    bool auth = false;
    std::string users_file;
    std::vector<std::string> superusers;
    std::vector<std::string> metrics_users;  // with auth: who may read the HTTP port's /metrics
    std::string http_tls_cert, http_tls_key, http_tls_ca;  // the PEM files (main.cc's HTTP port)
    // Under tls_cert, the HBase port's TLS (its certificate and CA, as the gRPC port's).
    std::shared_ptr<const TlsContext> hbase_tls;
    ChannelSecurity client;
    // The HBase port (docs/DESIGN.md §15), once active: HOST:PORT (empty: none; port 0: any),
    // its port written to hbase_port_file, the cluster's HBase records published in `zk`'s
    // quorum under hbase_znode_parent.
    std::string hbase_listen;
    std::string hbase_port_file;
    std::string hbase_znode_parent = "/hbase";
  };

  // Connects and enters the election; returns at once (active or a backup).
  static absl::StatusOr<std::unique_ptr<Master>> Start(Options options);
  ~Master();

  bool active() const;
  // Still the active master: elected, and its session lease held (a master cut off from
  // ZooKeeper for its session timeout may have been replaced already).
  bool Leading() const;
  // OK while Leading(); else Unavailable naming the active master where it can: every call to
  // its port is answered so once it is deposed.
  absl::Status CheckLeading() const;
  // The live servers' node names ("<name>,<start code>") as the active master sees them.
  std::vector<std::string> LiveServers() const;
  // HOST:PORT it serves on once active ("" before).
  std::string address() const;
  // Not OK once the active master could not serve (its storage or port): the process should end.
  absl::Status fatal() const;
  // Whether `caller` may read `route` of this master's HTTP port: server::HttpAuthorizer over
  // its grants once active; a backup under auth (no grants loaded) answers the open routes only.
  absl::Status AuthorizeHttp(const server::HttpCaller& caller, const server::HttpFront::Route& route) const;
  // True once this master's ZooKeeper session expired while it was a backup (never active): it
  // holds nothing and did nothing, so the process may replace it with a new Master, a new
  // session and a new place in the election, instead of ending (an active master's expiry ends
  // the process: exit 3). A backup that never takes over after this.
  bool expired_backup() const;

  // server::ClusterAdmin (the Admin service's move, balancer and status on the active master).
  absl::Status Move(std::string_view region, std::string_view server) override;
  // AssignmentManager::Move and Balance, once serving.
  absl::Status Balance(rpc::BalanceResponse* resp) override;
  absl::Status Unassign(std::string_view region) override;
  absl::Status AssignRegion(std::string_view region) override;
  void FillStatus(rpc::StatusResponse* resp) override;
  // The status page's figures (src/front/status_page.h): the Admin service's status and every
  // table's regions once active; a backup's mode says so and names the active master.
  void FillPage(server::StatusPageData* page) const;
  // The snapshots the catalogue keeps, once active (none before).
  server::SnapshotTotals Snapshots() const;

 private:
  explicit Master(Options options);
  void Post(std::function<void()> task);
  void WorkLoop();
  void BecomeActive();
  // Fences the master that was active before (its RADOS client) and names this one.
  absl::Status TakeOverFromPreviousMaster();
  // Opens the catalogue and meta, placing every region (after splitting dead servers' logs),
  // and serves them.
  absl::Status Serve();
  // The HBase port and its records in ZooKeeper (Serve, with options_.hbase_listen).
  absl::Status ServeHBase(const std::string& host);
  // Lists the live and the registered servers (watching the live ones); recovers every
  // registered server that is no longer live, and assigns what waits for a server.
  void Reconcile();
  // Lists the `live` region servers' HBase ports as the replication sinks (HBase's rs/).
  void ListReplicationSinks(const std::vector<std::string>& live);
  absl::Status FenceServer(const std::string& node, const server::ServerRegistration& reg);
  // At take-over, a server live in ZooKeeper that does not answer (`why`): fenced, its log added
  // to `logs` (split before any region opens), and given no region while its live node lasts.
  absl::Status FenceUnanswering(const std::string& node, const absl::Status& why, std::vector<std::string>* logs);
  // How a master that takes over asks each live server what it holds.
  static constexpr absl::Duration kTakeOverAskTimeout = absl::Seconds(2);
  static constexpr int kTakeOverAsks = 3;
  // Fences a dead server, splits its log and places its regions elsewhere, then drops its
  // registration.
  // Until every live region server follows the replication peers kept (at most 10 s; one that
  // does not is logged).
  absl::Status OpenPeers(const std::string& runs_dir);
  void WaitForPeersFollowed();
  // The live region servers' shipping figures added to each peer's (its state: the worst one's).
  void GatherPeerFigures(rpc::ListPeersResponse* resp);
  // The consistency token's calls for the cluster (replication::Peers's for one process).
  absl::StatusOr<std::map<std::string, std::string>> LiveRuns();  // run -> its server's address
  absl::StatusOr<rpc::ConsistencyToken> ConsistencyToken();
  absl::StatusOr<std::string> NotReplicated(std::string_view table, const rpc::ConsistencyToken& token);
  absl::Status RecoverServer(const std::string& node, const server::ServerRegistration& reg);
  // The servers as ZooKeeper lists them now: the live ones that are registered (regions go only
  // there: a server registers after its live node is made, and only a registered one can be
  // fenced), and the registrations of the dead ones. `watch`: Reconcile runs when either changes.
  struct Servers {
    std::vector<std::string> live;
    std::map<std::string, server::ServerRegistration> dead;
  };
  absl::StatusOr<Servers> ListServers(bool watch);
  void Log(std::string_view line) const;

  Options options_;
  RegionServers servers_;
  // Where regions serve (the catalogue's placement): before tables_, whose handles it counts.
  AssignmentManager assignment_;
  SessionLease lease_;  // of zk_'s session (before it: ZooKeeper keeps it)
  std::unique_ptr<ZooKeeper> zk_;
  std::unique_ptr<LeaderElection> election_;
  mutable absl::Mutex mu_;
  bool active_ ABSL_GUARDED_BY(mu_) = false;
  bool expired_ ABSL_GUARDED_BY(mu_) = false;  // as a backup: see expired_backup()
  std::string address_ ABSL_GUARDED_BY(mu_);
  absl::Status fatal_ ABSL_GUARDED_BY(mu_);
  // Servers fenced while their live node still exists (FenceUnanswering).
  std::set<std::string> fenced_live_ ABSL_GUARDED_BY(mu_);

  // Serving (once active); the table manager before the services that use it.
  std::unique_ptr<server::Catalog> tables_;
  std::unique_ptr<server::ServerCounters> counters_;
  // The cluster's transaction service (docs/DESIGN.md §7): its log on RADOS beside the data, so a
  // master that takes over (having fenced the previous one) carries on with its state.
  std::unique_ptr<server::TransactionManager> transactions_;
  std::unique_ptr<server::DataService> data_;
  std::unique_ptr<server::AdminService> admin_;
  std::unique_ptr<server::AccessController> access_;  // over tables_'s basalt:acl
  std::unique_ptr<server::Authenticator> authn_;
  std::unique_ptr<server::Quotas> quotas_;  // over tables_'s basalt:quota
  // The replication peers the cluster's region servers ship their logs to, kept here; and the
  // shippers of dead servers' logs (src/replication/peers.h). After tables_: their scope is read
  // there.
  std::unique_ptr<replication::Peers> peers_;
  std::unique_ptr<server::ReplicationPeers> followed_peers_;  // peers_' changes, waited for (admin_'s)
  // server::HttpAuthorizer over access_ and authn_, once they are (Serve).
  std::function<absl::Status(const server::HttpCaller&, const server::HttpFront::Route&)> http_authorize_
      ABSL_GUARDED_BY(mu_);
  std::unique_ptr<server::GrpcServer> grpc_;
  std::unique_ptr<hbase::HBaseFront> hbase_;      // once serving, with options_.hbase_listen
  std::unique_ptr<hbase::ZkPublisher> hbase_zk_;  // its records (before it stops: unpublished first)

  absl::Mutex work_mu_;
  std::deque<std::function<void()>> work_ ABSL_GUARDED_BY(work_mu_);
  bool stop_ ABSL_GUARDED_BY(work_mu_) = false;
  std::thread worker_;
};

}  // namespace basalt::master
