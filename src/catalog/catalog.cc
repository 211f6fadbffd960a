// Catalog: the catalogue's admin operations (create, disable, enable, drop, assign), what
// it reports, and closing. Start-up and repair: catalog_open.cc; the server log and meta rows:
// catalog_meta.cc; a master's placement: catalog_assign.cc; splits and merges: region_split.cc. A
// cluster's region server has no catalogue: its regions are a RegionHost's (region_host.h).
#include "src/catalog/catalog.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "src/schema/meta.h"
#include "src/schema/table_errors.h"

namespace basalt::server {

Catalog::Catalog(const Options& options)
    : options_(options), placement_(options.placement != nullptr ? options.placement : &local_placement_) {
  if (options_.env == nullptr) options_.env = Env::Default();
  options_.region.env = options_.env;
}

Catalog::~Catalog() { CloseAll().IgnoreError(); }

std::string Catalog::TableDir(std::string_view name) const { return TableDirIn(options_.data_dir, name); }

void Catalog::Log(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    log::Info(line);
  }
}

std::vector<TableSpec> Catalog::CatalogLocked() const {
  std::vector<TableSpec> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [n, e] : entries_) out.push_back(e.spec);
  return out;
}

absl::Status Catalog::SaveLocked(const std::vector<TableSpec>& tables, const std::vector<NamespaceSpec>* namespaces) {
  if (namespaces != nullptr) return SaveCatalog(options_.env, options_.data_dir, tables, *namespaces);
  std::vector<NamespaceSpec> now;
  {
    absl::ReaderMutexLock l(&mu_);
    for (const auto& [name, ns] : namespaces_) now.push_back(ns);
  }
  return SaveCatalog(options_.env, options_.data_dir, tables, now);
}

absl::Status Catalog::CheckNamespaceOf(std::string_view table) const {
  const std::string_view ns = TableNamespace(table);
  if (ns == kDefaultNamespace) return absl::OkStatus();
  absl::ReaderMutexLock l(&mu_);
  if (namespaces_.count(ns) != 0) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrCat("namespace '", AV(ns), "' does not exist, so table '", AV(table), "' cannot be made in it"));
}

absl::StatusOr<std::shared_ptr<Table>> Catalog::Find(std::string_view name, std::string_view) const {
  absl::ReaderMutexLock l(&mu_);
  if (stopping_) return absl::UnavailableError("server is shutting down");
  if (std::shared_ptr<Table> t = SystemTable(name); t != nullptr) return t;
  auto it = entries_.find(name);
  if (it == entries_.end()) return NotFound(name);
  if (!it->second.open_error.ok()) return FailedOpen(name, it->second.open_error);
  if (it->second.table == nullptr) return Disabled(name);
  return it->second.table;
}

absl::Status Catalog::Create(const TableSpec& spec_in, const std::vector<std::string>& split_keys) {
  TableSpec spec = spec_in;
  spec.enabled = true;
  BASALT_RETURN_IF_ERROR(ValidateTableSpec(spec));
  if (split_keys.size() >= kMaxRegionsAtCreate) {
    return absl::InvalidArgumentError(absl::StrCat("table '", spec.name, "': ", split_keys.size() + 1,
                                                   " regions asked for; at most ", kMaxRegionsAtCreate, " at create"));
  }
  for (const std::string& k : split_keys) {
    if (k.size() > kMaxRowLength) {
      return absl::InvalidArgumentError(absl::StrCat("table '", spec.name, "': a split key of ", k.size(),
                                                     " bytes is longer than a row key may be (", kMaxRowLength, ")"));
    }
  }
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, RegionsFromSplitKeys(spec.name, split_keys, NewRegionId()));
  return CreateLocked(spec, regions, nullptr);
}

