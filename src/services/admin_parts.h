// The parts of the Admin service (service.h AdminService) that not every process has, as HBase
// divides its admin calls between a master and its region servers:
//   TableChanges (src/regions/table_source.h)   a catalogue's table changes: a standalone
//                                              server's or the cluster's master's Catalog
//   ClusterAdmin                               what only a cluster's active master does (Master)
//   RegionServerCalls                          what the master asks of a region server
//                                              (RegionServerAdmin, over its RegionHost)
//   ReplicationPeers                           the peers this process's log is shipped to
//                                              (src/replication/peers.h: a standalone server's)
// A process gives its AdminService every part; one it does not have is a NotServedHere, the one
// refusal (FailedPrecondition saying whose call it is and what this process is).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "proto/basalt.pb.h"
#include "src/regions/table_source.h"

namespace basalt::server {

class ClusterAdmin {
 public:
  virtual ~ClusterAdmin() = default;
  // `server`: a live region server's host:port or node name; empty: wherever the master places it.
  virtual absl::Status Move(std::string_view region, std::string_view server) = 0;
  virtual absl::Status Balance(rpc::BalanceResponse* resp) = 0;
  // HBase 2's unassign of one region (its name or encoded name): closed, recorded CLOSED, served
  // nowhere until AssignRegion (or an enable) opens it again.
  virtual absl::Status Unassign(std::string_view region) = 0;
  virtual absl::Status AssignRegion(std::string_view region) = 0;
  // Adds the region servers, their regions and load, and the backup masters to a status.
  virtual void FillStatus(rpc::StatusResponse* resp) = 0;
};

class RegionServerCalls {
 public:
  virtual ~RegionServerCalls() = default;
  virtual absl::Status OpenRegion(const rpc::OpenRegionRequest& req, rpc::OpenRegionResponse* resp) = 0;
  virtual absl::Status CloseRegion(const rpc::CloseRegionRequest& req, rpc::AdminResponse* resp) = 0;
  virtual absl::Status RegionOperation(const rpc::RegionOpRequest& req, rpc::RegionOpResponse* resp) = 0;
  virtual absl::Status HostedRegions(const rpc::HostedRegionsRequest& req, rpc::HostedRegionsResponse* resp) = 0;
};

class ReplicationPeers {
 public:
  virtual ~ReplicationPeers() = default;
  // AlreadyExists for an id taken; InvalidArgument for a bad id or cluster key.
  virtual absl::Status AddPeer(const rpc::ReplicationPeer& peer) = 0;
  // NotFound for an unknown id.
  virtual absl::Status RemovePeer(std::string_view id) = 0;
  // A peer's settings changed (its cluster key and tables; `peer.enabled` is ignored): it goes on
  // from its place, under the new settings.
  virtual absl::Status UpdatePeer(const rpc::ReplicationPeer& peer) = 0;
  virtual absl::Status SetPeerEnabled(std::string_view id, bool enabled) = 0;
  virtual absl::Status ListPeers(rpc::ListPeersResponse* resp) const = 0;
  // The same with the figures of every process that ships (a cluster's master adds its live
  // region servers' to its own).
  virtual absl::Status ListPeersGathered(rpc::ListPeersResponse* resp) const { return ListPeers(resp); }
  // Bigtable's consistency token: where each log holding acknowledged edits ends now.
  virtual absl::StatusOr<rpc::ConsistencyToken> ConsistencyToken() const = 0;
  // What of `token` is not on every peer that replicates `table` yet ("": nothing, it is
  // consistent). InvalidArgument for a token this process cannot read.
  virtual absl::StatusOr<std::string> NotReplicated(std::string_view table, const rpc::ConsistencyToken& token) const = 0;
};

// Every call of a part this process does not have, refused: `process` says what it is ("standalone
// and holds every region itself", "a region server (connect through ZooKeeper)").
class NotServedHere final : public TableChanges, public ClusterAdmin, public RegionServerCalls, public ReplicationPeers {
 public:
  explicit NotServedHere(std::string process) : process_(std::move(process)) {}

