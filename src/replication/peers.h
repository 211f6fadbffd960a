// A standalone server's replication peers (docs/DESIGN.md §15, "Replication from Basalt"): the
// clusters, Basalt's or HBase's, its log's edits are shipped to, as HBase's add_peer,
// remove_peer, enable_peer, disable_peer and list_peers keep them.
//
// A peer is found as HBase finds one: its cluster key is HBase's
// "<quorum hosts>:<client port>:<znode parent>", and a sink is one of the region servers listed
// under <parent>/rs there (a Basalt cluster's master lists its servers' HBase ports; a standalone
// Basalt server with hbase_zookeeper_quorum lists its own). Its cluster id (<parent>/hbaseid)
// must not be ours: a peer that is this cluster is refused, as HBase's.
//
// What is kept, in the server's data directory (`state_dir`, data_dir/replication):
//   peers                 every peer (rpc::ReplicationPeer), replaced whole and durably on
//                         each change, before the call answers
//   <peer>.position       each peer's place in the log (log_shipper.h), from when it was added,
//                         enabled or not: a peer added disabled gets, once enabled, every edit
//                         made since it was added (what HBase's zero-downtime move needs)
// The log keeps the segments from each peer's place on, up to the server's bound
// (replication_max_held_log): past it the peer furthest behind loses its place and is BROKEN
// (say so, copy its tables anew, remove and add it again); the server's own service never
// suffers for a peer that is away.
//
// What is shipped: the edits of families whose REPLICATION_SCOPE is not 0, of the peer's tables
// (every table when it names none). Thread-safety: every call may come from any thread.
//
// In a cluster (docs/DESIGN.md §15, "A cluster as a source") the same class plays two parts:
// - The active master keeps the peers (`log` null: it writes no log of its own), in the shared
//   data_dir/replication/peers, and tells the region servers after each change (on_change: the
//   grants' and quotas' announcement). It also ships what dead region servers had not shipped
//   (ShipDeadLogs): their places are in data_dir/replication/rs/<run>/ and the segments they
//   still needed were kept through the log's split, in HeldLogDir(data_dir/wals/<run>).
// - A region server follows them (`follower`: every change but the master's is refused) and
//   ships its own log (this run's: data_dir/wals/<run>), its places in data_dir/replication/rs/<run>.
//   The peers it is given first are placed at its log's beginning: nothing it wrote before it
//   heard of them is missed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "proto/basalt.pb.h"
#include "src/front/hbase/zk_records.h"
#include "src/regions/table_source.h"
#include "src/replication/log_shipper.h"
#include "src/services/admin_parts.h"
#include "storage/server_log.h"

namespace basalt::replication {

// Under a cluster's data_dir: each region server run's log (data_dir/wals/<run>), and where
// its shippers keep their places (data_dir/replication/rs/<run>).
inline constexpr char kRunLogsDir[] = "wals";
inline constexpr char kRunPlacesDir[] = "replication/rs";
// The run a region server's log directory (data_dir/wals/<run>) is of.
inline std::string RunOfLogDir(const std::string& dir) { return dir.substr(dir.find_last_of('/') + 1); }

using hbase::ClusterKey;
using hbase::ParseClusterKey;

// A sink of the cluster at `key` (its ZooKeeper's <parent>/rs, one at random), after checking that
// its cluster id is not `own_cluster_id`: FailedPrecondition when it is, Unavailable when it
// lists no sink or its ZooKeeper does not answer.
absl::StatusOr<LogShipper::Sink> FindSink(const ClusterKey& key, const std::string& own_cluster_id);

// Whether family `family` is replicated by table `spec`'s settings (REPLICATION_SCOPE not 0).
bool ReplicatedFamily(const server::TableSpec& spec, std::string_view family);

class Peers final : public server::ReplicationPeers {
 public:
  struct Options {
    Env* env = nullptr;         // nullptr: Env::Default()
    ServerLog* log = nullptr;   // the server's log (opened with ReadPositions' holds)
    std::string state_dir;      // data_dir/replication
    std::string cluster_id;     // this cluster's (a UUID)
    server::TableSource* tables = nullptr;  // their REPLICATION_SCOPE
    // A sink of `peer`; empty: FindSink through the peer's ZooKeeper.
    std::function<absl::StatusOr<LogShipper::Sink>(const rpc::ReplicationPeer& peer)> find_sink;
    absl::Duration idle_poll = absl::Milliseconds(50);
    std::function<void(std::string_view)> say;  // the shippers' log lines; empty: the server log
    // A cluster's region server: the peers are the master's (Replace), none kept here.
    bool follower = false;
    // The run its log is (a region server's <run>; "" for a standalone server's), in its
    // consistency tokens.
    std::string run;
    // A cluster's master: told after each change is kept (announces it to the region servers).
    std::function<void()> on_change;
    // A cluster's master: where the region servers' runs keep their places (data_dir/replication/rs)
    // and write their logs (data_dir/wals), and how a task is run on the master's own thread (a
    // dead log's shipper, done, is put away there: ShipDeadLogs).
    std::string runs_dir;
    std::string logs_dir;
    // A master, with no cluster_id given: how it reads the cluster's id once a dead run is to be
    // shipped (not at its start, when a region server may be making it).
    std::function<absl::StatusOr<std::string>()> load_cluster_id;
    std::function<void(std::function<void()>)> post;
  };
  // Reads the peers kept in state_dir and starts shipping to the enabled ones. DataLoss for a
  // peers file that does not parse.
  static absl::StatusOr<std::unique_ptr<Peers>> Open(Options options);
  ~Peers() override;  // Stop
  // Every shipper stopped, its place kept; later calls that would start one are refused.
  void Stop();

