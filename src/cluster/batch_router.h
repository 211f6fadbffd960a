// A cluster's region server applying a batch whose rows may be anywhere in the cluster
// (docs/DESIGN.md §15, "Replication into Basalt"). An HBase replication source sends each batch
// of its log to one sink, a region server it picked from the peer's rs/ list, whatever regions
// the rows are in; HBase's own sink then writes them through a client. Basalt's region server
// routes them itself: each row goes to the server the active master names for its region now
// (ListRegions), in one BatchMutate per server with the regions named (RegionRun), so a server
// that no longer holds a region refuses its rows alone; those are located again and sent again,
// until every row is applied or the deadline passes. Rows of this server's own regions are
// applied here, without a call.
//
// What the caller can rely on: OK only once every row was applied where its region is (each
// server answers a batch only once it is in its log, with the batch's durability). An error
// leaves some rows applied and others not; the source sends the whole batch again, and a batch
// whose cells carry their timestamps is the same the second time (replication_sink.h).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/zookeeper.h"
#include "proto/basalt.grpc.pb.h"
#include "src/cluster/cluster_member.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

// One server's share of a batch: its rows, in the batch's order, with their regions named.
struct RoutedPart {
  std::string server;               // host:port, as the master lists it
  rpc::BatchMutateRequest request;  // table, durability, rows and region runs
  std::vector<int> rows;            // each row's position in the batch routed
};

// Routes the rows at `positions` of `batch` by `regions` (ListRegions' answer: by start key).
// A row no open region with a server covers (a region between servers, a gap while a split
// installs) goes to `unplaced`. Pure.
std::vector<RoutedPart> RouteRows(const rpc::BatchMutateRequest& batch, const std::vector<int>& positions,
                                  const std::vector<rpc::RegionStatus>& regions, std::vector<int>* unplaced);

class BatchRouter {
 public:
  using LocalApply = std::function<absl::Status(const rpc::BatchMutateRequest&, rpc::BatchMutateResponse*)>;
  struct Options {
    const std::atomic<ZooKeeper*>* zk = nullptr;  // the server's session, once it has joined
    ClusterPaths paths;
    ChannelSecurity security;  // its calls to the master and the servers go as this server
    std::string self;          // this server's host:port: its rows go to `local`
    LocalApply local;
    absl::Duration deadline = absl::Seconds(20);  // per Apply (HBase's source waits 60 s)
  };
  explicit BatchRouter(Options options) : options_(std::move(options)) {}

  // Applies every row of `batch` (its regions unnamed) where its region is. Unavailable, naming
  // the rows left and the last reason, when the deadline passes first; a row's own error (a
  // missing family) at once, as that server gave it; the master's error locating the table (a
  // missing one: NotFound) as it came.
  absl::Status Apply(const rpc::BatchMutateRequest& batch);

 private:
  // The table's regions, from the master when `fresh` or not known yet.
  using RegionList = std::shared_ptr<const std::vector<rpc::RegionStatus>>;
  absl::StatusOr<RegionList> Regions(const std::string& table, bool fresh);
  // Sends `part` to its server; `resp` has a status per row.
  absl::Status Send(const RoutedPart& part, rpc::BatchMutateResponse* resp);
  std::shared_ptr<rpc::Basalt::Stub> StubFor(const std::string& server);

  const Options options_;
  absl::Mutex mu_;
  std::map<std::string, RegionList> regions_ ABSL_GUARDED_BY(mu_);  // by table (shared: no copy per batch)
  std::map<std::string, std::shared_ptr<rpc::Basalt::Stub>> stubs_ ABSL_GUARDED_BY(mu_);  // by server
  std::string master_ ABSL_GUARDED_BY(mu_);  // whose stub master_stub_ is
  std::shared_ptr<rpc::Admin::Stub> master_stub_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::server
