// Region behaviour: HBase semantics of versions, deletes, TTL and time ranges, across flushes
// and compactions; persistence across reopen; bad input.
#include "storage/region.h"

#include <filesystem>
#include <fstream>
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/util/random_bytes.h"
#include "common/coding.h"
#include "common/crc.h"
#include "common/env.h"
#include "common/format_stamp.h"
#include "storage/internal/block_cache.h"
#include "storage/internal/manifest.h"
#include "tests/util/region_scan.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

class RegionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    family_.name = "cf";
    family_.max_versions = 3;
    Open();
  }
  void Open() {
    RegionOptions o;
    o.clock = [this] { return now_.load(); };
    o.block_cache = &cache_;
    RegionDescriptor d{"t1,,1", {family_}, "", ""};
    auto r = Region::Open(o, d, dir_.path());
    ASSERT_TRUE(r.ok()) << r.status();
    region_ = std::move(*r);
  }
  void Reopen() {
    ASSERT_TRUE(region_->Close().ok());
    region_.reset();
    Open();
  }
  std::vector<std::string> Values(std::string_view row, ReadSpec spec = {}) {
    auto cells = region_->Get(row, spec);
    EXPECT_TRUE(cells.ok()) << cells.status();
    std::vector<std::string> out;
    if (cells.ok()) {
      for (auto& c : *cells) out.push_back(c.qualifier + "=" + c.value + "@" + std::to_string(c.timestamp));
    }
    return out;
  }
  absl::Status Delete(std::string_view row, Mutation::Kind kind, std::string_view q, int64_t ts = kLatestTimestamp) {
    RowMutation rm{std::string(row), {}};
    Mutation m;
    m.kind = kind;
    m.family = "cf";
    m.qualifier.assign(q);
    m.timestamp = ts;
    rm.mutations.push_back(m);
    return region_->Mutate({rm});
  }
  // Every row a scan returns, its cells copied out; a scan error fails the test.
  std::vector<std::vector<Cell>> ScanRows(const ScanSpec& spec) { return testing::ScanRegionRows(region_.get(), spec); }
  // Runs check() now, after a flush and after a major compaction.
  template <typename F>
  void EveryStage(F check) {
    check();
    ASSERT_TRUE(region_->Flush().ok());
    check();
    Reopen();
    check();
  }

  testing::TempDir dir_;
  BlockCache cache_{8 << 20};
  FamilyOptions family_;
  std::atomic<int64_t> now_{1000000};
  std::unique_ptr<Region> region_;
};

TEST_F(RegionTest, PutGetVersions) {
  for (int ts = 1; ts <= 5; ++ts) ASSERT_TRUE(region_->Put("r", "cf", "q", "v" + std::to_string(ts), ts).ok());
  EveryStage([&] {
    EXPECT_EQ(Values("r"), (std::vector<std::string>{"q=v5@5"}));
    ReadSpec all;
    all.max_versions = 10;
    EXPECT_EQ(Values("r", all), (std::vector<std::string>{"q=v5@5", "q=v4@4", "q=v3@3"}));
    ReadSpec range = all;
    range.min_ts = 3;
    range.max_ts = 5;
    EXPECT_EQ(Values("r", range), (std::vector<std::string>{"q=v4@4", "q=v3@3"}));
    EXPECT_TRUE(Values("nope").empty());
  });
}

TEST_F(RegionTest, SameTimestampLaterPutWins) {
  ASSERT_TRUE(region_->Put("r", "cf", "q", "a", 7).ok());
  ASSERT_TRUE(region_->Flush().ok());
  ASSERT_TRUE(region_->Put("r", "cf", "q", "b", 7).ok());
  EveryStage([&] { EXPECT_EQ(Values("r"), (std::vector<std::string>{"q=b@7"})); });
}

TEST_F(RegionTest, DeleteKindsAndMasking) {
  ReadSpec all;
  all.max_versions = 10;
  for (int ts = 1; ts <= 3; ++ts) {
    ASSERT_TRUE(region_->Put("r", "cf", "a", "a" + std::to_string(ts), ts).ok());
    ASSERT_TRUE(region_->Put("r", "cf", "b", "b" + std::to_string(ts), ts).ok());
  }
  ASSERT_TRUE(region_->Put("r", "cf", "c", "c9", 9).ok());
  ASSERT_TRUE(Delete("r", Mutation::Kind::kDelete, "a", 2).ok());      // exactly a@2
  ASSERT_TRUE(Delete("r", Mutation::Kind::kDelete, "b").ok());         // newest: b@3
  EveryStage([&] {
    EXPECT_EQ(Values("r", all), (std::vector<std::string>{"a=a3@3", "a=a1@1", "b=b2@2", "b=b1@1", "c=c9@9"}));
  });
  ASSERT_TRUE(Delete("r", Mutation::Kind::kDeleteColumn, "a", 3).ok());
  ASSERT_TRUE(Delete("r", Mutation::Kind::kDeleteFamily, "", 1).ok());
  EveryStage([&] { EXPECT_EQ(Values("r", all), (std::vector<std::string>{"b=b2@2", "c=c9@9"})); });
  // A put below a marker stays hidden, also when written after it...
  ASSERT_TRUE(region_->Put("r", "cf", "a", "late", 2).ok());
  EveryStage([&] { EXPECT_EQ(Values("r", all), (std::vector<std::string>{"b=b2@2", "c=c9@9"})); });
  // ... until a major compaction drops the marker; then new puts at old timestamps show.
  ASSERT_TRUE(region_->MajorCompact().ok());
  ASSERT_TRUE(region_->Put("r", "cf", "a", "again", 2).ok());
  EveryStage([&] { EXPECT_EQ(Values("r", all), (std::vector<std::string>{"a=again@2", "b=b2@2", "c=c9@9"})); });
}

