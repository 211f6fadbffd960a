// Splits on a real basalt-server: manual splits (a table, a row, a region name) while writers
// and scanners run with no error surfaced to them; the daughters' references rewritten by
// compaction and the parent then removed (HBase's CatalogJanitor); and a SIGKILL at every step
// of a split (fault points, common/fault_point.h), after which the table is whole: the parent or
// both daughters, every row once.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "proto/basalt.grpc.pb.h"
#include "tests/integration/integration_util.h"

namespace basalt::testing {
namespace {

std::string Row(int i) { return absl::StrFormat("r%06d", i); }

class Splits : public ServerTest {
 protected:
  void CrashAtEachStep(const std::vector<std::pair<std::string, size_t>>& points,
                       const std::function<void(const std::string&)>& make,
                       const std::function<absl::Status(const std::string&)>& act);
  std::vector<RegionStatus> Regions(const std::string& table) {
    auto r = conn_->GetAdmin()->ListRegions(table);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::vector<RegionStatus>{};
  }
  // Every row of a full scan with its cf:q value, checking order and uniqueness on the way.
  std::map<std::string, std::string> ScanAll(const std::string& table, std::string* problem = nullptr) {
    std::map<std::string, std::string> rows;
    auto sc = conn_->GetTable(table)->GetScanner(Scan());
    if (!sc.ok()) {
      if (problem) *problem = sc.status().ToString();
      return rows;
    }
    Result r;
    std::string last;
    for (;;) {
      auto more = (*sc)->Next(&r);
      if (!more.ok()) {
        if (problem) *problem = more.status().ToString();
        break;
      }
      if (!*more) break;
      if (!rows.empty() && r.row() <= last && problem) *problem = absl::StrCat("row ", r.row(), " after ", last);
      last = r.row();
      rows[r.row()] = std::string(r.Value("cf", "q").value_or(""));
    }
    return rows;
  }
  void Load(const std::string& table, int from, int to) {
    auto t = conn_->GetTable(table);
    std::vector<RowMutationsBase> batch;
    for (int i = from; i < to; ++i) batch.push_back(Put(Row(i)).Add("cf", "q", "v" + Row(i)));
    auto st = t->Batch(batch);
    ASSERT_TRUE(st.ok()) << st.status();
    for (const absl::Status& s : *st) ASSERT_TRUE(s.ok()) << s;
  }
  // Whether the regions cover every row once, in order.
  static void ExpectCoverage(const std::vector<RegionStatus>& regions) {
    ASSERT_FALSE(regions.empty());
    EXPECT_EQ(regions.front().start_key, "");
    EXPECT_EQ(regions.back().end_key, "");
    for (size_t i = 1; i < regions.size(); ++i) EXPECT_EQ(regions[i - 1].end_key, regions[i].start_key);
  }
  size_t MetaRows() {
    auto sc = conn_->GetTable("basalt:meta")->GetScanner(Scan());
    EXPECT_TRUE(sc.ok());
    size_t n = 0;
    Result r;
    while (sc.ok() && (*sc)->Next(&r).value_or(false)) ++n;
    return n;
  }
};

TEST_F(Splits, ManualSplitsUnderWritersAndScannersSurfaceNoErrorAndLoseNothing) {
  StartServer();
  CreateTable("s");
  Load("s", 0, 4000);
  ASSERT_TRUE(conn_->GetAdmin()->Flush("s").ok());

  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::mutex mu;
  std::vector<std::string> errors_seen;
  std::map<std::string, std::string> acked;
  auto note = [&](const std::string& e) {
    errors++;
    std::lock_guard<std::mutex> l(mu);
    if (errors_seen.size() < 5) errors_seen.push_back(e);
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      auto t = conn_->GetTable("s");
      for (int i = 0; !stop; ++i) {
        // Rows across the whole key space, so every split meets writes.
        const std::string row = Row((i * 37 + w * 1000) % 4000) + "-w" + std::to_string(w) + "-" + std::to_string(i);
        absl::Status s = (i % 5 == 4) ? t->Batch({Put(row).Add("cf", "q", row)}).status()
                                      : t->Put(Put(row).Add("cf", "q", row));
        if (!s.ok()) {
          note(s.ToString());
          continue;
        }
        std::lock_guard<std::mutex> l(mu);
        acked[row] = row;
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      while (!stop) {
        std::string problem;
        auto rows = ScanAll("s", &problem);
        if (!problem.empty()) note(problem);
        for (int i = 0; i < 4000; i += 997) {
          if (!rows.count(Row(i))) note("scan lost " + Row(i));
        }
      }
    });
  }
  absl::Cleanup join = [&] {
    stop = true;
    for (auto& th : threads) th.join();
    threads.clear();
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // At the middle of the largest store.
  ASSERT_TRUE(conn_->GetAdmin()->Split("s").ok());
  auto regions = Regions("s");
  ASSERT_EQ(regions.size(), 2u);
  ExpectCoverage(regions);
  // A daughter splits again once a compaction has rewritten its references to the parent's
  // files (its background compaction starts at once; a major compaction makes sure).
  ASSERT_TRUE(conn_->GetAdmin()->MajorCompact("s").ok());
  ASSERT_TRUE(conn_->GetAdmin()->Split("s", Row(1000)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // By region name, and by encoded name.
  regions = Regions("s");
  ASSERT_EQ(regions.size(), 3u);
  ASSERT_TRUE(conn_->GetAdmin()->MajorCompact("s").ok());
  ASSERT_TRUE(conn_->GetAdmin()->Split(regions[0].name, Row(500)).ok());
  ASSERT_TRUE(conn_->GetAdmin()->MajorCompact("s").ok());
  ASSERT_TRUE(conn_->GetAdmin()->Split(Regions("s").back().encoded_name).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::move(join).Invoke();
  EXPECT_EQ(errors.load(), 0) << (errors_seen.empty() ? "" : errors_seen[0]);

  regions = Regions("s");
  ASSERT_EQ(regions.size(), 5u);
  ExpectCoverage(regions);
  // Split rows that are no region's inside are refused.
  EXPECT_EQ(conn_->GetAdmin()->Split("s", regions[1].start_key).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(conn_->GetAdmin()->Split("nosuch").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(conn_->GetAdmin()->Split("basalt:meta").code(), absl::StatusCode::kInvalidArgument);

  std::map<std::string, std::string> want = acked;
  for (int i = 0; i < 4000; ++i) want[Row(i)] = "v" + Row(i);
  std::string problem;
  EXPECT_EQ(ScanAll("s", &problem), want);
  EXPECT_EQ(problem, "");
  auto t = conn_->GetTable("s");
  for (const auto& [row, v] : acked) {
    auto got = t->Get(Get(row));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->Value("cf", "q"), std::optional<std::string_view>(v)) << row;
  }

  // Once every daughter has compacted, the split parents' files go; their meta rows stay while
  // the server log holds their records (a restart routes those to the daughters).
  ASSERT_TRUE(conn_->GetAdmin()->MajorCompact("s").ok());
  EXPECT_GE(MetaRows(), 5u);
  size_t dirs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/data/tables/s")) {
    dirs += e.is_directory();
  }
  EXPECT_EQ(dirs, 5u);

  // kill -9 and a restart: the same regions, every row.
  server_->Kill();
  ASSERT_TRUE(server_->Start().ok());
  Connect();
  auto after = Regions("s");
  ASSERT_EQ(after.size(), regions.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].name, regions[i].name);
  EXPECT_EQ(ScanAll("s", &problem), want);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(MetaRows(), 5u) << "the split parents' rows outlived their records in the log";
}

// HBase's stepping policy under load: one region splits past 2 × the flush size, the next ones
// past region_max_size; 16 writers and 4 scanners run throughout and see no error, every scan
// is in order with every row acknowledged before it began, and every acknowledged write reads
// back.
TEST_F(Splits, ATableGrowsFromOneRegionToEightUnderWritersAndScannersWithoutAnError) {
  // The server's region_max_size stays 10 GiB: the table's own MAX_FILESIZE makes it split.
  StartServer({"--memstore_flush_size=256KiB"});
  {
    TableInfo t;
    t.name = "auto";
    t.families.push_back(FamilySettings{.name = "cf"});
    t.max_file_size = 1 << 20;
    ASSERT_TRUE(conn_->GetAdmin()->CreateTable(t).ok());
    auto described = conn_->GetAdmin()->DescribeTable("auto");
    ASSERT_TRUE(described.ok());
    EXPECT_EQ(described->max_file_size, 1u << 20);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::mutex mu;
  std::vector<std::string> errors_seen;
  std::set<std::string> acked;
  auto note = [&](const std::string& e) {
    errors++;
    std::lock_guard<std::mutex> l(mu);
    if (errors_seen.size() < 5) errors_seen.push_back(e);
  };
  const std::string value(1024, 'v');
  std::vector<std::thread> threads;
  absl::Cleanup join = [&] {
    stop = true;
    for (auto& th : threads) th.join();
    threads.clear();
  };
  for (int w = 0; w < 16; ++w) {
    threads.emplace_back([&, w] {
      auto t = conn_->GetTable("auto");
      for (uint32_t i = 0; !stop && i < 800; ++i) {
        // Spread over the key space (a multiplicative hash), so every region keeps taking writes.
        const std::string row = absl::StrFormat("%08x-%02d", (i * 2654435761u) ^ (w * 40503u), w);
        absl::Status s = t->Put(Put(row).Add("cf", "q", value));
        if (!s.ok()) {
          note(s.ToString());
          continue;
        }
        std::lock_guard<std::mutex> l(mu);
        acked.insert(row);
      }
    });
  }
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&] {
      while (!stop) {
        std::set<std::string> before;
        {
          std::lock_guard<std::mutex> l(mu);
          before = acked;
        }
        std::string problem;
        auto rows = ScanAll("auto", &problem);
        if (!problem.empty()) note(problem);
        for (const std::string& row : before) {
          if (!rows.count(row)) {
            note("a scan missed acknowledged row " + row);
            break;
          }
        }
      }
    });
  }
  // Until the writers are done (12.5 MiB of values).
  for (int i = 0; i < 1200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    size_t n;
    {
      std::lock_guard<std::mutex> l(mu);
      n = acked.size();
    }
    if (n + errors >= 16 * 800) break;
  }
  std::move(join).Invoke();
  EXPECT_EQ(errors.load(), 0) << (errors_seen.empty() ? "" : errors_seen[0]);
  auto regions = Regions("auto");
  EXPECT_GE(regions.size(), 8u);
  ExpectCoverage(regions);
  std::string problem;
  auto rows = ScanAll("auto", &problem);
  EXPECT_EQ(problem, "");
  EXPECT_EQ(rows.size(), acked.size());
  auto t = conn_->GetTable("auto");
  for (const std::string& row : acked) {
    auto got = t->Get(Get(row));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->Value("cf", "q"), std::optional<std::string_view>(value)) << row;
  }
}

// For each fault point: a server that kills itself there while `act` runs on a new table made
// by `make` (rows 0..1499, the last 300 only in the log); after a restart the table has the
// number of regions given with the point, every row once, no staging directory, and takes a
// write.
void Splits::CrashAtEachStep(const std::vector<std::pair<std::string, size_t>>& points,
                             const std::function<void(const std::string&)>& make,
                             const std::function<absl::Status(const std::string&)>& act) {
  int table = 0;
  for (const auto& [point, regions_after] : points) {
    SCOPED_TRACE(point);
    const std::string name = absl::StrCat("k", table++);
    server_ = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, dir_.path() + "/data");
    server_->set_launcher({"env", "BASALT_FAULT_POINT=" + point});
    ASSERT_TRUE(server_->Start().ok());
    Connect(absl::Seconds(3));
    make(name);
    Load(name, 0, 1200);
    ASSERT_TRUE(conn_->GetAdmin()->Flush(name).ok());
    Load(name, 1200, 1500);  // in the log only
    EXPECT_FALSE(act(name).ok()) << "the server did not stop at " << point;
    server_->Kill();
    server_->set_launcher({});
    ASSERT_TRUE(server_->Start().ok());
    Connect();
    auto regions = Regions(name);
    ASSERT_EQ(regions.size(), regions_after);
    ExpectCoverage(regions);
    std::map<std::string, std::string> want;
    for (int i = 0; i < 1500; ++i) want[Row(i)] = "v" + Row(i);
    std::string problem;
    EXPECT_EQ(ScanAll(name, &problem), want);
    EXPECT_EQ(problem, "");
    EXPECT_FALSE(std::filesystem::exists(absl::StrCat(dir_.path(), "/data/tables/", name, "/.splits")));
    ASSERT_TRUE(conn_->GetTable(name)->Put(Put(Row(5000)).Add("cf", "q", "after")).ok());
    want[Row(5000)] = "after";
    EXPECT_EQ(ScanAll(name, &problem), want);
    server_->Kill();
  }
}

