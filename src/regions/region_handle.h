// A region as whoever placed it administers it: closed, flushed, compacted, its split point and
// figures asked. The catalogue (catalog.h) holds one for every region it has open: a handle on a
// region of this process (LocalRegionHandle), or, on a cluster's master, on a region open on a
// region server (src/master/remote_region.h), where each call is a call to that server. Data
// calls (Get, Mutate, Scan) are not a handle's: they go to the storage::Region a Table routes to.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/region.h"

namespace basalt::server {

class RegionHandle {
 public:
  virtual ~RegionHandle() = default;
  // Closes the region (flushing). Later calls on it are refused.
  virtual absl::Status Close() = 0;
  virtual absl::Status Flush() = 0;
  virtual absl::Status MajorCompact() = 0;
  // The row to split the region at (storage/region.h Region::SplitPoint).
  virtual absl::StatusOr<std::string> SplitPoint() const = 0;
  // Its figures. When they cannot be had, `failed` says why and reference_files is 1, so that
  // nothing (the janitor) takes the region for one that no longer reads its parents' files.
  virtual RegionStats GetStats() const = 0;
  // Names its files again in `dir`, after a flush (storage/region.h Region::Snapshot).
  virtual absl::StatusOr<Region::SnapshotFiles> Snapshot(const std::string& dir) = 0;
};

// A region open in this process.
class LocalRegionHandle final : public RegionHandle {
 public:
  explicit LocalRegionHandle(std::shared_ptr<Region> region) : region_(std::move(region)) {}
  absl::Status Close() override { return region_->Close(); }
  absl::Status Flush() override { return region_->Flush(); }
  absl::Status MajorCompact() override { return region_->MajorCompact(); }
  absl::StatusOr<std::string> SplitPoint() const override { return region_->SplitPoint(); }
  RegionStats GetStats() const override { return region_->GetStats(); }
  absl::StatusOr<Region::SnapshotFiles> Snapshot(const std::string& dir) override { return region_->Snapshot(dir); }

 private:
  const std::shared_ptr<Region> region_;
};

}  // namespace basalt::server
