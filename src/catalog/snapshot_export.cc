// Snapshot export and import (src/catalog/snapshot_export.h).
#include "src/catalog/snapshot_export.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "src/schema/snapshot_file.h"
#include "storage/region.h"

namespace basalt::server {
namespace {

// Every block file under the store's snapshots (whole ones: files are named only when whole), by
// "<encoded region name>/<file name>": what an export may name again instead of copying. A block
// file's name is unique within its region, and a region's encoded name within a cluster (a
// clone's and a restore's regions get new ones); the size and the trailer are compared too.
using HeldMap = std::map<std::string, std::string>;
absl::StatusOr<HeldMap> HeldFiles(const SnapshotStore& s) {
  HeldMap held;
  const std::string root = SnapshotsDirIn(s.data_dir);
  if (!s.env->FileExists(root)) return held;
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> snapshots, s.env->ListDir(root));
  for (const std::string& snap : snapshots) {
    absl::StatusOr<std::vector<std::string>> regions = s.env->ListDir(absl::StrCat(root, "/", snap));
    if (!regions.ok()) continue;  // (not a directory)
    for (const std::string& region : *regions) {
      const std::string dir = absl::StrCat(root, "/", snap, "/", region);
      absl::StatusOr<std::vector<std::string>> files = s.env->ListDir(dir);
      if (!files.ok()) continue;  // SNAPSHOT
      for (const std::string& f : *files) {
        if (f.ends_with(".blk")) held.emplace(absl::StrCat(region, "/", f), absl::StrCat(dir, "/", f));
      }
    }
  }
  return held;
}

// Paces the bytes written to the bandwidth limit and reports progress on the way.
class Pacer {
 public:
  Pacer(const ExportOptions& o, ExportProgress* p) : options_(o), progress_(p), start_(absl::Now()), last_(start_) {}
  void Wrote(uint64_t bytes) {
    progress_->bytes_written += bytes;
    const absl::Time now = absl::Now();
    if (options_.bandwidth_bytes_per_s > 0) {
      const absl::Time due =
          start_ + absl::Seconds(static_cast<double>(progress_->bytes_written) / options_.bandwidth_bytes_per_s);
      if (due > now) absl::SleepFor(due - now);
    }
    if (options_.on_progress && absl::Now() - last_ >= options_.progress_every) Report();
  }
  void Report() {
    last_ = absl::Now();
    progress_->elapsed = last_ - start_;
    if (options_.on_progress) options_.on_progress(*progress_);
  }

 private:
  const ExportOptions& options_;
  ExportProgress* progress_;
  const absl::Time start_;
  absl::Time last_;
};

absl::Status CopyRegions(const SnapshotStore& from, const SnapshotInfo& info, const SnapshotStore& to,
                         const std::string& target_dir, const ExportOptions& options, ExportProgress* progress) {
  BASALT_ASSIGN_OR_RETURN(const HeldMap held, HeldFiles(to));
  Pacer pacer(options, progress);
  for (const SnapshotInfo::Region& r : info.regions) {
    const std::string encoded = r.info.EncodedName();
    RegionCopyOptions how;
    how.read_bytes = options.read_bytes;
    how.on_bytes = [&pacer](uint64_t bytes) {
      pacer.Wrote(bytes);
      return absl::OkStatus();
    };
    how.find_copy = [&](std::string_view name, uint64_t size, std::string_view tail) -> std::string {
      auto it = held.find(absl::StrCat(encoded, "/", AV(name)));
      return it != held.end() && HoldsBlockFile(to.env, it->second, size, tail) ? it->second : "";
    };
    BASALT_ASSIGN_OR_RETURN(CopiedFiles c, CopyRegion(from.env, absl::StrCat(SnapshotDirIn(from.data_dir, info.name), "/", encoded),
                                                      to.env, absl::StrCat(target_dir, "/", encoded), how));
    progress->files_done += c.files;
    progress->copied_files += c.copied_files;
    progress->copied_bytes += c.copied_bytes;
    progress->linked_files += c.linked_files;
    progress->linked_bytes += c.linked_bytes;
  }
  pacer.Report();
  return absl::OkStatus();
}

// Before SNAPSHOT is written: every region's MANIFEST and files are in the target. (A server
// starting on the target store meanwhile removes a snapshot directory without SNAPSHOT.)
absl::Status CheckWhole(const SnapshotInfo& info, const SnapshotStore& to, const std::string& target_dir) {
  for (const SnapshotInfo::Region& r : info.regions) {
    const std::string dir = absl::StrCat(target_dir, "/", r.info.EncodedName());
    absl::StatusOr<std::vector<std::string>> names = to.env->ListDir(dir);
    uint64_t files = 0;
    bool manifest = false;
    for (const std::string& n : names.value_or(std::vector<std::string>{})) {
      files += n.ends_with(".blk");
      manifest |= n == "MANIFEST";
    }
    if (!manifest || files != r.files) {
      return absl::AbortedError(absl::StrCat("region ", dir, " holds ", files, " of its ", r.files,
                                             " files", manifest ? "" : " and no MANIFEST",
                                             " after they were written (a server starting on the target removes an "
                                             "unfinished snapshot): run the export again"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ExportProgress> ExportSnapshot(const SnapshotStore& from, std::string_view name, const SnapshotStore& to,
                                              const ExportOptions& options) {
  BASALT_RETURN_IF_ERROR(ValidateSnapshotName(name));
  const std::string target = options.target_name.empty() ? std::string(name) : options.target_name;
  BASALT_RETURN_IF_ERROR(ValidateSnapshotName(target));
  absl::StatusOr<SnapshotInfo> read = ReadSnapshotIn(from.env, from.data_dir, name);
  if (!read.ok()) return absl::Status(read.status().code(), absl::StrCat(read.status().message(), " in ", SnapshotsDirIn(from.data_dir)));
  SnapshotInfo info = *std::move(read);
  const std::string target_dir = SnapshotDirIn(to.data_dir, target);
  if (to.env->FileExists(absl::StrCat(target_dir, "/", kSnapshotFileName))) {
    return absl::AlreadyExistsError(
        absl::StrCat("the target holds a snapshot '", target, "' already (", target_dir, "): delete it, or export under another name"));
  }
  ExportProgress progress;
  progress.files = info.files();
  progress.bytes = info.bytes();
  absl::Status s = CopyRegions(from, info, to, target_dir, options, &progress);
  if (s.ok()) s = CheckWhole(info, to, target_dir);
  info.name = target;
  if (s.ok()) s = to.env->WriteFileDurably(absl::StrCat(target_dir, "/", kSnapshotFileName), EncodeSnapshot(info));
  if (s.ok()) s = to.env->SyncDir(SnapshotsDirIn(to.data_dir));
  if (!s.ok()) {
    // Nothing half-made left behind (whole files of a run killed part way are kept for the next).
    to.env->RemoveTree(target_dir).IgnoreError();
    return absl::Status(s.code(), absl::StrCat("export of snapshot ", AV(name), " to ", target_dir, ": ", s.message()));
  }
  return progress;
}

}  // namespace basalt::server
