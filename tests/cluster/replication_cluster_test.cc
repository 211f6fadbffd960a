// A Basalt cluster as a replication source (docs/DESIGN.md §15, "A cluster as a source"): a real
// master and region servers on the tests' ZooKeeper and Ceph ship their logs to a standalone
// Basalt sink, whose HBase port is published in ZooKeeper as HBase's clusters publish theirs. The
// peer is added with the shell through the master; each region server ships its own log. A
// region server is killed with -9 under a writer: what it had not shipped is shipped by the
// master from what its log's split kept, and once the consistency token says so every row is
// equal on both sides. And a cluster as the sink, its master killed mid-stream.
#include <atomic>
#include <csignal>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/rados_env.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/util/scan_rows.h"

namespace basalt::testing {
namespace {

class ClusterReplicationTest : public ClusterFixture {
 protected:
  // A standalone Basalt server as the sink, its HBase port published under parent_-sink.
  void StartSink() {
    sink_parent_ = parent_ + "-sink";
    sink_ = std::make_unique<ServerProcess>(
        BASALT_SERVER_BINARY, dir_.path() + "/sink",
        std::vector<std::string>{"--http_listen=", "--hbase_listen=127.0.0.1:0", "--hbase_zookeeper_quorum=" + quorum_,
                                 "--hbase_znode_parent=" + sink_parent_});
    ASSERT_TRUE(sink_->Start().ok());
    ConnectionOptions o;
    o.address = sink_->address();
    o.timeout = absl::Seconds(20);
    auto c = Connection::Open(o);
    ASSERT_TRUE(c.ok()) << c.status();
    sink_conn_ = *std::move(c);
    ASSERT_TRUE(sink_conn_->GetAdmin()->CreateTable(TableNamed("t")).ok());
  }
  std::string SinkKey() const { return absl::StrCat(quorum_, ":", sink_parent_); }