  absl::Status AddPeer(const rpc::ReplicationPeer& peer) override;
  absl::Status RemovePeer(std::string_view id) override;
  absl::Status UpdatePeer(const rpc::ReplicationPeer& peer) override;
  absl::Status SetPeerEnabled(std::string_view id, bool enabled) override;
  absl::Status ListPeers(rpc::ListPeersResponse* resp) const override;
  // A process with a log: its run's durable end. A master: every dead run not shipped whole yet
  // (whole); the master adds its live servers' (master.cc).
  absl::StatusOr<rpc::ConsistencyToken> ConsistencyToken() const override;
  // The token's ends this process answers for (its own run's; a master: the dead runs'), each
  // against the place of every peer that replicates `table`.
  absl::StatusOr<std::string> NotReplicated(std::string_view table, const rpc::ConsistencyToken& token) const override;

  // The log dropped hold `hold` (Catalog::Options::on_wal_hold_dropped): its peer is BROKEN.
  void HoldDropped(std::string_view hold);

  // A follower: the peers are now `all` (the master's ListPeers). InvalidArgument for a peer
  // that does not validate (nothing changed then).
  absl::Status Replace(const rpc::ListPeersResponse& all);
  // The master: ships, to each enabled peer, what every dead region server's run (a directory of
  // runs_dir whose log in logs_dir is gone: split) had not shipped yet, from its kept places; a
  // run shipped whole (or whose peers are gone) is removed with what was kept of its log. Called
  // after each log split and when a peer changes; each call may run again.
  void ShipDeadLogs();
  // The places and holds a dead run's log `dir` (data_dir/wals/<run>) keeps through its split
  // (Catalog::Options::dead_log_holds), from `runs_dir`'s places.
  static absl::StatusOr<std::map<std::string, uint64_t>> DeadLogHolds(Env* env, const std::string& runs_dir,
                                                                    const std::string& dir);

 private:
  struct Peer {
    rpc::ReplicationPeer config;
    std::unique_ptr<LogShipper> shipper;  // while enabled
  };
  explicit Peers(Options options) : options_(std::move(options)) {}
  absl::Status RefuseChange(std::string_view what) const;
  // Stops and forgets peer `it` (its place and hold).
  absl::Status Drop(std::map<std::string, Peer>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the dead runs' shippers that should run, stops those of peers disabled or gone, and
  // puts away the runs shipped whole.
  void ShipDeadLogsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Kept and told (on_change).
  absl::Status Changed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Save() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status StartShipper(Peer* peer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A shipper's options for peer `config`, its place in `state_dir`, as cluster `cluster_id` (the
  // log to read is the caller's to give).
  absl::StatusOr<LogShipper::Options> ShipperOptions(const rpc::ReplicationPeer& config, std::string state_dir,
                                                     const std::string& cluster_id) const;
  // What `peer` replicates, as the tables are now.
  LogShipper::Scope ScopeNow(const rpc::ReplicationPeer& peer) const;
  // Whether `peer` may replicate something of `table` (when the table is not known here: yes).
  bool MayReplicate(const rpc::ReplicationPeer& peer, std::string_view table) const;

  // Sets peer `id`'s shipper where HoldDropped finds it (null: none runs).
  void SetLive(const std::string& id, LogShipper* shipper) ABSL_LOCKS_EXCLUDED(dropped_mu_);

  const Options options_;
  mutable absl::Mutex mu_;  // before dropped_mu_
  std::map<std::string, Peer> peers_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool replaced_ ABSL_GUARDED_BY(mu_) = false;  // a follower was given its peers once
  // The master's shippers of dead runs' logs: run -> peer -> shipper (DONE ones put away by
  // ShipDeadLogs).
  std::map<std::string, std::map<std::string, std::unique_ptr<LogShipper>>> dead_ ABSL_GUARDED_BY(mu_);
  std::string loaded_cluster_id_ ABSL_GUARDED_BY(mu_);  // load_cluster_id's, once it answered
  // What HoldDropped touches, apart from mu_: the log calls it from wherever it drops a hold,
  // which may be inside a call of ours that holds mu_.
  mutable absl::Mutex dropped_mu_;
  std::map<std::string, LogShipper*> live_ ABSL_GUARDED_BY(dropped_mu_);
  std::set<std::string> dropped_ ABSL_GUARDED_BY(dropped_mu_);  // peers whose hold was dropped
};

}  // namespace basalt::replication
