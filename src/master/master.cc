#include "src/master/master.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "src/base/config.h"
#include "src/front/grpc_server.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/hbase_services.h"
#include "src/front/hbase/server_directory.h"
#include "src/schema/cluster_id.h"
#include "src/schema/meta.h"
#include "src/security/authorize.h"
#include "src/services/service.h"
#include "src/catalog/catalog.h"

namespace basalt::master {
namespace {

// The peers' calls on the master: each change kept (Peers), then waited for until every live
// region server follows it, as HBase's peer procedures refresh every region server before they
// finish: once add_peer answers, every edit acknowledged anywhere in the cluster is the peer's.
// (Outside the peers' lock: the servers load the change from the master's ListPeers.)
class FollowedPeers final : public server::ReplicationPeers {
 public:
  struct Cluster {
    std::function<void()> wait;                                  // until the servers follow
    std::function<void(rpc::ListPeersResponse*)> gather;         // their figures
    std::function<absl::StatusOr<rpc::ConsistencyToken>()> token;  // their logs' ends too
    std::function<absl::StatusOr<std::string>(std::string_view, const rpc::ConsistencyToken&)> not_replicated;
  };
  FollowedPeers(replication::Peers* peers, Cluster cluster) : peers_(peers), cluster_(std::move(cluster)) {}
  absl::Status AddPeer(const rpc::ReplicationPeer& peer) override { return Waited(peers_->AddPeer(peer)); }
  absl::Status RemovePeer(std::string_view id) override { return Waited(peers_->RemovePeer(id)); }
  absl::Status UpdatePeer(const rpc::ReplicationPeer& peer) override { return Waited(peers_->UpdatePeer(peer)); }
  absl::Status SetPeerEnabled(std::string_view id, bool enabled) override {
    return Waited(peers_->SetPeerEnabled(id, enabled));
  }
  absl::Status ListPeers(rpc::ListPeersResponse* resp) const override { return peers_->ListPeers(resp); }
  absl::Status ListPeersGathered(rpc::ListPeersResponse* resp) const override {
    BASALT_RETURN_IF_ERROR(peers_->ListPeers(resp));
    cluster_.gather(resp);
    return absl::OkStatus();
  }
  absl::StatusOr<rpc::ConsistencyToken> ConsistencyToken() const override { return cluster_.token(); }
  absl::StatusOr<std::string> NotReplicated(std::string_view table, const rpc::ConsistencyToken& token) const override {
    return cluster_.not_replicated(table, token);
  }

 private:
  absl::Status Waited(absl::Status s) {
    if (s.ok()) cluster_.wait();
    return s;
  }
  replication::Peers* const peers_;
  const Cluster cluster_;
};

// How bad a shipper's state is, for a peer's state across servers (the worst one's).
int Severity(const std::string& state) {
  if (state == "BROKEN") return 3;
  if (state == "RETRYING") return 2;
  if (state == "SHIPPING") return 1;
  return 0;
}

}  // namespace

Master::Master(Options options)
    : options_(std::move(options)),
      servers_(options_.server_timeout, options_.client),
      assignment_(&servers_, [this](std::string_view line) { Log(line); }) {}

Master::~Master() {
  {
    absl::MutexLock l(&work_mu_);
    stop_ = true;
  }
  if (worker_.joinable()) worker_.join();
  hbase_zk_.reset();  // HBase's records first: no HBase client is sent here any more
  zk_.reset();  // ends the session: no callback runs after this, and a backup takes over at once
  if (hbase_ != nullptr) hbase_->Shutdown();  // (its writes run on the gRPC pool)
  if (grpc_ != nullptr) grpc_->Shutdown(std::chrono::milliseconds(0));
  peers_.reset();  // (its shippers read tables_)
  // The regions stay open on their servers (Catalog::CloseAll in a master closes none).
  tables_.reset();
}

absl::StatusOr<std::unique_ptr<Master>> Master::Start(Options options) {
  std::unique_ptr<Master> m(new Master(std::move(options)));
  Master* raw = m.get();
  raw->worker_ = std::thread([raw] { raw->WorkLoop(); });
  ZooKeeper::Options zo = raw->options_.zk;
  zo.lease = &raw->lease_;
  zo.on_expired = [raw](std::string_view why) {
    bool backup;
    {
      absl::MutexLock l(&raw->mu_);
      backup = !raw->active_;
      raw->expired_ = true;  // (a take-over still queued never starts: BecomeActive)
    }
    if (backup) {
      raw->Log(absl::StrCat(AV(why), " while a backup master: joining the election again with a new session"));
      return;
    }
    raw->Log(absl::StrCat(AV(why), ": a backup master takes over; stopping now"));
    std::_Exit(3);
  };
  BASALT_ASSIGN_OR_RETURN(raw->zk_, ZooKeeper::Connect(zo));
  // A secure cluster runs only under nodes its own identity alone may change (docs/DESIGN.md §6).
  if (raw->options_.auth) BASALT_RETURN_IF_ERROR(server::CheckZooKeeperClosed(raw->zk_.get(), raw->options_.paths));
  raw->election_ = std::make_unique<LeaderElection>(raw->zk_.get(), raw->options_.paths.masters(), raw->options_.name,
                                                    [raw] { raw->Post([raw] { raw->BecomeActive(); }); });
  BASALT_RETURN_IF_ERROR(raw->election_->Start());
  if (!raw->active()) {
    // (Elected already, its take-over still queued on the worker: not a backup.)
    absl::StatusOr<std::optional<std::string>> leader = LeaderElection::Leader(raw->zk_.get(), raw->options_.paths.masters());
    if (!raw->election_->is_leader()) {
      raw->Log(absl::StrCat("backup master; the active one is ",
                            leader.ok() && leader->has_value() ? **leader : std::string("(none yet)")));
    }
  }
  return m;
}

void Master::Post(std::function<void()> task) {
  absl::MutexLock l(&work_mu_);
  work_.push_back(std::move(task));
}

void Master::WorkLoop() {
  const absl::Duration period = options_.balancer_period;
  absl::Time next_balance = period > absl::ZeroDuration() ? absl::Now() + period : absl::InfiniteFuture();
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock l(&work_mu_);
      work_mu_.AwaitWithDeadline(
          absl::Condition(+[](Master* m) ABSL_NO_THREAD_SAFETY_ANALYSIS { return m->stop_ || !m->work_.empty(); },
                          this),
          next_balance);
      if (stop_) return;
      if (!work_.empty()) {
        task = std::move(work_.front());
        work_.pop_front();
      }
    }
    if (task) {
      task();
      continue;
    }
    next_balance = absl::Now() + period;
    if (tables_ == nullptr) continue;
    rpc::BalanceResponse done;
    if (absl::Status s = Balance(&done); !s.ok()) Log(absl::StrCat("balancer: ", s.ToString()));
  }
}

