// Tables of many regions on a real basalt-server: pre-splitting (split keys and HexStringSplit),
// reads, writes, batches, read-modify-writes and scans routed across region boundaries,
// list_regions, basalt:meta as a readable table, and all of it surviving kill -9 and a restart.
#include <algorithm>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/integration/integration_util.h"
#include "tests/util/scan_rows.h"

namespace basalt::testing {
namespace {

class Regions : public ServerTest {
 protected:
  void CreateSplit(const std::string& name, const std::vector<std::string>& split_keys) {
    TableInfo t;
    t.name = name;
    t.families.push_back(FamilySettings{.name = "cf"});
    absl::Status s = conn_->GetAdmin()->CreateTable(t, split_keys);
    ASSERT_TRUE(s.ok()) << s;
  }
  // Every row of a full scan, in the order the scan returned them.
  std::vector<std::string> ScanRows(const std::string& table, Scan scan = Scan()) {
    return ScanRowKeys(conn_->GetTable(table).get(), scan);
  }
  // "0000" .. rows over the whole byte range of the first character.
  static std::vector<std::string> SpreadRows(int n) {
    std::vector<std::string> rows;
    for (int i = 0; i < n; ++i) rows.push_back(absl::StrFormat("%c%04d", static_cast<char>('0' + i % 75), i));
    std::sort(rows.begin(), rows.end());
    return rows;
  }
};

TEST_F(Regions, APreSplitTableServesEveryRowFromItsRegionAndScansAcrossThemInOrder) {
  StartServer();
  CreateSplit("t1", {"g", "A", "n", "t"});  // any order
  auto regions = conn_->GetAdmin()->ListRegions("t1");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 5u);
  const std::vector<std::string> starts = {"", "A", "g", "n", "t"};
  for (size_t i = 0; i < regions->size(); ++i) {
    const RegionStatus& r = (*regions)[i];
    EXPECT_EQ(r.start_key, starts[i]);
    EXPECT_EQ(r.end_key, i + 1 < starts.size() ? starts[i + 1] : "");
    EXPECT_EQ(r.state, "OPEN");
    EXPECT_EQ(r.server, server_->address());
    EXPECT_EQ(r.name, absl::StrCat("t1,", starts[i], ",", r.id));
    EXPECT_EQ(r.encoded_name.size(), 16u);
  }
  auto info = conn_->GetAdmin()->DescribeTable("t1");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->regions, 5u);

  // Writes from several threads land in every region; batches span regions.
  const std::vector<std::string> rows = SpreadRows(600);
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      auto t = conn_->GetTable("t1");
      std::vector<RowMutationsBase> batch;
      for (size_t i = w; i < rows.size(); i += 4) {
        if (i % 8 < 4) {
          EXPECT_TRUE(t->Put(Put(rows[i]).Add("cf", "q", rows[i])).ok());
        } else {
          batch.push_back(Put(rows[i]).Add("cf", "q", rows[i]));
        }
      }
      auto st = t->Batch(batch);
      ASSERT_TRUE(st.ok()) << st.status();
      for (const absl::Status& s : *st) EXPECT_TRUE(s.ok()) << s;
    });
  }
  for (auto& th : writers) th.join();
  auto t = conn_->GetTable("t1");
  for (const std::string& row : rows) {
    auto r = t->Get(Get(row));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->Value("cf", "q"), std::optional<std::string_view>(row)) << row;
  }
  EXPECT_EQ(ScanRows("t1"), rows);  // in order, no gap, no duplicate
  // A range and a limit that cross region boundaries.
  std::vector<std::string> want;
  for (const std::string& r : rows) {
    if (r >= "B" && r < "p") want.push_back(r);
  }
  EXPECT_EQ(ScanRows("t1", Scan().WithStartRow("B").WithStopRow("p")), want);
  want.resize(std::min<size_t>(want.size(), 150));
  EXPECT_EQ(ScanRows("t1", Scan().WithStartRow("B").WithStopRow("p").SetLimit(150)), want);
  // Read-modify-writes go to the row's region.
  for (const std::string& row : {std::string("0"), std::string("h"), std::string("zz")}) {
    auto v = t->IncrementColumnValue(row, "cf", "n", 5);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(*v, 5);
  }
  // Every region took writes.
  regions = conn_->GetAdmin()->ListRegions("t1");
  ASSERT_TRUE(regions.ok()) << regions.status();
  for (const RegionStatus& r : *regions) EXPECT_GT(r.write_requests, 0u) << r.name;

  // Flush, compact, and disable/enable act on every region.
  ASSERT_TRUE(conn_->GetAdmin()->Flush("t1").ok());
  regions = conn_->GetAdmin()->ListRegions("t1");
  ASSERT_TRUE(regions.ok()) << regions.status();
  for (const RegionStatus& r : *regions) {
    EXPECT_EQ(r.store_files, 1u) << r.name;
    EXPECT_GT(r.store_file_bytes, 0u) << r.name;
  }
  ASSERT_TRUE(conn_->GetAdmin()->MajorCompact("t1").ok());
  ASSERT_TRUE(conn_->GetAdmin()->DisableTable("t1").ok());
  regions = conn_->GetAdmin()->ListRegions("t1");
  ASSERT_TRUE(regions.ok()) << regions.status();
  for (const RegionStatus& r : *regions) EXPECT_EQ(r.state, "CLOSED") << r.name;
  ASSERT_TRUE(conn_->GetAdmin()->EnableTable("t1").ok());
  EXPECT_EQ(ScanRows("t1").size(), rows.size() + 3);  // "0", "h" and "zz" are new rows

  // A crash and a restart: the same regions, every row.
  const std::vector<RegionStatus> before = *regions;
  ASSERT_TRUE(t->Put(Put("u-after-flush").Add("cf", "q", "x")).ok());  // in the log only
  server_->Kill();
  ASSERT_TRUE(server_->Start().ok());
  Connect();
  regions = conn_->GetAdmin()->ListRegions("t1");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ((*regions)[i].name, before[i].name);
  auto after = conn_->GetTable("t1")->Get(Get("u-after-flush"));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->Value("cf", "q"), std::optional<std::string_view>("x"));
  EXPECT_EQ(ScanRows("t1").size(), rows.size() + 4);
}

