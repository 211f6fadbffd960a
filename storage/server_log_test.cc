// The log regions share (storage/server_log.h): which segments go when, max_logs, the split of a
// previous run's log at open, and regions writing to it, on real files.
#include "storage/server_log.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "gtest/gtest.h"
#include "storage/internal/wal.h"
#include "storage/log_tail.h"
#include "storage/region.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

namespace fs = std::filesystem;

std::vector<uint64_t> Segments(const std::string& dir) {
  std::vector<uint64_t> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    uint64_t n;
    if (ParseWalSegmentName(e.path().filename().string(), &n)) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

WalRecord Rec(const std::string& region, uint64_t seq) {
  WalRecord r;
  r.region = region;
  r.seq = seq;
  r.edits.push_back(WalEdit{"f", std::string(16, 'k'), "value"});  // a flat key is at least 14 bytes
  return r;
}

// Waits (bounded) for cond; true once it holds.
bool Eventually(const std::function<bool()>& cond) {
  for (int i = 0; i < 1000; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

TEST(SharedWal, ASegmentGoesOnlyOnceEveryRegionWithRecordsInItFlushedPastThem) {
  testing::TempDir dir;
  Wal::Options o;
  o.dir = dir.path();
  o.async_sync_interval_ms = 0;
  auto wal = Wal::Open(o);
  ASSERT_TRUE(wal.ok()) << wal.status();
  Wal& w = **wal;
  ASSERT_TRUE(w.Append(Rec("a", 1), Durability::kSyncWal).ok());
  ASSERT_TRUE(w.Append(Rec("b", 1), Durability::kSyncWal).ok());
  ASSERT_TRUE(w.Roll().ok());  // segment 1: a@1, b@1
  ASSERT_TRUE(w.Append(Rec("a", 2), Durability::kSyncWal).ok());
  ASSERT_TRUE(w.Roll().ok());  // segment 2: a@2; 3 is current
  EXPECT_EQ(Segments(dir.path()), (std::vector<uint64_t>{1, 2, 3}));

  ASSERT_TRUE(w.MarkFlushed("a", 2).ok());  // b still needs segment 1, which keeps 2 too
  EXPECT_EQ(Segments(dir.path()), (std::vector<uint64_t>{1, 2, 3}));
  ASSERT_TRUE(w.MarkFlushed("b", 1).ok());
  EXPECT_EQ(Segments(dir.path()), (std::vector<uint64_t>{3}));  // never the current one
  ASSERT_TRUE(w.Append(Rec("c", 7), Durability::kSyncWal).ok());
  ASSERT_TRUE(w.Roll().ok());
  ASSERT_TRUE(w.ForgetRegion("c").ok());  // a dropped table's region
  EXPECT_EQ(Segments(dir.path()), (std::vector<uint64_t>{4}));
  EXPECT_EQ(w.GetStats().deleted_segments, 3u);

  // What a region that closed without flushing finds when it opens again.
  ASSERT_TRUE(w.Append(Rec("a", 3), Durability::kAsyncWal).ok());
  ASSERT_TRUE(w.Append(Rec("b", 2), Durability::kAsyncWal).ok());
  ASSERT_TRUE(w.Append(Rec("a", 4), Durability::kAsyncWal).ok());
  std::vector<uint64_t> seen;
  absl::Status replayed = w.ReplayRegion("a", 3, [&](const WalRecord& r) {
    seen.push_back(r.seq);
    return absl::OkStatus();
  });
  ASSERT_TRUE(replayed.ok()) << replayed.ToString();
  EXPECT_EQ(seen, (std::vector<uint64_t>{4}));
}

TEST(SharedWal, PastMaxLogsTheRegionsHoldingTheOldestSegmentAreAskedToFlush) {
  testing::TempDir dir;
  Wal::Options o;
  o.dir = dir.path();
  o.async_sync_interval_ms = 10;
  o.max_logs = 2;
  auto wal = Wal::Open(o);
  ASSERT_TRUE(wal.ok()) << wal.status();
  Wal& w = **wal;
  std::atomic<int> asked_a{0}, asked_b{0};
  w.AttachRegion("a", [&] { ++asked_a; });
  w.AttachRegion("b", [&] { ++asked_b; });
  ASSERT_TRUE(w.Append(Rec("a", 1), Durability::kSyncWal).ok());
  ASSERT_TRUE(w.Roll().ok());
  ASSERT_TRUE(w.Append(Rec("b", 1), Durability::kSyncWal).ok());
  ASSERT_TRUE(w.Roll().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(asked_a + asked_b, 0);  // two rolled segments: at the limit
  ASSERT_TRUE(w.Append(Rec("b", 2), Durability::kSyncWal).ok());
  ASSERT_TRUE(w.Roll().ok());
  EXPECT_TRUE(Eventually([&] { return asked_a > 0; }));  // a holds the oldest
  EXPECT_EQ(asked_b, 0);
  ASSERT_TRUE(w.MarkFlushed("a", 1).ok());
  ASSERT_TRUE(w.Roll().ok());
  EXPECT_TRUE(Eventually([&] { return asked_b > 0; }));  // now b holds the oldest
  EXPECT_GE(w.GetStats().forced_flushes, 2u);
  w.DetachRegion("a");
  w.DetachRegion("b");
}

// Regions on one ServerLog, and a crash image of their files (copied while they are open, as
// kill -9 leaves them).
class ServerLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    family_.name = "f";
    root_ = dir_.path() + "/live";
    image_ = dir_.path() + "/image";
  }
  ServerLog::Options LogOptions(const std::string& root) {
    ServerLog::Options o;
    o.dir = root + "/wal";
    o.regions = {{"t,,1", root + "/r1"}, {"t,m,2", root + "/r2"}};
    o.tables = {"t"};
    o.table_of = [](std::string_view r) { return std::string(r.substr(0, r.find(','))); };
    o.lost_found = root + "/lost+found";
    o.log = [this](std::string_view line) { said_.emplace_back(line); };
    return o;
  }
  RegionDescriptor Desc(const std::string& name, const std::string& start, const std::string& end) {
    return RegionDescriptor{name, {family_}, start, end};
  }
  absl::StatusOr<std::unique_ptr<Region>> OpenRegion(ServerLog* log, const std::string& root,
                                                     const std::string& name, const std::string& start,
                                                     const std::string& end, const std::string& subdir) {
    RegionOptions ro;
    ro.server_log = log;
    ro.log = [this](std::string_view line) { said_.emplace_back(line); };
    return Region::Open(ro, Desc(name, start, end), root + "/" + subdir);
  }
  // Writes `n` rows to each of two regions and one of a table that is then gone, flushes
  // nothing, and copies the files aside while everything is open.
  void WriteAndCrash(int n) {
    auto log = ServerLog::Open(LogOptions(root_));
    ASSERT_TRUE(log.ok()) << log.status();
    auto r1 = OpenRegion(log->get(), root_, "t,,1", "", "m", "r1");
    auto r2 = OpenRegion(log->get(), root_, "t,m,2", "m", "", "r2");
    auto gone = OpenRegion(log->get(), root_, "gone,,3", "", "", "r3");
    ASSERT_TRUE(r1.ok() && r2.ok() && gone.ok());
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE((*r1)->Put(absl::StrCat("a", 1000 + i), "f", "q", "v1").ok());
      ASSERT_TRUE((*r2)->Put(absl::StrCat("p", 1000 + i), "f", "q", "v2").ok());
    }
    ASSERT_TRUE((*gone)->Put("x", "f", "q", "v").ok());
    fs::copy(root_, image_, fs::copy_options::recursive);
    EXPECT_EQ((*log)->GetStats().records, 2u * n + 1);
    EXPECT_FALSE(fs::exists(root_ + "/r1/wal"));  // one log for all of them
  }
  int CountRows(Region* r, char prefix, int n) {
    int found = 0;
    for (int i = 0; i < n; ++i) {
      auto cells = r->Get(absl::StrCat(std::string(1, prefix), 1000 + i));
      found += cells.ok() && cells->size() == 1;
    }
    return found;
  }

  testing::TempDir dir_;
  FamilyOptions family_;
  std::string root_, image_;
  std::vector<std::string> said_;
};

TEST_F(ServerLogTest, OpenSplitsTheOldLogIntoEachRegionsRecoveredEditsAndDropsGoneTables) {
  WriteAndCrash(200);
  const std::vector<uint64_t> old = Segments(image_ + "/wal");
  ASSERT_FALSE(old.empty());
  auto log = ServerLog::Open(LogOptions(image_));
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->split_error().ok()) << (*log)->split_error();
  const ServerLog::SplitStats st = (*log)->split_stats();
  EXPECT_EQ(st.records, 400u);
  EXPECT_EQ(st.regions, 2u);
  EXPECT_EQ(st.dropped_records, 1u);
  for (uint64_t n : old) EXPECT_FALSE(fs::exists(WalSegmentPath(image_ + "/wal", n))) << n;
  EXPECT_TRUE(fs::exists(image_ + "/r1/" + kRecoveredEditsDir));

  auto r1 = OpenRegion(log->get(), image_, "t,,1", "", "m", "r1");
  auto r2 = OpenRegion(log->get(), image_, "t,m,2", "m", "", "r2");
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(CountRows(r1->get(), 'a', 200), 200);
  EXPECT_EQ(CountRows(r2->get(), 'p', 200), 200);
  // Replayed, flushed, and the recovered edits gone.
  EXPECT_FALSE(fs::exists(image_ + "/r1/" + kRecoveredEditsDir));
  EXPECT_EQ((*r1)->GetStats().replayed_records, 200u);
  EXPECT_EQ((*r1)->GetStats().flushes, 1u);
  // Writes go on, numbered after what was replayed.
  ASSERT_TRUE((*r1)->Put("a9999", "f", "q", "new").ok());
  EXPECT_GT((*r1)->GetStats().last_seq, 200u);
}

