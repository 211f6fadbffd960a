// The cluster suites' fixture: a private cluster on the tests' real ZooKeeper and Ceph
// (tests/services/), under its own ZooKeeper parent and RADOS namespace: real basalt-master and
// basalt-server --cluster processes, clients and the shell that know only ZooKeeper.
#pragma once

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "basalt/client.h"
#include "common/test_services.h"
#include "common/zookeeper.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/basalt.grpc.pb.h"
#include "tests/util/child_process.h"
#include "tests/util/server_process.h"
#include "tests/util/temp_dir.h"

namespace basalt::testing {

class ClusterFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (quorum_.empty()) quorum_ = TestZkQuorum();
    if (ceph_conf_.empty()) ceph_conf_ = TestCephConf();
    ASSERT_FALSE(quorum_.empty() || ceph_conf_.empty()) << kTestServicesHelp;
    // (A parameterized test's name has a '/', which a ZooKeeper path and a namespace cannot.)
    const std::string id = absl::StrCat(
        ::getpid(), "-",
        absl::StrReplaceAll(::testing::UnitTest::GetInstance()->current_test_info()->name(), {{"/", "-"}}));
    parent_ = "/cluster-" + id;
    storage_ = {"--rados_pool=basalt", "--ceph_conf=" + ceph_conf_, "--rados_namespace=cluster-" + id,
                "--data_dir=" + data_dir()};
    ZooKeeper::Options o;
    o.quorum = quorum_;
    auto zk = ZooKeeper::Connect(o);
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = *std::move(zk);
  }
  // A failed test prints the last lines of each master's log and of each region server's output
  // (all CI shows), and keeps them all in $BASALT_CLUSTER_LOGS/<test> when that is set.
  void TearDown() override {
    if (!HasFailure()) return;
    std::fflush(stdout);  // (the test's own lines first)
    std::system(absl::StrCat("cd '", dir_.path(), "' && for f in *.log rs*/stderr rs*/stdout; do [ -f \"$f\" ] && ",
                             "{ echo \"--- the last lines of $f\"; tail -n 12 \"$f\"; }; done")
                    .c_str());
    const char* keep = std::getenv("BASALT_CLUSTER_LOGS");
    if (keep == nullptr || *keep == '\0' || parent_.empty()) return;
    const std::string to = absl::StrCat(keep, "/", parent_.substr(1));
    if (std::system(absl::StrCat("mkdir -p '", keep, "' && cp -r '", dir_.path(), "' '", to, "'").c_str()) == 0) {
      std::printf("logs kept in %s\n", to.c_str());
    }
  }
  // A ZooKeeper identity for the cluster's daemons (zookeeper_auth_file): the file's path.
  std::string WriteIdentity() {
    const std::string path = dir_.path() + "/zookeeper-identity";
    std::ofstream(path) << "basalt:" << parent_.substr(1) << "-secret\n";
    return path;
  }
  // The fixture's own ZooKeeper session again, as that identity (to see the cluster's nodes).
  void ConnectAsIdentity() {
    ZooKeeper::Options o;
    o.quorum = quorum_;
    o.digest = "basalt:" + parent_.substr(1) + "-secret";
    auto zk = ZooKeeper::Connect(o);
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = *std::move(zk);
  }
  // A path in RADOS, shared by the master and every server.
  std::string data_dir() const { return "/data"; }

  // `balancer_ms`: how often it balances on its own (0: only when asked); `session_ms`: its
  // ZooKeeper session timeout; `fault_point`: the point it kills itself at (common/fault_point.h).
  std::unique_ptr<ChildProcess> StartMaster(const std::string& name, int balancer_ms = 0, int session_ms = 1000,
                                            const std::string& fault_point = "",
                                            const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv;
    if (auto it = master_launchers_.find(name); it != master_launchers_.end()) argv = it->second;
    if (!fault_point.empty()) argv.insert(argv.end(), {"/usr/bin/env", "BASALT_FAULT_POINT=" + fault_point});
    argv.insert(argv.end(), {BASALT_MASTER_BINARY,
                                     "--name=" + name,
                                     "--zookeeper_quorum=" + quorum_,
                                     "--zookeeper_znode_parent=" + parent_,
                                     absl::StrCat("--zookeeper_session_timeout_ms=", session_ms),
                                     "--listen=127.0.0.1:0",
                                     "--http_listen=127.0.0.1:0",
                                     absl::StrCat("--balancer_period_ms=", balancer_ms)});
    argv.insert(argv.end(), storage_.begin(), storage_.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto m = ChildProcess::Spawn(argv, dir_.path() + "/" + name + ".log");
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *std::move(m) : nullptr;
  }
  // HOST:PORT of master `name`'s HTTP port, as it said at start ("" until it has).
  std::string MasterHttpAddress(const std::string& name) {
    std::ifstream in(dir_.path() + "/" + name + ".log");
    std::stringstream text;
    text << in.rdbuf();
    const std::string said = "basalt-master: status on http";  // http:// or https://
    const size_t at = text.str().find(said);
    if (at == std::string::npos) return "";
    const size_t from = text.str().find("://", at) + 3;
    return text.str().substr(from, text.str().find('/', from) - from);
  }
  // A region server of the cluster (not started).
  // `session_ms`: its ZooKeeper session timeout; `extra`: more flags.
  std::unique_ptr<ServerProcess> NewServer(int session_ms = 1000, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--cluster",
                                     "--zookeeper_quorum=" + quorum_,
                                     "--zookeeper_znode_parent=" + parent_,
                                     absl::StrCat("--zookeeper_session_timeout_ms=", session_ms),
                                     "--rados_object_size=64KiB",
                                     "--rados_op_timeout_s=5"};
    args.insert(args.end(), storage_.begin(), storage_.end());
    args.insert(args.end(), extra.begin(), extra.end());
    // Each its own directory (rs<n>) for its output and port file. ServerProcess's data directory
    // argument comes first; the one in storage_ (RADOS) wins.
    const std::string own = absl::StrCat(dir_.path(), "/rs", ++servers_made_);
    std::filesystem::create_directories(own);
    return std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, own + "/unused", args, own);
  }
  // Starts `n` region servers (added to `servers`) and waits until the master serves and the n
  // are live.
  void StartServers(int n, std::vector<std::unique_ptr<ServerProcess>>* servers) {
    for (int i = 0; i < n; ++i) {
      servers->push_back(NewServer());
      // (Says how it failed; CI saw one exit at start-up, twice, and no run here repeated it.)
      const absl::Status started = servers->back()->Start();
      ASSERT_TRUE(started.ok()) << "region server " << servers->size() << ": " << started;
    }
    ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == static_cast<size_t>(n); }));
  }
  // Master m1, `n` region servers (live, and the master serving) and a client.
  struct Servers {
    std::unique_ptr<ChildProcess> master;
    std::vector<std::unique_ptr<ServerProcess>> servers;
    std::unique_ptr<Connection> conn;
  };
  void StartServersAndConnect(int n, Servers* out) {
    out->master = StartMaster("m1");
    ASSERT_TRUE(out->master);
    ASSERT_NO_FATAL_FAILURE(StartServers(n, &out->servers));
    out->conn = Connect();
    ASSERT_TRUE(out->conn);
  }
  // A master and one region server started under `launcher` (e.g. {"env",
  // "BASALT_FAULT_POINT=..."}), once the master serves and the server is live, and a client.
  struct OneServer {
    std::unique_ptr<ChildProcess> master;
    std::unique_ptr<ServerProcess> server;
    std::unique_ptr<Connection> conn;
  };
  void StartOneServer(std::vector<std::string> launcher, OneServer* out) {
    out->master = StartMaster("m1");
    ASSERT_TRUE(out->master);
    out->server = NewServer();
    out->server->set_launcher(std::move(launcher));
    ASSERT_TRUE(out->server->Start().ok());
    ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
    out->conn = Connect();
    ASSERT_TRUE(out->conn);
  }
  // An active master m1 (killing itself at `m1_fault_point`, if one is given) and a backup m2,
  // two region servers, a client, and `table` in two regions (split at "m") holding rows a..z.
  struct TwoMasters {
    std::unique_ptr<ChildProcess> m1, m2;
    std::vector<std::unique_ptr<ServerProcess>> servers;
    std::unique_ptr<Connection> conn;
    std::unique_ptr<Table> table;
  };
  void StartTwoMastersAndATable(const std::string& table, const std::string& m1_fault_point, TwoMasters* out) {
    out->m1 = StartMaster("m1", 0, 1000, m1_fault_point);
    ASSERT_TRUE(out->m1);
    ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
    out->m2 = StartMaster("m2");
    ASSERT_TRUE(out->m2);
    ASSERT_NO_FATAL_FAILURE(StartServers(2, &out->servers));
    out->conn = Connect();
    ASSERT_TRUE(out->conn);
    ASSERT_TRUE(out->conn->GetAdmin()->CreateTable(TableNamed(table), {"m"}).ok());
    out->table = out->conn->GetTable(table);
    ASSERT_NO_FATAL_FAILURE(PutLetters(out->table.get(), "acked"));
  }
  // Puts rows "a".."z", each with f:q = value (a failed Put fails the test).
  static void PutLetters(Table* table, const std::string& value) {
    for (char k = 'a'; k <= 'z'; ++k) ASSERT_TRUE(table->Put(Put(std::string(1, k)).Add("f", "q", value)).ok()) << k;
  }
  // Reads rows "a".."z": each must hold f:q = value.
  static void ExpectLetters(Table* table, const std::string& value) {
    for (char k = 'a'; k <= 'z'; ++k) {
      auto r = table->Get(Get(std::string(1, k)));
      ASSERT_TRUE(r.ok()) << k << ": " << r.status();
      EXPECT_EQ(r->Value("f", "q").value_or("<lost>"), value) << k;
    }
  }
  // Every row of `table` with its f:q value, by a full scan (a failed scan fails the test).
  static void ScanValues(Table* table, std::map<std::string, std::string>* found) {
    auto scanner = table->GetScanner(Scan());
    ASSERT_TRUE(scanner.ok()) << scanner.status();
    Result r;
    for (;;) {
      auto more = (*scanner)->Next(&r);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) return;
      (*found)[r.row()] = r.Value("f", "q").value_or("");
    }
  }
  std::string Leader() {
    auto l = LeaderElection::Leader(zk_.get(), parent_ + "/master");
    return l.ok() && l->has_value() ? **l : "";
  }
  std::vector<std::string> Children(const std::string& dir) {
    return zk_->Children(parent_ + dir).value_or(std::vector<std::string>{});
  }
  static bool Eventually(const std::function<bool()>& cond, absl::Duration limit = absl::Seconds(30)) {
    for (absl::Time end = absl::Now() + limit; absl::Now() < end; absl::SleepFor(absl::Milliseconds(10))) {
      if (cond()) return true;
    }
    return cond();
  }
  // A client that knows only ZooKeeper.
  std::unique_ptr<Connection> Connect(absl::Duration timeout = absl::Seconds(30),
                                      TransportChoice transport = TransportChoice::kAuto,
                                      const ClientSecurity& security = {}) {
    ConnectionOptions o;
    o.security = security;
    o.transport = transport;
    o.zookeeper_quorum = quorum_;
    o.zookeeper_znode_parent = parent_;
    o.timeout = timeout;
    o.max_attempts = 1000;
    o.max_backoff = absl::Milliseconds(100);
    auto c = Connection::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  // The master is serving once ZooKeeper names it as meta's server.
  bool MasterServes() { return zk_->Get(parent_ + "/meta-server").value_or(std::nullopt).has_value(); }
  static TableInfo TableNamed(const std::string& name) {
    TableInfo t;
    t.name = name;
    t.families.push_back(FamilySettings{});
    t.families.back().name = "f";
    return t;
  }
  // A Put sent straight to `server` over gRPC, naming `region` (as a client that located the
  // row there before does), with a 10 s deadline.
  static grpc::Status RawPut(const std::string& server, const std::string& table, const std::string& region,
                             const std::string& row) {
    auto stub = rpc::Basalt::NewStub(grpc::CreateChannel(server, grpc::InsecureChannelCredentials()));
    rpc::MutateRequest req;
    req.set_table(table);
    req.set_region(region);
    req.mutable_mutation()->set_row(row);
    rpc::Mutation* m = req.mutable_mutation()->add_mutations();
    m->set_family("f");
    m->set_qualifier("q");
    m->set_value("never");
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    rpc::MutateResponse resp;
    return stub->Mutate(&ctx, req, &resp);
  }
  // A move of `region` to `server`, asked again (for up to 30 s) while the master refuses it
  // because it has not yet seen `server` join: a test sees the server's registration in
  // ZooKeeper before the master's watch on it has run, more so on a busy machine.
  static absl::Status MoveWhenLive(Connection* conn, const std::string& region, const std::string& server) {
    absl::Status moved;
    Eventually([&] {
      moved = conn->GetAdmin()->Move(region, server);
      return !absl::IsInvalidArgument(moved) || moved.message().find("no live region server") == std::string::npos;
    });
    return moved;
  }
  // Regions per server, as list_regions says (state OPEN only).
  static std::map<std::string, int> RegionsPerServer(Connection* conn, const std::string& table) {
    std::map<std::string, int> out;
    auto regions = conn->GetAdmin()->ListRegions(table);
    if (!regions.ok()) return out;
    for (const RegionStatus& r : *regions) {
      if (r.state == "OPEN") ++out[r.server];
    }
    return out;
  }

  // Runs the shell through ZooKeeper with `commands` (-e); its exit code, and its output in `out`.
  int Shell(const std::string& commands, std::string* out) {
    absl::StatusOr<ChildProcess::Finished> run = ChildProcess::Run(
        {BASALT_SHELL_BINARY, "--zookeeper=" + quorum_, "--znode-parent=" + parent_, "--no-timing", "-e", commands});
    if (!run.ok()) return -1;
    out->append(run->output);
    return run->exit_code;
  }

  TempDir dir_;
  int servers_made_ = 0;
  // ZooKeeper and Ceph: the tests' (tests/services/) unless a derived fixture sets its own
  // before SetUp; master `name` runs under master_launchers_[name] when there is one.
  std::string quorum_, ceph_conf_;
  std::map<std::string, std::vector<std::string>> master_launchers_;
  std::string parent_;
  std::vector<std::string> storage_;
  std::unique_ptr<ZooKeeper> zk_;
};

}  // namespace basalt::testing
