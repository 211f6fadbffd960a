#include "src/server/tables.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/fault_point.h"
#include "common/log.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "src/server/meta.h"
#include "src/server/table_errors.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {
namespace {

constexpr char kTableInfoName[] = "TABLEINFO";

// Each region has its own background thread (flushes and compactions).
constexpr size_t kMaxRegionsAtCreate = 1000;
constexpr char kLostFoundDir[] = "lost+found";

// A region that refuses every call with one error: a region that could not open, in a table
// whose other regions serve (FAILED_OPEN), or, on a cluster's region server, the rows of a region
// served elsewhere (the null object keeps routing the same for every row).
class RefusingRegion final : public Region {
 public:
  RefusingRegion(RegionDescriptor desc, absl::Status error, std::string failed)
      : desc_(std::move(desc)), error_(std::move(error)), failed_(std::move(failed)) {}
  absl::Status Mutate(const std::vector<RowMutation>&, Durability, Nonce) override { return error_; }
  absl::Status Put(std::string_view, std::string_view, std::string_view, std::string_view, int64_t,
                   Durability) override {
    return error_;
  }
  absl::Status MutateRowWith(std::string_view, const ReadSpec&, const RowUpdateFn&, Durability, Nonce) override {
    return error_;
  }
  absl::StatusOr<std::vector<Cell>> Get(std::string_view, const ReadSpec&) override { return error_; }
  absl::Status Get(std::string_view, const ReadSpec&, RowResult*) override { return error_; }
  absl::StatusOr<std::unique_ptr<RegionScanner>> Scan(const ScanSpec&) override { return error_; }
  absl::Status Flush() override { return error_; }
  absl::Status CompactMinor() override { return error_; }
  absl::Status MajorCompact() override { return error_; }
  absl::StatusOr<std::string> SplitPoint() const override { return error_; }
  absl::Status Close() override { return absl::OkStatus(); }
  RegionStats GetStats() const override {
    RegionStats st;
    st.failed = failed_;
    return st;
  }
  const RegionDescriptor& descriptor() const override { return desc_; }
  int64_t Now() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

 private:
  const RegionDescriptor desc_;
  const absl::Status error_;
  const std::string failed_;
};

std::shared_ptr<Region> FailedRegion(const std::string& table, RegionDescriptor desc, const absl::Status& why) {
  absl::Status error = absl::FailedPreconditionError(absl::StrCat("region ", desc.name, " of table ", table,
                                                                  " is FAILED_OPEN (", why.message(),
                                                                  "); repair it, then assign '", table, "'"));
  return std::make_shared<RefusingRegion>(std::move(desc), std::move(error),
                                          absl::StrCat("FAILED_OPEN: ", why.ToString()));
}

// `s` with the region named, for a table of several regions (one region: as it is).
absl::Status InRegion(const RegionInfo& info, size_t regions, const absl::Status& s) {
  if (s.ok() || regions == 1) return s;
  return absl::Status(s.code(), absl::StrCat("region ", info.Name(), ": ", s.message()));
}

}  // namespace

Table::Table(TableSpec spec, std::vector<HostedRegion> regions, bool system)
    : spec_(std::move(spec)), regions_(std::move(regions)), system_(system) {
  for (HostedRegion& h : regions_) h.encoded_name = h.info.EncodedName();
}

Table::~Table() = default;

bool Table::HasFamily(std::string_view family) const {
  for (const FamilyOptions& f : spec_.families) {
    if (f.name == family) return true;
  }
  return false;
}

bool Table::has_failed_regions() const {
  for (const HostedRegion& h : regions_) {
    if (!h.open_error.ok()) return true;
  }
  return false;
}

const HostedRegion& Table::HostedFor(std::string_view row) const {
  // The last region starting at or before the row (the first starts at "").
  auto it = std::upper_bound(regions_.begin(), regions_.end(), row,
                             [](std::string_view r, const HostedRegion& h) { return r < h.info.start_key; });
  return it == regions_.begin() ? regions_.front() : *(it - 1);
}

namespace {
// A scan over several regions in row order: each region's scanner is opened once the one
// before it ends, and the row limit counts across them.
class TableScanner final : public RegionScanner {
 public:
  TableScanner(ScanSpec spec, std::vector<Region*> regions) : spec_(std::move(spec)), regions_(std::move(regions)) {}
  absl::StatusOr<bool> Next(RowResult* row) override {
    for (;;) {
      if (spec_.limit != 0 && rows_ >= spec_.limit) return false;
      if (current_ == nullptr) {
        if (next_ == regions_.size()) return false;
        ScanSpec spec = spec_;
        if (spec.limit != 0) spec.limit -= rows_;
        absl::StatusOr<std::unique_ptr<RegionScanner>> sc = regions_[next_++]->Scan(spec);
        if (!sc.ok()) return sc.status();
        current_ = *std::move(sc);
      }
      absl::StatusOr<bool> more = current_->Next(row);
      if (!more.ok()) return more.status();
      if (*more) {
        ++rows_;
        return true;
      }
      current_.reset();
    }
  }

 private:
  const ScanSpec spec_;
  const std::vector<Region*> regions_;
  size_t next_ = 0;
  uint64_t rows_ = 0;
  std::unique_ptr<RegionScanner> current_;
};
}  // namespace

absl::StatusOr<std::unique_ptr<RegionScanner>> Table::Scan(const ScanSpec& spec) const {
  if (regions_.size() == 1) return regions_[0].region->Scan(spec);
  std::vector<Region*> in_range;
  for (const HostedRegion& h : regions_) {
    // Forward [start, stop); reversed [stop, start] (start inclusive, stop exclusive).
    const std::string& low = spec.reversed ? spec.stop_row : spec.start_row;
    const std::string& high = spec.reversed ? spec.start_row : spec.stop_row;
    const bool ends_after_low = h.info.end_key.empty() || h.info.end_key > low;
    const bool starts_below_high = high.empty() || h.info.start_key < high || (spec.reversed && h.info.start_key == high);
    if (ends_after_low && starts_below_high) in_range.push_back(h.region.get());
  }
  if (spec.reversed) std::reverse(in_range.begin(), in_range.end());
  return std::unique_ptr<RegionScanner>(new TableScanner(spec, std::move(in_range)));
}