// A reader of the log (a replication source) that had not read everything when the server
// died: its hold, carried over the restart, keeps the old segments it still needs, moved aside
// where the split never reads them again, and it reads on from its place into the new run's log.
TEST_F(ServerLogTest, AReadersHoldKeepsTheOldSegmentsItNeedsOverARestartAndTheyGoAsItMovesOn) {
  WriteAndCrash(100);
  const std::vector<uint64_t> old = Segments(image_ + "/wal");
  ASSERT_FALSE(old.empty());
  ServerLog::Options o = LogOptions(image_);
  o.holds = {{"peer", old.front()}};
  auto log = ServerLog::Open(o);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->split_error().ok()) << (*log)->split_error();
  EXPECT_EQ((*log)->split_stats().records, 200u);  // the regions get their edits as ever
  for (uint64_t n : old) {
    EXPECT_FALSE(fs::exists(WalSegmentPath(image_ + "/wal", n))) << n;
    EXPECT_TRUE(fs::exists(WalSegmentPath(HeldLogDir(image_ + "/wal"), n))) << n;
  }
  auto r1 = OpenRegion(log->get(), image_, "t,,1", "", "m", "r1");
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_TRUE((*r1)->Put("a9999", "f", "q", "new").ok());
  // From its place: every old record (the gone table's too: the reader filters), then the new one.
  uint64_t records = 0;
  std::string last_row;
  WalPosition reached;
  absl::Status read = ReadLogFrom(
      Env::Default(), image_ + "/wal", WalPosition{old.front(), 0}, (*log)->DurableEnd(), UINT64_MAX,
      [&](const WalRecord& r, const WalPosition&) {
        ++records;
        last_row = std::string(ParseFlatKeyUnchecked(r.edits.at(0).key).row);
        return absl::OkStatus();
      },
      &reached);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(records, 201u + 1u);
  EXPECT_EQ(last_row, "a9999");
  // Moved past them: the held segments go (a restart without holds keeps none: the test above).
  (*log)->Hold("peer", reached.segment);
  for (uint64_t n : old) EXPECT_FALSE(fs::exists(WalSegmentPath(HeldLogDir(image_ + "/wal"), n))) << n;
}

