// The catalogue's snapshots (docs/DESIGN.md §16): a table's regions named again under
// data_dir/snapshots/<name>/, read back after the table changed or went, listed with the bytes
// only each holds, deleted, and cut short by a crash.
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "gtest/gtest.h"
#include "src/catalog/catalog.h"
#include "src/catalog/test_catalog.h"
#include "src/schema/table_errors.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

class CatalogSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog_ = OpenManager(dir_.path());
    ASSERT_NE(catalog_, nullptr);
    TableSpec t;
    t.name = "t1";
    FamilyOptions f;
    f.name = "f";
    t.families.push_back(f);
    ASSERT_TRUE(catalog_->Create(t, {"m"}).ok());
  }
  void Put(const std::string& row, const std::string& value) {
    absl::StatusOr<std::shared_ptr<Table>> t = catalog_->Find("t1");
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE((*t)->RegionFor(row)->Put(row, "f", "q", value).ok());
  }
  // Every row of the snapshot, read from its region directories as regions of their own.
  std::map<std::string, std::string> SnapshotRows(const SnapshotInfo& s) {
    std::map<std::string, std::string> rows;
    for (const SnapshotInfo::Region& r : s.regions) {
      RegionOptions o;
      absl::StatusOr<std::unique_ptr<Region>> region = Region::Open(
          o, DescriptorOf(s.table, r.info), absl::StrCat(dir_.path(), "/snapshots/", s.name, "/", r.info.EncodedName()));
      EXPECT_TRUE(region.ok()) << region.status();
      if (!region.ok()) return rows;
      absl::StatusOr<std::unique_ptr<RegionScanner>> scan = (*region)->Scan(ScanSpec{});
      EXPECT_TRUE(scan.ok()) << scan.status();
      RowResult row;
      while (scan.ok() && (*scan)->Next(&row).value_or(false)) rows[std::string(row.row())] = std::string(row.cells()[0].value);
      EXPECT_TRUE((*region)->Close().ok());
    }
    return rows;
  }

  // Every row of an open table: row -> the newest value of f:q.
  std::map<std::string, std::string> TableRows(const std::string& table) {
    std::map<std::string, std::string> rows;
    absl::StatusOr<std::shared_ptr<Table>> t = catalog_->Find(table);
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return rows;
    for (const HostedRegion& h : (*t)->regions()) {
      absl::StatusOr<std::unique_ptr<RegionScanner>> scan = h.region->Scan(ScanSpec{});
      EXPECT_TRUE(scan.ok()) << scan.status();
      RowResult row;
      while (scan.ok() && (*scan)->Next(&row).value_or(false)) rows[std::string(row.row())] = std::string(row.cells()[0].value);
    }
    return rows;
  }
  void PutIn(const std::string& table, const std::string& row, const std::string& value) {
    absl::StatusOr<std::shared_ptr<Table>> t = catalog_->Find(table);
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE((*t)->RegionFor(row)->Put(row, "f", "q", value).ok());
  }
  void Reopen() {
    ASSERT_TRUE(catalog_->CloseAll().ok());
    catalog_.reset();
    catalog_ = OpenManager(dir_.path());
    ASSERT_NE(catalog_, nullptr);
  }

  testing::TempDir dir_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogSnapshotTest, ASnapshotKeepsTheRowsWrittenBeforeItThroughATruncateAndADrop) {
  std::map<std::string, std::string> before;
  for (int i = 0; i < 50; ++i) {
    const std::string row = absl::StrCat(i % 2 ? "a" : "x", i);
    Put(row, "v1");
    before[row] = "v1";
  }
  ASSERT_TRUE(catalog_->Flush("t1").ok());
  Put("a99", "memstore only");
  before["a99"] = "memstore only";
  absl::StatusOr<SnapshotInfo> s = catalog_->Snapshot("t1", "s1", {.ttl_s = 3600, .owner = "", .grants = {}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->regions.size(), 2u);
  EXPECT_EQ(s->ttl_s, 3600);
  // After it: an overwrite, a major compaction, then the table truncated (dropped and made again).
  Put("a1", "after");
  ASSERT_TRUE(catalog_->MajorCompact("t1").ok());
  ASSERT_TRUE(catalog_->Disable("t1").ok());
  const TableSpec spec = catalog_->Describe("t1").value();
  ASSERT_TRUE(catalog_->Drop("t1").ok());
  ASSERT_TRUE(catalog_->Create(spec, {"m"}).ok());
  EXPECT_EQ(SnapshotRows(*s), before);
  // Listed, with every byte its own now (the table that shared them is gone).
  absl::StatusOr<std::vector<SnapshotListing>> all = catalog_->ListSnapshots();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].info.name, "s1");
  EXPECT_EQ((*all)[0].info.table.name, "t1");
  EXPECT_GT((*all)[0].bytes, 0u);
  EXPECT_EQ((*all)[0].only_bytes, (*all)[0].bytes);
}

