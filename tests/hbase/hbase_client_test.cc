// The unmodified HBase 2.6 client (tests/hbase/java/ClientSuite.java, run on Debian's Java)
// against a real basalt-server's HBase port: every Admin and Table call of the suite checked
// against what it must read, then the table it leaves read again with Basalt's own C++ client —
// both views must agree cell for cell.
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/integration_util.h"
#include "common/status.h"
#include "common/test_services.h"
#include "tests/util/child_process.h"

#ifndef HBASE_CLIENT_DIR
#error "HBASE_CLIENT_DIR must name tests/hbase/fetch-client.sh's output"
#endif

namespace basalt::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Hex(std::string_view b) { return b.empty() ? "-" : absl::BytesToHexString(AV(b)); }

class HBaseClientTest : public ServerTest {
 protected:
  // Starts the server with its HBase port (and `extra` settings); returns "127.0.0.1:PORT".
  std::string StartWithHBasePort(std::vector<std::string> extra = {}) {
    const std::string port_file = dir_.path() + "/hbase.port";
    extra.insert(extra.begin(), {"--hbase_listen=127.0.0.1:0", "--hbase_port_file=" + port_file});
    StartServer(extra);
    std::string port;
    for (int i = 0; i < 200 && port.empty(); ++i) {
      port = ReadFile(port_file);
      if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    while (!port.empty() && port.back() == '\n') port.pop_back();
    return "127.0.0.1:" + port;
  }

  // ClientSuite.java through `registry` (the HBase port's address, or zk:QUORUM@PARENT), then
  // the table it left read with Basalt's own client, then a table quota met by ReadProbe.java.
  void RunClientSuite(const std::string& registry, const std::string& address);

  // Runs a Java program of tests/hbase/java/ with the HBase client on its classpath, or with
  // `classpath_file`'s (fetch-client.sh's outputs).
  absl::StatusOr<ChildProcess::Finished> RunJava(const std::string& main_class, std::vector<std::string> args,
                                                 const std::string& classpath_file = "classpath.txt") {
    std::string classpath = ReadFile(absl::StrCat(HBASE_CLIENT_DIR, "/", classpath_file));
    while (!classpath.empty() && classpath.back() == '\n') classpath.pop_back();
    classpath = absl::StrCat(HBASE_CLIENT_DIR, "/classes:", classpath);
    // (--add-opens: HBase probes java.nio.Bits, and Java 17 says so with a stack trace otherwise.)
    std::vector<std::string> argv = {"/usr/bin/java", "-Xmx512m", "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                                     "-cp", classpath, main_class};
    argv.insert(argv.end(), args.begin(), args.end());
    return ChildProcess::Run(std::move(argv));
  }
};

TEST_F(HBaseClientTest, TheJavaClientsCallsAnswerAsHBaseAndBothViewsAgree) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  RunClientSuite(address, address);
}

// HBase's default discovery: the client knows only ZooKeeper, where the server published its
// HBase port (hbase_zookeeper_quorum) under a parent of its own.
TEST_F(HBaseClientTest, TheJavaClientFindsTheServerInZooKeeper) {
  const std::string quorum = TestZkQuorum();
  ASSERT_FALSE(quorum.empty()) << kTestServicesHelp;
  const std::string parent = "/hbase-" + std::to_string(::getpid());
  const std::string address =
      StartWithHBasePort({"--hbase_zookeeper_quorum=" + quorum, "--hbase_znode_parent=" + parent});
  ASSERT_NE(address, "127.0.0.1:");
  RunClientSuite("zk:" + quorum + "@" + parent, address);
}

void HBaseClientTest::RunClientSuite(const std::string& registry, const std::string& address) {
  const std::string dump = dir_.path() + "/hb_keep.dump";
  absl::StatusOr<ChildProcess::Finished> java = RunJava("ClientSuite", {registry, dump});
  ASSERT_TRUE(java.ok()) << java.status();
  const std::string& log = java->output;
  ASSERT_EQ(java->exit_code, 0) << log.substr(log.size() > 6000 ? log.size() - 6000 : 0);
  EXPECT_NE(log.find("checks passed"), std::string::npos) << log;

  // Basalt's own client reads the table the Java client left, every version kept (2).
  std::unique_ptr<Table> table = conn_->GetTable("hb_keep");
  Scan scan;
  scan.SetMaxVersions(2);
  absl::StatusOr<std::unique_ptr<ResultScanner>> scanner = table->GetScanner(scan);
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  std::string ours;
  Result row;
  for (;;) {
    absl::StatusOr<bool> more = (*scanner)->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    for (const KeyValue& kv : row.cells()) {
      absl::StrAppend(&ours, Hex(row.row()), " ", kv.family, ":", Hex(kv.qualifier), " ", kv.timestamp, " ",
                      Hex(kv.value), "\n");
    }
  }
  const std::string theirs = ReadFile(dump);
  EXPECT_EQ(std::count(theirs.begin(), theirs.end(), '\n'), 81);  // 40 rows of 2 cells, and a second version
  EXPECT_EQ(ours, theirs);

  // The port is no way around the quotas: a table's read quota refuses the Java client's Gets
  // past it with HBase's RpcThrottlingException, as the gRPC front end refuses Basalt's client.
  ASSERT_TRUE(conn_->GetAdmin()->SetQuota(Quota{"", "", "hb_keep", "READ", "3req/min"}).ok());
  absl::StatusOr<ChildProcess::Finished> probe = RunJava("ReadProbe", {address, "hb_keep", "10"});
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_NE(probe->output.find("REFUSED at 3:"), std::string::npos) << probe->output;
  EXPECT_NE(probe->output.find("org.apache.hadoop.hbase.quotas.RpcThrottlingException"), std::string::npos)
      << probe->output;
}

// HBase's own PerformanceEvaluation (hbase-mapreduce 2.6.0's tests jar, tests/hbase/pe-pom.xml)
// in --nomapred mode, at a small size: its five commands must finish without an error (PE stops
// at its first), and its rows are then all there for Basalt's own client.
TEST_F(HBaseClientTest, PerformanceEvaluationRunsItsCommandsWithoutAnError) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  const std::vector<std::string> base = {"-Dhbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry",
                                         "-Dhbase.client.bootstrap.servers=" + address, "--nomapred"};
  struct Step {
    std::vector<std::string> args;
  };
  const std::vector<Step> steps = {
      {{"--rows=2000", "--presplit=4", "--valueSize=100", "sequentialWrite", "1"}},
      {{"--rows=1000", "--valueSize=100", "randomWrite", "2"}},
      {{"--rows=1000", "randomRead", "2"}},
      {{"--rows=2000", "scan", "1"}},
      {{"--rows=10", "filterScan", "1"}},
  };
  for (const Step& step : steps) {
    std::vector<std::string> args = base;
    args.insert(args.end(), step.args.begin(), step.args.end());
    absl::StatusOr<ChildProcess::Finished> pe = RunJava("org.apache.hadoop.hbase.PerformanceEvaluation", args, "pe-classpath.txt");
    ASSERT_TRUE(pe.ok()) << pe.status();
    const std::string& log = pe->output;
    const std::string command = step.args[step.args.size() - 2];
    ASSERT_EQ(pe->exit_code, 0) << command << ":\n" << log.substr(log.size() > 8000 ? log.size() - 8000 : 0);
    EXPECT_NE(log.find("Finished class org.apache.hadoop.hbase.PerformanceEvaluation$"), std::string::npos)
        << command << ":\n" << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    EXPECT_EQ(log.find("Exception"), std::string::npos) << command << ":\n" << log;
  }
  // sequentialWrite wrote rows 0..1999 (26-digit keys); randomWrite only rewrote some of them.
  std::unique_ptr<Table> table = conn_->GetTable("TestTable");
  absl::StatusOr<std::unique_ptr<ResultScanner>> scanner = table->GetScanner(Scan());
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  int rows = 0;
  Result row;
  for (;;) {
    absl::StatusOr<bool> more = (*scanner)->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ++rows;
  }
  EXPECT_EQ(rows, 2000);
}

}  // namespace
}  // namespace basalt::testing
