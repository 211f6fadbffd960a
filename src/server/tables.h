// The tables a standalone server hosts: the catalogue (catalog.h) plus one open Region per
// enabled table, each covering all rows, in data_dir/tables/<name>/.
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
  };

  // Creates data_dir if needed, loads the catalogue, removes table directories the catalogue
  // does not list (a create or drop cut short by a crash), and opens every enabled table.
  static absl::StatusOr<std::unique_ptr<TableManager>> Open(const Options& options);
  // Closes every table (CloseAll), ignoring errors.
  ~TableManager();

  // The open table. NotFound "table 'x' does not exist"; FailedPrecondition when disabled.
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

  absl::StatusOr<TableSpec> Describe(std::string_view name) const;
  std::vector<TableSpec> List() const;  // by name

  struct TableInfo {
    TableSpec spec;
    RegionStats stats;  // zero when disabled
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
    std::shared_ptr<Table> table;  // null when disabled
    std::weak_ptr<Table> closing;  // the table last disabled, while calls still hold it
  };
  std::string TableDir(std::string_view name) const;
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
