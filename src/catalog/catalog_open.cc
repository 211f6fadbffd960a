// Catalog at start-up: loading (or rebuilding) the catalogue, repairing what a crash left
// (lost+found, meta rows, TABLEINFO), and opening a table's regions.
#include "src/catalog/catalog.h"

#include <algorithm>
#include <set>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/status.h"
#include "src/schema/meta.h"
#include "src/schema/table_errors.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

absl::Status Catalog::WriteTableInfo(const TableSpec& spec) {
  TableSpec info = spec;
  info.enabled = true;  // the catalogue keeps the state; TABLEINFO only what the table is
  return options_.env->WriteFileDurably(absl::StrCat(TableDir(spec.name), "/", kTableInfoName), EncodeCatalog({info}));
}

absl::Status Catalog::MoveAside(std::string_view from, std::string_view as, std::string_view why) {
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

absl::Status Catalog::SetAsideUnlistedTable(std::string_view name) {
  if (options_.env->FileExists(absl::StrCat(TableDir(name), "/", kCloningMarker))) {
    // Its files are a snapshot's second names and nothing else: nothing of anyone's is lost.
    BASALT_RETURN_IF_ERROR(options_.env->RemoveTree(TableDir(name)));
    Log(absl::StrCat("removed table directory ", AV(name), ", a clone of a snapshot a crash cut short"));
    return absl::OkStatus();
  }
  // Left by a create or drop that a crash cut short (or a catalogue restored from an older
  // backup): the catalogue does not say it is obsolete, so it is kept.
  return MoveTableAside(name, "the catalogue does not list it");
}

absl::Status Catalog::MoveTableAside(std::string_view name, std::string_view why) {
  return MoveAside(name, name, why);
}

absl::StatusOr<std::vector<TableSpec>> Catalog::CatalogWhenMissing(const std::vector<std::string>& dirs,
                                                                    std::vector<NamespaceSpec>* namespaces) {
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
  // A namespace's settings are the catalogue's alone: each namespace a table is in comes back
  // without them.
  std::set<std::string> made;
  for (const TableSpec& t : specs) {
    if (const std::string_view ns = TableNamespace(t.name); ns != kDefaultNamespace && made.emplace(ns).second) {
      namespaces->push_back(NamespaceSpec{std::string(ns), {}});
    }
  }
  BASALT_RETURN_IF_ERROR(SaveCatalog(options_.env, options_.data_dir, specs, *namespaces));
  Log(absl::StrCat("rebuilt the catalogue ", path, " from the TABLEINFO of ", specs.size(), " table(s): ", names,
                   made.empty() ? "" : absl::StrCat("; ", made.size(), " namespace(s) made again without settings")));
  return specs;
}

absl::StatusOr<std::unique_ptr<Catalog>> Catalog::Open(const Options& options) {
  std::unique_ptr<Catalog> tm(new Catalog(options));
  Env* env = tm->options_.env;
  if (options.auto_split) {
    tm->options_.region.on_files_changed = [t = tm.get()](const std::string& region) {
      absl::MutexLock l(&t->housekeeping_mu_);
      t->split_checks_.insert(region);
    };
  }
  BASALT_RETURN_IF_ERROR(env->CreateDirs(options.data_dir + "/tables"));
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> dirs, env->ListDir(options.data_dir + "/tables"));
  std::vector<TableSpec> specs;
  std::vector<NamespaceSpec> namespaces;
  if (env->FileExists(absl::StrCat(options.data_dir, "/", kCatalogFileName))) {
    BASALT_ASSIGN_OR_RETURN(specs, LoadCatalog(env, options.data_dir, &namespaces));
  } else {
    BASALT_ASSIGN_OR_RETURN(specs, tm->CatalogWhenMissing(dirs, &namespaces));
  }
  BASALT_RETURN_IF_ERROR(tm->KeepNamespaces(std::move(namespaces), specs));
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
    if (!known.count(d)) BASALT_RETURN_IF_ERROR(tm->SetAsideUnlistedTable(d));
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
      // An enabled table's CLOSED rows are regions an operator unassigned (Enable records every
      // region OPEN before the catalogue says enabled, so no other CLOSED row is left in an
      // enabled table): the placement keeps them closed where it unassigns regions (a master's).
      if (s.enabled) {
        for (const RegionInfo& r : e.regions) {
          if (closed.count(r.EncodedName())) tm->placement_->KeepClosed(r);
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
    if (regions_ok.ok()) regions_ok = tm->FinishRestore(s.name, e.regions);
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
  BASALT_RETURN_IF_ERROR(tm->RemoveUnfinishedSnapshots());
  BASALT_RETURN_IF_ERROR(tm->OpenServerLog());
  for (const std::string& dir : tm->placement_->LogsToRecover()) BASALT_RETURN_IF_ERROR(tm->SplitDeadServerLogLocked(dir));
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
  tm->CountSnapshots();
  tm->housekeeping_ = std::thread([t = tm.get()] { t->HousekeepingLoop(); });
  return tm;
}

absl::StatusOr<std::vector<RegionInfo>> Catalog::RegionsWithoutMeta(const TableSpec& spec) {
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

absl::Status Catalog::MoveUnknownRegionsAside(std::string_view table, const std::vector<RegionInfo>& regions) {
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

absl::StatusOr<std::shared_ptr<Table>> Catalog::OpenTable(const TableSpec& spec,
                                                               const std::vector<RegionInfo>& regions,
                                                               const Table* reuse,
                                                               const std::vector<RegionInfo>* reopen,
                                                               std::string_view destination) {
  // Routing and scans rely on the regions covering every row once.
  BASALT_RETURN_IF_ERROR(CheckCoverage(spec.name, regions));
  std::vector<HostedRegion> hosted;
  absl::Status first_error;
  for (const RegionInfo& info : regions) {
    const bool fresh = reopen != nullptr && std::find(reopen->begin(), reopen->end(), info) != reopen->end();
    if (placement_->IsHeldClosed(info)) {
      // Served nowhere until assigned: calls on its rows are refused as not served.
      RegionDescriptor desc = DescriptorOf(spec, info);
      absl::Status closed = NotServingRegionError(
          info.EncodedName(), absl::StrCat("region ", info.Name(), " is closed (unassign); assign it to open it again"));
      hosted.push_back(HostedRegion{info, NewRefusingRegion(std::move(desc), closed, std::string())});
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
    std::string server;  // placed on a region server (a master's); empty: this one
    std::shared_ptr<RegionHandle> handle;
    absl::StatusOr<std::shared_ptr<Region>> region;
    absl::StatusOr<PlacedRegion> placed =
        placement_->Open(spec, info, desc, RegionDir(info), fresh ? destination : std::string_view());
    if (placed.ok()) {
      server = placed->server;
      handle = std::move(placed->handle);
      region = std::move(placed->region);
    } else {
      region = placed.status();
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
      hosted.back().handle = std::move(handle);
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
    for (HostedRegion& h : hosted) (h.handle != nullptr ? h.handle->Close() : h.region->Close()).IgnoreError();
    return first_error;
  }
  return std::make_shared<Table>(spec, std::move(hosted));
}

}  // namespace basalt::server
