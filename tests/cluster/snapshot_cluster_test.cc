// Snapshots on a cluster (docs/DESIGN.md §16) on the tests' real ZooKeeper and Ceph: every file on
// RADOS, the master taking snapshots by asking each region's server to name its files.
//  - The active master killed in the middle of a snapshot, or before or after a restore's
//    commit: the backup that takes over finds the snapshot gone (and takes it again on a retry),
//    or the table as it was before the restore or as the snapshot holds it; a retry works.
//  - A region server killed while it names its region's files for a snapshot: the snapshot fails
//    and leaves nothing; once the region serves elsewhere a retry works, and a clone holds every
//    acknowledged row.
// Then, with every snapshot deleted and the clones dropped, no block file name is left over: each
// file under the data directory (walked through RadosEnv) has exactly one name and sits in a
// catalogued table. (A clone's files are second names of its source's until it compacts, so it
// goes first.)
// And an export (basalt-export-snapshot) to a second cluster and to a directory, cloned there.
#include <csignal>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/rados_env.h"
#include "tests/cluster/cluster_fixture.h"

namespace basalt::testing {
namespace {

class SnapshotCluster : public ClusterFixture {
 protected:
  // The block files under `dir` in RADOS whose name is not their only one, or which sit outside
  // a catalogued table, each described in `problems`.
  size_t LeftOverNames(Connection* conn, std::vector<std::string>* problems) {
    RadosEnvOptions o;
    o.ceph_conf = ceph_conf_;
    o.root = storage_[2].substr(std::string("--rados_namespace=").size());
    auto env = RadosEnv::Connect(o);
    EXPECT_TRUE(env.ok()) << env.status();
    if (!env.ok()) return 1;
    std::set<std::string> tables;
    for (const TableInfo& t : conn->GetAdmin()->ListTables().value_or(std::vector<TableInfo>{})) tables.insert(t.name);
    size_t left = 0;
    std::function<void(const std::string&)> walk = [&](const std::string& dir) {
      absl::StatusOr<std::vector<std::string>> names = (*env)->ListDir(dir);
      if (!names.ok()) return;  // a file
      for (const std::string& n : *names) {
        const std::string path = dir + "/" + n;
        if (!n.ends_with(".blk")) {
          walk(path);
          continue;
        }
        const uint64_t links = (*env)->LinkCount(path).value_or(0);
        const std::string rel = path.substr(data_dir().size() + 1);
        const std::string top = rel.substr(0, rel.find('/'));
        const std::string owner = rel.substr(top.size() + 1, rel.find('/', top.size() + 1) - top.size() - 1);
        if (links != 1 || top != "tables" || !tables.count(owner)) {
          ++left;
          problems->push_back(absl::StrCat(rel, ": ", links, " name(s)"));
        }
      }
    };
    walk(data_dir());
    return left;
  }
  void ExpectNothingLeftOver(Connection* conn, const std::string& clone) {
    ASSERT_TRUE(conn->GetAdmin()->DisableTable(clone).ok());
    ASSERT_TRUE(conn->GetAdmin()->DropTable(clone).ok());
    auto all = conn->GetAdmin()->ListSnapshots();
    ASSERT_TRUE(all.ok()) << all.status();
    for (const SnapshotDescription& d : *all) ASSERT_TRUE(conn->GetAdmin()->DeleteSnapshot(d.name).ok()) << d.name;
    std::vector<std::string> problems;
    EXPECT_EQ(LeftOverNames(conn, &problems), 0u) << absl::StrJoin(problems, "\n");
  }
  // The active master's Admin stub, called without the client's retries (which would send the
  // call again to the backup, which would then do it whole).
  std::unique_ptr<rpc::Admin::Stub> ActiveMaster() {
    auto meta = zk_->Get(parent_ + "/meta-server");
    EXPECT_TRUE(meta.ok() && meta->has_value());
    if (!meta.ok() || !meta->has_value()) return nullptr;
    return rpc::Admin::NewStub(grpc::CreateChannel((*meta)->data, grpc::InsecureChannelCredentials()));
  }
};

struct Point {
  const char* name;
  bool restore_committed;  // a restore's: whether the backup finds the table restored
  friend void PrintTo(const Point& p, std::ostream* os) { *os << p.name; }
};
class MasterKilledInASnapshot : public SnapshotCluster, public ::testing::WithParamInterface<Point> {};

TEST_P(MasterKilledInASnapshot, TheBackupFindsItDoneOrUndoneAndARetryWorks) {
  const Point& p = GetParam();
  const bool restore = absl::StartsWith(p.name, "restore");
  TwoMasters cluster;
  ASSERT_NO_FATAL_FAILURE(StartTwoMastersAndATable("t", p.name, &cluster));
  auto& [m1, m2, servers, conn, table] = cluster;
  std::unique_ptr<Admin> admin = conn->GetAdmin();
  auto stub = ActiveMaster();
  ASSERT_NE(stub, nullptr);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  rpc::AdminResponse resp;
  grpc::Status cut;
  if (restore) {
    ASSERT_TRUE(admin->Snapshot("t", "base").ok());
    ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "changed"));
    ASSERT_TRUE(admin->DisableTable("t").ok());
    rpc::RestoreSnapshotRequest req;
    req.set_snapshot("base");
    cut = stub->RestoreSnapshot(&ctx, req, &resp);
  } else {
    rpc::SnapshotRequest req;
    req.set_table("t");
    req.set_name("base");
    rpc::SnapshotResponse taken;
    cut = stub->Snapshot(&ctx, req, &taken);
  }
  EXPECT_FALSE(cut.ok()) << "the master finished the call";
  EXPECT_EQ(m1->WaitForExit(absl::Seconds(10)), -SIGKILL) << "the master did not stop at " << p.name;
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2"; }));

