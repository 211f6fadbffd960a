#include "src/server/server_tables.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"
#include "src/catalog/catalog.h"
#include "src/front/hbase/client_meta.h"
#include "src/regions/region_host.h"
#include "src/replication/peers.h"
#include "src/schema/cluster_id.h"
#include "src/transactions/queue_eviction.h"

namespace basalt::server {
namespace {

// What a catalogue's and a region host's options share, from the settings.
template <typename Options>
void SetShared(const TablesContext& context, Options* o) {
  const ServerConfig& config = *context.config;
  o->env = context.env;
  o->data_dir = config.data_dir;
  o->region = context.region;
  o->wal_roll_size = config.wal_roll_size;
  o->wal_max_logs = config.wal_max_logs;
  o->region_max_size = config.region_max_size;
  o->auto_split = config.auto_split;
}

// The replication peers of a server's log (src/replication/peers.h), their places in `state_dir`.
// `run`: a cluster's region server's run, which follows the peers its master keeps; empty: a
// standalone server, which keeps its own.
absl::StatusOr<std::unique_ptr<replication::Peers>> OpenPeers(Env* env, ServerLog* log, std::string state_dir,
                                                              const std::string& cluster_id, TableSource* tables,
                                                              std::string run = "") {
  replication::Peers::Options po;
  po.env = env;
  po.log = log;
  po.state_dir = std::move(state_dir);
  po.cluster_id = cluster_id;
  po.tables = tables;
  po.follower = !run.empty();
  po.run = std::move(run);
  absl::StatusOr<std::unique_ptr<replication::Peers>> peers = replication::Peers::Open(std::move(po));
  if (!peers.ok()) {
    return absl::Status(peers.status().code(), absl::StrCat("opening the replication peers: ", peers.status().ToString()));
  }
  return peers;
}

class StandaloneTables final : public ServerTables {
 public:
  static absl::StatusOr<std::unique_ptr<ServerTables>> Open(const TablesContext& context,
                                                            const std::string& cluster_id) {
    const ServerConfig& config = *context.config;
    auto t = std::unique_ptr<StandaloneTables>(new StandaloneTables(config));
    // The transaction service (transactions.h), its state log beside the data (on RADOS when the
    // data is). Before the tables: their queues' compactions ask it.
    TransactionManager::Options xo;
    xo.env = context.env;
    xo.dir = absl::StrCat(config.data_dir, "/transactions");
    xo.default_timeout_ms = config.transaction_timeout_ms;
    xo.max_in_progress_per_owner = static_cast<int>(config.max_transactions_per_user);
    absl::StatusOr<std::unique_ptr<TransactionManager>> transactions = TransactionManager::Open(xo);
    if (!transactions.ok()) {
      return absl::Status(transactions.status().code(),
                          absl::StrCat("opening the transaction log: ", transactions.status().ToString()));
    }
    t->transactions_ = *std::move(transactions);
    Catalog::Options o;
    SetShared(context, &o);
    o.rebuild_catalog = config.rebuild_catalog;
    o.queue_compaction_filter = QueueEvictionFilter(t->transactions_.get());
    // The replication peers' places hold the log from before it opens (peers.h), so that a
    // restart keeps what they have not shipped.
    Env* env = context.env != nullptr ? context.env : Env::Default();
    const std::string replication_dir = absl::StrCat(config.data_dir, "/replication");
    BASALT_ASSIGN_OR_RETURN(auto places, replication::ReadPositions(env, replication_dir));
    for (const auto& [peer, at] : places) o.wal_holds[replication::HoldName(peer)] = at.segment;
    o.wal_max_held_segments = std::max<uint64_t>(1, config.replication_max_held_log / config.wal_roll_size);
    o.on_wal_hold_dropped = [raw = t.get()](const std::string& hold) { raw->HoldDropped(hold); };
    absl::StatusOr<std::unique_ptr<Catalog>> catalog = Catalog::Open(o);
    if (!catalog.ok()) {
      return absl::Status(catalog.status().code(),
                          absl::StrCat("opening data dir ", config.data_dir, ": ", catalog.status().ToString()));
    }
    t->catalog_ = *std::move(catalog);
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<replication::Peers> peers,
                            OpenPeers(env, t->catalog_->server_log(), replication_dir, cluster_id, t->catalog_.get()));
    {
      absl::MutexLock l(&t->dropped_mu_);
      t->peers_ = std::move(peers);
      for (const std::string& hold : t->dropped_early_) t->peers_->HoldDropped(hold);
    }
    return t;
  }

