// Regions made of other regions' files (storage/region.h, WriteReferenceRegion): a split's
// daughters and a merge's region read their sources' block files through row ranges, copy
// nothing, and rewrite the references into files of their own when they compact.
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "common/env.h"
#include "storage/internal/block_cache.h"
#include "storage/internal/manifest.h"
#include "storage/region.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

std::string Row(int i) { return absl::StrFormat("r%04d", i); }

class ReferenceTest : public ::testing::Test {
 protected:
  ReferenceTest() {
    family_.name = "cf";
    family_.block_size = 1024;  // many blocks, so split points and range estimates mean something
  }
  std::string Dir(const std::string& name) const { return dir_.path() + "/" + name; }
  std::unique_ptr<Region> Open(const std::string& name, std::string start, std::string end, bool compact = false) {
    RegionOptions o;
    o.block_cache = &cache_;
    o.background_compaction = compact;
    auto r = Region::Open(o, RegionDescriptor{"t," + start + "," + name, {family_}, start, end}, Dir(name));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::move(*r) : nullptr;
  }
  // Every row the region returns in a full scan, with its value.
  std::map<std::string, std::string> ScanAll(Region* r) {
    std::map<std::string, std::string> out;
    auto sc = r->Scan(ScanSpec{});
    EXPECT_TRUE(sc.ok()) << sc.status();
    std::vector<Cell> cells;
    while (true) {
      auto more = (*sc)->NextRow(&cells);
      EXPECT_TRUE(more.ok()) << more.status();
      if (!more.ok() || !*more) break;
      for (const Cell& c : cells) out[c.row] = c.value;
    }
    return out;
  }
  // A parent over every row: rows 0..999 in two flushed files, row 7 deleted, row 8 rewritten
  // in the memstore (Close flushes it).
  std::map<std::string, std::string> MakeParent() {
    auto p = Open("p", "", "");
    std::map<std::string, std::string> want;
    for (int i = 0; i < 1000; ++i) {
      EXPECT_TRUE(p->Put(Row(i), "cf", "q", "v" + std::to_string(i)).ok());
      want[Row(i)] = "v" + std::to_string(i);
      if (i == 500) {
        EXPECT_TRUE(p->Flush().ok());
      }
    }
    EXPECT_TRUE(p->Flush().ok());
    RowMutation del{Row(7), {Mutation{Mutation::Kind::kDeleteColumn, "cf", "q", kLatestTimestamp, ""}}};
    EXPECT_TRUE(p->Mutate({del}).ok());
    want.erase(Row(7));
    EXPECT_TRUE(p->Put(Row(8), "cf", "q", "new").ok());
    want[Row(8)] = "new";
    auto point = p->SplitPoint();
    EXPECT_TRUE(point.ok()) << point.status();
    if (point.ok()) split_point_ = *point;
    EXPECT_TRUE(p->Close().ok());
    return want;
  }
  static std::map<std::string, std::string> Part(const std::map<std::string, std::string>& all, const std::string& start,
                                                 const std::string& end) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : all) {
      if (k >= start && (end.empty() || k < end)) out[k] = v;
    }
    return out;
  }
  size_t BlockFilesIn(const std::string& name) {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(Dir(name))) n += e.path().extension() == ".blk";
    return n;
  }

  testing::TempDir dir_;
  FamilyOptions family_;
  BlockCache cache_{8 << 20};
  std::string split_point_;
};

