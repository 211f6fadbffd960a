// Catalog's region moves: placing a region again (move, unassign, assign of one region)
// and recovering a dead server's, through the placement (a cluster's master's AssignmentManager).
#include "src/catalog/catalog.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/fault_point.h"
#include "common/status.h"
#include "src/schema/meta.h"
#include "src/schema/table_errors.h"

namespace basalt::server {

absl::StatusOr<size_t> Catalog::RecoverServer(const std::string& log_dir,
                                                   const std::function<bool(const HostedRegion&)>& was_there) {
  absl::MutexLock al(&admin_mu_);
  if (!log_dir.empty()) BASALT_RETURN_IF_ERROR(SplitDeadServerLogLocked(log_dir));
  std::vector<Entry> open;
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("master is stopping");
    for (const auto& [name, e] : entries_) {
      if (e.table != nullptr) open.push_back(e);
    }
  }
  size_t placed = 0;
  for (const Entry& e : open) {
    std::vector<RegionInfo> again;
    for (const HostedRegion& h : e.table->regions()) {
      if (was_there(h)) again.push_back(h.info);
    }
    if (!again.empty()) placed += ReopenLocked(e, again, /*destination=*/{}, "recover");
  }
  return placed;
}

size_t Catalog::ReopenLocked(const Entry& e, const std::vector<RegionInfo>& again, std::string_view destination,
                                  std::string_view what) {
  absl::StatusOr<std::shared_ptr<Table>> t = OpenTable(e.spec, e.regions, e.table.get(), &again, destination);
  FaultPoint(absl::StrCat(AV(what), ":opened"));
  std::shared_ptr<Table> now;
  {
    absl::MutexLock l(&mu_);
    auto it = entries_.find(e.spec.name);
    if (it == entries_.end()) return 0;
    Install(&it->second, t);
    now = it->second.table;
  }
  if (now == nullptr) {
    Log(absl::StrCat("table '", e.spec.name, "' is FAILED_OPEN: ", t.status().ToString()));
    return 0;
  }
  size_t placed = 0;
  for (const HostedRegion& h : now->regions()) {
    if (std::find(again.begin(), again.end(), h.info) != again.end() && h.open_error.ok()) ++placed;
  }
  if (absl::Status s = RecordRegions(again, "OPEN", now.get()); !s.ok()) {
    Log(absl::StrCat("recording where the regions of table '", e.spec.name, "' serve now failed: ", s.ToString()));
  }
  return placed;
}

absl::StatusOr<std::pair<Catalog::Entry, RegionInfo>> Catalog::RegionNamedLocked(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [t, e] : entries_) {
    for (const RegionInfo& r : e.regions) {
      if (r.id != 0 && (r.Name() == name || r.EncodedName() == name)) return std::make_pair(e, r);
    }
  }
  return absl::NotFoundError(absl::StrCat("no region ", AV(name)));
}

absl::Status Catalog::Move(std::string_view region, std::string_view destination) {
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(auto found, RegionNamedLocked(region));
  const auto& [e, info] = found;
  if (!e.open_error.ok()) return FailedOpen(e.spec.name, e.open_error);
  if (e.table == nullptr) return Disabled(e.spec.name);
  const absl::Time start = absl::Now();
  std::string from = "nowhere (FAILED_OPEN)";
  if (e.unassigned.count(info.EncodedName())) {
    return absl::FailedPreconditionError(
        absl::StrCat("move: region ", info.Name(), " is closed (unassign); assign it to open it again"));
  }
  for (const HostedRegion& h : e.table->regions()) {
    if (h.info != info || !h.open_error.ok()) continue;  // a FAILED_OPEN one just opens
    if (!destination.empty() && h.server == destination) return absl::OkStatus();
    from = h.server;
    // Calls on it are refused from now on; its server flushes it, so that what it acknowledged
    // is in its files when the next server opens them.
    if (absl::Status closed = h.handle->Close(); !closed.ok()) {
      return absl::Status(closed.code(), absl::StrCat("move: closing region ", info.Name(), " on ", h.server,
                                                      " failed, so it stays there: ", closed.message()));
    }
  }
  const absl::Duration closing = absl::Now() - start;
  const std::vector<RegionInfo> again = {info};
  FaultPoint("move:closed");
  if (ReopenLocked(e, again, destination, "move") == 1) {
    std::shared_ptr<Table> now;
    {
      absl::ReaderMutexLock l(&mu_);
      if (auto it = entries_.find(e.spec.name); it != entries_.end()) now = it->second.table;
    }
    Log(absl::StrCat("moved region ", info.Name(), " from ", from, " to ", ServerOf(now.get(), info), " in ",
                     absl::ToInt64Milliseconds(absl::Now() - start), " ms (its close took ",
                     absl::ToInt64Milliseconds(closing), " ms)"));
    return absl::OkStatus();
  }
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(e.spec.name);
  absl::Status why = it == entries_.end() ? absl::NotFoundError("its table was dropped")
                     : !it->second.open_error.ok() ? it->second.open_error
                                                  : absl::UnavailableError("no server could open it");
  if (it != entries_.end() && it->second.table != nullptr) {
    for (const HostedRegion& h : it->second.table->regions()) {
      if (h.info == info && !h.open_error.ok()) why = h.open_error;
    }
  }
  return absl::Status(why.code(), absl::StrCat("move: region ", info.Name(), " closed but did not open again (",
                                               "FAILED_OPEN until a server can open it): ", why.message()));
}

