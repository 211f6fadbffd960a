// Test helpers: the row keys (or the rows' values of one column) a client scan returns, read to
// the end. A scan error fails the test (and ends the rows there).
#pragma once

#include <map>
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

// Each row's value of `family`:`qualifier` ("" where the row has none), by row key, read to the
// end the same way.
inline std::map<std::string, std::string> ScanCellValues(Table* table, const std::string& family,
                                                         const std::string& qualifier) {
  std::map<std::string, std::string> rows;
  auto sc = table->GetScanner(Scan());
  EXPECT_TRUE(sc.ok()) << sc.status();
  if (!sc.ok()) return rows;
  Result r;
  for (;;) {
    auto more = (*sc)->Next(&r);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return rows;
    rows[r.row()] = std::string(r.Value(family, qualifier).value_or(""));
  }
}

}  // namespace basalt::testing
