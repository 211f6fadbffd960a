// A cluster on the tests' real ZooKeeper and Ceph (tests/services/): real basalt-master and
// basalt-server --cluster processes, every file on RADOS, clients that know only ZooKeeper.
//  - Three region servers share a table's regions evenly; writes, reads and scans go to each
//    region's server; one server killed with SIGKILL: the master fences it, splits its log and
//    reopens its regions on the others, and every acknowledged write is there (docs/DESIGN.md §6;
//    the chaos test in small).
//  - The zombie test: a server holding regions is stopped (SIGSTOP) past its
//    session timeout; its regions serve elsewhere; once it runs again (SIGCONT) it acknowledges
//    no write and exits.
//  - A server the master fences while it still runs (its live node gone, as in a partition from
//    ZooKeeper) ends at its next write, which is refused as fenced and never reaches storage.
//  - A backup master takes over when the active one is killed, and recovers the server that died
//    while no master was active (its registration outlived it in ZooKeeper).
//  - Reversed scans, a page filter and a row prefix across regions on several servers.
//  - The shell, through ZooKeeper.
//  - Regions moved one by one onto one server and spread again by the balancer, under writes
//    and reads that see no error; the master's own balancer for a server that joins.
//  - A take-over while a server killed with the old master is still live in ZooKeeper: fenced,
//    its log split, before its regions open elsewhere.
//  - An Increment applied by a server killed before it answered counts once when the client's
//    retry reaches the server the region failed over to (nonces).
//  - A region server whose close cannot flush aborts; its regions open elsewhere with every write.
//  - unassign and assign of one region (HBase 2's): closed, it stays closed across the balancer
//    and a master take-over, until assigned; nothing it held is lost.
//  - A master killed in the middle of a split, a merge or a move: the backup rolls it back when
//    it died before meta's commit, forward when after (meta's one batch is the procedure's record).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "basalt/transaction.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/util/http_get.h"
#include "tests/util/scan_rows.h"

namespace basalt::testing {
namespace {

using Cluster = ClusterFixture;

std::vector<std::string> ScanRows(Table* table, const Scan& scan) { return ScanRowKeys(table, scan); }

// A client walks a table's regions on their servers: reversed from the last region down, a page
// that spans regions (HBase counts per region), a prefix narrowed to its regions, one row a
// message so streams are resumed. (tests/property/filter_property_test checks each filter's
// meaning on one server.)
void CheckFiltersAndReversedScansAcrossRegions(Table* table) {
  std::vector<std::string> all = ScanRows(table, Scan());
  ASSERT_GT(all.size(), 100u);
  std::vector<std::string> backwards(all.rbegin(), all.rend());
  EXPECT_EQ(ScanRows(table, Scan().SetReversed(true)), backwards);
  EXPECT_EQ(ScanRows(table, Scan().SetReversed(true).SetCaching(1).SetLimit(150)),
            std::vector<std::string>(backwards.begin(), backwards.begin() + 150));
  // From the middle of one region down to another's, stop exclusive.
  auto at = [&](std::string_view from, std::string_view to) {
    std::vector<std::string> want;
    for (const std::string& r : backwards) {
      if (r <= from && r > to) want.push_back(r);
    }
    return want;
  };
  EXPECT_EQ(ScanRows(table, Scan().WithStartRow("j-1100").WithStopRow("d-1100").SetReversed(true)),
            at("j-1100", "d-1100"));
  // A page of 25 rows over regions of ~60: 25 in all, either way.
  Scan paged = Scan().SetCaching(4).SetFilter(Filter::Page(25));
  EXPECT_EQ(ScanRows(table, paged), std::vector<std::string>(all.begin(), all.begin() + 25));
  paged.WithStartRow("c-1000").SetFilter(
      Filter::List(Filter::kMustPassAll, {Filter::Row(FilterOp::kNotEqual, Comparator::Regex("^b-")), Filter::Page(70)}));
  std::vector<std::string> want;
  for (const std::string& r : all) {
    if (r >= "c-1000" && want.size() < 70) want.push_back(r);
  }
  EXPECT_EQ(ScanRows(table, paged), want);
  paged.SetReversed(true).WithStartRow("").SetFilter(Filter::Page(25));
  EXPECT_EQ(ScanRows(table, paged), std::vector<std::string>(backwards.begin(), backwards.begin() + 25));
  // A prefix, both ways: its rows only.
  want.clear();
  for (const std::string& r : all) {
    if (r.starts_with("g-")) want.push_back(r);
  }
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(ScanRows(table, Scan().SetRowPrefix("g-")), want);
  std::reverse(want.begin(), want.end());
  EXPECT_EQ(ScanRows(table, Scan().SetReversed(true).SetRowPrefix("g-")), want);
  EXPECT_EQ(ScanRows(table, Scan().SetReversed(true).SetFilter(Filter::Prefix("g-"))), want);
  // A Get with a filter, on each row's server.
  auto got = table->Get(Get(all[0]).SetFilter(Filter::Value(FilterOp::kEqual, Comparator::Regex("^v"))));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 1u);
  got = table->Get(Get(all[0]).SetFilter(Filter::KeyOnly()));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->cells()[0].value, "");
}

TEST_F(Cluster, ThreeServersShareATableAndAKilledServersRegionsServeElsewhereWithEveryAcknowledgedWrite) {
  Servers c;
  ASSERT_NO_FATAL_FAILURE(StartServersAndConnect(3, &c));
  auto& servers = c.servers;
  auto& conn = c.conn;
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("t"), {"c", "f", "i", "l", "o"}).ok());
  // Six regions, two on each server.
  std::map<std::string, int> per = RegionsPerServer(conn.get(), "t");
  ASSERT_EQ(per.size(), 3u);
  for (const auto& [server, n] : per) EXPECT_EQ(n, 2) << server;

  auto table = conn->GetTable("t");
  auto row = [](int i) { return absl::StrCat(std::string(1, static_cast<char>('a' + i % 17)), "-", 1000 + i); };
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(table->Put(Put(row(i)).Add("f", "q", absl::StrCat("v", i))).ok()) << i;
  std::vector<RowMutationsBase> batch;
  for (int i = 300; i < 400; ++i) batch.push_back(Put(row(i)).Add("f", "q", absl::StrCat("v", i)));
  auto statuses = table->Batch(batch);
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  for (const absl::Status& s : *statuses) ASSERT_TRUE(s.ok()) << s;
  auto count = [&] {
    auto sc = table->GetScanner(Scan());
    if (!sc.ok()) return -1;
    int n = 0;
    Result r;
    for (;;) {
      auto more = (*sc)->Next(&r);
      if (!more.ok()) return -1;
      if (!*more) return n;
      ++n;
    }
  };
  EXPECT_EQ(count(), 400);
  // A split in a cluster: the master closes the parent on its server, writes the daughters as
  // references, commits them in meta and places them; nothing is copied or lost.
  absl::Status split = conn->GetAdmin()->Split("t", "b");
  ASSERT_TRUE(split.ok()) << split;
  EXPECT_EQ(conn->GetAdmin()->ListRegions("t")->size(), 7u);
  EXPECT_EQ(count(), 400);
  ASSERT_NO_FATAL_FAILURE(CheckFiltersAndReversedScansAcrossRegions(table.get()));

  // The server holding the region of "a" dies; its regions serve elsewhere, nothing lost.
  auto regions = conn->GetAdmin()->ListRegions("t");
  ASSERT_TRUE(regions.ok());
  const std::string victim = regions->front().server;
  size_t k = 0;
  while (k < servers.size() && servers[k]->address() != victim) ++k;
  ASSERT_LT(k, servers.size()) << victim;
  servers[k]->Kill();
  const absl::Time killed = absl::Now();
  // The first read of one of its rows waits (retrying) until the region serves again.
  auto first = table->Get(Get(row(0)));
  const absl::Duration serving_again = absl::Now() - killed;
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->Value("f", "q").value_or("<lost>"), "v0");
  for (int i = 0; i < 400; ++i) {
    auto r = table->Get(Get(row(i)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->Value("f", "q").value_or("<lost>"), absl::StrCat("v", i)) << i;
  }
  for (int i = 400; i < 450; ++i) ASSERT_TRUE(table->Put(Put(row(i)).Add("f", "q", absl::StrCat("v", i))).ok()) << i;
  EXPECT_EQ(count(), 450);
  per = RegionsPerServer(conn.get(), "t");
  EXPECT_EQ(per.size(), 2u);
  EXPECT_FALSE(per.count(victim));
  int open = 0;
  for (const auto& [server, n] : per) open += n;
  EXPECT_EQ(open, 7);
  EXPECT_EQ(Children("/fenced").size(), 1u);
  EXPECT_EQ(Children("/servers").size(), 2u);  // the dead one's registration is done with
  std::printf("session timeout 1 s: a killed server's regions served again %s after kill -9\n",
              absl::FormatDuration(serving_again).c_str());
}

