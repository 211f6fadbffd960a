// The catalogue a standalone server or a cluster's master keeps (a cluster's region server has
// none: region_host.h), and the tables it serves: the catalogue (catalog_file.h: which tables
// exist, their families, enabled or not), basalt:meta (meta.h: which regions each table has)
// and the open Regions of every enabled table, each in data_dir/tables/<table>/<encoded region
// name>/. Each
// table directory also holds TABLEINFO, the table's own record (a one-table catalogue), from
// which a lost CATALOG can be rebuilt (HBase's .tableinfo), and each region directory its
// REGIONINFO, from which meta rows can be rebuilt.
//
// Order of durable writes, so that a crash between any two leaves something start-up can
// finish or undo: create writes the region directories, then the regions' meta rows (one log
// record), then the catalogue, which commits it; drop removes the table from the catalogue
// (the commit), then its meta rows, then its directory. At start-up, meta rows of a table the
// catalogue does not list are removed, and a catalogued table without meta rows gets them from
// its REGIONINFO files (or, for a table made before regions, one region: the table directory).
//
// Nothing is deleted that the catalogue does not say is gone: a table directory the catalogue
// does not list is moved to data_dir/lost+found/, never removed. A table whose region cannot
// open is FAILED_OPEN (its reason kept and reported) while every other table serves; Assign
// reopens it once the operator has repaired its files.
//
// Thread-safety: every method may be called from any number of threads. Admin operations
// (Create, Disable, Enable, Drop, and the catalogue writes they make) are serialised by one
// mutex; data calls only take a short reader lock to pick up a shared_ptr<Table>, which they
// hold for the whole call, so a table disabled or dropped meanwhile stays alive (closed) until
// the call lets go of it.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/synchronization/mutex.h"
#include "src/schema/catalog_file.h"
#include "src/schema/region_info.h"
#include "src/schema/snapshot_file.h"
#include "src/regions/region_placement.h"
#include "src/regions/table.h"
#include "src/regions/table_source.h"
#include "storage/region.h"
#include "storage/server_log.h"

namespace basalt::server {

class Catalog final : public TableSource, public TableChanges {
 public:
  struct Options {
    // A queue table's regions drop consumed entries at major compaction through this (the
    // process's transaction service says which consumed marks are settled; src/server/
    // queue_eviction.h). Empty: queues keep every entry.
    std::function<std::unique_ptr<CompactionFilter>()> queue_compaction_filter;
    // Where the user tables' regions open (region_placement.h): a cluster's master places them
    // on region servers (its files on the shared storage, at the directory the catalogue keeps
    // for each). Null: in this process (LocalPlacement), a standalone server. The system
    // tables always open here. Outlives the catalogue.
    RegionPlacement* placement = nullptr;
    Env* env = nullptr;  // nullptr: Env::Default()
    std::string data_dir;
    RegionOptions region;  // shared by every table (block cache, flush size)
    // CATALOG is missing but table directories exist: rebuild it from their TABLEINFO files
    // (every table comes back enabled) instead of refusing to start.
    bool rebuild_catalog = false;
    // Where the manager reports what it did on its own (a directory moved aside, a table that
    // failed to open, a rebuilt catalogue). Empty: standard error.
    std::function<void(std::string_view)> log;
    // The server log every user table's regions share (storage/server_log.h), in data_dir/wal.
    uint64_t wal_roll_size = 64ull << 20;
    int wal_max_logs = 32;
    // Readers of that log carried over a restart (replication shippers: name -> the first
    // segment each still needs, from its kept place), the bound on what they keep, and who is
    // told when the log drops one (ServerLog::Options' holds, max_held_segments, on_hold_dropped).
    std::map<std::string, uint64_t> wal_holds;
    uint64_t wal_max_held_segments = 0;
    std::function<void(const std::string&)> on_wal_hold_dropped;
    // A cluster's master: the holds of a dead server's log (its directory), kept through its split
    // for replication's shippers (the log's segments they still need are moved to HeldLogDir,
    // where the master ships them from: src/replication/peers.h). Empty: none.
    std::function<absl::StatusOr<std::map<std::string, uint64_t>>(const std::string& dir)> dead_log_holds;
    // How often split and merged parents are looked at for removal (CleanSplitParents; HBase's
    // CatalogJanitor runs every 5 minutes), and snapshots past their TTL deleted (ExpireSnapshots).
    // 0: parents only after splits, merges and major compactions; snapshots never expire.
    int janitor_interval_ms = 10000;
    // Automatic splits (HBase's SteppingSplitPolicy): after a flush or compaction, a region
    // whose largest store passes 2 × the memstore flush size while its table has one region, or
    // region_max_size once it has more, splits at its middle.
    bool auto_split = true;
    uint64_t region_max_size = 10ull << 30;
  };

