// Catalog's snapshots (docs/DESIGN.md §16): taken region by region into data_dir/snapshots/<name>/,
// listed with the bytes only each holds, deleted; and at start-up, those a crash cut short removed.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/env.h"
#include "common/fault_point.h"
#include "common/status.h"
#include "src/catalog/catalog.h"
#include "src/schema/meta.h"
#include "storage/region.h"
#include "src/schema/table_errors.h"

namespace basalt::server {

std::string Catalog::SnapshotsDir() const { return SnapshotsDirIn(options_.data_dir); }

std::string Catalog::SnapshotDir(std::string_view name) const { return SnapshotDirIn(options_.data_dir, name); }

absl::StatusOr<SnapshotInfo> Catalog::Snapshot(std::string_view table, std::string_view name,
                                               const SnapshotOptions& options) {
  const int64_t ttl_s = options.ttl_s;
  BASALT_RETURN_IF_ERROR(ValidateSnapshotName(name));
  if (ttl_s < 0) return absl::InvalidArgumentError(absl::StrCat("snapshot ", AV(name), ": a TTL of ", ttl_s, " s"));
  // Held against a split, a merge, a drop or a move of the table's regions meanwhile.
  absl::MutexLock al(&admin_mu_);
  Entry e;
  {
    absl::ReaderMutexLock l(&mu_);
    auto it = entries_.find(table);
    if (it == entries_.end()) return NotFound(table);
    e = it->second;
  }
  if (!e.open_error.ok()) return FailedOpen(e.spec.name, e.open_error);
  // A disabled table's regions are closed, every write flushed: their directories are named as
  // they are (HBase's offline snapshot).
  const bool offline = e.table == nullptr;
  if (offline) BASALT_RETURN_IF_ERROR(WaitForClosing(e));
  Env* env = options_.env;
  const std::string dir = SnapshotDir(name);
  {
    absl::MutexLock sl(&snapshots_mu_);
    if (env->FileExists(dir)) return absl::AlreadyExistsError(absl::StrCat("snapshot '", AV(name), "' exists"));
    BASALT_RETURN_IF_ERROR(env->CreateDirs(dir));
  }
  SnapshotInfo info;
  info.name = std::string(name);
  info.created_ms = absl::ToUnixMillis(absl::Now());
  info.ttl_s = ttl_s;
  info.owner = options.owner;
  info.grants = options.grants;
  info.table = e.spec;
  auto taken = [&]() -> absl::Status {
    for (const RegionInfo& r : offline ? e.regions : std::vector<RegionInfo>{}) {
      BASALT_ASSIGN_OR_RETURN(LinkedFiles files, LinkRegion(env, RegionDir(r), absl::StrCat(dir, "/", r.EncodedName())));
      info.regions.push_back({r, files.files, files.bytes});
    }
    for (const HostedRegion& h : offline ? std::vector<HostedRegion>{} : e.table->regions()) {
      if (h.unassigned || !h.open_error.ok()) {
        return absl::FailedPreconditionError(absl::StrCat("snapshot ", AV(name), ": region ", h.info.Name(),
                                                          " is not open (", h.unassigned ? "unassigned" : "FAILED_OPEN",
                                                          "): assign it first"));
      }
      BASALT_ASSIGN_OR_RETURN(Region::SnapshotFiles files,
                              h.handle->Snapshot(absl::StrCat(dir, "/", h.info.EncodedName())));
      info.regions.push_back({h.info, files.files, files.bytes});
    }
    FaultPoint("snapshot:regions-linked");
    return env->WriteFileDurably(absl::StrCat(dir, "/", kSnapshotFileName), EncodeSnapshot(info));
  };
  if (absl::Status s = taken(); !s.ok()) {
    absl::MutexLock sl(&snapshots_mu_);
    env->RemoveTree(dir).IgnoreError();  // its names go; the table's stay
    return absl::Status(s.code(), absl::StrCat("snapshot ", AV(name), " of table ", e.spec.name, ": ", s.message()));
  }
  Log(absl::StrCat("snapshot ", AV(name), " of table '", e.spec.name, "': ", info.regions.size(), " region(s), ",
                   info.files(), " file(s), ", info.bytes(), " bytes named (none copied)"));
  {
    // Counted as it is, not by listing every snapshot again: its files are all the table's
    // too, so it holds no byte of its own, and no other snapshot's share changes.
    absl::MutexLock l(&totals_mu_);
    ++snapshot_totals_.snapshots;
    snapshot_totals_.bytes += info.bytes();
  }
  return info;
}

absl::StatusOr<std::vector<SnapshotInfo>> Catalog::ReadSnapshotsLocked() const {
  Env* env = options_.env;
  std::vector<SnapshotInfo> out;
  if (!env->FileExists(SnapshotsDir())) return out;
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(SnapshotsDir()));
  for (const std::string& name : names) {
    absl::StatusOr<SnapshotInfo> info = ReadSnapshotIn(env, options_.data_dir, name);
    if (info.status().code() == absl::StatusCode::kNotFound) continue;  // being taken, or cut short (removed at start-up)
    BASALT_RETURN_IF_ERROR(info.status());
    out.push_back(*std::move(info));
  }
  return out;
}

