// Where the active master's regions serve (HBase's AssignmentManager with its LoadBalancer;
// Kudu's placement policy beside its TSManager): the live region servers and how many regions
// each holds, the regions found open on them at a take-over (adopted, not opened again),
// placing a region on the least loaded live server (server::RegionPlacement, which the
// catalogue opens its user regions through), resolving a move's destination, and the
// balancer's plan. It reaches region servers only through remote_region.h: a region's
// RemoteRegionHandle, and OpenRegion for a new one. What a region is and where meta says it is
// stay the catalogue's (src/catalog/catalog.h), which it asks to move a region.
//
// Lock order: the catalogue's admin lock (held while it opens regions) before this one's `mu_`;
// nothing here calls the catalogue while holding `mu_`.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/basalt.pb.h"
#include "src/master/remote_region.h"
#include "src/regions/region_placement.h"
#include "src/catalog/catalog.h"

namespace basalt::master {

class AssignmentManager final : public server::RegionPlacement {
 public:
  AssignmentManager(RegionServers* servers, std::function<void(std::string_view)> log)
      : servers_(servers), log_(std::move(log)) {}

  // server::RegionPlacement: a region found open at take-over is adopted where it is; else it
  // opens on `destination` first when given, then on the live servers by load (fewest regions
  // first), the next tried when one does not answer. Unavailable when no server is live.
  absl::StatusOr<server::PlacedRegion> Open(const server::TableSpec& spec, const server::RegionInfo& info,
                                            RegionDescriptor desc, const std::string& dir,
                                            std::string_view destination) override;
  bool ClosesRegionsAtStop() const override { return false; }
  bool PlacesChildrenAfterCommit() const override { return true; }
  bool KeepsUnassignedRegions() const override { return true; }

  // The live servers regions may go to (node names "<host:port>,<start code>"); forgets the
  // load of servers no longer among them. True when one of them is new.
  bool SetLive(std::vector<std::string> live);
  std::vector<std::string> Live() const;
  // At a take-over, before the catalogue opens: the regions `node` (at `server`) holds now,
  // adopted when the catalogue places them.
  void Found(const std::string& server, const std::string& node, const std::vector<server::RegionInfo>& held);
  // Once the catalogue is open: how many regions found open no table claimed (they are left as
  // they are), forgetting them.
  size_t ForgetUnclaimed();

  // The live servers' open regions: node → encoded names (every live server listed).
  std::map<std::string, std::vector<std::string>> RegionsByServer(const server::Catalog& catalog) const;
  // Moves a region to `server` (a live server's host:port or node name; empty: wherever it is
  // placed). InvalidArgument naming the live servers for one that is not live.
  absl::Status Move(server::Catalog* catalog, std::string_view region, std::string_view server);
  // Moves regions, one at a time, from the server holding the most to the one holding the
  // fewest until no two live servers differ by more than one (HBase's balancer by count).
  absl::Status Balance(server::Catalog* catalog, rpc::BalanceResponse* resp);

  // Whether region `h` of the catalogue is served on `node` (a dead server's, to recover).
  static bool ServedOn(const server::HostedRegion& h, const std::string& node);
  // HOST:PORT of a server node ("<host:port>,<start code>").
  static std::string AddressOf(const std::string& node);

 private:
  // Counts a region out of `node`'s load: what a RemoteRegionHandle runs when it goes.
  std::function<void()> Release(const std::string& node);
  void Log(std::string_view line) const { log_(line); }

  RegionServers* const servers_;
  const std::function<void(std::string_view)> log_;
  mutable absl::Mutex mu_;
  std::vector<std::string> live_ ABSL_GUARDED_BY(mu_);
  // Regions per live server node (their handles count themselves out when they go).
  std::map<std::string, int> load_ ABSL_GUARDED_BY(mu_);
  // Regions found open on live servers at take-over, by encoded name: (server, node).
  std::map<std::string, std::pair<std::string, std::string>> adopt_ ABSL_GUARDED_BY(mu_);
  absl::Mutex balance_mu_;  // one balancer run at a time
};

}  // namespace basalt::master
