// Catalog's server log (opening it, splitting a dead server's) and its basalt:meta rows.
#include "src/catalog/catalog.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "src/schema/meta.h"
#include "src/schema/table_errors.h"

namespace basalt::server {

ServerLog::Options Catalog::LogOptions(std::string dir) const {
  ServerLog::Options lo;
  lo.env = options_.env;
  lo.dir = std::move(dir);
  lo.roll_size = options_.wal_roll_size;
  lo.max_logs = options_.wal_max_logs;
  lo.recovery = options_.region.wal_recovery;
  lo.regions = RegionDirsLocked();
  lo.tables = TableNamesLocked();
  lo.table_of = &TableOfRegionName;
  lo.route = [this](std::string_view region, std::string_view row) { return RouteRecord(region, row); };
  lo.lost_found = absl::StrCat(options_.data_dir, "/", kLostFoundDir);
  lo.log = [this](std::string_view line) { Log(line); };
  return lo;
}

absl::Status Catalog::OpenServerLog() {
  ServerLog::Options lo = LogOptions(options_.data_dir + "/wal");
  lo.holds = options_.wal_holds;  // (this server's own log only: never a dead server's)
  lo.max_held_segments = options_.wal_max_held_segments;
  lo.on_hold_dropped = options_.on_wal_hold_dropped;
  absl::StatusOr<std::unique_ptr<ServerLog>> log = ServerLog::Open(lo);
  if (!log.ok()) {
    return absl::Status(log.status().code(),
                        absl::StrCat("opening the server log in ", lo.dir, ": ", log.status().message()));
  }
  log_ = *std::move(log);
  options_.region.server_log = log_.get();
  return absl::OkStatus();
}

absl::Status Catalog::SplitDeadServerLogLocked(const std::string& dir) {
  ServerLog::Options lo = LogOptions(dir);
  lo.drop_unknown_regions = true;
  if (options_.dead_log_holds) {
    absl::StatusOr<std::map<std::string, uint64_t>> holds = options_.dead_log_holds(dir);
    if (!holds.ok()) {
      return absl::Status(holds.status().code(), absl::StrCat("the replication places in the log of a dead server in ",
                                                              dir, ": ", holds.status().message()));
    }
    lo.holds = *std::move(holds);
  }
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<ServerLog::SplitStats> st = ServerLog::SplitDeadServerLog(lo);
  if (!st.ok()) {
    return absl::Status(st.status().code(), absl::StrCat("splitting the log of a dead server in ", dir, ": ",
                                                         st.status().message()));
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  Log(absl::StrCat("split the log of a dead server (", dir, ") in ", ms.count(), " ms: ", st->records,
                   " record(s) to the recovered.edits of ", st->regions, " region(s)"));
  return absl::OkStatus();
}

std::map<std::string, std::string> Catalog::RegionDirsLocked() const {
  std::map<std::string, std::string> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    for (const RegionInfo& r : e.regions) out[RegionName(e.spec, r)] = RegionDir(r);
  }
  return out;
}

std::set<std::string> Catalog::TableNamesLocked() const {
  std::set<std::string> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) out.insert(name);
  return out;
}

void Catalog::RetryLogSplit(const TableSpec& spec, const std::vector<RegionInfo>& regions) {
  if (log_->split_error().ok()) return;  // nothing left to split
  std::map<std::string, std::string> dirs = RegionDirsLocked();
  for (const RegionInfo& r : regions) dirs[RegionName(spec, r)] = RegionDir(r);
  // Its failure keeps the regions it may hold records of closed, each saying why (MayOpen).
  log_->RetrySplit(dirs, TableNamesLocked()).IgnoreError();
}

uint64_t Catalog::NewRegionId() {
  const uint64_t now = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  uint64_t last = last_region_id_.load();
  uint64_t id;
  do {
    id = std::max(now, last + 1);
  } while (!last_region_id_.compare_exchange_weak(last, id));
  return id;
}

std::string Catalog::RegionDir(const RegionInfo& info) const { return RegionDirIn(options_.data_dir, info); }

absl::Status Catalog::WriteMeta(const std::vector<RowMutation>& rows) {
  if (rows.empty()) return absl::OkStatus();
  absl::Status s = meta_->regions()[0].region->Mutate(rows, Durability::kSyncWal);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("writing ", kMetaTableName, ": ", s.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RegionInfo>> Catalog::CurrentRegions(const TableSpec& spec) {
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, MetaRegionsOf(spec.name));
  if (!regions.empty()) return regions;
  BASALT_ASSIGN_OR_RETURN(regions, RegionsWithoutMeta(spec));
  BASALT_RETURN_IF_ERROR(RecordRegions(regions, spec.enabled ? "OPEN" : "CLOSED"));
  return regions;
}

absl::StatusOr<std::vector<RegionInfo>> Catalog::MetaRegionsOf(std::string_view table) {
  BASALT_ASSIGN_OR_RETURN(auto all, LoadMeta(meta_->regions()[0].region.get()));
  auto it = all.find(std::string(table));
  return it == all.end() ? std::vector<RegionInfo>{} : it->second;
}

absl::Status Catalog::RecordRegions(const std::vector<RegionInfo>& regions, std::string_view state,
                                         const Table* table) {
  std::vector<RowMutation> rows;
  for (const RegionInfo& r : regions) rows.push_back(MetaPut(r, state, ServerOf(table, r)));
  return WriteMeta(rows);
}

std::string Catalog::ServerOf(const Table* table, const RegionInfo& r) const {
  if (table != nullptr) {
    for (const HostedRegion& h : table->regions()) {
      if (h.info == r && h.open_error.ok() && !h.server.empty()) return h.server;
    }
  }
  return CommitServer();  // a master's region that is not open serves nowhere
}

}  // namespace basalt::server