absl::Status Catalog::CreateLocked(const TableSpec& spec, const std::vector<RegionInfo>& regions,
                                   const std::function<absl::Status()>& fill) {
  BASALT_RETURN_IF_ERROR(CheckNamespaceOf(spec.name));
  {
    absl::ReaderMutexLock l(&mu_);
    if (entries_.count(spec.name)) {
      return absl::AlreadyExistsError(absl::StrCat("table '", spec.name, "' already exists"));
    }
  }
  BASALT_RETURN_IF_ERROR(CheckNamespaceRoom(spec.name, 1, regions.size()));
  // A directory without a catalogue entry is a leftover: kept aside, and the table starts clean.
  if (options_.env->FileExists(TableDir(spec.name))) {
    BASALT_RETURN_IF_ERROR(MoveTableAside(spec.name, "the catalogue does not list it and a new table takes its name"));
  }
  if (fill != nullptr) {
    if (absl::Status filled = fill(); !filled.ok()) {
      options_.env->RemoveTree(TableDir(spec.name)).IgnoreError();  // else moved aside at the next start
      return filled;
    }
  }
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, OpenTable(spec, regions));  // writes each REGIONINFO
  // The meta rows, then the catalogue: the commit (see the top of catalog.h). Rows an earlier
  // table of this name left (a drop whose meta write failed) go in the same batch.
  std::vector<RowMutation> rows;
  absl::StatusOr<std::vector<RegionInfo>> stale = MetaRegionsOf(spec.name);
  absl::Status s = stale.status();
  if (s.ok()) {
    for (const RegionInfo& r : *stale) rows.push_back(MetaDelete(r));
    for (const RegionInfo& r : regions) rows.push_back(MetaPut(r, "OPEN", ServerOf(table.get(), r)));
    s = WriteMeta(rows);
  }
  std::vector<TableSpec> cat = CatalogLocked();
  cat.push_back(spec);
  std::sort(cat.begin(), cat.end(), [](const TableSpec& a, const TableSpec& b) { return a.name < b.name; });
  if (s.ok()) s = WriteTableInfo(spec);
  if (s.ok()) s = SaveLocked(cat);
  if (!s.ok()) {
    table->state_ = Table::State::kDisabled;
    table->CloseRegions().IgnoreError();
    table.reset();
    std::vector<RowMutation> undo;
    for (const RegionInfo& r : regions) {
      undo.push_back(MetaDelete(r));
      log_->ForgetRegion(RegionName(spec, r)).IgnoreError();
    }
    WriteMeta(undo).IgnoreError();  // else removed at the next start: the catalogue lacks the table
    options_.env->RemoveTree(TableDir(spec.name)).IgnoreError();
    return s;
  }
  absl::MutexLock l(&mu_);
  entries_[spec.name] = Entry{spec, regions, std::move(table), {}, {}, {}, {}, {}};
  return absl::OkStatus();
}

absl::Status Catalog::Disable(std::string_view name) {
  absl::MutexLock al(&admin_mu_);
  std::vector<TableSpec> cat = CatalogLocked();
  auto it = std::find_if(cat.begin(), cat.end(), [&](const TableSpec& s) { return s.name == name; });
  if (it == cat.end()) return NotFound(name);
  if (!it->enabled) return Disabled(name);
  it->enabled = false;
  BASALT_RETURN_IF_ERROR(SaveLocked(cat));
  std::shared_ptr<Table> table;
  std::vector<std::shared_ptr<Table>> superseded;
  std::vector<RegionInfo> regions;
  {
    absl::MutexLock l(&mu_);
    Entry& e = entries_.find(name)->second;
    regions = e.regions;
    e.spec.enabled = false;
    e.open_error = absl::OkStatus();  // a FAILED_OPEN table has no region to close
    table = std::move(e.table);
    e.table = nullptr;
    e.closing = table;
    for (const std::weak_ptr<Table>& w : e.superseded) {
      if (std::shared_ptr<Table> old = w.lock()) superseded.push_back(std::move(old));
    }
  }
  // Calls begun before a split or merge hold the table it replaced: they end as the table's do
  // (their regions are the closed parents, or regions the table shares, closed below).
  for (const std::shared_ptr<Table>& old : superseded) {
    old->state_.store(Table::State::kDisabled, std::memory_order_release);
    old->RunCloseHooks();
  }
  superseded.clear();
  if (absl::Status s = RecordRegions(regions, "CLOSED"); !s.ok()) {
    Log(absl::StrCat("table '", AV(name), "' is disabled; recording its regions CLOSED in ", kMetaTableName,
                     " failed: ", s.ToString()));
  }
  if (table == nullptr) return absl::OkStatus();
  // Calls that already hold the table finish against the closed region: writes fail
  // (reported as "disabled"), reads of what is there still work.
  table->state_.store(Table::State::kDisabled, std::memory_order_release);
  // Scans blocked on a client that stopped reading end now, not at their deadline.
  table->RunCloseHooks();
  // The table is disabled whatever closing says: a region that had failed (a full disk) keeps
  // its unflushed writes in its log, which the next enable replays. Report, don't fail.
  if (absl::Status closed = table->CloseRegions(); !closed.ok()) {
    Log(absl::StrCat("table '", AV(name), "' is disabled; closing its region reported: ", closed.ToString(),
                     " (writes it had not flushed stay in its log and are replayed when it is enabled)"));
  }
  return absl::OkStatus();
}

