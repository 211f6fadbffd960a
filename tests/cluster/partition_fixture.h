// The partition suites' fixture (docs/DESIGN.md §6): masters and region servers in network namespaces
// of their own on this machine (tests/util/net_lab.h), with ZooKeeper, Ceph and the clients on
// the host's side of a bridge; a cut drops a node's packets with nftables, so its connections
// hang as on a real network. Needs root: without it each test skips, saying why (CI runs as
// root). It starts its own ZooKeeper and Ceph on the bridge's address (the tests' services
// listen on loopback, which a namespace cannot reach).
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/cluster/cluster_fixture.h"
#include "tests/util/net_lab.h"

namespace basalt::testing {

class PartitionFixture : public ClusterFixture {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NetLab>> lab = NetLab::Create();
    if (!lab.ok()) GTEST_SKIP() << lab.status().message();
    lab_ = *std::move(lab);
    // (A short path: Ceph's admin sockets must fit in 107 bytes.)
    char dir[] = "/tmp/bzXXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    services_ = dir;
    const std::string deploy = std::string(BASALT_SOURCE_DIR) + "/deploy";
    ASSERT_EQ(std::system(absl::StrCat(deploy, "/zookeeper.sh start '", services_, "/zookeeper' --port ",
                                       BASALT_PARTITION_ZK_PORT, " --addr ", lab_->host_ip(), " >/dev/null")
                              .c_str()),
              0);
    ASSERT_EQ(std::system(absl::StrCat(deploy, "/ceph.sh start '", services_, "/ceph' --port ",
                                       BASALT_PARTITION_CEPH_PORT, " --addr ", lab_->host_ip(), " >/dev/null")
                              .c_str()),
              0);
    quorum_ = absl::StrCat(lab_->host_ip(), ":", BASALT_PARTITION_ZK_PORT);
    ceph_conf_ = services_ + "/ceph/ceph.conf";
    ClusterFixture::SetUp();
  }
  void TearDown() override {
    if (lab_ == nullptr) return;
    ClusterFixture::TearDown();
    zk_.reset();
    const std::string deploy = std::string(BASALT_SOURCE_DIR) + "/deploy";
    std::system(absl::StrCat(deploy, "/ceph.sh stop '", services_, "/ceph' >/dev/null 2>&1; ", deploy,
                             "/zookeeper.sh stop '", services_, "/zookeeper' >/dev/null 2>&1; rm -rf '", services_, "'")
                    .c_str());
    lab_.reset();
  }

  // Daemons' ZooKeeper session timeout unless a test says otherwise: the product's default.
  // (With every core busy, as in CI's parallel run, this suite's own freshly started ZooKeeper
  // was starved for over a second now and then: sessions of 1 s, and once one of 2 s, expired.)
  static constexpr int kSessionMs = 4000;

  // Master `name` in a namespace of its own (made on its first start), with a ZooKeeper
  // session of `session_ms`.
  std::unique_ptr<ChildProcess> StartMasterIn(const std::string& name, int session_ms = kSessionMs) {
    absl::StatusOr<std::string> ip = lab_->has(name) ? lab_->ip(name) : lab_->AddNode(name);
    EXPECT_TRUE(ip.ok()) << ip.status();
    if (!ip.ok()) return nullptr;
    master_launchers_[name] = lab_->Exec(name);
    const std::string port_file = dir_.path() + "/" + name + ".port";
    return StartMaster(name, 0, session_ms, "",
                       {"--listen=" + *ip + ":0", "--http_listen=" + *ip + ":0", "--port_file=" + port_file});
  }
  // Master `name`'s gRPC address, once it has served ("" before).
  std::string MasterAddress(const std::string& name) {
    std::ifstream in(dir_.path() + "/" + name + ".port");
    int port = 0;
    return in >> port && port > 0 ? absl::StrCat(lab_->ip(name), ":", port) : "";
  }
  // A region server in a namespace of its own, started.
  std::unique_ptr<ServerProcess> StartServerIn(const std::string& name, int session_ms = kSessionMs) {
    absl::StatusOr<std::string> ip = lab_->AddNode(name);
    EXPECT_TRUE(ip.ok()) << ip.status();
    if (!ip.ok()) return nullptr;
    auto s = NewServer(session_ms);
    s->set_launcher(lab_->Exec(name));
    s->set_host(*ip);
    absl::Status started = s->Start();
    EXPECT_TRUE(started.ok()) << started;
    return started.ok() ? std::move(s) : nullptr;
  }
  // A Get sent straight to `server`, naming `region` (a client that located the row there).
  static grpc::Status RawGet(const std::string& server, const std::string& table, const std::string& region,
                             const std::string& row, std::string* value) {
    auto stub = rpc::Basalt::NewStub(grpc::CreateChannel(server, grpc::InsecureChannelCredentials()));
    rpc::GetRequest req;
    req.set_table(table);
    req.set_region(region);
    req.set_row(row);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    rpc::GetResponse resp;
    grpc::Status s = stub->Get(&ctx, req, &resp);
    if (s.ok()) *value = resp.row().cells_size() > 0 ? resp.row().cells(0).value() : "";
    return s;
  }
  // How many region servers say they hold a region of `table` (HostedRegions of each).
  static int HoldersOf(const std::vector<ServerProcess*>& servers, const std::string& table) {
    int holders = 0;
    for (ServerProcess* s : servers) {
      auto stub = rpc::Admin::NewStub(grpc::CreateChannel(s->address(), grpc::InsecureChannelCredentials()));
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      rpc::HostedRegionsRequest req;
      rpc::HostedRegionsResponse resp;
      if (!stub->HostedRegions(&ctx, req, &resp).ok()) continue;
      for (const rpc::RegionSpec& r : resp.regions()) {
        if (r.table() == table) ++holders;
      }
    }
    return holders;
  }

  std::unique_ptr<NetLab> lab_;
  std::string services_;
};

}  // namespace basalt::testing
