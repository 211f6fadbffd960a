// The unmodified HBase 2.6 client against a cluster (docs/DESIGN.md §15): real basalt-master and
// basalt-server --cluster processes on the tests' ZooKeeper and Ceph (tests/cluster/
// cluster_fixture.h, what deploy/cluster.sh starts), each with its HBase port. The client knows
// only ZooKeeper, where the active master published HBase's records: it finds the master there,
// hbase:meta on the master, and each region on the region server meta names.
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/hbase/java_programs.h"

namespace basalt::testing {
namespace {

class HBaseClusterTest : public ClusterFixture {
 protected:
  // Master m1 and `n` region servers, all with an HBase port; HBase's records under
  // hbase_parent_. Returns once the master serves, the n are live and the records are there.
  void StartCluster(int n) {
    hbase_parent_ = parent_ + "-hbase";
    master_ = StartMaster("m1", 0, 1000, "", {"--hbase_listen=127.0.0.1:0", "--hbase_znode_parent=" + hbase_parent_});
    ASSERT_TRUE(master_);
    for (int i = 0; i < n; ++i) {
      servers_.push_back(
          NewServer(1000, {"--hbase_listen=127.0.0.1:0", absl::StrCat("--hbase_port_file=", dir_.path(), "/rs", i, ".hbase")}));
      ASSERT_TRUE(servers_.back()->Start().ok());
    }
    ASSERT_TRUE(Eventually([&] {
      return MasterServes() && Children("/rs").size() == static_cast<size_t>(n) &&
             zk_->Get(hbase_parent_ + "/master").value_or(std::nullopt).has_value();
    }));
    conn_ = Connect();
    ASSERT_TRUE(conn_);
  }
  std::string Registry() const { return absl::StrCat("zk:", quorum_, "@", hbase_parent_); }

  std::string hbase_parent_;
  std::unique_ptr<ChildProcess> master_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::unique_ptr<Connection> conn_;
};

// ClientSuite.java's every Admin and Table call, through ZooKeeper, on a cluster of three region
// servers; then Basalt's own client reads the table it left (both views agree). Then a writer
// (Writer.java, one Put at a time) rides through a split of its table, a move of one of its
// regions and a kill -9 of the region server holding most of them; every Put it saw acknowledged
// is read back.
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

  ASSERT_TRUE(conn_->GetAdmin()->CreateTable(TableNamed("hb_faults"), {"w001000"}).ok());
  constexpr int kRows = 2400;
  BackgroundWriter writer(Registry(), "hb_faults", kRows, dir_.path());
  ASSERT_TRUE(writer.started().ok()) << writer.started();
  // A split of the region being written (rows w000000..w000999 go to the first one).
  ASSERT_TRUE(writer.WaitFor(300)) << writer.log();
  absl::StatusOr<std::vector<RegionStatus>> regions = conn_->GetAdmin()->ListRegions("hb_faults");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_TRUE(conn_->GetAdmin()->Split("hb_faults", "w000600").ok());
  // A move of the region that will be written next (w001000..) to another server.
  ASSERT_TRUE(writer.WaitFor(800)) << writer.log();
  regions = conn_->GetAdmin()->ListRegions("hb_faults");
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
  EXPECT_EQ(LostWrites(conn_.get(), "hb_faults", writer.acked_file(), &checked), "");
  EXPECT_EQ(checked, total);
}

}  // namespace
}  // namespace basalt::testing