// A split killed at each of its steps: a restart serves the parent (before the meta commit) or
// both daughters (after it).
TEST_F(Splits, AKillAtEveryStepOfASplitLeavesTheParentOrBothDaughters) {
  CrashAtEachStep(
      {{"split:start", 1},
       {"split:parents-closed", 1},
       {"split:children-written", 1},
       {"split:meta-committed", 2},
       {"split:children-moved", 2}},
      [&](const std::string& name) { CreateTable(name); },
      [&](const std::string& name) { return conn_->GetAdmin()->Split(name, Row(1000)); });
}

// A merge killed at each of its steps: a restart serves both parents (before the meta commit)
// or the merged region (after it).
TEST_F(Splits, AKillAtEveryStepOfAMergeLeavesBothParentsOrTheMergedRegion) {
  CrashAtEachStep(
      {{"merge:start", 3},
       {"merge:parents-closed", 3},
       {"merge:children-written", 3},
       {"merge:meta-committed", 2},
       {"merge:children-moved", 2}},
      [&](const std::string& name) { CreateTable(name, {"cf"}, {Row(500), Row(1000)}); },
      [&](const std::string& name) {
        auto before = Regions(name);
        if (before.size() != 3) return absl::InternalError("not 3 regions");
        return conn_->GetAdmin()->MergeRegions(before[0].encoded_name, before[1].encoded_name);
      });
}

