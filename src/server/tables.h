// The tables a standalone server hosts: the catalogue (catalog.h) plus one open Region per
// enabled table, each covering all rows, in data_dir/tables/<name>/. Each table directory also
// holds TABLEINFO, the table's own record (a one-table catalogue), from which a lost CATALOG
// can be rebuilt (HBase's .tableinfo).
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
#include <set>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/server/catalog.h"
#include "storage/region.h"

namespace basalt::server {

// One enabled table and its region.
class Table {
 public:
  Table(TableSpec spec, std::unique_ptr<Region> region);
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  const std::string& name() const { return spec_.name; }
  const TableSpec& spec() const { return spec_; }
  Region* region() const { return region_.get(); }
  bool HasFamily(std::string_view family) const;
  // True once the table was disabled or the server is stopping: the region is closed.
  bool closed() const { return state_.load(std::memory_order_acquire) != State::kOpen; }
  // Why the table is closed, for callers to return in place of the region's own "region is
  // closed": FailedPrecondition "table t1 is disabled", or Unavailable while the server stops.
  absl::Status ClosedError() const;

  // Runs `hook` when the table is disabled, so that a call waiting outside the engine (a scan
  // stream blocked on a client that stopped reading) lets go of the table instead of holding
  // up Enable and Drop. Returns the id for RemoveCloseHook, or 0 (the hook is not kept) when
  // the table is already closed. Hooks run on the disabling thread under a lock that
  // RemoveCloseHook also takes: once RemoveCloseHook returns, the hook is not running.
  uint64_t AddCloseHook(std::function<void()> hook);
  void RemoveCloseHook(uint64_t id);

 private:
  friend class TableManager;
  void RunCloseHooks();

  TableSpec spec_;
  std::unique_ptr<Region> region_;
  enum class State { kOpen, kDisabled, kStopping };
  std::atomic<State> state_{State::kOpen};
  absl::Mutex hooks_mu_;
  uint64_t next_hook_ ABSL_GUARDED_BY(hooks_mu_) = 1;
  std::map<uint64_t, std::function<void()>> hooks_ ABSL_GUARDED_BY(hooks_mu_);
};

class TableManager {
 public:
  struct Options {
    Env* env = nullptr;  // nullptr: Env::Default()
    std::string data_dir;
    RegionOptions region;  // shared by every table (block cache, flush size)
    // CATALOG is missing but table directories exist: rebuild it from their TABLEINFO files
    // (every table comes back enabled) instead of refusing to start.
    bool rebuild_catalog = false;
    // Where the manager reports what it did on its own (a directory moved aside, a table that
    // failed to open, a rebuilt catalogue). Empty: standard error.
    std::function<void(std::string_view)> log;
  };

  // Creates data_dir if needed and loads the catalogue. A missing CATALOG beside table
  // directories is FailedPrecondition naming it (or, with rebuild_catalog, is rebuilt); a
  // damaged one is DataLoss. Moves table directories the catalogue does not list (a create or
  // drop cut short by a crash) to lost+found/, and opens every enabled table: one that cannot
  // open is FAILED_OPEN, the others serve.
  static absl::StatusOr<std::unique_ptr<TableManager>> Open(const Options& options);
  // Closes every table (CloseAll), ignoring errors.
  ~TableManager();

  // The open table. NotFound "table 'x' does not exist"; FailedPrecondition when disabled or
  // FAILED_OPEN (with the reason).
  absl::StatusOr<std::shared_ptr<Table>> Find(std::string_view name) const;

  // Validates (ValidateTableSpec), then creates the region and records the table, enabled.
  // InvalidArgument, AlreadyExists.
  absl::Status Create(const TableSpec& spec);
  // Records the table as disabled, then closes its region (flushing). FailedPrecondition when
  // already disabled.
  absl::Status Disable(std::string_view name);
  // Reopens the region and records the table as enabled. FailedPrecondition when enabled.
  absl::Status Enable(std::string_view name);
  // The table must be disabled (else FailedPrecondition). Removes it from the catalogue
  // durably, then removes its directory.
  absl::Status Drop(std::string_view name);
  absl::Status Flush(std::string_view name);
  absl::Status MajorCompact(std::string_view name);
  // Opens a FAILED_OPEN table's region again; on failure it stays FAILED_OPEN with the new
  // reason, which is returned. FailedPrecondition when the table is open or disabled.
  absl::Status Assign(std::string_view name);

  absl::StatusOr<TableSpec> Describe(std::string_view name) const;
  std::vector<TableSpec> List() const;  // by name
  // Why an enabled table is FAILED_OPEN (ok: it is not).
  absl::Status OpenError(std::string_view name) const;

  struct TableInfo {
    TableSpec spec;
    absl::Status open_error;  // not ok: FAILED_OPEN, and why
    RegionStats stats;        // zero when disabled or FAILED_OPEN
  };
  std::vector<TableInfo> Stats() const;
  size_t size() const;

  // Closes every open region (each flushes). Later calls get Unavailable.
  // Returns the first error.
  absl::Status CloseAll();

 private:
  explicit TableManager(const Options& options);
  struct Entry {
    TableSpec spec;
    std::shared_ptr<Table> table;  // null when disabled or FAILED_OPEN
    std::weak_ptr<Table> closing;  // the table last disabled, while calls still hold it
    absl::Status open_error;       // enabled but FAILED_OPEN: why
  };
  std::string TableDir(std::string_view name) const;
  void Log(std::string_view line) const;
  // The catalogue when CATALOG is missing: empty for a new data directory, rebuilt from the
  // table directories' TABLEINFO files with rebuild_catalog, else FailedPrecondition.
  absl::StatusOr<std::vector<TableSpec>> CatalogWhenMissing(const std::vector<std::string>& dirs);
  // Moves data_dir/tables/<name> to data_dir/lost+found/ (durably) and logs why.
  absl::Status MoveTableAside(std::string_view name, std::string_view why);
  // Writes data_dir/tables/<name>/TABLEINFO durably.
  absl::Status WriteTableInfo(const TableSpec& spec);
  absl::StatusOr<std::shared_ptr<Table>> OpenTable(const TableSpec& spec);
  // The catalogue as entries_ says; the caller holds admin_mu_.
  std::vector<TableSpec> CatalogLocked() const;
  absl::Status SaveLocked(const std::vector<TableSpec>& tables);
  // Waits (bounded) until calls that still hold a disabled table have let go of it.
  absl::Status WaitForClosing(const Entry& e) const;
  // A copy of a disabled table's entry (the caller holds admin_mu_, under which entries_
  // changes): NotFound, or FailedPrecondition with `if_enabled` when the table is enabled.
  absl::StatusOr<Entry> DisabledEntry(std::string_view name, std::string_view if_enabled) const;

  Options options_;
  absl::Mutex admin_mu_;  // serialises admin operations and catalogue writes
  mutable absl::Mutex mu_;
  std::map<std::string, Entry, std::less<>> entries_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // CloseAll ran: no table is served
};

}  // namespace basalt::server