TEST_F(RegionTest, SurplusVersionsGoneForGood) {
  ReadSpec all;
  all.max_versions = 10;
  for (int ts = 1; ts <= 4; ++ts) ASSERT_TRUE(region_->Put("r", "cf", "q", std::to_string(ts), ts).ok());
  ASSERT_TRUE(Delete("r", Mutation::Kind::kDelete, "q", 4).ok());
  // max_versions 3 keeps 4,3,2 (4 deleted); 1 stays gone.
  EveryStage([&] { EXPECT_EQ(Values("r", all), (std::vector<std::string>{"q=3@3", "q=2@2"})); });
  ASSERT_TRUE(region_->MajorCompact().ok());
  EveryStage([&] { EXPECT_EQ(Values("r", all), (std::vector<std::string>{"q=3@3", "q=2@2"})); });
}

// Reads seek past a column's surplus versions (a hot row in the memstore); what they return
// must not change: the next column's cells, later rows in a scan, and a DeleteFamily marker
// that sorts among many puts of the empty qualifier all still count.
TEST_F(RegionTest, ManyVersionsOfAColumnAreSkippedCorrectly) {
  ReadSpec all;
  all.max_versions = 10;
  for (int ts = 1; ts <= 50; ++ts) {
    ASSERT_TRUE(region_->Put("r", "cf", "", "e" + std::to_string(ts), 100 + ts).ok());
    ASSERT_TRUE(region_->Put("r", "cf", "a", "a" + std::to_string(ts), ts).ok());
    ASSERT_TRUE(region_->Put("r", "cf", std::string("a\0", 2), "z" + std::to_string(ts), ts).ok());
    ASSERT_TRUE(region_->Put("s", "cf", "a", "s" + std::to_string(ts), ts).ok());
  }
  ASSERT_TRUE(region_->Put("r", "cf", "b", "b", 40).ok());
  // A family marker at 45 sorts after the empty qualifier's puts at 101..150.
  ASSERT_TRUE(Delete("r", Mutation::Kind::kDeleteFamily, "", 45).ok());
  EveryStage([&] {
    EXPECT_EQ(Values("r", all), (std::vector<std::string>{"=e50@150", "=e49@149", "=e48@148", "a=a50@50",
                                                           "a=a49@49", "a=a48@48", std::string("a\0", 2) + "=z50@50",
                                                           std::string("a\0", 2) + "=z49@49", std::string("a\0", 2) + "=z48@48"}));
    ScanSpec scan;
    auto rows = ScanRows(scan);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].size(), 3u);  // one version each; b@40 is under the family marker
    ASSERT_EQ(rows[1].size(), 1u);
    EXPECT_EQ(rows[1][0].value, "s50");
  });
}

TEST_F(RegionTest, TtlHidesOldCells) {
  family_.ttl_ms = 1000;
  Reopen();
  ASSERT_TRUE(region_->Put("r", "cf", "q", "old", now_ - 5000).ok());
  ASSERT_TRUE(region_->Put("r", "cf", "p", "new").ok());
  EveryStage([&] { EXPECT_EQ(Values("r"), (std::vector<std::string>{"p=new@" + std::to_string(now_.load())})); });
  now_ += 2000;
  EXPECT_TRUE(Values("r").empty());
  ASSERT_TRUE(region_->MajorCompact().ok());
  EXPECT_TRUE(Values("r").empty());
}

TEST_F(RegionTest, ScanRangesAndColumns) {
  for (int i = 0; i < 100; ++i) {
    char row[8];
    snprintf(row, sizeof row, "r%03d", i);
    ASSERT_TRUE(region_->Put(row, "cf", "x", std::to_string(i), 1).ok());
    ASSERT_TRUE(region_->Put(row, "cf", "y", std::to_string(-i), 1).ok());
    if (i == 50) {
      ASSERT_TRUE(region_->Flush().ok());
    }
  }
  ScanSpec s;
  s.start_row = "r010";
  s.stop_row = "r020";
  s.columns.push_back({"cf", {"y"}});
  auto rows = ScanRows(s);
  ASSERT_EQ(rows.size(), 10u);
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 1u);
    EXPECT_EQ(rows[i][0].qualifier, "y");
    EXPECT_EQ(rows[i][0].value, std::to_string(-(10 + static_cast<int>(i))));
  }
}

