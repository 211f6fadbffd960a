// Verbs in a cluster (docs/DESIGN.md §6): one client's Gets and Puts go over RDMA verbs to two region
// servers, each with its own verbs listener on rxe0 and its own pool of the client's endpoints,
// and follow a region that moved from one server's pool to the other's. Real processes: a
// basalt-master and two basalt-server --cluster in the soft-RoCE guest, on a ZooKeeper and a Ceph
// that the host runs on its own address (tests/rxe/cluster_rxe.sh starts them; the guest reaches
// them through guest.sh --uplink). On a host without an RDMA device it skips.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/cluster/cluster_fixture.h"
#include "transport/verbs/setup.h"

namespace basalt::testing {
namespace {

std::string RxeAddress() {
  const char* a = std::getenv("BASALT_RXE_ADDR");
  return a != nullptr ? a : "";
}

class ClusterVerbs : public ClusterFixture {
 protected:
  void SetUp() override {
    if (!verbs::RdmaDevices().ok() || RxeAddress().empty()) {
      GTEST_SKIP() << "no RDMA device here (this suite runs in the soft-RoCE guest: tests/rxe/cluster_rxe.sh)";
    }
    ClusterFixture::SetUp();
  }
  // A region server with verbs on rxe0 (required). The guest emulates its CPUs: sessions get
  // time to spare.
  std::unique_ptr<ServerProcess> NewVerbsServer() {
    return NewServer(kSessionMs, {"--rdma=on", absl::StrCat("--rdma_listen=", RxeAddress(), ":0"), "--rdma_device=rxe0",
                                  "--rdma_device_port=1", "--rdma_gid_index=1"});
  }
  static constexpr int kSessionMs = 15000;
};

// `threads` threads each Put and Get `rows` rows of every prefix; returns the calls that failed
// or read back something else.
int PutGetRows(Table* t, const std::vector<std::string>& prefixes, int threads, int rows, const std::string& tag) {
  std::atomic<int> errors{0};
  std::vector<std::thread> running;
  for (int i = 0; i < threads; ++i) {
    running.emplace_back([&, i] {
      for (const std::string& p : prefixes) {
        for (int k = 0; k < rows; ++k) {
          const std::string row = absl::StrCat(p, "-", i, "-", k);
          const std::string v = absl::StrCat(tag, ":", row);
          absl::Status put = t->Put(Put(row).Add("f", "q", v));
          if (!put.ok()) {
            ADD_FAILURE() << row << ": " << put;
            errors++;
          }
          absl::StatusOr<Result> r = t->Get(Get(row));
          if (!r.ok() || r->Value("f", "q").value_or("") != v) {
            ADD_FAILURE() << row << ": " << (r.ok() ? r->Value("f", "q").value_or("(none)") : r.status().ToString());
            errors++;
          }
        }
      }
    });
  }
  for (std::thread& th : running) th.join();
  return errors.load();
}

TEST_F(ClusterVerbs, OneClientsGetsAndPutsGoToTwoServersOverVerbsAndFollowARegionThatMoved) {
  auto master = StartMaster("m1", /*balancer_ms=*/0, kSessionMs);
  ASSERT_TRUE(master);
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(NewVerbsServer());
    absl::Status started = servers.back()->Start();
    ASSERT_TRUE(started.ok()) << started;
  }
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 2; }, absl::Seconds(120)));
  // Verbs required: every region server must give this client a verbs path (the master, which
  // serves meta over gRPC, is never asked for one).
  auto conn = Connect(absl::Seconds(60), TransportChoice::kVerbs);
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("t"), {"m"}).ok());
  std::map<std::string, int> per = RegionsPerServer(conn.get(), "t");
  if (per.size() != 2) {
    ASSERT_TRUE(conn->GetAdmin()->Balance().ok());
    per = RegionsPerServer(conn.get(), "t");
  }
  ASSERT_EQ(per, (std::map<std::string, int>{{servers[0]->address(), 1}, {servers[1]->address(), 1}}));

  // Rows "a-..." live in the first region, "n-..." in the second: one on each server.
  auto table = conn->GetTable("t");
  constexpr int kThreads = 4, kRows = 10;
  ASSERT_EQ(PutGetRows(table.get(), {"a", "n"}, kThreads, kRows, "one"), 0);
  std::map<std::string, TransportStats> before = conn->GetServerTransportStats();
  ASSERT_EQ(before.size(), 2u) << "a data call went to a server that is not a region server";
  for (const auto& s : servers) {
    ASSERT_TRUE(before.count(s->address())) << s->address();
    const TransportStats& st = before.at(s->address());
    EXPECT_EQ(st.verbs_state, "up") << s->address();
    EXPECT_EQ(st.verbs_calls, 2u * kThreads * kRows) << s->address();  // a Put and a Get per row
    EXPECT_EQ(st.grpc_fallbacks, 0u) << s->address();
    EXPECT_GE(st.endpoints_created, 1u) << s->address();
    EXPECT_EQ(st.sessions, 1u) << s->address();  // one session per server
  }

  // The second region moves to the first region's server: its rows follow it to that server's
  // pool, still over verbs.
  auto regions = conn->GetAdmin()->ListRegions("t");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 2u);
  const RegionStatus& second = (*regions)[0].start_key == "m" ? (*regions)[0] : (*regions)[1];
  const std::string from = second.server;
  const std::string to = from == servers[0]->address() ? servers[1]->address() : servers[0]->address();
  absl::Status moved = conn->GetAdmin()->Move(second.encoded_name, to);
  ASSERT_TRUE(moved.ok()) << moved;
  EXPECT_EQ(RegionsPerServer(conn.get(), "t"), (std::map<std::string, int>{{to, 2}}));
  const uint64_t relocated = conn->GetTransportStats().regions_relocated;

  ASSERT_EQ(PutGetRows(table.get(), {"n"}, kThreads, kRows, "two"), 0);
  std::map<std::string, TransportStats> after = conn->GetServerTransportStats();
  ASSERT_EQ(after.size(), 2u);
  for (const auto& [server, st] : after) {
    std::printf("%s: %s, %llu verbs calls, %llu endpoints, %llu sessions\n", server.c_str(), st.verbs_state.c_str(),
                static_cast<unsigned long long>(st.verbs_calls), static_cast<unsigned long long>(st.endpoints_created),
                static_cast<unsigned long long>(st.sessions));
  }
  EXPECT_EQ(after.at(to).verbs_state, "up");
  EXPECT_EQ(after.at(to).verbs_calls - before.at(to).verbs_calls, 2u * kThreads * kRows);
  // At most each thread's first call after the move went to the old server (and was refused).
  EXPECT_LE(after.at(from).verbs_calls - before.at(from).verbs_calls, static_cast<uint64_t>(kThreads));
  for (const auto& [server, st] : after) EXPECT_EQ(st.grpc_fallbacks, 0u) << server;
  EXPECT_GT(conn->GetTransportStats().regions_relocated, relocated);
  const TransportStats total = conn->GetTransportStats();
  EXPECT_EQ(total.verbs_state, "up");
  EXPECT_EQ(total.verbs_calls, after.at(to).verbs_calls + after.at(from).verbs_calls);

  // Every row reads back as last written, by a scan (gRPC).
  std::map<std::string, std::string> found;
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &found));
  EXPECT_EQ(found.size(), 2u * kThreads * kRows);
  for (const auto& [row, v] : found) EXPECT_EQ(v, absl::StrCat(row[0] == 'a' ? "one:" : "two:", row)) << row;
}

}  // namespace
}  // namespace basalt::testing
