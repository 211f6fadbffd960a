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
#include <vector>

#include "absl/status/statusor.h"
#include "src/schema/catalog_file.h"
#include "src/regions/region_handle.h"
#include "src/regions/table.h"
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
  // What the catalogue's stop does to an open table's regions (its state is marked stopping
  // first): a standalone server closes them (flushing: they are its own); a master leaves them open
  // on their servers, where the next master finds them.
  virtual absl::Status Stop(Table* table) = 0;
  // Where regions the catalogue opens now will serve, as far as is known before they open (`here`:
  // this process's server name): a split's or merge's commit records its children there. Empty:
  // not known until they open (a master places them after the commit, then records where).
  virtual std::string WhereNewRegionsServe(std::string_view here) const = 0;
  // The logs of servers gone (fenced) that hold edits of the catalogue's regions: split into their
  // recovered.edits before any region opens. A master's: the dead region servers it found.
  virtual std::vector<std::string> LogsToRecover() const = 0;

  // Regions held closed by an operator (HBase 2's unassign: served nowhere until assigned):
  //   - at start-up, meta's CLOSED row `info` of an enabled table is given to KeepClosed, which
  //     holds it closed where the placement unassigns regions (a master's) and does nothing
  //     otherwise (the region opens);
  //   - the catalogue opens no region IsHeldClosed says is, and records it CLOSED;
  //   - enabling a table opens every region of it (HBase's): TableEnabled lets them go.
  virtual void KeepClosed(const RegionInfo& info) = 0;
  virtual bool IsHeldClosed(const RegionInfo& info) const = 0;
  virtual void TableEnabled(std::string_view table) = 0;
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
  absl::Status Stop(Table* table) override { return table->Stop(/*close_regions=*/true); }
  std::string WhereNewRegionsServe(std::string_view here) const override { return std::string(here); }
  std::vector<std::string> LogsToRecover() const override { return {}; }
  // (A standalone server unassigns no region: every one opens.)
  void KeepClosed(const RegionInfo&) override {}
  bool IsHeldClosed(const RegionInfo&) const override { return false; }
  void TableEnabled(std::string_view) override {}

 private:
  const RegionOptions* const options_;
};

}  // namespace basalt::server