TEST_F(ReferenceTest, DaughtersReadTheirHalvesOfTheParentsFilesWithoutCopyingThem) {
  const auto want = MakeParent();
  // The split point is a row in the middle, as HBase's (the middle block of the largest file).
  ASSERT_GT(split_point_, Row(200));
  ASSERT_LT(split_point_, Row(800));
  const std::string mid = split_point_;
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{Dir("p"), "", mid}}, Dir("a")).ok());
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{Dir("p"), mid, ""}}, Dir("b")).ok());
  EXPECT_EQ(BlockFilesIn("a"), 0u);
  EXPECT_EQ(BlockFilesIn("b"), 0u);
  auto a = Open("a", "", mid);
  auto b = Open("b", mid, "");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(ScanAll(a.get()), Part(want, "", mid));
  EXPECT_EQ(ScanAll(b.get()), Part(want, mid, ""));
  // Gets (bloom and range checks) and a scan starting before the daughter's first row.
  auto got = b->Get(mid);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].value, want.at(mid));
  got = a->Get(Row(8));
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].value, "new");
  got = a->Get(Row(7));
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty()) << "the parent's delete hides the row in the daughter too";
  EXPECT_EQ(a->GetStats().reference_files, 3u);
  // Each daughter counts about its share of the parent's bytes, not all of them.
  const uint64_t sa = a->GetStats().store_file_bytes, sb = b->GetStats().store_file_bytes;
  EXPECT_GT(sa, 0u);
  EXPECT_GT(sb, 0u);
  uint64_t parent_bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(Dir("p"))) {
    if (e.path().extension() == ".blk") parent_bytes += e.file_size();
  }
  EXPECT_LT(sa + sb, parent_bytes + parent_bytes / 4);
  // A daughter with references does not split again (HBase neither).
  EXPECT_EQ(a->SplitPoint().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(WriteReferenceRegion(Env::Default(), {{Dir("a"), "", Row(100)}}, Dir("aa")).code(),
            absl::StatusCode::kFailedPrecondition);
  // Writes go to the daughter's own files; they survive a reopen with the references.
  ASSERT_TRUE(a->Put(Row(1), "cf", "q", "mine").ok());
  ASSERT_TRUE(a->Close().ok());
  a = Open("a", "", mid);
  auto want_a = Part(want, "", mid);
  want_a[Row(1)] = "mine";
  EXPECT_EQ(ScanAll(a.get()), want_a);
  // A compaction rewrites the references: the daughter then stands alone and may split.
  ASSERT_TRUE(a->MajorCompact().ok());
  EXPECT_EQ(a->GetStats().reference_files, 0u);
  EXPECT_EQ(ScanAll(a.get()), want_a);
  EXPECT_TRUE(a->SplitPoint().ok());
  ASSERT_TRUE(a->Close().ok());
  a = Open("a", "", mid);
  EXPECT_EQ(ScanAll(a.get()), want_a);
  EXPECT_EQ(a->GetStats().reference_files, 0u);
  // The parent's files were never deleted by the daughter's compaction: the other still reads them.
  EXPECT_EQ(ScanAll(b.get()), Part(want, mid, ""));
  EXPECT_EQ(BlockFilesIn("p"), 3u);
}

TEST_F(ReferenceTest, ADaughterWithBackgroundCompactionRewritesItsReferencesOnItsOwn) {
  const auto want = MakeParent();
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{Dir("p"), split_point_, ""}}, Dir("b")).ok());
  auto b = Open("b", split_point_, "", /*compact=*/true);
  ASSERT_TRUE(b);
  for (int i = 0; i < 500 && b->GetStats().reference_files > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(b->GetStats().reference_files, 0u);
  EXPECT_EQ(ScanAll(b.get()), Part(want, split_point_, ""));
}

// A scan begun before the compaction that rewrites a daughter's references still reads the
// parent's files through them: the region counts those until the scan ends, so that the
// parent's files are not removed under it (the table manager's janitor waits for 0).
TEST_F(ReferenceTest, AReferenceAScanStillReadsIsCountedAfterItsCompactionUntilTheScanEnds) {
  const auto want = MakeParent();
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{Dir("p"), split_point_, ""}}, Dir("b")).ok());
  auto b = Open("b", split_point_, "");
  ASSERT_TRUE(b);
  auto sc = b->Scan(ScanSpec{});
  ASSERT_TRUE(sc.ok()) << sc.status();
  std::vector<Cell> cells;
  ASSERT_TRUE((*sc)->NextRow(&cells).value_or(false));
  const uint64_t refs = b->GetStats().reference_files;
  ASSERT_GT(refs, 0u);
  EXPECT_EQ(b->GetStats().references_still_read, 0u);  // none compacted yet
  ASSERT_TRUE(b->MajorCompact().ok());
  RegionStats st = b->GetStats();
  EXPECT_EQ(st.reference_files, 0u);
  EXPECT_EQ(st.references_still_read, refs);
  // The scan reads on, the rest of the rows from the parent's file.
  std::map<std::string, std::string> seen;
  for (const Cell& c : cells) seen[c.row] = c.value;
  for (;;) {
    auto more = (*sc)->NextRow(&cells);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    for (const Cell& c : cells) seen[c.row] = c.value;
  }
  EXPECT_EQ(seen, Part(want, split_point_, ""));
  sc->reset();
  EXPECT_EQ(b->GetStats().references_still_read, 0u);
  EXPECT_EQ(ScanAll(b.get()), Part(want, split_point_, ""));
}

