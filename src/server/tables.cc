#include "src/server/tables.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/status.h"

namespace basalt::server {
namespace {

absl::Status NotFound(std::string_view name) {
  return absl::NotFoundError(absl::StrCat("table '", AV(name), "' does not exist"));
}
absl::Status Disabled(std::string_view name) {
  return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " is disabled"));
}
absl::Status FailedOpen(std::string_view name, const absl::Status& why) {
  return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " is FAILED_OPEN (", why.message(),
                                                    "); repair it, then assign '", AV(name), "'"));
}

constexpr char kTableInfoName[] = "TABLEINFO";
constexpr char kLostFoundDir[] = "lost+found";

// Removes a directory tree of the local data directory (standalone mode only: the Env has no
// recursive delete, and a cluster's shared store will drop a region its own way).
absl::Status RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("removing ", path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

Table::Table(TableSpec spec, std::unique_ptr<Region> region) : spec_(std::move(spec)), region_(std::move(region)) {}

Table::~Table() = default;

bool Table::HasFamily(std::string_view family) const {
  for (const FamilyOptions& f : spec_.families) {
    if (f.name == family) return true;
  }
  return false;
}

absl::Status Table::ClosedError() const {
  if (state_.load(std::memory_order_acquire) == State::kStopping) {
    return absl::UnavailableError("server is shutting down");
  }
  return Disabled(spec_.name);
}

uint64_t Table::AddCloseHook(std::function<void()> hook) {
  absl::MutexLock l(&hooks_mu_);
  if (closed()) return 0;  // RunCloseHooks ran (or runs next) after the state changed
  const uint64_t id = next_hook_++;
  hooks_.emplace(id, std::move(hook));
  return id;
}

void Table::RemoveCloseHook(uint64_t id) {
  absl::MutexLock l(&hooks_mu_);
  hooks_.erase(id);
}

void Table::RunCloseHooks() {
  absl::MutexLock l(&hooks_mu_);
  for (auto& [id, hook] : hooks_) hook();
  hooks_.clear();
}

TableManager::TableManager(const Options& options) : options_(options) {
  if (options_.env == nullptr) options_.env = Env::Default();
  options_.region.env = options_.env;
}

TableManager::~TableManager() { CloseAll().IgnoreError(); }

std::string TableManager::TableDir(std::string_view name) const {
  return absl::StrCat(options_.data_dir, "/tables/", AV(name));
}

void TableManager::Log(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << "basalt-server: " << line << "\n";
  }
}

absl::Status TableManager::WriteTableInfo(const TableSpec& spec) {
  TableSpec info = spec;
  info.enabled = true;  // the catalogue keeps the state; TABLEINFO only what the table is
  return options_.env->WriteFileDurably(absl::StrCat(TableDir(spec.name), "/", kTableInfoName), EncodeCatalog({info}));
}

