// Cluster membership and fencing on the tests' real ZooKeeper and Ceph (tests/services/): real
// basalt-master and basalt-server processes, the server's data on RADOS.
//  - The zombie test (issue 13, must-show 4, with one server): a server is stopped (SIGSTOP)
//    past its session timeout; the active master fences it; once it runs again (SIGCONT) it
//    acknowledges no write and exits; a new server on the same storage serves every acknowledged
//    row and not the write the zombie was sent.
//  - A backup master takes over when the active one is killed, and fences the server that died
//    while no master was active (its registration outlived it in ZooKeeper).
//  - A client that knows only the cluster's ZooKeeper follows the server to its new address
//    after a kill -9 and a start elsewhere, and the shell takes --zookeeper.
#include <signal.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "basalt/client.h"
#include "common/test_services.h"
#include "common/zookeeper.h"
#include "gtest/gtest.h"
#include "tests/util/child_process.h"
#include "tests/util/server_process.h"
#include "tests/util/temp_dir.h"

namespace basalt::testing {
namespace {

class Cluster : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(TestZkQuorum().empty() || TestCephConf().empty()) << kTestServicesHelp;
    const std::string id = absl::StrCat(::getpid(), "-", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    parent_ = "/fencing-" + id;
    storage_ = {"--rados_pool=basalt", "--ceph_conf=" + TestCephConf(), "--rados_namespace=fencing-" + id};
    ZooKeeper::Options o;
    o.quorum = TestZkQuorum();
    auto zk = ZooKeeper::Connect(o);
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = *std::move(zk);
  }

  std::unique_ptr<ChildProcess> StartMaster(const std::string& name) {
    std::vector<std::string> argv = {BASALT_MASTER_BINARY, "--name=" + name, "--zookeeper_quorum=" + TestZkQuorum(),
                                     "--zookeeper_znode_parent=" + parent_, "--zookeeper_session_timeout_ms=1000"};
    argv.insert(argv.end(), storage_.begin(), storage_.end());
    auto m = ChildProcess::Spawn(argv, dir_.path() + "/" + name + ".log");
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *std::move(m) : nullptr;
  }
  std::unique_ptr<ServerProcess> NewServer() {
    std::vector<std::string> args = {"--zookeeper_quorum=" + TestZkQuorum(), "--zookeeper_znode_parent=" + parent_,
                                     "--zookeeper_session_timeout_ms=1000", "--rados_object_size=64KiB"};
    args.insert(args.end(), storage_.begin(), storage_.end());
    // The data directory is a path in RADOS; the port file beside it is local.
    return std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, dir_.path() + "/data", args, dir_.path());
  }
  std::string Leader() {
    auto l = LeaderElection::Leader(zk_.get(), parent_ + "/master");
    return l.ok() && l->has_value() ? **l : "";
  }
  std::vector<std::string> Children(const std::string& dir) {
    return zk_->Children(parent_ + dir).value_or(std::vector<std::string>{});
  }
  static bool Eventually(const std::function<bool()>& cond, absl::Duration limit = absl::Seconds(20)) {
    for (absl::Time end = absl::Now() + limit; absl::Now() < end; absl::SleepFor(absl::Milliseconds(10))) {
      if (cond()) return true;
    }
    return cond();
  }
  std::unique_ptr<Connection> Connect(const ServerProcess& s, absl::Duration timeout = absl::Seconds(20), int attempts = 10) {
    ConnectionOptions o;
    o.address = s.address();
    o.timeout = timeout;
    o.max_attempts = attempts;
    auto c = Connection::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  TempDir dir_;
  std::string parent_;
  std::vector<std::string> storage_;
  std::unique_ptr<ZooKeeper> zk_;
};

TEST_F(Cluster, AZombieServerAcknowledgesNothingAfterItWasFenced) {
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  auto server = NewServer();
  ASSERT_TRUE(server->Start().ok());
  ASSERT_EQ(Children("/rs").size(), 1u);
  const std::string node = Children("/rs")[0];
  {
    auto conn = Connect(*server);
    ASSERT_TRUE(conn);
    TableInfo t;
    t.name = "z";
    t.families.push_back(FamilySettings{});
    t.families.back().name = "f";
    ASSERT_TRUE(conn->GetAdmin()->CreateTable(t, {"m"}).ok());
    auto table = conn->GetTable("z");
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(table->Put(Put(absl::StrCat("row", 100 + i)).Add("f", "q", "acked")).ok());
    }
  }

