// The tables a process serves, as its services see them (TableSource: DataService, AdminService,
// the metrics): a standalone server's or a master's catalogue (Catalog, catalog.h), or a cluster's
// region server's hosted regions (RegionHost, region_host.h); and the changes a catalogue makes to
// them (TableChanges, at the end). Each process has one, made where the process is assembled
// (src/server/server_tables.h, src/master/master.cc); the services ask it, never which kind of
// process they are in.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/schema/catalog_file.h"
#include "src/schema/region_info.h"
#include "src/schema/snapshot_file.h"
#include "src/regions/table.h"
#include "storage/region.h"
#include "storage/server_log.h"

namespace basalt::server {

// A table with its figures (Stats).
struct TableInfo {
  TableSpec spec;
  absl::Status open_error;  // not ok: FAILED_OPEN, and why
  RegionStats stats;        // zero when disabled or FAILED_OPEN
  size_t regions = 0;       // as meta records them (a region server: the ones open here)
};

// A region of a table as meta records it (a region server: one open here), with its figures
// when it is open.
struct RegionStatus {
  RegionInfo info;
  std::string state;  // OPEN, CLOSED, FAILED_OPEN
  RegionStats stats;
  std::string server = {};  // where it serves (host:port)
};

// The snapshots a catalogue keeps, in sum (as its housekeeping last counted them).
struct SnapshotTotals {
  uint64_t snapshots = 0;
  uint64_t bytes = 0;       // of their files
  uint64_t only_bytes = 0;  // of their files no table names: what the snapshots alone keep on disk
};

class TableSource {
 public:
  virtual ~TableSource() = default;

  // The open table a call on `name` reaches. `region`: the encoded name the call named, if any
  // (a region server refuses a table with no region here as not serving it). NotFound "table
  // 'x' does not exist"; FailedPrecondition when disabled or FAILED_OPEN (with the reason);
  // Unavailable while the process stops. The system tables are found too (Table::system()).
  virtual absl::StatusOr<std::shared_ptr<Table>> Find(std::string_view name, std::string_view region = {}) const = 0;
  virtual absl::StatusOr<TableSpec> Describe(std::string_view name) const = 0;
  virtual std::vector<TableSpec> List() const = 0;  // by name
  // Why an enabled table is FAILED_OPEN (ok: it is not).
  virtual absl::Status OpenError(std::string_view name) const = 0;
  virtual std::vector<TableInfo> Stats() const = 0;
  virtual absl::StatusOr<std::vector<RegionStatus>> Regions(std::string_view name) const = 0;
  // How many regions the table has (1 for a system table, 0 for an unknown table).
  virtual size_t RegionCount(std::string_view name) const = 0;
  virtual size_t size() const = 0;  // tables
  // Flushes or major-compacts every region of the table open here.
  virtual absl::Status Flush(std::string_view name) = 0;
  virtual absl::Status MajorCompact(std::string_view name) = 0;
  // host:port of this process, as meta records it (info:server).
  virtual std::string ServerName() const = 0;
  virtual absl::Status SetServerName(std::string_view name) = 0;
  // What the process's server log did (records, bytes, syncs); zero before it opens.
  virtual LogStats ServerLogStats() const = 0;
  // Closes what this process serves (each region flushes, where it is this process's to
  // close). Later calls get Unavailable. Returns the first error.
  virtual absl::Status CloseAll() = 0;
  // The snapshots this process keeps (a catalogue's; none where there is none).
  virtual SnapshotTotals Snapshots() const { return {}; }
};

// What a snapshot is taken with.
struct SnapshotOptions {
  int64_t ttl_s = 0;  // deleted once this old (s); 0: kept until deleted
  std::string owner;  // the user taking it (the server's word for who called); empty: none
  std::vector<SnapshotGrant> grants;  // the table's grants then (the server's), for RESTORE_ACL
};
// A snapshot as listed: what it is, and what its files hold.
struct SnapshotListing {
  SnapshotInfo info;
  uint64_t bytes = 0;       // of its files
  uint64_t only_bytes = 0;  // of its files no table or other snapshot names
};

// The changes a catalogue makes to its tables (Catalog, src/catalog/catalog.h): what the Admin
// service asks of a process that keeps one (a standalone server, a cluster's master). A
// cluster's region server keeps none (src/services/admin_parts.h refuses them as the master's).
class TableChanges {
 public:
  virtual ~TableChanges() = default;
  virtual absl::Status Create(const TableSpec& spec, const std::vector<std::string>& split_keys) = 0;
  virtual absl::Status Disable(std::string_view name) = 0;
  virtual absl::Status Enable(std::string_view name) = 0;
  virtual absl::Status Modify(const TableSpec& spec) = 0;
  virtual absl::Status Drop(std::string_view name) = 0;
  virtual absl::Status Assign(std::string_view name) = 0;
  virtual absl::Status Split(std::string_view name, std::string_view split_row) = 0;
  virtual absl::Status Merge(std::string_view first, std::string_view second) = 0;
  // Snapshots (docs/DESIGN.md §16; Catalog::Snapshot says what each does).
  virtual absl::StatusOr<SnapshotInfo> Snapshot(std::string_view table, std::string_view name,
                                                 const SnapshotOptions& options) = 0;
  virtual absl::StatusOr<std::vector<SnapshotListing>> ListSnapshots() const = 0;
  virtual absl::Status DeleteSnapshot(std::string_view name) = 0;
  // One snapshot's manifest: NotFound, DataLoss.
  virtual absl::StatusOr<SnapshotInfo> ReadSnapshot(std::string_view name) const = 0;
  virtual absl::Status CloneSnapshot(std::string_view snapshot, std::string_view table) = 0;
  virtual absl::Status RestoreSnapshot(std::string_view snapshot) = 0;
  // Namespaces (Catalog::CreateNamespace says what each does).
  virtual absl::Status CreateNamespace(const NamespaceSpec& spec) = 0;
  virtual absl::Status ModifyNamespace(const NamespaceSpec& spec) = 0;
  virtual absl::Status DropNamespace(std::string_view name) = 0;
  virtual absl::StatusOr<NamespaceSpec> DescribeNamespace(std::string_view name) const = 0;
  virtual absl::StatusOr<std::vector<NamespaceSpec>> ListNamespaces() const = 0;
};

}  // namespace basalt::server
