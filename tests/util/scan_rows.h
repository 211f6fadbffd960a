// Test helpers: the row keys (or the rows' values of one column) a client scan returns, read to
// the end. A scan error fails the test (and ends the rows there).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "basalt/client.h"
#include "gtest/gtest.h"

namespace basalt::testing {

// Calls `each` with every row `scan` returns, to the end.
template <typename Each>
void ForEachScannedRow(Table* table, const Scan& scan, Each each) {
  auto sc = table->GetScanner(scan);
  EXPECT_TRUE(sc.ok()) << sc.status();
  if (!sc.ok()) return;
  Result r;
  for (;;) {
    auto more = (*sc)->Next(&r);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return;
    each(r);
  }
}

inline std::vector<std::string> ScanRowKeys(Table* table, const Scan& scan = Scan()) {
  std::vector<std::string> rows;
  ForEachScannedRow(table, scan, [&](const Result& r) { rows.push_back(r.row()); });
  return rows;
}

// Each row's value of `family`:`qualifier` ("" where the row has none), by row key.
inline std::map<std::string, std::string> ScanCellValues(Table* table, const std::string& family,
                                                         const std::string& qualifier) {
  std::map<std::string, std::string> rows;
  ForEachScannedRow(table, Scan(), [&](const Result& r) {
    rows[r.row()] = std::string(r.Value(family, qualifier).value_or(""));
  });
  return rows;
}

}  // namespace basalt::testing
