// The read path's two newer features (storage/region.h, storage/read_filter.h): reversed scans,
// checked against the forward scan over random data in memstores, block files, a compacted
// file and a split's reference files; and the filter hook's order (cells before the version
// count, row key, next column, next row, row, all remaining).
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "common/env.h"
#include "common/status.h"
#include "storage/internal/block_cache.h"
#include "storage/region.h"
#include "tests/util/region_scan.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

using Rows = std::vector<std::vector<Cell>>;

Rows ScanRows(Region* r, const ScanSpec& spec) { return testing::ScanRegionRows(r, spec); }

// The forward scan equal to a reversed one: rows in (stop, start], then reversed.
Rows ReversedByForward(Region* r, ScanSpec spec) {
  const std::string high = spec.start_row, low = spec.stop_row;
  spec.reversed = false;
  spec.start_row = low.empty() ? "" : low + '\0';
  spec.stop_row = high.empty() ? "" : high + '\0';
  const uint64_t limit = spec.limit;
  spec.limit = 0;
  Rows rows = ScanRows(r, spec);
  std::reverse(rows.begin(), rows.end());
  if (limit != 0 && rows.size() > limit) rows.resize(limit);
  return rows;
}

std::string RowKey(std::mt19937& rng) {
  // Short keys from a small alphabet, with zero bytes: prefixes and neighbours of each other.
  static const char kAlphabet[] = {'a', 'b', 'c', '\0', '\xff'};
  std::string k(1 + rng() % 3, 'a');
  for (char& c : k) c = kAlphabet[rng() % 5];
  if (k[0] == '\0') k[0] = 'a';
  return k;
}

class ReadPathTest : public ::testing::Test {
 protected:
  ReadPathTest() {
    for (const char* name : {"a", "b"}) {
      FamilyOptions f;
      f.name = name;
      f.max_versions = 3;
      f.block_size = 256;  // many blocks: SeekBefore crosses block boundaries
      families_.push_back(f);
    }
  }
  std::unique_ptr<Region> Open(const std::string& name, std::string start, std::string end) {
    RegionOptions o;
    o.block_cache = &cache_;
    o.background_compaction = false;
    auto r = Region::Open(o, RegionDescriptor{"t," + start + "," + name, families_, start, end},
                          dir_.path() + "/" + name);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::move(*r) : nullptr;
  }
  // Random puts and deletes, flushed now and then.
  void Fill(Region* r, std::mt19937& rng, int n) {
    for (int i = 0; i < n; ++i) {
      RowMutation rm{RowKey(rng), {}};
      Mutation m;
      m.family = rng() % 2 ? "a" : "b";
      m.qualifier = std::string(1, static_cast<char>('p' + rng() % 3));
      m.timestamp = 1 + rng() % 20;
      switch (rng() % 10) {
        case 0: m.kind = Mutation::Kind::kDeleteColumn; break;
        case 1: m.kind = Mutation::Kind::kDeleteFamily; m.qualifier.clear(); break;
        case 2: m.kind = Mutation::Kind::kDelete; break;
        default: m.value = absl::StrCat("v", i);
      }
      rm.mutations.push_back(m);
      ASSERT_TRUE(r->Mutate({rm}, Durability::kSkipWal).ok());  // flushed or lost: no crash here
      if (rng() % 150 == 0) {
        ASSERT_TRUE(r->Flush().ok());
      }
    }
  }
  ScanSpec RandomReversedSpec(std::mt19937& rng) {
    ScanSpec s;
    s.reversed = true;
    if (rng() % 3 != 0) s.start_row = RowKey(rng);
    if (rng() % 3 != 0) s.stop_row = RowKey(rng);
    if (rng() % 4 == 0) s.columns.push_back({rng() % 2 ? "a" : "b", {}});
    s.max_versions = 1 + rng() % 3;
    if (rng() % 4 == 0) s.limit = 1 + rng() % 5;
    return s;
  }
  // Returns the rows the cases found in all.
  size_t CheckReversed(Region* r, std::mt19937& rng, int cases) {
    size_t found = 0;
    for (int c = 0; c < cases; ++c) {
      ScanSpec s = RandomReversedSpec(rng);
      Rows want = ReversedByForward(r, s);
      EXPECT_EQ(ScanRows(r, s), want) << "start '" << s.start_row << "' stop '" << s.stop_row << "' limit " << s.limit;
      found += want.size();
    }
    return found;
  }