  // Creates data_dir if needed and loads the catalogue. A missing CATALOG beside table
  // directories is FailedPrecondition naming it (or, with rebuild_catalog, is rebuilt); a
  // damaged one is DataLoss. Moves table directories the catalogue does not list (a create or
  // drop cut short by a crash) to lost+found/, and opens every enabled table: one that cannot
  // open is FAILED_OPEN, the others serve.
  static absl::StatusOr<std::unique_ptr<Catalog>> Open(const Options& options);
  // Closes every table (CloseAll), ignoring errors.
  ~Catalog() override;

  // TableSource (table_source.h). Find: `region` is not looked at (every region is this
  // process's, or placed by it).
  absl::StatusOr<std::shared_ptr<Table>> Find(std::string_view name, std::string_view region = {}) const override;

  // A bound on the regions a table is made with: fewer split keys than this (each region has
  // its own background thread, for flushes and compactions).
  static constexpr size_t kMaxRegionsAtCreate = 1000;
  // Validates (ValidateTableSpec), then creates the regions the split keys make (none: one
  // region) and records the table, enabled. InvalidArgument, AlreadyExists.
  absl::Status Create(const TableSpec& spec, const std::vector<std::string>& split_keys = {}) override;
  // Records the table as disabled, then closes its region (flushing). FailedPrecondition when
  // already disabled.
  absl::Status Disable(std::string_view name) override;
  // Reopens the regions (as meta records them now, see Assign) and records the table as enabled.
  // FailedPrecondition when enabled.
  absl::Status Enable(std::string_view name) override;
  // The table must be disabled (else FailedPrecondition). Removes it from the catalogue
  // durably, then removes its directory.
  absl::Status Drop(std::string_view name) override;
  // Changes a table's families and settings (HBase's modifyTable, the shell's alter): `spec`
  // is the whole table as it must be (families added, changed or left out; its name must be
  // the table's). The catalogue is written first; then each open region is closed (flushed:
  // calls on it are refused as not served here, and clients retry) and opened again with the
  // new families, one after another, where it was. A disabled table takes them when enabled.
  // A family left out is no longer read (its files stay in the region until a major compaction
  // of the others; HBase deletes them). NotFound; InvalidArgument for a spec that is not valid
  // or changes whether the table is transactional or a queue.
  absl::Status Modify(const TableSpec& spec) override;
  absl::Status Flush(std::string_view name) override;
  // Then removes the split parents no region reads any more (CleanSplitParents).
  absl::Status MajorCompact(std::string_view name) override;
  // Opens a FAILED_OPEN table's regions again, or the FAILED_OPEN regions of an open table (its
  // other regions serve on), as basalt:meta records them now (or, without rows there, as its
  // region directories' REGIONINFO say); on failure it stays FAILED_OPEN with the new reason,
  // which is returned. FailedPrecondition when the table is wholly open or disabled.
  absl::Status Assign(std::string_view name) override;
  // Splits regions without copying data (HBase's split): `name` is a table (every region that
  // can split, or with `split_row` the region holding it) or a region (its name or encoded
  // name). Without `split_row` a region splits at its SplitPoint. The parent closes (flushing),
  // its daughters are written as references to its files, and one meta batch (the commit)
  // records the parent SPLIT and the daughters; they open in its place. Writes the closed parent
  // refuses meanwhile are retried by the server (Table::superseded). A crash before the commit
  // leaves the parent, after it the daughters. InvalidArgument for a split row that is a
  // region's start or outside the table; FailedPrecondition for a disabled table or a region
  // that cannot split yet (no data, or references to its own parent not yet compacted).
  absl::Status Split(std::string_view name, std::string_view split_row = {}) override;
  // Merges two adjacent regions of a table (each by its name or encoded name) into one, without
  // copying data (HBase's merge_region): the same transaction as a split, the other way round.
  // InvalidArgument for regions that are not adjacent or of different tables; FailedPrecondition
  // for one that still reads another's files.
  absl::Status Merge(std::string_view first, std::string_view second) override;
  // Removes the split and merged parents of `table` once no region reads their files (HBase's
  // CatalogJanitor): each one's directory, and its meta row once the server log holds none of
  // its records. Runs after splits, merges and major compactions, at start-up and on the
  // housekeeping thread.
  absl::Status CleanSplitParents(std::string_view table);

