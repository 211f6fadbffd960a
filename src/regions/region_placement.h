// Where the catalogue's regions open (catalog.h): in this process, for a standalone server
// (LocalPlacement), or on a cluster's region servers, for the active master (its
// AssignmentManager, src/master/assignment_manager.h). The process chooses one where it is
// assembled; the catalogue asks it, never which kind of process it is in.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "src/schema/catalog_file.h"
#include "src/regions/region_handle.h"
#include "src/schema/region_info.h"
#include "storage/region.h"

namespace basalt::server {

// A region a placement opened: what data calls reach (on a master, a region that refuses them
// as served elsewhere), its handle, and where it serves (host:port; empty: this process).
struct PlacedRegion {
  std::shared_ptr<Region> region;
  std::shared_ptr<RegionHandle> handle;
  std::string server;
};

class RegionPlacement {
 public:
  virtual ~RegionPlacement() = default;
  // Opens region `info` of `spec` (`desc` its descriptor, its files in `dir`), on `destination`
  // (host:port) first when one is given (a move) and the placement has a choice.
  virtual absl::StatusOr<PlacedRegion> Open(const TableSpec& spec, const RegionInfo& info, RegionDescriptor desc,
                                            const std::string& dir, std::string_view destination) = 0;
  // Whether the catalogue's stop closes the regions it opened: a standalone server's are its
  // own; a master's stay open on their servers, where the next master finds them.
  virtual bool ClosesRegionsAtStop() const = 0;
  // Whether a split's or merge's children are placed after its commit, which then records them
  // with no server, and recorded where they opened after (a master's); else the commit records
  // them on this process, where they open at once.
  virtual bool PlacesChildrenAfterCommit() const = 0;
  // Whether a region can be unassigned (closed, recorded CLOSED, served nowhere until assigned),
  // so that meta's CLOSED rows of an enabled table are kept closed at start-up (a master's).
  virtual bool KeepsUnassignedRegions() const = 0;
};

// Opens every region in this process (a standalone server's catalogue), with the catalogue's
// region options (read at each open: the catalogue fills in its log and split hooks after it is
// made).
class LocalPlacement final : public RegionPlacement {
 public:
  explicit LocalPlacement(const RegionOptions* options) : options_(options) {}
  absl::StatusOr<PlacedRegion> Open(const TableSpec&, const RegionInfo&, RegionDescriptor desc, const std::string& dir,
                                    std::string_view) override {
    absl::StatusOr<std::unique_ptr<Region>> region = Region::Open(*options_, std::move(desc), dir);
    if (!region.ok()) return region.status();
    std::shared_ptr<Region> shared = *std::move(region);
    return PlacedRegion{shared, std::make_shared<LocalRegionHandle>(shared), ""};
  }
  bool ClosesRegionsAtStop() const override { return true; }
  bool PlacesChildrenAfterCommit() const override { return false; }
  bool KeepsUnassignedRegions() const override { return false; }

 private:
  const RegionOptions* const options_;
};

}  // namespace basalt::server
