// Basalt → Basalt replication between two real standalone servers (docs/DESIGN.md §15): the
// sink publishes its HBase port in the tests' ZooKeeper as HBase's clusters do, the source is
// given it as a peer with the `basalt` shell's add_peer, and ships its log's edits there while a
// writer runs, through a kill -9 and restart of the source. Every row is then equal on both
// sides, and a family without REPLICATION_SCOPE never leaves the source.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/test_services.h"
#include "tests/integration/integration_util.h"
#include "tests/util/http_get.h"
#include "tests/util/scan_rows.h"

#ifndef BASALT_SHELL_BINARY
#error "BASALT_SHELL_BINARY must name the basalt shell executable"
#endif

namespace basalt::testing {
namespace {

struct Side {
  std::unique_ptr<ServerProcess> server;
  std::unique_ptr<Connection> conn;
};

class BasaltToBasalt : public ::testing::Test {
 protected:
  void SetUp() override {
    quorum_ = TestZkQuorum();
    ASSERT_FALSE(quorum_.empty()) << kTestServicesHelp;
    parent_ = absl::StrCat("/basalt-replication-", ::getpid());
  }

  // A standalone server in `name`; `sink`: its HBase port published under parent_/<name>.
  void Start(Side* side, const std::string& name, bool sink) {
    std::vector<std::string> args = {sink ? "--http_listen=" : "--http_listen=127.0.0.1:0"};
    if (sink) {
      args.insert(args.end(), {"--hbase_listen=127.0.0.1:0", "--hbase_zookeeper_quorum=" + quorum_,
                               absl::StrCat("--hbase_znode_parent=", parent_, "/", name)});
    }
    side->server = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, dir_.path() + "/" + name, args);
    ASSERT_TRUE(side->server->Start().ok());
    Connect(side);
  }
  void Connect(Side* side) {
    ConnectionOptions o;
    o.address = side->server->address();
    o.timeout = absl::Seconds(20);
    auto c = Connection::Open(o);
    ASSERT_TRUE(c.ok()) << c.status();
    side->conn = *std::move(c);
  }
  // The cluster key of side `name` (a sink).
  std::string ClusterKey(const std::string& name) const { return absl::StrCat(quorum_, ":", parent_, "/", name); }

  // Runs the shell's `commands` against `side`; its output, or the test fails.
  std::string Shell(const Side& side, const std::string& commands) {
    const std::string base = absl::StrCat(dir_.path(), "/shell", runs_++);
    const std::string cmd = absl::StrCat(BASALT_SHELL_BINARY, " --server=", side.server->address(), " -e '",
                                         absl::StrReplaceAll(commands, {{"'", "'\\''"}}), "' >", base, ".out 2>",
                                         base, ".err </dev/null");
    const int rc = std::system(cmd.c_str());
    std::stringstream out, err;
    out << std::ifstream(base + ".out").rdbuf();
    err << std::ifstream(base + ".err").rdbuf();
    EXPECT_EQ(rc, 0) << commands << "\n" << err.str();
    return out.str();
  }

  static void CreateTable(Connection* conn) {
    TableInfo t;
    t.name = "t";
    for (const char* f : {"f", "local"}) t.families.push_back(FamilySettings{.name = f});
    ASSERT_TRUE(conn->GetAdmin()->CreateTable(t).ok());
  }

  absl::StatusOr<PeerStatus> Peer(Side* side, const std::string& id) {
    auto peers = side->conn->GetAdmin()->ListPeers();
    if (!peers.ok()) return peers.status();
    for (PeerStatus& p : *peers) {
      if (p.peer.id == id) return p;
    }
    return absl::NotFoundError(id);
  }

