// Test helper: the row keys a client scan returns, read to the end. A scan error fails the test
// (and ends the rows there).
#pragma once

#include <string>
#include <vector>

#include "basalt/client.h"
#include "gtest/gtest.h"

namespace basalt::testing {

inline std::vector<std::string> ScanRowKeys(Table* table, const Scan& scan = Scan()) {
  std::vector<std::string> rows;
  auto sc = table->GetScanner(scan);
  EXPECT_TRUE(sc.ok()) << sc.status();
  if (!sc.ok()) return rows;
  Result r;
  for (;;) {
    auto more = (*sc)->Next(&r);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return rows;
    rows.push_back(r.row());
  }
}

}  // namespace basalt::testing