TEST_F(ServerLogTest, ASplitCutShortByACrashIsRunAgainAndNothingIsAppliedTwice) {
  WriteAndCrash(50);
  // A first split wrote the recovered edits, and the crash came before the old segments went.
  const std::string twice = dir_.path() + "/twice";
  fs::copy(image_, twice, fs::copy_options::recursive);
  {
    auto log = ServerLog::Open(LogOptions(image_));
    ASSERT_TRUE(log.ok());
  }
  fs::copy(image_ + "/r1/" + kRecoveredEditsDir, twice + "/r1/" + kRecoveredEditsDir);
  auto log = ServerLog::Open(LogOptions(twice));
  ASSERT_TRUE(log.ok()) << log.status();
  auto r1 = OpenRegion(log->get(), twice, "t,,1", "", "m", "r1");
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ((*r1)->GetStats().replayed_records, 50u);
  EXPECT_EQ(CountRows(r1->get(), 'a', 50), 50);
}

TEST_F(ServerLogTest, ARecordOfAnUnknownRegionOfALiveTableKeepsTheOldLogAndThatTableClosed) {
  WriteAndCrash(20);
  ServerLog::Options o = LogOptions(image_);
  o.regions.erase("t,m,2");  // meta lost the row of one of t's regions
  auto log = ServerLog::Open(o);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ((*log)->split_error().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE((*log)->split_error().message().find("20 of table 't'"), std::string::npos) << (*log)->split_error();
  EXPECT_FALSE(Segments(image_ + "/wal").empty());
  auto r1 = OpenRegion(log->get(), image_, "t,,1", "", "m", "r1");
  EXPECT_EQ(r1.status().code(), absl::StatusCode::kFailedPrecondition) << r1.status();
  EXPECT_NE(r1.status().message().find("may have edits in the server log"), std::string::npos) << r1.status();
  EXPECT_TRUE((*log)->MayOpen("other,,9").ok());  // another table's regions are not held

  // The operator restores the region's record; the split runs again.
  ASSERT_TRUE((*log)->RetrySplit(LogOptions(image_).regions, {"t"}).ok());
  auto r2 = OpenRegion(log->get(), image_, "t,m,2", "m", "", "r2");
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(CountRows(r2->get(), 'p', 20), 20);
}

TEST_F(ServerLogTest, DamageInTheOldLogKeepsEveryRegionClosedInStrictModeAndPointInTimeOpensThem) {
  WriteAndCrash(300);
  std::string seg;
  for (uint64_t n : Segments(image_ + "/wal")) {
    if (fs::file_size(WalSegmentPath(image_ + "/wal", n)) > 1000) seg = WalSegmentPath(image_ + "/wal", n);
  }
  ASSERT_FALSE(seg.empty());
  {
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(seg) / 2));
    f.put('\x5a');
  }
  const std::string copy = dir_.path() + "/copy";
  fs::copy(image_, copy, fs::copy_options::recursive);
  {
    auto log = ServerLog::Open(LogOptions(image_));
    ASSERT_TRUE(log.ok()) << log.status();
    EXPECT_EQ((*log)->split_error().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE((*log)->split_error().message().find(seg), std::string::npos) << (*log)->split_error();
    EXPECT_FALSE((*log)->MayOpen("t,,1").ok());
    EXPECT_FALSE((*log)->MayOpen("t,m,2").ok());
    EXPECT_TRUE((*log)->MayOpen("t,z,4").ok());  // a region made since
    EXPECT_TRUE(fs::exists(seg));
  }
  ServerLog::Options o = LogOptions(copy);
  o.recovery = WalRecoveryMode::kPointInTime;
  auto log = ServerLog::Open(o);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->split_error().ok()) << (*log)->split_error();
  EXPECT_EQ((*log)->split_stats().damage.size(), 1u);
  auto r1 = OpenRegion(log->get(), copy, "t,,1", "", "m", "r1");
  auto r2 = OpenRegion(log->get(), copy, "t,m,2", "m", "", "r2");
  ASSERT_TRUE(r1.ok() && r2.ok());
  const int found = CountRows(r1->get(), 'a', 300) + CountRows(r2->get(), 'p', 300);
  EXPECT_GT(found, 100);
  EXPECT_LT(found, 600);
  EXPECT_TRUE(fs::exists(copy + "/lost+found"));
}