bool Master::Leading() const { return lease_.Held() && election_ != nullptr && election_->is_leader(); }

absl::Status Master::CheckLeading() const {
  if (Leading()) return absl::OkStatus();
  absl::StatusOr<std::optional<std::string>> leader =
      lease_.Held() ? LeaderElection::Leader(zk_.get(), options_.paths.masters())
                    : absl::UnavailableError("its ZooKeeper session lease has lapsed");
  return absl::UnavailableError(absl::StrCat(
      "master ", options_.name, " is no longer the active one; ",
      leader.ok() && leader->has_value() ? absl::StrCat("the active master is ", **leader)
                                         : "find the active master in ZooKeeper (meta-server)"));
}

bool Master::active() const {
  absl::MutexLock l(&mu_);
  return active_;
}

absl::Status Master::AuthorizeHttp(const server::HttpCaller& caller, const server::HttpFront::Route& route) const {
  std::function<absl::Status(const server::HttpCaller&, const server::HttpFront::Route&)> authorize;
  {
    absl::MutexLock l(&mu_);
    authorize = http_authorize_;
  }
  if (authorize) return authorize(caller, route);
  if (!options_.auth || route.access == server::HttpFront::Access::kOpen) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("master ", options_.name,
                                                  " is a backup: its pages are the active master's to show (auth=true)"));
}

bool Master::expired_backup() const {
  absl::MutexLock l(&mu_);
  return expired_ && !active_;
}

std::vector<std::string> Master::LiveServers() const { return assignment_.Live(); }

std::string Master::address() const {
  absl::MutexLock l(&mu_);
  return address_;
}

absl::Status Master::fatal() const {
  absl::MutexLock l(&mu_);
  return fatal_;
}

void Master::Log(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    log::Info(line);
  }
}

void Master::BecomeActive() {
  {
    absl::MutexLock l(&mu_);
    if (expired_) return;  // elected just before its session expired: the process starts anew
    active_ = true;
  }
  // Its epoch: the election node's sequence number plus one (0 means none), higher than every
  // master's before it. Each call to a region server carries it, and is made only while this
  // master still leads (its session lease held): a deposed master moves nothing (docs/DESIGN.md
  // §6, "Epochs").
  const int64_t epoch = election_->sequence() + 1;
  servers_.Lead(epoch, [this] { return Leading(); });
  Log(absl::StrCat("active master (", options_.name, ", epoch ", epoch, ")"));
  const server::ClusterPaths& p = options_.paths;
  for (const std::string& dir : {p.live(), p.servers(), p.fenced()}) {
    if (absl::Status s = zk_->CreatePath(dir); !s.ok()) Log(absl::StrCat("making ", dir, ": ", s.message()));
  }
  if (options_.rados != nullptr) {
    absl::Status s = TakeOverFromPreviousMaster();
    if (s.ok()) s = Serve();
    if (!s.ok()) {
      Log(absl::StrCat("cannot serve: ", s.ToString()));
      absl::MutexLock l(&mu_);
      fatal_ = s;
      return;
    }
  }
  Reconcile();
}

