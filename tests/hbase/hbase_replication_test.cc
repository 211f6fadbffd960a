// A real HBase 2.6.0 (standalone: master, region server and ZooKeeper in one JVM, from Maven
// Central's jars, server-pom.xml) replicating into a real basalt-server, which publishes its HBase
// port in HBase's own ZooKeeper under a parent of its own, as a peer cluster would. HBase is
// unmodified: it adds the peer with its CLUSTER_KEY, finds the sink under <parent>/rs and sends it
// AdminService.ReplicateWALEntry (src/front/hbase/replication_sink.h); its CopyTable copies what
// existed before.
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/hbase/hbase_standalone.h"
#include "tests/integration/integration_util.h"
#include "tests/util/temp_dir.h"

namespace basalt::testing {
namespace {

class HBaseReplicationTest : public ServerTest {};

// The zero-downtime move from HBase (README "Moving from HBase"), with the sink killed on the way:
// HBase holds a table and takes writes throughout; Basalt is added as a disabled peer (HBase keeps
// the edits for it from then on, and enable_table_replication makes the table on Basalt); HBase's
// CopyTable copies what exists; the peer is enabled and the kept edits flow; mid-stream Basalt is
// killed (-9) and restarted on its ports, and HBase sends again what it could not ship. No write
// fails, and once the writer stops both read the same cells, version for version, with the
// source's timestamps (every kind of delete included), Basalt read through its own ZooKeeper
// records: switching a client is changing where it looks.
TEST_F(HBaseReplicationTest, AMoveFromALiveHBaseLosesNoWriteThroughAKillOfTheSink) {
  const std::string hbase_dir = dir_.path() + "/hbase";
  ASSERT_EQ(::mkdir(hbase_dir.c_str(), 0755), 0);
  HBaseStandalone hbase(hbase_dir);
  ASSERT_TRUE(hbase.Start().ok());
  const int hbase_port = FreePort();
  const std::vector<std::string> sink_args = {absl::StrCat("--hbase_listen=127.0.0.1:", hbase_port),
                                              "--hbase_zookeeper_quorum=" + hbase.zookeeper(),
                                              "--hbase_znode_parent=/basalt"};
  // (Basalt publishes into HBase's ZooKeeper, which is up once HBase has started it.)
  absl::Status started = absl::UnavailableError("not tried");
  for (int i = 0; i < 60 && !started.ok(); ++i) {
    server_ = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, dir_.path() + "/data", sink_args);
    started = server_->Start();
    if (!started.ok()) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ASSERT_TRUE(started.ok()) << started << "\n" << ReadFile(hbase.log()).substr(0, 4000);
  LiveMove move(&hbase, dir_.path(), hbase_dir, hbase.zookeeper() + ":/basalt",
                absl::StrCat("zk:", hbase.zookeeper(), "@/basalt"));
  ASSERT_NO_FATAL_FAILURE(move.Begin("rt"));
  // Mid-stream, the sink dies and comes back on its ports.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(move.writing()) << move.writer_log();
  server_->Kill();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(server_->Start().ok());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_NO_FATAL_FAILURE(move.Finish());
}

}  // namespace
}  // namespace basalt::testing
