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