TEST_F(Splits, MergeRegionJoinsTwoAdjacentRegionsWhileWritesGoOn) {
  StartServer();
  CreateTable("mr", {"cf"}, {Row(1000), Row(2000), Row(3000)});
  Load("mr", 0, 4000);
  auto regions = Regions("mr");
  ASSERT_EQ(regions.size(), 4u);
  // Not adjacent, the same region twice, unknown: refused, nothing changes.
  EXPECT_EQ(conn_->GetAdmin()->MergeRegions(regions[0].encoded_name, regions[2].encoded_name).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(conn_->GetAdmin()->MergeRegions(regions[1].encoded_name, regions[1].encoded_name).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(conn_->GetAdmin()->MergeRegions(regions[1].encoded_name, "0123456789abcdef").code(),
            absl::StatusCode::kNotFound);
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::thread writer([&] {
    auto t = conn_->GetTable("mr");
    for (int i = 0; !stop; ++i) {
      if (!t->Put(Put(Row(i % 4000)).Add("cf", "q", "v" + Row(i % 4000))).ok()) errors++;
    }
  });
  absl::Cleanup join = [&] {
    stop = true;
    writer.join();
  };
  // Either order; full names work as well as encoded ones.
  ASSERT_TRUE(conn_->GetAdmin()->MergeRegions(regions[2].name, regions[1].name).ok());
  auto merged = Regions("mr");
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[1].start_key, Row(1000));
  EXPECT_EQ(merged[1].end_key, Row(3000));
  ASSERT_TRUE(conn_->GetAdmin()->MajorCompact("mr").ok());  // the merged region reads its own files
  ASSERT_TRUE(conn_->GetAdmin()->MergeRegions(merged[0].encoded_name, merged[1].encoded_name).ok());
  std::move(join).Invoke();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(Regions("mr").size(), 2u);
  std::map<std::string, std::string> want;
  for (int i = 0; i < 4000; ++i) want[Row(i)] = "v" + Row(i);
  std::string problem;
  EXPECT_EQ(ScanAll("mr", &problem), want);
  EXPECT_EQ(problem, "");
  server_->Kill();
  ASSERT_TRUE(server_->Start().ok());
  Connect();
  EXPECT_EQ(Regions("mr").size(), 2u);
  EXPECT_EQ(ScanAll("mr", &problem), want);
}

// The client reads a table's regions from basalt:meta once, names the region in every call, and
// reads meta again only after a region refuses a call (split, merged, or a table dropped and
// made again): no per-call lookup, and no error reaches the caller, also for a call that is not
// idempotent. Over gRPC, whose calls name their region: the fast paths' frames name none (a
// server serves them by their row, docs/DESIGN.md §4), so a Put over TCP after a split is simply
// served.
TEST_F(Splits, TheClientReadsMetaOnceAndAgainOnlyAfterARegionRefusesACall) {
  StartServer();
  CreateTable("loc", {"cf"}, {Row(1000), Row(2000), Row(3000)});
  auto conn = Connection::Open({.address = server_->address(), .transport = TransportChoice::kGrpc});  // cold cache
  ASSERT_TRUE(conn.ok()) << conn.status();
  auto t = (*conn)->GetTable("loc");
  for (int i = 0; i < 4000; i += 7) ASSERT_TRUE(t->Put(Put(Row(i)).Add("cf", "q", "v" + Row(i))).ok());
  for (int i = 0; i < 4000; i += 7) {
    auto r = t->Get(Get(Row(i)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->Value("cf", "q").value_or(""), "v" + Row(i));
  }
  TransportStats st = (*conn)->GetTransportStats();
  EXPECT_EQ(st.meta_lookups, 1u);
  EXPECT_EQ(st.regions_relocated, 0u);

  // A split behind the client's back (another connection): the first call to a daughter's row
  // is refused by name, the client forgets the parent, reads meta again and is served.
  ASSERT_TRUE(conn_->GetAdmin()->Split("loc", Row(1500)).ok());
  ASSERT_TRUE(t->Put(Put(Row(1200)).Add("cf", "q", "new")).ok());
  st = (*conn)->GetTransportStats();
  EXPECT_EQ(st.meta_lookups, 2u);
  EXPECT_EQ(st.regions_relocated, 1u);
  ASSERT_TRUE(t->Put(Put(Row(1700)).Add("cf", "q", "new")).ok());  // the other daughter: cached
  ASSERT_TRUE(t->Put(Put(Row(2500)).Add("cf", "q", "new")).ok());  // an untouched region
  EXPECT_EQ((*conn)->GetTransportStats().meta_lookups, 2u);

  // A refusal by a split region applied nothing, so the increment goes again and counts once.
  ASSERT_TRUE(conn_->GetAdmin()->Split("loc", Row(2200)).ok());
  auto n = t->IncrementColumnValue(Row(2100), "cf", "n", 5);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 5);
  EXPECT_EQ((*conn)->GetTransportStats().regions_relocated, 2u);

  // A batch over every region after a merge: the rows of the merged parents are refused, located
  // again and applied; every row is applied once.
  auto regions = Regions("loc");
  ASSERT_EQ(regions.size(), 6u);
  // (A daughter merges once its compaction has rewritten the parent's files, which runs on its
  // own after the split: later than this on a busy machine, where the merge is refused until.)
  absl::Status merged;
  for (absl::Time end = absl::Now() + absl::Seconds(30); absl::Now() < end; absl::SleepFor(absl::Milliseconds(50))) {
    merged = conn_->GetAdmin()->MergeRegions(regions[4].encoded_name, regions[5].encoded_name);
    if (!absl::IsFailedPrecondition(merged) || merged.message().find("still reads") == std::string::npos) break;
  }
  ASSERT_TRUE(merged.ok()) << merged;
  std::vector<RowMutationsBase> batch;
  for (int i = 0; i < 4000; i += 7) batch.push_back(Put(Row(i)).Add("cf", "q", "b" + Row(i)));
  auto statuses = t->Batch(batch);
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  for (const absl::Status& s : *statuses) ASSERT_TRUE(s.ok()) << s;
  st = (*conn)->GetTransportStats();
  EXPECT_EQ(st.regions_relocated, 4u);  // both merged parents refused their rows, in one answer
  EXPECT_EQ(st.meta_lookups, 4u);       // one read of meta found the merged region for them all
  for (int i = 0; i < 4000; i += 7) {
    auto r = t->Get(Get(Row(i)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->Value("cf", "q").value_or(""), "b" + Row(i));
  }

  // A table dropped and made again under the same name has new regions: the cached ones are
  // refused, and the new ones found.
  ASSERT_TRUE(conn_->GetAdmin()->DisableTable("loc").ok());
  ASSERT_TRUE(conn_->GetAdmin()->DropTable("loc").ok());
  CreateTable("loc", {"cf"}, {Row(500)});
  ASSERT_TRUE(t->Put(Put(Row(100)).Add("cf", "q", "again")).ok());
  auto r = t->Get(Get(Row(100)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("cf", "q").value_or(""), "again");
}

// The refusal itself, on the wire: UNAVAILABLE with a NotServingRegion naming the region the
// call named, in the status details; a call naming no region is routed by row.
TEST_F(Splits, ACallNamingARegionThatDoesNotHoldTheRowIsRefusedWithThatRegionsName) {
  StartServer();
  CreateTable("wire", {"cf"}, {Row(1000)});
  auto regions = Regions("wire");
  ASSERT_EQ(regions.size(), 2u);
  auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  auto stub = rpc::Basalt::NewStub(channel);
  auto put = [&](const std::string& row, const std::string& region) {
    rpc::MutateRequest req;
    req.set_table("wire");
    req.set_region(region);
    req.mutable_mutation()->set_row(row);
    rpc::Mutation* m = req.mutable_mutation()->add_mutations();
    m->set_family("cf");
    m->set_qualifier("q");
    m->set_value("v");
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    rpc::MutateResponse resp;
    return stub->Mutate(&ctx, req, &resp);
  };
  EXPECT_TRUE(put(Row(5), regions[0].encoded_name).ok());
  EXPECT_TRUE(put(Row(5), "").ok());
  grpc::Status refused = put(Row(1005), regions[0].encoded_name);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.error_message().find(regions[0].encoded_name), std::string::npos) << refused.error_message();
  rpc::StatusDetails details;  // google.rpc.Status's layout
  ASSERT_TRUE(details.ParseFromString(refused.error_details()));
  EXPECT_EQ(details.code(), grpc::StatusCode::UNAVAILABLE);
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), "type.googleapis.com/basalt.rpc.NotServingRegion");
  rpc::NotServingRegion not_serving;
  ASSERT_TRUE(details.details(0).UnpackTo(&not_serving));
  EXPECT_EQ(not_serving.region(), regions[0].encoded_name);
  EXPECT_EQ(put(Row(1005), "0123456789abcdef").error_code(), grpc::StatusCode::UNAVAILABLE);
  auto r = conn_->GetTable("wire")->Get(Get(Row(1005)));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());  // nothing of a refused call was applied
}

}  // namespace
}  // namespace basalt::testing