absl::Status Catalog::WaitForClosing(const Entry& e) const {
  // Bounded: a scan notices a disabled table at its next message.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto held = [&e] {
    return !e.closing.expired() ||
           std::any_of(e.superseded.begin(), e.superseded.end(), [](const std::weak_ptr<Table>& t) { return !t.expired(); });
  };
  while (held()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::UnavailableError(
          absl::StrCat("table ", e.spec.name, " still has calls in flight from before it was disabled; retry"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return absl::OkStatus();
}

absl::StatusOr<Catalog::Entry> Catalog::DisabledEntry(std::string_view name,
                                                                std::string_view if_enabled) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return NotFound(name);
  if (it->second.spec.enabled) {
    return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " ", AV(if_enabled)));
  }
  return it->second;
}

absl::Status Catalog::Enable(std::string_view name) {
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(Entry e, DisabledEntry(name, "is already enabled"));
  BASALT_RETURN_IF_ERROR(WaitForClosing(e));
  TableSpec spec = e.spec;
  spec.enabled = true;
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, CurrentRegions(spec));
  RetryLogSplit(spec, regions);
  placement_->TableEnabled(name);  // enable_table opens every region (HBase's)
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, OpenTable(spec, regions));
  // Meta first: an enabled table's CLOSED rows are regions an operator unassigned, so none may
  // be left by an enable cut short.
  if (absl::Status s = RecordRegions(regions, "OPEN", table.get()); !s.ok()) {
    table->state_ = Table::State::kDisabled;
    table->CloseRegions().IgnoreError();
    return absl::Status(s.code(), absl::StrCat("enable ", AV(name), ": recording its regions OPEN in ", kMetaTableName,
                                               " failed, so it stays disabled: ", s.message()));
  }
  std::vector<TableSpec> cat = CatalogLocked();
  for (TableSpec& s : cat) {
    if (s.name == name) s.enabled = true;
  }
  if (absl::Status s = SaveLocked(cat); !s.ok()) {
    table->state_ = Table::State::kDisabled;
    table->CloseRegions().IgnoreError();
    return s;
  }
  absl::MutexLock l(&mu_);
  entries_[std::string(name)] = Entry{spec, regions, std::move(table), {}, {}, {}, {}, {}};
  return absl::OkStatus();
}

absl::Status Catalog::Drop(std::string_view name) {
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(Entry e, DisabledEntry(name, "is enabled; disable it before dropping it"));
  std::vector<TableSpec> cat = CatalogLocked();
  std::erase_if(cat, [&](const TableSpec& s) { return s.name == name; });
  // The catalogue first: a crash after this leaves a directory that the next start moves aside.
  BASALT_RETURN_IF_ERROR(SaveLocked(cat));
  {
    absl::MutexLock l(&mu_);
    entries_.erase(entries_.find(name));
  }
  std::vector<RowMutation> rows;
  for (const RegionInfo& r : e.regions) {
    rows.push_back(MetaDelete(r));
    // Edits a region that failed left unflushed go with the table.
    if (absl::Status s = log_->ForgetRegion(RegionName(e.spec, r)); !s.ok()) {
      Log(absl::StrCat("dropped table '", AV(name), "'; removing server log segments: ", s.ToString()));
    }
  }
  if (absl::Status s = WriteMeta(rows); !s.ok()) {
    Log(absl::StrCat("dropped table '", AV(name), "'; removing its ", kMetaTableName, " rows failed (", s.ToString(),
                     "); they are removed at the next start"));
  }
  // Readers still holding the closed table keep their open files; wait briefly anyway so the
  // directory goes once nobody uses it. A leftover directory is moved aside at the next start.
  if (!WaitForClosing(e).ok()) return absl::OkStatus();
  if (absl::Status s = options_.env->RemoveTree(TableDir(name)); !s.ok()) {
    Log(absl::StrCat("dropped table ", AV(name), " but ", s.message(), "; it is moved to lost+found at the next start"));
  }
  CountSnapshots();  // (files the table shared with snapshots are now theirs alone)
  return absl::OkStatus();
}

absl::Status Catalog::Flush(std::string_view name) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Find(name));
  return t->Flush();
}

absl::Status Catalog::MajorCompact(std::string_view name) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Find(name));
  absl::Status s = t->MajorCompact();
  // The daughters of a split no longer read their parents' files: the parents can go.
  if (s.ok() && !t->system()) {
    if (absl::Status c = CleanSplitParents(name); !c.ok()) Log(c.ToString());
  }
  return s;
}