absl::Status Catalog::Unassign(std::string_view region) {
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(auto found, RegionNamedLocked(region));
  const auto& [e, info] = found;
  if (!e.open_error.ok()) return FailedOpen(e.spec.name, e.open_error);
  if (e.table == nullptr) return Disabled(e.spec.name);
  const std::string encoded = info.EncodedName();
  if (e.unassigned.count(encoded)) return absl::OkStatus();
  std::string from = "nowhere (FAILED_OPEN)";
  for (const HostedRegion& h : e.table->regions()) {
    if (h.info != info || !h.open_error.ok()) continue;  // a FAILED_OPEN one is closed already
    from = h.server;
    if (absl::Status closed = h.handle->Close(); !closed.ok()) {
      return absl::Status(closed.code(), absl::StrCat("unassign: closing region ", info.Name(), " on ", h.server,
                                                      " failed, so it stays open: ", closed.message()));
    }
  }
  if (absl::Status s = WriteMeta({MetaPut(info, kClosedState, "")}); !s.ok()) {
    ReopenLocked(e, {info}, from, "unassign");  // meta still says where it was: it serves there again
    return absl::Status(s.code(), absl::StrCat("unassign: recording region ", info.Name(), " CLOSED in ",
                                               kMetaTableName, " failed, so it was opened again: ", s.message()));
  }
  {
    absl::MutexLock l(&mu_);
    entries_.find(e.spec.name)->second.unassigned.insert(encoded);
  }
  absl::StatusOr<std::shared_ptr<Table>> t = OpenTable(e.spec, e.regions, e.table.get());
  {
    absl::MutexLock l(&mu_);
    Install(&entries_.find(e.spec.name)->second, t);
  }
  Log(absl::StrCat("unassigned region ", info.Name(), " (closed on ", from, "; closed until assign)"));
  return t.status();
}