absl::Status TableManager::MoveTableAside(std::string_view name, std::string_view why) {
  Env* env = options_.env;
  const std::string aside = absl::StrCat(options_.data_dir, "/", kLostFoundDir);
  BASALT_RETURN_IF_ERROR(env->CreateDirs(aside));
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string to = absl::StrCat(aside, "/", AV(name), ".", ms);
  for (int i = 1; env->FileExists(to); ++i) to = absl::StrCat(aside, "/", AV(name), ".", ms, ".", i);
  BASALT_RETURN_IF_ERROR(env->ReplaceFile(TableDir(name), to));
  BASALT_RETURN_IF_ERROR(env->SyncDir(options_.data_dir + "/tables"));
  Log(absl::StrCat("moved table directory ", TableDir(name), " aside to ", to, " (", AV(why), "; nothing was deleted)"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TableSpec>> TableManager::CatalogWhenMissing(const std::vector<std::string>& dirs) {
  const std::string path = absl::StrCat(options_.data_dir, "/", kCatalogFileName);
  if (dirs.empty()) return std::vector<TableSpec>{};  // a new data directory
  std::string names;
  for (const std::string& d : dirs) absl::StrAppend(&names, names.empty() ? "" : ", ", d);
  if (!options_.rebuild_catalog) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the catalogue ", path, " is missing but ", options_.data_dir, "/tables holds ", dirs.size(),
        " table director", dirs.size() == 1 ? "y" : "ies", " (", names,
        "); nothing was deleted. Restore CATALOG from a backup, or start once with --rebuild_catalog=true to rebuild it "
        "from each table's TABLEINFO (every table comes back enabled)"));
  }
  // HBase rebuilds hbase:meta from each table's .tableinfo the same way (hbck's offline repair).
  std::vector<TableSpec> specs;
  for (const std::string& d : dirs) {
    const std::string info_path = absl::StrCat(TableDir(d), "/", kTableInfoName);
    if (!options_.env->FileExists(info_path)) {
      return absl::FailedPreconditionError(absl::StrCat("cannot rebuild the catalogue ", path, ": ", info_path,
                                                        " is missing; nothing was changed"));
    }
    BASALT_ASSIGN_OR_RETURN(std::string bytes, options_.env->ReadFileToString(info_path));
    BASALT_ASSIGN_OR_RETURN(std::vector<TableSpec> one, DecodeCatalog(bytes, info_path));
    if (one.size() != 1 || one[0].name != d) {
      return absl::DataLossError(absl::StrCat("cannot rebuild the catalogue ", path, ": ", info_path,
                                              " does not describe table '", d, "'"));
    }
    one[0].enabled = true;
    specs.push_back(std::move(one[0]));
  }
  BASALT_RETURN_IF_ERROR(SaveCatalog(options_.env, options_.data_dir, specs));
  Log(absl::StrCat("rebuilt the catalogue ", path, " from the TABLEINFO of ", specs.size(), " table(s): ", names));
  return specs;
}

absl::StatusOr<std::unique_ptr<TableManager>> TableManager::Open(const Options& options) {
  std::unique_ptr<TableManager> tm(new TableManager(options));
  Env* env = tm->options_.env;
  BASALT_RETURN_IF_ERROR(env->CreateDirs(options.data_dir + "/tables"));
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> dirs, env->ListDir(options.data_dir + "/tables"));
  std::vector<TableSpec> specs;
  if (env->FileExists(absl::StrCat(options.data_dir, "/", kCatalogFileName))) {
    BASALT_ASSIGN_OR_RETURN(specs, LoadCatalog(env, options.data_dir));
  } else {
    BASALT_ASSIGN_OR_RETURN(specs, tm->CatalogWhenMissing(dirs));
  }
  std::set<std::string> known;
  for (const TableSpec& s : specs) known.insert(s.name);
  for (const std::string& d : dirs) {
    if (known.count(d)) continue;
    // Left by a create or drop that a crash cut short (or a catalogue restored from an older
    // backup): the catalogue does not say it is obsolete, so it is kept.
    BASALT_RETURN_IF_ERROR(tm->MoveTableAside(d, "the catalogue does not list it"));
  }
  absl::MutexLock al(&tm->admin_mu_);
  for (const TableSpec& s : specs) {
    Entry e;
    e.spec = s;
    // Tables from before TABLEINFO existed get one (the catalogue can then be rebuilt).
    if (env->FileExists(tm->TableDir(s.name)) &&
        !env->FileExists(absl::StrCat(tm->TableDir(s.name), "/", kTableInfoName))) {
      BASALT_RETURN_IF_ERROR(tm->WriteTableInfo(s));
    }
    if (s.enabled) {
      absl::StatusOr<std::shared_ptr<Table>> t = tm->OpenTable(s);
      if (t.ok()) {
        e.table = *std::move(t);
      } else {
        // This table alone is out of service; the others serve.
        e.open_error = t.status();
        tm->Log(absl::StrCat("table '", s.name, "' is FAILED_OPEN: ", t.status().ToString()));
      }
    }
    absl::MutexLock l(&tm->mu_);
    tm->entries_.emplace(s.name, std::move(e));
  }
  return tm;
}

absl::StatusOr<std::shared_ptr<Table>> TableManager::OpenTable(const TableSpec& spec) {
  RegionDescriptor desc;
  desc.name = spec.name;
  desc.families = spec.families;
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Region> region, Region::Open(options_.region, desc, TableDir(spec.name)));
  return std::make_shared<Table>(spec, std::move(region));
}

std::vector<TableSpec> TableManager::CatalogLocked() const {
  std::vector<TableSpec> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [n, e] : entries_) out.push_back(e.spec);
  return out;
}