  std::string sink_parent_;
  std::unique_ptr<ServerProcess> sink_;
  std::unique_ptr<Connection> sink_conn_;
};

TEST_F(ClusterReplicationTest, EachServerShipsItsLogAndADeadOnesRestIsShipped) {
  ASSERT_NO_FATAL_FAILURE(StartSink());
  Servers c;
  ASSERT_NO_FATAL_FAILURE(StartServersAndConnect(2, &c));
  ASSERT_TRUE(c.conn->GetAdmin()->CreateTable(TableNamed("t"), {"m"}).ok());
  std::string out;
  ASSERT_EQ(Shell(absl::StrCat("enable_table_replication 't'; add_peer 'b', CLUSTER_KEY => '", SinkKey(), "'"), &out),
            0)
      << out;
  // Both servers hold a region: each ships its own log.
  ASSERT_EQ(RegionsPerServer(c.conn.get(), "t").size(), 2u);

  // A writer across both regions that never stops; one server is killed with -9 under it.
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0}, failed{0};
  std::thread writer([&] {
    auto t = c.conn->GetTable("t");
    for (int i = 0; !stop.load(); ++i) {
      const std::string row = absl::StrCat(i % 2 == 0 ? "a" : "z", 100000 + i);
      t->Put(basalt::Put(row).Add("f", "q", absl::StrCat("v", i))).ok() ? ++acked : ++failed;
    }
  });
  auto wait_for = [&](int n) {
    for (int i = 0; i < 3000 && acked.load() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  wait_for(400);
  // Its shipper's place is kept at most once a second: killed now, it has shipped less than it
  // logged, and the rest is only in its log.
  c.servers[0]->Kill();
  const int at_kill = acked.load();
  wait_for(at_kill + 400);
  stop = true;
  writer.join();
  ASSERT_GT(acked.load(), at_kill + 300);

  // The consistency token. Writes made while the peer is disabled are not on it: the token says
  // so, naming the peer.
  std::unique_ptr<Admin> admin = c.conn->GetAdmin();
  ASSERT_TRUE(admin->DisablePeer("b").ok());
  auto t = c.conn->GetTable("t");
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(t->Put(basalt::Put(absl::StrCat("m", i)).Add("f", "q", "late")).ok());
  absl::StatusOr<std::string> token = admin->GenerateConsistencyToken("t");
  ASSERT_TRUE(token.ok()) << token.status();
  std::string waiting;
  absl::StatusOr<bool> consistent = admin->CheckConsistency("t", *token, &waiting);
  ASSERT_TRUE(consistent.ok()) << consistent.status();
  EXPECT_FALSE(*consistent);
  EXPECT_NE(waiting.find("peer b"), std::string::npos) << waiting;
  EXPECT_NE(waiting.find("disabled"), std::string::npos) << waiting;
  // Enabled, once it says so every acknowledged row is on the sink, the dead server's included
  // (the sink is read straight after, the source then).
  ASSERT_TRUE(admin->EnablePeer("b").ok());
  absl::Status waited = admin->WaitForReplication("t", absl::Seconds(60));
  ASSERT_TRUE(waited.ok()) << waited;
  std::map<std::string, std::string> got = ScanCellValues(sink_conn_->GetTable("t").get(), "f", "q");
  std::map<std::string, std::string> want = ScanCellValues(c.conn->GetTable("t").get(), "f", "q");
  ASSERT_GE(want.size(), static_cast<size_t>(acked.load() + 20));
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);

  // The dead server's kept log and places go once shipped whole: left are the live server's
  // places, and no log is kept beside the live one's.
  RadosEnvOptions o;
  o.ceph_conf = ceph_conf_;
  o.root = storage_[2].substr(std::string("--rados_namespace=").size());
  auto env = RadosEnv::Connect(o);
  ASSERT_TRUE(env.ok()) << env.status();
  std::vector<std::string> runs, logs;
  EXPECT_TRUE(Eventually([&] {
    runs = (*env)->ListDir(data_dir() + "/replication/rs").value_or(std::vector<std::string>{});
    logs = (*env)->ListDir(data_dir() + "/wals").value_or(std::vector<std::string>{});
    return runs.size() == 1 && logs.size() == 1 && runs[0] == logs[0];
  })) << absl::StrJoin(runs, " ") << " / " << absl::StrJoin(logs, " ");
  // The master's figures are its region servers' (and its own for what dead ones left).
  std::string status;
  EXPECT_EQ(Shell("status 'replication'", &status), 0);
  EXPECT_NE(status.find("PeerID=b, State=SHIPPING"), std::string::npos) << status;
}


// The active master killed while it ships a dead server's rest (the fault point after its first
// batch of a dead log): the backup that takes over ships it from the kept places, and every row
// arrives. The peer is disabled while the server dies, so that the rest is all there to ship
// once it is enabled.
TEST_F(ClusterReplicationTest, AMasterKilledWhileItShipsADeadServersRestLeavesItToTheNext) {
  ASSERT_NO_FATAL_FAILURE(StartSink());
  std::unique_ptr<ChildProcess> m1 = StartMaster("m1", 0, 1000, "replication:dead-log-batch-shipped");
  ASSERT_TRUE(m1);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  std::unique_ptr<ChildProcess> m2 = StartMaster("m2");
  ASSERT_TRUE(m2);
  std::vector<std::unique_ptr<ServerProcess>> servers;
  ASSERT_NO_FATAL_FAILURE(StartServers(2, &servers));
  std::unique_ptr<Connection> conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("t"), {"m"}).ok());
  std::string out;
  ASSERT_EQ(Shell(absl::StrCat("enable_table_replication 't'; add_peer 'b', CLUSTER_KEY => '", SinkKey(),
                               "', STATE => 'DISABLED'"),
                  &out),
            0)
      << out;
  ASSERT_EQ(RegionsPerServer(conn.get(), "t").size(), 2u);
  auto t = conn->GetTable("t");
  auto put = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      const std::string row = absl::StrCat(i % 2 == 0 ? "a" : "z", 100000 + i);
      ASSERT_TRUE(t->Put(basalt::Put(row).Add("f", "q", absl::StrCat("v", i))).ok()) << row;
    }
  };
  ASSERT_NO_FATAL_FAILURE(put(0, 300));
  servers[0]->Kill();  // its log holds half the rows, none shipped (the peer is disabled)
  ASSERT_NO_FATAL_FAILURE(put(300, 400));  // (once its region serves on the other server)
  // Enabled: m1 ships the dead server's rest, and dies after its first batch.
  absl::Status enabled = conn->GetAdmin()->EnablePeer("b");
  ASSERT_TRUE(m1->WaitForExit(absl::Seconds(30)).has_value()) << "m1 never reached its fault point: " << enabled;
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2"; }));

  absl::Status waited = conn->GetAdmin()->WaitForReplication("t", absl::Seconds(60));
  ASSERT_TRUE(waited.ok()) << waited;
  std::map<std::string, std::string> got = ScanCellValues(sink_conn_->GetTable("t").get(), "f", "q");
  std::map<std::string, std::string> want = ScanCellValues(t.get(), "f", "q");
  ASSERT_EQ(want.size(), 400u);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
}