  if (restore) {
    ASSERT_TRUE(admin->EnableTable("t").ok());
    ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), p.restore_committed ? "acked" : "changed"));
    ASSERT_TRUE(admin->DisableTable("t").ok());
    absl::Status again = admin->RestoreSnapshot("base");
    ASSERT_TRUE(again.ok()) << again;
    ASSERT_TRUE(admin->EnableTable("t").ok());
  } else {
    auto listed = admin->ListSnapshots();
    ASSERT_TRUE(listed.ok()) << listed.status();
    EXPECT_TRUE(listed->empty()) << "the cut-short snapshot is still listed";
    absl::Status again = admin->Snapshot("t", "base").status();
    ASSERT_TRUE(again.ok()) << again;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "acked"));
  ASSERT_TRUE(admin->CloneSnapshot("base", "c").ok());
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(conn->GetTable("c").get(), "acked"));
  ASSERT_NO_FATAL_FAILURE(ExpectNothingLeftOver(conn.get(), "c"));
}

INSTANTIATE_TEST_SUITE_P(Points, MasterKilledInASnapshot,
                         ::testing::Values(Point{"snapshot:regions-linked", false}, Point{"restore:staged", false},
                                           Point{"restore:meta-committed", true}),
                         [](const ::testing::TestParamInfo<Point>& p) {
                           return absl::StrReplaceAll(p.param.name, {{":", "_"}, {"-", "_"}});
                         });

TEST_F(SnapshotCluster, ARegionServerKilledWhileItNamesItsFilesFailsTheSnapshotAndARetryWorks) {
  // Two region servers; the one started first kills itself in the snapshot.
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(NewServer());
    if (i == 0) servers.back()->set_launcher({"env", "BASALT_FAULT_POINT=region:files-linked"});
    ASSERT_TRUE(servers.back()->Start().ok());
  }
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 2; }));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  std::unique_ptr<Admin> admin = conn->GetAdmin();
  ASSERT_TRUE(admin->CreateTable(TableNamed("t"), {"m"}).ok());
  auto table = conn->GetTable("t");
  ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "acked"));
  auto before = admin->ListRegions("t");
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_NE((*before)[0].server, (*before)[1].server) << "the regions are on one server";
  // Straight to the master, without the client's retries (one of which would take the snapshot
  // whole once the region serves elsewhere).
  auto stub = ActiveMaster();
  ASSERT_NE(stub, nullptr);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  rpc::SnapshotRequest req;
  req.set_table("t");
  req.set_name("s");
  rpc::SnapshotResponse taken;
  EXPECT_FALSE(stub->Snapshot(&ctx, req, &taken).ok()) << "the snapshot was taken whole";
  EXPECT_EQ(servers[0]->WaitForExit(std::chrono::seconds(10)), -SIGKILL) << "the region server did not stop";
  // Nothing of it is listed; its regions serve on the other server with every row.
  auto listed = admin->ListSnapshots();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->empty());
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "acked"));
  absl::Status again = admin->Snapshot("t", "s").status();
  ASSERT_TRUE(again.ok()) << again;
  ASSERT_TRUE(admin->CloneSnapshot("s", "c").ok());
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(conn->GetTable("c").get(), "acked"));
  ASSERT_NO_FATAL_FAILURE(ExpectNothingLeftOver(conn.get(), "c"));
}

