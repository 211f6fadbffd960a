// For the server's unit tests: a TableManager (standalone) over `dir`, or null after a test
// failure saying why.
#pragma once

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "src/catalog/tables.h"

namespace basalt::server {

inline std::unique_ptr<TableManager> OpenManager(const std::string& dir) {
  TableManager::Options o;
  o.data_dir = dir;
  auto tm = TableManager::Open(o);
  EXPECT_TRUE(tm.ok()) << tm.status();
  return tm.ok() ? *std::move(tm) : nullptr;
}

}  // namespace basalt::server
