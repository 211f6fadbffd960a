// The master's side of the regions it placed on region servers (docs/DESIGN.md §6): a channel
// per region server (RegionServers), and a handle on a region open on one of them
// (RemoteRegionHandle, src/regions/region_handle.h), through which the catalogue's create,
// disable, enable, drop, assign, split and merge (src/catalog/catalog.h) work as on a standalone
// server: closing the handle closes the region on its server, flushing it; a flush, a major
// compaction, the split point and the figures are asked of the server. The master serves no
// region's rows: the region a placed region's data calls reach refuses them as not served here
// (NotServingRegionError), and the client locates the region in meta.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include "transport/grpc/grpc_settings.h"

#include <algorithm>
#include <functional>
#include <map>
#include <vector>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/basalt.grpc.pb.h"
#include "src/catalog/catalog.h"
#include "storage/region.h"

namespace basalt::master {

// One gRPC channel per region server (by host:port), made on first use and kept.
class RegionServers {
 public:
  // `security`: how the master's channels to the servers are secured (its own certificate as
  // the client's, under TLS and auth).
  explicit RegionServers(absl::Duration timeout, ChannelSecurity security = {})
      : timeout_(timeout), security_(std::move(security)) {}
  rpc::Admin::Stub* Stub(const std::string& server);
  absl::Duration timeout() const { return timeout_; }
  // A region's figures are only shown (list_regions, status): a server that is slow to give
  // them holds up no operator's command for long.
  absl::Duration load_timeout() const { return std::min(timeout_, absl::Milliseconds(500)); }
  // The master's epoch, sent with every call (docs/DESIGN.md §6, "Epochs"), and how it tells
  // whether it is still the active master: checked before every call, which is refused with
  // Unavailable once it is not. Set once, before the first call.
  void Lead(int64_t epoch, std::function<bool()> leading) {
    epoch_ = epoch;
    leading_ = std::move(leading);
  }
  int64_t epoch() const { return epoch_; }
  absl::Status CheckLeading() const;

 private:
  const absl::Duration timeout_;  // each call's deadline
  int64_t epoch_ = 0;
  std::function<bool()> leading_;
  const ChannelSecurity security_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<rpc::Admin::Stub>> stubs_ ABSL_GUARDED_BY(mu_);
};

class RemoteRegionHandle final : public server::RegionHandle {
 public:
  // `node`: the server's node name in ZooKeeper ("host:port,start code"), which tells this run
  // of the server from a later one at the same address.
  RemoteRegionHandle(RegionServers* servers, std::string server, std::string node, std::string encoded_name,
                     std::function<void()> on_release = {});
  ~RemoteRegionHandle() override;

  const std::string& server() const { return server_; }
  const std::string& node() const { return node_; }

  absl::Status Flush() override;
  absl::Status MajorCompact() override;
  absl::StatusOr<std::string> SplitPoint() const override;
  // Closes it on its server (flushing). A server that no longer answers: Unavailable (its
  // regions are reopened once it is fenced).
  absl::Status Close() override;
  // Asked of the server. When it does not answer, the figures are unknown: `failed` says so and
  // reference_files is 1.
  RegionStats GetStats() const override;
  // Asked of the server: `dir` is on the shared storage both see.
  absl::StatusOr<Region::SnapshotFiles> Snapshot(const std::string& dir) override;

 private:
  absl::StatusOr<rpc::RegionOpResponse> Op(rpc::RegionOp op, const std::string& snapshot_dir = "") const;

  RegionServers* const servers_;
  const std::string server_;
  const std::string node_;
  const std::string encoded_;
  const std::function<void()> on_release_;  // when the handle goes (the master counts regions per server)
};

// Opens `info` of `spec` on `server` (OpenRegion), in the run `node` names; the handle for it.
// AlreadyExists from the server (it is open there already, say after a master failover) is taken
// as success; another run at that address: Unavailable.
absl::StatusOr<server::PlacedRegion> OpenOn(RegionServers* servers, const std::string& server, const std::string& node,
                                            const server::TableSpec& spec, const server::RegionInfo& info,
                                            std::function<void()> on_release = {});
// The handle for a region already open on `server`, without a call.
server::PlacedRegion Adopt(RegionServers* servers, const std::string& server, const std::string& node,
                           const server::TableSpec& spec, const server::RegionInfo& info,
                           std::function<void()> on_release = {});
// The server's own status (Status), within the servers' load_timeout: it is only shown.
absl::Status ServerStatus(RegionServers* servers, const std::string& server, rpc::StatusResponse* resp);
// The replication peers `server` follows, with its shippers' figures (its Admin ListPeers).
absl::Status ServerPeers(RegionServers* servers, const std::string& server, rpc::ListPeersResponse* resp);
// What of `token` `server` has not shipped to every peer replicating `table` ("": nothing).
absl::StatusOr<std::string> ServerNotReplicated(RegionServers* servers, const std::string& server,
                                                const std::string& table, const rpc::ConsistencyToken& token);
// The regions open on `server` (HostedRegions) in the run `node` names, within `timeout` (zero:
// the servers' timeout). Unavailable when another run answers there.
absl::StatusOr<std::vector<server::RegionInfo>> HostedOn(RegionServers* servers, const std::string& server,
                                                         const std::string& node,
                                                         absl::Duration timeout = absl::ZeroDuration());
// The start code in a server's node name ("host:port,start code"); 0 when it has none.
int64_t StartCodeOf(const std::string& node);

}  // namespace basalt::master