std::vector<std::pair<const HostedRegion*, std::vector<size_t>>> Table::GroupByRegion(
    const std::vector<RowMutation>& rows) const {
  std::vector<std::pair<const HostedRegion*, std::vector<size_t>>> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    const HostedRegion* h = &HostedFor(rows[i].row);
    auto it = std::find_if(groups.begin(), groups.end(), [h](const auto& g) { return g.first == h; });
    if (it == groups.end()) {
      groups.emplace_back(h, std::vector<size_t>{i});
    } else {
      it->second.push_back(i);
    }
  }
  return groups;
}

absl::Status Table::Mutate(const std::vector<RowMutation>& batch, Durability durability) const {
  if (regions_.size() == 1) return regions_[0].region->Mutate(batch, durability);
  for (const auto& [h, index] : GroupByRegion(batch)) {
    std::vector<RowMutation> part;
    part.reserve(index.size());
    for (size_t i : index) part.push_back(batch[i]);
    absl::Status s = h->region->Mutate(part, durability);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("region ", h->region->descriptor().name, ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status Table::ForEachRegion(const std::function<absl::Status(Region*)>& op) const {
  for (const HostedRegion& h : regions_) {
    if (h.placeholder) continue;
    if (absl::Status s = op(h.region.get()); !s.ok()) return InRegion(h.info, regions_.size(), s);
  }
  return absl::OkStatus();
}

absl::Status Table::CloseRegions() {
  absl::Status first;
  for (const HostedRegion& h : regions_) {
    if (h.placeholder) continue;
    absl::Status s = h.region->Close();
    if (first.ok()) first = InRegion(h.info, regions_.size(), s);
  }
  return first;
}

RegionStats Table::Stats() const {
  RegionStats sum;
  for (const HostedRegion& h : regions_) {
    if (h.placeholder) continue;
    RegionStats st = h.region->GetStats();
    sum.last_seq = std::max(sum.last_seq, st.last_seq);
    sum.flushed_seq = std::max(sum.flushed_seq, st.flushed_seq);
    sum.memstore_bytes += st.memstore_bytes;
    sum.flushes += st.flushes;
    sum.minor_compactions += st.minor_compactions;
    sum.major_compactions += st.major_compactions;
    sum.compactions_running += st.compactions_running;
    sum.compactions_queued += st.compactions_queued;
    sum.bloom_skips = std::max(sum.bloom_skips, st.bloom_skips);  // process-wide
    sum.compacted_bytes += st.compacted_bytes;
    sum.replayed_records += st.replayed_records;
    sum.replay_truncated_bytes += st.replay_truncated_bytes;
    sum.replay_skipped_records += st.replay_skipped_records;
    sum.replay_skipped_bytes += st.replay_skipped_bytes;
    if (sum.failed.empty() && !st.failed.empty()) {
      sum.failed = regions_.size() == 1 ? st.failed : absl::StrCat("region ", h.info.Name(), ": ", st.failed);
    }
    sum.wal_records += st.wal_records;
    sum.wal_syncs += st.wal_syncs;
    sum.wal_synced_records += st.wal_synced_records;
    sum.checksum_failures = std::max(sum.checksum_failures, st.checksum_failures);  // process-wide
    sum.blocked_writes += st.blocked_writes;
    for (const auto& [f, n] : st.files_per_family) sum.files_per_family[f] += n;
    sum.store_file_bytes += st.store_file_bytes;
    sum.largest_store_bytes = std::max(sum.largest_store_bytes, st.largest_store_bytes);
    sum.reference_files += st.reference_files;
    sum.read_requests += st.read_requests;
    sum.write_requests += st.write_requests;
  }
  return sum;
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
    log::Info(line);
  }
}

absl::Status TableManager::WriteTableInfo(const TableSpec& spec) {
  TableSpec info = spec;
  info.enabled = true;  // the catalogue keeps the state; TABLEINFO only what the table is
  return options_.env->WriteFileDurably(absl::StrCat(TableDir(spec.name), "/", kTableInfoName), EncodeCatalog({info}));
}

absl::Status TableManager::MoveAside(std::string_view from, std::string_view as, std::string_view why) {
  Env* env = options_.env;
  const std::string aside = absl::StrCat(options_.data_dir, "/", kLostFoundDir);
  BASALT_RETURN_IF_ERROR(env->CreateDirs(aside));
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string to = absl::StrCat(aside, "/", AV(as), ".", ms);
  for (int i = 1; env->FileExists(to); ++i) to = absl::StrCat(aside, "/", AV(as), ".", ms, ".", i);
  const std::string path = absl::StrCat(options_.data_dir, "/tables/", AV(from));
  BASALT_RETURN_IF_ERROR(env->ReplaceFile(path, to));
  BASALT_RETURN_IF_ERROR(env->SyncDir(path.substr(0, path.rfind('/'))));
  Log(absl::StrCat("moved directory ", path, " aside to ", to, " (", AV(why), "; nothing was deleted)"));
  return absl::OkStatus();
}

absl::Status TableManager::MoveTableAside(std::string_view name, std::string_view why) {
  return MoveAside(name, name, why);
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

ServerLog::Options TableManager::LogOptions(std::string dir) const {
  ServerLog::Options lo;
  lo.env = options_.env;
  lo.dir = std::move(dir);
  lo.roll_size = options_.wal_roll_size;
  lo.max_logs = options_.wal_max_logs;
  lo.recovery = options_.region.wal_recovery;
  lo.regions = RegionDirsLocked();
  lo.tables = TableNamesLocked();
  lo.table_of = &TableManager::TableOfRegion;
  lo.route = [this](std::string_view region, std::string_view row) { return RouteRecord(region, row); };
  lo.lost_found = absl::StrCat(options_.data_dir, "/", kLostFoundDir);
  lo.log = [this](std::string_view line) { Log(line); };
  return lo;
}

absl::Status TableManager::OpenServerLog() {
  ServerLog::Options lo = LogOptions(options_.log_dir.empty() ? options_.data_dir + "/wal" : options_.log_dir);
  absl::StatusOr<std::unique_ptr<ServerLog>> log = ServerLog::Open(lo);
  if (!log.ok()) {
    return absl::Status(log.status().code(),
                        absl::StrCat("opening the server log in ", lo.dir, ": ", log.status().message()));
  }
  log_ = *std::move(log);
  options_.region.server_log = log_.get();
  return absl::OkStatus();
}

absl::Status TableManager::SplitDeadServerLogLocked(const std::string& dir) {
  ServerLog::Options lo = LogOptions(dir);
  lo.drop_unknown_regions = true;
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

absl::StatusOr<size_t> TableManager::RecoverServer(const std::string& log_dir,
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
      if (!h.placeholder && was_there(h)) again.push_back(h.info);
    }
    if (!again.empty()) placed += ReopenLocked(e, again, /*destination=*/{}, "recover");
  }
  return placed;
}

size_t TableManager::ReopenLocked(const Entry& e, const std::vector<RegionInfo>& again, std::string_view destination,
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

absl::StatusOr<std::pair<TableManager::Entry, RegionInfo>> TableManager::RegionNamedLocked(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [t, e] : entries_) {
    for (const RegionInfo& r : e.regions) {
      if (r.id != 0 && (r.Name() == name || r.EncodedName() == name)) return std::make_pair(e, r);
    }
  }
  return absl::NotFoundError(absl::StrCat("no region ", AV(name)));
}

absl::Status TableManager::OnlyOnMaster(std::string_view what) const {
  if (options_.role == Role::kMaster) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      AV(what), ": ",
      options_.role == Role::kStandalone ? "a standalone server holds every region itself"
                                         : "a region server opens the regions the master places on it",
      "; placing regions is a cluster master's (basalt-master)"));
}