  // Namespaces (HBase's; catalog_file.h NamespaceSpec), kept in the catalogue beside the tables:
  // a table named "ns:t" may be made only while `ns` exists, and `ns` may be dropped only while
  // it holds no table. `default` always exists, holds every table named without a namespace,
  // and keeps no settings yet; `basalt` and `hbase` are reserved.
  // CreateNamespace: InvalidArgument (ValidateNewNamespace, or settings past the kept bounds),
  // AlreadyExists. ModifyNamespace replaces its kept settings: NotFound; Unimplemented for
  // default. DropNamespace: NotFound; FailedPrecondition naming the tables it holds;
  // InvalidArgument for default, basalt or hbase.
  absl::Status CreateNamespace(const NamespaceSpec& spec) override;
  absl::Status ModifyNamespace(const NamespaceSpec& spec) override;
  absl::Status DropNamespace(std::string_view name) override;
  // Every namespace, `default` among them, by name (as HBase's list_namespace).
  std::vector<NamespaceSpec> Namespaces() const;
  absl::StatusOr<std::vector<NamespaceSpec>> ListNamespaces() const override { return Namespaces(); }
  // NotFound unless `name` is default or a namespace made.
  absl::StatusOr<NamespaceSpec> DescribeNamespace(std::string_view name) const override;

  absl::StatusOr<TableSpec> Describe(std::string_view name) const override;
  std::vector<TableSpec> List() const override;
  absl::Status OpenError(std::string_view name) const override;
  std::vector<TableInfo> Stats() const override;
  // A table's regions as meta records them, with each one's statistics when it is open.
  absl::StatusOr<std::vector<RegionStatus>> Regions(std::string_view name) const override;
  // Also rewrites every meta row's info:server.
  absl::Status SetServerName(std::string_view name) override;
  std::string ServerName() const override;
  // How many regions meta records for the table (1 for basalt:meta, 0 for an unknown table).
  size_t RegionCount(std::string_view name) const override;
  size_t size() const override;
  LogStats ServerLogStats() const override { return log_ != nullptr ? log_->GetStats() : LogStats{}; }
  // The user tables' log (null for a master's catalogue): what a replication source follows.
  ServerLog* server_log() const { return log_.get(); }

