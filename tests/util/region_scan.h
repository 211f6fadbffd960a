// Test helper: every row a region scan returns, its cells copied out. A scan error fails the
// test (and ends the rows there).
#pragma once

#include <vector>

#include "gtest/gtest.h"
#include "storage/region.h"

namespace basalt::testing {

inline std::vector<std::vector<Cell>> ScanRegionRows(Region* region, const ScanSpec& spec) {
  std::vector<std::vector<Cell>> rows;
  auto sc = region->Scan(spec);
  EXPECT_TRUE(sc.ok()) << sc.status();
  if (!sc.ok()) return rows;
  std::vector<Cell> cells;
  for (;;) {
    auto more = (*sc)->NextRow(&cells);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return rows;
    rows.push_back(cells);
  }
}

}  // namespace basalt::testing
