// Shared set-up of the integration suites: a real basalt-server on a run-time port in a temp
// directory, and a client Connection to it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "basalt/client.h"
#include "gtest/gtest.h"
#include "tests/util/server_process.h"
#include "tests/util/temp_dir.h"

#ifndef BASALT_SERVER_BINARY
#error "BASALT_SERVER_BINARY must name the basalt-server executable"
#endif

namespace basalt::testing {

class ServerTest : public ::testing::Test {
 protected:
  // Starts the server with `extra_args` and connects a client.
  void StartServer(std::vector<std::string> extra_args = {}) {
    server_ = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, dir_.path() + "/data", std::move(extra_args));
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
    Connect();
  }
  void Connect(absl::Duration timeout = absl::Seconds(20)) {
    ConnectionOptions o;
    o.address = server_->address();
    o.timeout = timeout;
    o.security = security_;
    auto c = Connection::Open(o);
    ASSERT_TRUE(c.ok()) << c.status();
    conn_ = std::move(*c);
  }
  // Creates a table with the given families (default settings), pre-split at `split_keys`;
  // `transactional`: read and written in transactions (basalt/transaction.h).
  void CreateTable(const std::string& name, std::vector<std::string> families = {"cf"},
                   const std::vector<std::string>& split_keys = {}, bool transactional = false) {
    TableInfo t;
    t.name = name;
    t.transactional = transactional;
    for (auto& f : families) {
      FamilySettings fs;
      fs.name = f;
      t.families.push_back(fs);
    }
    absl::Status s = conn_->GetAdmin()->CreateTable(t, split_keys);
    ASSERT_TRUE(s.ok()) << s;
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Connection> conn_;
  ClientSecurity security_;  // the client's (Connect): set it before StartServer for a TLS server
};

}  // namespace basalt::testing
