// Region::Snapshot (docs/DESIGN.md §16): the region's block files given a second name and a
// manifest, with no byte copied; the snapshot opens as a region holding exactly the cells the
// region held when it was taken, whatever the region does after (writes, compactions, its
// removal), and its files go when the last name of them does.
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/status.h"
#include "gtest/gtest.h"
#include "storage/region.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

class RegionSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    family_.name = "cf";
    family_.max_versions = 1;
    region_ = Open(Dir("region"));
  }
  std::string Dir(std::string_view name) const { return absl::StrCat(dir_.path(), "/", AV(name)); }
  std::unique_ptr<Region> Open(const std::string& dir) {
    RegionOptions o;
    RegionDescriptor d{"t1,,1", {family_}, "", ""};
    absl::StatusOr<std::unique_ptr<Region>> r = Region::Open(o, d, dir);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : nullptr;
  }
  static std::string Value(Region* r, std::string_view row) {
    absl::StatusOr<std::vector<Cell>> cells = r->Get(row);
    if (!cells.ok() || cells->empty()) return "";
    return (*cells)[0].value;
  }
  static size_t Rows(Region* r) {
    absl::StatusOr<std::unique_ptr<RegionScanner>> s = r->Scan(ScanSpec{});
    EXPECT_TRUE(s.ok()) << s.status();
    size_t n = 0;
    RowResult row;
    while (s.ok() && (*s)->Next(&row).value_or(false)) ++n;
    return n;
  }

  testing::TempDir dir_;
  FamilyOptions family_;
  std::unique_ptr<Region> region_;
};

TEST_F(RegionSnapshotTest, TheSnapshotHoldsWhatWasWrittenBeforeItWhateverTheRegionDoesAfter) {
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(region_->Put(absl::StrCat("r", i), "cf", "q", "before").ok());
  ASSERT_TRUE(region_->Flush().ok());
  for (int i = 100; i < 150; ++i) ASSERT_TRUE(region_->Put(absl::StrCat("r", i), "cf", "q", "before").ok());  // memstore only
  absl::StatusOr<Region::SnapshotFiles> taken = region_->Snapshot(Dir("snap"));
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(taken->files, 2u);  // the flushed file and the snapshot's own flush
  EXPECT_GT(taken->bytes, 0u);
  // After it: overwrites, deletes, new rows, a major compaction (which drops the files the
  // snapshot names from the region), then the region's removal.
  for (int i = 0; i < 150; i += 2) ASSERT_TRUE(region_->Put(absl::StrCat("r", i), "cf", "q", "after").ok());
  ASSERT_TRUE(region_->Put("r999", "cf", "q", "after").ok());
  ASSERT_TRUE(region_->MajorCompact().ok());
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  ASSERT_TRUE(Env::Default()->RemoveTree(Dir("region")).ok());
  std::unique_ptr<Region> snap = Open(Dir("snap"));
  ASSERT_NE(snap, nullptr);
  EXPECT_EQ(Rows(snap.get()), 150u);
  EXPECT_EQ(Value(snap.get(), "r0"), "before");
  EXPECT_EQ(Value(snap.get(), "r149"), "before");
  EXPECT_EQ(Value(snap.get(), "r999"), "");
  // The snapshot's files have one name each now: only it holds them.
  absl::StatusOr<std::vector<std::string>> names = Env::Default()->ListDir(Dir("snap"));
  ASSERT_TRUE(names.ok());
  for (const std::string& n : *names) {
    if (n.ends_with(".blk")) {
      EXPECT_EQ(Env::Default()->LinkCount(Dir("snap/" + n)).value_or(0), 1u) << n;
    }
  }
}

TEST_F(RegionSnapshotTest, ItsFilesAreTheRegionsOwnUntilTheRegionLetsThemGo) {
  ASSERT_TRUE(region_->Put("a", "cf", "q", "1").ok());
  ASSERT_TRUE(region_->Snapshot(Dir("snap")).ok());
  absl::StatusOr<std::vector<std::string>> names = Env::Default()->ListDir(Dir("snap"));
  ASSERT_TRUE(names.ok());
  size_t blocks = 0;
  for (const std::string& n : *names) {
    if (!n.ends_with(".blk")) continue;
    ++blocks;
    EXPECT_EQ(Env::Default()->LinkCount(Dir("snap/" + n)).value_or(0), 2u) << n;  // the region's and the snapshot's
  }
  EXPECT_EQ(blocks, 1u);
  // Taken again into a directory that holds the names already: refused, nothing changed.
  EXPECT_EQ(region_->Snapshot(Dir("snap")).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Value(region_.get(), "a"), "1");
}

