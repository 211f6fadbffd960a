#include "src/front/hbase/cell_block.h"

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace basalt::hbase {
namespace {

TEST(CellBlock, OneCellByteForByte) {
  std::string block;
  ASSERT_TRUE(AppendCell({"r1", "cf", "q", 0x0102030405060708, KeyValueType::kPut, "v"}, &block).ok());
  // length 8+17+1, key 17 = 2+2 + 1+2 + 1 + 8 + 1, value 1; then the key, then the value.
  EXPECT_EQ(absl::BytesToHexString(block),
            "0000001a" "00000011" "00000001" "0002" "7231" "02" "6366" "71" "0102030405060708" "04" "76");
}

TEST(CellBlock, RoundTripOfEveryType) {
  const std::string big_row(32767, 'x'), big_family(127, 'y'), big_qualifier(1000, 'z'), big_value(70000, 'v');
  const std::vector<BlockCell> cells = {
      {"row", "f", "q", 1, KeyValueType::kPut, "value"},
      {"row", "f", "", 2, KeyValueType::kDelete, ""},
      {"", "family", "qualifier", -1, KeyValueType::kDeleteColumn, ""},
      {"r", "f", "q", INT64_MAX, KeyValueType::kDeleteFamily, ""},
      {"r", "f", "q", 3, KeyValueType::kDeleteFamilyVersion, ""},
      {big_row, big_family, big_qualifier, 4, KeyValueType::kPut, big_value},
  };
  std::string block;
  for (const BlockCell& c : cells) ASSERT_TRUE(AppendCell(c, &block).ok());
  absl::StatusOr<std::vector<BlockCell>> back = DecodeCellBlock(block);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_TRUE((*back)[i].row == cells[i].row) << i;
    EXPECT_EQ((*back)[i].family, cells[i].family) << i;
    EXPECT_EQ((*back)[i].qualifier, cells[i].qualifier) << i;
    EXPECT_EQ((*back)[i].timestamp, cells[i].timestamp) << i;
    EXPECT_EQ((*back)[i].type, cells[i].type) << i;
    EXPECT_TRUE((*back)[i].value == cells[i].value) << i;
  }
  EXPECT_TRUE(DecodeCellBlock("")->empty());
  std::string too_long;
  const std::string row_over(32768, 'x'), family_over(128, 'f');
  EXPECT_EQ(AppendCell({row_over, "f", "q", 1, KeyValueType::kPut, ""}, &too_long).message(),
            "a row of 32768 bytes (HBase's limit is 32767)");
  EXPECT_EQ(AppendCell({"r", family_over, "q", 1, KeyValueType::kPut, ""}, &too_long).message(),
            "a family of 128 bytes (HBase's limit is 127)");
}

// KeyValueCodecWithTags (a replication source's): a cell with tags carries them after its value,
// counted in its length; one without is the plain KeyValue. Both read, the tags passed over.
TEST(CellBlock, CellsWithTagsAreRead) {
  std::string plain;
  ASSERT_TRUE(AppendCell({"r1", "cf", "q", 7, KeyValueType::kPut, "v"}, &plain).ok());
  std::string tagged = plain;
  tagged[3] = static_cast<char>(tagged[3] + 2 + 3);  // length 26 + u16 tags length + 3 bytes
  tagged += std::string("\x00\x03" "abc", 5);
  const std::string block = tagged + plain;
  absl::StatusOr<std::vector<BlockCell>> cells = DecodeCellBlock(block);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[0].row, "r1");
  EXPECT_EQ((*cells)[0].value, "v");
  EXPECT_EQ((*cells)[1].value, "v");
  // A tags length that disagrees with the cell's.
  std::string bad = tagged;
  bad[31] = 4;
  EXPECT_EQ(DecodeCellBlock(bad).status().message(), "malformed cell block: cell 0 at byte 0: its lengths disagree");
}

TEST(CellBlock, DamageIsRefusedSayingWhere) {
  std::string good;
  ASSERT_TRUE(AppendCell({"r1", "cf", "q", 7, KeyValueType::kPut, "v"}, &good).ok());
  auto with = [&](size_t at, std::string_view bytes) {
    std::string b = good + good;
    b.replace(good.size() + at, bytes.size(), bytes);
    return b;
  };
  const std::pair<std::string, std::string> cases[] = {
      {good + good.substr(0, 11), "malformed cell block: cell 1 at byte 30: shorter than its three lengths"},
      {good + good.substr(0, 20), "malformed cell block: cell 1 at byte 30: it runs past the block"},
      {with(0, std::string("\x00\x00\x00\x1b", 4)), "malformed cell block: cell 1 at byte 30: its lengths disagree"},
      {with(12, std::string("\x00\x0a", 2)), "malformed cell block: cell 1 at byte 30: its row runs past its key"},
      {with(16, std::string("\x09", 1)), "malformed cell block: cell 1 at byte 30: its family runs past its key"},
      {with(28, std::string("\x05", 1)), "malformed cell block: cell 1 at byte 30: type 5 is not one of HBase's"},
  };
  for (const auto& [block, message] : cases) {
    absl::StatusOr<std::vector<BlockCell>> cells = DecodeCellBlock(block);
    ASSERT_FALSE(cells.ok()) << message;
    EXPECT_EQ(cells.status().message(), message);
  }
  // No cut and no flipped byte makes it read past the block (ASan watches).
  const std::string two = good + good;
  for (size_t n = 0; n < two.size(); ++n) DecodeCellBlock(two.substr(0, n)).IgnoreError();
  for (size_t i = 0; i < two.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string b = two;
      b[i] = static_cast<char>(b[i] ^ (1 << bit));
      DecodeCellBlock(b).IgnoreError();
    }
  }
}

}  // namespace
}  // namespace basalt::hbase