  testing::TempDir dir_;
  BlockCache cache_{8 << 20};
  std::vector<FamilyOptions> families_;
};

TEST_F(ReadPathTest, AReversedScanIsTheForwardScanBackwards) {
  std::mt19937 rng(7);
  auto r = Open("r", "", "");
  CheckReversed(r.get(), rng, 20);  // empty
  Fill(r.get(), rng, 3000);
  EXPECT_GT(CheckReversed(r.get(), rng, 300), 1000u);  // memstore and block files
  ASSERT_TRUE(r->MajorCompact().ok());
  EXPECT_GT(CheckReversed(r.get(), rng, 100), 300u);  // one file
  Fill(r.get(), rng, 500);
  EXPECT_GT(CheckReversed(r.get(), rng, 100), 300u);
  // Whole rows in order: the first reversed row is the last forward one.
  Rows fwd = ScanRows(r.get(), ScanSpec{});
  ScanSpec rev;
  rev.reversed = true;
  rev.limit = 1;
  ASSERT_FALSE(fwd.empty());
  EXPECT_EQ(ScanRows(r.get(), rev), Rows{fwd.back()});
}

TEST_F(ReadPathTest, AReversedScanKeepsToTheRegionAndToReferenceFiles) {
  std::mt19937 rng(11);
  auto parent = Open("p", "", "");
  Fill(parent.get(), rng, 2000);
  ASSERT_TRUE(parent->Close().ok());
  const std::string mid = "b";
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{dir_.path() + "/p", "", mid}}, dir_.path() + "/d1").ok());
  ASSERT_TRUE(WriteReferenceRegion(Env::Default(), {{dir_.path() + "/p", mid, ""}}, dir_.path() + "/d2").ok());
  auto d1 = Open("d1", "", mid);
  auto d2 = Open("d2", mid, "");
  EXPECT_GT(CheckReversed(d1.get(), rng, 150), 100u);
  EXPECT_GT(CheckReversed(d2.get(), rng, 150), 100u);
  for (const Rows& rows : {ScanRows(d1.get(), ScanSpec{}), ScanRows(d2.get(), ScanSpec{})}) {
    ASSERT_FALSE(rows.empty());
  }
  ScanSpec all;
  all.reversed = true;
  for (const auto& row : ScanRows(d1.get(), all)) EXPECT_LT(row[0].row, mid);
  for (const auto& row : ScanRows(d2.get(), all)) EXPECT_GE(row[0].row, mid);
}

// A filter scripted per call, recording what it was asked.
class ScriptedFilter final : public ReadFilter {
 public:
  std::function<CellAction(const CellView&)> cell = [](const CellView&) { return CellAction::kInclude; };
  std::function<bool(std::string_view)> row_key = [](std::string_view) { return false; };
  std::function<bool(RowResult*)> row = [](RowResult*) { return false; };
  int remaining_after = -1;  // FilterAllRemaining once this many rows passed FilterRow
  int rows_passed = 0;
  std::vector<std::string> seen;  // "row/family:qualifier@ts" of each cell asked

  bool FilterAllRemaining() override { return remaining_after >= 0 && rows_passed >= remaining_after; }
  bool FilterRowKey(std::string_view r) override { return row_key(r); }
  CellAction FilterCell(const CellView& c) override {
    seen.push_back(absl::StrCat(AV(c.row), "/", AV(c.family), ":", AV(c.qualifier), "@", c.timestamp));
    return cell(c);
  }
  bool FilterRow(RowResult* r) override {
    if (row(r)) return true;
    ++rows_passed;
    return false;
  }
};

std::string Describe(const Rows& rows) {
  std::string s;
  for (const auto& row : rows) {
    for (const Cell& c : row) absl::StrAppend(&s, c.row, "/", c.family, ":", c.qualifier, "@", c.timestamp, "=", c.value, " ");
  }
  return s;
}

