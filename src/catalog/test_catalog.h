// For the server's unit tests: a Catalog (standalone) over `dir`, or null after a test
// failure saying why.
#pragma once

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "src/catalog/catalog.h"

namespace basalt::server {

inline std::unique_ptr<Catalog> OpenManager(const std::string& dir) {
  Catalog::Options o;
  o.data_dir = dir;
  auto tm = Catalog::Open(o);
  EXPECT_TRUE(tm.ok()) << tm.status();
  return tm.ok() ? *std::move(tm) : nullptr;
}

}  // namespace basalt::server