TEST(RegionRange, RowsOutsideTheRegionAreRefusedAndScansAreClipped) {
  testing::TempDir dir;
  FamilyOptions f;
  f.name = "cf";
  RegionDescriptor d{"t1,g,1", {f}, "g", "n"};
  auto r = Region::Open(RegionOptions{}, d, dir.path());
  ASSERT_TRUE(r.ok()) << r.status();
  Region& region = **r;
  for (const char* row : {"g", "h", "m\xff", "mzzz"}) ASSERT_TRUE(region.Put(row, "cf", "q", "v").ok()) << row;
  for (const char* row : {"a", "f\xff", "n", "z"}) {
    absl::Status s = region.Put(row, "cf", "q", "v");
    EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << row;
    EXPECT_NE(s.message().find("t1,g,1"), std::string_view::npos) << s;
    EXPECT_EQ(region.Get(row).status().code(), absl::StatusCode::kOutOfRange) << row;
  }
  // A batch with one row outside is refused whole.
  std::vector<RowMutation> batch = {{"h", {{Mutation::Kind::kPut, "cf", "q", kLatestTimestamp, "2"}}},
                                    {"o", {{Mutation::Kind::kPut, "cf", "q", kLatestTimestamp, "2"}}}};
  EXPECT_EQ(region.Mutate(batch).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*region.Get("h"))[0].value, "v");
  auto rows = [&](std::string start, std::string stop) {
    ScanSpec spec;
    spec.start_row = std::move(start);
    spec.stop_row = std::move(stop);
    auto sc = region.Scan(spec);
    EXPECT_TRUE(sc.ok()) << sc.status();
    std::vector<std::string> out;
    std::vector<Cell> cells;
    while (sc.ok() && *(*sc)->NextRow(&cells)) out.push_back(cells[0].row);
    return out;
  };
  EXPECT_EQ(rows("", ""), (std::vector<std::string>{"g", "h", "mzzz", "m\xff"}));  // 0xff > z
  EXPECT_EQ(rows("h", "zz"), (std::vector<std::string>{"h", "mzzz", "m\xff"}));
  EXPECT_EQ(rows("a", "h"), (std::vector<std::string>{"g"}));
  EXPECT_TRUE(rows("p", "").empty());
  // An empty or inverted range is refused at open.
  RegionDescriptor bad{"t1,n,2", {f}, "n", "g"};
  testing::TempDir dir2;
  EXPECT_EQ(Region::Open(RegionOptions{}, bad, dir2.path()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RegionTest, OversizedWritesAreRefusedAndTheRegionStaysWritable) {
  EXPECT_EQ(region_->Put("r", "cf", "q", std::string((16 << 20) + 1, 'v')).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(region_->Put("r", "cf", std::string((64 << 10) + 1, 'q'), "v").code(), absl::StatusCode::kInvalidArgument);
  RowMutation big{"r", {}};
  for (int i = 0; i < 17; ++i) {
    big.mutations.push_back({Mutation::Kind::kPut, "cf", "q" + std::to_string(i), kLatestTimestamp, std::string(16 << 20, 'v')});
  }
  EXPECT_EQ(region_->Mutate({big}).code(), absl::StatusCode::kInvalidArgument);
  // The largest accepted value survives a flush (its block stays under the format's limit).
  family_.compression = Compression::kSnappy;
  Reopen();
  ASSERT_TRUE(region_->Put("r", "cf", "q", std::string(16 << 20, 'x')).ok());
  ASSERT_TRUE(region_->Flush().ok());
  auto cells = region_->Get("r");
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 1u);
  EXPECT_EQ((*cells)[0].value.size(), 16u << 20);
}

TEST_F(RegionTest, BadInput) {
  EXPECT_EQ(region_->Put("", "cf", "q", "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(region_->Put("r", "nope", "q", "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(region_->Put(std::string(40000, 'x'), "cf", "q", "v").code(), absl::StatusCode::kInvalidArgument);
  ReadSpec s;
  s.columns.push_back({"nope", {}});
  EXPECT_EQ(region_->Get("r", s).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(region_->Close().ok());
  EXPECT_EQ(region_->Put("r", "cf", "q", "v").code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RegionOpen, RejectsBadFamilySettings) {
  testing::TempDir dir;
  FamilyOptions f;
  f.name = "cf";
  for (auto mutate : std::vector<std::function<void(FamilyOptions*)>>{
           [](FamilyOptions* o) { o->bytes_per_checksum = 64; },
           [](FamilyOptions* o) { o->max_versions = 0; },
           [](FamilyOptions* o) { o->min_versions = 5; },
           [](FamilyOptions* o) { o->ttl_ms = -1; },
           [](FamilyOptions* o) { o->name = "a:b"; },
           [](FamilyOptions* o) { o->encoding = static_cast<DataBlockEncoding>(9); },
       }) {
    FamilyOptions bad = f;
    mutate(&bad);
    auto r = Region::Open(RegionOptions{}, RegionDescriptor{"t,,1", {bad}, "", ""}, dir.path());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  FamilyOptions g = f;
  g.name = "cg";
  auto twice = Region::Open(RegionOptions{}, RegionDescriptor{"t,,1", {f, f}, "", ""}, dir.path());
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  auto ok = Region::Open(RegionOptions{}, RegionDescriptor{"t,,1", {g, f}, "", ""}, dir.path());
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_TRUE((*ok)->Put("r", "cg", "q", "2", 5).ok());
  ASSERT_TRUE((*ok)->Put("r", "cf", "q", "1", 5).ok());
  // Families come back in name order, and a family named twice is read once.
  ScanSpec s;
  s.columns = {{"cg", {}}, {"cf", {"q"}}, {"cf", {}}};
  auto sc = (*ok)->Scan(s);
  ASSERT_TRUE(sc.ok());
  std::vector<Cell> cells;
  ASSERT_TRUE(*(*sc)->NextRow(&cells));
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].family, "cf");
  EXPECT_EQ(cells[1].family, "cg");
  auto got = (*ok)->Get("r", s);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 2u);
}

TEST_F(RegionTest, ReopenKeepsFlushedAndUnflushedEdits) {
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(region_->Put("r" + std::to_string(i), "cf", "q", "v").ok());
  // Drop the region without Close (no flush): the log must bring the edits back.
  ASSERT_TRUE(region_->Flush().ok());
  for (int i = 50; i < 100; ++i) ASSERT_TRUE(region_->Put("r" + std::to_string(i), "cf", "q", "v").ok());
  RegionStats st = region_->GetStats();
  EXPECT_GT(st.flushed_seq, 0u);
  region_.reset();  // closes; tests/crash kills writers without closing
  Open();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(Values("r" + std::to_string(i)).size(), 1u) << i;
}

TEST_F(RegionTest, ConcurrentWritersAndReadersSeeWholeRows) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        RowMutation rm{"row" + std::to_string(i % 10), {}};
        std::string v = std::to_string(t * 1000 + i);
        for (const char* q : {"a", "b", "c"}) rm.mutations.push_back({Mutation::Kind::kPut, "cf", q, kLatestTimestamp, v});
        ASSERT_TRUE(region_->Mutate({rm}).ok());
        if (i % 100 == 99) {
          ASSERT_TRUE(region_->Flush().ok());
        }
      }
    });
  }
  std::thread reader([&] {
    while (!stop) {
      for (int r = 0; r < 10; ++r) {
        auto cells = region_->Get("row" + std::to_string(r));
        ASSERT_TRUE(cells.ok());
        if (cells->empty()) continue;
        ASSERT_EQ(cells->size(), 3u);
        // The clock stands still, so every mutation has the same timestamp and the newest one
        // wins each cell: all three cells must come from the same mutation (MVCC read point).
        EXPECT_EQ((*cells)[0].value, (*cells)[1].value);
        EXPECT_EQ((*cells)[0].value, (*cells)[2].value);
      }
    }
  });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
}

