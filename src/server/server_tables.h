// The tables a basalt-server serves, and where their catalogue is (docs/DESIGN.md §2):
//   - StandaloneTables: the server keeps the catalogue itself (a Catalog: tables, basalt:meta, the
//     grants' and quotas' tables) and the transaction service, as a cluster's master would; one
//     process on one machine is a complete database, like HBase's standalone mode.
//   - RegionServerTables (--cluster): the regions the active master opens here (a RegionHost),
//     writing to this run's own log; the catalogue, grants, quotas and transactions are the
//     master's, followed or asked through the cluster's ZooKeeper.
// The RegionServer (region_server.h) asks this part for what differs, never which one it is.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "common/zookeeper.h"
#include "src/base/config.h"
#include "src/cluster/cluster_member.h"
#include "src/front/hbase/hbase_services.h"
#include "src/regions/table_source.h"
#include "src/security/access_control.h"
#include "src/security/quotas.h"
#include "src/services/service.h"
#include "src/transactions/transactions.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

// What a ServerTables needs of its process.
struct TablesContext {
  const ServerConfig* config = nullptr;
  Env* env = nullptr;  // the shared storage, or null: the local disk
  RegionOptions region;
  std::string host;          // the host this server serves on
  int64_t start_code = 0;    // this run (ms since the epoch)
  SessionLease* lease = nullptr;
  // The cluster's ZooKeeper once the server has joined (null before), and its paths; how this
  // server's calls to the master are secured.
  const std::atomic<ZooKeeper*>* zk = nullptr;
  const ClusterPaths* paths = nullptr;
  const ChannelSecurity* to_master = nullptr;
};

class ServerTables {
 public:
  virtual ~ServerTables() = default;

  // Opens the tables for `context` (which must outlive them): a standalone server's catalogue,
  // or a region server's empty host (--cluster).
  static absl::StatusOr<std::unique_ptr<ServerTables>> Open(const TablesContext& context);
  // What a fencing of the shared storage means for a server with `config`, said as it ends the
  // process (Daemon::ConnectRados); null: none fences it.
  static const char* FencedWords(const ServerConfig& config);

  virtual TableSource* tables() = 0;
  // Closes the tables (and first whatever reads them), as the server stops.
  virtual absl::Status Close() { return tables()->CloseAll(); }
  // The Admin service over these tables (its counters: `counters`).
  virtual std::unique_ptr<AdminService> Admin(const ServerCounters* counters) = 0;
  // The data service over these tables, with the check of a transactional write's writer.
  virtual std::unique_ptr<DataService> Data() = 0;
  // basalt:acl's and basalt:quota's regions, where they are kept here; null when the master keeps
  // them (Followed then loads them).
  virtual Region* acl_region() = 0;
  virtual Region* quota_region() = 0;
  // This run's own log directory, for its registration (empty: the server log in data_dir/wal).
  virtual std::string log_dir() const = 0;
  // The cluster's id (src/schema/cluster_id.h, read or made when the tables opened): HBase's
  // hbase.id, which its replication sources read as a UUID from ZooKeeper.
  const std::string& cluster_id() const { return cluster_id_; }
  // What the HBase port serves here (hbase_services.h); parts.cluster_id is cluster_id().
  virtual void ServeHBase(hbase::HBaseFront* front, const hbase::ServiceParts& parts) = 0;
  // What this process is, in the HBase port's refusals.
  virtual const char* what() const = 0;
  // Whether the registration in ZooKeeper holds its session's lease (regions are served only
  // while it does).
  virtual bool leased() const = 0;
  // Once registered in the cluster's ZooKeeper: follows what the master keeps (the grants under
  // auth, the quotas), each loaded now and again whenever the master says it changed. A failure
  // is logged: they are loaded when the master next announces them.
  virtual void Followed(ZooKeeper* zk, AccessController* access, Quotas* quotas) = 0;

 private:
  std::string cluster_id_;  // Open's
};

}  // namespace basalt::server