absl::Status Master::TakeOverFromPreviousMaster() {
  const std::string path = options_.paths.active_master();
  server::ServerRegistration me;
  me.name = options_.name;
  me.rados_client = options_.rados->ClientAddress();
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> before, zk_->Get(path));
  if (before.has_value()) {
    absl::StatusOr<server::ServerRegistration> prev = server::ServerRegistration::Decode(before->data);
    if (prev.ok() && !prev->rados_client.empty() && prev->rados_client != me.rados_client) {
      // A master that lost its session may still be writing meta: it never writes again.
      const absl::Time start = absl::Now();
      BASALT_RETURN_IF_ERROR(options_.rados->Fence(prev->rados_client));
      Log(absl::StrCat("fenced the previous master ", prev->name, " (RADOS client ", prev->rados_client, ") in ",
                       absl::ToInt64Milliseconds(absl::Now() - start), " ms"));
    }
    return zk_->Set(path, me.Encode());
  }
  return zk_->Create(path, me.Encode(), ZooKeeper::Mode::kPersistent).status();
}

absl::StatusOr<Master::Servers> Master::ListServers(bool watch) {
  const server::ClusterPaths& p = options_.paths;
  std::function<void()> again;
  if (watch) again = [this] { Post([this] { Reconcile(); }); };
  // Registrations first: a server registers after its live node is made, so one listed here and
  // alive is in the live list read next.
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> registered, zk_->Children(p.servers(), again));
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> live, zk_->Children(p.live(), again));
  // The newest run registered at each address: an older run still live there (its session has
  // not expired yet: it was killed and started again at once, as systemd restarts it) is dead all
  // the same, since two runs never serve one address. It is recovered as a dead one is (fenced,
  // its log split, its regions placed again) before anything trusts the new run's "not here"
  // for it (HBase's ServerName start code).
  std::map<std::string, int64_t> newest;  // address -> start code
  for (const std::string& node : registered) {
    if (std::find(live.begin(), live.end(), node) == live.end()) continue;
    int64_t& code = newest[AssignmentManager::AddressOf(node)];
    code = std::max(code, StartCodeOf(node));
  }
  Servers out;
  for (const std::string& node : registered) {
    if (std::find(live.begin(), live.end(), node) != live.end() &&
        StartCodeOf(node) >= newest[AssignmentManager::AddressOf(node)]) {
      out.live.push_back(node);
      continue;
    }
    BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> data, zk_->Get(p.servers() + "/" + node));
    if (!data.has_value()) continue;  // done with meanwhile
    absl::StatusOr<server::ServerRegistration> reg = server::ServerRegistration::Decode(data->data);
    if (!reg.ok()) {
      Log(absl::StrCat("server ", node, ": ", reg.status().message(), "; left for an operator"));
      continue;
    }
    out.dead.emplace(node, *std::move(reg));
  }
  return out;
}