TEST_F(Cluster, AZombieServerAcknowledgesNothingAfterItsRegionsServeElsewhere) {
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  auto a = NewServer();
  auto b = NewServer();
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("z"), {"m"}).ok());  // both regions on a
  auto table = conn->GetTable("z");
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(table->Put(Put(absl::StrCat("row", 100 + i)).Add("f", "q", "acked")).ok());
  ASSERT_TRUE(b->Start().ok());

  a->Signal(SIGSTOP);
  const absl::Time stopped = absl::Now();
  ASSERT_TRUE(Eventually([&] {
    auto per = RegionsPerServer(conn.get(), "z");
    return per.size() == 1 && per.count(b->address()) && per[b->address()] == 2;
  })) << "the stopped server's regions never served elsewhere";
  const absl::Duration elsewhere_after = absl::Now() - stopped;

  // A write sent to the zombie itself, naming the region it held, which it takes in once it runs.
  grpc::Status zombie_put;
  auto regions = conn->GetAdmin()->ListRegions("z");
  ASSERT_TRUE(regions.ok()) << regions.status();
  std::thread writer([&] {
    // [m, end) holds "zombie"
    zombie_put = RawPut(a->address(), "z", regions->back().encoded_name, "zombie");
  });
  absl::SleepFor(absl::Milliseconds(300));
  a->Signal(SIGCONT);
  writer.join();
  EXPECT_FALSE(zombie_put.ok()) << "a fenced server acknowledged a write";
  std::printf("the zombie's write: %d %s\n", zombie_put.error_code(), zombie_put.error_message().c_str());
  EXPECT_EQ(a->WaitForExit(std::chrono::seconds(20)), 3) << "the zombie did not stop when told its session ended";

  for (int i = 0; i < 100; ++i) {
    auto r = table->Get(Get(absl::StrCat("row", 100 + i)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->Value("f", "q").value_or("<lost>"), "acked") << i;
  }
  auto z = table->Get(Get("zombie"));
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TRUE(z->empty()) << "the fenced server's write reached storage";
  std::printf("session timeout 1 s: regions served elsewhere %s after SIGSTOP\n",
              absl::FormatDuration(elsewhere_after).c_str());
}

// The fencing itself, without the race between a zombie's exit and its write: the master takes a
// server that still runs for dead (its live node is gone, as when a partition cuts it off from
// ZooKeeper while it can still reach Ceph) and fences it; the next write the server takes is
// refused as fenced, and the server ends before anything is acknowledged.
TEST_F(Cluster, AServerFencedWhileRunningAcknowledgesNoWrite) {
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  auto a = NewServer();
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
  const std::string node = Children("/rs").at(0);
  auto conn = Connect(absl::Seconds(5));
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("p"), {}).ok());
  auto table = conn->GetTable("p");
  ASSERT_TRUE(table->Put(Put("before").Add("f", "q", "acked")).ok());
  auto regions = conn->GetAdmin()->ListRegions("p");
  ASSERT_TRUE(regions.ok());

  ASSERT_TRUE(zk_->Delete(parent_ + "/rs/" + node).ok());
  ASSERT_TRUE(Eventually([&] { return Children("/fenced") == std::vector<std::string>{node}; }));
  // Its log write is refused: it ends there, before answering (docs/DESIGN.md §6), so the caller sees the
  // connection go (and a client would send the call elsewhere), never an error for a call
  // nothing of which was applied.
  grpc::Status s = RawPut(a->address(), "p", regions->front().encoded_name, "after");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_EQ(a->WaitForExit(std::chrono::seconds(10)), 3) << "the fenced server did not stop";
  a->Kill();

  // Another server takes the region, with the acknowledged write and without the fenced one.
  auto b = NewServer();
  ASSERT_TRUE(b->Start().ok());
  auto got = table->Get(Get("before"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->Value("f", "q").value_or("<lost>"), "acked");
  EXPECT_TRUE(table->Get(Get("after")).value().empty()) << "a fenced server's write reached storage";
}

// A region server paused (SIGSTOP: a long GC-like pause, a hung disk) for 30 s under
// writers. Each writer's call in flight to it ends at the client's attempt timeout and goes again
// once meta names the server the region reopened on, so every writer acknowledges again within
// 10 s of the stop, on the default session timeout (4 s); and when the paused server wakes up
// fenced, no writer sees an error (its calls end with it, as after a crash).
TEST_F(Cluster, APausedServersWritersAcknowledgeAgainWithinTenSecondsAndSeeNoErrorWhenItWakes) {
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  auto a = NewServer(/*session_ms=*/4000);  // basalt-server's default
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("w"), {}).ok());  // its one region on a
  auto b = NewServer();
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(Eventually([&] { return Children("/rs").size() == 2; }));
  auto table = conn->GetTable("w");
  ASSERT_TRUE(table->Put(Put("warm").Add("f", "q", "up")).ok());

  constexpr int kWriters = 4;
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  absl::Time stopped_at = absl::InfiniteFuture();
  std::vector<absl::Time> first_ack_after_stop(kWriters, absl::InfiniteFuture());
  std::vector<std::string> errors;
  std::vector<int> acked(kWriters, 0);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; !stop.load(); ++i) {
        const absl::Time sent = absl::Now();
        absl::Status s = table->Put(Put(absl::StrCat("w", w, "-", i)).Add("f", "q", "acked"));
        absl::MutexLock l(&mu);
        if (!s.ok()) {
          errors.push_back(s.ToString());
          continue;
        }
        ++acked[w];
        if (sent >= stopped_at && first_ack_after_stop[w] == absl::InfiniteFuture()) first_ack_after_stop[w] = absl::Now();
      }
    });
  }
  absl::SleepFor(absl::Seconds(1));
  a->Signal(SIGSTOP);
  {
    absl::MutexLock l(&mu);
    stopped_at = absl::Now();
  }
  absl::SleepFor(absl::Seconds(30));
  a->Signal(SIGCONT);
  absl::SleepFor(absl::Seconds(3));
  stop = true;
  for (std::thread& t : writers) t.join();
  for (const std::string& e : errors) ADD_FAILURE() << "a writer saw an error: " << e;
  for (int w = 0; w < kWriters; ++w) {
    const absl::Duration gap = first_ack_after_stop[w] - stopped_at;
    std::printf("writer %d: %d acknowledged; first acknowledged after the stop %s after it\n", w, acked[w],
                absl::FormatDuration(gap).c_str());
    EXPECT_LE(gap, absl::Seconds(10)) << "writer " << w;
  }
  EXPECT_EQ(a->WaitForExit(std::chrono::seconds(10)), 3) << "the paused server did not stop when it woke up";
  // Every acknowledged write is there.
  std::map<std::string, std::string> found;
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &found));
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < acked[w]; ++i) {
      // (A writer's rows are acknowledged in order; an error would have failed the test above.)
      EXPECT_EQ(found.count(absl::StrCat("w", w, "-", i)), 1u) << "acknowledged write w" << w << "-" << i << " lost";
    }
  }
}