  // basalt:acl's region (access_control.h writes it).
  Region* acl_region() const { return acl_ != nullptr ? acl_->regions()[0].region.get() : nullptr; }
  // basalt:quota's region (quotas.h writes it).
  Region* quota_region() const { return quota_ != nullptr ? quota_->regions()[0].region.get() : nullptr; }
  // Snapshots (docs/DESIGN.md §16): a table's block files named again under
  // data_dir/snapshots/<name>/, region by region, each region flushed first (Region::Snapshot,
  // asked of the region's server on a cluster), then the SNAPSHOT manifest written last
  // (src/schema/snapshot_file.h). No byte is copied. Every write acknowledged before the call is
  // in it. InvalidArgument for a bad name; AlreadyExists for a name taken; NotFound for no such
  // table; FailedPrecondition for a FAILED_OPEN table, or a region still reading a split parent's
  // files (major_compact first). A disabled table's closed regions are named as they are (HBase's
  // offline snapshot). A failure leaves nothing behind.
  absl::StatusOr<SnapshotInfo> Snapshot(std::string_view table, std::string_view name,
                                        const SnapshotOptions& options) override;
  // Every snapshot, by name, with the bytes only it holds (its files of no other name).
  absl::StatusOr<std::vector<SnapshotListing>> ListSnapshots() const override;
  // Deletes a snapshot: its names go, and with them every file nothing else names. NotFound.
  absl::Status DeleteSnapshot(std::string_view name) override;
  absl::StatusOr<SnapshotInfo> ReadSnapshot(std::string_view name) const override;
  // A new table `table` holding exactly the snapshot's rows (HBase's clone_snapshot): its regions
  // the snapshot's, each a new region whose files are the snapshot's named again (no byte copied;
  // its compactions rewrite them into its own). NotFound; AlreadyExists for a table of that name.
  absl::Status CloneSnapshot(std::string_view snapshot, std::string_view table) override;
  // The snapshot's table back as the snapshot holds it (HBase's restore_snapshot): the table must
  // be disabled (FailedPrecondition), and stays so; its regions and descriptor become the
  // snapshot's, in one meta batch (the commit), and its old regions' files go. A table dropped
  // since is cloned under its own name, enabled.
  absl::Status RestoreSnapshot(std::string_view snapshot) override;
  // Deletes the snapshots older than their TTL at `now` (HBase's SnapshotCleanerChore); the
  // housekeeping thread runs it with the janitor. How many it deleted.
  absl::StatusOr<int> ExpireSnapshots(absl::Time now);
  // As the housekeeping thread (and each snapshot taken or deleted) last counted them.
  SnapshotTotals Snapshots() const override;
  // Counts the snapshots' files and bytes again (ListSnapshots).
  void CountSnapshots();

  // A region of the catalogue as it is now, for a transition (Transitions::Region).
  struct RegionNow {
    TableSpec spec;
    RegionInfo info;
    absl::Status open_error;       // its table is FAILED_OPEN as a whole, and why; else OK
    std::shared_ptr<Table> table;  // the open table holding it; null when disabled or FAILED_OPEN
    // Where it is in `table` (null when the table is not open).
    const HostedRegion* hosted() const;
    // OK when its table is open; else FailedPrecondition saying it is FAILED_OPEN or disabled.
    absl::Status TableOpen() const;
  };
  // What a transition of regions between the catalogue's admin operations may do: a cluster's
  // moves, unassign and assign of a region and recovery of a dead server (the master's,
  // src/master/assignment_manager.h). Valid while Transition's function runs.
  class Transitions {
   public:
    // The region with this name or encoded name. NotFound.
    absl::StatusOr<RegionNow> Region(std::string_view name) const;
    // Every open table.
    std::vector<std::shared_ptr<Table>> OpenTables() const;
    // Splits a log of regions this catalogue knows (a dead server's) into their recovered.edits
    // (ServerLog::SplitDeadServerLog), then removes it.
    absl::Status SplitLog(const std::string& dir);
    // Opens `regions` of the open table `table` again through the placement (closed, or on a
    // dead server), on `destination` first when given; installs the table and records in meta
    // where they serve. How many of them opened (the others are FAILED_OPEN). `what` names the
    // operation's fault point "<what>:opened", between the open and meta's record.
    size_t Reopen(const std::string& table, const std::vector<RegionInfo>& regions, std::string_view destination,
                  std::string_view what);
    // Why region `info` of `table` is not open after a Reopen that did not open it.
    absl::Status WhyNotOpen(const std::string& table, const RegionInfo& info) const;
    // Records `info` CLOSED, served nowhere, in meta.
    absl::Status RecordClosed(const RegionInfo& info);
    // Installs the open table `table` again with the regions it has, so that one the placement
    // now holds closed refuses calls as not served. The install's error.
    absl::Status Reinstall(const std::string& table);
    void Log(std::string_view line) const;