absl::Status TableManager::SaveLocked(const std::vector<TableSpec>& tables) {
  return SaveCatalog(options_.env, options_.data_dir, tables);
}

absl::StatusOr<std::shared_ptr<Table>> TableManager::Find(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  if (stopping_) return absl::UnavailableError("server is shutting down");
  auto it = entries_.find(name);
  if (it == entries_.end()) return NotFound(name);
  if (!it->second.open_error.ok()) return FailedOpen(name, it->second.open_error);
  if (it->second.table == nullptr) return Disabled(name);
  return it->second.table;
}

absl::Status TableManager::Create(const TableSpec& spec_in) {
  TableSpec spec = spec_in;
  spec.enabled = true;
  BASALT_RETURN_IF_ERROR(ValidateTableSpec(spec));
  absl::MutexLock al(&admin_mu_);
  {
    absl::ReaderMutexLock l(&mu_);
    if (entries_.count(spec.name)) {
      return absl::AlreadyExistsError(absl::StrCat("table '", spec.name, "' already exists"));
    }
  }
  // A directory without a catalogue entry is a leftover: kept aside, and the table starts clean.
  if (options_.env->FileExists(TableDir(spec.name))) {
    BASALT_RETURN_IF_ERROR(MoveTableAside(spec.name, "the catalogue does not list it and a new table takes its name"));
  }
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, OpenTable(spec));
  std::vector<TableSpec> cat = CatalogLocked();
  cat.push_back(spec);
  std::sort(cat.begin(), cat.end(), [](const TableSpec& a, const TableSpec& b) { return a.name < b.name; });
  absl::Status s = WriteTableInfo(spec);
  if (s.ok()) s = SaveLocked(cat);
  if (!s.ok()) {
    table->state_ = Table::State::kDisabled;
    table->region()->Close().IgnoreError();
    table.reset();
    RemoveTree(TableDir(spec.name)).IgnoreError();
    return s;
  }
  absl::MutexLock l(&mu_);
  entries_[spec.name] = Entry{spec, std::move(table), {}, {}};
  return absl::OkStatus();
}

absl::Status TableManager::Disable(std::string_view name) {
  absl::MutexLock al(&admin_mu_);
  std::vector<TableSpec> cat = CatalogLocked();
  auto it = std::find_if(cat.begin(), cat.end(), [&](const TableSpec& s) { return s.name == name; });
  if (it == cat.end()) return NotFound(name);
  if (!it->enabled) return Disabled(name);
  it->enabled = false;
  BASALT_RETURN_IF_ERROR(SaveLocked(cat));
  std::shared_ptr<Table> table;
  {
    absl::MutexLock l(&mu_);
    Entry& e = entries_.find(name)->second;
    e.spec.enabled = false;
    e.open_error = absl::OkStatus();  // a FAILED_OPEN table has no region to close
    table = std::move(e.table);
    e.table = nullptr;
    e.closing = table;
  }
  if (table == nullptr) return absl::OkStatus();
  // Calls that already hold the table finish against the closed region: writes fail
  // (reported as "disabled"), reads of what is there still work.
  table->state_.store(Table::State::kDisabled, std::memory_order_release);
  // Scans blocked on a client that stopped reading end now, not at their deadline.
  table->RunCloseHooks();
  // The table is disabled whatever closing says: a region that had failed (a full disk) keeps
  // its unflushed writes in its log, which the next enable replays. Report, don't fail.
  if (absl::Status closed = table->region()->Close(); !closed.ok()) {
    Log(absl::StrCat("table '", AV(name), "' is disabled; closing its region reported: ", closed.ToString(),
                     " (writes it had not flushed stay in its log and are replayed when it is enabled)"));
  }
  return absl::OkStatus();
}

absl::Status TableManager::WaitForClosing(const Entry& e) const {
  // Bounded: a scan notices a disabled table at its next message.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!e.closing.expired()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::UnavailableError(
          absl::StrCat("table ", e.spec.name, " still has calls in flight from before it was disabled; retry"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return absl::OkStatus();
}

absl::StatusOr<TableManager::Entry> TableManager::DisabledEntry(std::string_view name,
                                                                std::string_view if_enabled) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return NotFound(name);
  if (it->second.spec.enabled) {
    return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " ", AV(if_enabled)));
  }
  return it->second;
}