// A region server killed and started again at once on its port (systemd's RestartSec
// is shorter than a ZooKeeper session) is a new run at the old address while the old run's live
// node lasts. A move then must not take the new run's "not open here" for the old run's close:
// the old run's log holds acknowledged writes, and is split before the region opens anywhere.
TEST_F(Cluster, AServerRestartedAtOnceOnItsPortLosesNoAcknowledgedWriteToAMove) {
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  auto a = NewServer(/*session_ms=*/30000);  // its old run's node outlives the whole test
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
  const std::string old_run = Children("/rs").at(0);
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("r"), {}).ok());  // its one region on a
  auto b = NewServer();
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(Eventually([&] { return Children("/rs").size() == 2; }));
  auto table = conn->GetTable("r");
  // Below the flush size: every write is only in a's memstore and log.
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(table->Put(Put(absl::StrCat("row", 1000 + i)).Add("f", "q", "acked")).ok());
  auto regions = conn->GetAdmin()->ListRegions("r");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 1u);
  ASSERT_EQ(regions->front().server, a->address());
  const std::string region = regions->front().encoded_name;

  a->Kill();
  ASSERT_TRUE(a->Start().ok());  // the same port, at once
  const std::string at = a->address() + ",";
  ASSERT_TRUE(Eventually([&] {
    std::vector<std::string> rs = Children("/rs");
    return std::count_if(rs.begin(), rs.end(), [&](const std::string& n) { return n.rfind(at, 0) == 0; }) == 2;
  })) << "the new run is not live beside the old one";
  // The new run refuses what is meant for the old one, naming itself.
  {
    auto stub = rpc::Admin::NewStub(grpc::CreateChannel(a->address(), grpc::InsecureChannelCredentials()));
    rpc::CloseRegionRequest req;
    req.set_region(region);
    req.set_start_code(std::stoll(old_run.substr(old_run.rfind(',') + 1)));
    grpc::ClientContext ctx;
    rpc::AdminResponse resp;
    grpc::Status s = stub->CloseRegion(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
    EXPECT_NE(s.error_message().find("the other is gone"), std::string::npos) << s.error_message();
  }

  // The operator's move, whenever it comes: before the master recovered the old run (the close
  // is refused and the region waits for the old run's log), or after (it moves as usual).
  absl::Status moved = MoveWhenLive(conn.get(), region, b->address());
  std::printf("move after the restart: %s\n", moved.ToString().c_str());
  std::map<std::string, std::string> found;
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &found));
  EXPECT_EQ(found.size(), 200u) << "acknowledged writes lost right after the move";
  ASSERT_TRUE(Eventually([&] {
    std::vector<std::string> fenced = Children("/fenced"), registered = Children("/servers");
    return std::count(fenced.begin(), fenced.end(), old_run) == 1 &&
           std::count(registered.begin(), registered.end(), old_run) == 0;
  })) << "the old run was never fenced and recovered";
  found.clear();
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &found));
  EXPECT_EQ(found.size(), 200u) << "acknowledged writes lost after the old run's log was split";
  for (const auto& [row, value] : found) EXPECT_EQ(value, "acked") << row;
  std::map<std::string, int> per = RegionsPerServer(conn.get(), "r");
  int open = 0;
  for (const auto& [server, n] : per) open += n;
  EXPECT_EQ(open, 1);
}