   private:
    friend class Catalog;
    explicit Transitions(Catalog* catalog) : catalog_(catalog) {}
    Catalog* const catalog_;
  };
  // Runs `run` with the catalogue's admin operations (creates, drops, alters, splits, merges,
  // other transitions) held off for its whole run.
  absl::Status Transition(const std::function<absl::Status(Transitions&)>& run);

  // Closes every open region (each flushes; a master's regions stay open on their servers).
  // Later calls get Unavailable. Returns the first error.
  absl::Status CloseAll() override;

 private:
  explicit Catalog(const Options& options);
  struct Entry {
    TableSpec spec;
    std::vector<RegionInfo> regions;  // as meta records them, by start key
    std::shared_ptr<Table> table;  // null when disabled or FAILED_OPEN
    std::weak_ptr<Table> closing;  // the table last disabled, while calls still hold it
    // Tables a split or merge replaced, while calls begun on them (a scan) still hold them: a
    // disable closes them too, and waits for them as for `closing`.
    std::vector<std::weak_ptr<Table>> superseded;
    absl::Status open_error;       // enabled but FAILED_OPEN: why
    std::vector<RegionInfo> retired;  // split and merged parents meta still records
    // The parents' regions while a call begun before the split or merge (a scan) still holds
    // them: their files stay until every one has expired.
    std::vector<std::weak_ptr<Region>> retired_open;
  };
  // The meta state of region `r` of `e` (CLOSED for a disabled table or a region the placement
  // holds closed, FAILED_OPEN, OPEN).
  const char* MetaStateOf(const Entry& e, const RegionInfo& r) const;
  std::string TableDir(std::string_view name) const;
  // A server log's options for `dir`, with every region and table entries_ knows (for a split).
  ServerLog::Options LogOptions(std::string dir) const;
  // Opens the server log (data_dir/wal), splitting what a previous run left there by the
  // regions entries_ knows.
  absl::Status OpenServerLog();
  // Splits a dead region server's log by the regions entries_ knows (the caller holds admin_mu_).
  absl::Status SplitDeadServerLogLocked(const std::string& dir);
  void Log(std::string_view line) const;
  // The catalogue when CATALOG is missing: empty for a new data directory, rebuilt from the
  // table directories' TABLEINFO files with rebuild_catalog, else FailedPrecondition.
  // The namespaces of the tables it finds come back with no settings (*namespaces).
  absl::StatusOr<std::vector<TableSpec>> CatalogWhenMissing(const std::vector<std::string>& dirs,
                                                            std::vector<NamespaceSpec>* namespaces);
  // Moves data_dir/tables/<from> to data_dir/lost+found/<as>.<ms> (durably) and logs why.
  absl::Status MoveAside(std::string_view from, std::string_view as, std::string_view why);
  // At start-up, a table directory the catalogue does not list: removed when it is a clone a
  // crash cut short (kCloningMarker), else moved aside.
  absl::Status SetAsideUnlistedTable(std::string_view name);
  // Moves data_dir/tables/<name> to data_dir/lost+found/ (durably) and logs why.
  absl::Status MoveTableAside(std::string_view name, std::string_view why);
  // Creates table `spec` with `regions` (the caller holds admin_mu_): AlreadyExists, or its
  // directory made (a leftover of the name moved aside), `fill` run to write the regions'
  // directories (a clone's files; null: empty regions), the regions opened, and the meta rows
  // and the catalogue written, the commit. A failure removes what it made.
  absl::Status CreateLocked(const TableSpec& spec, const std::vector<RegionInfo>& regions,
                            const std::function<absl::Status()>& fill);
  // Removes a directory holding files and empty directories (a region's that no one needs:
  // references and REGIONINFO of an uncommitted split, a split parent's files, a table's regions
  // a restore replaced). Anything else (a non-empty subdirectory, such as a lost+found/ with
  // something kept in it) fails the removal, which the caller reports.
  static absl::Status RemoveRegionDir(Env* env, const std::string& dir);
  // Writes data_dir/tables/<name>/TABLEINFO durably.
  absl::Status WriteTableInfo(const TableSpec& spec);
  std::string RegionDir(const RegionInfo& info) const;
  // Opens every region of a table (FailedPrecondition unless they cover every row once), writing
  // a region's REGIONINFO when it has none. A region that cannot open is FAILED_OPEN alone while
  // the others serve; when none opens, the table is (the error is returned, and what opened is
  // closed). Regions open in `reuse` are shared, not opened again.
  // A master places the regions it opens on `destination` first, when one is given.
  absl::StatusOr<std::shared_ptr<Table>> OpenTable(const TableSpec& spec, const std::vector<RegionInfo>& regions,
                                                   const Table* reuse = nullptr,
                                                   const std::vector<RegionInfo>* reopen = nullptr,
                                                   std::string_view destination = {});
  // Opens `again` (regions of the open table `e`, closed or on a dead server) anew
  // through the placement (on `destination` first, when given), installs the table and records
  // where they serve in meta. How many of them opened. The caller holds admin_mu_. `what`
  // names the operation's fault point "<what>:opened", between the open and meta's record.
  size_t ReopenLocked(const Entry& e, const std::vector<RegionInfo>& again, std::string_view destination,
                      std::string_view what);
  // The region with this name or encoded name, and its table's entry (a copy; the caller holds
  // admin_mu_). NotFound.
  absl::StatusOr<std::pair<Entry, RegionInfo>> RegionNamedLocked(std::string_view name) const;
  // Splits one region of an open table at `split_row` (empty: its split point); the caller
  // holds admin_mu_.
  absl::Status SplitRegionLocked(const TableSpec& spec, const RegionInfo& parent, std::string_view split_row);
  // The open region `info` of `t`, which must hold no references (FailedPrecondition saying it
  // cannot `what` yet).
  absl::StatusOr<RegionHandle*> OpenRegionOf(const Table& t, const RegionInfo& info, std::string_view what);
  // The transaction of a split or a merge (`what`): the parents close, the children are written
  // as references to their files, `commit` (one meta batch) records it, and the children open
  // in the parents' place (region_split.cc has the steps). The caller holds admin_mu_.
  absl::Status ReplaceRegionsLocked(const TableSpec& spec, const std::vector<RegionInfo>& parents,
                                    const std::vector<RegionInfo>& children, const std::vector<RowMutation>& commit,
                                    std::string_view what);
  // The table a split or merge leaves in service, or, when it could not open, why not (the
  // caller holds mu_).
  static void Install(Entry* e, absl::StatusOr<std::shared_ptr<Table>> t);
  // Where a split writes its daughters before its commit: data_dir/tables/<table>/.splits/.
  std::string SplitsDir(std::string_view table) const;
  // At start-up, before the table's regions open: daughters a crash left in the staging
  // directory after the commit move into place; what an uncommitted split left is removed.
  // `committed_now`: a split finishing its own steps (nothing to report), not a restart's.
  absl::Status FinishSplits(std::string_view table, const std::vector<RegionInfo>& regions, bool committed_now = false);
  absl::Status CleanSplitParentsLocked(std::string_view table);
  // The region of a split parent's table that now holds `row` (the server log's route).
  std::string RouteRecord(std::string_view region, std::string_view row) const;
  // Writes meta rows: one batch, one log record.
  absl::Status WriteMeta(const std::vector<RowMutation>& rows);
  // The table's regions as meta's rows say now or, without rows there, as RegionsWithoutMeta
  // finds them (then recorded in meta): what Enable and Assign open.
  absl::StatusOr<std::vector<RegionInfo>> CurrentRegions(const TableSpec& spec);
  // The table's regions as meta's rows say now (none: empty).
  absl::StatusOr<std::vector<RegionInfo>> MetaRegionsOf(std::string_view table);
  // Records the regions with `state`, each with the server `table` holds it on (else this one's).
  absl::Status RecordRegions(const std::vector<RegionInfo>& regions, std::string_view state,
                             const Table* table = nullptr);
  // Where `table` serves region `r` (HostedRegion::server), or this server's name.
  std::string ServerOf(const Table* table, const RegionInfo& r) const;
  // The server a split's or merge's commit records its children on: where the placement says
  // new regions serve, or none when that is known only once they open (then they are recorded
  // where they opened).
  std::string CommitServer() const;
  // The regions of a catalogued table meta has no rows for: from the REGIONINFO files of its
  // region directories, or one region over the table directory (a table from before regions),
  // or, with no directory at all, one new region.
  absl::StatusOr<std::vector<RegionInfo>> RegionsWithoutMeta(const TableSpec& spec);
  // Region directories of the table that meta does not name go to lost+found/.
  absl::Status MoveUnknownRegionsAside(std::string_view table, const std::vector<RegionInfo>& regions);
  // A clone or restore a crash cut short (docs/DESIGN.md §16), at start-up. A table directory
  // holding kCloningMarker is a clone the catalogue never listed: removed, with its names of
  // the snapshot's files. A table holding kRestoringMarker was being restored: the old regions
  // it lists are removed when meta names `regions` in their place (the restore committed).
  static constexpr char kCloningMarker[] = "CLONING";
  static constexpr char kRestoringMarker[] = "RESTORING";
  absl::Status FinishRestore(std::string_view table, const std::vector<RegionInfo>& regions);
  // Removes a region directory a restore replaced, moving it aside instead when its lost+found
  // holds something.
  absl::Status RemoveReplacedRegion(std::string_view table, std::string_view encoded);
  // A region id above every one handed out so far (the clock in ms, as HBase's).
  uint64_t NewRegionId();
  // The catalogue as entries_ says; the caller holds admin_mu_.
  std::vector<TableSpec> CatalogLocked() const;
  // Writes CATALOG: `tables`, and the namespaces namespaces_ lists (or `namespaces` when given).
  absl::Status SaveLocked(const std::vector<TableSpec>& tables,
                          const std::vector<NamespaceSpec>* namespaces = nullptr);
  // NotFound unless the namespace `table` is named in exists (the caller holds admin_mu_).
  absl::Status CheckNamespaceOf(std::string_view table) const;
  // OK when table `table`'s namespace has room, under its quotas (kNamespaceMaxTables,
  // kNamespaceMaxRegions), for `new_tables` more tables and `new_regions` more regions;
  // FailedPrecondition naming the quota else (the caller holds admin_mu_).
  absl::Status CheckNamespaceRoom(std::string_view table, size_t new_tables, size_t new_regions) const;
  // At start-up: the namespaces the catalogue lists; DataLoss for a table whose namespace it
  // does not list.
  absl::Status KeepNamespaces(std::vector<NamespaceSpec> namespaces, const std::vector<TableSpec>& tables);
  // Waits (bounded) until calls that still hold a disabled table have let go of it.
  absl::Status WaitForClosing(const Entry& e) const;
  // A copy of a disabled table's entry (the caller holds admin_mu_, under which entries_
  // changes): NotFound, or FailedPrecondition with `if_enabled` when the table is enabled.
  absl::StatusOr<Entry> DisabledEntry(std::string_view name, std::string_view if_enabled) const;

