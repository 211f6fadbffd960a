// Catalog's region transitions: regions opened again through the placement (for a table's alter,
// and for what a cluster's master does between admin operations: moves, unassign and assign of a
// region, a dead server's recovery, src/master/assignment_manager.h), and the alter itself.
#include "src/catalog/catalog.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/fault_point.h"
#include "common/status.h"
#include "src/schema/meta.h"
#include "src/schema/table_errors.h"

namespace basalt::server {

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
  // A family's REPLICATION_SCOPE is the one kept setting a region server reads (its replication
  // shippers, src/replication/peers.h): a change of it reopens the regions, as any change does
  // in HBase, so that every edit written after the change is judged by it wherever it is shipped.
  auto scopes = [](const TableSpec& t) {
    std::map<std::string, std::optional<std::string>> out;
    for (const FamilyOptions& f : t.families) out[f.name] = ReplicationScopeOf(t, f.name);
    return out;
  };
  if (served == wanted_served && scopes(e.spec) == scopes(spec)) {
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
    if (placement_->IsHeldClosed(info)) continue;
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

const HostedRegion* Catalog::RegionNow::hosted() const {
  if (table == nullptr) return nullptr;
  for (const HostedRegion& h : table->regions()) {
    if (h.info == info) return &h;
  }
  return nullptr;
}

absl::Status Catalog::RegionNow::TableOpen() const {
  if (!open_error.ok()) return FailedOpen(spec.name, open_error);
  if (table == nullptr) return Disabled(spec.name);
  return absl::OkStatus();
}

absl::Status Catalog::Transition(const std::function<absl::Status(Transitions&)>& run) {
  absl::MutexLock al(&admin_mu_);
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("the catalogue is stopping");
  }
  Transitions t(this);
  return run(t);
}

absl::StatusOr<Catalog::RegionNow> Catalog::Transitions::Region(std::string_view name) const {
  BASALT_ASSIGN_OR_RETURN(auto found, catalog_->RegionNamedLocked(name));
  const auto& [e, info] = found;
  return RegionNow{e.spec, info, e.open_error, e.open_error.ok() ? e.table : nullptr};
}

std::vector<std::shared_ptr<Table>> Catalog::Transitions::OpenTables() const {
  std::vector<std::shared_ptr<Table>> open;
  absl::ReaderMutexLock l(&catalog_->mu_);
  for (const auto& [name, e] : catalog_->entries_) {
    if (e.table != nullptr) open.push_back(e.table);
  }
  return open;
}

absl::Status Catalog::Transitions::SplitLog(const std::string& dir) { return catalog_->SplitDeadServerLogLocked(dir); }

size_t Catalog::Transitions::Reopen(const std::string& table, const std::vector<RegionInfo>& regions,
                                    std::string_view destination, std::string_view what) {
  Entry e;
  {
    absl::ReaderMutexLock l(&catalog_->mu_);
    auto it = catalog_->entries_.find(table);
    if (it == catalog_->entries_.end() || it->second.table == nullptr) return 0;
    e = it->second;
  }
  return catalog_->ReopenLocked(e, regions, destination, what);
}

absl::Status Catalog::Transitions::WhyNotOpen(const std::string& table, const RegionInfo& info) const {
  absl::ReaderMutexLock l(&catalog_->mu_);
  auto it = catalog_->entries_.find(table);
  if (it == catalog_->entries_.end()) return absl::NotFoundError("its table was dropped");
  absl::Status why = !it->second.open_error.ok() ? it->second.open_error : absl::UnavailableError("no server could open it");
  if (it->second.table != nullptr) {
    for (const HostedRegion& h : it->second.table->regions()) {
      if (h.info == info && !h.open_error.ok()) why = h.open_error;
    }
  }
  return why;
}

absl::Status Catalog::Transitions::RecordClosed(const RegionInfo& info) {
  return catalog_->WriteMeta({MetaPut(info, kClosedState, "")});
}

absl::Status Catalog::Transitions::Reinstall(const std::string& table) {
  Entry e;
  {
    absl::ReaderMutexLock l(&catalog_->mu_);
    auto it = catalog_->entries_.find(table);
    if (it == catalog_->entries_.end() || it->second.table == nullptr) return absl::OkStatus();
    e = it->second;
  }
  absl::StatusOr<std::shared_ptr<Table>> t = catalog_->OpenTable(e.spec, e.regions, e.table.get());
  {
    absl::MutexLock l(&catalog_->mu_);
    if (auto it = catalog_->entries_.find(table); it != catalog_->entries_.end()) Install(&it->second, t);
  }
  return t.status();
}

void Catalog::Transitions::Log(std::string_view line) const { catalog_->Log(line); }

}  // namespace basalt::server