absl::Status TableManager::Enable(std::string_view name) {
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(Entry e, DisabledEntry(name, "is already enabled"));
  BASALT_RETURN_IF_ERROR(WaitForClosing(e));
  TableSpec spec = e.spec;
  spec.enabled = true;
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, OpenTable(spec));
  std::vector<TableSpec> cat = CatalogLocked();
  for (TableSpec& s : cat) {
    if (s.name == name) s.enabled = true;
  }
  if (absl::Status s = SaveLocked(cat); !s.ok()) {
    table->state_ = Table::State::kDisabled;
    table->region()->Close().IgnoreError();
    return s;
  }
  absl::MutexLock l(&mu_);
  entries_[std::string(name)] = Entry{spec, std::move(table), {}, {}};
  return absl::OkStatus();
}

absl::Status TableManager::Drop(std::string_view name) {
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
  // Readers still holding the closed table keep their open files; wait briefly anyway so the
  // directory goes once nobody uses it. A leftover directory is moved aside at the next start.
  if (!WaitForClosing(e).ok()) return absl::OkStatus();
  if (absl::Status s = RemoveTree(TableDir(name)); !s.ok()) {
    std::cerr << "basalt-server: dropped table " << name << " but " << s.message()
              << "; it is moved to lost+found at the next start\n";
  }
  return absl::OkStatus();
}

absl::Status TableManager::Flush(std::string_view name) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Find(name));
  absl::Status s = t->region()->Flush();
  if (!s.ok() && t->closed()) return t->ClosedError();
  return s;
}

absl::Status TableManager::MajorCompact(std::string_view name) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Find(name));
  absl::Status s = t->region()->MajorCompact();
  if (!s.ok() && t->closed()) return t->ClosedError();
  return s;
}

absl::Status TableManager::Assign(std::string_view name) {
  absl::MutexLock al(&admin_mu_);
  TableSpec spec;
  {
    absl::ReaderMutexLock l(&mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return NotFound(name);
    if (!it->second.spec.enabled) return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " is disabled; enable it instead"));
    if (it->second.open_error.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " is open; assign reopens only a FAILED_OPEN table"));
    }
    spec = it->second.spec;
  }
  absl::StatusOr<std::shared_ptr<Table>> t = OpenTable(spec);
  absl::MutexLock l(&mu_);
  Entry& e = entries_.find(name)->second;
  if (!t.ok()) {
    e.open_error = t.status();
    Log(absl::StrCat("table '", AV(name), "' is still FAILED_OPEN: ", t.status().ToString()));
    return FailedOpen(name, e.open_error);
  }
  e.table = *std::move(t);
  e.open_error = absl::OkStatus();
  Log(absl::StrCat("table '", AV(name), "' is open again (assign)"));
  return absl::OkStatus();
}

absl::Status TableManager::OpenError(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? absl::OkStatus() : it->second.open_error;
}

absl::StatusOr<TableSpec> TableManager::Describe(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return NotFound(name);
  return it->second.spec;
}

std::vector<TableSpec> TableManager::List() const {
  std::vector<TableSpec> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [n, e] : entries_) out.push_back(e.spec);
  return out;
}

std::vector<TableManager::TableInfo> TableManager::Stats() const {
  std::vector<std::pair<TableInfo, std::shared_ptr<Table>>> tables;
  {
    absl::ReaderMutexLock l(&mu_);
    for (const auto& [n, e] : entries_) tables.emplace_back(TableInfo{e.spec, e.open_error, {}}, e.table);
  }
  std::vector<TableInfo> out;
  for (auto& [info, t] : tables) {
    if (t != nullptr) info.stats = t->region()->GetStats();
    out.push_back(std::move(info));
  }
  return out;
}

size_t TableManager::size() const {
  absl::ReaderMutexLock l(&mu_);
  return entries_.size();
}

absl::Status TableManager::CloseAll() {
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
    t->state_.store(Table::State::kStopping, std::memory_order_release);
    absl::Status s = t->region()->Close();
    if (!s.ok() && first.ok()) {
      first = absl::Status(s.code(), absl::StrCat("closing table ", t->name(), ": ", s.message()));
    }
  }
  return first;
}

}  // namespace basalt::server