TEST_F(RegionTest, ReadsStayCorrectDuringFlushAndCompaction) {
  // A fixed data set, read over and over while writers add other rows and the region flushes,
  // minor-compacts and major-compacts underneath.
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(region_->Put("fixed" + std::to_string(1000 + i), "cf", "q", std::to_string(i), 5).ok());
  }
  ASSERT_TRUE(region_->Flush().ok());
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (int round = 0; round < 15; ++round) {
      for (int i = 0; i < 50; ++i) {
        ASSERT_TRUE(region_->Put("other" + std::to_string(round * 50 + i), "cf", "q", "x", 5, Durability::kAsyncWal).ok());
      }
      ASSERT_TRUE(region_->Flush().ok());
      ASSERT_TRUE(round % 5 == 4 ? region_->MajorCompact().ok() : region_->CompactMinor().ok());
    }
    stop = true;
  });
  int scans = 0;
  while (!stop || scans < 3) {
    ScanSpec s;
    s.start_row = "fixed";
    s.stop_row = "fixee";
    auto rows = ScanRows(s);
    ASSERT_EQ(rows.size(), 200u);
    for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(rows[i][0].value, std::to_string(i));
    auto one = region_->Get("fixed1100");
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->size(), 1u);
    ++scans;
  }
  churn.join();
  EXPECT_GT(region_->GetStats().major_compactions, 0u);
  EXPECT_EQ(region_->GetStats().files_per_family["cf"] <= 4, true);
}

TEST_F(RegionTest, CompactedFilesGoWhenTheLastReaderLetsGo) {
  auto count_files = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) n += e.path().extension() == ".blk";
    return n;
  };
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(region_->Put("r" + std::to_string(i), "cf", "q", "v", 5).ok());
    ASSERT_TRUE(region_->Flush().ok());
  }
  ScanSpec all;
  auto scanner = region_->Scan(all);  // holds the three files
  ASSERT_TRUE(scanner.ok());
  ASSERT_TRUE(region_->MajorCompact().ok());
  EXPECT_EQ(count_files(), 4);  // the scanner still reads the inputs
  std::vector<Cell> cells;
  int rows = 0;
  while (*(*scanner)->NextRow(&cells)) ++rows;
  EXPECT_EQ(rows, 3);
  scanner->reset();
  EXPECT_EQ(count_files(), 1);
}

TEST_F(RegionTest, AMissingFileTheManifestNamesIsDataLoss) {
  ASSERT_TRUE(region_->Put("r", "cf", "q", "v").ok());
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    if (e.path().extension() == ".blk") std::filesystem::remove(e.path());
  }
  RegionOptions o;
  auto r = Region::Open(o, RegionDescriptor{"t1,,1", {family_}, "", ""}, dir_.path());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find(".blk"), std::string::npos) << r.status();
}

int CountBlockFiles(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".blk";
  return n;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(RegionTest, ANewRegionWritesItsManifestAtOnce) {
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/MANIFEST"));
}

TEST_F(RegionTest, AMissingManifestBesideBlockFilesIsDataLossAndNothingIsDeleted) {
  ASSERT_TRUE(region_->Put("flushed", "cf", "q", "v1").ok());
  ASSERT_TRUE(region_->Flush().ok());
  ASSERT_TRUE(region_->Put("logged", "cf", "q", "v2").ok());
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  const std::string manifest = dir_.path() + "/MANIFEST";
  const std::string saved = ReadAll(manifest);
  const int files = CountBlockFiles(dir_.path());
  ASSERT_GT(files, 0);
  std::filesystem::remove(manifest);

  RegionOptions o;
  auto r = Region::Open(o, RegionDescriptor{"t1,,1", {family_}, "", ""}, dir_.path());
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find(manifest + " is missing"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("nothing was deleted"), std::string::npos) << r.status();
  EXPECT_EQ(CountBlockFiles(dir_.path()), files);
  EXPECT_FALSE(std::filesystem::exists(manifest));  // not recreated empty either

  // The operator restores the manifest: every row is back.
  std::ofstream(manifest, std::ios::binary) << saved;
  Open();
  EXPECT_EQ(Values("flushed").size(), 1u);
  EXPECT_EQ(Values("logged").size(), 1u);
}

TEST_F(RegionTest, UnaccountedBlockFilesAreMovedAsideAndHalfWrittenOnesRemoved) {
  ASSERT_TRUE(region_->Put("r", "cf", "q", "v").ok());
  ASSERT_TRUE(region_->Flush().ok());  // file 1
  ASSERT_TRUE(region_->Put("s", "cf", "q", "v").ok());
  ASSERT_TRUE(region_->MajorCompact().ok());  // flush: file 2; compaction of 1 and 2: file 3
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  std::string live;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    if (e.path().extension() == ".blk") live = e.path().string();
  }
  ASSERT_EQ(live, dir_.path() + "/00000000000000000003.blk");
  // A compaction input a crash kept from being deleted (the manifest numbered it, then left it
  // out): removed. A file the manifest never numbered: kept aside. A half-written one: removed.
  const std::string compacted = dir_.path() + "/00000000000000000002.blk";
  const std::string stray = dir_.path() + "/00000000000000000099.blk";
  const std::string half = dir_.path() + "/00000000000000000100.blk.tmp";
  std::filesystem::copy_file(live, compacted);
  std::filesystem::copy_file(live, stray);
  std::ofstream(half) << "half a flush";

  std::vector<std::string> log;
  RegionOptions o;
  o.log = [&](std::string_view line) { log.emplace_back(line); };
  auto r = Region::Open(o, RegionDescriptor{"t1,,1", {family_}, "", ""}, dir_.path());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(std::filesystem::exists(half));
  EXPECT_FALSE(std::filesystem::exists(compacted));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/lost+found/00000000000000000002.blk"));
  EXPECT_FALSE(std::filesystem::exists(stray));
  EXPECT_EQ(ReadAll(dir_.path() + "/lost+found/00000000000000000099.blk"), ReadAll(live));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("moved " + stray + " aside to " + dir_.path() + "/lost+found/"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("removed 1 obsolete block file(s)"), std::string::npos) << log[1];
  for (const char* row : {"r", "s"}) {
    auto cells = (*r)->Get(row);
    ASSERT_TRUE(cells.ok());
    EXPECT_EQ(cells->size(), 1u);
  }
}