  server->Signal(SIGSTOP);
  const absl::Time stopped = absl::Now();
  ASSERT_TRUE(Eventually([&] { return !Children("/fenced").empty(); })) << "the master never fenced the stopped server";
  const absl::Duration fenced_after = absl::Now() - stopped;
  EXPECT_EQ(Children("/fenced"), std::vector<std::string>{node});
  EXPECT_TRUE(Children("/servers").empty());  // its registration is done with

  // A write sent to the zombie, which it takes in once it runs again.
  absl::Status zombie_put;
  std::thread writer([&] {
    auto conn = Connect(*server, absl::Seconds(10), 1);
    if (conn) zombie_put = conn->GetTable("z")->Put(Put("zombie").Add("f", "q", "never"));
  });
  absl::SleepFor(absl::Milliseconds(300));
  server->Signal(SIGCONT);
  writer.join();
  EXPECT_FALSE(zombie_put.ok()) << "a fenced server acknowledged a write";
  std::printf("the zombie's write: %s\n", zombie_put.ToString().c_str());
  EXPECT_EQ(server->WaitForExit(std::chrono::seconds(20)), 3) << "the zombie did not stop when told its session ended";

  // Another server on the same storage: every acknowledged row, and not the zombie's.
  auto next = NewServer();
  ASSERT_TRUE(next->Start().ok());
  auto conn = Connect(*next);
  ASSERT_TRUE(conn);
  auto table = conn->GetTable("z");
  for (int i = 0; i < 100; ++i) {
    auto r = table->Get(Get(absl::StrCat("row", 100 + i)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->Value("f", "q").value_or("<lost>"), "acked") << i;
  }
  auto z = table->Get(Get("zombie"));
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TRUE(z->empty()) << "the fenced server's write reached storage";
  std::printf("session timeout 1 s: fenced %s after SIGSTOP\n", absl::FormatDuration(fenced_after).c_str());
}

// The same from the storage's side, without the race between the zombie's exit and its next
// write: the master takes a server that still runs for dead (its live node is gone, as when a
// partition cuts it off from ZooKeeper while it can still reach Ceph) and fences it; the next
// write the server takes fails as fenced, before anything is acknowledged.
TEST_F(Cluster, AServerFencedWhileRunningAcknowledgesNoWrite) {
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  auto server = NewServer();
  ASSERT_TRUE(server->Start().ok());
  const std::string node = Children("/rs").at(0);
  auto conn = Connect(*server, absl::Seconds(10), 1);
  ASSERT_TRUE(conn);
  TableInfo t;
  t.name = "p";
  t.families.push_back(FamilySettings{});
  t.families.back().name = "f";
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(t, {}).ok());
  auto table = conn->GetTable("p");
  ASSERT_TRUE(table->Put(Put("before").Add("f", "q", "acked")).ok());

  ASSERT_TRUE(zk_->Delete(parent_ + "/rs/" + node).ok());
  ASSERT_TRUE(Eventually([&] { return Children("/fenced") == std::vector<std::string>{node}; }));
  absl::Status s = table->Put(Put("after").Add("f", "q", "never"));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_NE(std::string(s.message()).find("fenced"), std::string::npos) << s;
  server->Kill();

  auto next = NewServer();
  ASSERT_TRUE(next->Start().ok());
  auto conn2 = Connect(*next);
  ASSERT_TRUE(conn2);
  auto t2 = conn2->GetTable("p");
  EXPECT_EQ(t2->Get(Get("before")).value().Value("f", "q").value_or("<lost>"), "acked");
  EXPECT_TRUE(t2->Get(Get("after")).value().empty()) << "a fenced server's write reached storage";
}

