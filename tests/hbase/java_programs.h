// What the HBase tests share: running the Java programs of tests/hbase/java/ (and HBase's own
// tools) on the classpaths fetch-client.sh wrote, and a table as Basalt's own client reads it,
// in the form ClientSuite.java dumps it, so that both views can be compared.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "common/status.h"
#include "tests/util/child_process.h"

#ifndef HBASE_CLIENT_DIR
#error "HBASE_CLIENT_DIR must name tests/hbase/fetch-client.sh's output"
#endif

namespace basalt::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A free TCP port on loopback (bound and released: the server binds it next, again after a
// restart, so the HBase client finds it at the address it bootstrapped from).
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

inline std::string Hex(std::string_view b) { return b.empty() ? "-" : absl::BytesToHexString(AV(b)); }

// java running `main_class` with `args`, on tests/hbase/java/'s classes and the classpath that
// fetch-client.sh wrote to `classpath_file` (classpath.txt: the HBase 2.6 client); `settings`,
// "hbase.KEY=VALUE" each, are the client's (Registry.java sets them, as hbase-site.xml would).
inline std::vector<std::string> JavaCommand(const std::string& main_class, const std::vector<std::string>& args,
                                            const std::string& classpath_file = "classpath.txt",
                                            const std::vector<std::string>& settings = {}) {
  std::string classpath = ReadFile(absl::StrCat(HBASE_CLIENT_DIR, "/", classpath_file));
  while (!classpath.empty() && classpath.back() == '\n') classpath.pop_back();
  // (--add-opens: HBase probes java.nio.Bits, and Java 17 says so with a stack trace otherwise;
  // the shell's JRuby wants sun.nio.ch and java.io for its IO.)
  std::vector<std::string> argv = {"/usr/bin/java", "-Xmx512m",
                                   "--add-opens", "java.base/java.nio=ALL-UNNAMED",
                                   "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                                   "--add-opens", "java.base/java.io=ALL-UNNAMED",
                                   "-cp", absl::StrCat(HBASE_CLIENT_DIR, "/classes:", classpath)};
  for (const std::string& s : settings) argv.push_back("-D" + s);
  argv.push_back(main_class);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

inline absl::StatusOr<ChildProcess::Finished> RunJava(const std::string& main_class, const std::vector<std::string>& args,
                                                      const std::string& classpath_file = "classpath.txt",
                                                      const std::vector<std::string>& settings = {}) {
  return ChildProcess::Run(JavaCommand(main_class, args, classpath_file, settings));
}

// Every cell of `table` (`versions` of each), one line each as ClientSuite.java dumps them:
// <row hex> <family>:<qualifier hex> <timestamp> <value hex>.
inline absl::StatusOr<std::string> DumpTable(Connection* conn, const std::string& table, int versions) {
  Scan scan;
  scan.SetMaxVersions(versions);
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ResultScanner> scanner, conn->GetTable(table)->GetScanner(scan));
  std::string out;
  Result row;
  for (;;) {
    BASALT_ASSIGN_OR_RETURN(bool more, scanner->Next(&row));
    if (!more) return out;
    for (const KeyValue& kv : row.cells()) {
      absl::StrAppend(&out, Hex(row.row()), " ", kv.family, ":", Hex(kv.qualifier), " ", kv.timestamp, " ",
                      Hex(kv.value), "\n");
    }
  }
}

// Writer.java writing `rows` rows of `table` in the background, through `registry`
// (Registry.java's forms), listing each acknowledged one in `dir`/acked.txt.
class BackgroundWriter {
 public:
  BackgroundWriter(const std::string& registry, const std::string& table, int rows, const std::string& dir)
      : acked_file_(dir + "/acked.txt"), log_(dir + "/writer.log") {
    ChildProcess::Output out;
    out.stdout_path = log_;
    absl::StatusOr<std::unique_ptr<ChildProcess>> p =
        ChildProcess::Spawn(JavaCommand("Writer", {registry, table, std::to_string(rows), acked_file_}), out);
    if (p.ok()) process_ = *std::move(p);
    started_ = p.status();
  }
  const absl::Status& started() const { return started_; }
  // How many rows it has seen acknowledged so far.
  int acked() const {
    const std::string text = ReadFile(acked_file_);
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  // Waits (up to 60 s, and while it runs) until `n` rows are acknowledged.
  bool WaitFor(int n) const {
    for (int i = 0; i < 1200 && acked() < n && process_->running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return acked() >= n;
  }
  std::optional<int> WaitForExit(absl::Duration limit) { return process_->WaitForExit(limit); }
  std::string log() const { return ReadFile(log_); }
  const std::string& acked_file() const { return acked_file_; }

 private:
  std::string acked_file_, log_;
  std::unique_ptr<ChildProcess> process_;
  absl::Status started_;
};

// The acknowledged rows Writer.java listed in `acked_file` that Basalt's client does not read
// back with their value ("v" + the row's number), one line each; and how many it checked.
inline std::string LostWrites(Connection* conn, const std::string& table, const std::string& acked_file, int* checked) {
  std::unique_ptr<Table> t = conn->GetTable(table);
  std::istringstream lines(ReadFile(acked_file));
  std::string row, lost;
  *checked = 0;
  while (std::getline(lines, row)) {
    ++*checked;
    absl::StatusOr<Result> r = t->Get(Get(row));
    if (!r.ok()) {
      absl::StrAppend(&lost, row, ": ", r.status().ToString(), "\n");
      continue;
    }
    const std::optional<std::string_view> v = r->Value("f", "q");
    const std::string want = "v" + std::to_string(std::stoi(row.substr(1)));
    if (!v.has_value() || *v != want) absl::StrAppend(&lost, row, ": ", v.has_value() ? AV(*v) : "lost", "\n");
  }
  return lost;
}

}  // namespace basalt::testing
