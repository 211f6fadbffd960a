// A fresh directory under the test temp dir, removed when the object goes away.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace basalt::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "basalt";
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ = ::testing::TempDir() + "/basalt-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace basalt::testing