absl::Status TableManager::Move(std::string_view region, std::string_view destination) {
  BASALT_RETURN_IF_ERROR(OnlyOnMaster("move"));
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
    if (absl::Status closed = h.region->Close(); !closed.ok()) {
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

absl::Status TableManager::Unassign(std::string_view region) {
  BASALT_RETURN_IF_ERROR(OnlyOnMaster("unassign"));
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
    if (absl::Status closed = h.region->Close(); !closed.ok()) {
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

absl::Status TableManager::AssignRegion(std::string_view region) {
  BASALT_RETURN_IF_ERROR(OnlyOnMaster("assign"));
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

std::vector<HostedRegion> TableManager::OpenRegions() const {
  std::vector<HostedRegion> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    if (e.table == nullptr) continue;
    for (const HostedRegion& h : e.table->regions()) {
      if (!h.placeholder && !h.unassigned && h.open_error.ok()) out.push_back(h);
    }
  }
  return out;
}

std::vector<std::string> TableManager::TablesToAssign() const {
  std::vector<std::string> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    if (!e.spec.enabled) continue;
    if (!e.open_error.ok() || (e.table != nullptr && e.table->has_failed_regions())) out.push_back(name);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<TableManager>> TableManager::Open(const Options& options) {
  std::unique_ptr<TableManager> tm(new TableManager(options));
  Env* env = tm->options_.env;
  if (options.role == Role::kMaster && !options.placement) {
    return absl::InvalidArgumentError("a master's table manager needs a placement for its regions");
  }
  if (options.auto_split && (options.role != Role::kRegionServer || options.request_split)) {
    tm->options_.region.on_files_changed = [t = tm.get()](const std::string& region) {
      absl::MutexLock l(&t->housekeeping_mu_);
      t->split_checks_.insert(region);
    };
  }
  if (options.role == Role::kRegionServer) {
    // No catalogue, no meta: the master opens regions here. The log is this run's own.
    BASALT_RETURN_IF_ERROR(env->CreateDirs(options.data_dir + "/tables"));
    BASALT_RETURN_IF_ERROR(tm->OpenServerLog());
    tm->housekeeping_ = std::thread([t = tm.get()] { t->HousekeepingLoop(); });
    return tm;
  }
  BASALT_RETURN_IF_ERROR(env->CreateDirs(options.data_dir + "/tables"));
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> dirs, env->ListDir(options.data_dir + "/tables"));
  std::vector<TableSpec> specs;
  if (env->FileExists(absl::StrCat(options.data_dir, "/", kCatalogFileName))) {
    BASALT_ASSIGN_OR_RETURN(specs, LoadCatalog(env, options.data_dir));
  } else {
    BASALT_ASSIGN_OR_RETURN(specs, tm->CatalogWhenMissing(dirs));
  }
  // The system tables, each one region in data_dir/<dir>: basalt:meta first (it says which
  // regions each table has; nothing serves without it), then basalt:acl (the grants) and
  // basalt:quota (the quotas).
  auto open_system = [&](const char* name, const RegionDescriptor& desc,
                         const char* dir) -> absl::StatusOr<std::shared_ptr<Table>> {
    const std::string path = absl::StrCat(options.data_dir, "/", dir);
    absl::StatusOr<std::unique_ptr<Region>> region = Region::Open(tm->options_.region, desc, path);
    if (!region.ok()) {
      return absl::Status(region.status().code(),
                          absl::StrCat("opening ", name, " in ", path, ": ", region.status().message()));
    }
    TableSpec spec;
    spec.name = name;
    spec.families = desc.families;
    std::vector<HostedRegion> hosted;
    hosted.push_back(HostedRegion{RegionInfo{name, "", "", 1}, *std::move(region)});
    return std::make_shared<Table>(std::move(spec), std::move(hosted), /*system=*/true);
  };
  BASALT_ASSIGN_OR_RETURN(tm->meta_, open_system(kMetaTableName, MetaDescriptor(), "meta"));
  BASALT_ASSIGN_OR_RETURN(tm->acl_, open_system(kAclTableName, AclDescriptor(), "acl"));
  BASALT_ASSIGN_OR_RETURN(tm->quota_, open_system(kQuotaTableName, QuotaDescriptor(), "quota"));
  std::map<std::string, std::vector<RegionInfo>> retired;  // split parents
  std::set<std::string> closed;
  BASALT_ASSIGN_OR_RETURN(auto recorded, LoadMeta(tm->meta_->regions()[0].region.get(), &retired, &closed));
  std::set<std::string> known;
  for (const TableSpec& s : specs) known.insert(s.name);
  {
    // Rows of tables the catalogue does not list: a create a crash cut short before its commit,
    // or a drop after it.
    std::vector<RowMutation> stale;
    for (const auto& [table, parents] : retired) {
      if (known.count(table)) continue;
      for (const RegionInfo& r : parents) stale.push_back(MetaDelete(r));
    }
    for (const auto& [table, regions] : recorded) {
      if (known.count(table)) continue;
      for (const RegionInfo& r : regions) stale.push_back(MetaDelete(r));
      tm->Log(absl::StrCat("removed the ", regions.size(), " ", kMetaTableName, " row(s) of table '", table,
                           "', which the catalogue does not list"));
    }
    BASALT_RETURN_IF_ERROR(tm->WriteMeta(stale));
  }
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
    absl::Status regions_ok;
    if (auto it = recorded.find(s.name); it != recorded.end()) {
      e.regions = it->second;
      regions_ok = CheckCoverage(s.name, e.regions);
      // A master's enabled table keeps the regions an operator unassigned closed (Enable records
      // every region OPEN before the catalogue says enabled, so no other CLOSED row is left in
      // an enabled table).
      if (options.role == Role::kMaster && s.enabled) {
        for (const RegionInfo& r : e.regions) {
          if (closed.count(r.EncodedName())) e.unassigned.insert(r.EncodedName());
        }
      }
    } else {
      absl::StatusOr<std::vector<RegionInfo>> rebuilt = tm->RegionsWithoutMeta(s);
      if (rebuilt.ok()) {
        e.regions = *std::move(rebuilt);
        regions_ok = tm->RecordRegions(e.regions, s.enabled ? "OPEN" : "CLOSED");
        if (regions_ok.ok()) {
          tm->Log(absl::StrCat("recorded the ", e.regions.size(), " region(s) of table '", s.name, "' in ",
                               kMetaTableName, " (it had no rows there)"));
        }
      } else {
        regions_ok = rebuilt.status();
      }
    }
    if (auto it = retired.find(s.name); it != retired.end()) e.retired = it->second;
    for (const auto* list : {&e.regions, &e.retired}) {
      for (const RegionInfo& r : *list) tm->last_region_id_.store(std::max(tm->last_region_id_.load(), r.id));
    }
    if (regions_ok.ok()) regions_ok = tm->FinishSplits(s.name, e.regions);
    if (regions_ok.ok()) {
      std::vector<RegionInfo> named = e.regions;
      named.insert(named.end(), e.retired.begin(), e.retired.end());
      regions_ok = tm->MoveUnknownRegionsAside(s.name, named);
    }
    if (!regions_ok.ok()) {
      e.open_error = regions_ok;
      tm->Log(absl::StrCat("table '", s.name, "' is FAILED_OPEN: ", regions_ok.ToString()));
    }
    absl::MutexLock l(&tm->mu_);
    tm->entries_.emplace(s.name, std::move(e));
  }
  // The regions' shared log: what the previous run left goes to the regions it belongs to
  // before any of them opens; so do dead region servers' logs, in a master.
  BASALT_RETURN_IF_ERROR(tm->OpenServerLog());
  for (const std::string& dir : options.dead_server_logs) BASALT_RETURN_IF_ERROR(tm->SplitDeadServerLogLocked(dir));
  for (const TableSpec& s : specs) {
    Entry e;
    {
      absl::ReaderMutexLock l(&tm->mu_);
      e = tm->entries_.find(s.name)->second;
    }
    if (!e.open_error.ok() || !s.enabled) continue;
    absl::StatusOr<std::shared_ptr<Table>> t = tm->OpenTable(s, e.regions);
    absl::MutexLock l(&tm->mu_);
    Entry& stored = tm->entries_.find(s.name)->second;
    if (t.ok()) {
      stored.table = *std::move(t);
    } else {
      // This table alone is out of service; the others serve.
      stored.open_error = t.status();
      tm->Log(absl::StrCat("table '", s.name, "' is FAILED_OPEN: ", t.status().ToString()));
    }
  }
  for (const TableSpec& s : specs) {
    if (absl::Status c = tm->CleanSplitParentsLocked(s.name); !c.ok()) tm->Log(c.ToString());
  }
  tm->housekeeping_ = std::thread([t = tm.get()] { t->HousekeepingLoop(); });
  return tm;
}

std::map<std::string, std::string> TableManager::RegionDirsLocked() const {
  std::map<std::string, std::string> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    for (const RegionInfo& r : e.regions) out[RegionName(e.spec, r)] = RegionDir(r);
  }
  return out;
}

std::set<std::string> TableManager::TableNamesLocked() const {
  std::set<std::string> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) out.insert(name);
  return out;
}

void TableManager::RetryLogSplit(const TableSpec& spec, const std::vector<RegionInfo>& regions) {
  if (log_->split_error().ok()) return;  // nothing left to split
  std::map<std::string, std::string> dirs = RegionDirsLocked();
  for (const RegionInfo& r : regions) dirs[RegionName(spec, r)] = RegionDir(r);
  // Its failure keeps the regions it may hold records of closed, each saying why (MayOpen).
  log_->RetrySplit(dirs, TableNamesLocked()).IgnoreError();
}

std::string TableManager::TableOfRegion(std::string_view region) {
  return std::string(region.substr(0, region.find(',')));
}

uint64_t TableManager::NewRegionId() {
  const uint64_t now = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  uint64_t last = last_region_id_.load();
  uint64_t id;
  do {
    id = std::max(now, last + 1);
  } while (!last_region_id_.compare_exchange_weak(last, id));
  return id;
}

std::string TableManager::RegionDir(const RegionInfo& info) const {
  if (info.id == 0) return TableDir(info.table);  // a table from before regions
  return absl::StrCat(TableDir(info.table), "/", info.EncodedName());
}

absl::Status TableManager::WriteMeta(const std::vector<RowMutation>& rows) {
  if (rows.empty()) return absl::OkStatus();
  absl::Status s = meta_->regions()[0].region->Mutate(rows, Durability::kSyncWal);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("writing ", kMetaTableName, ": ", s.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RegionInfo>> TableManager::CurrentRegions(const TableSpec& spec) {
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, MetaRegionsOf(spec.name));
  if (!regions.empty()) return regions;
  BASALT_ASSIGN_OR_RETURN(regions, RegionsWithoutMeta(spec));
  BASALT_RETURN_IF_ERROR(RecordRegions(regions, spec.enabled ? "OPEN" : "CLOSED"));
  return regions;
}

absl::StatusOr<std::vector<RegionInfo>> TableManager::MetaRegionsOf(std::string_view table) {
  BASALT_ASSIGN_OR_RETURN(auto all, LoadMeta(meta_->regions()[0].region.get()));
  auto it = all.find(std::string(table));
  return it == all.end() ? std::vector<RegionInfo>{} : it->second;
}

absl::Status TableManager::RecordRegions(const std::vector<RegionInfo>& regions, std::string_view state,
                                         const Table* table) {
  std::vector<RowMutation> rows;
  for (const RegionInfo& r : regions) rows.push_back(MetaPut(r, state, ServerOf(table, r)));
  return WriteMeta(rows);
}

std::string TableManager::ServerOf(const Table* table, const RegionInfo& r) const {
  if (table != nullptr) {
    for (const HostedRegion& h : table->regions()) {
      if (h.info == r && !h.placeholder && h.open_error.ok() && !h.server.empty()) return h.server;
    }
  }
  return CommitServer();  // a master's region that is not open serves nowhere
}

absl::StatusOr<std::vector<RegionInfo>> TableManager::RegionsWithoutMeta(const TableSpec& spec) {
  Env* env = options_.env;
  const std::string dir = TableDir(spec.name);
  if (env->FileExists(dir + "/MANIFEST") || env->FileExists(dir + "/wal")) {
    return std::vector<RegionInfo>{RegionInfo{spec.name, "", "", 0}};  // a table from before regions
  }
  std::vector<RegionInfo> found;
  if (env->FileExists(dir)) {
    BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
    for (const std::string& n : names) {
      const std::string path = absl::StrCat(dir, "/", n, "/", kRegionInfoFileName);
      if (!env->FileExists(path)) {
        if (env->FileExists(absl::StrCat(dir, "/", n, "/MANIFEST"))) {
          // A region's data without its REGIONINFO: a new empty region would hide it.
          return absl::FailedPreconditionError(absl::StrCat(
              kMetaTableName, " has no rows for table '", spec.name, "' and its region directory ", dir, "/", n,
              " has no ", kRegionInfoFileName, "; nothing was changed. Restore ", kMetaTableName, " or the file"));
        }
        continue;
      }
      BASALT_ASSIGN_OR_RETURN(std::string bytes, env->ReadFileToString(path));
      BASALT_ASSIGN_OR_RETURN(RegionInfo info, DecodeRegionInfo(bytes, path));
      if (info.table != spec.name || info.EncodedName() != n) {
        return absl::DataLossError(absl::StrCat(path, " does not describe a region of table '", spec.name,
                                                "' in directory ", n, "; nothing was changed"));
      }
      found.push_back(std::move(info));
    }
  }
  if (found.empty()) return std::vector<RegionInfo>{RegionInfo{spec.name, "", "", NewRegionId()}};
  std::sort(found.begin(), found.end(),
            [](const RegionInfo& a, const RegionInfo& b) { return a.start_key < b.start_key; });
  absl::Status cover = CheckCoverage(spec.name, found);
  if (!cover.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(kMetaTableName, " has no rows for table '", spec.name,
                                                      "' and its REGIONINFO files do not make a whole table: ",
                                                      cover.message(), "; nothing was changed"));
  }
  return found;
}

absl::Status TableManager::MoveUnknownRegionsAside(std::string_view table, const std::vector<RegionInfo>& regions) {
  Env* env = options_.env;
  const std::string dir = TableDir(table);
  if (!env->FileExists(dir)) return absl::OkStatus();
  std::set<std::string> named;
  for (const RegionInfo& r : regions) named.insert(r.EncodedName());
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  for (const std::string& n : names) {
    if (named.count(n) || !env->FileExists(absl::StrCat(dir, "/", n, "/", kRegionInfoFileName))) continue;
    BASALT_RETURN_IF_ERROR(MoveAside(absl::StrCat(AV(table), "/", n), absl::StrCat(AV(table), ".", n),
                                     absl::StrCat("a region directory ", kMetaTableName, " does not name")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Table>> TableManager::OpenTable(const TableSpec& spec,
                                                               const std::vector<RegionInfo>& regions,
                                                               const Table* reuse,
                                                               const std::vector<RegionInfo>* reopen,
                                                               std::string_view destination) {
  // Routing and scans rely on the regions covering every row once.
  BASALT_RETURN_IF_ERROR(CheckCoverage(spec.name, regions));
  std::set<std::string> unassigned;
  {
    absl::ReaderMutexLock l(&mu_);
    if (auto it = entries_.find(spec.name); it != entries_.end()) unassigned = it->second.unassigned;
  }
  std::vector<HostedRegion> hosted;
  absl::Status first_error;
  for (const RegionInfo& info : regions) {
    const bool fresh = reopen != nullptr && std::find(reopen->begin(), reopen->end(), info) != reopen->end();
    if (unassigned.count(info.EncodedName())) {
      // Served nowhere until assigned: calls on its rows are refused as not served.
      RegionDescriptor desc = DescriptorOf(spec, info);
      absl::Status closed = NotServingRegionError(
          info.EncodedName(), absl::StrCat("region ", info.Name(), " is closed (unassign); assign it to open it again"));
      hosted.push_back(HostedRegion{info, std::make_shared<RefusingRegion>(std::move(desc), closed, std::string())});
      hosted.back().unassigned = true;
      continue;
    }
    if (reuse != nullptr && !fresh) {
      auto it = std::find_if(reuse->regions().begin(), reuse->regions().end(),
                             [&](const HostedRegion& h) { return h.info == info && h.open_error.ok(); });
      if (it != reuse->regions().end()) {
        hosted.push_back(*it);
        continue;
      }
    }
    RegionDescriptor desc = DescriptorOf(spec, info);
    if (spec.queue) desc.compaction_filter = options_.queue_compaction_filter;
    std::string server;  // placed on a region server (a master's); else this one
    absl::StatusOr<std::shared_ptr<Region>> region;
    if (options_.role == Role::kMaster) {
      absl::StatusOr<PlacedRegion> placed = options_.placement(spec, info, fresh ? destination : std::string_view());
      if (placed.ok()) {
        server = placed->server;
        region = std::move(placed->region);
      } else {
        region = placed.status();
      }
    } else {
      region = Region::Open(options_.region, desc, RegionDir(info));
    }
    if (region.ok() && info.id != 0) {
      // Every region directory says what it is (meta can be rebuilt from it), also one made at
      // start-up or one whose create a crash cut short before this file was written.
      const std::string path = absl::StrCat(RegionDir(info), "/", kRegionInfoFileName);
      if (!options_.env->FileExists(path)) {
        if (absl::Status w = options_.env->WriteFileDurably(path, EncodeRegionInfo(info)); !w.ok()) region = w;
      }
    }
    if (region.ok()) {
      hosted.push_back(HostedRegion{info, *std::move(region), {}, {}, server});
      continue;
    }
    if (first_error.ok()) first_error = InRegion(info, regions.size(), region.status());
    if (regions.size() > 1) {
      Log(absl::StrCat("region ", info.Name(), " of table '", spec.name, "' is FAILED_OPEN (the table's other regions ",
                       "serve): ", region.status().ToString()));
    }
    hosted.push_back(HostedRegion{info, FailedRegion(spec.name, desc, region.status()), region.status()});
  }
  const bool any_open = std::any_of(hosted.begin(), hosted.end(), [](const HostedRegion& h) { return h.open_error.ok(); });
  // (An unassigned region counts as open here: the table is as the operator left it.)
  if (!any_open) {
    for (HostedRegion& h : hosted) h.region->Close().IgnoreError();
    return first_error;
  }
  return std::make_shared<Table>(spec, std::move(hosted));
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
  if (std::shared_ptr<Table> t = SystemTable(name); t != nullptr) return t;
  auto it = entries_.find(name);
  if (it == entries_.end()) return NotFound(name);
  if (!it->second.open_error.ok()) return FailedOpen(name, it->second.open_error);
  if (it->second.table == nullptr) return Disabled(name);
  return it->second.table;
}

absl::Status TableManager::Create(const TableSpec& spec_in, const std::vector<std::string>& split_keys) {
  BASALT_RETURN_IF_ERROR(NotOnRegionServer("create"));
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
  {
    absl::ReaderMutexLock l(&mu_);
    if (entries_.count(spec.name)) {
      return absl::AlreadyExistsError(absl::StrCat("table '", spec.name, "' already exists"));
    }
  }
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, RegionsFromSplitKeys(spec.name, split_keys, NewRegionId()));
  // A directory without a catalogue entry is a leftover: kept aside, and the table starts clean.
  if (options_.env->FileExists(TableDir(spec.name))) {
    BASALT_RETURN_IF_ERROR(MoveTableAside(spec.name, "the catalogue does not list it and a new table takes its name"));
  }
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, OpenTable(spec, regions));  // writes each REGIONINFO
  // The meta rows, then the catalogue: the commit (see the top of tables.h). Rows an earlier
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
  entries_[spec.name] = Entry{spec, regions, std::move(table), {}, {}, {}, {}, {}, {}};
  return absl::OkStatus();
}

absl::Status TableManager::Disable(std::string_view name) {
  BASALT_RETURN_IF_ERROR(NotOnRegionServer("disable"));
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

absl::Status TableManager::WaitForClosing(const Entry& e) const {
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
  BASALT_RETURN_IF_ERROR(NotOnRegionServer("enable"));
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(Entry e, DisabledEntry(name, "is already enabled"));
  BASALT_RETURN_IF_ERROR(WaitForClosing(e));
  TableSpec spec = e.spec;
  spec.enabled = true;
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, CurrentRegions(spec));
  RetryLogSplit(spec, regions);
  {
    absl::MutexLock l(&mu_);
    entries_.find(name)->second.unassigned.clear();  // enable_table opens every region (HBase's)
  }
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
  entries_[std::string(name)] = Entry{spec, regions, std::move(table), {}, {}, {}, {}, {}, {}};
  return absl::OkStatus();
}

absl::Status TableManager::Drop(std::string_view name) {
  BASALT_RETURN_IF_ERROR(NotOnRegionServer("drop"));
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
  return absl::OkStatus();
}

absl::Status TableManager::Flush(std::string_view name) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Find(name));
  absl::Status s = t->ForEachRegion([](Region* r) { return r->Flush(); });
  if (!s.ok() && t->closed()) return t->ClosedError();
  return s;
}

absl::Status TableManager::MajorCompact(std::string_view name) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Find(name));
  absl::Status s = t->ForEachRegion([](Region* r) { return r->MajorCompact(); });
  if (!s.ok() && t->closed()) return t->ClosedError();
  // The daughters of a split no longer read their parents' files: the parents can go.
  if (s.ok() && !t->system()) {
    if (absl::Status c = CleanSplitParents(name); !c.ok()) Log(c.ToString());
  }
  return s;
}