void Catalog::HousekeepingLoop() {
  const absl::Duration every = options_.janitor_interval_ms > 0 ? absl::Milliseconds(options_.janitor_interval_ms)
                                                                : absl::InfiniteDuration();
  absl::Time next_clean = absl::Now() + every;
  absl::MutexLock l(&housekeeping_mu_);
  while (!housekeeping_stop_) {
    housekeeping_mu_.AwaitWithDeadline(absl::Condition(+[](Catalog* t) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                         return t->housekeeping_stop_ || !t->split_checks_.empty();
                                       }, this),
                                       next_clean);
    if (housekeeping_stop_) break;
    std::set<std::string> checks;
    checks.swap(split_checks_);
    const bool clean = absl::Now() >= next_clean;
    if (clean) next_clean = absl::Now() + every;
    housekeeping_mu_.Unlock();
    for (const std::string& r : checks) MaybeSplit(r);
    if (clean) {
      std::vector<std::string> tables;
      {
        absl::ReaderMutexLock rl(&mu_);
        for (const auto& [name, e] : entries_) {
          if (!e.retired.empty()) tables.push_back(name);
        }
      }
      for (const std::string& t : tables) {
        if (absl::Status c = CleanSplitParents(t); !c.ok()) Log(c.ToString());
      }
      if (absl::StatusOr<int> e = ExpireSnapshots(absl::Now()); !e.ok()) Log(e.status().ToString());
      CountSnapshots();  // (tables compacted since share fewer bytes with them)
    }
    housekeeping_mu_.Lock();
  }
}

absl::Status Catalog::Assign(std::string_view name) {
  absl::MutexLock al(&admin_mu_);
  TableSpec spec;
  std::vector<RegionInfo> regions;
  std::shared_ptr<Table> current;  // open, with FAILED_OPEN regions
  std::shared_ptr<Table> opened;
  {
    absl::ReaderMutexLock l(&mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return NotFound(name);
    if (!it->second.spec.enabled) return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " is disabled; enable it instead"));
    current = it->second.table;
    if (it->second.open_error.ok() && (current == nullptr || !current->has_failed_regions())) {
      return absl::FailedPreconditionError(
          absl::StrCat("table ", AV(name), " is open; assign reopens only a FAILED_OPEN table or region"));
    }
    spec = it->second.spec;
  }
  absl::StatusOr<std::vector<RegionInfo>> now = CurrentRegions(spec);
  if (now.ok()) RetryLogSplit(spec, *now);
  // An open table keeps serving its healthy regions: the new Table shares them.
  absl::StatusOr<std::shared_ptr<Table>> t = now.ok() ? OpenTable(spec, *now, current.get()) : now.status();
  if (now.ok()) regions = *now;
  {
    absl::MutexLock l(&mu_);
    Entry& e = entries_.find(name)->second;
    if (!t.ok()) {
      e.open_error = t.status();
      Log(absl::StrCat("table '", AV(name), "' is still FAILED_OPEN: ", t.status().ToString()));
      return FailedOpen(name, e.open_error);
    }
    e.table = *std::move(t);
    e.regions = regions;
    e.open_error = absl::OkStatus();
    if (e.table->has_failed_regions()) {
      const absl::Status still = absl::FailedPreconditionError(
          absl::StrCat("table ", AV(name), " is open but some of its regions are still FAILED_OPEN: ",
                       e.table->Stats().failed));
      Log(std::string(still.message()));
      return still;
    }
    Log(absl::StrCat("table '", AV(name), "' is open again (assign)"));
    opened = e.table;
  }
  if (absl::Status s = RecordRegions(regions, "OPEN", opened.get()); !s.ok()) {
    Log(absl::StrCat("table '", AV(name), "' is open; recording its regions OPEN in ", kMetaTableName,
                     " failed: ", s.ToString()));
  }
  return absl::OkStatus();
}

absl::Status Catalog::OpenError(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? absl::OkStatus() : it->second.open_error;
}

std::shared_ptr<Table> Catalog::SystemTable(std::string_view name) const {
  if (name == kMetaTableName) return meta_;
  if (name == kAclTableName) return acl_;
  if (name == kQuotaTableName) return quota_;
  return nullptr;
}

absl::StatusOr<TableSpec> Catalog::Describe(std::string_view name) const {
  if (std::shared_ptr<Table> t = SystemTable(name); t != nullptr) return t->spec();
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return NotFound(name);
  return it->second.spec;
}