TEST_F(CatalogSnapshotTest, ItsBytesAreSharedWithTheTableUntilTheTableRewritesThem) {
  Put("a", "1");
  ASSERT_TRUE(catalog_->Snapshot("t1", "s1", {}).ok());
  absl::StatusOr<std::vector<SnapshotListing>> all = catalog_->ListSnapshots();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_GT((*all)[0].bytes, 0u);
  EXPECT_EQ((*all)[0].only_bytes, 0u);  // the table names every file too
  Put("b", "2");
  ASSERT_TRUE(catalog_->MajorCompact("t1").ok());  // the table's files are new ones now
  all = catalog_->ListSnapshots();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[0].only_bytes, (*all)[0].bytes);
  // Deleted: its files go with it.
  ASSERT_TRUE(catalog_->DeleteSnapshot("s1").ok());
  EXPECT_TRUE(catalog_->ListSnapshots().value().empty());
  EXPECT_FALSE(Env::Default()->FileExists(absl::StrCat(dir_.path(), "/snapshots/s1")));
  EXPECT_EQ(catalog_->DeleteSnapshot("s1").code(), absl::StatusCode::kNotFound);
}

TEST_F(CatalogSnapshotTest, RefusalsLeaveNothingBehind) {
  EXPECT_EQ(catalog_->Snapshot("t1", ".hidden", {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->Snapshot("t1", "s", {.ttl_s = -1, .owner = "", .grants = {}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->Snapshot("nope", "s", {}).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(catalog_->Snapshot("t1", "s", {}).ok());
  EXPECT_EQ(catalog_->Snapshot("t1", "s", {}).status().code(), absl::StatusCode::kAlreadyExists);
}

// HBase's offline snapshot: a disabled table's closed regions, every write in them flushed.
TEST_F(CatalogSnapshotTest, ADisabledTablesSnapshotHoldsEveryWriteBeforeItWasDisabled) {
  for (int i = 0; i < 20; ++i) Put(absl::StrCat(i % 2 ? "a" : "x", i), "v");  // in memstores only
  const std::map<std::string, std::string> before = TableRows("t1");
  ASSERT_TRUE(catalog_->Disable("t1").ok());
  absl::StatusOr<SnapshotInfo> s = catalog_->Snapshot("t1", "offline", {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->regions.size(), 2u);
  EXPECT_EQ(SnapshotRows(*s), before);
  ASSERT_TRUE(catalog_->CloneSnapshot("offline", "t2").ok());
  EXPECT_EQ(TableRows("t2"), before);
}

TEST_F(CatalogSnapshotTest, ASplitsDaughterStillReadingItsParentIsRefusedUntilCompacted) {
  // (Background compactions off: a daughter then keeps its references until asked.)
  ASSERT_TRUE(catalog_->CloseAll().ok());
  catalog_.reset();
  Catalog::Options o;
  o.data_dir = dir_.path();
  o.region.background_compaction = false;
  o.log = [](std::string_view) {};
  absl::StatusOr<std::unique_ptr<Catalog>> opened = Catalog::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  catalog_ = *std::move(opened);
  for (int i = 0; i < 20; ++i) Put(absl::StrCat("b", i), "v");
  ASSERT_TRUE(catalog_->Flush("t1").ok());
  ASSERT_TRUE(catalog_->Split("t1", "b10").ok());
  const absl::Status refused = catalog_->Snapshot("t1", "s3", {}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("major_compact"), std::string::npos) << refused;
  EXPECT_FALSE(Env::Default()->FileExists(absl::StrCat(dir_.path(), "/snapshots/s3")));
  ASSERT_TRUE(catalog_->MajorCompact("t1").ok());
  absl::StatusOr<SnapshotInfo> after_split = catalog_->Snapshot("t1", "s3", {});
  ASSERT_TRUE(after_split.ok()) << after_split.status();
  EXPECT_EQ(after_split->regions.size(), 3u);
  EXPECT_EQ(SnapshotRows(*after_split).size(), 20u);
}

TEST_F(CatalogSnapshotTest, ASnapshotACrashCutShortIsRemovedAtStartUp) {
  Put("a", "1");
  ASSERT_TRUE(catalog_->Snapshot("t1", "kept", {}).ok());
  ASSERT_TRUE(catalog_->Snapshot("t1", "cut", {}).ok());
  // As a crash before its manifest leaves it: the region directories, no SNAPSHOT.
  ASSERT_TRUE(Env::Default()->DeleteFile(absl::StrCat(dir_.path(), "/snapshots/cut/SNAPSHOT")).ok());
  ASSERT_TRUE(catalog_->CloseAll().ok());
  catalog_.reset();
  catalog_ = OpenManager(dir_.path());
  ASSERT_NE(catalog_, nullptr);
  EXPECT_FALSE(Env::Default()->FileExists(absl::StrCat(dir_.path(), "/snapshots/cut")));
  absl::StatusOr<std::vector<SnapshotListing>> all = catalog_->ListSnapshots();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].info.name, "kept");
  EXPECT_EQ(SnapshotRows((*all)[0].info).size(), 1u);
}

TEST_F(CatalogSnapshotTest, ASnapshotPastItsTtlIsDeletedAndOneWithoutNever) {
  Put("a", "1");
  absl::StatusOr<SnapshotInfo> brief = catalog_->Snapshot("t1", "brief", {.ttl_s = 60, .owner = "", .grants = {}});
  ASSERT_TRUE(brief.ok()) << brief.status();
  ASSERT_TRUE(catalog_->Snapshot("t1", "kept", {}).ok());
  const absl::Time taken = absl::FromUnixMillis(brief->created_ms);
  // Not yet: a second short of its minute.
  EXPECT_EQ(catalog_->ExpireSnapshots(taken + absl::Seconds(59)).value_or(-1), 0);
  EXPECT_EQ(catalog_->ListSnapshots().value().size(), 2u);
  // Past it: gone, files and all; the one without a TTL stays, even a century on.
  EXPECT_EQ(catalog_->ExpireSnapshots(taken + absl::Seconds(61)).value_or(-1), 1);
  EXPECT_FALSE(Env::Default()->FileExists(absl::StrCat(dir_.path(), "/snapshots/brief")));
  EXPECT_EQ(catalog_->ExpireSnapshots(taken + absl::Hours(24 * 365 * 100)).value_or(-1), 0);
  absl::StatusOr<std::vector<SnapshotListing>> all = catalog_->ListSnapshots();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].info.name, "kept");
}

TEST_F(CatalogSnapshotTest, ACloneHoldsTheSnapshotsRowsAndItsWritesNeverReachTheSnapshot) {
  for (int i = 0; i < 40; ++i) Put(absl::StrCat(i % 2 ? "a" : "x", i), "v1");
  ASSERT_TRUE(catalog_->Snapshot("t1", "s1", {}).ok());
  const std::map<std::string, std::string> at_snapshot = TableRows("t1");
  ASSERT_EQ(at_snapshot.size(), 40u);
  Put("a1", "after");
  Put("b0", "after");
  ASSERT_TRUE(catalog_->CloneSnapshot("s1", "t2").ok());
  EXPECT_EQ(TableRows("t2"), at_snapshot);
  EXPECT_EQ(catalog_->Find("t2").value()->regions().size(), 2u);  // the snapshot's boundaries
  // The clone writes and compacts; the snapshot and a second clone of it see none of that.
  PutIn("t2", "a3", "clone");
  ASSERT_TRUE(catalog_->MajorCompact("t2").ok());
  ASSERT_TRUE(catalog_->CloneSnapshot("s1", "t3").ok());
  EXPECT_EQ(TableRows("t3"), at_snapshot);
  // Refusals change nothing.
  EXPECT_EQ(catalog_->CloneSnapshot("s1", "t2").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(catalog_->CloneSnapshot("nope", "t9").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog_->CloneSnapshot("s1", "bad name!").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(catalog_->Find("t9").ok());
  // The snapshot deleted, the clones keep their rows, through a restart.
  ASSERT_TRUE(catalog_->DeleteSnapshot("s1").ok());
  Reopen();
  std::map<std::string, std::string> expected = at_snapshot;
  expected["a3"] = "clone";
  EXPECT_EQ(TableRows("t2"), expected);
  EXPECT_EQ(TableRows("t3"), at_snapshot);
}

TEST_F(CatalogSnapshotTest, ARestoreGivesBackTheSnapshotsRowsFamiliesAndRegions) {
  for (int i = 0; i < 40; ++i) Put(absl::StrCat(i % 2 ? "a" : "x", i), "v1");
  ASSERT_TRUE(catalog_->Snapshot("t1", "s1", {}).ok());
  const std::map<std::string, std::string> at_snapshot = TableRows("t1");
  // After it: overwrites, a new family, a split into three regions.
  for (int i = 0; i < 40; i += 3) Put(absl::StrCat(i % 2 ? "a" : "x", i), "bad batch job");
  Put("n1", "new row");
  TableSpec altered = catalog_->Describe("t1").value();
  FamilyOptions g;
  g.name = "g";
  altered.families.push_back(g);
  ASSERT_TRUE(catalog_->Modify(altered).ok());
  ASSERT_TRUE(catalog_->MajorCompact("t1").ok());
  ASSERT_TRUE(catalog_->Split("t1", "c").ok());
  ASSERT_TRUE(catalog_->MajorCompact("t1").ok());
  ASSERT_EQ(catalog_->Find("t1").value()->regions().size(), 3u);
  // HBase's rule: an enabled table is not restored.
  const absl::Status enabled = catalog_->RestoreSnapshot("s1");
  EXPECT_EQ(enabled.code(), absl::StatusCode::kFailedPrecondition) << enabled;
  EXPECT_NE(enabled.message().find("disable"), std::string::npos) << enabled;
  ASSERT_TRUE(catalog_->Disable("t1").ok());
  ASSERT_TRUE(catalog_->RestoreSnapshot("s1").ok());
  EXPECT_FALSE(catalog_->Describe("t1").value().enabled);  // it stays disabled
  ASSERT_TRUE(catalog_->Enable("t1").ok());
  EXPECT_EQ(TableRows("t1"), at_snapshot);
  EXPECT_EQ(catalog_->Describe("t1").value().families.size(), 1u);
  EXPECT_EQ(catalog_->Find("t1").value()->regions().size(), 2u);
  // Only the restored regions' directories are left, and they hold after a restart.
  absl::StatusOr<std::vector<std::string>> dirs = Env::Default()->ListDir(absl::StrCat(dir_.path(), "/tables/t1"));
  ASSERT_TRUE(dirs.ok());
  size_t region_dirs = 0;
  for (const std::string& d : *dirs) region_dirs += Env::Default()->FileExists(absl::StrCat(dir_.path(), "/tables/t1/", d, "/REGIONINFO"));
  EXPECT_EQ(region_dirs, 2u);
  PutIn("t1", "z", "after restore");
  Reopen();
  std::map<std::string, std::string> expected = at_snapshot;
  expected["z"] = "after restore";
  EXPECT_EQ(TableRows("t1"), expected);
}

TEST_F(CatalogSnapshotTest, RestoringADroppedTableClonesItBack) {
  Put("a", "1");
  ASSERT_TRUE(catalog_->Snapshot("t1", "s1", {}).ok());
  ASSERT_TRUE(catalog_->Disable("t1").ok());
  ASSERT_TRUE(catalog_->Drop("t1").ok());
  EXPECT_EQ(catalog_->RestoreSnapshot("nope").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(catalog_->RestoreSnapshot("s1").ok());
  EXPECT_TRUE(catalog_->Describe("t1").value().enabled);
  EXPECT_EQ(TableRows("t1"), (std::map<std::string, std::string>{{"a", "1"}}));
}

TEST_F(CatalogSnapshotTest, ADamagedSnapshotIsRefusedLoudlyAndNothingIsMade) {
  Put("a", "1");
  ASSERT_TRUE(catalog_->Snapshot("t1", "s1", {}).ok());
  const std::string manifest = absl::StrCat(dir_.path(), "/snapshots/s1/SNAPSHOT");
  std::string bytes = Env::Default()->ReadFileToString(manifest).value();
  bytes[bytes.size() / 2] ^= 0x20;
  ASSERT_TRUE(Env::Default()->WriteFileDurably(manifest, bytes).ok());
  const absl::Status clone = catalog_->CloneSnapshot("s1", "t2");
  EXPECT_EQ(clone.code(), absl::StatusCode::kDataLoss) << clone;
  EXPECT_NE(clone.message().find(manifest), std::string::npos) << clone;
  EXPECT_FALSE(catalog_->Find("t2").ok());
  EXPECT_FALSE(Env::Default()->FileExists(absl::StrCat(dir_.path(), "/tables/t2")));
  ASSERT_TRUE(catalog_->Disable("t1").ok());
  EXPECT_EQ(catalog_->RestoreSnapshot("s1").code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(catalog_->Enable("t1").ok());
  EXPECT_EQ(TableRows("t1").size(), 1u);
  // A region's block file gone from the snapshot: the clone fails and leaves no table.
  ASSERT_TRUE(Env::Default()->RemoveTree(absl::StrCat(dir_.path(), "/snapshots/s1")).ok());
  ASSERT_TRUE(catalog_->Snapshot("t1", "s2", {}).ok());
  const std::string snap = absl::StrCat(dir_.path(), "/snapshots/s2");
  const std::vector<std::string> regions = Env::Default()->ListDir(snap).value_or(std::vector<std::string>{});
  for (const std::string& r : regions) {
    if (r == "SNAPSHOT") continue;
    const std::vector<std::string> files =
        Env::Default()->ListDir(absl::StrCat(snap, "/", r)).value_or(std::vector<std::string>{});
    for (const std::string& f : files) {
      if (f.ends_with(".blk")) {
        ASSERT_TRUE(Env::Default()->DeleteFile(absl::StrCat(snap, "/", r, "/", f)).ok());
      }
    }
  }
  const absl::Status missing = catalog_->CloneSnapshot("s2", "t2");
  EXPECT_EQ(missing.code(), absl::StatusCode::kDataLoss) << missing;
  EXPECT_FALSE(catalog_->Find("t2").ok());
  EXPECT_FALSE(Env::Default()->FileExists(absl::StrCat(dir_.path(), "/tables/t2")));
}

}  // namespace
}  // namespace basalt::server
