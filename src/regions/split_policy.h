// When a region splits on its own (HBase's SteppingSplitPolicy), for a standalone server's
// Catalog and a region server's RegionHost alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "src/schema/catalog_file.h"

namespace basalt::server {

// The size past which a region's largest store splits it: a table's first region splits early
// (at 2 × the memstore flush size), so that a new table spreads soon; after that at the table's
// max_file_size, else the server's region_max_size.
inline uint64_t SplitSize(const TableSpec& spec, size_t regions, uint64_t region_max_size,
                          uint64_t memstore_flush_size) {
  const uint64_t max = spec.max_file_size != 0 ? spec.max_file_size : region_max_size;
  return regions == 1 ? std::min(max, 2 * memstore_flush_size) : max;
}

}  // namespace basalt::server