void TableManager::HousekeepingLoop() {
  const absl::Duration every = options_.janitor_interval_ms > 0 ? absl::Milliseconds(options_.janitor_interval_ms)
                                                                : absl::InfiniteDuration();
  absl::Time next_clean = absl::Now() + every;
  absl::MutexLock l(&housekeeping_mu_);
  while (!housekeeping_stop_) {
    housekeeping_mu_.AwaitWithDeadline(absl::Condition(+[](TableManager* t) ABSL_NO_THREAD_SAFETY_ANALYSIS {
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
    }
    housekeeping_mu_.Lock();
  }
}

absl::Status TableManager::Assign(std::string_view name) {
  BASALT_RETURN_IF_ERROR(NotOnRegionServer("assign"));
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

absl::Status TableManager::OpenError(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? absl::OkStatus() : it->second.open_error;
}

std::shared_ptr<Table> TableManager::SystemTable(std::string_view name) const {
  if (name == kMetaTableName) return meta_;
  if (name == kAclTableName) return acl_;
  if (name == kQuotaTableName) return quota_;
  return nullptr;
}

absl::StatusOr<TableSpec> TableManager::Describe(std::string_view name) const {
  if (std::shared_ptr<Table> t = SystemTable(name); t != nullptr) return t->spec();
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
    for (const auto& [n, e] : entries_) tables.emplace_back(TableInfo{e.spec, e.open_error, {}, e.regions.size()}, e.table);
  }
  std::vector<TableInfo> out;
  for (auto& [info, t] : tables) {
    if (t != nullptr) info.stats = t->Stats();
    out.push_back(std::move(info));
  }
  return out;
}

size_t TableManager::size() const {
  absl::ReaderMutexLock l(&mu_);
  return entries_.size();
}

absl::Status TableManager::CloseAll() {
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
    t->state_.store(Table::State::kStopping, std::memory_order_release);
    // A master stopping leaves its regions open on their servers: the next master finds them there.
    if (options_.role == Role::kMaster) continue;
    absl::Status s = t->CloseRegions();
    if (!s.ok() && first.ok()) {
      first = absl::Status(s.code(), absl::StrCat("closing table ", t->name(), ": ", s.message()));
    }
  }
  // The system tables last: the tables' closes may still have written to meta.
  for (const std::shared_ptr<Table>& system : {quota_, acl_, meta_}) {
    if (system == nullptr) continue;
    system->state_.store(Table::State::kStopping, std::memory_order_release);
    absl::Status s = system->CloseRegions();
    if (!s.ok() && first.ok()) first = absl::Status(s.code(), absl::StrCat("closing ", system->name(), ": ", s.message()));
  }
  return first;
}

absl::StatusOr<std::vector<TableManager::RegionStatus>> TableManager::Regions(std::string_view name) const {
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
      out[i].stats = table->regions()[i].region->GetStats();
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

std::string TableManager::ServerName() const {
  absl::ReaderMutexLock l(&mu_);
  return server_name_;
}

size_t TableManager::RegionCount(std::string_view name) const {
  if (IsSystemTable(name)) return 1;
  absl::ReaderMutexLock l(&mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? 0 : it->second.regions.size();
}

absl::Status TableManager::SetServerName(std::string_view name) {
  absl::MutexLock al(&admin_mu_);  // no create or drop changes the rows meanwhile
  if (options_.role == Role::kRegionServer) {
    absl::MutexLock l(&mu_);
    server_name_.assign(name);
    return absl::OkStatus();
  }
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

const char* TableManager::MetaStateOf(const Entry& e, const RegionInfo& r) {
  if (!e.spec.enabled || e.unassigned.count(r.EncodedName())) return kClosedState;
  return e.open_error.ok() ? "OPEN" : "FAILED_OPEN";
}

absl::Status TableManager::NotOnRegionServer(std::string_view what) const {
  if (options_.role != Role::kRegionServer) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "this is a region server of a cluster: ", AV(what), " is the master's (connect through ZooKeeper)"));
}

std::shared_ptr<Table> TableManager::HostTable(const TableSpec& spec, std::vector<HostedRegion> open) {
  std::sort(open.begin(), open.end(),
            [](const HostedRegion& a, const HostedRegion& b) { return a.info.start_key < b.info.start_key; });
  std::vector<HostedRegion> all;
  // The rows from `from` to `to` (empty: the end) are another server's.
  auto gap = [&](const std::string& from, const std::string& to) {
    RegionDescriptor desc = DescriptorOf(spec, RegionInfo{spec.name, from, to, 0});
    desc.name = absl::StrCat(spec.name, " rows [", ToStringBinary(from), ", ", to.empty() ? "end" : ToStringBinary(to), ")");
    absl::Status error = absl::UnavailableError(absl::StrCat("table ", spec.name, ": the region of rows from '",
                                                             ToStringBinary(from), "' is not served here; locate it in ",
                                                             kMetaTableName));
    HostedRegion h{RegionInfo{spec.name, from, to, 0}, std::make_shared<RefusingRegion>(desc, std::move(error), "")};
    h.placeholder = true;
    all.push_back(std::move(h));
  };
  std::string at;
  bool to_end = false;
  for (HostedRegion& h : open) {
    if (h.info.start_key != at) gap(at, h.info.start_key);
    at = h.info.end_key;
    all.push_back(std::move(h));
    if (at.empty()) {
      to_end = true;
      break;
    }
  }
  if (!to_end) gap(at, "");
  return std::make_shared<Table>(spec, std::move(all));
}

absl::Status TableManager::OpenRegion(const TableSpec& spec, const RegionInfo& info) {
  if (options_.role != Role::kRegionServer) {
    return absl::FailedPreconditionError("OpenRegion is for a cluster's region server; this server is standalone");
  }
  absl::MutexLock al(&admin_mu_);
  std::shared_ptr<Table> old;
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    if (auto it = entries_.find(spec.name); it != entries_.end()) old = it->second.table;
  }
  std::vector<HostedRegion> open;
  if (old != nullptr) {
    for (const HostedRegion& h : old->regions()) {
      if (h.placeholder) continue;
      if (h.info == info) {
        return absl::AlreadyExistsError(absl::StrCat("region ", info.Name(), " is open here already"));
      }
      const bool overlaps = (info.end_key.empty() || h.info.start_key < info.end_key) &&
                            (h.info.end_key.empty() || info.start_key < h.info.end_key);
      if (overlaps) {
        return absl::FailedPreconditionError(absl::StrCat("region ", info.Name(), " overlaps region ",
                                                          h.info.Name(), ", open here; close that one first"));
      }
      open.push_back(h);
    }
  }
  const auto started = std::chrono::steady_clock::now();
  RegionDescriptor desc = DescriptorOf(spec, info);
  if (spec.queue) desc.compaction_filter = options_.queue_compaction_filter;
  absl::StatusOr<std::unique_ptr<Region>> region = Region::Open(options_.region, std::move(desc), RegionDir(info));
  if (!region.ok()) {
    return absl::Status(region.status().code(),
                        absl::StrCat("opening region ", info.Name(), ": ", region.status().message()));
  }
  const RegionStats st = (*region)->GetStats();
  open.push_back(HostedRegion{info, *std::move(region)});
  InstallHosted(spec, std::move(open));
  if (old != nullptr) old->superseded_.store(true, std::memory_order_release);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  Log(absl::StrCat("opened region ", info.Name(), " in ", ms.count(), " ms (", st.replayed_records,
                   " log records replayed)"));
  return absl::OkStatus();
}

absl::Status TableManager::CloseRegion(std::string_view encoded_name) {
  if (options_.role != Role::kRegionServer) {
    return absl::FailedPreconditionError("CloseRegion is for a cluster's region server; this server is standalone");
  }
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> old, TableHolding(encoded_name));
  std::vector<HostedRegion> open;
  std::shared_ptr<Region> closing;
  RegionInfo info;
  for (const HostedRegion& h : old->regions()) {
    if (h.placeholder) continue;
    if (h.encoded_name == encoded_name) {
      closing = h.region;
      info = h.info;
    } else {
      open.push_back(h);
    }
  }
  InstallHosted(old->spec(), std::move(open));
  // Calls that meet the closed region are refused as not served here (Translate), and located again.
  old->superseded_.store(true, std::memory_order_release);
  absl::Status closed = closing->Close();
  if (!closed.ok()) {
    const absl::Status why(closed.code(), absl::StrCat("closed region ", info.Name(), " but its flush failed (",
                                                       closed.message(), "): what it had not flushed is only in this ",
                                                       "server's log, which the master splits once the server is gone"));
    Log(std::string(why.message()));
    if (options_.abort) options_.abort(why);
    return why;
  }
  Log(absl::StrCat("closed region ", info.Name()));
  return absl::OkStatus();
}

