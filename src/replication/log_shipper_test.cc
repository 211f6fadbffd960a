// Basalt to Basalt in one process, on real files and a real loopback socket: a source catalogue's
// log followed by a LogShipper, whose batches a second catalogue takes on its HBase port
// (ReplicateWALEntry, as any sink). What is written on the source arrives on the sink, through a
// restart of the shipper and while the sink is away.
#include "src/replication/log_shipper.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/catalog/catalog.h"
#include "src/front/hbase/hbase_front.h"
#include "src/front/hbase/hbase_services.h"
#include "src/services/admin_parts.h"
#include "src/replication/test_nodes.h"
#include "src/services/service.h"
#include "tests/util/temp_dir.h"

namespace basalt::replication {
namespace {

using testing::Eventually;
using testing::kSourceId;
using testing::Node;

class LogShipperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = std::make_unique<Node>(dir_.path() + "/a");
    sink_ = std::make_unique<Node>(dir_.path() + "/b");
    StartSinkPort(0);
  }
  void TearDown() override {
    shipper_.reset();
    if (front_ != nullptr) front_->Shutdown();
  }
  // The sink's HBase port, as a standalone server serves it (its writes on threads of their own).
  void StartSinkPort(int port) {
    front_ = testing::StartSinkPort(sink_.get(), port);
    port_ = front_->port();
  }
  void StartShipper() {
    LogShipper::Options o;
    o.log = source_->catalog->server_log();
    o.state_dir = dir_.path() + "/a/replication";
    o.peer = "b";
    o.find_sink = [this]() -> absl::StatusOr<LogShipper::Sink> {
      return LogShipper::Sink{absl::StrCat("127.0.0.1:", port_), testing::kSinkId};
    };
    o.cluster_id = kSourceId;
    o.scope = [] {
      return [](std::string_view table, std::string_view family) { return table == "t" && family == "f"; };
    };
    o.idle_poll = absl::Milliseconds(5);
    o.say = [](std::string_view) {};
    absl::StatusOr<std::unique_ptr<LogShipper>> s = LogShipper::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    shipper_ = *std::move(s);
  }
  testing::TempDir dir_;
  std::unique_ptr<Node> source_, sink_;
  std::unique_ptr<hbase::HBaseFront> front_;
  int port_ = 0;
  std::unique_ptr<LogShipper> shipper_;
};

TEST_F(LogShipperTest, WhatTheSourceWritesArrivesThroughARestartOfTheShipperAndWhileTheSinkIsAway) {
  source_->Put(0, 20);  // before the peer: not shipped (a new peer starts at the log's end)
  ASSERT_NO_FATAL_FAILURE(StartShipper());
  source_->Put(20, 300);
  ASSERT_TRUE(Eventually([&] { return sink_->Have(20, 300) == 280; })) << sink_->Have(20, 300);
  EXPECT_EQ(sink_->Have(0, 20), 0);
  // (The sink applies a batch before it answers, and the shipper counts it once answered.)
  EXPECT_TRUE(Eventually([&] { return shipper_->figures().entries == 280; })) << shipper_->figures().entries;
  LogShipper::Figures f = shipper_->figures();
  EXPECT_EQ(f.state, LogShipper::State::kShipping);
  EXPECT_EQ(f.entries, 280u);
  EXPECT_EQ(f.cells, 280u);  // family `local` is not replicated

  // Stopped, the shipper keeps its place; started again, it ships what was written meanwhile.
  shipper_.reset();
  source_->Put(300, 400);
  absl::StatusOr<std::map<std::string, WalPosition>> kept = ReadPositions(Env::Default(), dir_.path() + "/a/replication");
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->count("b"), 1u);
  ASSERT_NO_FATAL_FAILURE(StartShipper());
  ASSERT_TRUE(Eventually([&] { return sink_->Have(300, 400) == 100; })) << sink_->Have(300, 400);

  // The sink goes away: the shipper retries; back on its port, it catches up.
  front_->Shutdown();
  front_.reset();
  source_->Put(400, 500);
  ASSERT_TRUE(Eventually([&] { return shipper_->figures().state == LogShipper::State::kRetrying; }));
  EXPECT_GT(shipper_->figures().failed_calls, 0u);
  ASSERT_NO_FATAL_FAILURE(StartSinkPort(port_));
  ASSERT_TRUE(Eventually([&] { return sink_->Have(400, 500) == 100; })) << sink_->Have(400, 500);
  ASSERT_TRUE(Eventually([&] { return shipper_->figures().state == LogShipper::State::kShipping; }));
  EXPECT_EQ(sink_->Have(20, 500), 480);
}

