// The HBase port's records in ZooKeeper, where HBase 2.x clients look by default
// (ZKConnectionRegistry: hbase.zookeeper.quorum and zookeeper.znode.parent), and where clients
// that know only ZooKeeper (gohbase, Python's hbase-driver) must find them:
//
//   <parent>/hbaseid              persistent  the cluster id (ClusterId)
//   <parent>/master               ephemeral   the active master: this server's HBase port
//   <parent>/meta-region-server   ephemeral   hbase:meta's server: the same
//   <parent>/rs/<host,port,code>  ephemeral   each server that takes replicated edits (an HBase
//                                             replication source's sinks): a standalone server
//                                             itself; a cluster's active master, its live region
//                                             servers' HBase ports (SetSinks, as they come and go)
//
// each in zk_records.h's form (0xff, the writer's id, PBUF, the message). The parent is the
// HBase port's own (default /hbase), never Basalt's cluster parent: Basalt's <parent>/master is
// its masters' election directory. The ephemeral records go with this server's session, so a
// stopped server is not advertised. A session that expires (the server was paused or cut off
// from ZooKeeper for longer than its timeout) took them with it: a new session writes them again,
// tried every second until it can, while Options::entitled says so (a master: while it is still
// the active one, so a deposed master never writes over its successor's records).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/zookeeper.h"
#include "proto/hbase/hbase_cluster.pb.h"

namespace basalt::hbase {

class ZkPublisher {
 public:
  struct Options {
    ZooKeeper::Options session;  // quorum, timeouts (its own session; on_expired is its own)
    std::string parent = "/hbase";
    ServerName self;             // the HBase port, as clients dial it
    std::string cluster_id;
    // The HBase ports listed under rs/, where an HBase cluster that replicates into this one
    // sends its edits (AdminService.ReplicateWALEntry): the first list (SetSinks changes it).
    std::vector<ServerName> sinks;
    int info_port = 0;
    std::function<void(std::string_view)> log;
    // Whether the records may be written again after an expiry; empty: always.
    std::function<bool()> entitled;
  };
  // Connects and writes the records. Unavailable when ZooKeeper does not answer; an error from
  // ZooKeeper (a parent it may not write) as it came.
  static absl::StatusOr<std::unique_ptr<ZkPublisher>> Start(Options options);
  ~ZkPublisher();  // closes the session: the ephemeral records go at once

  // The records as written (for tests).
  static absl::Status Publish(ZooKeeper* zk, const Options& options);
  // Makes rs/ list `sinks` alone (others' nodes under it removed), soon, on the publisher's own
  // thread; tried again each second until it can, and written again in each new session.
  void SetSinks(std::vector<ServerName> sinks);
  // Makes rs/ list `sinks` alone in `zk` (for tests).
  static absl::Status SyncSinks(ZooKeeper* zk, const std::string& parent, const std::vector<ServerName>& sinks);

 private:
  explicit ZkPublisher(Options options) : options_(std::move(options)), sinks_(options_.sinks) {}
  // A new session (replacing zk_), and the records written in it.
  absl::Status Connect();
  // The thread that writes the records again after each expiry, and rs/ after each SetSinks.
  void Republish();
  const Options options_;
  std::unique_ptr<ZooKeeper> zk_;  // Connect's, then only Republish's thread's
  absl::Mutex mu_;
  std::vector<ServerName> sinks_ ABSL_GUARDED_BY(mu_);
  bool sinks_changed_ ABSL_GUARDED_BY(mu_) = false;
  bool expired_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace basalt::hbase