// Log damage: the region writes rows 0..n-1 (each synced), then its directory is copied while
// it is open, as kill -9 would leave it; the copy is damaged and opened.
class RegionLogDamageTest : public RegionTest {
 protected:
  static std::string Row(int i) { return absl::StrCat("row", 1000 + i); }
  void WriteRows(int from, int to) {
    for (int i = from; i < to; ++i) ASSERT_TRUE(region_->Put(Row(i), "cf", "q", std::string(50, 'v')).ok());
  }
  // The crash image's newest log segment.
  std::string CrashImage() {
    std::filesystem::remove_all(image_);
    std::filesystem::copy(dir_.path(), image_, std::filesystem::copy_options::recursive);
    std::string newest;
    for (const auto& e : std::filesystem::directory_iterator(image_ + "/wal")) {
      if (e.path().extension() == ".wal" && e.path().string() > newest) newest = e.path().string();
    }
    return newest;
  }
  absl::StatusOr<std::unique_ptr<Region>> OpenImage(WalRecoveryMode mode) {
    RegionOptions o;
    o.wal_recovery = mode;
    o.clock = [this] { return now_.load(); };
    o.log = [this](std::string_view line) { log_.emplace_back(line); };
    return Region::Open(o, RegionDescriptor{"t1,,1", {family_}, "", ""}, image_);
  }
  static std::vector<int> Present(Region* r, int n) {
    std::vector<int> out;
    for (int i = 0; i < n; ++i) {
      auto cells = r->Get(Row(i));
      EXPECT_TRUE(cells.ok()) << cells.status();
      if (cells.ok() && !cells->empty()) out.push_back(i);
    }
    return out;
  }
  static void Flip(const std::string& path, size_t at) {
    std::string bytes = ReadAll(path);
    bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  static std::vector<int> Range(int from, int to) {
    std::vector<int> v;
    for (int i = from; i < to; ++i) v.push_back(i);
    return v;
  }

  std::string image_ = dir_.path() + "-crash";
  std::vector<std::string> log_;
};

TEST_F(RegionLogDamageTest, ATornTailIsCutAndEveryWholeRecordKept) {
  WriteRows(0, 40);
  const std::string seg = CrashImage();
  std::filesystem::resize_file(seg, std::filesystem::file_size(seg) - 7);  // the last write cut short
  auto r = OpenImage(WalRecoveryMode::kStrict);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Present(r->get(), 40), Range(0, 39));
  EXPECT_GT((*r)->GetStats().replay_truncated_bytes, 0u);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_NE(log_[0].find("cut a torn log tail"), std::string::npos) << log_[0];
}

TEST_F(RegionLogDamageTest, ADamagedSyncedRecordStopsTheRegionNamingWhatIsLost) {
  WriteRows(0, 40);
  const std::string seg = CrashImage();
  const size_t size = std::filesystem::file_size(seg);
  Flip(seg, size / 2);
  auto r = OpenImage(WalRecoveryMode::kStrict);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find("WAL segment " + seg), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("region t1,,1's records after seq "), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("wal_recovery=strict"), std::string::npos) << r.status();
  EXPECT_EQ(std::filesystem::file_size(seg), size);  // nothing cut

  // A whole last record with a bad checksum is damage too, not a torn write.
  CrashImage();
  Flip(seg, std::filesystem::file_size(seg) - 3);
  r = OpenImage(WalRecoveryMode::kStrict);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find("before the end of the log are lost"), std::string::npos) << r.status();
}

TEST_F(RegionLogDamageTest, PointInTimeKeepsWhatPrecedesTheDamageAndHealsTheLog) {
  WriteRows(0, 40);
  const std::string seg = CrashImage();
  Flip(seg, std::filesystem::file_size(seg) / 2);
  auto r = OpenImage(WalRecoveryMode::kPointInTime);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int> present = Present(r->get(), 40);
  ASSERT_FALSE(present.empty());
  EXPECT_EQ(present, Range(0, present.back() + 1));  // a prefix
  EXPECT_LT(present.size(), 39u);
  const RegionStats st = (*r)->GetStats();
  EXPECT_EQ(st.replay_skipped_records, 39u - present.size());
  EXPECT_GT(st.replay_skipped_bytes, 0u);
  EXPECT_TRUE(std::filesystem::exists(image_ + "/lost+found/wal/" + std::filesystem::path(seg).filename().string()));
  // New writes take sequence ids above every record of the old log, and the region reopens clean.
  ASSERT_TRUE((*r)->Put("after", "cf", "q", "x").ok());
  ASSERT_TRUE((*r)->Close().ok());
  r->reset();
  log_.clear();
  r = OpenImage(WalRecoveryMode::kStrict);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(Present(r->get(), 40), present);
  EXPECT_EQ((*(*r)->Get("after")).size(), 1u);
}