TEST_F(Regions, HexStringSplitAndTheMetaTable) {
  StartServer();
  auto keys = SplitKeysFor("HexStringSplit", 16);
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_EQ(keys->size(), 15u);
  EXPECT_EQ(keys->front(), "10000000");  // as HBase's RegionSplitter.HexStringSplit
  EXPECT_EQ(keys->back(), "f0000000");
  CreateSplit("hex", *keys);
  CreateTable("plain");
  // basalt:meta holds a row per region: 16 + 1, "<table>,<start key>,<id>", readable by a scan.
  std::vector<std::string> meta_rows = ScanRows("basalt:meta");
  ASSERT_EQ(meta_rows.size(), 17u);
  EXPECT_TRUE(meta_rows[0].starts_with("hex,,")) << meta_rows[0];
  EXPECT_TRUE(meta_rows[1].starts_with("hex,10000000,")) << meta_rows[1];
  EXPECT_TRUE(meta_rows[16].starts_with("plain,,")) << meta_rows[16];
  auto meta = conn_->GetTable("basalt:meta");
  auto row = meta->Get(Get(meta_rows[1]));
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->Value("info", "startkey"), std::optional<std::string_view>("10000000"));
  EXPECT_EQ(row->Value("info", "endkey"), std::optional<std::string_view>("20000000"));
  EXPECT_EQ(row->Value("info", "state"), std::optional<std::string_view>("OPEN"));
  EXPECT_EQ(row->Value("info", "server"), std::optional<std::string_view>(server_->address()));
  // Only the server writes it.
  absl::Status w = meta->Put(Put("x,,1").Add("info", "state", "OPEN"));
  EXPECT_EQ(w.code(), absl::StatusCode::kPermissionDenied) << w;
  auto described = conn_->GetAdmin()->DescribeTable("basalt:meta");
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->families.at(0).name, "info");
  // Its own listing is not a user table.
  auto tables = conn_->GetAdmin()->ListTables();
  ASSERT_TRUE(tables.ok()) << tables.status();
  EXPECT_EQ(tables->size(), 2u);

  // Rows spread over the hex key space reach all 16 regions.
  auto t = conn_->GetTable("hex");
  for (uint32_t i = 0; i < 256; ++i) {
    const std::string r = absl::StrFormat("%08x", i * 0x01000000u + i);
    ASSERT_TRUE(t->Put(Put(r).Add("cf", "q", "v")).ok()) << r;
  }
  auto regions = conn_->GetAdmin()->ListRegions("hex");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 16u);
  for (const RegionStatus& r : *regions) EXPECT_EQ(r.write_requests, 16u) << r.name;
  EXPECT_EQ(ScanRows("hex").size(), 256u);

  // Dropping a table removes its meta rows and its regions.
  ASSERT_TRUE(conn_->GetAdmin()->DisableTable("hex").ok());
  ASSERT_TRUE(conn_->GetAdmin()->DropTable("hex").ok());
  EXPECT_EQ(ScanRows("basalt:meta").size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/data/tables/hex"));
  // Bad split keys are refused whole.
  TableInfo bad;
  bad.name = "bad";
  bad.families.push_back(FamilySettings{.name = "cf"});
  EXPECT_EQ(conn_->GetAdmin()->CreateTable(bad, {"a", "a"}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(conn_->GetAdmin()->CreateTable(bad, {""}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ScanRows("basalt:meta").size(), 1u);
}

}  // namespace
}  // namespace basalt::testing
