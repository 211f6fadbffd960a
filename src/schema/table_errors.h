// What Catalog's parts (catalog.cc, region_split.cc) say alike: the errors for a table that
// is missing, disabled or FAILED_OPEN, the name a region's log records carry, and its
// descriptor.
#pragma once

#include <limits>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/schema/catalog_file.h"
#include "src/schema/region_info.h"
#include "storage/region.h"

namespace basalt::server {

inline absl::Status NotFound(std::string_view name) {
  return absl::NotFoundError(absl::StrCat("table '", AV(name), "' does not exist"));
}
inline absl::Status Disabled(std::string_view name) {
  return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " is disabled"));
}
inline absl::Status FailedOpen(std::string_view name, const absl::Status& why) {
  return absl::FailedPreconditionError(absl::StrCat("table ", AV(name), " is FAILED_OPEN (", why.message(),
                                                    "); repair it, then assign '", AV(name), "'"));
}

// The name a region's log records carry: its region name, or, for a table from before regions,
// the table's name.
inline std::string RegionName(const TableSpec& spec, const RegionInfo& info) {
  return info.id == 0 ? spec.name : info.Name();
}

// The engine's descriptor of region `info` of `spec` (storage/region.h).
inline RegionDescriptor DescriptorOf(const TableSpec& spec, const RegionInfo& info) {
  RegionDescriptor desc;
  desc.name = RegionName(spec, info);
  desc.families = spec.families;
  // A transactional table's stores keep every version: which ones a read sees is its
  // snapshot's to say (the family's VERSIONS then count visible versions, src/transactions/tx_filter.h).
  if (spec.transactional) {
    for (FamilyOptions& f : desc.families) f.max_versions = std::numeric_limits<int>::max();
  }
  desc.start_key = info.start_key;
  desc.end_key = info.end_key;
  return desc;
}

}  // namespace basalt::server