TEST_F(RegionLogDamageTest, SkipCorruptedKeepsEveryIntactRecord) {
  WriteRows(0, 40);
  const std::string seg = CrashImage();
  Flip(seg, std::filesystem::file_size(seg) / 2);
  auto r = OpenImage(WalRecoveryMode::kSkipCorrupted);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Present(r->get(), 40).size(), 39u);  // all but the damaged record
  ASSERT_FALSE(log_.empty());
  EXPECT_NE(log_[0].find("skipped log damage"), std::string::npos) << log_[0];
}

TEST_F(RegionLogDamageTest, AMissingOrForeignLogSegmentIsDataLoss) {
  WriteRows(0, 10);
  ASSERT_TRUE(region_->Flush().ok());  // rolls: rows 10.. go to a new segment
  WriteRows(10, 20);
  std::string seg = CrashImage();
  std::filesystem::remove(seg);  // the newest segment deleted
  auto r = OpenImage(WalRecoveryMode::kStrict);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find(seg + ": log segment missing"), std::string::npos) << r.status();
  r = OpenImage(WalRecoveryMode::kSkipCorrupted);  // the operator accepts the loss
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Present(r->get(), 20), Range(0, 10));
  r->reset();

  // A segment of garbage where the newest one was: not a torn write.
  seg = CrashImage();
  const std::string garbage = testing::RandomBytes(std::filesystem::file_size(seg));
  std::ofstream(seg, std::ios::binary | std::ios::trunc) << garbage;
  r = OpenImage(WalRecoveryMode::kStrict);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find(seg), std::string::npos) << r.status();
}

TEST_F(RegionTest, WritersBlockInsteadOfGrowingWithoutBound) {
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  RegionOptions o;
  o.clock = [this] { return now_.load(); };
  o.memstore_flush_size = 1 << 20;
  o.memstore_block_multiplier = 2;
  o.background_compaction = false;
  auto r = Region::Open(o, RegionDescriptor{"t1,,1", {family_}, "", ""}, dir_.path());
  ASSERT_TRUE(r.ok());
  region_ = std::move(*r);
  std::string big(1000, 'v');
  for (int i = 0; i < 6000; ++i) {
    ASSERT_TRUE(region_->Put("r" + std::to_string(i), "cf", "q", big, kLatestTimestamp, Durability::kSkipWal).ok());
    ASSERT_LE(region_->GetStats().memstore_bytes, (2u << 20) + (512u << 10));
  }
  EXPECT_GT(region_->GetStats().flushes, 0u);
  EXPECT_EQ(Values("r5999").size(), 1u);
  EXPECT_EQ(Values("r0").size(), 1u);
}

