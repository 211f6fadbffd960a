// Where the active master's regions serve (HBase's AssignmentManager with its LoadBalancer;
// Kudu's placement policy beside its TSManager): the live region servers and how many regions
// each holds, the regions found open on them at a take-over (adopted, not opened again),
// placing a region on the least loaded live server (server::RegionPlacement, which the
// catalogue opens its user regions through), and the master's region transitions: a move, the
// balancer's plan, HBase 2's unassign and assign of one region (the regions held closed are
// kept here), and a dead server's recovery (its log split, its regions opened elsewhere). It
// reaches region servers only through remote_region.h: a region's RemoteRegionHandle, and
// OpenRegion for a new one. What a region is and where meta says it is stay the catalogue's
// (src/catalog/catalog.h), whose Transition runs each of these between its admin operations.
//
// Lock order: the catalogue's admin lock (held while it opens regions) before this one's `mu_`;
// nothing here calls the catalogue while holding `mu_`.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <functional>
#include <map>
#include <set>
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
  // A master stopping leaves its regions open on their servers: the next master adopts them.
  absl::Status Stop(server::Table* table) override { return table->Stop(/*close_regions=*/false); }
  // Not known until placed: a split's children are recorded where they opened, after its commit.
  std::string WhereNewRegionsServe(std::string_view) const override { return ""; }
  std::vector<std::string> LogsToRecover() const override;
  void KeepClosed(const server::RegionInfo& info) override;
  bool IsHeldClosed(const server::RegionInfo& info) const override;
  void TableEnabled(std::string_view table) override;

  // At a take-over, before the catalogue opens: the logs of the dead (fenced) servers, which it
  // splits before any region opens (LogsToRecover).
  void SetLogsToRecover(std::vector<std::string> logs);

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
  // Every open region of every enabled user table (not one held closed).
  static std::vector<server::HostedRegion> OpenRegions(const server::Catalog& catalog);
  // The enabled tables that are FAILED_OPEN or have FAILED_OPEN regions: what Catalog::Assign
  // reopens (when a region server joins).
  static std::vector<std::string> TablesToAssign(const server::Catalog& catalog);

  // Moves a region (its name or encoded name) to `server` (a live server's host:port or node
  // name; empty: wherever it is placed), as HBase's move does: it closes on its server (flushing;
  // from then its calls are refused there and clients wait for meta), opens through the
  // placement, and meta records where. OK at once when it is on `server` already. A close that
  // fails (the server does not answer, or its flush failed) leaves the region where it was and is
  // the error; an open that fails leaves it FAILED_OPEN (assigned again when a server joins).
  // InvalidArgument naming the live servers for a server that is not live; NotFound for an
  // unknown region; FailedPrecondition for a disabled or FAILED_OPEN table, or a region held
  // closed.
  absl::Status Move(server::Catalog* catalog, std::string_view region, std::string_view server);
  // HBase 2's unassign: the region closes on its server (flushing) and meta records it CLOSED,
  // with no server; it stays closed (calls on its rows are refused as not served and clients
  // retry until their deadline), also across a take-over, and neither the balancer nor a joining
  // server opens it, until AssignRegion or enable_table. OK when it is held closed already. A
  // close that fails leaves it open and is the error. NotFound, FailedPrecondition for a disabled
  // or FAILED_OPEN table.
  absl::Status Unassign(server::Catalog* catalog, std::string_view region);
  // HBase 2's assign of one region: one held closed, or FAILED_OPEN, opens through the placement
  // and meta records where; OK at once when it is open. The open's error when no server could
  // open it (it is then FAILED_OPEN, opened again when a server joins).
  absl::Status AssignRegion(server::Catalog* catalog, std::string_view region);
  // A region server died and was fenced: splits its log (`log_dir`; none: "") into its regions'
  // recovered.edits, then places again, elsewhere, every region of an enabled table served on
  // `node`, and records where in meta. How many regions were placed again; a region that cannot
  // be placed now is FAILED_OPEN (TablesToAssign), and a log that cannot be split is the error
  // (nothing is reopened; the caller retries).
  absl::StatusOr<size_t> Recover(server::Catalog* catalog, const std::string& log_dir, const std::string& node);
  // Moves regions, one at a time, from the server holding the most to the one holding the
  // fewest until no two live servers differ by more than one (HBase's balancer by count).
  absl::Status Balance(server::Catalog* catalog, rpc::BalanceResponse* resp);

  // Whether region `h` of the catalogue is served on `node` (a dead server's, to recover).
  static bool ServedOn(const server::HostedRegion& h, const std::string& node);
  // HOST:PORT of a server node ("<host:port>,<start code>").
  static std::string AddressOf(const std::string& node);

 private:
  // Move, to a live server's HOST:PORT (`destination`; empty: wherever it is placed).
  absl::Status MoveTo(server::Catalog* catalog, std::string_view region, std::string_view destination);
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
  // Regions held closed (unassigned), by table, then encoded name.
  std::map<std::string, std::set<std::string>, std::less<>> held_closed_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> logs_to_recover_ ABSL_GUARDED_BY(mu_);
  absl::Mutex balance_mu_;  // one balancer run at a time
};

}  // namespace basalt::master
