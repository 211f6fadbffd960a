// The unmodified HBase 2.6 client against a cluster (docs/DESIGN.md §15): real basalt-master and
// basalt-server --cluster processes on the tests' ZooKeeper and Ceph (tests/cluster/
// cluster_fixture.h, what deploy/cluster.sh starts), each with its HBase port. The client knows
// only ZooKeeper, where the active master published HBase's records: it finds the master there,
// hbase:meta on the master, and each region on the region server meta names.
#include <sys/stat.h>

#include <fstream>

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/hbase/hbase_standalone.h"
#include "tests/hbase/java_programs.h"

namespace basalt::testing {
namespace {

class HBaseClusterTest : public ClusterFixture {
 protected:
  // Master m1 and `n` region servers, all with an HBase port; HBase's records under
  // hbase_parent_. Returns once the master serves, the n are live and the records are there.
  // `every`: more flags for every daemon (the cluster's ZooKeeper identity).
  void StartCluster(int n, const std::vector<std::string>& every = {}) {
    hbase_parent_ = parent_ + "-hbase";
    std::vector<std::string> master_flags = {"--hbase_listen=127.0.0.1:0", "--hbase_znode_parent=" + hbase_parent_};
    master_flags.insert(master_flags.end(), every.begin(), every.end());
    master_ = StartMaster("m1", 0, 1000, "", master_flags);
    ASSERT_TRUE(master_);
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> flags = {"--hbase_listen=127.0.0.1:0",
                                        absl::StrCat("--hbase_port_file=", dir_.path(), "/rs", i, ".hbase")};
      flags.insert(flags.end(), every.begin(), every.end());
      servers_.push_back(NewServer(1000, flags));
      ASSERT_TRUE(servers_.back()->Start().ok());
    }
    ASSERT_TRUE(Eventually([&] {
      return MasterServes() && Children("/rs").size() == static_cast<size_t>(n) &&
             zk_->Get(hbase_parent_ + "/master").value_or(std::nullopt).has_value();
    }));
    conn_ = Connect(absl::Seconds(30), TransportChoice::kAuto, security_);
    ASSERT_TRUE(conn_);
  }
  std::string Registry() const { return absl::StrCat("zk:", quorum_, "@", hbase_parent_); }

