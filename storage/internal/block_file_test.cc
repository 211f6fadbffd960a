// Block files: round trip through writer and reader for every encoding × compression ×
// checksum, seeks, bloom pruning, the cache in both forms, and damage detection.
#include "storage/internal/block_file.h"

#include <random>

#include "gtest/gtest.h"
#include "common/coding.h"
#include "common/crc.h"
#include "common/format_stamp.h"
#include "storage/cell.h"
#include "storage/internal/block_cache.h"
#include "tests/util/temp_dir.h"

namespace basalt {
namespace {

struct Param {
  DataBlockEncoding enc;
  Compression comp;
  ChecksumType ck;
};

class BlockFileTest : public ::testing::TestWithParam<Param> {
 protected:
  std::vector<std::pair<std::string, std::string>> MakeCells(int rows) {
    std::vector<std::pair<std::string, std::string>> cells;
    for (int r = 0; r < rows; ++r) {
      char row[16];
      snprintf(row, sizeof row, "row%06d", r);
      for (const char* q : {"a", "bb"}) {
        for (int ts = 3; ts >= 1; --ts) {
          cells.emplace_back(MakeFlatKey(row, q, ts, CellType::kPut), std::string(r % 50, 'v') + std::to_string(ts));
        }
      }
    }
    return cells;
  }
  FamilyOptions Family() {
    FamilyOptions f;
    f.name = "cf";
    f.encoding = GetParam().enc;
    f.compression = GetParam().comp;
    f.checksum = GetParam().ck;
    f.block_size = 4096;
    f.bytes_per_checksum = 1024;
    f.bloom = BloomType::kRowCol;
    return f;
  }
  // Writes cells to path with the family's settings; returns the writer's stats.
  absl::StatusOr<FileStats> WriteFile(const std::string& path, const FamilyOptions& family,
                                      const std::vector<std::pair<std::string, std::string>>& cells,
                                      uint64_t max_seq = 0) {
    auto w = BlockFileWriter::Create(Env::Default(), path, family);
    if (!w.ok()) return w.status();
    for (auto& [k, v] : cells) {
      if (auto s = (*w)->Add(k, v); !s.ok()) return s;
    }
    (*w)->set_max_seq(max_seq);
    return (*w)->Finish();
  }
  testing::TempDir dir_;
};

TEST_P(BlockFileTest, RoundTripSeekBloomCache) {
  auto cells = MakeCells(2000);
  std::string path = dir_.path() + "/f.blk";
  FamilyOptions family = Family();
  auto st = WriteFile(path, family, cells, 77);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->entries, cells.size());
  for (bool encoded : {false, true}) {
    family.cache_encoded = encoded;
    BlockCache cache(64 << 20);
    auto r = BlockFileReader::Open(Env::Default(), path, family, &cache);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->stats().max_seq, 77u);
    EXPECT_GT((*r)->num_blocks(), 10u);
    for (int pass = 0; pass < 2; ++pass) {  // cold, then from cache
      auto it = (*r)->NewIterator(true);
      size_t i = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next(), ++i) {
        ASSERT_LT(i, cells.size());
        ASSERT_EQ(it->key(), cells[i].first);
        ASSERT_EQ(it->value(), cells[i].second);
      }
      ASSERT_TRUE(it->status().ok()) << it->status();
      EXPECT_EQ(i, cells.size());
    }
    EXPECT_GT(cache.GetStats().hits, 0u);
    std::mt19937 rng(1);
    auto it = (*r)->NewIterator(true);
    for (int n = 0; n < 500; ++n) {
      size_t i = rng() % cells.size();
      it->Seek(cells[i].first);
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(it->key(), cells[i].first);
      // Between keys: ts 0 sorts after every version of the column.
      KeyView k = ParseFlatKeyUnchecked(cells[i].first);
      it->Seek(MakeFlatKey(k.row, k.qualifier, 0, CellType::kPut));
      if (it->Valid()) {
        EXPECT_GT(CompareFlatKeys(it->key(), cells[i].first), 0);
      }
    }
    it->Seek(MakeFlatKey("zzz", "", 1, CellType::kPut));
    EXPECT_FALSE(it->Valid());
    EXPECT_TRUE((*r)->MayContainColumn("row000010", "a"));
    int false_positives = 0;
    for (int n = 0; n < 1000; ++n) false_positives += (*r)->MayContainColumn("nothere" + std::to_string(n), "a");
    EXPECT_LT(false_positives, 50);
  }
}

// Damage detection needs checksums: this suite runs only for CRC32 and CRC32C (below).
class BlockFileDamageTest : public BlockFileTest {};

