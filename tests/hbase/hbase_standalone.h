// A real HBase 2.6.0 (standalone: master, region server and ZooKeeper in one JVM, from Maven
// Central's jars, server-pom.xml) as a replication source, and the zero-downtime move from it
// (README "Moving from HBase") as steps a test runs against a Basalt sink of any shape: HBase is
// unmodified; it adds the sink as a peer by its CLUSTER_KEY, finds the sink's servers under
// <parent>/rs and sends them AdminService.ReplicateWALEntry (src/front/hbase/replication_sink.h);
// its CopyTable copies what existed before.
#pragma once

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/hbase/java_programs.h"
#include "tests/util/child_process.h"

namespace basalt::testing {

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

// The move's steps (README "Moving from HBase"), around whatever the test does to the sink
// meanwhile: Begin leaves HBase's table `table` (regions starting at `splits`) under a writer
// that keeps going, Basalt its peer, enabled, after a disabled start and CopyTable's copy of what
// existed; Finish stops the writer (no batch of it may have failed) and waits for both sides to
// read the same cells, version for version, Basalt through `sink_registry`: switching a client is
// changing where it looks.
class LiveMove {
 public:
  // `peer_key` is the sink's CLUSTER_KEY (its ZooKeeper quorum:parent); `dir` a directory of the
  // test's.
  LiveMove(HBaseStandalone* hbase, std::string dir, std::string hbase_dir, std::string peer_key,
           std::string sink_registry)
      : hbase_(hbase), dir_(std::move(dir)), hbase_dir_(std::move(hbase_dir)), peer_key_(std::move(peer_key)),
        sink_registry_(std::move(sink_registry)) {}
  ~LiveMove() {
    if (writer_ != nullptr) writer_->Stop(SIGKILL);
  }

  // `after_peer` runs once the table exists on the sink, before anything is copied or shipped.
  void Begin(const std::string& table, const std::string& splits = "",
             const std::function<void()>& after_peer = nullptr) {
    table_ = table;
    // HBase alone, with data.
    std::string out = Java({"create", hbase_->registry(), table, splits});
    ASSERT_TRUE(absl::StartsWith(out, "exit 0")) << out;
    out = Java({"write", hbase_->registry(), table, "0", "1000"});
    ASSERT_TRUE(absl::StartsWith(out, "exit 0")) << out;
    // Writes go on throughout the move, until Finish says stop (at most 30,000 batches).
    ChildProcess::Output log;
    log.stdout_path = dir_ + "/writer.log";
    absl::StatusOr<std::unique_ptr<ChildProcess>> writer = ChildProcess::Spawn(
        JavaCommand("Replication", {"write", hbase_->registry(), table, "1000", "31000", "3", stop_file()}), log);
    ASSERT_TRUE(writer.ok()) << writer.status();
    writer_ = *std::move(writer);
    out = Java({"peer", hbase_->registry(), sink_registry_, peer_key_, table});
    ASSERT_TRUE(absl::StartsWith(out, "exit 0")) << out;
    if (after_peer) {
      ASSERT_NO_FATAL_FAILURE(after_peer());
    }
    // What exists, copied by HBase's CopyTable (Hadoop's local mode), every version.
    std::string classpath = ReadFile(absl::StrCat(HBASE_CLIENT_DIR, "/server-classpath.txt"));
    absl::StripTrailingAsciiWhitespace(&classpath);
    absl::StatusOr<ChildProcess::Finished> copy = ChildProcess::Run(
        {"/usr/bin/java", "-Xmx512m", "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens",
         "java.base/java.lang=ALL-UNNAMED", "-cp", hbase_dir_ + ":" + classpath,
         "org.apache.hadoop.hbase.mapreduce.CopyTable", "--peer.adr=" + peer_key_, "--versions=2147483647", table});
    ASSERT_TRUE(copy.ok()) << copy.status();
    ASSERT_EQ(copy->exit_code, 0) << copy->output;
    copied_ = Digest(sink_registry_, table);
    ASSERT_TRUE(absl::StartsWith(copied_, "rows ")) << copied_;
    out = Java({"enable", hbase_->registry()});
    ASSERT_TRUE(absl::StartsWith(out, "exit 0")) << out;
  }
  // The sink's digest once CopyTable was done: "rows R cells C sha256 H".
  const std::string& copied() const { return copied_; }
  bool writing() const { return writer_ != nullptr && writer_->running(); }
  std::string writer_log() const { return ReadFile(dir_ + "/writer.log"); }

  void Finish() {
    std::ofstream(stop_file()) << "stop\n";
    const std::optional<int> wrote = writer_->WaitForExit(absl::Minutes(5));
    ASSERT_EQ(wrote, std::optional<int>(0)) << writer_log();
    const std::string want = Digest(hbase_->registry(), table_);
    ASSERT_TRUE(absl::StartsWith(want, "rows ")) << want;
    // (Each digest is a JVM's run of a few seconds: 90 s is a dozen tries.)
    std::string got;
    for (const absl::Time deadline = absl::Now() + absl::Seconds(90); got != want && absl::Now() < deadline;) {
      got = Digest(sink_registry_, table_);
      if (got != want) std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    EXPECT_EQ(got, want) << "HBase's log: " << hbase_->log();
    std::cout << "source " << want << "\nsink   " << got << "\nafter CopyTable " << copied_ << "\n" << writer_log()
              << std::endl;
    // CopyTable copied some, replication the rest.
    std::smatch cells;
    ASSERT_TRUE(std::regex_search(copied_, cells, std::regex("cells ([0-9]+)")));
    const uint64_t copied = std::stoull(cells[1].str());
    ASSERT_TRUE(std::regex_search(want, cells, std::regex("cells ([0-9]+)")));
    EXPECT_GT(copied, 0u);
    EXPECT_LT(copied, std::stoull(cells[1].str()));
  }

 private:
  static std::string Java(const std::vector<std::string>& args) {
    absl::StatusOr<ChildProcess::Finished> f = RunJava("Replication", args);
    return f.ok() ? absl::StrCat("exit ", f->exit_code, "\n", f->output) : f.status().ToString();
  }
  std::string stop_file() const { return dir_ + "/stop-writing"; }

  HBaseStandalone* const hbase_;
  const std::string dir_, hbase_dir_, peer_key_, sink_registry_;
  std::string table_;
  std::string copied_;  // the sink's digest after CopyTable
  std::unique_ptr<ChildProcess> writer_;
};

}  // namespace basalt::testing