// TLS and auth across a cluster (docs/DESIGN.md §12): the master and the region servers serve TLS, each
// one's certificate (CN basalt-server) is its identity to the others and a superuser; the grants
// live in the master's basalt:acl and reach the region servers when the master announces them.
TEST_F(Cluster, TlsAndAuthAcrossTheMasterAndItsRegionServers) {
  const std::string certs = dir_.path() + "/certs";
  ASSERT_EQ(std::system(absl::StrCat(BASALT_SOURCE_DIR, "/tests/security/make_certs.sh ", certs,
                                     " admin alice bob >/dev/null").c_str()),
            0);
  std::vector<std::string> secure = {"--tls_cert=" + certs + "/server.pem", "--tls_key=" + certs + "/server.key",
                                     "--tls_ca=" + certs + "/ca.pem", "--auth=true",
                                     "--superusers=basalt-server,admin"};
  // A secure cluster needs a ZooKeeper identity (docs/DESIGN.md §6): without one the master refuses to
  // start, since anyone reaching ZooKeeper could rewrite the cluster's nodes.
  {
    auto refused = StartMaster("m0", 0, 1000, "", secure);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->WaitForExit(absl::Seconds(10)), std::optional<int>(2));
  }
  secure.push_back("--zookeeper_auth_file=" + WriteIdentity());
  ASSERT_NO_FATAL_FAILURE(ConnectAsIdentity());
  auto master = StartMaster("m1", 0, 1000, "", secure);
  ASSERT_TRUE(master);
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(NewServer(1000, secure));
    ASSERT_TRUE(servers.back()->Start().ok());
  }
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 2u; }));
  auto as = [&](const std::string& user) {
    ClientSecurity c;
    c.tls_ca = certs + "/ca.pem";
    c.tls_cert = certs + "/" + user + ".pem";
    c.tls_key = certs + "/" + user + ".key";
    return c;
  };
  auto admin = Connect(absl::Seconds(30), TransportChoice::kGrpc, as("admin"));
  ASSERT_NE(admin, nullptr);
  ASSERT_TRUE(admin->GetAdmin()->CreateTable(TableNamed("t"), {"m"}).ok());
  PutLetters(admin->GetTable("t").get(), "v");
  EXPECT_EQ(RegionsPerServer(admin.get(), "t").size(), 2u);  // both servers serve a region

  auto alice = Connect(absl::Seconds(10), TransportChoice::kGrpc, as("alice"));
  ASSERT_NE(alice, nullptr);
  absl::Status denied = alice->GetTable("t")->Get(Get("a")).status();
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied) << denied;
  // A grant on the master reaches both region servers without a restart.
  ASSERT_TRUE(admin->GetAdmin()->Grant(Permission{"alice", "R", "", "t", "", ""}).ok());
  EXPECT_TRUE(Eventually([&] {
    return alice->GetTable("t")->Get(Get("a")).ok() && alice->GetTable("t")->Get(Get("z")).ok();
  }));
  ExpectLetters(alice->GetTable("t").get(), "v");
  EXPECT_EQ(alice->GetTable("t")->Put(Put("a").Add("f", "q", "x")).code(), absl::StatusCode::kPermissionDenied);
  // A quota set on the master holds on both region servers (each for the calls it serves), and
  // its removal likewise.
  ASSERT_TRUE(admin->GetAdmin()->SetQuota(Quota{"alice", "", "", "READ", "2req/min"}).ok());
  for (const char* row : {"a", "z"}) {
    EXPECT_TRUE(Eventually([&] {
      absl::Status s = alice->GetTable("t")->Get(Get(row)).status();
      return s.code() == absl::StatusCode::kResourceExhausted &&
             s.message().find("number of read requests exceeded - wait ") != std::string::npos;
    })) << row;
  }
  ASSERT_TRUE(admin->GetAdmin()->SetQuota(Quota{"alice", "", "", "", "NONE"}).ok());
  EXPECT_TRUE(Eventually([&] {
    return alice->GetTable("t")->Get(Get("a")).ok() && alice->GetTable("t")->Get(Get("z")).ok();
  }));
  // A transactional write's pointer is checked with the master's transaction service: only its
  // owner writes in a transaction, and only while it is in progress.
  TableInfo txt = TableNamed("tx");
  txt.transactional = true;
  ASSERT_TRUE(admin->GetAdmin()->CreateTable(txt).ok());
  ASSERT_TRUE(admin->GetAdmin()->Grant(Permission{"alice", "RW", "", "tx", "", ""}).ok());
  ASSERT_TRUE(admin->GetAdmin()->Grant(Permission{"bob", "RW", "", "tx", "", ""}).ok());
  auto bob = Connect(absl::Seconds(10), TransportChoice::kGrpc, as("bob"));
  ASSERT_NE(bob, nullptr);
  auto tx = alice->StartTransaction(absl::Seconds(30));
  ASSERT_TRUE(tx.ok()) << tx.status();
  auto tx_put = [&](int64_t wp) {
    Put p("r");
    p.Add("f", "q", "v");
    p.transaction = wp;
    return p;
  };
  EXPECT_TRUE(Eventually([&] { return alice->GetTable("tx")->Put(tx_put(tx->write_pointer)).ok(); }))
      << "the grant reaches the region server";
  absl::Status forged = bob->GetTable("tx")->Put(tx_put(tx->write_pointer));
  EXPECT_EQ(forged.code(), absl::StatusCode::kPermissionDenied) << forged;
  ASSERT_TRUE(alice->CommitTransaction(tx->write_pointer, {}).ok());
  EXPECT_TRUE(Eventually([&] {  // the server keeps an allowed answer for a second
    return alice->GetTable("tx")->Put(tx_put(tx->write_pointer)).code() == absl::StatusCode::kFailedPrecondition;
  }));
  ASSERT_TRUE(admin->GetAdmin()->Revoke(Permission{"alice", "", "", "t", "", ""}).ok());
  EXPECT_TRUE(Eventually([&] {
    return alice->GetTable("t")->Get(Get("z")).status().code() == absl::StatusCode::kPermissionDenied;
  }));
  // Plain text reaches nothing.
  ConnectionOptions plain;
  plain.zookeeper_quorum = TestZkQuorum();
  plain.zookeeper_znode_parent = parent_;
  plain.timeout = absl::Seconds(3);
  plain.max_attempts = 1;
  plain.transport = TransportChoice::kGrpc;
  auto p = Connection::Open(plain);
  if (p.ok()) {
    EXPECT_EQ((*p)->GetTable("t")->Get(Get("a")).status().code(), absl::StatusCode::kUnavailable);
  }
}

// ZooKeeper access (docs/DESIGN.md §6): a cluster with an identity makes every node of its own so that
// only that identity may change it. An anonymous ZooKeeper client can create, delete or change
// no node under the cluster's parent (it could otherwise delete a live server's node, fake a
// dead one, pre-create a fenced one or rewrite meta-server), and reads only meta-server, which
// is all a client of the cluster needs: it works as ever.
TEST_F(Cluster, AnAnonymousZooKeeperClientCanChangeNoNodeOfAClusterWithAnIdentity) {
  const std::vector<std::string> identity = {"--zookeeper_auth_file=" + WriteIdentity()};
  ASSERT_NO_FATAL_FAILURE(ConnectAsIdentity());
  auto master = StartMaster("m1", 0, 1000, "", identity);
  ASSERT_TRUE(master);
  auto a = NewServer(1000, identity);
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("z"), {}).ok());
  ASSERT_NO_FATAL_FAILURE(PutLetters(conn->GetTable("z").get(), "v"));

  // Every node under the parent, as the identity sees them.
  std::vector<std::string> nodes = {parent_};
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto kids = zk_->Children(nodes[i]);
    ASSERT_TRUE(kids.ok()) << kids.status();
    for (const std::string& k : *kids) nodes.push_back(nodes[i] + "/" + k);
  }
  ASSERT_GE(nodes.size(), 10u);  // rs/, servers/, fenced/, master/, meta-server, ...
  ZooKeeper::Options o;
  o.quorum = quorum_;
  auto anonymous = ZooKeeper::Connect(o);
  ASSERT_TRUE(anonymous.ok()) << anonymous.status();
  for (const std::string& node : nodes) {
    const absl::Status created = (*anonymous)->Create(node + "/planted", "", ZooKeeper::Mode::kPersistent).status();
    EXPECT_TRUE(absl::IsPermissionDenied(created)) << node << ": " << created;
    const absl::Status set = (*anonymous)->Set(node, "rewritten");
    EXPECT_TRUE(absl::IsPermissionDenied(set)) << node << ": " << set;
    const absl::Status deleted = (*anonymous)->Delete(node);
    // (The parent's own parent is ZooKeeper's open root: the parent is refused as not empty.)
    EXPECT_TRUE(node == parent_ ? absl::IsFailedPrecondition(deleted) : absl::IsPermissionDenied(deleted))
        << node << ": " << deleted;
    const bool readable = (*anonymous)->Get(node).ok();
    EXPECT_EQ(readable, node == parent_ + "/meta-server") << node;
  }
  // Nothing changed: the cluster serves on.
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(conn->GetTable("z").get(), "v"));
  EXPECT_EQ(Children("/rs").size(), 1u);
}