absl::Status Master::Serve() {
  const server::ClusterPaths& p = options_.paths;
  // The live servers and what they hold now, and the dead ones' logs, before any region opens.
  BASALT_ASSIGN_OR_RETURN(Servers servers, ListServers(/*watch=*/false));
  const std::vector<std::string>& live = servers.live;
  const std::map<std::string, server::ServerRegistration>& dead = servers.dead;
  std::vector<std::string> logs_to_recover;  // the dead servers', split before any region opens
  for (const auto& [node, reg] : dead) {
    BASALT_RETURN_IF_ERROR(FenceServer(node, reg));
    if (!reg.wal_dir.empty()) logs_to_recover.push_back(reg.wal_dir);
  }
  std::vector<std::string> answering;
  for (const std::string& node : live) {
    const std::string server = AssignmentManager::AddressOf(node);
    absl::StatusOr<std::vector<server::RegionInfo>> held = HostedOn(&servers_, server, node, kTakeOverAskTimeout);
    for (int again = 1; !held.ok() && again < kTakeOverAsks; ++again) {
      absl::SleepFor(absl::Milliseconds(200));
      held = HostedOn(&servers_, server, node, kTakeOverAskTimeout);
    }
    if (!held.ok()) {
      // Live in ZooKeeper but not answering: killed a moment ago (its session has not expired
      // yet), or hung. Its regions must not open elsewhere before its log is split, and its log
      // must not be split while it could still append: it is fenced now, as a dead one is.
      BASALT_RETURN_IF_ERROR(FenceUnanswering(node, held.status(), &logs_to_recover));
      continue;
    }
    answering.push_back(node);
    assignment_.Found(server, node, *held);
  }
  assignment_.SetLive(answering);
  assignment_.SetLogsToRecover(std::move(logs_to_recover));
  server::Catalog::Options topts;
  topts.env = options_.rados;
  topts.data_dir = options_.data_dir;
  topts.placement = &assignment_;
  topts.log = [this](std::string_view line) { Log(line); };
  topts.auto_split = false;
  // A dead server's log keeps, through its split, what its replication shippers had not shipped.
  const std::string runs_dir = absl::StrCat(options_.data_dir, "/", replication::kRunPlacesDir);
  topts.dead_log_holds = [env = options_.rados, runs_dir](const std::string& dir) {
    return replication::Peers::DeadLogHolds(env, runs_dir, dir);
  };
  const absl::Time start = absl::Now();
  BASALT_ASSIGN_OR_RETURN(tables_, server::Catalog::Open(topts));
  for (const auto& [node, reg] : dead) {
    absl::Status gone = zk_->Delete(p.servers() + "/" + node);
    if (!gone.ok() && !absl::IsNotFound(gone)) Log(absl::StrCat("dropping the registration of ", node, ": ", gone.message()));
  }
  const size_t left = assignment_.ForgetUnclaimed();
  if (left > 0) Log(absl::StrCat(left, " region(s) open on live servers are not in ", server::kMetaTableName, "; left as they are"));

  server::ServerConfig config;
  counters_ = std::make_unique<server::ServerCounters>();
  server::TransactionManager::Options xo;
  xo.env = options_.rados;
  xo.dir = options_.data_dir + "/transactions";
  BASALT_ASSIGN_OR_RETURN(transactions_, server::TransactionManager::Open(xo));
  data_ = std::make_unique<server::DataService>(tables_.get(), config, transactions_.get());
  BASALT_RETURN_IF_ERROR(OpenPeers(runs_dir));
  admin_ = server::AdminService::ForMaster(tables_.get(), this, counters_.get(), followed_peers_.get());
  // Security: the grants live in this master's basalt:acl; each change is announced to the
  // region servers, which load them again (cluster_member.h FollowGrants).
  server::AccessController::Options acopts;
  acopts.enabled = options_.auth;
  acopts.superusers = options_.superusers;
  acopts.on_change = [this] {
    absl::Status told = server::AnnounceGrantsChanged(zk_.get(), options_.paths);
    if (!told.ok()) Log(absl::StrCat("telling the region servers the grants changed: ", told.message()));
  };
  BASALT_ASSIGN_OR_RETURN(access_, server::AccessController::Open(acopts, tables_->acl_region()));
  if (options_.auth) {
    BASALT_ASSIGN_OR_RETURN(authn_, server::Authenticator::Open(options_.users_file, access_.get()));
  }
  // Quotas likewise: kept in basalt:quota, announced after each change (FollowQuotas).
  BASALT_ASSIGN_OR_RETURN(quotas_, server::Quotas::Open(tables_->quota_region(), [this] {
                            absl::Status told = server::AnnounceQuotasChanged(zk_.get(), options_.paths);
                            if (!told.ok()) Log(absl::StrCat("telling the region servers the quotas changed: ",
                                                             told.message()));
                          }));
  admin_->set_namespace_cleanup([grants = access_.get(), quotas = quotas_.get()](const std::string& ns) {
    return server::ForgetNamespace(grants, quotas, ns);
  });
  admin_->set_table_cleanup([grants = access_.get(), quotas = quotas_.get()](const std::string& table) {
    return server::ForgetTable(grants, quotas, table);
  });
  {
    absl::MutexLock l(&mu_);
    http_authorize_ = server::HttpAuthorizer(authn_.get(), access_.get(), options_.metrics_users);
  }
  server::GrpcServer::Options gopts;
  gopts.admit = [this] { return CheckLeading(); };
  gopts.listen = options_.listen;
  gopts.log = [this](std::string_view line) { Log(line); };
  gopts.metrics = options_.metrics;
  gopts.tls = options_.tls;
  gopts.access = access_.get();
  gopts.authn = authn_.get();
  gopts.quotas = quotas_.get();
  grpc_ = std::make_unique<server::GrpcServer>(gopts, data_.get(), admin_.get(), counters_.get());
  BASALT_RETURN_IF_ERROR(grpc_->Start());
  std::string host;
  int unused;
  BASALT_RETURN_IF_ERROR(server::SplitHostPort(options_.listen, &host, &unused));
  const std::string address = absl::StrCat(host, ":", grpc_->port());
  BASALT_RETURN_IF_ERROR(tables_->SetServerName(address));
  {
    absl::MutexLock l(&mu_);
    address_ = address;
  }
  BASALT_RETURN_IF_ERROR(server::PublishMetaServer(zk_.get(), p, address));
  // The region servers load the grants from this master now (they may have joined before it).
  if (absl::Status told = server::AnnounceGrantsChanged(zk_.get(), p); !told.ok()) {
    Log(absl::StrCat("telling the region servers to load the grants: ", told.message()));
  }
  if (absl::Status told = server::AnnounceQuotasChanged(zk_.get(), p); !told.ok()) {
    Log(absl::StrCat("telling the region servers to load the quotas: ", told.message()));
  }
  if (absl::Status told = server::AnnouncePeersChanged(zk_.get(), p); !told.ok()) {
    Log(absl::StrCat("telling the region servers to load the replication peers: ", told.message()));
  }
  peers_->ShipDeadLogs();  // (the dead servers' logs split above)
  Log(absl::StrCat("serving ", server::kMetaTableName, " and ", tables_->size(), " table(s) on ", address, " (ready in ",
                   absl::ToInt64Milliseconds(absl::Now() - start), " ms)"));
  if (!options_.hbase_listen.empty()) {
    BASALT_RETURN_IF_ERROR(ServeHBase(host));
  } else {
    // An earlier master's HBase port is no longer the cluster's.
    BASALT_RETURN_IF_ERROR(server::PublishHBaseMaster(zk_.get(), p, std::nullopt));
  }
  if (!options_.port_file.empty()) {
    BASALT_RETURN_IF_ERROR(Env::Default()->WriteFileDurably(options_.port_file, absl::StrCat(grpc_->port(), "\n")));
  }
  return absl::OkStatus();
}

