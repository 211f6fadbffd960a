// Catalog's snapshots (docs/DESIGN.md §16): taken region by region into data_dir/snapshots/<name>/,
// listed with the bytes only each holds, deleted; and at start-up, those a crash cut short removed.
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/env.h"
#include "common/status.h"
#include "src/catalog/catalog.h"
#include "src/schema/table_errors.h"

namespace basalt::server {

std::string Catalog::SnapshotsDir() const { return absl::StrCat(options_.data_dir, "/", kSnapshotsDir); }

std::string Catalog::SnapshotDir(std::string_view name) const { return absl::StrCat(SnapshotsDir(), "/", AV(name)); }

absl::StatusOr<SnapshotInfo> Catalog::Snapshot(std::string_view table, std::string_view name, int64_t ttl_s) {
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
  if (e.table == nullptr) return Disabled(e.spec.name);
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
  info.table = e.spec;
  auto taken = [&]() -> absl::Status {
    for (const HostedRegion& h : e.table->regions()) {
      if (h.unassigned || !h.open_error.ok()) {
        return absl::FailedPreconditionError(absl::StrCat("snapshot ", AV(name), ": region ", h.info.Name(),
                                                          " is not open (", h.unassigned ? "unassigned" : "FAILED_OPEN",
                                                          "): assign it first"));
      }
      BASALT_ASSIGN_OR_RETURN(Region::SnapshotFiles files,
                              h.handle->Snapshot(absl::StrCat(dir, "/", h.info.EncodedName())));
      info.regions.push_back({h.info, files.files, files.bytes});
    }
    return env->WriteFileDurably(absl::StrCat(dir, "/", kSnapshotFileName), EncodeSnapshot(info));
  };
  if (absl::Status s = taken(); !s.ok()) {
    absl::MutexLock sl(&snapshots_mu_);
    env->RemoveTree(dir).IgnoreError();  // its names go; the table's stay
    return absl::Status(s.code(), absl::StrCat("snapshot ", AV(name), " of table ", e.spec.name, ": ", s.message()));
  }
  uint64_t files = 0, bytes = 0;
  for (const SnapshotInfo::Region& r : info.regions) files += r.files, bytes += r.bytes;
  Log(absl::StrCat("snapshot ", AV(name), " of table '", e.spec.name, "': ", info.regions.size(), " region(s), ", files,
                   " file(s), ", bytes, " bytes named (none copied)"));
  return info;
}

absl::StatusOr<std::vector<SnapshotInfo>> Catalog::ReadSnapshotsLocked() const {
  Env* env = options_.env;
  std::vector<SnapshotInfo> out;
  if (!env->FileExists(SnapshotsDir())) return out;
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(SnapshotsDir()));
  for (const std::string& name : names) {
    const std::string manifest = absl::StrCat(SnapshotDir(name), "/", kSnapshotFileName);
    if (!env->FileExists(manifest)) continue;  // being taken, or cut short (removed at start-up)
    BASALT_ASSIGN_OR_RETURN(std::string bytes, env->ReadFileToString(manifest));
    BASALT_ASSIGN_OR_RETURN(SnapshotInfo info, DecodeSnapshot(bytes, manifest));
    out.push_back(std::move(info));
  }
  return out;
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
  absl::MutexLock sl(&snapshots_mu_);
  return DeleteSnapshotLocked(name);
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