TEST_F(RegionSnapshotTest, WritesGoOnWhileASnapshotIsTaken) {
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (region_->Put(absl::StrCat("w", i), "cf", "q", "v").ok()) written = i + 1;
    }
  });
  while (written.load() < 200) std::this_thread::yield();
  const int before = written.load();  // acknowledged before the snapshot began
  absl::StatusOr<Region::SnapshotFiles> taken = region_->Snapshot(Dir("snap"));
  const int after = written.load();
  stop = true;
  writer.join();
  ASSERT_TRUE(taken.ok()) << taken.status();
  std::unique_ptr<Region> snap = Open(Dir("snap"));
  ASSERT_NE(snap, nullptr);
  const size_t rows = Rows(snap.get());
  EXPECT_GE(rows, static_cast<size_t>(before));  // every acknowledged write before it
  EXPECT_LE(rows, static_cast<size_t>(after) + 1);  // none begun after it ended
  for (int i = 0; i < before; ++i) ASSERT_EQ(Value(snap.get(), absl::StrCat("w", i)), "v") << i;
}

// A clone (LinkRegion): the snapshot's files named again in a region of their own, which writes,
// compacts and is removed without touching the snapshot; refused loudly when the snapshot's
// manifest is damaged or a file it lists is gone.
TEST_F(RegionSnapshotTest, ALinkedRegionIsTheSnapshotsCopyAndChangesNothingOfIt) {
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(region_->Put(absl::StrCat("r", i), "cf", "q", "before").ok());
  ASSERT_TRUE(region_->Snapshot(Dir("snap")).ok());
  absl::StatusOr<LinkedFiles> linked = LinkRegion(Env::Default(), Dir("snap"), Dir("clone"));
  ASSERT_TRUE(linked.ok()) << linked.status();
  EXPECT_EQ(linked->files, 1u);
  {
    std::unique_ptr<Region> clone = Open(Dir("clone"));
    ASSERT_NE(clone, nullptr);
    EXPECT_EQ(Rows(clone.get()), 50u);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(clone->Put(absl::StrCat("r", i), "cf", "q", "clone").ok());
    ASSERT_TRUE(clone->MajorCompact().ok());
    EXPECT_EQ(Value(clone.get(), "r7"), "clone");
    ASSERT_TRUE(clone->Close().ok());
  }
  ASSERT_TRUE(Env::Default()->RemoveTree(Dir("clone")).ok());
  std::unique_ptr<Region> snap = Open(Dir("snap"));
  ASSERT_NE(snap, nullptr);
  EXPECT_EQ(Value(snap.get(), "r7"), "before");
  EXPECT_EQ(Rows(snap.get()), 50u);
  ASSERT_TRUE(snap->Close().ok());
  snap.reset();

  // A file the manifest lists, gone: DataLoss naming the directory.
  absl::StatusOr<std::vector<std::string>> names = Env::Default()->ListDir(Dir("snap"));
  ASSERT_TRUE(names.ok());
  for (const std::string& n : *names) {
    if (n.ends_with(".blk")) {
      ASSERT_TRUE(Env::Default()->DeleteFile(Dir("snap/" + n)).ok());
    }
  }
  absl::StatusOr<LinkedFiles> missing = LinkRegion(Env::Default(), Dir("snap"), Dir("clone2"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDataLoss) << missing.status();
  EXPECT_NE(missing.status().message().find(Dir("snap")), std::string::npos) << missing.status();
  // A damaged manifest: DataLoss too.
  ASSERT_TRUE(Env::Default()->WriteFileDurably(Dir("snap/MANIFEST"), "not a manifest").ok());
  EXPECT_EQ(LinkRegion(Env::Default(), Dir("snap"), Dir("clone3")).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace basalt
