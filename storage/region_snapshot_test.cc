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

// A copy (CopyRegion, the snapshot export): the snapshot's region read once, verified block by
// block, written to another directory that opens as a region with the same cells; a file the
// target holds already is named again, not copied; a damaged block, a truncated file and a
// target that refuses a write are each refused naming what, leaving no file half-written.
TEST_F(RegionSnapshotTest, ACopyIsVerifiedAsItIsReadAndSkipsWhatTheTargetHolds) {
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(region_->Put(absl::StrCat("r", i), "cf", "q", std::string(100, 'v')).ok());
  ASSERT_TRUE(region_->Flush().ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(region_->Put(absl::StrCat("s", i), "cf", "q", "later").ok());
  ASSERT_TRUE(region_->Snapshot(Dir("snap")).ok());
  Env* env = Env::Default();
  uint64_t written = 0;
  RegionCopyOptions how;
  how.read_bytes = 64 << 10;  // several pieces per file
  how.on_bytes = [&](uint64_t n) {
    written += n;
    return absl::OkStatus();
  };
  absl::StatusOr<CopiedFiles> copied = CopyRegion(env, Dir("snap"), env, Dir("backup/r"), how);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->files, 2u);
  EXPECT_EQ(copied->copied_files, 2u);
  EXPECT_EQ(copied->copied_bytes, copied->bytes);
  EXPECT_EQ(written, copied->bytes) << "every byte went through on_bytes";
  for (const std::string& n : env->ListDir(Dir("backup/r")).value_or(std::vector<std::string>{})) {
    if (n.ends_with(".blk")) {
      EXPECT_EQ(env->LinkCount(Dir("backup/r/" + n)).value_or(0), 1u) << "a copy, not a link";
    }
    EXPECT_FALSE(n.ends_with(".tmp")) << n;
  }
  {
    std::unique_ptr<Region> r = Open(Dir("backup/r"));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(Rows(r.get()), 2010u);
    EXPECT_EQ(Value(r.get(), "s3"), "later");
    ASSERT_TRUE(r->Close().ok());
  }
  // Again, into a second directory, with the first copy to find: every file named again.
  how.find_copy = [&](std::string_view name, uint64_t, std::string_view) { return Dir(absl::StrCat("backup/r/", AV(name))); };
  written = 0;
  copied = CopyRegion(env, Dir("snap"), env, Dir("backup/r2"), how);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->linked_files, 2u);
  EXPECT_EQ(copied->copied_bytes, 0u);
  EXPECT_EQ(written, 0u);
  // Run again over itself (a copy cut short, resumed): what is whole there is kept.
  how.find_copy = nullptr;
  copied = CopyRegion(env, Dir("snap"), env, Dir("backup/r2"), how);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->linked_files, 2u);

  // One byte of the largest file's first data block flipped: DataLoss naming the file and the
  // offset; nothing is left in the target under the file's name or a temporary one.
  std::string largest;
  uint64_t largest_size = 0;
  for (const std::string& n : env->ListDir(Dir("snap")).value_or(std::vector<std::string>{})) {
    if (!n.ends_with(".blk")) continue;
    const uint64_t size = env->GetFileSize(Dir("snap/" + n)).value_or(0);
    if (size > largest_size) largest = n, largest_size = size;
  }
  ASSERT_FALSE(largest.empty());
  ASSERT_TRUE(region_->Close().ok());
  region_.reset();
  ASSERT_TRUE(env->RemoveTree(Dir("region")).ok());  // the snapshot's names are the files' last ones now
  const std::string path = Dir("snap/" + largest);
  std::string bytes = env->ReadFileToString(path).value();
  const std::string good = bytes;
  bytes[100] ^= 0x20;
  ASSERT_TRUE(env->WriteFileDurably(path, bytes).ok());
  absl::StatusOr<CopiedFiles> bad = CopyRegion(env, Dir("snap"), env, Dir("backup/r3"), how);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_NE(bad.status().message().find(largest), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("offset 0"), std::string::npos) << bad.status();
  EXPECT_FALSE(env->FileExists(Dir("backup/r3/" + largest)));
  EXPECT_FALSE(env->FileExists(Dir("backup/r3/" + largest + ".tmp")));
  // Cut short by 1000 bytes (the trailer gone): refused.
  ASSERT_TRUE(env->WriteFileDurably(path, good.substr(0, good.size() - 1000)).ok());
  bad = CopyRegion(env, Dir("snap"), env, Dir("backup/r4"), how);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();  // not a block file any more
  EXPECT_FALSE(env->FileExists(Dir("backup/r4/" + largest)));
  // A target that refuses a write part way (on_bytes stands for the full disk here): its error,
  // and no file half-written under its name.
  ASSERT_TRUE(env->WriteFileDurably(path, good).ok());
  how.on_bytes = [&](uint64_t n) {
    written += n;
    return written > 100000 ? absl::ResourceExhaustedError("no space") : absl::OkStatus();
  };
  written = 0;
  bad = CopyRegion(env, Dir("snap"), env, Dir("backup/r5"), how);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kResourceExhausted) << bad.status();
  for (const std::string& n : env->ListDir(Dir("backup/r5")).value_or(std::vector<std::string>{})) {
    EXPECT_FALSE(n.ends_with(".tmp")) << n;
    if (n.ends_with(".blk")) {
      EXPECT_NE(n, largest);
    }
  }
}

}  // namespace
}  // namespace basalt