  std::string quorum_, parent_;
  TempDir dir_;
  int runs_ = 0;
};

TEST_F(BasaltToBasalt, WhatTheSourceWritesArrivesThroughAKillOfTheSource) {
  Side a, b;
  ASSERT_NO_FATAL_FAILURE(Start(&b, "b", /*sink=*/true));
  ASSERT_NO_FATAL_FAILURE(Start(&a, "a", /*sink=*/false));
  ASSERT_NO_FATAL_FAILURE(CreateTable(a.conn.get()));
  ASSERT_NO_FATAL_FAILURE(CreateTable(b.conn.get()));
  // f is replicated, `local` is not (its scope set back to 0 after the table's).
  Shell(a, "enable_table_replication 't'; alter 't', {NAME => 'local', REPLICATION_SCOPE => 0}");
  Shell(a, absl::StrCat("add_peer 'b', CLUSTER_KEY => '", ClusterKey("b"), "'"));
  EXPECT_NE(Shell(a, "list_peers").find(absl::StrCat(" b ", ClusterKey("b"), " ENABLED")), std::string::npos);

  // A writer that never stops; the source is killed with -9 and restarted under it.
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0}, failed{0};
  std::thread writer([&] {
    auto t = a.conn->GetTable("t");
    for (int i = 0; !stop.load(); ++i) {
      const std::string row = absl::StrCat("r", 100000 + i);
      absl::Status s = t->Put(basalt::Put(row).Add("f", "q", absl::StrCat("v", i)).Add("local", "q", "x"));
      s.ok() ? ++acked : ++failed;
    }
  });
  auto wait_for = [&](int n) {
    for (int i = 0; i < 3000 && acked.load() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  wait_for(300);
  a.server->Kill();
  ASSERT_TRUE(a.server->Start().ok());
  const int before = acked.load();
  wait_for(before + 300);
  stop = true;
  writer.join();
  ASSERT_GT(acked.load(), before + 250);

  // Everything on the source arrives: the same rows and values of f, none of `local`.
  std::map<std::string, std::string> want, got;
  want = ScanCellValues(a.conn->GetTable("t").get(), "f", "q");
  ASSERT_GE(want.size(), static_cast<size_t>(acked.load()));
  for (int i = 0; i < 3000; ++i) {
    got = ScanCellValues(b.conn->GetTable("t").get(), "f", "q");
    if (got == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
  for (const auto& [row, value] : ScanCellValues(b.conn->GetTable("t").get(), "local", "q")) {
    ASSERT_EQ(value, "") << row << ": family local has no REPLICATION_SCOPE";
  }
  absl::StatusOr<PeerStatus> p = Peer(&a, "b");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->state, "SHIPPING") << p->last_error;
  const std::string status = Shell(a, "status 'replication'");
  EXPECT_NE(status.find("SOURCE: PeerID=b, State=SHIPPING"), std::string::npos) << status;
  // Its figures on /metrics and the status page.
  auto st = a.conn->GetAdmin()->Status();
  ASSERT_TRUE(st.ok()) << st.status();
  absl::StatusOr<HttpReply> metrics = HttpGet(st->http_address, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  for (const char* line : {"basalt_replication_peer_lag_bytes{peer=\"b\"} 0\n", "basalt_replication_peer_up{peer=\"b\"} 1\n",
                           "basalt_replication_peer_shipped_entries_total{peer=\"b\"} "}) {
    EXPECT_NE(metrics->body.find(line), std::string::npos) << line << " not in\n" << metrics->body;
  }
  absl::StatusOr<HttpReply> page = HttpGet(st->http_address, "/");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_NE(page->body.find("<tr data-peer=\"b\"><td>b</td>"), std::string::npos);
  std::cout << "acked " << acked.load() << " failed " << failed.load() << " rows " << want.size()
            << " shipped since the restart " << p->entries << "\n";

  // A peer that is this very cluster is refused, and says why (once there is an edit to ship).
  Shell(b, absl::StrCat("enable_table_replication 't'; add_peer 'self', CLUSTER_KEY => '", ClusterKey("b"),
                        "'; put 't', 'written-on-b', 'f:q', 'v'"));
  for (int i = 0; i < 500; ++i) {
    p = Peer(&b, "self");
    if (p.ok() && p->last_error.find("is this cluster") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NE(p->last_error.find("is this cluster"), std::string::npos) << p->last_error;
  Shell(b, "remove_peer 'self'");
}

// Active-active: each side a peer of the other, each written at its own rows. Both converge, and
// each ships exactly its own writes: an edit that came from the other side is never shipped back
// (its log record names the cluster it came through), so nothing goes round.
TEST_F(BasaltToBasalt, TwoSitesReplicatingToEachOtherConvergeWithNoLoop) {
  Side a, b;
  ASSERT_NO_FATAL_FAILURE(Start(&a, "a", /*sink=*/true));
  ASSERT_NO_FATAL_FAILURE(Start(&b, "b", /*sink=*/true));
  for (Side* side : {&a, &b}) {
    ASSERT_NO_FATAL_FAILURE(CreateTable(side->conn.get()));
    Shell(*side, "enable_table_replication 't'");
  }
  Shell(a, absl::StrCat("add_peer 'b', CLUSTER_KEY => '", ClusterKey("b"), "'"));
  Shell(b, absl::StrCat("add_peer 'a', CLUSTER_KEY => '", ClusterKey("a"), "'"));
  constexpr int kRows = 200;
  for (int i = 0; i < kRows; ++i) {
    for (auto [side, prefix] : {std::pair{&a, "a"}, std::pair{&b, "b"}}) {
      ASSERT_TRUE(side->conn->GetTable("t")
                      ->Put(basalt::Put(absl::StrCat(prefix, 1000 + i)).Add("f", "q", absl::StrCat("v", i)))
                      .ok());
    }
  }
  std::map<std::string, std::string> on_a, on_b;
  for (int i = 0; i < 3000; ++i) {
    on_a = ScanCellValues(a.conn->GetTable("t").get(), "f", "q");
    on_b = ScanCellValues(b.conn->GetTable("t").get(), "f", "q");
    if (on_a.size() == 2 * kRows && on_a == on_b) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(on_a.size(), 2u * kRows);
  EXPECT_TRUE(on_a == on_b);
  // Each side shipped its own writes, once; a second later, still nothing more (no loop).
  std::this_thread::sleep_for(std::chrono::seconds(1));
  absl::StatusOr<PeerStatus> to_b = Peer(&a, "b"), to_a = Peer(&b, "a");
  ASSERT_TRUE(to_b.ok() && to_a.ok());
  EXPECT_EQ(to_b->entries, static_cast<uint64_t>(kRows)) << to_b->last_error;
  EXPECT_EQ(to_a->entries, static_cast<uint64_t>(kRows)) << to_a->last_error;
  EXPECT_EQ(to_b->lag_bytes, 0u);
  EXPECT_EQ(to_a->lag_bytes, 0u);
  std::cout << "shipped a->b " << to_b->entries << " b->a " << to_a->entries << "\n";
}

}  // namespace
}  // namespace basalt::testing
