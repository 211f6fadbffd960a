// A real HBase 2.6.0 (standalone: master, region server and ZooKeeper in one JVM, from Maven
// Central's jars, server-pom.xml) replicating into a real basalt-server, which publishes its HBase
// port in HBase's own ZooKeeper under a parent of its own, as a peer cluster would. HBase is
// unmodified: it adds the peer with its CLUSTER_KEY, finds the sink under <parent>/rs and sends it
// AdminService.ReplicateWALEntry (src/front/hbase/replication_sink.h); its CopyTable copies what
// existed before.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/hbase/java_programs.h"
#include "tests/integration/integration_util.h"
#include "tests/util/temp_dir.h"

namespace basalt::testing {
namespace {

// HBase 2.6.0 standalone on ports of its own, in `dir`. Its replication source backs off at most
// 5 s between tries at a sink that failed (replication.source.maxretriesmultiplier; HBase's
// default lets it grow to 5 minutes).
class HBaseStandalone {
 public:
  explicit HBaseStandalone(const std::string& dir) : dir_(dir), zk_port_(FreePort()) {}
  ~HBaseStandalone() {
    if (process_ != nullptr) process_->Stop(SIGKILL);
  }

  absl::Status Start() {
    std::ofstream site(dir_ + "/hbase-site.xml");
    auto property = [&](const std::string& name, const std::string& value) {
      site << "  <property><name>" << name << "</name><value>" << value << "</value></property>\n";
    };
    site << "<configuration>\n";
    property("hbase.cluster.distributed", "false");
    property("hbase.rootdir", "file://" + dir_ + "/root");
    property("hbase.tmp.dir", dir_ + "/tmp");
    property("hbase.zookeeper.quorum", "127.0.0.1");
    property("hbase.zookeeper.property.clientPort", std::to_string(zk_port_));
    property("hbase.zookeeper.property.dataDir", dir_ + "/zk");
    property("hbase.master.port", std::to_string(FreePort()));
    property("hbase.regionserver.port", std::to_string(FreePort()));
    property("hbase.master.info.port", "-1");
    property("hbase.regionserver.info.port", "-1");
    property("hbase.unsafe.stream.capability.enforce", "false");
    property("replication.source.sleepforretries", "500");
    property("replication.source.maxretriesmultiplier", "10");
    property("mapreduce.framework.name", "local");
    property("hadoop.tmp.dir", dir_ + "/hadoop");
    site << "</configuration>\n";
    site.close();
    std::ofstream(dir_ + "/log4j.properties") << "log4j.rootLogger=INFO,console\n"
                                                 "log4j.appender.console=org.apache.log4j.ConsoleAppender\n"
                                                 "log4j.appender.console.layout=org.apache.log4j.PatternLayout\n"
                                                 "log4j.appender.console.layout.ConversionPattern=%d %-5p [%t] %c{2}: %m%n\n";
    std::string classpath = ReadFile(absl::StrCat(HBASE_CLIENT_DIR, "/server-classpath.txt"));
    absl::StripTrailingAsciiWhitespace(&classpath);
    // (The JDK 11+ flags of HBase's bin/hbase.)
    std::vector<std::string> argv = {"/usr/bin/java", "-Xmx512m",
                                     "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
                                     "--add-modules", "jdk.unsupported",
                                     "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                                     "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                                     "--add-opens", "java.base/java.lang=ALL-UNNAMED",
                                     "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
                                     "--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
                                     "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
                                     "-cp", dir_ + ":" + classpath,
                                     "org.apache.hadoop.hbase.master.HMaster", "start"};
    BASALT_ASSIGN_OR_RETURN(process_, ChildProcess::Spawn(std::move(argv), log()));
    return absl::OkStatus();
  }
  std::string log() const { return dir_ + "/hbase.log"; }
  // (Its hbase-site.xml also runs HBase's MapReduce tools in Hadoop's local mode.)
  // The source's client address (Registry.java) and its ZooKeeper.
  std::string registry() const { return absl::StrCat("zk:127.0.0.1:", zk_port_, "@/hbase"); }
  std::string zookeeper() const { return absl::StrCat("127.0.0.1:", zk_port_); }