TEST_F(Cluster, ABackupMasterTakesOverAndRecoversWhatDiedWhileNoMasterWasActive) {
  auto m1 = StartMaster("m1");
  ASSERT_TRUE(m1);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  auto m2 = StartMaster("m2");
  ASSERT_TRUE(m2);
  auto a = NewServer();
  auto b = NewServer();
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 2; }));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("b"), {"g", "n", "t"}).ok());
  auto table = conn->GetTable("b");
  ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "acked"));
  // Transactions (docs/DESIGN.md §7): the master's service, its log on RADOS. One commits
  // across the regions; one is in progress across the take-over; one was invalidated.
  TableInfo txt = TableNamed("tx");
  txt.transactional = true;
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(txt, {"g", "n", "t"}).ok());
  auto tx_put = [](TransactionContext& tx, const std::string& value) {
    for (char c = 'a'; c <= 'z'; c += 5) {
      ASSERT_TRUE(tx.Put("tx", Put(std::string(1, c)).Add("f", value, "1")).ok());
    }
  };
  TransactionContext committed(conn.get()), survivor(conn.get()), invalid(conn.get());
  ASSERT_TRUE(committed.Start().ok());
  ASSERT_NO_FATAL_FAILURE(tx_put(committed, "committed"));
  ASSERT_TRUE(committed.Commit().ok());
  ASSERT_TRUE(survivor.Start().ok());
  ASSERT_NO_FATAL_FAILURE(tx_put(survivor, "survivor"));
  ASSERT_TRUE(invalid.Start().ok());
  ASSERT_NO_FATAL_FAILURE(tx_put(invalid, "invalid"));
  const int64_t invalid_wp = invalid.snapshot()->write_pointer;
  ASSERT_TRUE(conn->InvalidateTransaction(invalid_wp).ok());
  // Outside a transaction, a region server refuses to guess a snapshot.
  EXPECT_EQ(conn->GetTable("tx")->Get(Get("a")).status().code(), absl::StatusCode::kFailedPrecondition);

  // Each master's status page: the active one lists both servers and the table's regions; the
  // backup's names the active master.
  const std::string http1 = MasterHttpAddress("m1"), http2 = MasterHttpAddress("m2");
  ASSERT_FALSE(http1.empty() || http2.empty()) << "a master did not say where its status page is";
  absl::StatusOr<HttpReply> active = HttpGet(http1, "/status.json");
  ASSERT_TRUE(active.ok()) << active.status();
  EXPECT_NE(active->body.find("\"mode\":\"master\""), std::string::npos) << active->body;
  for (const ServerProcess* s : {a.get(), b.get()}) {
    EXPECT_NE(active->body.find("\"address\":\"" + s->address() + "\""), std::string::npos) << active->body;
  }
  EXPECT_GE(Occurrences(active->body, "\"encoded_name\""), 4u) << "b's 4 regions";
  absl::StatusOr<HttpReply> backup = HttpGet(http2, "/");
  ASSERT_TRUE(backup.ok()) << backup.status();
  EXPECT_NE(backup->body.find("<h2>Backup master</h2>"), std::string::npos) << backup->body;
  EXPECT_NE(backup->body.find("active: m1"), std::string::npos) << backup->body;

  // The active master and a server die together; the backup takes over once the master's
  // session has expired, fences the previous master and the dead server, splits its log and
  // places its regions on the server left.
  m1->Stop(SIGKILL);
  a->Kill();
  const absl::Time killed = absl::Now();
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2"; }));
  const absl::Duration takeover = absl::Now() - killed;
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "acked"));
  const absl::Duration serving = absl::Now() - killed;
  EXPECT_LT(takeover, absl::Seconds(10));
  std::map<std::string, int> per = RegionsPerServer(conn.get(), "b");
  EXPECT_EQ(per, (std::map<std::string, int>{{b->address(), 4}}));
  auto record = zk_->Get(parent_ + "/fenced/" + Children("/fenced").at(0));
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_NE((*record)->data.find("by=m2"), std::string::npos) << (*record)->data;
  std::printf("session timeout 1 s: backup master active %s after kill -9 of the master and a server; every row "
              "read again at %s\n",
              absl::FormatDuration(takeover).c_str(), absl::FormatDuration(serving).c_str());
  // The new master's transaction service has the old one's state: the transaction in progress
  // commits, the invalid one stays hidden, pointers go on upwards.
  ASSERT_TRUE(survivor.Commit().ok());
  TransactionContext after(conn.get());
  ASSERT_TRUE(after.Start().ok());
  EXPECT_GT(after.snapshot()->write_pointer, invalid_wp);
  const auto& excluded = after.snapshot()->excluded;
  EXPECT_TRUE(std::binary_search(excluded.begin(), excluded.end(), invalid_wp));
  for (char c = 'a'; c <= 'z'; c += 5) {
    auto r = after.Get("tx", Get(std::string(1, c)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->Value("f", "committed").has_value()) << c;
    EXPECT_TRUE(r->Value("f", "survivor").has_value()) << c;
    EXPECT_FALSE(r->Value("f", "invalid").has_value()) << c;
  }
  ASSERT_TRUE(after.Commit().ok());

  // The shell, through ZooKeeper.
  std::string out;
  EXPECT_EQ(Shell("count 'b'", &out), 0) << out;
  EXPECT_NE(out.find("26 row(s)"), std::string::npos) << out;
  // The new active master's page lists the server left.
  absl::StatusOr<HttpReply> now = HttpGet(http2, "/status.json");
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_NE(now->body.find("\"mode\":\"master\""), std::string::npos) << now->body;
  EXPECT_NE(now->body.find("\"address\":\"" + b->address() + "\""), std::string::npos) << now->body;
}

// A master that takes over while a server that died with the old master is still live in
// ZooKeeper (its session has not expired: here it is 30 s long) must not open that server's
// regions elsewhere before its log is split: it fences the server that does not answer, splits
// its log, then places its regions. (Under ASan, the session-expiry race made the test above
// lose the dead server's writes before this.)
TEST_F(Cluster, ATakeOverFencesALiveServerThatDoesNotAnswerBeforeOpeningItsRegionsElsewhere) {
  auto m1 = StartMaster("m1");
  ASSERT_TRUE(m1);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  auto m2 = StartMaster("m2");
  ASSERT_TRUE(m2);
  auto a = NewServer(/*session_ms=*/30000);
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("z"), {"m"}).ok());  // both regions on a
  auto b = NewServer();
  ASSERT_TRUE(b->Start().ok());
  auto table = conn->GetTable("z");
  ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "acked"));
  m1->Stop(SIGKILL);
  a->Kill();
  const absl::Time killed = absl::Now();
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "acked"));
  const absl::Duration serving = absl::Now() - killed;
  EXPECT_LT(serving, absl::Seconds(20));  // well before a's session expires
  EXPECT_EQ(RegionsPerServer(conn.get(), "z"), (std::map<std::string, int>{{b->address(), 2}}));
  EXPECT_EQ(Children("/fenced").size(), 1u);
  std::printf("a server killed with the master, its 30 s session still open: its regions served again %s later\n",
              absl::FormatDuration(serving).c_str());
}