// Replication: the peers kept here (the region servers follow them), and what dead servers had not
// shipped, shipped from here; the Admin service's peers calls go through FollowedPeers.
absl::Status Master::OpenPeers(const std::string& runs_dir) {
  replication::Peers::Options po;
  po.env = options_.rados;
  po.state_dir = absl::StrCat(options_.data_dir, "/replication");
  // The cluster's id only once a dead run is shipped: made here at start, it would race a region
  // server starting at the same moment (on RADOS one of them then read it empty).
  po.load_cluster_id = [this] { return server::LoadOrCreateClusterId(options_.rados, options_.data_dir); };
  po.tables = tables_.get();
  po.say = [this](std::string_view line) { Log(line); };
  po.on_change = [this] {
    absl::Status told = server::AnnouncePeersChanged(zk_.get(), options_.paths);
    if (!told.ok()) Log(absl::StrCat("telling the region servers the replication peers changed: ", told.message()));
  };
  po.runs_dir = runs_dir;
  po.logs_dir = absl::StrCat(options_.data_dir, "/", replication::kRunLogsDir);
  po.post = [this](std::function<void()> task) { Post(std::move(task)); };
  BASALT_ASSIGN_OR_RETURN(peers_, replication::Peers::Open(std::move(po)));
  FollowedPeers::Cluster cluster;
  cluster.wait = [this] { WaitForPeersFollowed(); };
  cluster.gather = [this](rpc::ListPeersResponse* resp) { GatherPeerFigures(resp); };
  cluster.token = [this] { return ConsistencyToken(); };
  cluster.not_replicated = [this](std::string_view table, const rpc::ConsistencyToken& token) {
    return NotReplicated(table, token);
  };
  followed_peers_ = std::make_unique<FollowedPeers>(peers_.get(), std::move(cluster));
  return absl::OkStatus();
}

absl::Status Master::ServeHBase(const std::string& host) {
  hbase::HBaseFront::Options ho;
  ho.port.listen = options_.hbase_listen;
  ho.port.tls = options_.hbase_tls;
  if (options_.auth) {  // as a region server's port (region_server.cc)
    ho.authn = authn_.get();
    ho.access = access_.get();
  }
  ho.port.log = [this](std::string_view line) { Log(absl::StrCat("hbase port: ", AV(line))); };
  ho.advertised_host = host;
  ho.start_code = absl::ToUnixMillis(absl::Now());
  ho.schedule = grpc_->Scheduler();
  ho.admit = [this] { return CheckLeading(); };
  ho.process = "the active master";
  hbase::ServiceParts parts;
  parts.data = data_.get();
  parts.admin = admin_.get();
  parts.quotas = quotas_.get();
  // One id for the cluster, whichever master is active (HBase's hbase.id): on the shared storage.
  BASALT_ASSIGN_OR_RETURN(parts.cluster_id, server::LoadOrCreateClusterId(
                                                  options_.rados != nullptr ? static_cast<Env*>(options_.rados) : Env::Default(),
                                                  options_.data_dir));
  parts.log = [this](std::string_view line) { Log(line); };
  parts.balancer_on = options_.balancer_period > absl::ZeroDuration();
  hbase_ = std::make_unique<hbase::HBaseFront>(ho);
  hbase::ServeAsMaster(hbase_.get(), parts, [this] { return server::LiveRegistrations(zk_.get(), options_.paths); });
  if (absl::Status s = hbase_->Start(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("the HBase port (", options_.hbase_listen, "): ", s.message()));
  }
  if (options_.metrics != nullptr) hbase_->RegisterMetrics(options_.metrics);
  // For the region servers' registries (HBase 2.6 clients may bootstrap from them).
  server::ServerRegistration me;
  me.name = options_.name;
  me.start_code = ho.start_code;
  me.hbase = absl::StrCat(host, ":", hbase_->port());
  BASALT_RETURN_IF_ERROR(server::PublishHBaseMaster(zk_.get(), options_.paths, me));
  hbase::ZkPublisher::Options zp;
  zp.session.quorum = options_.zk.quorum;
  zp.session.session_timeout = options_.zk.session_timeout;
  // Under the cluster's identity (zookeeper_auth_file): the records are then anyone's to read
  // (HBase's clients have no identity) and the identity's alone to change.
  zp.session.digest = options_.zk.digest;
  zp.parent = options_.hbase_znode_parent;
  zp.self = hbase::ServerNameOf(host, hbase_->port(), static_cast<uint64_t>(ho.start_code));
  zp.cluster_id = parts.cluster_id;
  zp.log = [this](std::string_view line) { Log(line); };
  zp.entitled = [this] { return Leading(); };  // never over a successor's records
  absl::StatusOr<std::unique_ptr<hbase::ZkPublisher>> published = hbase::ZkPublisher::Start(zp);
  if (!published.ok()) {
    return absl::Status(published.status().code(),
                        absl::StrCat("publishing the HBase port in ZooKeeper: ", published.status().message()));
  }
  hbase_zk_ = *std::move(published);
  Log(absl::StrCat("HBase clients on ", host, ":", hbase_->port(), ", published under ", zp.parent));
  if (!options_.hbase_port_file.empty()) {
    BASALT_RETURN_IF_ERROR(Env::Default()->WriteFileDurably(options_.hbase_port_file, absl::StrCat(hbase_->port(), "\n")));
  }
  return absl::OkStatus();
}

