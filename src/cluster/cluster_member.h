// A region server's membership of a cluster, in ZooKeeper (docs/DESIGN.md §6), under the
// cluster's parent node (zookeeper_znode_parent, /basalt as HBase's /hbase):
//   <parent>/rs/<name>,<start code>       ephemeral: the server is alive (its session is)
//   <parent>/servers/<name>,<start code>  persistent: its registration, kept until a master has
//                                         fenced it, so a master that takes over later still
//                                         knows every server that may hold files open
//   <parent>/fenced/<name>,<start code>   persistent: when, how, and how fast it was fenced
//   <parent>/master/n_<seq>               the masters' election (common/zookeeper.h)
//   <parent>/active-master                persistent: the master that took over last (a
//                                         registration), whose RADOS client the next one fences
//   <parent>/meta-server                  HOST:PORT of the server holding basalt:meta, where
//                                         clients start (as HBase's meta-region-server)
//   <parent>/acl                          a counter the active master bumps after each grant
//                                         or revoke: region servers watch it and load the
//                                         grants again (as HBase's /hbase/acl)
//   <parent>/quota                        likewise after each quota change (src/security/quotas.h)
//   <parent>/replication-peers            likewise after each replication peer's change
//                                         (src/replication/peers.h)
// A registration is text, one "key=value" per line, readable with zkCli.
#pragma once

#include "transport/grpc/grpc_settings.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/zookeeper.h"
#include "proto/basalt.pb.h"
#include "src/transactions/transactions.h"

namespace basalt::server {

class AccessController;
class Quotas;

struct ServerRegistration {
  std::string name;            // HOST:PORT it serves gRPC on
  int64_t start_code = 0;      // when it started (ms since the epoch): tells restarts apart
  std::string rados_client;    // its RADOS client address, what fencing blocklists ("" without RADOS)
  // A cluster's region server: its log's directory (in the data directory), which the master
  // splits by region once it has fenced the server. Empty: a standalone server's.
  std::string wal_dir;
  // HOST:PORT of its HBase port (hbase_listen), which the master's hbase:meta names as the
  // server of its regions (docs/DESIGN.md §15). Empty: it has none.
  std::string hbase;

  std::string NodeName() const;  // "<name>,<start code>"
  std::string Encode() const;
  static absl::StatusOr<ServerRegistration> Decode(std::string_view text);
};

struct ClusterPaths {
  std::string parent = "/basalt";
  std::string live() const { return parent + "/rs"; }
  std::string servers() const { return parent + "/servers"; }
  std::string fenced() const { return parent + "/fenced"; }
  std::string masters() const { return parent + "/master"; }
  std::string meta_server() const { return parent + "/meta-server"; }
  std::string active_master() const { return parent + "/active-master"; }
  // The active master's HBase port (docs/DESIGN.md §15), for region servers' registries.
  std::string hbase_master() const { return parent + "/hbase-master"; }
  std::string acl() const { return parent + "/acl"; }
  std::string quota() const { return parent + "/quota"; }
  std::string replication_peers() const { return parent + "/replication-peers"; }
};

// Registers a server: its ephemeral node, then its persistent registration (in that order, so
// that a registration without a live node always means a server whose session ended: a master
// fences it; a live node without a registration is a server still joining, which a master places
// nothing on). Keep the session for as long as the server serves; `on_expired` runs when
// ZooKeeper has ended it (a master is fencing the server).
absl::StatusOr<std::unique_ptr<ZooKeeper>> JoinCluster(ZooKeeper::Options zk, const ClusterPaths& paths,
                                                       const ServerRegistration& me);

// The live servers' registrations (their live nodes hold them too), in no order. A node that
// went while they were read is left out; one that does not decode is an error naming it.
absl::StatusOr<std::vector<ServerRegistration>> LiveRegistrations(ZooKeeper* zk, const ClusterPaths& paths);

// Names `server` as the one holding basalt:meta, for clients to find.
absl::Status PublishMetaServer(ZooKeeper* zk, const ClusterPaths& paths, const std::string& server);
// The active master's HBase port: `master` (its name, start code and `hbase` address) published
// by a master once it serves one, for region servers to name to HBase clients; nullopt: the
// active master has none, and an earlier master's record goes. ReadHBaseMaster: NotFound when
// no master publishes one.
absl::Status PublishHBaseMaster(ZooKeeper* zk, const ClusterPaths& paths, const std::optional<ServerRegistration>& master);
absl::StatusOr<ServerRegistration> ReadHBaseMaster(ZooKeeper* zk, const ClusterPaths& paths);
// Asks the active master (named in ZooKeeper) to split region `encoded_name`: what a region
// server does when one of its regions passes the split size (HBase's region server reports the
// split it wants to the master, which runs it). Returns the master's answer.
absl::Status AskMasterToSplit(ZooKeeper* zk, const ClusterPaths& paths, const std::string& encoded_name,
                              const ChannelSecurity& security = {});

// The active master's: tells the region servers the grants changed (bumps <parent>/acl).
absl::Status AnnounceGrantsChanged(ZooKeeper* zk, const ClusterPaths& paths);
// A region server's: loads every grant from the active master (its UserPermissions, as this
// server's identity, a superuser there) into `access`, now and again each time <parent>/acl
// changes, until the session ends. The first load's error is returned (the server should not
// serve with no grants); later ones are logged, and the copy it has stays.
absl::Status FollowGrants(ZooKeeper* zk, const ClusterPaths& paths, const ChannelSecurity& security,
                          AccessController* access);

// The same for quotas: the master bumps <parent>/quota after each change; a region server loads
// the master's (its ListQuotas) into `quotas` now and again after each bump.
absl::Status AnnounceQuotasChanged(ZooKeeper* zk, const ClusterPaths& paths);
absl::Status FollowQuotas(ZooKeeper* zk, const ClusterPaths& paths, const ChannelSecurity& security, Quotas* quotas);

// The same for replication peers (<parent>/replication-peers): a region server gives `apply` the
// master's (its ListPeers) now and after each change.
absl::Status AnnouncePeersChanged(ZooKeeper* zk, const ClusterPaths& paths);
absl::Status FollowPeers(ZooKeeper* zk, const ClusterPaths& paths, const ChannelSecurity& security,
                         std::function<absl::Status(const rpc::ListPeersResponse&)> apply);

// A region server's check of a transactional write (DataService::SetRemoteWriterCheck): asks
// the active master's transaction service (CheckTransactionWriter, as this server's identity),
// through `*zk` once it is set. The master's answer for a (transaction, user) is kept for a
// second, so a transaction writing to this server asks about once a second, and a writer
// refused asks no more often.
std::function<absl::Status(const TxCaller&, int64_t)> MasterWriterCheck(const std::atomic<ZooKeeper*>* zk,
                                                                        const ClusterPaths& paths,
                                                                        const ChannelSecurity& security);

// The daemons' ZooKeeper identity (ZooKeeper::Options::digest) from `path`: one line
// "user:password" (the setting zookeeper_auth_file; a file, so that the password is in no
// command line). InvalidArgument naming the file when it is not that.
absl::StatusOr<std::string> ReadZooKeeperIdentity(const std::string& path);
// A secure cluster's check of its ZooKeeper (docs/DESIGN.md §6): FailedPrecondition when the session has
// no identity, or when the parent or a node of the cluster's under it is open to anyone (made
// before the identity was set: anyone could delete a live server's node, pre-create a fenced
// one or rewrite meta-server).
absl::Status CheckZooKeeperClosed(ZooKeeper* zk, const ClusterPaths& paths);

}  // namespace basalt::server