 private:
  const std::string dir_;
  const int zk_port_;
  std::unique_ptr<ChildProcess> process_;
};

// Replication.java's digest of `table` through `registry`: "rows R cells C sha256 H".
std::string Digest(const std::string& registry, const std::string& table) {
  absl::StatusOr<ChildProcess::Finished> f = RunJava("Replication", {"digest", registry, table}, "classpath.txt");
  if (!f.ok()) return f.status().ToString();
  std::smatch m;
  const std::string out = f->output;
  if (std::regex_search(out, m, std::regex("rows [0-9]+ cells [0-9]+ sha256 [0-9a-f]+"))) return m.str();
  return "(no digest: " + out.substr(out.size() > 2000 ? out.size() - 2000 : 0) + ")";
}

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
  const std::string sink = absl::StrCat("127.0.0.1:", hbase_port);
  const std::string peer_key = hbase.zookeeper() + ":/basalt";
  auto java = [](const std::vector<std::string>& args) {
    absl::StatusOr<ChildProcess::Finished> f = RunJava("Replication", args);
    return f.ok() ? absl::StrCat("exit ", f->exit_code, "\n", f->output) : f.status().ToString();
  };

  // HBase alone, with data.
  std::string out = java({"create", hbase.registry(), "rt"});
  ASSERT_TRUE(absl::StartsWith(out, "exit 0")) << out;
  out = java({"write", hbase.registry(), "rt", "0", "1000"});
  ASSERT_TRUE(absl::StartsWith(out, "exit 0")) << out;
  // Writes go on throughout the move, until the test says stop (at most 30,000 batches).
  ChildProcess::Output log;
  log.stdout_path = dir_.path() + "/writer.log";
  const std::string stop_file = dir_.path() + "/stop-writing";
  absl::StatusOr<std::unique_ptr<ChildProcess>> writer = ChildProcess::Spawn(
      JavaCommand("Replication", {"write", hbase.registry(), "rt", "1000", "31000", "3", stop_file}), log);
  ASSERT_TRUE(writer.ok()) << writer.status();
  out = java({"peer", hbase.registry(), sink, peer_key, "rt"});
  ASSERT_TRUE(absl::StartsWith(out, "exit 0")) << out;
  // What exists, copied by HBase's CopyTable (Hadoop's local mode), every version.
  std::string classpath = ReadFile(absl::StrCat(HBASE_CLIENT_DIR, "/server-classpath.txt"));
  absl::StripTrailingAsciiWhitespace(&classpath);
  absl::StatusOr<ChildProcess::Finished> copy = ChildProcess::Run(
      {"/usr/bin/java", "-Xmx512m", "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens",
       "java.base/java.lang=ALL-UNNAMED", "-cp", hbase_dir + ":" + classpath,
       "org.apache.hadoop.hbase.mapreduce.CopyTable", "--peer.adr=" + peer_key, "--versions=2147483647", "rt"});
  ASSERT_TRUE(copy.ok()) << copy.status();
  ASSERT_EQ(copy->exit_code, 0) << copy->output;
  Connect();
  absl::StatusOr<std::string> copied = DumpTable(conn_.get(), "rt", 3);
  ASSERT_TRUE(copied.ok()) << copied.status();
  out = java({"enable", hbase.registry()});
  ASSERT_TRUE(absl::StartsWith(out, "exit 0")) << out;
  // Mid-stream, the sink dies and comes back on its ports.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE((*writer)->running()) << ReadFile(dir_.path() + "/writer.log");
  server_->Kill();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(server_->Start().ok());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::ofstream(stop_file) << "stop\n";
  const std::optional<int> wrote = (*writer)->WaitForExit(absl::Minutes(5));
  ASSERT_EQ(wrote, std::optional<int>(0)) << ReadFile(dir_.path() + "/writer.log");

  const std::string want = Digest(hbase.registry(), "rt");
  ASSERT_TRUE(absl::StartsWith(want, "rows ")) << want;
  // (Each digest is a JVM's run of a few seconds: 90 s is a dozen tries.)
  const std::string switched = absl::StrCat("zk:", hbase.zookeeper(), "@/basalt");
  std::string got;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(90); got != want && absl::Now() < deadline;) {
    got = Digest(switched, "rt");
    if (got != want) std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  EXPECT_EQ(got, want) << "HBase's log: " << hbase.log();
  const size_t cells_copied = static_cast<size_t>(std::count(copied->begin(), copied->end(), '\n'));
  std::cout << "source " << want << "\nsink   " << got << "\ncells copied by CopyTable: " << cells_copied << "\n"
            << ReadFile(dir_.path() + "/writer.log") << std::endl;
  std::smatch cells;
  ASSERT_TRUE(std::regex_search(want, cells, std::regex("cells ([0-9]+)")));
  EXPECT_GT(cells_copied, 0u);
  EXPECT_LT(cells_copied, std::stoul(cells[1].str()));  // the rest came by replication
}

}  // namespace
}  // namespace basalt::testing