TEST_F(Cluster, ABackupMasterTakesOverAndFencesWhatDiedWhileNoMasterWasActive) {
  auto m1 = StartMaster("m1");
  ASSERT_TRUE(m1);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  auto m2 = StartMaster("m2");
  ASSERT_TRUE(m2);
  ASSERT_TRUE(Eventually([&] { return zk_->Children(parent_ + "/master").value_or(std::vector<std::string>{}).size() == 2; }));
  auto server = NewServer();
  ASSERT_TRUE(server->Start().ok());
  const std::string node = Children("/rs").at(0);

  // The active master and the server die together; the backup takes over once the master's
  // session has expired, and finds the dead server among the registrations.
  m1->Stop(SIGKILL);
  server->Kill();
  const absl::Time killed = absl::Now();
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2"; }));
  const absl::Duration takeover = absl::Now() - killed;
  ASSERT_TRUE(Eventually([&] { return Children("/fenced") == std::vector<std::string>{node}; }));
  const absl::Duration fenced = absl::Now() - killed;
  EXPECT_LT(takeover, absl::Seconds(10));
  auto record = zk_->Get(parent_ + "/fenced/" + node);
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_NE((*record)->data.find("by=m2"), std::string::npos) << (*record)->data;
  std::printf("session timeout 1 s: backup master active %s after kill -9, dead server fenced at %s\n",
              absl::FormatDuration(takeover).c_str(), absl::FormatDuration(fenced).c_str());
}

TEST_F(Cluster, AClientOfTheClusterFollowsItsServerToANewAddress) {
  auto first = NewServer();
  ASSERT_TRUE(first->Start().ok());
  ConnectionOptions o;
  o.zookeeper_quorum = TestZkQuorum();
  o.zookeeper_znode_parent = parent_;
  o.timeout = absl::Seconds(30);
  o.max_attempts = 100;
  o.max_backoff = absl::Milliseconds(200);
  auto conn = Connection::Open(o);
  ASSERT_TRUE(conn.ok()) << conn.status();
  TableInfo t;
  t.name = "f";
  t.families.push_back(FamilySettings{});
  t.families.back().name = "cf";
  ASSERT_TRUE((*conn)->GetAdmin()->CreateTable(t, {}).ok());
  auto table = (*conn)->GetTable("f");
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(table->Put(Put(absl::StrCat("r", i)).Add("cf", "q", "before")).ok());

  // The server dies; another starts on the same storage at another port (another host, in
  // a real cluster). The client goes on with nothing but retries.
  const std::string old_address = first->address();
  first->Kill();
  auto second = NewServer();
  ASSERT_TRUE(second->Start().ok());
  ASSERT_NE(second->address(), old_address);
  for (int i = 50; i < 100; ++i) {
    absl::Status s = table->Put(Put(absl::StrCat("r", i)).Add("cf", "q", "after"));
    ASSERT_TRUE(s.ok()) << s;
  }
  for (int i = 0; i < 100; ++i) {
    auto r = table->Get(Get(absl::StrCat("r", i)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->Value("cf", "q").value_or("<lost>"), i < 50 ? "before" : "after") << i;
  }
  EXPECT_EQ((*conn)->GetTransportStats().meta_lookups, 1u);  // the regions kept their names

  // Neither the address nor the quorum, or both: refused.
  ConnectionOptions both = o;
  both.address = second->address();
  EXPECT_EQ(Connection::Open(both).status().code(), absl::StatusCode::kInvalidArgument);
  // A parent node no server ever named: no server to go to.
  ConnectionOptions nowhere = o;
  nowhere.zookeeper_znode_parent = parent_ + "-nowhere";
  EXPECT_EQ(Connection::Open(nowhere).status().code(), absl::StatusCode::kUnavailable);

  // The shell, through ZooKeeper.
  const std::string cmd = absl::StrCat(BASALT_SHELL_BINARY, " --zookeeper=", TestZkQuorum(), " --znode-parent=", parent_,
                                       " --no-timing -e \"count 'f'\" 2>&1");
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << out;
  EXPECT_NE(out.find("100 row(s)"), std::string::npos) << out;
}

}  // namespace
}  // namespace basalt::testing