absl::StatusOr<SnapshotInfo> Catalog::ReadSnapshotLocked(std::string_view name) const {
  BASALT_RETURN_IF_ERROR(ValidateSnapshotName(name));
  BASALT_ASSIGN_OR_RETURN(SnapshotInfo info, ReadSnapshotIn(options_.env, options_.data_dir, name));
  std::sort(info.regions.begin(), info.regions.end(),
            [](const SnapshotInfo::Region& a, const SnapshotInfo::Region& b) { return a.info.start_key < b.info.start_key; });
  return info;
}

absl::StatusOr<SnapshotInfo> Catalog::ReadSnapshot(std::string_view name) const {
  absl::ReaderMutexLock sl(&snapshots_mu_);
  return ReadSnapshotLocked(name);
}

absl::StatusOr<std::vector<RegionInfo>> Catalog::SnapshotRegionsAs(const SnapshotInfo& info, std::string_view table) {
  std::vector<std::string> split_keys;
  for (size_t i = 1; i < info.regions.size(); ++i) split_keys.push_back(info.regions[i].info.start_key);
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, RegionsFromSplitKeys(table, split_keys, NewRegionId()));
  if (regions.size() != info.regions.size() || !info.regions.back().info.end_key.empty()) {
    return absl::DataLossError(absl::StrCat("snapshot ", info.name, ": its ", info.regions.size(),
                                            " regions do not cover every row once"));
  }
  return regions;
}

absl::Status Catalog::LinkSnapshotRegions(const SnapshotInfo& info, const std::vector<RegionInfo>& regions,
                                          const std::string& under) {
  Env* env = options_.env;
  for (size_t i = 0; i < regions.size(); ++i) {
    const std::string from = absl::StrCat(SnapshotDir(info.name), "/", info.regions[i].info.EncodedName());
    const std::string to = absl::StrCat(under, "/", regions[i].EncodedName());
    BASALT_RETURN_IF_ERROR(LinkRegion(env, from, to).status());
    BASALT_RETURN_IF_ERROR(
        env->WriteFileDurably(absl::StrCat(to, "/", kRegionInfoFileName), EncodeRegionInfo(regions[i])));
  }
  return env->SyncDir(under);
}

absl::Status Catalog::CloneSnapshot(std::string_view snapshot, std::string_view table) {
  absl::MutexLock al(&admin_mu_);
  absl::ReaderMutexLock sl(&snapshots_mu_);  // not deleted while its files are named again
  BASALT_ASSIGN_OR_RETURN(SnapshotInfo info, ReadSnapshotLocked(snapshot));
  return CloneLocked(info, table);
}