  ClientSecurity security_;  // Basalt's own client's (StartCluster's conn_)
  std::string hbase_parent_;
  std::unique_ptr<ChildProcess> master_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::unique_ptr<Connection> conn_;
};

// ClientSuite.java's every Admin and Table call, through ZooKeeper, on a cluster of three region
// servers; then Basalt's own client reads the table it left (both views agree). Then a writer
// (Writer.java, one Put at a time) rides through a split of its table, a move of one of its
// regions and a kill -9 of the region server holding most of them; every Put it saw acknowledged
// is read back. Its table is in a namespace (hb_ns:faults): made through Basalt's client, written
// through HBase's.
TEST_F(HBaseClusterTest, TheJavaClientsCallsAndItsWritesThroughASplitAMoveAndAKill9) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(3));
  const std::string dump = dir_.path() + "/hb_keep.dump";
  absl::StatusOr<ChildProcess::Finished> suite = RunJava("ClientSuite", {Registry(), dump, "3"});
  ASSERT_TRUE(suite.ok()) << suite.status();
  const std::string& log = suite->output;
  ASSERT_EQ(suite->exit_code, 0) << log.substr(log.size() > 6000 ? log.size() - 6000 : 0);
  absl::StatusOr<std::string> ours = DumpTable(conn_.get(), "hb_keep", 2);
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(*ours, ReadFile(dump));
  // hb_keep's regions are on more than one server: the suite's scans crossed servers.
  EXPECT_GE(RegionsPerServer(conn_.get(), "hb_keep").size(), 2u);

  // HBase 2.6's RPC registry may name region servers alone (hbase.client.bootstrap.servers):
  // a region server's registry names the active master, and the client reads through it.
  std::string rs_port = ReadFile(dir_.path() + "/rs0.hbase");
  while (!rs_port.empty() && rs_port.back() == '\n') rs_port.pop_back();
  ASSERT_FALSE(rs_port.empty());
  absl::StatusOr<ChildProcess::Finished> probe = RunJava("ReadProbe", {"127.0.0.1:" + rs_port, "hb_keep", "3"});
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_NE(probe->output.find("ALL 3 READ"), std::string::npos) << probe->output;

  ASSERT_TRUE(conn_->GetAdmin()->CreateNamespace(NamespaceInfo{"hb_ns", {}, {}}).ok());
  const std::string faults = "hb_ns:faults";
  ASSERT_TRUE(conn_->GetAdmin()->CreateTable(TableNamed(faults), {"w001000"}).ok());
  constexpr int kRows = 2400;
  BackgroundWriter writer(Registry(), faults, kRows, dir_.path());
  ASSERT_TRUE(writer.started().ok()) << writer.started();
  // A split of the region being written (rows w000000..w000999 go to the first one).
  ASSERT_TRUE(writer.WaitFor(300)) << writer.log();
  absl::StatusOr<std::vector<RegionStatus>> regions = conn_->GetAdmin()->ListRegions(faults);
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_TRUE(conn_->GetAdmin()->Split(faults, "w000600").ok());
  // A move of the region that will be written next (w001000..) to another server.
  ASSERT_TRUE(writer.WaitFor(800)) << writer.log();
  regions = conn_->GetAdmin()->ListRegions(faults);
  ASSERT_TRUE(regions.ok()) << regions.status();
  const RegionStatus& next = regions->back();
  ASSERT_EQ(next.start_key, "w001000");
  std::string to;
  for (const auto& s : servers_) {
    if (s->address() != next.server) to = s->address();
  }
  ASSERT_TRUE(MoveWhenLive(conn_.get(), next.encoded_name, to).ok());
  // A kill -9 of the server holding that region now, while it is written.
  ASSERT_TRUE(writer.WaitFor(1300)) << writer.log();
  const int at_kill = writer.acked();
  for (auto& s : servers_) {
    if (s->address() == to) s->Kill();
  }
  std::optional<int> exit = writer.WaitForExit(absl::Seconds(240));
  ASSERT_TRUE(exit.has_value()) << "the writer did not finish: " << writer.log();
  EXPECT_EQ(*exit, 0) << writer.log();
  const int total = writer.acked();
  EXPECT_GT(total, at_kill + 500) << "few writes were acknowledged after the kill: " << writer.log();
  std::cout << "acknowledged " << total << " of " << kRows << " (" << at_kill << " before the kill -9); writer: "
            << writer.log().substr(0, 2000) << std::endl;
  int checked = 0;
  EXPECT_EQ(LostWrites(conn_.get(), faults, writer.acked_file(), &checked), "");
  EXPECT_EQ(checked, total);
}

