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
  // Starts the server with its HBase port; returns "127.0.0.1:PORT".
  std::string StartWithHBasePort() {
    const std::string port_file = dir_.path() + "/hbase.port";
    StartServer({"--hbase_listen=127.0.0.1:0", "--hbase_port_file=" + port_file});
    std::string port;
    for (int i = 0; i < 200 && port.empty(); ++i) {
      port = ReadFile(port_file);
      if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    while (!port.empty() && port.back() == '\n') port.pop_back();
    return "127.0.0.1:" + port;
  }

  // Runs a Java program of tests/hbase/java/ with the HBase client on its classpath.
  absl::StatusOr<ChildProcess::Finished> RunJava(const std::string& main_class, std::vector<std::string> args) {
    const std::string classpath = absl::StrCat(HBASE_CLIENT_DIR, "/classes:", ReadFile(absl::StrCat(HBASE_CLIENT_DIR, "/classpath.txt")));
    std::vector<std::string> argv = {"/usr/bin/java", "-Xmx512m", "-cp", classpath, main_class};
    argv.insert(argv.end(), args.begin(), args.end());
    return ChildProcess::Run(std::move(argv));
  }
};

TEST_F(HBaseClientTest, TheJavaClientsCallsAnswerAsHBaseAndBothViewsAgree) {
  const std::string address = StartWithHBasePort();
  ASSERT_NE(address, "127.0.0.1:");
  const std::string dump = dir_.path() + "/hb_keep.dump";
  absl::StatusOr<ChildProcess::Finished> java = RunJava("ClientSuite", {address, dump});
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
}

}  // namespace
}  // namespace basalt::testing