// Move and balancer under load surface no error to the client, and the
// balancer spreads the regions evenly; the master's own balancer does so for a server that
// joins later.
TEST_F(Cluster, MovesAndTheBalancerUnderLoadSurfaceNoErrorAndSpreadRegionsEvenly) {
  Servers c;
  ASSERT_NO_FATAL_FAILURE(StartServersAndConnect(3, &c));
  auto& servers = c.servers;
  auto& conn = c.conn;
  auto& m1 = c.master;
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("m"), {"b", "c", "d", "e", "f", "g", "h", "i"}).ok());
  auto table = conn->GetTable("m");

  // Load: writers put rows across all nine regions; readers read back rows already acknowledged.
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  std::vector<std::string> acked;  // guarded by mu
  std::vector<std::string> errors;  // guarded by mu
  std::atomic<int> reads{0};
  std::vector<std::thread> load;
  for (int w = 0; w < 4; ++w) {
    load.emplace_back([&, w] {
      auto t = conn->GetTable("m");
      for (int i = 0; !stop.load(); ++i) {
        const std::string row = absl::StrCat(std::string(1, static_cast<char>('a' + i % 9)), "-", w, "-", i);
        absl::Status s = t->Put(Put(row).Add("f", "q", row));
        absl::MutexLock l(&mu);
        (s.ok() ? acked : errors).push_back(s.ok() ? row : absl::StrCat("put ", row, ": ", s.ToString()));
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    load.emplace_back([&, r] {
      auto t = conn->GetTable("m");
      for (uint64_t i = r; !stop.load(); i += 7) {
        std::string row;
        {
          absl::MutexLock l(&mu);
          if (!acked.empty()) row = acked[i % acked.size()];
        }
        if (row.empty()) continue;
        auto got = t->Get(Get(row));
        std::string error = !got.ok() ? got.status().ToString()
                            : got->Value("f", "q").value_or("<lost>") != row ? "read " + row + ": lost"
                                                                             : "";
        if (error.empty()) {
          reads.fetch_add(1);
        } else {
          absl::MutexLock l(&mu);
          errors.push_back(error);
        }
      }
    });
  }
  auto wait_for_writes = [&](size_t more) {
    size_t target;
    {
      absl::MutexLock l(&mu);
      target = acked.size() + more;
    }
    return Eventually([&] {
      absl::MutexLock l(&mu);
      return acked.size() >= target;
    });
  };
  ASSERT_TRUE(wait_for_writes(200));

  // Every region onto the first server, one move at a time.
  const std::string to = servers[0]->address();
  auto regions = conn->GetAdmin()->ListRegions("m");
  ASSERT_TRUE(regions.ok()) << regions.status();
  for (const RegionStatus& r : *regions) {
    absl::Status moved = MoveWhenLive(conn.get(), r.encoded_name, to);
    ASSERT_TRUE(moved.ok()) << moved;
  }
  EXPECT_EQ(RegionsPerServer(conn.get(), "m"), (std::map<std::string, int>{{to, 9}}));
  ASSERT_TRUE(wait_for_writes(200));
  auto status = conn->GetAdmin()->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->mode, "master");
  ASSERT_EQ(status->servers.size(), 3u);
  for (const RegionServerLoad& l : status->servers) {
    EXPECT_EQ(l.regions, l.address == to ? 9u : 0u) << l.name;
    EXPECT_EQ(l.region_names.size(), l.regions);
    EXPECT_TRUE(l.error.empty()) << l.error;
  }

  // The balancer spreads them again: three on each server.
  auto balanced = conn->GetAdmin()->Balance();
  ASSERT_TRUE(balanced.ok()) << balanced.status();
  EXPECT_EQ(balanced->moves, 6) << balanced->reason;
  std::map<std::string, int> per = RegionsPerServer(conn.get(), "m");
  EXPECT_EQ(per.size(), 3u);
  for (const auto& [server, n] : per) EXPECT_EQ(n, 3) << server;
  ASSERT_TRUE(wait_for_writes(200));
  std::string out;
  EXPECT_EQ(Shell("balancer", &out), 0) << out;
  EXPECT_NE(out.find("false"), std::string::npos) << out;  // balanced: nothing to move

  // Bad requests are refused with what is wrong, and move nothing.
  EXPECT_EQ(conn->GetAdmin()->Move(regions->front().encoded_name, "127.0.0.1:1").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(conn->GetAdmin()->Move("0123456789abcdef", to).code(), absl::StatusCode::kNotFound);

  // A fourth server joins under a new master that balances on its own every 300 ms: the regions
  // spread over the four (3, 2, 2, 2).
  m1->Stop(SIGKILL);
  auto m2 = StartMaster("m2", /*balancer_ms=*/300);
  ASSERT_TRUE(m2);
  servers.push_back(NewServer());
  ASSERT_TRUE(servers.back()->Start().ok());
  EXPECT_TRUE(Eventually([&] {
    std::map<std::string, int> now = RegionsPerServer(conn.get(), "m");
    int lo = 9, hi = 0;
    for (const auto& [server, n] : now) lo = std::min(lo, n), hi = std::max(hi, n);
    return now.size() == 4 && hi - lo <= 1;
  })) << "regions per server: " << ::testing::PrintToString(RegionsPerServer(conn.get(), "m"));
  ASSERT_TRUE(wait_for_writes(200));
  EXPECT_EQ(Shell("status 'detailed'", &out), 0) << out;
  EXPECT_NE(out.find("4 servers, 0 dead"), std::string::npos) << out;
  EXPECT_NE(out.find(servers.back()->address()), std::string::npos) << out;

  stop = true;
  for (std::thread& t : load) t.join();
  absl::MutexLock l(&mu);
  EXPECT_TRUE(errors.empty()) << errors.size() << " error(s), the first: " << errors.front();
  // Every acknowledged write is there, and nothing else.
  std::map<std::string, std::string> found;
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &found));
  size_t missing = 0;
  for (const std::string& row : acked) missing += found.count(row) == 0 || found[row] != row;
  EXPECT_EQ(missing, 0u);
  EXPECT_GE(found.size(), acked.size());
  EXPECT_LE(found.size(), acked.size() + 4);  // a write that failed may be there (none failed)
  std::printf("moves and balancing under load: %zu writes acknowledged, %d reads checked, 0 errors\n", acked.size(),
              reads.load());
}

// A region server whose close cannot flush (a move's close) aborts, as HBase's does: what the
// region had not flushed is only in that server's log, which the master splits once the server
// is gone, before the region opens elsewhere. Every acknowledged write is there. (Before, the
// server kept running with the region closed and unflushed: the region served nowhere, and its
// edits waited in a log that the server could let go.)
TEST_F(Cluster, ARegionServerWhoseCloseCannotFlushAbortsAndItsRegionsOpenElsewhereWithEveryWrite) {
  OneServer one;
  ASSERT_NO_FATAL_FAILURE(StartOneServer({"env", "BASALT_FAIL_POINT=region.close.flush"}, &one));
  auto& a = one.server;
  auto& conn = one.conn;
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("c"), {"m"}).ok());  // both on a
  auto table = conn->GetTable("c");
  ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "acked"));
  auto b = NewServer();
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(Eventually([&] { return Children("/rs").size() == 2; }));
  auto regions = conn->GetAdmin()->ListRegions("c");
  ASSERT_TRUE(regions.ok() && regions->size() == 2u) << regions.status();
  // (The client retries the move once the master's close call meets the aborted server; by
  // then the failover has put the region on b, so the move ends OK or with the failover's error.)
  absl::Status moved = MoveWhenLive(conn.get(), (*regions)[1].encoded_name, b->address());
  EXPECT_EQ(a->WaitForExit(std::chrono::seconds(10)), 4) << "the server did not abort";
  std::printf("the move after the abort: %s\n", moved.ToString().c_str());
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "acked"));
  EXPECT_EQ(RegionsPerServer(conn.get(), "c"), (std::map<std::string, int>{{b->address(), 2}}));
}