  absl::Status Close() override {
    // No shipper reads the log it closes. (Not under dropped_mu_: a shipper stopping may be in
    // the log's call of HoldDropped, which takes it.)
    replication::Peers* peers;
    {
      absl::MutexLock l(&dropped_mu_);
      peers = peers_.get();
    }
    if (peers != nullptr) peers->Stop();
    return catalog_->CloseAll();
  }

  TableSource* tables() override { return catalog_.get(); }
  std::unique_ptr<AdminService> Admin(const ServerCounters* counters) override {
    return AdminService::ForStandalone(catalog_.get(), counters, peers_.get());
  }
  std::unique_ptr<DataService> Data() override {
    return std::make_unique<DataService>(catalog_.get(), config_, transactions_.get());
  }
  Region* acl_region() override { return catalog_->acl_region(); }
  Region* quota_region() override { return catalog_->quota_region(); }
  std::string log_dir() const override { return ""; }
  void ServeHBase(hbase::HBaseFront* front, const hbase::ServiceParts& parts) override {
    hbase::ServeAsStandalone(front, parts);
  }
  const char* what() const override { return "a standalone server"; }
  bool leased() const override { return false; }
  void Followed(ZooKeeper*, AccessController*, Quotas*) override {}

 private:
  explicit StandaloneTables(const ServerConfig& config) : config_(config) {}

  // The log dropped a hold (Catalog::Options::on_wal_hold_dropped): the peer's. One dropped while
  // the catalogue opens, before the peers are, is given them once they are.
  void HoldDropped(const std::string& hold) {
    absl::MutexLock l(&dropped_mu_);
    if (peers_ == nullptr) {
      dropped_early_.push_back(hold);
    } else {
      peers_->HoldDropped(hold);
    }
  }

  const ServerConfig& config_;
  std::unique_ptr<TransactionManager> transactions_;  // before the catalogue: its queues ask it
  std::unique_ptr<Catalog> catalog_;
  absl::Mutex dropped_mu_;
  std::vector<std::string> dropped_early_ ABSL_GUARDED_BY(dropped_mu_);
  std::unique_ptr<replication::Peers> peers_;  // after the catalogue: its shippers read its log; set once under dropped_mu_
};

class RegionServerTables final : public ServerTables {
 public:
  static absl::StatusOr<std::unique_ptr<ServerTables>> Open(const TablesContext& context,
                                                            const std::string& cluster_id) {
    const ServerConfig& config = *context.config;
    // Its log is this run's own (its registration names it), which the master splits by region
    // if the server dies.
    const std::string run = absl::StrCat(context.host, ",", context.start_code, ",", ::getpid());
    const std::string log_dir = absl::StrCat(config.data_dir, "/", replication::kRunLogsDir, "/", run);
    auto t = std::unique_ptr<RegionServerTables>(new RegionServerTables(context, log_dir));
    RegionHost::Options o;
    SetShared(context, &o);
    o.start_code = context.start_code;
    o.lease = context.lease;
    o.log_dir = log_dir;
    // Its replication shippers' holds on the log (a peer down keeps at most this much).
    o.wal_max_held_segments = std::max<uint64_t>(1, config.replication_max_held_log / config.wal_roll_size);
    o.on_wal_hold_dropped = [raw = t.get()](const std::string& hold) { raw->HoldDropped(hold); };
    // A region past the split size is split by the master, which this server asks through the
    // cluster's ZooKeeper once it has joined.
    o.request_split = [zk = context.zk, paths = context.paths,
                       to_master = context.to_master](const std::string& encoded_name) {
      ZooKeeper* z = zk->load();
      if (z == nullptr) return absl::UnavailableError("not in the cluster yet");
      return AskMasterToSplit(z, *paths, encoded_name, *to_master);
    };
    o.abort = [](const absl::Status& why) {
      log::Error(absl::StrCat("aborting: ", why.message()));
      std::_Exit(4);
    };
    absl::StatusOr<std::unique_ptr<RegionHost>> host = RegionHost::Open(o);
    if (!host.ok()) {
      return absl::Status(host.status().code(),
                          absl::StrCat("opening data dir ", config.data_dir, ": ", host.status().ToString()));
    }
    t->host_ = *std::move(host);
    // The peers are the master's (Followed); this run ships its own log to them, its places in
    // data_dir/replication/rs/<run>, where the master finds them if this server dies.
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<replication::Peers> peers,
                            OpenPeers(context.env != nullptr ? context.env : Env::Default(), t->host_->server_log(),
                                      absl::StrCat(config.data_dir, "/", replication::kRunPlacesDir, "/", run),
                                      cluster_id, t->host_.get(), run));
    absl::MutexLock l(&t->dropped_mu_);
    t->peers_ = std::move(peers);
    return t;
  }

