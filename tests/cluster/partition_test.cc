// Partitions (docs/DESIGN.md §6): a region server cut off from ZooKeeper and the master, and a master
// cut off from ZooKeeper (tests/cluster/partition_fixture.h).
#include "tests/cluster/partition_fixture.h"

namespace basalt::testing {
namespace {

using Partition = PartitionFixture;

// A region server cut off from ZooKeeper and the master, but not from its clients, stops
// answering reads within its session timeout: before its regions can open anywhere else, so a
// client that located a row there before never reads an old value after a newer one was written.
TEST_F(Partition, ARegionServerCutOffFromZooKeeperStopsAnsweringReadsWithinItsSessionTimeout) {
  auto master = StartMasterIn("m1");
  ASSERT_TRUE(master);
  constexpr int kCutSessionMs = 2000;
  auto a = StartServerIn("a", kCutSessionMs);
  ASSERT_TRUE(a);
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("p"), {}).ok());  // its one region on a
  auto b = StartServerIn("b");
  ASSERT_TRUE(b);
  ASSERT_TRUE(Eventually([&] { return Children("/rs").size() == 2; }));
  auto table = conn->GetTable("p");
  ASSERT_TRUE(table->Put(Put("k").Add("f", "q", "v1")).ok());
  auto regions = conn->GetAdmin()->ListRegions("p");
  ASSERT_TRUE(regions.ok() && regions->size() == 1u) << regions.status();
  ASSERT_EQ(regions->front().server, a->address());
  const std::string region = regions->front().encoded_name;
  std::string value;
  ASSERT_TRUE(RawGet(a->address(), "p", region, "k", &value).ok());
  ASSERT_EQ(value, "v1");

  const absl::Time cut = absl::Now();
  ASSERT_TRUE(lab_->Cut("a", lab_->host_ip(), BASALT_PARTITION_ZK_PORT).ok());
  ASSERT_TRUE(lab_->Cut("a", lab_->ip("m1")).ok());
  absl::Duration refused_after = absl::InfiniteDuration();
  grpc::Status last;
  for (absl::Time end = cut + absl::Seconds(15); absl::Now() < end; absl::SleepFor(absl::Milliseconds(20))) {
    last = RawGet(a->address(), "p", region, "k", &value);
    if (!last.ok()) {
      refused_after = absl::Now() - cut;
      break;
    }
  }
  std::printf("the cut-off server refused reads %s after the cut: %s\n", absl::FormatDuration(refused_after).c_str(),
              last.error_message().c_str());
  EXPECT_LE(refused_after, absl::Milliseconds(kCutSessionMs)) << "it served reads past its session timeout";

  // The region opens on b (after a's session expired and a was fenced); a client that had found
  // the row on a writes and reads the new value there.
  ASSERT_TRUE(table->Put(Put("k").Add("f", "q", "v2")).ok());
  for (int i = 0; i < 20; ++i) {
    auto got = table->Get(Get("k"));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->Value("f", "q").value_or("<none>"), "v2") << "a stale read";
  }
  EXPECT_FALSE(RawGet(a->address(), "p", region, "k", &value).ok()) << "the cut-off server answers again: " << value;
  EXPECT_EQ(a->WaitForExit(std::chrono::seconds(10)), 3) << "the cut-off server did not stop";
}

// The active master cut off from ZooKeeper (not from the region servers or its clients): a
// backup takes over, and a move sent to the deposed master's port is refused, leaving the region
// open on exactly one server, where every Get and Put still finds it. (The table has one region.)
TEST_F(Partition, ADeposedMastersMoveIsRefusedAndTheRegionStaysOpenOnOneServer) {
  auto m1 = StartMasterIn("m1");
  ASSERT_TRUE(m1);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  auto m2 = StartMasterIn("m2");
  ASSERT_TRUE(m2);
  auto a = StartServerIn("a");
  ASSERT_TRUE(a);
  auto b = StartServerIn("b");
  ASSERT_TRUE(b);
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 2; }));
  // (The master writes its port file after it publishes itself in ZooKeeper.)
  ASSERT_TRUE(Eventually([&] { return !MasterAddress("m1").empty(); }));
  const std::string m1_address = MasterAddress("m1");
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("d"), {}).ok());
  auto table = conn->GetTable("d");
  ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "acked"));
  auto regions = conn->GetAdmin()->ListRegions("d");
  ASSERT_TRUE(regions.ok() && regions->size() == 1u) << regions.status();
  const std::string region = regions->front().encoded_name;
  const std::string to = regions->front().server == a->address() ? b->address() : a->address();

  ASSERT_FALSE(m2->WaitForExit(absl::ZeroDuration()).has_value()) << "the backup master ended before the cut";
  ASSERT_TRUE(lab_->Cut("m1", lab_->host_ip(), BASALT_PARTITION_ZK_PORT).ok());
  const absl::Time cut = absl::Now();
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2"; })) << "the backup never took over";
  std::printf("m2 leads %s after the cut\n", absl::FormatDuration(absl::Now() - cut).c_str());

  // The operator's move, sent to the master it knew.
  {
    auto stub = rpc::Admin::NewStub(grpc::CreateChannel(m1_address, grpc::InsecureChannelCredentials()));
    rpc::MoveRequest req;
    req.set_region(region);
    req.set_server(to);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    rpc::AdminResponse resp;
    grpc::Status moved = stub->Move(&ctx, req, &resp);
    std::printf("move sent to the deposed master: %d %s\n", moved.error_code(), moved.error_message().c_str());
    EXPECT_FALSE(moved.ok()) << "the deposed master obeyed a move";
  }
  std::vector<ServerProcess*> servers = {a.get(), b.get()};
  EXPECT_EQ(HoldersOf(servers, "d"), 1) << "right after the move";
  // And were it still running, its calls would carry its epoch (1: the first master's), which
  // the region servers refuse once m2 (epoch 2) has asked them what they hold.
  {
    ASSERT_TRUE(Eventually([&] { return MasterServes() && !MasterAddress("m2").empty(); }));
    auto stub = rpc::Admin::NewStub(grpc::CreateChannel(regions->front().server, grpc::InsecureChannelCredentials()));
    rpc::CloseRegionRequest req;
    req.set_region(region);
    req.set_master_epoch(1);
    grpc::ClientContext ctx;
    rpc::AdminResponse resp;
    grpc::Status closed = stub->CloseRegion(&ctx, req, &resp);
    EXPECT_EQ(closed.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << closed.error_message();
    EXPECT_NE(closed.error_message().find("deposed master"), std::string::npos) << closed.error_message();
  }
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "acked"));
  ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "again"));
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "again"));
  EXPECT_EQ(HoldersOf(servers, "d"), 1) << "after the reads and writes";
}

}  // namespace
}  // namespace basalt::testing