absl::Status Catalog::CloneLocked(const SnapshotInfo& info, std::string_view table) {
  TableSpec spec = info.table;
  spec.name = std::string(table);
  spec.enabled = true;
  BASALT_RETURN_IF_ERROR(ValidateTableSpec(spec));
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, SnapshotRegionsAs(info, table));
  // The marker first: a crash before the commit leaves a directory start-up removes, not one
  // it keeps aside (which would hold the snapshot's files for good).
  const std::string marker = absl::StrCat(TableDir(table), "/", kCloningMarker);
  absl::Status s = CreateLocked(spec, regions, [&]() -> absl::Status {
    BASALT_RETURN_IF_ERROR(options_.env->CreateDirs(TableDir(table)));
    BASALT_RETURN_IF_ERROR(options_.env->WriteFileDurably(marker, info.name));
    snapshots_mu_.AssertReaderHeld();  // the analysis does not follow the lock into a lambda
    BASALT_RETURN_IF_ERROR(LinkSnapshotRegions(info, regions, TableDir(table)));
    FaultPoint("clone:linked");
    return absl::OkStatus();
  });
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("clone of snapshot ", info.name, " as table ", AV(table), ": ", s.message()));
  if (absl::Status m = options_.env->DeleteFile(marker); !m.ok()) Log(absl::StrCat("cloned table '", AV(table), "': ", m.ToString()));
  Log(absl::StrCat("cloned snapshot ", info.name, " as table '", AV(table), "': ", regions.size(), " region(s), no byte copied"));
  return absl::OkStatus();
}

absl::Status Catalog::RestoreSnapshot(std::string_view snapshot) {
  absl::MutexLock al(&admin_mu_);
  absl::ReaderMutexLock sl(&snapshots_mu_);
  BASALT_ASSIGN_OR_RETURN(SnapshotInfo info, ReadSnapshotLocked(snapshot));
  const std::string& table = info.table.name;
  absl::StatusOr<Entry> found = DisabledEntry(table, "is enabled: disable it before restoring a snapshot into it");
  // A table dropped since: restored as a clone under its own name (HBase's restoreSnapshot).
  if (found.status().code() == absl::StatusCode::kNotFound) return CloneLocked(info, table);
  BASALT_RETURN_IF_ERROR(found.status());
  Entry e = *std::move(found);
  BASALT_RETURN_IF_ERROR(WaitForClosing(e));
  TableSpec spec = info.table;
  spec.enabled = false;
  BASALT_RETURN_IF_ERROR(ValidateTableSpec(spec));
  BASALT_ASSIGN_OR_RETURN(std::vector<RegionInfo> regions, SnapshotRegionsAs(info, table));
  if (regions.size() > e.regions.size()) {  // (its namespace's maxregions, as a split's)
    BASALT_RETURN_IF_ERROR(CheckNamespaceRoom(table, 0, regions.size() - e.regions.size()));
  }
  Env* env = options_.env;
  // Staged beside the table's regions as a split's daughters are: a crash before the commit
  // leaves them for start-up to remove, one after it for start-up to move into place; and the
  // old regions named in the marker, for start-up to remove once meta names the new ones.
  const std::string staging = SplitsDir(table);
  const std::string marker = absl::StrCat(TableDir(table), "/", kRestoringMarker);
  std::string old_names;
  for (const auto* list : {&e.regions, &e.retired}) {
    for (const RegionInfo& r : *list) absl::StrAppend(&old_names, r.EncodedName(), "\n");
  }
  absl::Status linked = env->CreateDirs(TableDir(table));
  if (linked.ok()) linked = env->WriteFileDurably(marker, old_names);
  if (linked.ok()) linked = LinkSnapshotRegions(info, regions, staging);
  // Undone before the commit: the staged regions and the marker go; the table is as it was.
  auto undo = [&] {
    for (const RegionInfo& r : regions) RemoveRegionDir(env, absl::StrCat(staging, "/", r.EncodedName())).IgnoreError();
    env->DeleteFile(marker).IgnoreError();
  };
  if (!linked.ok()) {
    undo();
    return absl::Status(linked.code(), absl::StrCat("restore of snapshot ", info.name, ": ", linked.message()));
  }
  // The commit: one meta batch, the old regions (and split parents) out, the snapshot's in.
  std::vector<RowMutation> rows;
  for (const auto* list : {&e.regions, &e.retired}) {
    for (const RegionInfo& r : *list) rows.push_back(MetaDelete(r));
  }
  for (const RegionInfo& r : regions) rows.push_back(MetaPut(r, "CLOSED", ""));
  FaultPoint("restore:staged");
  if (absl::Status s = WriteMeta(rows); !s.ok()) {
    undo();
    return s;
  }
  FaultPoint("restore:meta-committed");
  // The descriptor the snapshot had (a crash before this leaves the restored regions with the
  // table's descriptor until a retry: families it lacks are set aside when they open, never lost).
  if (!(spec == e.spec)) {
    std::vector<TableSpec> cat = CatalogLocked();
    for (TableSpec& t : cat) {
      if (t.name == table) t = spec;
    }
    BASALT_RETURN_IF_ERROR(WriteTableInfo(spec));
    BASALT_RETURN_IF_ERROR(SaveLocked(cat));
  }
  {
    absl::MutexLock l(&mu_);
    Entry& stored = entries_.find(table)->second;
    stored.spec = spec;
    stored.regions = regions;
    stored.retired.clear();
    stored.retired_open.clear();
  }
  BASALT_RETURN_IF_ERROR(FinishSplits(table, regions, /*committed_now=*/true));
  size_t removed = 0;
  for (const auto* list : {&e.regions, &e.retired}) {
    for (const RegionInfo& r : *list) {
      log_->ForgetRegion(RegionName(e.spec, r)).IgnoreError();  // a disabled region's log is flushed
      if (absl::Status s = RemoveReplacedRegion(table, r.EncodedName()); !s.ok()) {
        Log(absl::StrCat("restored table '", table, "'; its old region ", r.Name(), " stays: ", s.ToString()));
      } else {
        ++removed;
      }
    }
  }
  BASALT_RETURN_IF_ERROR(env->DeleteFile(marker));
  Log(absl::StrCat("restored table '", table, "' to snapshot ", info.name, ": ", regions.size(), " region(s) in place of ",
                   e.regions.size(), " (", removed, " removed); no byte copied"));
  return absl::OkStatus();
}

