// Where a table's region lives on disk (src/schema/region_info.h): for tests that damage or
// inspect a region's files.
#pragma once

#include <filesystem>
#include <string>

namespace basalt::testing {

// The directory of the table's one region: the only directory under data_dir/tables/<table>/
// holding a REGIONINFO file ("" when there is none or more than one).
inline std::string OnlyRegionDir(const std::string& data_dir, const std::string& table) {
  std::string found;
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/tables/" + table, ec)) {
    if (std::filesystem::exists(e.path() / "REGIONINFO")) {
      found = e.path().string();
      ++n;
    }
  }
  return n == 1 ? found : "";
}

}  // namespace basalt::testing