  absl::Status Close() override {
    Peers()->Stop();  // (no shipper reads the log the host closes)
    return host_->CloseAll();
  }
  TableSource* tables() override { return host_.get(); }
  std::unique_ptr<AdminService> Admin(const ServerCounters* counters) override {
    return AdminService::ForRegionServer(host_.get(), counters, Peers());
  }
  std::unique_ptr<DataService> Data() override {
    auto data = std::make_unique<DataService>(host_.get(), *context_.config, nullptr);
    // A cluster's transactions are the master's: a transactional write's writer is checked there.
    data->SetRemoteWriterCheck(MasterWriterCheck(context_.zk, *context_.paths, *context_.to_master));
    return data;
  }
  Region* acl_region() override { return nullptr; }
  Region* quota_region() override { return nullptr; }
  std::string log_dir() const override { return log_dir_; }
  void ServeHBase(hbase::HBaseFront* front, const hbase::ServiceParts& parts) override {
    hbase::ServeAsRegionServer(front, parts,
                               [zk = context_.zk, paths = context_.paths]() -> absl::StatusOr<ServerRegistration> {
                                 ZooKeeper* z = zk->load();
                                 if (z == nullptr) return absl::UnavailableError("it has not joined its cluster yet");
                                 return ReadHBaseMaster(z, *paths);
                               });
  }
  const char* what() const override { return "a region server"; }
  bool leased() const override { return true; }
  void Followed(ZooKeeper* zk, AccessController* access, Quotas* quotas) override {
    if (context_.config->auth) {
      // The grants are the master's (basalt:acl). Until the first load every call but a
      // superuser's is refused.
      absl::Status followed = FollowGrants(zk, *context_.paths, *context_.to_master, access);
      if (!followed.ok()) {
        log::Warning(absl::StrCat("the grants are not loaded yet (", followed.message(),
                                  "); they will be when the master announces them"));
      }
    }
    // The quotas are the master's (basalt:quota); until they are loaded none apply.
    absl::Status followed = FollowQuotas(zk, *context_.paths, *context_.to_master, quotas);
    if (!followed.ok()) {
      log::Warning(absl::StrCat("the quotas are not loaded yet (", followed.message(),
                                "); they will be when the master announces them"));
    }
    // The replication peers too; until they are, nothing ships (the first ones, once loaded, get
    // this run's log from its beginning).
    followed = FollowPeers(zk, *context_.paths, *context_.to_master,
                           [peers = Peers()](const rpc::ListPeersResponse& all) { return peers->Replace(all); });
    if (!followed.ok()) {
      log::Warning(absl::StrCat("the replication peers are not loaded yet (", followed.message(),
                                "); they will be when the master announces them"));
    }
  }

 private:
  RegionServerTables(const TablesContext& context, std::string log_dir)
      : context_(context), log_dir_(std::move(log_dir)) {}

  replication::Peers* Peers() {
    absl::MutexLock l(&dropped_mu_);
    return peers_.get();
  }
  // The log dropped a hold (RegionHost::Options::on_wal_hold_dropped): its peer's. (The peers
  // exist before any hold: the host's log has none of its own at open.)
  void HoldDropped(const std::string& hold) {
    absl::MutexLock l(&dropped_mu_);
    if (peers_ != nullptr) peers_->HoldDropped(hold);
  }

  const TablesContext context_;
  const std::string log_dir_;
  std::unique_ptr<RegionHost> host_;
  absl::Mutex dropped_mu_;
  std::unique_ptr<replication::Peers> peers_;  // after the host: its shippers read its log; set once under dropped_mu_
};

}  // namespace

const char* ServerTables::FencedWords(const ServerConfig& config) {
  return config.cluster ? "by the master: its regions are served elsewhere" : nullptr;
}

absl::StatusOr<std::unique_ptr<ServerTables>> ServerTables::Open(const TablesContext& context) {
  // The cluster's id, kept in the data directory (on the shared storage for a cluster, made by
  // whichever process starts first).
  BASALT_ASSIGN_OR_RETURN(std::string cluster_id,
                          LoadOrCreateClusterId(context.env != nullptr ? context.env : Env::Default(),
                                                context.config->data_dir));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ServerTables> tables, context.config->cluster
                                                                    ? RegionServerTables::Open(context, cluster_id)
                                                                    : StandaloneTables::Open(context, cluster_id));
  tables->cluster_id_ = std::move(cluster_id);
  return tables;
}

}  // namespace basalt::server
