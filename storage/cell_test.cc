#include "storage/cell.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace basalt {
namespace {

TEST(Cell, FlatKeyRoundTrip) {
  std::string k = MakeFlatKey("row", "qual", 1234567890123, CellType::kDeleteColumn);
  KeyView v;
  ASSERT_TRUE(ParseFlatKey(k, &v));
  EXPECT_EQ(v.row, "row");
  EXPECT_EQ(v.qualifier, "qual");
  EXPECT_EQ(v.timestamp, 1234567890123);
  EXPECT_EQ(v.type, CellType::kDeleteColumn);
}

TEST(Cell, ParseRejectsMalformed) {
  KeyView v;
  EXPECT_FALSE(ParseFlatKey("", &v));
  EXPECT_FALSE(ParseFlatKey(std::string(10, '\0'), &v));
  std::string k = MakeFlatKey("row", "q", 1, CellType::kPut);
  std::string bad_type = k;
  bad_type.back() = 5;
  EXPECT_FALSE(ParseFlatKey(bad_type, &v));
  std::string long_row = k;
  long_row[0] = 0x7f;  // row length past the end
  EXPECT_FALSE(ParseFlatKey(long_row, &v));
}

TEST(Cell, HBaseOrder) {
  // Row asc, qualifier asc, timestamp desc, type desc (DeleteFamily > DeleteColumn > Delete > Put).
  std::vector<std::string> want = {
      MakeFlatKey("a", "", 5, CellType::kDeleteFamily), MakeFlatKey("a", "", 5, CellType::kPut),
      MakeFlatKey("a", "q", 9, CellType::kPut),         MakeFlatKey("a", "q", 5, CellType::kDeleteColumn),
      MakeFlatKey("a", "q", 5, CellType::kDelete),      MakeFlatKey("a", "q", 5, CellType::kPut),
      MakeFlatKey("a", "q", 0, CellType::kPut),         MakeFlatKey("a", "r", 100, CellType::kPut),
      MakeFlatKey("aa", "", 1, CellType::kPut),         MakeFlatKey("b", "a", 1, CellType::kPut),
  };
  std::vector<std::string> got = want;
  std::shuffle(got.begin(), got.end(), std::mt19937(7));
  std::sort(got.begin(), got.end(), [](const std::string& x, const std::string& y) { return CompareFlatKeys(x, y) < 0; });
  EXPECT_EQ(got, want);
  // Row "b" sorts before row "aa"? No: bytewise rows, whatever their length.
  EXPECT_LT(CompareFlatKeys(MakeFlatKey("aa", "", 1, CellType::kPut), MakeFlatKey("b", "", 1, CellType::kPut)), 0);
  EXPECT_LT(CompareFlatKeys(FirstKeyOfRow("a"), MakeFlatKey("a", "", kLatestTimestamp, CellType::kPut)), 0);
}

TEST(CellTest, AssignFirstKeyOfRowIsFirstKeyOfRowOrOfTheRowAfter) {
  std::string buf = "left over";
  for (const std::string& row : std::vector<std::string>{"", "a", std::string("a\0\xff", 3), std::string(300, 'x')}) {
    AssignFirstKeyOfRow(&buf, row);
    EXPECT_EQ(buf, FirstKeyOfRow(row));
    AssignFirstKeyOfRow(&buf, row, /*after=*/true);
    EXPECT_EQ(buf, FirstKeyOfRow(row + '\0'));
    EXPECT_GT(CompareFlatKeys(buf, MakeFlatKey(row, "\xff\xff", 0, CellType::kPut)), 0);
  }
}

}  // namespace
}  // namespace basalt