// A file system that refuses new block files while `fail` is set: a flush fails, the region
// fails, and it closes without flushing.
class NoBlockFilesEnv : public EnvWrapper {
 public:
  NoBlockFilesEnv() : EnvWrapper(Env::Default()) {}
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& p) override {
    if (fail && p.find(".blk") != std::string::npos) return absl::InternalError("injected: no block files");
    return EnvWrapper::NewWritableFile(p);
  }
  std::atomic<bool> fail{false};
};

TEST_F(ServerLogTest, ARegionThatClosedWithoutFlushingFindsItsEditsInTheLiveLogWhenItOpensAgain) {
  NoBlockFilesEnv env;
  ServerLog::Options lo = LogOptions(root_);
  lo.env = &env;
  auto log = ServerLog::Open(lo);
  ASSERT_TRUE(log.ok()) << log.status();
  RegionOptions ro;
  ro.env = &env;
  ro.server_log = log->get();
  {
    auto r = Region::Open(ro, Desc("t,,1", "", ""), root_ + "/r1");
    ASSERT_TRUE(r.ok()) << r.status();
    for (int i = 0; i < 30; ++i) ASSERT_TRUE((*r)->Put(absl::StrCat("a", 1000 + i), "f", "q", "v").ok());
    env.fail = true;
    EXPECT_FALSE((*r)->Flush().ok());
    EXPECT_FALSE((*r)->Close().ok());  // failed: nothing flushed
  }
  env.fail = false;
  auto r = Region::Open(ro, Desc("t,,1", "", ""), root_ + "/r1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(CountRows(r->get(), 'a', 30), 30);
  EXPECT_EQ((*r)->GetStats().replayed_records, 30u);
}

TEST_F(ServerLogTest, PastMaxLogsARegionWithOneOldEditIsFlushedSoTheLogStaysBounded) {
  ServerLog::Options lo = LogOptions(root_);
  lo.roll_size = 64 << 10;
  lo.max_logs = 3;
  auto log = ServerLog::Open(lo);
  ASSERT_TRUE(log.ok()) << log.status();
  auto quiet = OpenRegion(log->get(), root_, "t,,1", "", "m", "r1");
  auto busy = OpenRegion(log->get(), root_, "t,m,2", "m", "", "r2");
  ASSERT_TRUE(quiet.ok() && busy.ok());
  ASSERT_TRUE((*quiet)->Put("a", "f", "q", "one edit, then silence").ok());
  const std::string value(1000, 'x');
  for (int i = 0; i < 1500; ++i) ASSERT_TRUE((*busy)->Put(absl::StrCat("p", i), "f", "q", value).ok());
  // ~1.5 MB through 64 KiB segments: without forced flushes ~23 segments would be live.
  EXPECT_TRUE(Eventually([&] { return (*quiet)->GetStats().flushes >= 1; }));
  EXPECT_TRUE(Eventually([&] { return (*log)->GetStats().live_segments <= 6; }))
      << (*log)->GetStats().live_segments;
  EXPECT_GE((*log)->GetStats().forced_flushes, 1u);
  EXPECT_EQ((*quiet)->Get("a")->size(), 1u);
}

}  // namespace
}  // namespace basalt