  absl::Status Create(const TableSpec&, const std::vector<std::string>&) override { return Catalogue("create"); }
  absl::Status Disable(std::string_view) override { return Catalogue("disable"); }
  absl::Status Enable(std::string_view) override { return Catalogue("enable"); }
  absl::Status Modify(const TableSpec&) override { return Catalogue("alter"); }
  absl::Status Drop(std::string_view) override { return Catalogue("drop"); }
  absl::Status Assign(std::string_view) override { return Catalogue("assign"); }
  absl::Status Split(std::string_view, std::string_view) override { return Catalogue("split"); }
  absl::Status Merge(std::string_view, std::string_view) override { return Catalogue("merge_region"); }
  absl::StatusOr<SnapshotInfo> Snapshot(std::string_view, std::string_view, const SnapshotOptions&) override {
    return Catalogue("snapshot");
  }
  absl::StatusOr<std::vector<SnapshotListing>> ListSnapshots() const override { return Catalogue("list_snapshots"); }
  absl::Status DeleteSnapshot(std::string_view) override { return Catalogue("delete_snapshot"); }
  absl::StatusOr<SnapshotInfo> ReadSnapshot(std::string_view) const override { return Catalogue("snapshot"); }
  absl::Status CloneSnapshot(std::string_view, std::string_view) override { return Catalogue("clone_snapshot"); }
  absl::Status RestoreSnapshot(std::string_view) override { return Catalogue("restore_snapshot"); }
  absl::Status CreateNamespace(const NamespaceSpec&) override { return Catalogue("create_namespace"); }
  absl::Status ModifyNamespace(const NamespaceSpec&) override { return Catalogue("alter_namespace"); }
  absl::Status DropNamespace(std::string_view) override { return Catalogue("drop_namespace"); }
  absl::StatusOr<NamespaceSpec> DescribeNamespace(std::string_view) const override {
    return Catalogue("describe_namespace");
  }
  absl::StatusOr<std::vector<NamespaceSpec>> ListNamespaces() const override { return Catalogue("list_namespace"); }

  absl::Status Move(std::string_view, std::string_view) override { return Master("move"); }
  absl::Status Balance(rpc::BalanceResponse*) override { return Master("balancer"); }
  absl::Status Unassign(std::string_view) override { return Master("unassign"); }
  absl::Status AssignRegion(std::string_view) override { return Master("assign"); }
  void FillStatus(rpc::StatusResponse*) override {}

  absl::Status OpenRegion(const rpc::OpenRegionRequest&, rpc::OpenRegionResponse*) override {
    return RegionServer("OpenRegion");
  }
  absl::Status CloseRegion(const rpc::CloseRegionRequest&, rpc::AdminResponse*) override {
    return RegionServer("CloseRegion");
  }
  absl::Status RegionOperation(const rpc::RegionOpRequest&, rpc::RegionOpResponse*) override {
    return RegionServer("RegionOperation");
  }
  absl::Status HostedRegions(const rpc::HostedRegionsRequest&, rpc::HostedRegionsResponse*) override {
    return RegionServer("HostedRegions");
  }

  absl::Status AddPeer(const rpc::ReplicationPeer&) override { return Peers("add_peer"); }
  absl::Status RemovePeer(std::string_view) override { return Peers("remove_peer"); }
  absl::Status UpdatePeer(const rpc::ReplicationPeer&) override { return Peers("update_peer_config"); }
  absl::Status SetPeerEnabled(std::string_view, bool enabled) override {
    return Peers(enabled ? "enable_peer" : "disable_peer");
  }
  absl::Status ListPeers(rpc::ListPeersResponse*) const override { return Peers("list_peers"); }
  absl::StatusOr<rpc::ConsistencyToken> ConsistencyToken() const override {
    return Peers("GenerateConsistencyToken");
  }
  absl::StatusOr<std::string> NotReplicated(std::string_view, const rpc::ConsistencyToken&) const override {
    return Peers("CheckConsistency");
  }

 private:
  absl::Status Catalogue(std::string_view what) const;
  absl::Status Master(std::string_view what) const;
  absl::Status RegionServer(std::string_view what) const;
  absl::Status Peers(std::string_view what) const;

  const std::string process_;
};

}  // namespace basalt::server
