// The regions a cluster's region server serves (HBase's HRegionServer's online regions; Kudu's
// TSTabletManager): it keeps no catalogue and no meta. The active master opens and closes
// regions here (OpenRegion, CloseRegion, through RegionServerAdmin); each table's Table holds the
// regions open here, sorted, with placeholders over the rows of the others, which refuse every
// call as not served here (UNAVAILABLE), so routing by row stays as it is. Every region writes to
// this run's own server log (Options::log_dir, data_dir/wals/<node>), which the master splits
// by region once the server is gone (docs/DESIGN.md §6).
//
// A region whose largest store passes the split size is not split here: the master is asked
// (Options::request_split), and splits it over the shared storage.
//
// Thread-safety: every method may be called from any number of threads. Opens and closes are
// serialised by one mutex; data calls take a short reader lock to pick up a shared_ptr<Table>.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/regions/table_source.h"
#include "storage/region.h"
#include "storage/server_log.h"

namespace basalt {
class Env;           // common/env.h
class SessionLease;  // common/zookeeper.h
}  // namespace basalt

namespace basalt::server {

class RegionHost final : public TableSource {
 public:
  struct Options {
    Env* env = nullptr;  // nullptr: Env::Default()
    std::string data_dir;  // the cluster's shared data directory (its tables/ hold the regions)
    RegionOptions region;  // shared by every region (block cache, flush size)
    // A queue table's regions drop consumed entries at major compaction through this. Empty:
    // queues keep every entry.
    std::function<std::unique_ptr<CompactionFilter>()> queue_compaction_filter;
    // This run's server log's directory (required).
    std::string log_dir;
    uint64_t wal_roll_size = 64ull << 20;
    int wal_max_logs = 32;
    // Replication's readers of the log (ServerLog::Hold) keep at most this many segments beyond
    // the regions' need; past it the log drops the oldest hold and names it here.
    uint64_t wal_max_held_segments = 0;
    std::function<void(const std::string&)> on_wal_hold_dropped;
    // Asks the master to split a region (by its encoded name) whose largest store passed the
    // split size (HBase's SteppingSplitPolicy, as Catalog::Options::auto_split says).
    // Empty, or auto_split off: no split is asked.
    bool auto_split = true;
    uint64_t region_max_size = 10ull << 30;
    std::function<absl::Status(const std::string& encoded_name)> request_split;
    // Stops the server at once (HBase's abort), when a region's close could not flush: its
    // unflushed edits are then only in this server's log, and must reach the region wherever it
    // opens next, which only the master's split of this server's log does (the server must be
    // gone for that). Empty: only logged.
    std::function<void(const absl::Status& why)> abort;
    // This run's start code (its node name's, HBase's ServerName start code). The master's
    // calls name the run they are for, and a later run at the same address refuses them
    // (RegionServerAdmin).
    int64_t start_code = 0;
    // Its ZooKeeper session's lease; no region is served while it is not held. Null: always.
    const SessionLease* lease = nullptr;
    // Where it reports what it did (a region opened or closed, a split asked). Empty: the log.
    std::function<void(std::string_view)> log;
  };

  // Creates data_dir/tables if needed and opens this run's server log.
  static absl::StatusOr<std::unique_ptr<RegionHost>> Open(const Options& options);
  // Closes every region (CloseAll), ignoring errors.
  ~RegionHost() override;

  // TableSource. Find: a table with no region here is refused as not served here (UNAVAILABLE,
  // or NotServingRegionError for the `region` a call named), and, while the ZooKeeper session's
  // lease is not held, every table (a master may be reopening this server's regions elsewhere).
  absl::StatusOr<std::shared_ptr<Table>> Find(std::string_view name, std::string_view region = {}) const override;
  absl::StatusOr<TableSpec> Describe(std::string_view name) const override;
  std::vector<TableSpec> List() const override;
  absl::Status OpenError(std::string_view) const override { return absl::OkStatus(); }
  std::vector<TableInfo> Stats() const override;
  absl::StatusOr<std::vector<RegionStatus>> Regions(std::string_view name) const override;
  size_t RegionCount(std::string_view name) const override;
  size_t size() const override;
  absl::Status Flush(std::string_view name) override;
  absl::Status MajorCompact(std::string_view name) override;
  std::string ServerName() const override;
  absl::Status SetServerName(std::string_view name) override;
  LogStats ServerLogStats() const override { return log_ != nullptr ? log_->GetStats() : LogStats{}; }
  absl::Status CloseAll() override;

  int64_t start_code() const { return options_.start_code; }
  // This run's log, for its replication shippers (src/replication/log_shipper.h).
  ServerLog* server_log() const { return log_.get(); }
  // Opens region `info` of `spec` here (replaying what a log split left in its recovered.edits/)
  // and serves it. AlreadyExists when it is open here; FailedPrecondition when it overlaps one
  // open here; the open's error otherwise (nothing is served then).
  absl::Status OpenRegion(const TableSpec& spec, const RegionInfo& info);
  // Stops serving the region (calls on it are refused as not served here, and the client
  // locates it again) and closes it, flushing. NotFound when it is not open here. A close whose
  // flush failed still closes: what was not flushed stays in this server's log (and `abort`).
  absl::Status CloseRegion(std::string_view encoded_name);
  // The open region with this encoded name (NotFound).
  absl::StatusOr<std::shared_ptr<Region>> HostedRegionNamed(std::string_view encoded_name) const;
  // Every region open here, with its table.
  std::vector<std::pair<TableSpec, RegionInfo>> HostedRegions() const;

 private:
  explicit RegionHost(const Options& options);
  struct Hosted {
    TableSpec spec;
    std::vector<RegionInfo> regions;  // open here, by start key
    std::shared_ptr<Table> table;     // the open regions and placeholders
  };
  void Log(std::string_view line) const;
  // The Table of `spec`'s `open` regions (sorted), with placeholders over the rows of the others.
  static std::shared_ptr<Table> HostTable(const TableSpec& spec, std::vector<HostedRegion> open);
  // Serves the `open` regions of `spec` from now on (none: the table is no longer here); the
  // caller holds admin_mu_.
  void Install(const TableSpec& spec, std::vector<HostedRegion> open);
  // The table holding the open region with this encoded name (NotFound).
  absl::StatusOr<std::shared_ptr<Table>> TableHolding(std::string_view encoded_name) const;
  // The split thread: asks the master to split the regions whose files changed, when they
  // passed the split size. Stopped by CloseAll.
  void SplitCheckLoop();
  void MaybeAskSplit(const std::string& region);

  Options options_;
  // Declared before the tables: regions close before the log they write to goes.
  std::unique_ptr<ServerLog> log_;
  absl::Mutex admin_mu_;  // serialises OpenRegion and CloseRegion
  mutable absl::Mutex mu_;
  std::map<std::string, Hosted, std::less<>> hosted_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // CloseAll ran: nothing is served
  std::string server_name_ ABSL_GUARDED_BY(mu_);
  absl::Mutex checks_mu_;
  bool checks_stop_ ABSL_GUARDED_BY(checks_mu_) = false;
  std::set<std::string> split_checks_ ABSL_GUARDED_BY(checks_mu_);  // regions whose files changed
  std::thread split_checker_;
};

}  // namespace basalt::server