TEST(ManifestFormat, VersionOneIsReadAndOneNeedingANewerReaderIsRefused) {
  Manifest m;
  m.next_file_number = 9;
  m.flushed_seq = 77;
  m.files["cf"] = {8, 5};
  const std::string now = EncodeManifest(m);
  ASSERT_EQ(now.substr(0, 8), "BSLTMANF");
  const std::string body = now.substr(kFormatStampSize, now.size() - kFormatStampSize - 4);
  auto with_crc = [](std::string s) {
    PutFixed32(&s, MaskCrc(Crc32c(s)));
    return s;
  };
  // Version 1: the bare magic, then the same body.
  auto v1 = DecodeManifest(with_crc("BSLTMAN1" + body), "MANIFEST");
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(v1->files, m.files);
  EXPECT_EQ(v1->flushed_seq, 77u);
  // Written by a newer Basalt that old readers cannot read.
  std::string newer;
  AppendFormatStamp(&newer, "BSLTMANF", kManifestVersion + 1, kManifestVersion + 1);
  auto refused = DecodeManifest(with_crc(newer + body), "d/MANIFEST");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("manifest d/MANIFEST"), std::string::npos);
  // A newer version old readers can still read (min_reader_version unchanged) is read: its body
  // is this version's (with the references section of version 3, the nonces of version 4 and
  // the nonces' answers of version 5).
  Manifest with_ref = m;
  with_ref.references[5] = FileReference{"../parent", 3, "", "m"};
  with_ref.nonces[{1, 2}] = 3;
  with_ref.answers[{1, 2}] = {{"cf", MakeFlatKey("r", "n", 9, CellType::kPut), "42"}};
  const std::string latest = EncodeManifest(with_ref);
  const std::string body_latest = latest.substr(kFormatStampSize, latest.size() - kFormatStampSize - 4);
  std::string compatible;
  AppendFormatStamp(&compatible, "BSLTMANF", kManifestVersion + 1, kManifestVersion);
  auto read = DecodeManifest(with_crc(compatible + body_latest), "MANIFEST");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->references, with_ref.references);
  EXPECT_EQ(read->nonces, with_ref.nonces);
  EXPECT_EQ(read->answers, with_ref.answers);
  // An answer for a nonce the manifest does not hold is damage.
  Manifest stray = with_ref;
  stray.answers[{1, 3}] = with_ref.answers[{1, 2}];
  EXPECT_EQ(DecodeManifest(EncodeManifest(stray), "MANIFEST").status().code(), absl::StatusCode::kDataLoss);
  // A flipped stamp byte is damage.
  std::string damaged = now;
  damaged[13] ^= 1;
  EXPECT_EQ(DecodeManifest(damaged, "MANIFEST").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace basalt

namespace basalt {
namespace {

// Nonces (HBase's): a retry of a non-idempotent operation, carrying the nonce of the first
// attempt, is answered from what is stored and not applied again: in the same run, after a
// crash (the nonce is in the log record), after a clean close (in the manifest the flush
// wrote) and after a flush and a crash; not once the nonce has expired.
class RegionNonceTest : public RegionLogDamageTest {
 protected:
  // Adds 1 to row "c", cf:n under `nonce`; true when it was applied, false when it was a retry
  // of an applied one.
  static bool Bump(Region* r, Nonce nonce) {
    ReadSpec spec;
    spec.columns.push_back({"cf", {"n"}});
    bool applied = false;
    absl::Status s = r->MutateRowWith(
        "c", spec,
        [&](const RowResult& current, std::vector<Mutation>* out) {
          if (out == nullptr) return absl::OkStatus();
          int n = current.empty() ? 0 : std::stoi(std::string(current.cells()[0].value));
          Mutation m;
          m.family = "cf";
          m.qualifier = "n";
          m.value = std::to_string(n + 1);
          out->push_back(m);
          applied = true;
          return absl::OkStatus();
        },
        Durability::kSyncWal, nonce);
    EXPECT_TRUE(s.ok()) << s;
    return applied;
  }
  static std::string Count(Region* r) {
    auto cells = r->Get("c");
    return cells.ok() && !cells->empty() ? (*cells)[0].value : "<none>";
  }
  // What a retry under `nonce` is answered with (the cells `fn` is given with `out` null).
  static std::string AnswerToRetry(Region* r, Nonce nonce) {
    ReadSpec spec;
    spec.columns.push_back({"cf", {"n"}});
    std::string answer = "<applied>";
    absl::Status s = r->MutateRowWith(
        "c", spec,
        [&](const RowResult& given, std::vector<Mutation>* out) {
          if (out != nullptr) return absl::InternalError("applied again");
          answer = given.empty() ? "<none>" : std::string(given.cells()[0].value);
          return absl::OkStatus();
        },
        Durability::kSyncWal, nonce);
    EXPECT_TRUE(s.ok()) << s;
    return answer;
  }
};

// The history checker found two Increments answered with one value: a retry of an
// increment applied before was answered with the counter as it was then, after another
// client's increment. A retry is answered with what its first attempt wrote, in the same run,
// after a crash (from the log record), and after a flush and a reopen (from the manifest: the
// region a move opens elsewhere).
TEST_F(RegionNonceTest, ARetryIsAnsweredWithWhatItsFirstAttemptWrote) {
  const Nonce a{9, 1}, b{9, 2};
  ASSERT_TRUE(Bump(region_.get(), a));  // 1
  ASSERT_TRUE(Bump(region_.get(), b));  // 2
  EXPECT_EQ(AnswerToRetry(region_.get(), a), "1");
  EXPECT_EQ(AnswerToRetry(region_.get(), b), "2");
  CrashImage();
  auto r = OpenImage(WalRecoveryMode::kStrict);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(AnswerToRetry(r->get(), a), "1");
  EXPECT_EQ(Count(r->get()), "2");
  ASSERT_TRUE(region_->Flush().ok());
  Reopen();
  EXPECT_EQ(AnswerToRetry(region_.get(), a), "1");
  EXPECT_EQ(AnswerToRetry(region_.get(), b), "2");
}

// A Put's retry (its first attempt applied, its answer lost) is not applied again: applied
// twice around another client's write, it would bury that write (docs/DESIGN.md §6: the history check).
TEST_F(RegionNonceTest, APutsRetryIsNotAppliedAgainAfterAnotherWrite) {
  auto put = [](Region* r, const std::string& v, Nonce nonce) {
    std::vector<RowMutation> batch(1);
    batch[0].row = "c";
    Mutation m;
    m.family = "cf";
    m.qualifier = "n";
    m.value = v;
    batch[0].mutations.push_back(m);
    absl::Status s = r->Mutate(batch, Durability::kSyncWal, nonce);
    EXPECT_TRUE(s.ok()) << s;
  };
  const Nonce first{11, 1};
  put(region_.get(), "mine", first);
  put(region_.get(), "theirs", Nonce{12, 1});
  put(region_.get(), "mine", first);  // the retry
  EXPECT_EQ(Count(region_.get()), "theirs");
  CrashImage();
  auto r = OpenImage(WalRecoveryMode::kStrict);
  ASSERT_TRUE(r.ok()) << r.status();
  put(r->get(), "mine", first);  // a retry that reaches the region after its server died
  EXPECT_EQ(Count(r->get()), "theirs");
}

TEST_F(RegionNonceTest, ARetryIsAppliedOnceAcrossCrashesFlushesAndReopens) {
  const Nonce a{7, 1}, b{7, 2}, c{8, 1};
  EXPECT_TRUE(Bump(region_.get(), a));
  EXPECT_FALSE(Bump(region_.get(), a));  // the retry, same run
  EXPECT_TRUE(Bump(region_.get(), b));
  EXPECT_TRUE(Bump(region_.get(), Nonce{}));  // no nonce: applied each time
  EXPECT_EQ(Count(region_.get()), "3");
  // A crash: the nonces come back from the log records.
  CrashImage();
  {
    auto r = OpenImage(WalRecoveryMode::kStrict);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(Bump(r->get(), a));
    EXPECT_FALSE(Bump(r->get(), b));
    EXPECT_EQ(Count(r->get()), "3");
  }
  // A clean close flushes: the records are gone, the nonces are in the manifest.
  Reopen();
  EXPECT_FALSE(Bump(region_.get(), a));
  EXPECT_TRUE(Bump(region_.get(), c));
  ASSERT_TRUE(region_->Flush().ok());
  CrashImage();
  {
    auto r = OpenImage(WalRecoveryMode::kStrict);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(Bump(r->get(), c));
    EXPECT_EQ(Count(r->get()), "4");
  }
  // Past the expiry a nonce is forgotten (a client's retries end long before).
  now_ += RegionOptions().nonce_expiry_ms + 1;
  EXPECT_TRUE(Bump(region_.get(), a));
  ASSERT_TRUE(region_->Flush().ok());
  Reopen();
  EXPECT_EQ(Count(region_.get()), "5");
}

// A full disk met by a flush after it froze the memstores, with writes arriving meanwhile: once
// the region heals, that flush is finished as it was (its edits, its sequence id), and the
// edits written since stay in the log until a flush of their own. (Found by
// DiskFullTest.AFailedFlushLeavesNoPartialFileAndHeals, about one run in 80: the healing flush
// wrote the old frozen memstore under the newest sequence id and deleted the log segment that
// held the later edits, which were then only in memory; a close with no write since found
// nothing to flush, and the reopened region had lost them.)
class FullOnBlockFilesEnv : public EnvWrapper {
 public:
  FullOnBlockFilesEnv() : EnvWrapper(Env::Default()) {}
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    if (p.find(".blk") != std::string::npos && full.exchange(false)) {
      if (meanwhile) meanwhile();  // the flush has frozen the memstores and rolled the log
      return absl::ResourceExhaustedError(absl::StrCat("write ", p, ": No space left on device (injected)"));
    }
    return EnvWrapper::NewWritableFile(p);
  }
  std::atomic<bool> full{false};
  std::function<void()> meanwhile;
};

TEST(RegionFullDiskTest, AFlushCutShortAfterFreezingIsFinishedAsItWasAndLaterEditsStayLogged) {
  testing::TempDir dir;
  FullOnBlockFilesEnv env;
  FamilyOptions family;
  family.name = "cf";
  RegionOptions o;
  o.env = &env;
  o.background_compaction = false;
  absl::Mutex mu;
  std::vector<std::string> lines;
  o.log = [&](std::string_view line) {
    absl::MutexLock l(&mu);
    lines.emplace_back(line);
  };
  const RegionDescriptor d{"t1,,1", {family}, "", ""};
  auto r = Region::Open(o, d, dir.path());
  ASSERT_TRUE(r.ok()) << r.status();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*r)->Put(absl::StrCat("a", i), "cf", "q", "before").ok());
  env.meanwhile = [&] {
    for (int i = 0; i < 10; ++i) ASSERT_TRUE((*r)->Put(absl::StrCat("b", i), "cf", "q", "meanwhile").ok());
  };
  env.full = true;
  absl::Status flushed = (*r)->Flush();
  EXPECT_EQ(flushed.code(), absl::StatusCode::kResourceExhausted) << flushed;
  // Space is back: the region heals on its own (about once a second) and flushes; no write
  // follows, so the close has nothing new to flush.
  bool healed = false;
  for (int i = 0; i < 500 && !healed; ++i) {
    {
      absl::MutexLock l(&mu);
      for (const std::string& line : lines) healed = healed || line.find("healed") != std::string::npos;
    }
    if (!healed) absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(healed);
  ASSERT_TRUE((*r)->Close().ok());
  r->reset();
  r = Region::Open(o, d, dir.path());
  ASSERT_TRUE(r.ok()) << r.status();
  for (const char* prefix : {"a", "b"}) {
    for (int i = 0; i < 10; ++i) {
      auto cells = (*r)->Get(absl::StrCat(prefix, i));
      ASSERT_TRUE(cells.ok()) << cells.status();
      EXPECT_EQ(cells->size(), 1u) << prefix << i << " was acknowledged and is lost";
    }
  }
}

// The same through a region: the row read stays whole after the region is closed and freed
// (under ASan a view into the freed store fails this test).
TEST_F(RegionTest, ARowReadOutlivesItsRegion) {
  ASSERT_TRUE(region_->Put("r", "cf", "q", "v", 5).ok());
  RowResult row;
  ASSERT_TRUE(region_->Get("r", ReadSpec{}, &row).ok());
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row.cells()[0].family, "cf");
  EXPECT_EQ(row.cells()[0].qualifier, "q");
  EXPECT_EQ(row.cells()[0].value, "v");
  Open();  // for the fixture's teardown
}

// A Get's row is encoded after the region is let go (a split can free it meanwhile): the row's
// cells must not point into the region, not even at its stores' names.
TEST(RowResultTest, ItsCellsOwnEveryByteTheFamilyNamesToo) {
  std::string cf = "cf", other = "f2";
  RowResult row;
  row.Reset("r1");
  row.Add(cf, "a", 2, CellType::kPut, "v1");
  row.Add(cf, "b", 1, CellType::kPut, "v2");
  row.Add(other, "c", 1, CellType::kPut, "v3");
  cf.assign("XX");  // the names' storage changes, as a freed store's would
  other.assign("YY");
  ASSERT_EQ(row.size(), 3u);
  EXPECT_EQ(row.cells()[0].family, "cf");
  EXPECT_EQ(row.cells()[1].family, "cf");
  EXPECT_EQ(row.cells()[2].family, "f2");
  EXPECT_EQ(row.cells()[1].qualifier, "b");
  EXPECT_EQ(row.cells()[2].value, "v3");
  // The next row starts afresh, even from a name at the same address.
  row.Reset("r2");
  row.Add(cf, "d", 1, CellType::kPut, "v4");
  EXPECT_EQ(row.cells()[0].family, "XX");
}

}  // namespace
}  // namespace basalt