std::vector<TableSpec> Catalog::List() const {
  std::vector<TableSpec> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [n, e] : entries_) out.push_back(e.spec);
  return out;
}

std::vector<TableInfo> Catalog::Stats() const {
  std::vector<std::pair<TableInfo, std::shared_ptr<Table>>> tables;
  {
    absl::ReaderMutexLock l(&mu_);
    for (const auto& [n, e] : entries_) tables.emplace_back(TableInfo{e.spec, e.open_error, {}, e.regions.size()}, e.table);
  }
  std::vector<TableInfo> out;
  for (auto& [info, t] : tables) {
    if (t != nullptr) info.stats = t->Stats();
    out.push_back(std::move(info));
  }
  return out;
}

size_t Catalog::size() const {
  absl::ReaderMutexLock l(&mu_);
  return entries_.size();
}

absl::Status Catalog::CloseAll() {
  {
    absl::MutexLock l(&housekeeping_mu_);
    housekeeping_stop_ = true;
  }
  if (housekeeping_.joinable()) housekeeping_.join();
  std::vector<std::shared_ptr<Table>> open;
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    for (auto& [n, e] : entries_) {
      if (e.table != nullptr) open.push_back(e.table);
    }
  }
  absl::Status first;
  for (auto& t : open) {
    // (A master stopping leaves its regions open on their servers: the next master finds them there.)
    absl::Status s = placement_->Stop(t.get());
    if (first.ok()) first = s;
  }
  // The system tables last: the tables' closes may still have written to meta.
  for (const std::shared_ptr<Table>& system : {quota_, acl_, meta_}) {
    if (system == nullptr) continue;
    absl::Status s = system->Stop(/*close_regions=*/true);
    if (first.ok()) first = s;
  }
  return first;
}

absl::StatusOr<std::vector<RegionStatus>> Catalog::Regions(std::string_view name) const {
  std::shared_ptr<Table> table;
  std::vector<RegionStatus> out;
  std::string state;
  {
    absl::ReaderMutexLock l(&mu_);
    if (std::shared_ptr<Table> system = SystemTable(name); system != nullptr) {
      table = system;
      out.push_back(RegionStatus{system->regions()[0].info, "OPEN", {}});
    } else {
      auto it = entries_.find(name);
      if (it == entries_.end()) return NotFound(name);
      table = it->second.table;
      state = !it->second.spec.enabled ? "CLOSED" : !it->second.open_error.ok() ? "FAILED_OPEN" : "OPEN";
      for (const RegionInfo& r : it->second.regions) out.push_back(RegionStatus{r, state, {}});
    }
  }
  const std::string here = ServerName();
  for (RegionStatus& r : out) r.server = here;
  if (table != nullptr) {
    for (size_t i = 0; i < out.size() && i < table->regions().size(); ++i) {
      out[i].stats = table->regions()[i].handle->GetStats();
      if (!table->regions()[i].server.empty()) out[i].server = table->regions()[i].server;
      if (!table->regions()[i].open_error.ok()) out[i].state = "FAILED_OPEN";
      if (table->regions()[i].unassigned) {
        out[i].state = kClosedState;
        out[i].server.clear();
      }
    }
  }
  return out;
}

std::string Catalog::ServerName() const {
  absl::ReaderMutexLock l(&mu_);
  return server_name_;
}

size_t Catalog::RegionCount(std::string_view name) const {
  if (IsSystemTable(name)) return 1;
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? 0 : it->second.regions.size();
}

absl::Status Catalog::SetServerName(std::string_view name) {
  absl::MutexLock al(&admin_mu_);  // no create or drop changes the rows meanwhile
  std::vector<RowMutation> rows;
  std::vector<Entry> tables;
  {
    absl::MutexLock l(&mu_);
    server_name_.assign(name);
    tables.reserve(entries_.size());
    for (const auto& [n, e] : entries_) tables.push_back(e);
  }
  for (const Entry& e : tables) {
    for (const RegionInfo& r : e.regions) rows.push_back(MetaPut(r, MetaStateOf(e, r), ServerOf(e.table.get(), r)));
  }
  return WriteMeta(rows);
}

const char* Catalog::MetaStateOf(const Entry& e, const RegionInfo& r) const {
  if (!e.spec.enabled || placement_->IsHeldClosed(r)) return kClosedState;
  return e.open_error.ok() ? "OPEN" : "FAILED_OPEN";
}

}  // namespace basalt::server