// The region server applies an Increment and is killed before it answers;
// the client's retry, with the same nonce, reaches the server the region fails over to, which
// found the nonce in the dead server's log records (split into the region's recovered.edits):
// the counter counts once.
TEST_F(Cluster, AnIncrementAppliedButNeverAnsweredCountsOnceAfterFailover) {
  OneServer one;
  ASSERT_NO_FATAL_FAILURE(StartOneServer({"env", "BASALT_FAULT_POINT=data.increment.applied"}, &one));
  auto& a = one.server;
  auto& conn = one.conn;
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("n")).ok());  // on a, the only server
  auto b = NewServer();
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(Eventually([&] { return Children("/rs").size() == 2; }));
  auto table = conn->GetTable("n");
  const absl::Time start = absl::Now();
  auto n = table->IncrementColumnValue("c", "f", "n", 5);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 5);
  EXPECT_EQ(a->WaitForExit(std::chrono::seconds(1)), -SIGKILL) << "the server did not stop at the fault point";
  auto got = table->Get(Get("c"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(DecodeCounter(got->Value("f", "n").value_or("")).value_or(-1), 5);
  EXPECT_EQ(RegionsPerServer(conn.get(), "n"), (std::map<std::string, int>{{b->address(), 1}}));
  std::printf("an increment applied by a server killed before it answered: answered by the next server %s "
              "after it was sent, counted once\n",
              absl::FormatDuration(absl::Now() - start).c_str());
}

// A region server whose region passes the split size asks the master to split it (HBase's
// region server reports it; the master runs the split): a table's only region splits past twice
// the flush size (the stepping policy), here 2 x 256 KiB, and every row stays.
// A backup master whose ZooKeeper session expires (paused past it here, as a starved host or
// ZooKeeper leaves it) joins the election again with a new session instead of ending, so the
// cluster still has a backup when the active master dies.
TEST_F(Cluster, ABackupMasterWhoseSessionExpiredJoinsTheElectionAgainAndTakesOver) {
  auto m1 = StartMaster("m1");
  ASSERT_TRUE(m1);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  auto m2 = StartMaster("m2");
  ASSERT_TRUE(m2);
  ASSERT_TRUE(Eventually([&] { return Children("/master").size() == 2u; }));
  auto a = NewServer();
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1u; }));

  ASSERT_EQ(::kill(m2->pid(), SIGSTOP), 0);
  const bool expired = Eventually([&] { return Children("/master").size() == 1u; });
  ASSERT_EQ(::kill(m2->pid(), SIGCONT), 0);
  ASSERT_TRUE(expired) << "the paused backup's session never expired";
  ASSERT_TRUE(Eventually([&] { return Children("/master").size() == 2u; })) << "m2 did not join the election again";
  EXPECT_FALSE(m2->WaitForExit(absl::ZeroDuration()).has_value()) << "the backup ended";

  m1->Stop(SIGKILL);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2"; })) << "the backup did not take over";
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("j"), {}).ok());
  auto table = conn->GetTable("j");
  ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "v"));
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "v"));
}

TEST_F(Cluster, ARegionServerAsksTheMasterToSplitARegionThatGrew) {
  auto master = StartMaster("m1");
  ASSERT_TRUE(master);
  auto a = NewServer(1000, {"--memstore_flush_size=256KiB"});
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 1; }));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("g")).ok());
  auto table = conn->GetTable("g");
  std::vector<RowMutationsBase> batch;
  for (int i = 0; i < 800; ++i) {
    batch.push_back(Put(absl::StrCat("row", 10000 + i)).Add("f", "q", std::string(1000, 'v')));
  }
  auto statuses = table->Batch(batch);
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_TRUE(conn->GetAdmin()->Flush("g").ok());  // 800 KB in one store: past 512 KiB
  EXPECT_TRUE(Eventually([&] { return conn->GetAdmin()->ListRegions("g").value_or(std::vector<RegionStatus>{}).size() == 2; }))
      << "the region did not split";
  std::map<std::string, std::string> found;
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &found));
  EXPECT_EQ(found.size(), 800u);
}

// A scan open on a region that moves goes on where the region is now. The old server ends its
// cursor at the next message (NotServingRegion) instead of reading on in files that are no
// longer its own, and the client resumes after the last row it got (HBase's scanners do the
// same). Here those files do go: the new server's major compaction rewrites the store and
// removes them from RADOS, and the scan skips the block cache, so a cursor left reading them
// fails.
TEST_F(Cluster, AScanGoesOnWhereItsRegionMovedOnceTheOldFilesAreGone) {
  Servers c;
  ASSERT_NO_FATAL_FAILURE(StartServersAndConnect(2, &c));
  auto& servers = c.servers;
  auto& conn = c.conn;
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("s")).ok());
  auto table = conn->GetTable("s");
  constexpr int kRows = 1500;  // 1 KiB each: ~24 blocks
  std::vector<RowMutationsBase> batch;
  for (int i = 0; i < kRows; ++i) {
    batch.push_back(Put(absl::StrCat("row", 10000 + i)).Add("f", "q", std::string(1000, static_cast<char>('a' + i % 26))));
  }
  auto statuses = table->Batch(batch);
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_TRUE(conn->GetAdmin()->Flush("s").ok());

  auto scanner = table->GetScanner(Scan().SetCaching(10).SetCacheBlocks(false));
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  std::vector<std::string> rows;
  Result r;
  for (int i = 0; i < 25; ++i) {
    auto more = (*scanner)->Next(&r);
    ASSERT_TRUE(more.ok() && *more) << more.status();
    rows.push_back(r.row());
  }
  auto regions = conn->GetAdmin()->ListRegions("s");
  ASSERT_TRUE(regions.ok() && regions->size() == 1u) << regions.status();
  const std::string from = regions->front().server;
  const std::string to = servers[0]->address() == from ? servers[1]->address() : servers[0]->address();
  ASSERT_TRUE(MoveWhenLive(conn.get(), regions->front().encoded_name, to).ok());
  // The new server writes the store anew and removes the files the scan began on.
  ASSERT_TRUE(table->Put(Put("row09999").Add("f", "q", "after the move")).ok());
  ASSERT_TRUE(conn->GetAdmin()->MajorCompact("s").ok());
  for (;;) {
    auto more = (*scanner)->Next(&r);
    ASSERT_TRUE(more.ok()) << more.status() << " after " << rows.size() << " rows";
    if (!*more) break;
    rows.push_back(r.row());
  }
  ASSERT_EQ(rows.size(), static_cast<size_t>(kRows));  // every row once, in order
  for (int i = 0; i < kRows; ++i) ASSERT_EQ(rows[i], absl::StrCat("row", 10000 + i));
  EXPECT_EQ(RegionsPerServer(conn.get(), "s"), (std::map<std::string, int>{{to, 1}}));
}

