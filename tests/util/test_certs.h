// Certificates for a test suite's TLS, made once by tests/security/make_certs.sh (the test CA,
// the server's, one per user named, and the rogue and expired ones) in a directory of their own,
// removed with the object. A suite makes one in SetUpTestSuite.
#pragma once

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::testing {

class TestCerts {
 public:
  // `source_dir`: the repository's root (BASALT_SOURCE_DIR); `users`: space-separated. A script
  // that fails fails the test.
  TestCerts(const std::string& source_dir, const std::string& users) {
    const std::string cmd = absl::StrCat(source_dir, "/tests/security/make_certs.sh ", dir_.path(), " ", users);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  // The path of `name` (ca.pem, server.key, alice.pem...).
  std::string operator()(const std::string& name) const { return dir_.path() + "/" + name; }

 private:
  TempDir dir_;
};

}  // namespace basalt::testing