// A cluster under a ZooKeeper identity (zookeeper_auth_file) publishes HBase's records as a
// secure HBase does: anyone may read them (HBase's client has no identity, and finds the cluster
// through them), only the identity may change or delete them; never under a parent anyone may
// change.
TEST_F(HBaseClusterTest, UnderAZooKeeperIdentityHBasesClientReadsTheRecordsNoOneElseMayChange) {
  const std::string identity = WriteIdentity();
  // An HBase parent made before the identity, open to anyone (as every one was before a master
  // could publish under one): the master refuses to publish there, saying how to fix it.
  const std::string open_parent = parent_ + "-hbase";
  ASSERT_TRUE(zk_->Create(open_parent, "", ZooKeeper::Mode::kPersistent).ok());
  {
    auto refused = StartMaster("m0", 0, 1000, "",
                               {"--hbase_listen=127.0.0.1:0", "--hbase_znode_parent=" + open_parent,
                                "--zookeeper_auth_file=" + identity});
    ASSERT_TRUE(refused);
    EXPECT_TRUE(refused->WaitForExit(absl::Seconds(20)).has_value()) << "the master published under an open parent";
    refused->Stop(SIGKILL);
    EXPECT_NE(ReadFile(dir_.path() + "/m0.log").find(open_parent + " may be changed by anyone"), std::string::npos)
        << ReadFile(dir_.path() + "/m0.log");
  }
  ASSERT_TRUE(zk_->Delete(open_parent).ok());
  ASSERT_NO_FATAL_FAILURE(ConnectAsIdentity());  // (the cluster's own nodes are the identity's to read)
  ASSERT_NO_FATAL_FAILURE(StartCluster(2, {"--zookeeper_auth_file=" + identity}));
  ASSERT_TRUE(conn_->GetAdmin()->CreateNamespace(NamespaceInfo{"hb_ns", {}, {}}).ok());
  ASSERT_TRUE(conn_->GetAdmin()->CreateTable(TableNamed("hb_ns:probe"), {"m"}).ok());
  absl::StatusOr<ChildProcess::Finished> probe = RunJava("ReadProbe", {Registry(), "hb_ns:probe", "3"});
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_NE(probe->output.find("ALL 3 READ"), std::string::npos) << probe->output;
  // A session without the identity reads the records, and changes none.
  ZooKeeper::Options o;
  o.quorum = quorum_;
  absl::StatusOr<std::unique_ptr<ZooKeeper>> anyone = ZooKeeper::Connect(o);
  ASSERT_TRUE(anyone.ok()) << anyone.status();
  ZooKeeper* zk = anyone->get();
  for (const std::string node : {"/master", "/meta-region-server", "/hbaseid"}) {
    absl::StatusOr<std::optional<ZkNode>> read = zk->Get(hbase_parent_ + node);
    ASSERT_TRUE(read.ok()) << node << ": " << read.status();
    ASSERT_TRUE(read->has_value()) << node;
    EXPECT_EQ(zk->Set(hbase_parent_ + node, "forged").code(), absl::StatusCode::kPermissionDenied) << node;
    EXPECT_EQ(zk->Delete(hbase_parent_ + node).code(), absl::StatusCode::kPermissionDenied) << node;
  }
  EXPECT_EQ(zk->Children(hbase_parent_ + "/rs").value_or(std::vector<std::string>()).size(), 2u);
  EXPECT_EQ(zk->Create(hbase_parent_ + "/rs/127.0.0.1,1,1", "", ZooKeeper::Mode::kPersistent).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(zk->Children(parent_ + "/rs").status().code(), absl::StatusCode::kPermissionDenied);  // (the cluster's own)
}

// The HBase port on a secure cluster: TLS with client certificates, auth=true and a ZooKeeper
// identity on every daemon. The unmodified 2.6 client finds the cluster through ZooKeeper and is
// its certificate's user on the master and on each region server it reaches: alice, who may only
// read, reads a namespaced table across both servers and is refused a Put and a create
// (AccessDeniedException); admin writes it; the namespace's quota refuses a second table.
TEST_F(HBaseClusterTest, OnASecureClusterTheJavaClientIsItsCertificatesUserEverywhere) {
  const std::string certs = dir_.path() + "/certs";
  ASSERT_EQ(std::system(absl::StrCat(BASALT_SOURCE_DIR, "/tests/security/make_certs.sh ", certs,
                                     " admin alice >/dev/null").c_str()),
            0);
  for (const char* user : {"admin", "alice"}) {  // (HBase's PEM key store: the key, then the certificate)
    std::ofstream(absl::StrCat(certs, "/", user, "-keystore.pem"))
        << ReadFile(absl::StrCat(certs, "/", user, ".key")) << ReadFile(absl::StrCat(certs, "/", user, ".pem"));
  }
  security_.tls_ca = certs + "/ca.pem";
  security_.tls_cert = certs + "/admin.pem";
  security_.tls_key = certs + "/admin.key";
  const std::string identity = WriteIdentity();
  ASSERT_NO_FATAL_FAILURE(ConnectAsIdentity());
  ASSERT_NO_FATAL_FAILURE(StartCluster(
      2, {"--tls_cert=" + certs + "/server.pem", "--tls_key=" + certs + "/server.key", "--tls_ca=" + certs + "/ca.pem",
          "--auth=true", "--superusers=basalt-server,admin", "--zookeeper_auth_file=" + identity}));
  NamespaceInfo app{"app", {{"hbase.namespace.quota.maxtables", "1"}}, {}};
  ASSERT_TRUE(conn_->GetAdmin()->CreateNamespace(app).ok());
  TableInfo sec = TableNamed("app:sec");
  sec.families[0].name = "cf";  // (AuthProbe.java's)
  ASSERT_TRUE(conn_->GetAdmin()->CreateTable(sec, {"m"}).ok());
  ASSERT_EQ(RegionsPerServer(conn_.get(), "app:sec").size(), 2u);  // (each server serves a region)
  ASSERT_TRUE(conn_->GetTable("app:sec")->Put(Put("r1").Add("cf", "q", "one")).ok());
  ASSERT_TRUE(conn_->GetAdmin()->Grant(Permission{"alice", "R", "", "app:sec", "", ""}).ok());

  auto probe = [&](const std::string& user) {
    const std::vector<std::string> tls = {
        "hbase.client.netty.tls.enabled=true",   "hbase.rpc.tls.truststore.type=PEM",
        "hbase.rpc.tls.truststore.location=" + certs + "/ca.pem", "hbase.rpc.tls.keystore.type=PEM",
        "hbase.rpc.tls.keystore.location=" + certs + "/" + user + "-keystore.pem", "HADOOP_USER_NAME=" + user};
    absl::StatusOr<ChildProcess::Finished> run =
        RunJava("AuthProbe", {Registry(), "app:sec", "app:" + user + "_t"}, "classpath.txt", tls);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? run->output : std::string();
  };
  const std::string kDenied = "REFUSED org.apache.hadoop.hbase.security.AccessDeniedException";
  const std::string alice = probe("alice");
  EXPECT_NE(alice.find("GET OK one"), std::string::npos) << alice;
  EXPECT_NE(alice.find("SCAN OK 1"), std::string::npos) << alice;
  EXPECT_NE(alice.find("PUT " + kDenied), std::string::npos) << alice;
  EXPECT_NE(alice.find("user 'alice' may not"), std::string::npos) << alice;
  EXPECT_NE(alice.find("LIST OK app:sec\n"), std::string::npos) << alice;
  EXPECT_NE(alice.find("CREATE " + kDenied), std::string::npos) << alice;
  const std::string admin = probe("admin");
  EXPECT_NE(admin.find("PUT OK"), std::string::npos) << admin;
  EXPECT_NE(admin.find("CREATE REFUSED org.apache.hadoop.hbase.quotas.QuotaExceededException"), std::string::npos)
      << admin;
  EXPECT_NE(admin.find("hbase.namespace.quota.maxtables"), std::string::npos) << admin;
  EXPECT_EQ(conn_->GetAdmin()->DescribeTable("app:admin_t").status().code(), absl::StatusCode::kNotFound);
}

// The zero-downtime move (hbase_standalone.h) into a cluster: HBase 2.6 replicates into two
// region servers, which its source finds under rs/ as the active master lists them. On Basalt the
// table is split on its own (at keys HBase's one region does not have) and its regions spread
// over both servers, so each batch HBase ships holds rows of both: the server that takes it
// routes the rows the other holds (src/cluster/batch_router.h); edits must be arriving before
// anything is killed. Mid-stream the server holding the region being written is killed (-9) and
// started again (on new ports: the master lists it anew): its regions are reopened on the other,
// and the batches refused meanwhile come again. Every version is on both sides at the end.
TEST_F(HBaseClusterTest, AMoveFromALiveHBaseIntoAClusterLosesNoWriteThroughAKillOfARegionServer) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(2));
  auto sinks = [&] { return zk_->Children(hbase_parent_ + "/rs").value_or(std::vector<std::string>()); };
  ASSERT_TRUE(Eventually([&] { return sinks().size() == 2; }))
      << "the master did not list both region servers under " << hbase_parent_ << "/rs";
  const std::string hbase_dir = dir_.path() + "/hbase";
  ASSERT_EQ(::mkdir(hbase_dir.c_str(), 0755), 0);
  HBaseStandalone hbase(hbase_dir);
  ASSERT_TRUE(hbase.Start().ok());
  LiveMove move(&hbase, dir_.path(), hbase_dir, quorum_ + ":" + hbase_parent_, Registry());
  // Rows r000000.. (the writer's i and i/2, for i from 1000) over three regions on two servers:
  // [, r001000) and [r002500, ) on one, [r001000, r002500) on the other.
  std::string middle_server;
  auto split_and_spread = [&] {
    auto regions_of_rt = [&] {
      return conn_->GetAdmin()->ListRegions("rt").value_or(std::vector<RegionStatus>()).size();
    };
    ASSERT_TRUE(conn_->GetAdmin()->Split("rt", "r001000").ok());
    ASSERT_TRUE(Eventually([&] { return regions_of_rt() == 2; }));
    ASSERT_TRUE(conn_->GetAdmin()->Split("rt", "r002500").ok());
    ASSERT_TRUE(Eventually([&] { return regions_of_rt() == 3; }));
    absl::StatusOr<std::vector<RegionStatus>> regions = conn_->GetAdmin()->ListRegions("rt");
    ASSERT_TRUE(regions.ok()) << regions.status();
    const std::string outer = (*regions)[0].server;
    std::string other;
    for (const auto& s : servers_) {
      if (s->address() != outer) other = s->address();
    }
    if ((*regions)[2].server != outer) {
      ASSERT_TRUE(MoveWhenLive(conn_.get(), (*regions)[2].encoded_name, outer).ok());
    }
    if ((*regions)[1].server != other) {
      ASSERT_TRUE(MoveWhenLive(conn_.get(), (*regions)[1].encoded_name, other).ok());
    }
    middle_server = other;
  };
  ASSERT_NO_FATAL_FAILURE(move.Begin("rt", "", split_and_spread));
  EXPECT_EQ(RegionsPerServer(conn_.get(), "rt").size(), 2u);
  // Edits arrive while the regions are spread: HBase's batches are being routed. A source ships
  // its log in order, resending a batch until the sink takes all of it, so a row written now
  // arrives only once every batch before it (each with rows of both servers) was applied whole.
  absl::StatusOr<ChildProcess::Finished> marker =
      RunJava("Replication", {"write", hbase.registry(), "rt", "40000", "40001"});
  ASSERT_TRUE(marker.ok() && marker->exit_code == 0) << (marker.ok() ? marker->output : marker.status().ToString());
  auto arrived = [&] {
    absl::StatusOr<Result> r = conn_->GetTable("rt")->Get(Get("r040000"));
    return r.ok() && r->Value("f", "q").has_value();
  };
  ASSERT_TRUE(Eventually(arrived, absl::Seconds(60)))
      << "a row written after the peer was enabled did not arrive while the table's regions were on both servers";
  ASSERT_TRUE(move.writing()) << move.writer_log();
  // The server of the region being written (r001000..r002499) dies mid-stream, and comes back.
  ServerProcess* killed = nullptr;
  std::string port_file;
  for (size_t i = 0; i < servers_.size(); ++i) {
    if (servers_[i]->address() != middle_server) continue;
    killed = servers_[i].get();
    port_file = absl::StrCat(dir_.path(), "/rs", i, ".hbase");
  }
  ASSERT_NE(killed, nullptr) << middle_server;
  killed->Kill();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_TRUE(killed->Start().ok());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_NO_FATAL_FAILURE(move.Finish());
  // The sinks listed are the two live servers, the killed one by its new run.
  std::vector<std::string> listed = sinks();
  ASSERT_EQ(listed.size(), 2u);
  std::string port = ReadFile(port_file);
  while (!port.empty() && port.back() == '\n') port.pop_back();
  EXPECT_TRUE(absl::StrContains(listed[0] + " " + listed[1], absl::StrCat(",", port, ","))) << listed[0] << " " << listed[1];
}

}  // namespace
}  // namespace basalt::testing