absl::Status Master::Move(std::string_view region, std::string_view server) {
  if (tables_ == nullptr) return absl::UnavailableError("this master is not serving yet");
  return assignment_.Move(tables_.get(), region, server);
}

absl::Status Master::Unassign(std::string_view region) {
  if (tables_ == nullptr) return absl::UnavailableError("this master is not serving yet");
  return assignment_.Unassign(tables_.get(), region);
}

absl::Status Master::AssignRegion(std::string_view region) {
  if (tables_ == nullptr) return absl::UnavailableError("this master is not serving yet");
  return assignment_.AssignRegion(tables_.get(), region);
}

absl::Status Master::Balance(rpc::BalanceResponse* resp) {
  if (tables_ == nullptr) return absl::UnavailableError("this master is not serving yet");
  return assignment_.Balance(tables_.get(), resp);
}

void Master::FillStatus(rpc::StatusResponse* resp) {
  std::map<std::string, std::vector<std::string>> held;
  if (tables_ != nullptr) {
    held = assignment_.RegionsByServer(*tables_);
  } else {
    for (const std::string& node : LiveServers()) held[node];
  }
  std::map<std::string, std::string> names;  // encoded → region name
  if (tables_ != nullptr) {
    for (const server::HostedRegion& h : AssignmentManager::OpenRegions(*tables_)) names[h.encoded_name] = h.info.Name();
  }
  for (const auto& [node, regions] : held) {
    rpc::ServerLoad* sl = resp->add_servers();
    sl->set_name(node);
    sl->set_address(AssignmentManager::AddressOf(node));
    sl->set_regions(static_cast<uint32_t>(regions.size()));
    for (const std::string& r : regions) sl->add_region_names(names.count(r) > 0 ? names[r] : r);
    rpc::StatusResponse theirs;
    if (absl::Status s = ServerStatus(&servers_, AssignmentManager::AddressOf(node), &theirs); !s.ok()) {
      sl->set_error(std::string(s.message()));
      continue;
    }
    sl->set_requests(theirs.requests());
    sl->set_resident_bytes(theirs.resident_bytes());
    sl->set_uptime_seconds(theirs.uptime_seconds());
    for (const rpc::TableStatus& t : theirs.tables()) {
      sl->set_memstore_bytes(sl->memstore_bytes() + t.memstore_bytes());
      sl->set_store_files(sl->store_files() + t.store_files());
    }
  }
  if (absl::StatusOr<Servers> servers = ListServers(/*watch=*/false); servers.ok()) {
    resp->set_dead_servers(static_cast<uint32_t>(servers->dead.size()));
  }
  if (absl::StatusOr<std::vector<std::string>> candidates = zk_->Children(options_.paths.masters()); candidates.ok()) {
    for (const std::string& c : *candidates) {
      absl::StatusOr<std::optional<ZkNode>> data = zk_->Get(options_.paths.masters() + "/" + c);
      if (data.ok() && data->has_value() && (*data)->data != options_.name) resp->add_backup_masters((*data)->data);
    }
  }
}

server::SnapshotTotals Master::Snapshots() const {
  {
    absl::MutexLock l(&mu_);
    if (address_.empty()) return {};  // (not serving yet: tables_ may still be opening)
  }
  return tables_->Snapshots();
}

void Master::FillPage(server::StatusPageData* page) const {
  page->program = "basalt-master";
  page->server_name = options_.name;
  std::string address;
  {
    absl::MutexLock l(&mu_);
    address = address_;
  }
  if (address.empty()) {
    // A backup (or an active master still opening): the page names the active one.
    page->status.set_mode("backup master");
    page->waiting_heading = "Backup master";
    page->waiting = "This master waits to take over; the active one serves the cluster's status.";
    absl::StatusOr<std::optional<std::string>> leader = LeaderElection::Leader(zk_.get(), options_.paths.masters());
    if (leader.ok() && leader->has_value() && **leader != options_.name) {
      page->status.add_backup_masters(absl::StrCat("active: ", **leader));
    }
    return;
  }
  page->server_name = address;
  page->wal_section = false;  // (it writes no data: its log holds the catalogue's own tables)
  page->servers_section = true;
  // admin_ is made before address_ is set and lives as long as the master.
  server::FillFromAdmin(admin_.get(), page);
}