void TableManager::InstallHosted(const TableSpec& spec, std::vector<HostedRegion> open) {
  if (open.empty()) {
    absl::MutexLock l(&mu_);
    entries_.erase(spec.name);
    return;
  }
  Entry e;
  e.spec = spec;
  e.table = HostTable(spec, std::move(open));
  for (const HostedRegion& h : e.table->regions()) {
    if (!h.placeholder) e.regions.push_back(h.info);
  }
  absl::MutexLock l(&mu_);
  entries_[spec.name] = std::move(e);
}

absl::StatusOr<std::shared_ptr<Table>> TableManager::TableHolding(std::string_view encoded_name) const {
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    if (e.table == nullptr) continue;
    for (const HostedRegion& h : e.table->regions()) {
      if (!h.placeholder && h.encoded_name == encoded_name) return e.table;
    }
  }
  return absl::NotFoundError(absl::StrCat("region ", AV(encoded_name), " is not open here"));
}

absl::StatusOr<std::shared_ptr<Region>> TableManager::HostedRegionNamed(std::string_view encoded_name) const {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, TableHolding(encoded_name));
  for (const HostedRegion& h : t->regions()) {
    if (!h.placeholder && h.encoded_name == encoded_name) return h.region;
  }
  return absl::NotFoundError(absl::StrCat("region ", AV(encoded_name), " is not open here"));
}

std::vector<std::pair<TableSpec, RegionInfo>> TableManager::HostedRegions() const {
  std::vector<std::pair<TableSpec, RegionInfo>> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    for (const RegionInfo& r : e.regions) out.emplace_back(e.spec, r);
  }
  return out;
}

}  // namespace basalt::server
