// A table as the server serves it: its regions, each with what it is (HostedRegion), sorted by
// start key and covering every row once, and the calls that span them (a scan in row order, a
// batch grouped by region). Built by Catalog (catalog.h), read by the services.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/schema/catalog_file.h"
#include "src/schema/region_info.h"
#include "src/regions/region_handle.h"
#include "storage/region.h"

namespace basalt::server {

// A region a table holds, with what it is.
struct HostedRegion {
  RegionInfo info;
  // Shared: a table reopened by assign keeps its healthy regions.
  std::shared_ptr<Region> region;
  // Not ok: the region could not open (a table of several regions serves the others); `region`
  // then answers every call with FailedPrecondition saying so.
  absl::Status open_error = {};
  // info.EncodedName(), set by Table: what a call names the region by (basalt.proto "Regions").
  std::string encoded_name = {};
  // Where it is served (host:port, what meta's info:server records): this server, or, in a
  // master, the region server it was placed on.
  std::string server = {};
  // A cluster's region server (region_host.h) holds only some of a table's regions: the rows of
  // the others are covered by placeholders that refuse every call as not served here
  // (UNAVAILABLE), so routing by row stays as it is. Statistics, flushes and closes skip them.
  bool placeholder = false;
  // A master's region an operator closed (Catalog::Unassign): served nowhere, meta records
  // it CLOSED, and `region` refuses every call as not served, until Assign.
  bool unassigned = false;
  // How it is closed, flushed and asked for its figures (region_handle.h): the region itself
  // when it is this process's (Table fills that in when none is given), or, on a master, the
  // handle on the region server that serves it (`region` then refuses every data call).
  std::shared_ptr<RegionHandle> handle = {};
};

// One enabled table and its regions, which cover every row once, sorted by start key. The set
// of regions is fixed for the Table's life (a change of regions makes a new Table).
class Table {
 public:
  Table(TableSpec spec, std::vector<HostedRegion> regions, bool system = false);
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  const std::string& name() const { return spec_.name; }
  const TableSpec& spec() const { return spec_; }
  // The region holding `row` (never null), and what it is.
  Region* RegionFor(std::string_view row) const { return HostedFor(row).region.get(); }
  const HostedRegion& HostedFor(std::string_view row) const;
  const std::vector<HostedRegion>& regions() const { return regions_; }
  // A scan across the regions in row order; spec.limit counts rows across them all.
  absl::StatusOr<std::unique_ptr<RegionScanner>> Scan(const ScanSpec& spec) const;
  // The rows of a batch grouped by the region holding them (positions into `rows`, in order).
  std::vector<std::pair<const HostedRegion*, std::vector<size_t>>> GroupByRegion(
      const std::vector<RowMutation>& rows) const;
  // Applies a batch: each region's rows in one Region::Mutate (each row atomic, as HBase's
  // batches: not the batch as a whole). The first error, naming its region.
  absl::Status Mutate(const std::vector<RowMutation>& batch, Durability durability) const;
  // basalt:meta: read-only to clients.
  bool system() const { return system_; }
  // Some of its regions could not open (the others serve).
  bool has_failed_regions() const;
  bool HasFamily(std::string_view family) const;
  // True once a split or merge replaced some of its regions: a call their closed regions refuse
  // is not served here (NotServingRegionError); it is retried on the table Find returns now.
  bool superseded() const { return superseded_.load(std::memory_order_acquire); }
  // True once the table was disabled or the server is stopping: the region is closed.
  bool closed() const { return state_.load(std::memory_order_acquire) != State::kOpen; }
  // Why the table is closed, for callers to return in place of the region's own "region is
  // closed": FailedPrecondition "table t1 is disabled", or Unavailable while the server stops.
  absl::Status ClosedError() const;
  // The regions' statistics added up (failed: the first failed region's reason, named).
  RegionStats Stats() const;
  // Flushes, or major-compacts, every region through its handle: the first error, naming its
  // region (or ClosedError once the table was closed meanwhile).
  absl::Status Flush() const;
  absl::Status MajorCompact() const;

  // Runs `hook` when the table is disabled, so that a call waiting outside the engine (a scan
  // stream blocked on a client that stopped reading) lets go of the table instead of holding
  // up Enable and Drop. Returns the id for RemoveCloseHook, or 0 (the hook is not kept) when
  // the table is already closed. Hooks run on the disabling thread under a lock that
  // RemoveCloseHook also takes: once RemoveCloseHook returns, the hook is not running.
  uint64_t AddCloseHook(std::function<void()> hook);
  void RemoveCloseHook(uint64_t id);
  // The process stops: calls are refused from now on (ClosedError: Unavailable), and with
  // `close_regions` every region closes (flushing), as its placement's Stop says
  // (region_placement.h). The first close error, naming the table.
  absl::Status Stop(bool close_regions);

 private:
  friend class Catalog;
  friend class RegionHost;
  void RunCloseHooks();
  // Closes every region; the first error, naming its region.
  absl::Status CloseRegions();
  // Runs op on every region's handle; the first error, naming its region.
  absl::Status ForEachRegion(const std::function<absl::Status(RegionHandle*)>& op) const;

  TableSpec spec_;
  std::vector<HostedRegion> regions_;
  bool system_ = false;
  enum class State { kOpen, kDisabled, kStopping };
  std::atomic<State> state_{State::kOpen};
  std::atomic<bool> superseded_{false};
  absl::Mutex hooks_mu_;
  uint64_t next_hook_ ABSL_GUARDED_BY(hooks_mu_) = 1;
  std::map<uint64_t, std::function<void()>> hooks_ ABSL_GUARDED_BY(hooks_mu_);
};

// A region that refuses every call with `error` (its statistics say `failed`): a region that
// could not open, in a table whose other regions serve (FAILED_OPEN), or, on a cluster's region
// server, the rows of a region served elsewhere (the null object keeps routing the same for
// every row).
std::shared_ptr<Region> NewRefusingRegion(RegionDescriptor desc, absl::Status error, std::string failed);
// A region of `table` that could not open (`why`): refuses every call as FAILED_OPEN.
std::shared_ptr<Region> FailedRegion(const std::string& table, RegionDescriptor desc, const absl::Status& why);
// `s` with the region named, for a table of several regions (one region: as it is).
absl::Status InRegion(const RegionInfo& info, size_t regions, const absl::Status& s);

}  // namespace basalt::server