TEST_P(BlockFileDamageTest, FlippedByteIsDataLossNeverWrongData) {
  auto cells = MakeCells(300);
  std::string path = dir_.path() + "/f.blk";
  FamilyOptions family = Family();
  ASSERT_TRUE(WriteFile(path, family, cells).ok());
  auto good = Env::Default()->ReadFileToString(path);
  ASSERT_TRUE(good.ok());
  std::mt19937 rng(GetParam().enc == DataBlockEncoding::kNone ? 3 : 4);
  for (int n = 0; n < 60; ++n) {
    std::string bad = *good;
    size_t pos = rng() % bad.size();
    bad[pos] = static_cast<char>(bad[pos] ^ (1 + rng() % 255));
    std::string bad_path = dir_.path() + "/bad.blk";
    ASSERT_TRUE(Env::Default()->WriteFileDurably(bad_path, bad).ok());
    auto r = BlockFileReader::Open(Env::Default(), bad_path, family, nullptr);
    if (!r.ok()) {
      EXPECT_TRUE(r.status().code() == absl::StatusCode::kDataLoss ||
                  r.status().code() == absl::StatusCode::kInvalidArgument)
          << r.status();
      continue;
    }
    auto it = (*r)->NewIterator(false);
    size_t i = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++i) {
      ASSERT_LT(i, cells.size()) << "flip at " << pos;
      ASSERT_EQ(it->key(), cells[i].first) << "flip at " << pos;
      ASSERT_EQ(it->value(), cells[i].second) << "flip at " << pos;
    }
    if (it->status().ok()) {
      EXPECT_EQ(i, cells.size()) << "flip at " << pos;
    } else {
      EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss) << it->status();
      EXPECT_NE(it->status().message().find("bad.blk"), std::string::npos) << it->status();
    }
  }
}

std::vector<Param> AllParams(bool with_null_checksum) {
  std::vector<Param> v;
  for (auto e : {DataBlockEncoding::kNone, DataBlockEncoding::kPrefix, DataBlockEncoding::kFastDiff,
                 DataBlockEncoding::kRowIndex}) {
    for (auto c : {Compression::kNone, Compression::kSnappy, Compression::kZlib}) {
      for (auto k : {ChecksumType::kNull, ChecksumType::kCrc32, ChecksumType::kCrc32c}) {
        if (k != ChecksumType::kNull || with_null_checksum) v.push_back({e, c, k});
      }
    }
  }
  return v;
}

std::string ParamName(const ::testing::TestParamInfo<Param>& p) {
  return std::string(EncodingName(p.param.enc)) + "_" + CompressionName(p.param.comp) + "_" +
         ChecksumName(p.param.ck);
}

INSTANTIATE_TEST_SUITE_P(All, BlockFileTest, ::testing::ValuesIn(AllParams(true)), ParamName);
INSTANTIATE_TEST_SUITE_P(All, BlockFileDamageTest, ::testing::ValuesIn(AllParams(false)), ParamName);

TEST(BlockFormat, TrailerRejectsANewerFormatAndDamage) {
  Trailer t;
  std::string b = EncodeTrailer(t);
  ASSERT_EQ(b.size(), kTrailerSize);
  auto back = DecodeTrailer(b, "f");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->size, kTrailerSize);
  EXPECT_EQ(back->version, kBlockFileVersion);
  std::string damaged = b;
  damaged[12] = 9;  // min_reader_version 9, CRC not fixed: damage
  Trailer t9 = t;
  t9.version = t9.min_reader_version = 9;
  EXPECT_EQ(DecodeTrailer(EncodeTrailer(t9), "f").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeTrailer(damaged, "f").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeTrailer(std::string(kTrailerSize, 'x'), "f").status().code(), absl::StatusCode::kInvalidArgument);
  // A newer version old readers can read (min_reader_version unchanged) is read.
  Trailer t3 = t;
  t3.version = 3;
  EXPECT_TRUE(DecodeTrailer(EncodeTrailer(t3), "f").ok());
}

TEST(BlockFormat, VersionOneTrailersAreStillRead) {
  Trailer t;
  t.index = {100, 50};
  t.entries = 7;
  const std::string v2 = EncodeTrailer(t);
  // Version 1: "BSLTTRL1", u16 major 1, u16 minor 0, the same fields, its crc.
  std::string v1 = "BSLTTRL1";
  PutFixed16(&v1, 1);
  PutFixed16(&v1, 0);
  v1 += v2.substr(kFormatStampSize, v2.size() - kFormatStampSize - 4);
  PutFixed32(&v1, MaskCrc(Crc32c(v1)));
  ASSERT_EQ(v1.size(), kTrailerSizeV1);
  // As a reader sees it: the file's last kTrailerSize bytes, the trailer at their end.
  auto got = DecodeTrailer("data" + v1, "f");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size, kTrailerSizeV1);
  EXPECT_EQ(got->version, 1u);
  EXPECT_EQ(got->index.offset, 100u);
  EXPECT_EQ(got->entries, 7u);
}

}  // namespace
}  // namespace basalt