  // Every region of every table (known to meta) with its directory, for the server log's split.
  std::map<std::string, std::string> RegionDirsLocked() const;
  std::set<std::string> TableNamesLocked() const;
  // data_dir/snapshots and one snapshot's directory in it.
  std::string SnapshotsDir() const;
  std::string SnapshotDir(std::string_view name) const;
  // At start-up: a snapshot directory without its SNAPSHOT (a crash cut it short) is removed.
  absl::Status RemoveUnfinishedSnapshots();
  // Every finished snapshot's manifest, by name (the caller holds snapshots_mu_).
  absl::StatusOr<std::vector<SnapshotInfo>> ReadSnapshotsLocked() const ABSL_SHARED_LOCKS_REQUIRED(snapshots_mu_);
  absl::Status DeleteSnapshotLocked(std::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(snapshots_mu_);
  // One snapshot's manifest, its regions in row order: NotFound, DataLoss.
  absl::StatusOr<SnapshotInfo> ReadSnapshotLocked(std::string_view name) const ABSL_SHARED_LOCKS_REQUIRED(snapshots_mu_);
  // New regions of `table` with the snapshot's boundaries, in the same order.
  absl::StatusOr<std::vector<RegionInfo>> SnapshotRegionsAs(const SnapshotInfo& info, std::string_view table);
  // Each snapshot region named again as `regions`' (same order) under `under`, with REGIONINFO.
  absl::Status LinkSnapshotRegions(const SnapshotInfo& info, const std::vector<RegionInfo>& regions,
                                   const std::string& under) ABSL_SHARED_LOCKS_REQUIRED(snapshots_mu_);
  // CloneSnapshot with the snapshot read (the caller holds admin_mu_ and snapshots_mu_).
  absl::Status CloneLocked(const SnapshotInfo& info, std::string_view table) ABSL_SHARED_LOCKS_REQUIRED(snapshots_mu_);
  // The previous run's server log, split again if start-up could not (the operator repaired
  // what stopped it since), with `regions` of `spec` among the known: what Enable and Assign
  // do before opening them.
  void RetryLogSplit(const TableSpec& spec, const std::vector<RegionInfo>& regions);

  Options options_;
  LocalPlacement local_placement_{&options_.region};
  RegionPlacement* const placement_;  // options_.placement, or local_placement_
  // Declared before every region's holder: regions close before the log they write to goes.
  std::unique_ptr<ServerLog> log_;
  std::shared_ptr<Table> meta_;  // basalt:meta, open for the manager's life
  std::shared_ptr<Table> acl_;   // basalt:acl, likewise
  std::shared_ptr<Table> quota_;  // basalt:quota, likewise
  // A system table by name; null for any other name.
  std::shared_ptr<Table> SystemTable(std::string_view name) const;
  std::atomic<uint64_t> last_region_id_{0};
  absl::Mutex admin_mu_;  // serialises admin operations and catalogue writes
  // Held while a snapshot's directory is made or removed, or all are read (after admin_mu_).
  mutable absl::Mutex snapshots_mu_;
  mutable absl::Mutex totals_mu_;
  SnapshotTotals snapshot_totals_ ABSL_GUARDED_BY(totals_mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_ ABSL_GUARDED_BY(mu_);
  // The namespaces made, by name (changed under admin_mu_ too, after CATALOG says so).
  std::map<std::string, NamespaceSpec, std::less<>> namespaces_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // CloseAll ran: no table is served
  // The housekeeping thread: automatic splits of the regions whose files changed, and the
  // janitor every janitor_interval_ms. Stopped by CloseAll.
  void HousekeepingLoop();
  // Splits the region (by its log name) if the split policy says so.
  void MaybeSplit(const std::string& region);
  absl::Mutex housekeeping_mu_;
  bool housekeeping_stop_ ABSL_GUARDED_BY(housekeeping_mu_) = false;
  std::set<std::string> split_checks_ ABSL_GUARDED_BY(housekeeping_mu_);  // regions whose files changed
  std::thread housekeeping_;
  std::string server_name_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt::server
