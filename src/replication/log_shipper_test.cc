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
#include "src/services/service.h"
#include "tests/util/temp_dir.h"

namespace basalt::replication {
namespace {

constexpr char kSourceId[] = "0f0f0f0f-1111-4222-8333-444444444444";
constexpr char kSinkId[] = "a0a0a0a0-5555-4666-8777-888888888888";

// A standalone server's parts: a catalogue in `dir` with table t (family f), and its services.
struct Node {
  // `holds`: the log's readers carried over a restart (the server reads them from the kept places).
  explicit Node(const std::string& dir, std::map<std::string, uint64_t> holds = {}) {
    server::Catalog::Options o;
    o.data_dir = dir;
    o.log = [](std::string_view) {};
    o.wal_holds = std::move(holds);
    absl::StatusOr<std::unique_ptr<server::Catalog>> c = server::Catalog::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    catalog = *std::move(c);
    EXPECT_TRUE(catalog->SetServerName("127.0.0.1:16020").ok());
    data = std::make_unique<server::DataService>(catalog.get(), server::ServerConfig{});
    admin = server::AdminService::ForStandalone(catalog.get(), &counters);
    rpc::CreateTableRequest req;
    req.mutable_table()->set_name("t");
    req.mutable_table()->add_families()->set_name("f");
    req.mutable_table()->add_families()->set_name("local");
    rpc::CreateTableResponse resp;
    absl::Status made = admin->CreateTable(req, &resp);
    EXPECT_TRUE(made.ok() || absl::IsAlreadyExists(made)) << made;
  }
  void Put(int from, int to) {
    for (int i = from; i < to; ++i) {
      rpc::BatchMutateRequest b;
      b.set_table("t");
      rpc::RowMutations* row = b.add_rows();
      row->set_row(absl::StrCat("r", 10000 + i));
      for (const char* family : {"f", "local"}) {
        rpc::Mutation* m = row->add_mutations();
        m->set_family(family);
        m->set_qualifier("q");
        m->set_value(absl::StrCat("v", i));
      }
      rpc::BatchMutateResponse resp;
      ASSERT_TRUE(data->BatchMutate(b, &resp).ok());
      ASSERT_EQ(resp.results(0).code(), 0) << resp.results(0).message();
    }
  }
  // How many of rows from..to hold f:q = v<i> (and nothing of family local: not replicated).
  int Have(int from, int to) {
    int n = 0;
    for (int i = from; i < to; ++i) {
      rpc::GetRequest g;
      g.set_table("t");
      g.set_row(absl::StrCat("r", 10000 + i));
      rpc::GetResponse r;
      if (!data->Get(g, &r).ok()) continue;
      n += r.row().cells_size() == 1 && r.row().cells(0).value() == absl::StrCat("v", i) &&
           r.row().cells(0).family() == "f";
    }
    return n;
  }

  server::ServerCounters counters;
  std::unique_ptr<server::Catalog> catalog;
  std::unique_ptr<server::DataService> data;
  std::unique_ptr<server::AdminService> admin;
};

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
    hbase::HBaseFront::Options o;
    o.port.listen = absl::StrCat("127.0.0.1:", port);
    o.port.log = [](std::string_view) {};
    o.start_code = 1;
    o.schedule = [](std::function<void()> task) { std::thread(std::move(task)).detach(); };
    front_ = std::make_unique<hbase::HBaseFront>(o);
    hbase::ServiceParts parts;
    parts.data = sink_->data.get();
    parts.admin = sink_->admin.get();
    parts.cluster_id = kSinkId;
    hbase::ServeAsStandalone(front_.get(), parts);
    ASSERT_TRUE(front_->Start().ok());
    port_ = front_->port();
  }
  void StartShipper() {
    LogShipper::Options o;
    o.log = source_->catalog->server_log();
    o.state_dir = dir_.path() + "/a/replication";
    o.peer = "b";
    o.sink = absl::StrCat("127.0.0.1:", port_);
    o.cluster_id = kSourceId;
    o.replicated = [](std::string_view table, std::string_view family) { return table == "t" && family == "f"; };
    o.idle_poll = absl::Milliseconds(5);
    o.say = [](std::string_view) {};
    absl::StatusOr<std::unique_ptr<LogShipper>> s = LogShipper::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    shipper_ = *std::move(s);
  }
  bool Eventually(const std::function<bool()>& cond) {
    for (int i = 0; i < 2000 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return cond();
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
  o.sink = "127.0.0.1:1";
  o.peer = "../x";
  EXPECT_EQ(LogShipper::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.peer = "b";
  o.sink = "no-port";
  o.cluster_id = kSourceId;
  EXPECT_EQ(LogShipper::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.sink = "127.0.0.1:1";
  o.cluster_id = "basalt-127.0.0.1:16020";  // (Basalt's id before it was a UUID)
  absl::Status s = LogShipper::Start(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("is not a UUID"), std::string::npos) << s;
}

}  // namespace
}  // namespace basalt::replication