absl::Status Catalog::RemoveReplacedRegion(std::string_view table, std::string_view encoded) {
  Env* env = options_.env;
  const std::string dir = absl::StrCat(TableDir(table), "/", AV(encoded));
  if (!env->FileExists(dir)) return absl::OkStatus();
  // What its recovery set aside was never the table's to drop: kept, with the region around it.
  const std::string aside = absl::StrCat(dir, "/", kLostFoundDir);
  if (env->FileExists(aside) && !env->ListDir(aside).value_or(std::vector<std::string>{"?"}).empty()) {
    return MoveAside(absl::StrCat(AV(table), "/", AV(encoded)), absl::StrCat(AV(table), ".", AV(encoded)),
                     "a region a restore replaced, holding files its recovery set aside");
  }
  return env->RemoveTree(dir);  // its block files, log edits (recovered.edits) and REGIONINFO
}

absl::Status Catalog::FinishRestore(std::string_view table, const std::vector<RegionInfo>& regions) {
  Env* env = options_.env;
  const std::string marker = absl::StrCat(TableDir(table), "/", kRestoringMarker);
  if (!env->FileExists(marker)) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::string listed, env->ReadFileToString(marker));
  std::set<std::string> current;
  for (const RegionInfo& r : regions) current.insert(r.EncodedName());
  std::vector<std::string> old = absl::StrSplit(listed, '\n', absl::SkipEmpty());
  const bool committed = std::none_of(old.begin(), old.end(), [&](const std::string& n) { return current.count(n) > 0; });
  if (committed) {
    for (const std::string& n : old) {
      if (n.find('/') != std::string::npos || n.starts_with(".")) continue;  // only region names of this table
      BASALT_RETURN_IF_ERROR(RemoveReplacedRegion(table, n));
    }
  }
  Log(absl::StrCat("table '", AV(table), "': a restore a crash cut short ",
                   committed ? "had committed: its old regions are removed" : "had not committed: the table is as it was"));
  return env->DeleteFile(marker);
}