void Master::Reconcile() {
  // Both lists are watched: a server joins in two steps (live node, then registration).
  absl::StatusOr<Servers> servers = ListServers(/*watch=*/true);
  if (!servers.ok()) {
    Log(absl::StrCat("listing servers: ", servers.status().message()));
    return;
  }
  std::vector<std::string> live;
  bool joined = false;
  {
    absl::MutexLock l(&mu_);
    // A server fenced while still live in ZooKeeper gets no region; once its live node goes, it
    // is recovered as any dead one (its fencing and log split are done already).
    for (const std::string& node : servers->live) {
      if (!fenced_live_.contains(node)) live.push_back(node);
    }
    for (auto it = fenced_live_.begin(); it != fenced_live_.end();) {
      it = std::find(servers->live.begin(), servers->live.end(), *it) == servers->live.end() ? fenced_live_.erase(it)
                                                                                            : std::next(it);
    }
  }
  joined = assignment_.SetLive(live);
  ListReplicationSinks(live);
  for (const auto& [node, reg] : servers->dead) {
    if (absl::Status s = RecoverServer(node, reg); !s.ok()) {
      Log(absl::StrCat("server ", node, " is gone but could not be recovered: ", s.message(),
                       " (its regions stay closed until it is; retried when the servers change)"));
    }
  }
  if (tables_ != nullptr && !live.empty()) {
    for (const std::string& t : AssignmentManager::TablesToAssign(*tables_)) {
      absl::Status s = tables_->Assign(t);
      Log(absl::StrCat("assigning table '", t, "' (", joined ? "a server joined" : "a server died",
                       "): ", s.ok() ? "open" : s.ToString()));
    }
  }
}

// HBase's rs/ (hbase_zk.h): the live region servers' HBase ports, where an HBase cluster that
// replicates into this one sends its edits (each server routes the rows it does not hold).
void Master::ListReplicationSinks(const std::vector<std::string>& live) {
  if (hbase_zk_ == nullptr) return;
  absl::StatusOr<std::vector<server::ServerRegistration>> regs = server::LiveRegistrations(zk_.get(), options_.paths);
  if (!regs.ok()) {
    Log(absl::StrCat("listing the replication sinks: ", regs.status().message(), " (again when the servers change)"));
    return;
  }
  std::vector<hbase::ServerName> sinks;
  for (const server::ServerRegistration& r : *regs) {
    if (std::find(live.begin(), live.end(), r.NodeName()) == live.end()) continue;
    if (std::optional<hbase::ServerName> sn = hbase::HBaseNameOf(r); sn.has_value()) sinks.push_back(*std::move(sn));
  }
  hbase_zk_->SetSinks(std::move(sinks));
}

void Master::GatherPeerFigures(rpc::ListPeersResponse* resp) {
  std::map<std::string, rpc::PeerStatus*> by_id;
  for (rpc::PeerStatus& st : *resp->mutable_peers()) by_id[st.peer().id()] = &st;
  for (const std::string& node : LiveServers()) {
    rpc::ListPeersResponse theirs;
    if (absl::Status s = ServerPeers(&servers_, AssignmentManager::AddressOf(node), &theirs); !s.ok()) {
      for (auto& [id, st] : by_id) st->set_last_error(absl::StrCat("region server ", node, ": ", s.message()));
      continue;
    }
    for (const rpc::PeerStatus& t : theirs.peers()) {
      auto it = by_id.find(t.peer().id());
      if (it == by_id.end()) continue;  // (a change it has not followed yet)
      rpc::PeerStatus* st = it->second;
      st->set_entries(st->entries() + t.entries());
      st->set_cells(st->cells() + t.cells());
      st->set_batches(st->batches() + t.batches());
      st->set_failed_calls(st->failed_calls() + t.failed_calls());
      st->set_lag_bytes(st->lag_bytes() + t.lag_bytes());
      st->set_age_ms(std::max(st->age_ms(), t.age_ms()));
      if (st->peer().enabled() && Severity(t.state()) > Severity(st->state())) st->set_state(t.state());
      if (!t.last_error().empty()) st->set_last_error(absl::StrCat("region server ", node, ": ", t.last_error()));
    }
  }
}

absl::StatusOr<std::map<std::string, std::string>> Master::LiveRuns() {
  BASALT_ASSIGN_OR_RETURN(std::vector<server::ServerRegistration> regs,
                          server::LiveRegistrations(zk_.get(), options_.paths));
  std::map<std::string, std::string> runs;
  for (const server::ServerRegistration& r : regs) {
    if (!r.wal_dir.empty()) runs[replication::RunOfLogDir(r.wal_dir)] = r.name;
  }
  return runs;
}

// Every live server's log's end now, and each dead run not shipped whole yet (all of it).
absl::StatusOr<rpc::ConsistencyToken> Master::ConsistencyToken() {
  BASALT_ASSIGN_OR_RETURN(rpc::ConsistencyToken dead, peers_->ConsistencyToken());
  BASALT_ASSIGN_OR_RETURN(auto live, LiveRuns());  // run -> server
  rpc::ConsistencyToken token;
  for (const auto& [run, server] : live) {
    rpc::ListPeersResponse theirs;
    BASALT_RETURN_IF_ERROR(ServerPeers(&servers_, server, &theirs));
    if (theirs.run() != run) {
      return absl::UnavailableError(absl::StrCat("region server ", server, " is run ", theirs.run(), ", not ", run,
                                                 " (restarted a moment ago): ask again"));
    }
    rpc::LogEnd* e = token.add_ends();
    e->set_run(run);
    e->set_segment(theirs.log_end_segment());
    e->set_offset(theirs.log_end_offset());
  }
  for (const rpc::LogEnd& e : dead.ends()) {
    if (live.count(e.run()) == 0) *token.add_ends() = e;
  }
  return token;
}