absl::Status Catalog::Modify(const TableSpec& wanted) {
  absl::MutexLock al(&admin_mu_);
  Entry e;
  {
    absl::ReaderMutexLock l(&mu_);
    auto it = entries_.find(wanted.name);
    if (it == entries_.end()) return NotFound(wanted.name);
    e = it->second;
  }
  TableSpec spec = wanted;
  spec.enabled = e.spec.enabled;
  BASALT_RETURN_IF_ERROR(ValidateTableSpec(spec));
  if (spec.transactional != e.spec.transactional || spec.queue != e.spec.queue) {
    return absl::InvalidArgumentError(absl::StrCat("modify: table ", spec.name,
                                                   " cannot become or stop being transactional or a queue"));
  }
  if (spec == e.spec) return absl::OkStatus();
  // The catalogue first, as a create writes it: a crash after this opens the regions with the
  // new families at the next start.
  std::vector<TableSpec> cat = CatalogLocked();
  for (TableSpec& s : cat) {
    if (s.name == spec.name) s = spec;
  }
  BASALT_RETURN_IF_ERROR(WriteTableInfo(spec));
  BASALT_RETURN_IF_ERROR(SaveLocked(cat));
  {
    absl::MutexLock l(&mu_);
    entries_.find(spec.name)->second.spec = spec;
  }
  if (e.table == nullptr) {
    Log(absl::StrCat("modified table '", spec.name, "' (not open: its regions take the change when they open)"));
    return absl::OkStatus();
  }
  TableSpec served = e.spec, wanted_served = spec;
  served.kept = wanted_served.kept = {};
  served.kept_by_family.clear();
  wanted_served.kept_by_family.clear();
  if (served == wanted_served) {
    // Only the settings kept for clients changed: the regions serve as they did.
    Log(absl::StrCat("modified table '", spec.name, "' (kept settings only: no region reopened)"));
    return absl::OkStatus();
  }
  // Each open region again, where it is, with the new families (as HBase's reopen of a
  // modified table's regions).
  size_t reopened = 0, regions = 0;
  for (const RegionInfo& info : e.regions) {
    Entry now;
    {
      absl::ReaderMutexLock l(&mu_);
      auto it = entries_.find(spec.name);
      if (it == entries_.end() || it->second.table == nullptr) break;  // dropped or disabled meanwhile
      now = it->second;
    }
    if (now.unassigned.count(info.EncodedName())) continue;
    std::string where;
    bool open = false;
    for (const HostedRegion& h : now.table->regions()) {
      if (h.info != info || !h.open_error.ok()) continue;
      where = h.server;
      open = true;
      // Calls its closed region refuses retry on the table installed next (as after a split).
      now.table->superseded_.store(true, std::memory_order_release);
      if (absl::Status closed = h.handle->Close(); !closed.ok()) {
        Log(absl::StrCat("modify: closing region ", info.Name(), " failed (", closed.ToString(),
                         "); it keeps its old families until it opens again"));
        open = false;
      }
    }
    if (!open) continue;
    ++regions;
    reopened += ReopenLocked(now, {info}, where, "modify");
  }
  Log(absl::StrCat("modified table '", spec.name, "': ", reopened, " of ", regions, " region(s) reopened"));
  if (reopened < regions) {
    return absl::UnavailableError(absl::StrCat("modify: table ", spec.name, " is modified, but ", regions - reopened,
                                               " of its regions did not open again (FAILED_OPEN; see the log)"));
  }
  return absl::OkStatus();
}

absl::Status Catalog::AssignRegion(std::string_view region) {
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(auto found, RegionNamedLocked(region));
  const auto& [e, info] = found;
  if (e.table == nullptr && e.open_error.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("assign: table ", e.spec.name, " is disabled; enable it instead"));
  }
  if (!e.open_error.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("assign: table ", e.spec.name, " is FAILED_OPEN as a whole (",
                                                      e.open_error.message(), "); assign the table"));
  }
  const std::string encoded = info.EncodedName();
  const bool was_unassigned = e.unassigned.count(encoded) > 0;
  if (!was_unassigned) {
    for (const HostedRegion& h : e.table->regions()) {
      if (h.info == info && h.open_error.ok()) return absl::OkStatus();  // open already
    }
  }
  {
    absl::MutexLock l(&mu_);
    entries_.find(e.spec.name)->second.unassigned.erase(encoded);
  }
  if (ReopenLocked(e, {info}, /*destination=*/{}, "assign") == 1) {
    Log(absl::StrCat("assigned region ", info.Name(), was_unassigned ? " (it was unassigned)" : " (it was FAILED_OPEN)"));
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat("assign: region ", info.Name(),
                                             " did not open (FAILED_OPEN until a server can open it; see the log)"));
}

std::vector<HostedRegion> Catalog::OpenRegions() const {
  std::vector<HostedRegion> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    if (e.table == nullptr) continue;
    for (const HostedRegion& h : e.table->regions()) {
      if (!h.unassigned && h.open_error.ok()) out.push_back(h);
    }
  }
  return out;
}

std::vector<std::string> Catalog::TablesToAssign() const {
  std::vector<std::string> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    if (!e.spec.enabled) continue;
    if (!e.open_error.ok() || (e.table != nullptr && e.table->has_failed_regions())) out.push_back(name);
  }
  return out;
}

}  // namespace basalt::server