TEST_F(Cluster, ConnectingNeedsTheAddressOrTheQuorumAndAClusterWithAMaster) {
  ConnectionOptions o;
  o.zookeeper_quorum = TestZkQuorum();
  o.zookeeper_znode_parent = parent_ + "-nowhere";  // no master ever named itself
  EXPECT_EQ(Connection::Open(o).status().code(), absl::StatusCode::kUnavailable);
  o.address = "127.0.0.1:1";
  EXPECT_EQ(Connection::Open(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(Cluster, AnUnassignedRegionStaysClosedAcrossTheBalancerAndATakeOverUntilAssigned) {
  TwoMasters c;
  ASSERT_NO_FATAL_FAILURE(StartTwoMastersAndATable("u", "", &c));
  auto& [m1, m2, servers, conn, table] = c;
  auto admin = conn->GetAdmin();
  auto regions = admin->ListRegions("u");
  ASSERT_TRUE(regions.ok() && regions->size() == 2u) << regions.status();
  const std::string closed = (*regions)[1].encoded_name;  // rows m..z
  auto state_of = [&](const std::string& encoded) -> std::pair<std::string, std::string> {
    auto now = admin->ListRegions("u");
    if (!now.ok()) return {now.status().ToString(), ""};
    for (const RegionStatus& r : *now) {
      if (r.encoded_name == encoded) return {r.state, r.server};
    }
    return {"gone", ""};
  };

  absl::Status s = admin->Unassign(closed);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(admin->Unassign(closed).ok());  // closed already
  EXPECT_EQ(state_of(closed), std::make_pair(std::string("CLOSED"), std::string()));
  // Its rows wait until the caller's deadline; the other region's serve.
  auto impatient = Connect(absl::Seconds(1));
  ASSERT_TRUE(impatient);
  auto waited = impatient->GetTable("u")->Get(Get("p"));
  EXPECT_FALSE(waited.ok());
  EXPECT_TRUE(table->Get(Get("c")).ok());
  // Neither a move, a split nor the balancer opens it.
  EXPECT_EQ(admin->Move(closed, servers[0]->address()).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(admin->Split("u", "q").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(admin->Balance().ok());
  EXPECT_EQ(state_of(closed).first, "CLOSED");

  // A master take-over keeps it closed (meta says so).
  m1->Stop(SIGKILL);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2" && state_of(closed).first == "CLOSED"; }));
  EXPECT_TRUE(table->Get(Get("c")).ok());
  EXPECT_FALSE(impatient->GetTable("u")->Get(Get("p")).ok());

  // assign opens it where the master picks, with every row it held.
  s = admin->AssignRegion(closed);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(admin->AssignRegion(closed).ok());  // open already
  const auto [state, server] = state_of(closed);
  EXPECT_EQ(state, "OPEN");
  EXPECT_FALSE(server.empty());
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "acked"));
  EXPECT_TRUE(table->Put(Put("p").Add("f", "q", "after")).ok());
  // The shell, through ZooKeeper.
  std::string out;
  EXPECT_EQ(Shell(absl::StrCat("unassign '", closed, "'"), &out), 0) << out;
  EXPECT_EQ(state_of(closed).first, "CLOSED");
  out.clear();
  EXPECT_EQ(Shell(absl::StrCat("assign '", closed, "'"), &out), 0) << out;
  EXPECT_EQ(state_of(closed).first, "OPEN");
  auto r = table->Get(Get("p"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("f", "q").value_or(""), "after");
}

// A split or merge the active master was killed in (at a fault point of the transaction,
// src/catalog/region_split.cc): meta's one batch is the commit, and the backup master that takes
// over finishes what the commit decided: before it, the parents serve again (their half-written
// children removed); after it, the children serve. A move killed after its close: the region
// opens where the placement puts it; after its open, before meta's record: it is adopted where
// it opened. Every row is there, the table takes writes, and the table can be split again.
struct CutShort {
  const char* point;
  size_t regions_after;  // the table had 2
  friend void PrintTo(const CutShort& c, std::ostream* os) { *os << c.point; }
};
class MasterCutShort : public ClusterFixture, public ::testing::WithParamInterface<CutShort> {};

TEST_P(MasterCutShort, TheBackupMasterRollsBackBeforeMetasCommitAndForwardAfter) {
  const CutShort& c = GetParam();
  TwoMasters cluster;
  ASSERT_NO_FATAL_FAILURE(StartTwoMastersAndATable("t", c.point, &cluster));
  auto& [m1, m2, servers, conn, table] = cluster;
  auto regions = conn->GetAdmin()->ListRegions("t");
  ASSERT_TRUE(regions.ok() && regions->size() == 2u) << regions.status();

  // Straight to the active master, without the client's retries (which would send the call
  // again to the backup, which would then do it whole).
  auto meta = zk_->Get(parent_ + "/meta-server");
  ASSERT_TRUE(meta.ok() && meta->has_value());
  auto stub = rpc::Admin::NewStub(grpc::CreateChannel((*meta)->data, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  rpc::AdminResponse resp;
  grpc::Status cut;
  std::string destination;  // a move's
  if (absl::StartsWith(c.point, "split")) {
    rpc::SplitRequest req;
    req.set_name("t");
    req.set_split_row("g");
    cut = stub->Split(&ctx, req, &resp);
  } else if (absl::StartsWith(c.point, "merge")) {
    rpc::MergeRequest req;
    req.set_first((*regions)[0].encoded_name);
    req.set_second((*regions)[1].encoded_name);
    cut = stub->Merge(&ctx, req, &resp);
  } else {
    rpc::MoveRequest req;
    req.set_region((*regions)[1].encoded_name);
    destination = (*regions)[1].server == servers[0]->address() ? servers[1]->address() : servers[0]->address();
    req.set_server(destination);
    cut = stub->Move(&ctx, req, &resp);
  }
  EXPECT_FALSE(cut.ok()) << "the master finished the call";
  EXPECT_EQ(m1->WaitForExit(absl::Seconds(10)), -SIGKILL) << "the master did not stop at " << c.point;
  const absl::Time killed = absl::Now();
  ASSERT_TRUE(Eventually([&] { return Leader() == "m2"; }));

  // Every row, read through the client (which follows meta to the backup).
  ASSERT_NO_FATAL_FAILURE(ExpectLetters(table.get(), "acked"));
  std::printf("%s: the backup master served every row %s after the active one died\n", c.point,
              absl::FormatDuration(absl::Now() - killed).c_str());
  auto after = conn->GetAdmin()->ListRegions("t");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->size(), c.regions_after);
  for (const RegionStatus& r : *after) EXPECT_EQ(r.state, "OPEN") << r.name;
  if (c.point == std::string_view("move:opened")) {
    // Opened on the destination before the master died: adopted there, not opened again.
    EXPECT_EQ((*after)[1].server, destination);
  }
  ASSERT_NO_FATAL_FAILURE(PutLetters(table.get(), "again"));
  // Nothing half-done is left in the way: the table splits again.
  absl::Status split = conn->GetAdmin()->Split("t", "d");
  ASSERT_TRUE(split.ok()) << split;
  std::map<std::string, std::string> found;
  ASSERT_NO_FATAL_FAILURE(ScanValues(table.get(), &found));
  EXPECT_EQ(found.size(), 26u);
  for (const auto& [row, v] : found) EXPECT_EQ(v, "again") << row;
}

INSTANTIATE_TEST_SUITE_P(Points, MasterCutShort,
                         ::testing::Values(CutShort{"split:children-written", 2}, CutShort{"split:meta-committed", 3},
                                           CutShort{"merge:children-written", 2}, CutShort{"merge:meta-committed", 1},
                                           CutShort{"move:closed", 2}, CutShort{"move:opened", 2}),
                         [](const ::testing::TestParamInfo<CutShort>& i) {
                           return absl::StrReplaceAll(i.param.point, {{":", "_"}, {"-", "_"}});
                         });

}  // namespace
}  // namespace basalt::testing