// A cluster as the sink, its active master killed with -9 mid-stream, and a region server right
// after it. A standalone source ships to the cluster's region servers, which apply each batch by
// routing its cells to the regions' servers through basalt:meta on the active master. The dead
// server's regions are reassigned only once m2 has taken over: until then a batch with cells of
// theirs waits in the sink (its client retries) or is refused and shipped again. Once the
// source's consistency token says so, every row is on the sink. (With the master alone killed
// the stream runs on undisturbed: the region servers know where the regions are, and the source
// where the sinks are.) A sink that applied batches without its log fails here (seen: 122 of
// 926 rows missing).
TEST_F(ClusterReplicationTest, ASinkClustersMasterKilledMidStreamLosesNothing) {
  const std::string hbase_parent = parent_ + "-hbase";
  const std::vector<std::string> hbase_port = {"--hbase_listen=127.0.0.1:0", "--hbase_znode_parent=" + hbase_parent};
  std::unique_ptr<ChildProcess> m1 = StartMaster("m1", 0, 1000, "", hbase_port);
  ASSERT_TRUE(m1);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  std::unique_ptr<ChildProcess> m2 = StartMaster("m2", 0, 1000, "", hbase_port);
  ASSERT_TRUE(m2);
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(NewServer(1000, {"--hbase_listen=127.0.0.1:0"}));
    ASSERT_TRUE(servers.back()->Start().ok());
  }
  ASSERT_TRUE(Eventually([&] {
    return MasterServes() && Children("/rs").size() == 2 && zk_->Children(hbase_parent + "/rs").value_or(std::vector<std::string>{}).size() == 2;
  }));
  std::unique_ptr<Connection> sink = Connect();
  ASSERT_TRUE(sink);
  ASSERT_TRUE(sink->GetAdmin()->CreateTable(TableNamed("t"), {"m"}).ok());
  ASSERT_EQ(RegionsPerServer(sink.get(), "t").size(), 2u);

  // The source: a standalone server, its table's family replicated to the cluster.
  ServerProcess source(BASALT_SERVER_BINARY, dir_.path() + "/source", {"--http_listen="});
  ASSERT_TRUE(source.Start().ok());
  ConnectionOptions o;
  o.address = source.address();
  o.timeout = absl::Seconds(20);
  absl::StatusOr<std::unique_ptr<Connection>> on_source = Connection::Open(o);
  ASSERT_TRUE(on_source.ok()) << on_source.status();
  std::unique_ptr<Admin> admin = (*on_source)->GetAdmin();
  TableInfo replicated = TableNamed("t");
  for (FamilySettings& f : replicated.families) f.metadata = {{"REPLICATION_SCOPE", "1"}};
  ASSERT_TRUE(admin->CreateTable(replicated).ok());
  ReplicationPeer peer;
  peer.id = "cluster";
  peer.cluster_key = absl::StrCat(quorum_, ":", hbase_parent);
  ASSERT_TRUE(admin->AddPeer(peer).ok());

  // A writer across both of the sink's regions; m1 is killed under it.
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0};
  std::thread writer([&] {
    auto t = (*on_source)->GetTable("t");
    for (int i = 0; !stop.load(); ++i) {
      const std::string row = absl::StrCat(i % 2 == 0 ? "a" : "z", 100000 + i);
      if (t->Put(basalt::Put(row).Add("f", "q", absl::StrCat("v", i))).ok()) ++acked;
    }
  });
  auto wait_for = [&](int n) {
    for (int i = 0; i < 3000 && acked.load() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  wait_for(300);
  // Some of it is on the sink already: the stream runs when m1 dies.
  auto on_sink = sink->GetTable("t");
  ASSERT_TRUE(Eventually([&] { return !ScanCellValues(on_sink.get(), "f", "q").empty(); }));
  m1->Stop(SIGKILL);
  servers[0]->Kill();  // its regions wait for m2, which must take over first
  const int at_kill = acked.load();
  wait_for(at_kill + 600);
  stop = true;
  writer.join();
  ASSERT_GT(acked.load(), at_kill + 500);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2"; }));

  absl::Status waited = admin->WaitForReplication("t", absl::Seconds(60));
  ASSERT_TRUE(waited.ok()) << waited;
  std::map<std::string, std::string> want = ScanCellValues((*on_source)->GetTable("t").get(), "f", "q");
  std::map<std::string, std::string> got = ScanCellValues(on_sink.get(), "f", "q");
  ASSERT_EQ(want.size(), static_cast<size_t>(acked.load()));
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
}

}  // namespace
}  // namespace basalt::testing