// A live run's end asked of its server; the others (dead since, or then) of the kept places.
absl::StatusOr<std::string> Master::NotReplicated(std::string_view table, const rpc::ConsistencyToken& token) {
  BASALT_ASSIGN_OR_RETURN(auto live, LiveRuns());  // run -> server
  rpc::ConsistencyToken dead;
  for (const rpc::LogEnd& e : token.ends()) {
    auto it = live.find(e.run());
    if (it == live.end()) {
      *dead.add_ends() = e;
      continue;
    }
    rpc::ConsistencyToken one;
    *one.add_ends() = e;
    BASALT_ASSIGN_OR_RETURN(std::string waiting, ServerNotReplicated(&servers_, it->second, std::string(table), one));
    if (!waiting.empty()) return absl::StrCat("region server ", it->second, ": ", waiting);
  }
  return peers_->NotReplicated(table, dead);
}

void Master::WaitForPeersFollowed() {
  rpc::ListPeersResponse kept;
  if (!peers_->ListPeers(&kept).ok()) return;
  std::map<std::string, std::string> want;  // id -> its settings
  for (const rpc::PeerStatus& st : kept.peers()) want[st.peer().id()] = st.peer().SerializeAsString();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (const std::string& node : LiveServers()) {
    const std::string server = AssignmentManager::AddressOf(node);
    absl::Status last;
    for (;;) {
      rpc::ListPeersResponse theirs;
      last = ServerPeers(&servers_, server, &theirs);
      if (last.ok()) {
        std::map<std::string, std::string> have;
        for (const rpc::PeerStatus& st : theirs.peers()) have[st.peer().id()] = st.peer().SerializeAsString();
        if (have == want) break;
        last = absl::UnavailableError("it has not loaded them yet");
      }
      if (absl::Now() > deadline) break;
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (!last.ok()) {
      Log(absl::StrCat("region server ", node, " does not follow the replication peers' change yet (",
                       last.message(), "): it will when it next hears of them"));
    }
  }
}

absl::Status Master::RecoverServer(const std::string& node, const server::ServerRegistration& reg) {
  const absl::Time start = absl::Now();
  BASALT_RETURN_IF_ERROR(FenceServer(node, reg));
  if (tables_ != nullptr) {
    BASALT_ASSIGN_OR_RETURN(size_t placed, assignment_.Recover(tables_.get(), reg.wal_dir, node));
    Log(absl::StrCat("server ", node, " recovered in ", absl::ToInt64Milliseconds(absl::Now() - start),
                     " ms: its log split, ", placed, " region(s) serving elsewhere"));
    // What it had not shipped to the replication peers, shipped from here.
    if (peers_ != nullptr) peers_->ShipDeadLogs();
  }
  absl::Status gone = zk_->Delete(options_.paths.servers() + "/" + node);
  if (!gone.ok() && !absl::IsNotFound(gone)) return gone;
  return absl::OkStatus();
}

absl::Status Master::FenceUnanswering(const std::string& node, const absl::Status& why, std::vector<std::string>* logs) {
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> data, zk_->Get(options_.paths.servers() + "/" + node));
  if (!data.has_value()) return absl::OkStatus();  // gone meanwhile: recovered as dead
  BASALT_ASSIGN_OR_RETURN(server::ServerRegistration reg, server::ServerRegistration::Decode(data->data));
  Log(absl::StrCat("server ", node, " is live in ZooKeeper but does not answer (", why.message(),
                   "): fencing it and splitting its log before its regions open elsewhere"));
  BASALT_RETURN_IF_ERROR(FenceServer(node, reg));
  if (!reg.wal_dir.empty()) logs->push_back(reg.wal_dir);
  absl::MutexLock l(&mu_);
  fenced_live_.insert(node);
  return absl::OkStatus();
}

absl::Status Master::FenceServer(const std::string& node, const server::ServerRegistration& reg) {
  const server::ClusterPaths& p = options_.paths;
  absl::StatusOr<std::optional<ZkNode>> done = zk_->Get(p.fenced() + "/" + node);
  if (done.ok() && done->has_value()) return absl::OkStatus();  // a master before this one fenced it
  const absl::Time start = absl::Now();
  std::string how;
  if (reg.rados_client.empty()) {
    how = "nothing to fence: it kept no files on shared storage";
  } else if (options_.rados == nullptr) {
    return absl::FailedPreconditionError("this master has no shared storage configured (rados_pool)");
  } else {
    BASALT_RETURN_IF_ERROR(options_.rados->Fence(reg.rados_client));
    how = absl::StrCat("RADOS client ", reg.rados_client, " blocklisted, newest OSD map, every placement group written");
  }
  const int64_t took_ms = absl::ToInt64Milliseconds(absl::Now() - start);
  const std::string record = absl::StrCat(reg.Encode(), "fenced_at_ms=", absl::ToUnixMillis(absl::Now()), "\ntook_ms=",
                                          took_ms, "\nby=", options_.name, "\nhow=", how, "\n");
  absl::StatusOr<std::string> made = zk_->Create(p.fenced() + "/" + node, record, ZooKeeper::Mode::kPersistent);
  if (!made.ok() && !absl::IsAlreadyExists(made.status())) return made.status();
  Log(absl::StrCat("server ", node, " is gone: fenced in ", took_ms, " ms (", how, ")"));
  return absl::OkStatus();
}

}  // namespace basalt::master