TEST_F(ReadPathTest, TheFilterSeesCellsBeforeTheVersionCountAndStopsColumnsRowsAndScans) {
  auto r = Open("f", "", "");
  for (const char* row : {"r1", "r2", "r3"}) {
    for (int ts = 1; ts <= 3; ++ts) {
      ASSERT_TRUE(r->Put(row, "a", "p", absl::StrCat("v", ts), ts).ok());
      ASSERT_TRUE(r->Put(row, "a", "q", absl::StrCat("w", ts), ts).ok());
      ASSERT_TRUE(r->Put(row, "b", "p", absl::StrCat("x", ts), ts).ok());
    }
  }
  ASSERT_TRUE(r->Flush().ok());
  auto f = std::make_shared<ScriptedFilter>();
  ScanSpec s;
  s.filter = f;
  // Skipping the newest version: the next one is returned (not counted before the filter).
  f->cell = [](const CellView& c) {
    return c.timestamp == 3 ? ReadFilter::CellAction::kSkip : ReadFilter::CellAction::kInclude;
  };
  s.stop_row = "r2";
  EXPECT_EQ(Describe(ScanRows(r.get(), s)), "r1/a:p@2=v2 r1/a:q@2=w2 r1/b:p@2=x2 ");
  // Next column after the first cell of each: the newest of each column, even with 3 versions.
  s.max_versions = 3;
  f->cell = [](const CellView&) { return ReadFilter::CellAction::kIncludeAndNextColumn; };
  EXPECT_EQ(Describe(ScanRows(r.get(), s)), "r1/a:p@3=v3 r1/a:q@3=w3 r1/b:p@3=x3 ");
  f->cell = [](const CellView& c) {
    return c.qualifier == "p" ? ReadFilter::CellAction::kNextColumn : ReadFilter::CellAction::kInclude;
  };
  EXPECT_EQ(Describe(ScanRows(r.get(), s)), "r1/a:q@3=w3 r1/a:q@2=w2 r1/a:q@1=w1 ");
  // Next row at the second cell: the first only, the other family skipped too; both directions.
  s.max_versions = 1;
  s.stop_row.clear();
  f->cell = [n = 0](const CellView& c) mutable {
    if (c.qualifier == "p" && c.family == "a" && c.timestamp == 3) n = 0;
    return n++ == 0 ? ReadFilter::CellAction::kInclude : ReadFilter::CellAction::kNextRow;
  };
  EXPECT_EQ(Describe(ScanRows(r.get(), s)), "r1/a:p@3=v3 r2/a:p@3=v3 r3/a:p@3=v3 ");
  s.reversed = true;
  EXPECT_EQ(Describe(ScanRows(r.get(), s)), "r3/a:p@3=v3 r2/a:p@3=v3 r1/a:p@3=v3 ");
  // Row keys refused unread; rows dropped whole; the scan ended after one row passed.
  f->cell = [](const CellView&) { return ReadFilter::CellAction::kInclude; };
  f->row_key = [](std::string_view row) { return row == "r2"; };
  f->seen.clear();
  s.reversed = false;
  s.columns = {{"b", {}}};
  EXPECT_EQ(Describe(ScanRows(r.get(), s)), "r1/b:p@3=x3 r3/b:p@3=x3 ");
  for (const std::string& c : f->seen) EXPECT_EQ(c.rfind("r2", 0), std::string::npos) << c;
  f->row = [](RowResult* row) { return row->row() == "r1"; };
  EXPECT_EQ(Describe(ScanRows(r.get(), s)), "r3/b:p@3=x3 ");
  f->row = [](RowResult* row) {
    for (size_t i = 0; i < row->size(); ++i) row->SetValue(i, "");
    return false;
  };
  f->row_key = [](std::string_view) { return false; };
  f->rows_passed = 0;
  f->remaining_after = 2;
  EXPECT_EQ(Describe(ScanRows(r.get(), s)), "r1/b:p@3= r2/b:p@3= ");
  // A Get goes through the same steps.
  f->remaining_after = -1;
  ReadSpec g;
  g.filter = f;
  auto got = r->Get("r2", g);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 3u);
  for (const Cell& c : *got) EXPECT_EQ(c.value, "");
  f->row_key = [](std::string_view row) { return row == "r2"; };
  got = r->Get("r2", g);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty());
}

}  // namespace
}  // namespace basalt