TEST_F(ReferenceTest, AMergedRegionReadsBothSourcesThroughTheirRanges) {
  const auto want = MakeParent();
  const std::string mid = split_point_;
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{Dir("p"), "", mid}}, Dir("a")).ok());
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{Dir("p"), mid, ""}}, Dir("b")).ok());
  std::map<std::string, std::string> all = want;
  for (const char* n : {"a", "b"}) {
    auto r = n[0] == 'a' ? Open("a", "", mid) : Open("b", mid, "");
    ASSERT_TRUE(r);
    const std::string row = n[0] == 'a' ? Row(3) : Row(997);
    ASSERT_TRUE(r->Put(row, "cf", "q", n).ok());
    all[row] = n;
    ASSERT_TRUE(r->MajorCompact().ok());  // sources of a merge hold no references
    ASSERT_TRUE(r->Close().ok());
  }
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{Dir("a"), "", mid}, {Dir("b"), mid, ""}}, Dir("m")).ok());
  auto m = Open("m", "", "");
  ASSERT_TRUE(m);
  EXPECT_EQ(ScanAll(m.get()), all);
  EXPECT_EQ(m->GetStats().reference_files, 2u);
  ASSERT_TRUE(m->MajorCompact().ok());
  EXPECT_EQ(ScanAll(m.get()), all);
  EXPECT_EQ(m->GetStats().reference_files, 0u);
}

TEST_F(ReferenceTest, AMissingSourceFileIsDataLoss) {
  MakeParent();
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{Dir("p"), "", split_point_}}, Dir("a")).ok());
  for (const auto& e : std::filesystem::directory_iterator(Dir("p"))) {
    if (e.path().extension() == ".blk") {
      std::filesystem::remove(e.path());
      break;
    }
  }
  RegionOptions o;
  auto r = Region::Open(o, RegionDescriptor{"t,,a", {family_}, "", split_point_}, Dir("a"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find("reference"), std::string::npos) << r.status();
}

TEST(ManifestReferences, RoundTripAndVersion) {
  Manifest m;
  m.next_file_number = 5;
  m.flushed_seq = 9;
  m.files["cf"] = {4, 2};
  std::string v2 = EncodeManifest(m);
  m.references[2] = FileReference{"../abc", 17, "g", "n"};
  std::string v3 = EncodeManifest(m);
  auto back = DecodeManifest(v3, "M");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->references, m.references);
  auto plain = DecodeManifest(v2, "M");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->references.empty());
  // Only a manifest with references needs a reader that knows them.
  EXPECT_NE(v2.substr(0, 16), v3.substr(0, 16));
  for (const char* bad : {"/abs", "../a/b", "..", "../..", "../", "sub"}) {
    Manifest w = m;
    w.references[2].region_dir = bad;
    EXPECT_EQ(DecodeManifest(EncodeManifest(w), "M").status().code(), absl::StatusCode::kDataLoss) << bad;
  }
  Manifest unnamed = m;
  unnamed.references[3] = FileReference{"../abc", 1, "", ""};  // file 3 is in no family
  EXPECT_EQ(DecodeManifest(EncodeManifest(unnamed), "M").status().code(), absl::StatusCode::kDataLoss);
  Manifest backwards = m;
  backwards.references[2].end_row = "a";  // end before start
  EXPECT_EQ(DecodeManifest(EncodeManifest(backwards), "M").status().code(), absl::StatusCode::kDataLoss);
}

// Nonces (version 4) round-trip with or without references; only a manifest holding some needs
// a reader that knows them.
TEST(ManifestNonces, RoundTripAndVersion) {
  Manifest m;
  m.next_file_number = 3;
  m.flushed_seq = 8;
  m.files["cf"] = {2};
  const std::string v2 = EncodeManifest(m);
  m.nonces[{7, 1}] = 1700000000000;
  m.nonces[{0xffffffffffffffffull, 99}] = 5;
  const std::string v4 = EncodeManifest(m);
  EXPECT_NE(v2.substr(0, 16), v4.substr(0, 16));
  auto back = DecodeManifest(v4, "M");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->nonces, m.nonces);
  m.references[2] = FileReference{"../abc", 17, "g", "n"};
  back = DecodeManifest(EncodeManifest(m), "M");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->nonces, m.nonces);
  EXPECT_EQ(back->references, m.references);
  Manifest zero = m;
  zero.nonces[{1, 0}] = 1;  // 0 is no nonce
  EXPECT_EQ(DecodeManifest(EncodeManifest(zero), "M").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace basalt