// The source server restarts before its shipper sent what it wrote: the kept place, read back
// before the log opens, holds the old segments over the restart (set aside from the split), and
// the new shipper ships them, then what is written after.
TEST_F(LogShipperTest, WhatWasNotShippedWhenTheSourceStoppedIsShippedAfterItsRestart) {
  ASSERT_NO_FATAL_FAILURE(StartShipper());
  source_->Put(0, 50);
  ASSERT_TRUE(Eventually([&] { return sink_->Have(0, 50) == 50; }));
  front_->Shutdown();  // the sink away: nothing more is shipped
  front_.reset();
  source_->Put(50, 200);
  shipper_.reset();
  source_.reset();  // the source server stops (its regions flush; the held segments stay)
  absl::StatusOr<std::map<std::string, WalPosition>> kept = ReadPositions(Env::Default(), dir_.path() + "/a/replication");
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::map<std::string, uint64_t> holds;
  for (const auto& [peer, at] : *kept) holds[HoldName(peer)] = at.segment;
  ASSERT_EQ(holds.size(), 1u);
  source_ = std::make_unique<Node>(dir_.path() + "/a", holds);
  ASSERT_NO_FATAL_FAILURE(StartSinkPort(port_));
  ASSERT_NO_FATAL_FAILURE(StartShipper());
  source_->Put(200, 250);
  ASSERT_TRUE(Eventually([&] { return sink_->Have(0, 250) == 250; })) << sink_->Have(0, 250);
  // Past them, the old segments go.
  ASSERT_TRUE(Eventually([&] {
    std::error_code ec;
    return std::filesystem::is_empty(dir_.path() + "/a/wal.held", ec) || ec;
  }));
}

TEST_F(LogShipperTest, ASinkLackingTheTableIsRetriedUntilItHasIt) {
  rpc::TableRequest drop;
  drop.set_table("t");
  rpc::AdminResponse ignored;
  ASSERT_TRUE(sink_->admin->DisableTable(drop, &ignored).ok());
  ASSERT_TRUE(sink_->admin->DropTable(drop, &ignored).ok());
  ASSERT_NO_FATAL_FAILURE(StartShipper());
  source_->Put(0, 10);
  ASSERT_TRUE(Eventually([&] { return shipper_->figures().failed_calls > 0; }));
  EXPECT_NE(shipper_->figures().last_error.find("TableNotFoundException"), std::string::npos)
      << shipper_->figures().last_error;
  rpc::CreateTableRequest req;
  req.mutable_table()->set_name("t");
  req.mutable_table()->add_families()->set_name("f");
  rpc::CreateTableResponse resp;
  ASSERT_TRUE(sink_->admin->CreateTable(req, &resp).ok());
  ASSERT_TRUE(Eventually([&] { return sink_->Have(0, 10) == 10; })) << sink_->Have(0, 10);
}

TEST_F(LogShipperTest, ABadPeerIdOrSinkIsRefused) {
  LogShipper::Options o;
  o.log = source_->catalog->server_log();
  o.state_dir = dir_.path() + "/a/replication";
  o.find_sink = []() -> absl::StatusOr<LogShipper::Sink> { return LogShipper::Sink{"127.0.0.1:1", testing::kSinkId}; };
  o.scope = [] { return [](std::string_view, std::string_view) { return true; }; };
  o.peer = "../x";
  o.cluster_id = kSourceId;
  EXPECT_EQ(LogShipper::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.peer = "b";
  o.find_sink = nullptr;  // nowhere to ship
  EXPECT_EQ(LogShipper::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.find_sink = []() -> absl::StatusOr<LogShipper::Sink> { return LogShipper::Sink{"127.0.0.1:1", testing::kSinkId}; };
  o.cluster_id = "basalt-127.0.0.1:16020";  // (Basalt's id before it was a UUID)
  absl::Status s = LogShipper::Start(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("is not a UUID"), std::string::npos) << s;
}

}  // namespace
}  // namespace basalt::replication