absl::StatusOr<std::vector<SnapshotListing>> Catalog::ListSnapshots() const {
  Env* env = options_.env;
  absl::ReaderMutexLock sl(&snapshots_mu_);
  BASALT_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> infos, ReadSnapshotsLocked());
  std::vector<SnapshotListing> out;
  for (SnapshotInfo& info : infos) {
    SnapshotListing l;
    l.info = std::move(info);
    for (const SnapshotInfo::Region& r : l.info.regions) {
      const std::string region_dir = absl::StrCat(SnapshotDir(l.info.name), "/", r.info.EncodedName());
      BASALT_ASSIGN_OR_RETURN(std::vector<std::string> files, env->ListDir(region_dir));
      for (const std::string& f : files) {
        if (!f.ends_with(".blk")) continue;
        const std::string path = absl::StrCat(region_dir, "/", f);
        BASALT_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(path));
        BASALT_ASSIGN_OR_RETURN(uint64_t names_of_it, env->LinkCount(path));
        l.bytes += size;
        if (names_of_it == 1) l.only_bytes += size;
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

absl::Status Catalog::DeleteSnapshot(std::string_view name) {
  BASALT_RETURN_IF_ERROR(ValidateSnapshotName(name));
  {
    absl::MutexLock sl(&snapshots_mu_);
    BASALT_RETURN_IF_ERROR(DeleteSnapshotLocked(name));
  }
  CountSnapshots();
  return absl::OkStatus();
}

SnapshotTotals Catalog::Snapshots() const {
  absl::MutexLock l(&totals_mu_);
  return snapshot_totals_;
}

void Catalog::CountSnapshots() {
  absl::StatusOr<std::vector<SnapshotListing>> all = ListSnapshots();
  if (!all.ok()) {
    Log(absl::StrCat("counting the snapshots' bytes: ", all.status().ToString()));
    return;
  }
  SnapshotTotals t;
  for (const SnapshotListing& l : *all) {
    ++t.snapshots;
    t.bytes += l.bytes;
    t.only_bytes += l.only_bytes;
  }
  absl::MutexLock l(&totals_mu_);
  snapshot_totals_ = t;
}

absl::Status Catalog::DeleteSnapshotLocked(std::string_view name) {
  Env* env = options_.env;
  const std::string dir = SnapshotDir(name);
  const std::string manifest = absl::StrCat(dir, "/", kSnapshotFileName);
  if (!env->FileExists(manifest)) return absl::NotFoundError(absl::StrCat("no snapshot '", AV(name), "'"));
  // The manifest first: a crash after it leaves a snapshot cut short, which start-up removes.
  BASALT_RETURN_IF_ERROR(env->DeleteFile(manifest));
  BASALT_RETURN_IF_ERROR(env->RemoveTree(dir));
  Log(absl::StrCat("deleted snapshot ", AV(name)));
  return absl::OkStatus();
}

absl::StatusOr<int> Catalog::ExpireSnapshots(absl::Time now) {
  absl::MutexLock sl(&snapshots_mu_);
  BASALT_ASSIGN_OR_RETURN(std::vector<SnapshotInfo> infos, ReadSnapshotsLocked());
  int deleted = 0;
  for (const SnapshotInfo& info : infos) {
    if (info.ttl_s <= 0 || now < absl::FromUnixMillis(info.created_ms) + absl::Seconds(info.ttl_s)) continue;
    BASALT_RETURN_IF_ERROR(DeleteSnapshotLocked(info.name));
    Log(absl::StrCat("snapshot ", info.name, " expired: its TTL of ", info.ttl_s, " s has passed"));
    ++deleted;
  }
  return deleted;
}

absl::Status Catalog::RemoveUnfinishedSnapshots() {
  Env* env = options_.env;
  absl::MutexLock sl(&snapshots_mu_);
  if (!env->FileExists(SnapshotsDir())) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(SnapshotsDir()));
  for (const std::string& name : names) {
    if (env->FileExists(absl::StrCat(SnapshotDir(name), "/", kSnapshotFileName))) continue;
    BASALT_RETURN_IF_ERROR(env->RemoveTree(SnapshotDir(name)));
    Log(absl::StrCat("removed snapshot ", name, ", which a crash cut short (it had no ", kSnapshotFileName, ")"));
  }
  return absl::OkStatus();
}

}  // namespace basalt::server