// Export to another cluster (its own RADOS namespace and ZooKeeper parent, on the same Ceph and
// ZooKeeper) and to a directory; cloned on the second cluster, the same rows; a second export
// after more writes copies only the new files.
TEST_F(SnapshotCluster, AnExportToAnotherClusterClonesThereWithTheSameRows) {
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  std::vector<std::unique_ptr<ServerProcess>> servers;
  ASSERT_NO_FATAL_FAILURE(StartServers(2, &servers));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("t"), {"m"}).ok());
  auto table = conn->GetTable("t");
  auto load = [&](int from, int to, const std::string& value) {
    for (int i = from; i < to; ++i) {
      ASSERT_TRUE(table->Put(Put(absl::StrFormat("%c%04d", "am"[i % 2], i)).Add("f", "q", value)).ok()) << i;
    }
  };
  ASSERT_NO_FATAL_FAILURE(load(0, 400, std::string(500, 'x')));
  ASSERT_TRUE(conn->GetAdmin()->Snapshot("t", "s1").ok());
  std::map<std::string, std::string> at_s1, at_s2;
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &at_s1));
  const std::string from = absl::StrCat("rados:basalt/", storage_[2].substr(std::string("--rados_namespace=").size()), ":",
                                        data_dir());
  const std::string other_ns = absl::StrCat(storage_[2].substr(std::string("--rados_namespace=").size()), "-dr");
  const std::string to = absl::StrCat("rados:basalt/", other_ns, ":", data_dir());
  auto run = [&](const std::string& snapshot, const std::string& target) {
    absl::StatusOr<ChildProcess::Finished> r =
        ChildProcess::Run({BASALT_EXPORT_BINARY, "--snapshot=" + snapshot, "--from=" + from, "--to=" + target,
                           "--from_ceph_conf=" + ceph_conf_, "--to_ceph_conf=" + ceph_conf_});
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r.value_or(ChildProcess::Finished{}).exit_code, 0) << r.value_or(ChildProcess::Finished{}).output;
    std::printf("%s", r.value_or(ChildProcess::Finished{}).output.c_str());
    return r.value_or(ChildProcess::Finished{}).output;
  };
  run("s1", to);
  run("s1", dir_.path() + "/backup");
  ASSERT_NO_FATAL_FAILURE(load(400, 500, std::string(500, 'y')));
  ASSERT_TRUE(conn->GetAdmin()->Snapshot("t", "s2").ok());
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &at_s2));
  const std::string second = run("s2", to);
  EXPECT_NE(second.find(absl::StrCat("; 2 file(s), ")), std::string::npos) << "s1's two files, found: " << second;

  // The second cluster: a master and a server on the other namespace and ZooKeeper parent.
  parent_ += "-dr";
  storage_[2] = "--rados_namespace=" + other_ns;
  auto dr_master = StartMaster("dr-m1");
  ASSERT_TRUE(dr_master);
  std::vector<std::unique_ptr<ServerProcess>> dr_servers;
  ASSERT_NO_FATAL_FAILURE(StartServers(1, &dr_servers));
  auto dr = Connect();
  ASSERT_TRUE(dr);
  auto listed = dr->GetAdmin()->ListSnapshots();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  ASSERT_TRUE(dr->GetAdmin()->CloneSnapshot("s1", "t1").ok());
  ASSERT_TRUE(dr->GetAdmin()->CloneSnapshot("s2", "t2").ok());
  std::map<std::string, std::string> c1, c2;
  ASSERT_NO_FATAL_FAILURE(ScanValues(dr->GetTable("t1").get(), &c1));
  ASSERT_NO_FATAL_FAILURE(ScanValues(dr->GetTable("t2").get(), &c2));
  EXPECT_EQ(c1, at_s1);
  EXPECT_EQ(c2, at_s2);
  EXPECT_EQ(c2.size(), 500u);
}

}  // namespace
}  // namespace basalt::testing
