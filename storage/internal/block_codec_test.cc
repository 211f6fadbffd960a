// Round trips, seeks and corruption for the data block encodings and block compression.
#include "storage/internal/block_codec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/cell.h"
#include "storage/internal/compression.h"
#include "storage/internal/row_heads.h"

namespace basalt {
namespace {

constexpr DataBlockEncoding kEncodings[] = {DataBlockEncoding::kNone, DataBlockEncoding::kPrefix,
                                            DataBlockEncoding::kFastDiff, DataBlockEncoding::kRowIndex};
constexpr Compression kCompressions[] = {Compression::kNone, Compression::kSnappy, Compression::kZlib};
constexpr CellType kTypes[] = {CellType::kPut, CellType::kDelete, CellType::kDeleteColumn, CellType::kDeleteFamily};

using Cells = std::vector<std::pair<std::string, std::string>>;

std::string RandomBytes(std::mt19937_64& rng, size_t n, int alphabet = 256) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() % alphabet);
  return s;
}

// Random sorted cells: few rows and qualifiers (so columns repeat), empty qualifiers and values,
// many versions of some columns, duplicate keys.
Cells RandomCells(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> rows, quals;
  for (int i = 0; i < 1 + n / 10; ++i) rows.push_back(RandomBytes(rng, rng() % 12, 4));
  for (int i = 0; i < 5; ++i) quals.push_back(RandomBytes(rng, rng() % 6, 3));
  quals.push_back("");
  const int64_t special_ts[] = {0, 1, -1, kLatestTimestamp, std::numeric_limits<int64_t>::min(), 1700000000000};
  Cells cells;
  while (static_cast<int>(cells.size()) < n) {
    const std::string& row = rows[rng() % rows.size()];
    const std::string& qual = quals[rng() % quals.size()];
    int versions = rng() % 8 == 0 ? 1 + rng() % 30 : 1;
    for (int v = 0; v < versions; ++v) {
      int64_t ts = rng() % 4 == 0 ? special_ts[rng() % 6] : 1700000000000 + static_cast<int64_t>(rng() % 100000);
      std::string key = MakeFlatKey(row, qual, ts, kTypes[rng() % 4]);
      std::string value = rng() % 5 == 0 ? "" : RandomBytes(rng, rng() % 40);
      int copies = rng() % 10 == 0 ? 2 : 1;
      for (int c = 0; c < copies; ++c) cells.emplace_back(key, value);
    }
  }
  std::stable_sort(cells.begin(), cells.end(),
                   [](const auto& a, const auto& b) { return CompareFlatKeys(a.first, b.first) < 0; });
  return cells;
}

std::string Build(DataBlockEncoding e, const Cells& cells) {
  BlockBuilder b(e);
  for (const auto& [k, v] : cells) b.Add(k, v);
  EXPECT_EQ(b.num_cells(), static_cast<int>(cells.size()));
  size_t est = b.EstimatedSize();
  std::string payload = b.Finish();
  EXPECT_EQ(est, payload.size());
  return payload;
}

std::string SeedKey(int row, const char* qual) {
  char r[4] = {static_cast<char>(row >> 24), static_cast<char>(row >> 16), static_cast<char>(row >> 8),
               static_cast<char>(row)};
  return MakeFlatKey(std::string_view(r, 4), qual, 1700000000000, CellType::kPut);
}

// The seed table: 4-byte big-endian integer rows, qualifiers v1 and v2, 4-byte float values.
Cells SeedCells(int rows) {
  Cells cells;
  for (int r = 0; r < rows; ++r) {
    for (const char* q : {"v1", "v2"}) {
      float f = static_cast<float>(r) * 0.5f + (q[1] == '2' ? 0.25f : 0.0f);
      cells.emplace_back(SeedKey(r, q), std::string(reinterpret_cast<const char*>(&f), 4));
    }
  }
  return cells;
}

// Every cell reachable from a valid decoded block has a well-formed key, in order.
void CheckWellFormed(const DecodedBlock& block) {
  auto it = NewBlockIterator(std::make_shared<DecodedBlock>(block));
  std::string prev;
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++n) {
    KeyView kv;
    ASSERT_TRUE(ParseFlatKey(it->key(), &kv));
    if (n > 0) {
      ASSERT_LE(CompareFlatKeys(prev, it->key()), 0);
    }
    prev.assign(it->key());
    volatile size_t touch = it->value().empty() ? 0 : static_cast<unsigned char>(it->value().back());
    (void)touch;
  }
  EXPECT_EQ(n, block.num_cells());
  EXPECT_TRUE(it->status().ok());
}

class EncodingTest : public ::testing::TestWithParam<DataBlockEncoding> {};

TEST_P(EncodingTest, RoundTripAndSeek) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    Cells cells = RandomCells(seed, 1 + static_cast<int>(seed * 37 % 400));
    auto decoded = DecodeBlock(GetParam(), Build(GetParam(), cells));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    const DecodedBlock& block = **decoded;
    ASSERT_EQ(block.num_cells(), static_cast<int>(cells.size()));
    EXPECT_GT(block.MemoryUsage(), 0u);
    for (int i = 0; i < block.num_cells(); ++i) {
      ASSERT_EQ(block.key(i), cells[i].first) << i;
      ASSERT_EQ(block.value(i), cells[i].second) << i;
    }
    auto it = NewBlockIterator(*decoded);
    EXPECT_FALSE(it->Valid());
    size_t i = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++i) {
      ASSERT_LT(i, cells.size());
      ASSERT_EQ(it->key(), cells[i].first);
      ASSERT_EQ(it->value(), cells[i].second);
    }
    EXPECT_EQ(i, cells.size());
    EXPECT_TRUE(it->status().ok());

    auto expected_pos = [&](const std::string& target) {
      return std::lower_bound(cells.begin(), cells.end(), target,
                              [](const auto& c, const std::string& t) { return CompareFlatKeys(c.first, t) < 0; }) -
             cells.begin();
    };
    auto check_seek = [&](const std::string& target) {
      size_t want = expected_pos(target);
      it->Seek(target);
      if (want == cells.size()) {
        ASSERT_FALSE(it->Valid());
      } else {
        ASSERT_TRUE(it->Valid());
        ASSERT_EQ(it->key(), cells[want].first);
        ASSERT_EQ(it->value(), cells[want].second);
        // Duplicates: the first of equal keys.
        ASSERT_TRUE(want == 0 || CompareFlatKeys(cells[want - 1].first, target) < 0);
      }
    };
    for (const auto& [k, v] : cells) {
      check_seek(k);
      KeyView kv = ParseFlatKeyUnchecked(k);
      check_seek(FirstKeyOfRow(kv.row));
      check_seek(FirstKeyOfColumn(kv.row, kv.qualifier));
      if (kv.timestamp != std::numeric_limits<int64_t>::min()) {
        check_seek(MakeFlatKey(kv.row, kv.qualifier, kv.timestamp - 1, CellType::kDeleteFamily));
      }
      check_seek(MakeFlatKey(std::string(kv.row) + '\0', "", kLatestTimestamp, CellType::kDeleteFamily));
    }
    std::mt19937_64 rng(seed);
    for (int k = 0; k < 200; ++k) {
      check_seek(MakeFlatKey(RandomBytes(rng, rng() % 12, 5), RandomBytes(rng, rng() % 6, 4),
                             static_cast<int64_t>(rng()), kTypes[rng() % 4]));
    }
    check_seek(FirstKeyOfRow(""));
    check_seek(MakeFlatKey(std::string(20, '\xff'), "", 0, CellType::kPut));
  }
}

TEST_P(EncodingTest, EmptyAndReset) {
  BlockBuilder b(GetParam());
  EXPECT_TRUE(b.empty());
  size_t est = b.EstimatedSize();
  std::string empty = b.Finish();
  EXPECT_EQ(empty.size(), est);
  EXPECT_EQ(empty.size(), GetParam() == DataBlockEncoding::kRowIndex ? 4u : 0u);
  auto decoded = DecodeBlock(GetParam(), empty);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->num_cells(), 0);
  auto it = NewBlockIterator(*decoded);
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->Seek(FirstKeyOfRow("a"));
  EXPECT_FALSE(it->Valid());

  // Reuse after Reset gives the same bytes as a fresh builder.
  Cells cells = RandomCells(99, 100);
  b.Reset();
  for (const auto& [k, v] : cells) b.Add(k, v);
  std::string first = b.Finish();
  b.Reset();
  EXPECT_TRUE(b.empty());
  for (const auto& [k, v] : cells) b.Add(k, v);
  EXPECT_EQ(b.Finish(), first);
  EXPECT_EQ(first, Build(GetParam(), cells));
}

// Long keys with empty values share almost everything; the builder must keep the block within the
// decoder's expansion bound, and the round trip must still hold.
TEST_P(EncodingTest, LongSharedKeysStayDecodable) {
  Cells cells;
  std::string row(2000, 'r');
  for (int i = 0; i < 3000; ++i) cells.emplace_back(MakeFlatKey(row, std::to_string(100000 + i), 5, CellType::kPut), "");
  std::string payload = Build(GetParam(), cells);
  auto decoded = DecodeBlock(GetParam(), payload);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ((*decoded)->num_cells(), static_cast<int>(cells.size()));
  for (size_t i = 0; i < cells.size(); ++i) ASSERT_EQ((*decoded)->key(static_cast<int>(i)), cells[i].first);
  EXPECT_LE((*decoded)->MemoryUsage(), kMaxDecodeExpansion * payload.size() + kDecodeSlack + 4096);
}

// Truncation at every length and random byte flips: DataLoss or a valid block, never a crash.
TEST_P(EncodingTest, CorruptionIsDataLossOrValid) {
  Cells cells = RandomCells(7, 40);
  std::string payload = Build(GetParam(), cells);
  int ok = 0, bad = 0;
  for (size_t len = 0; len < payload.size(); ++len) {
    auto d = DecodeBlock(GetParam(), payload.substr(0, len));
    if (d.ok()) {
      ++ok;
      CheckWellFormed(**d);
    } else {
      ++bad;
      ASSERT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << d.status();
    }
  }
  EXPECT_GT(bad, 0);
  std::mt19937_64 rng(GetParam() == DataBlockEncoding::kNone ? 1 : 2);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string p = payload;
    int flips = 1 + rng() % 3;
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % p.size();
      if (rng() % 2) {
        p[at] = static_cast<char>(p[at] ^ (1 << (rng() % 8)));
      } else {
        p[at] = static_cast<char>(rng());
      }
    }
    auto d = DecodeBlock(GetParam(), std::move(p));
    if (d.ok()) {
      ++ok;
      CheckWellFormed(**d);
    } else {
      ++bad;
      ASSERT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << d.status();
    }
  }
  std::printf("%s: %d valid, %d DataLoss\n", EncodingName(GetParam()), ok, bad);
}

// Random garbage of every small length must not crash either.
TEST_P(EncodingTest, GarbageIsDataLossOrValid) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string p = RandomBytes(rng, rng() % 64, trial % 2 ? 256 : 3);
    auto d = DecodeBlock(GetParam(), std::move(p));
    if (d.ok()) {
      CheckWellFormed(**d);
    } else {
      ASSERT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << d.status();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllEncodings, EncodingTest, ::testing::ValuesIn(kEncodings),
                         [](const auto& info) { return std::string(EncodingName(info.param)); });

// RowHeads (LowerBound's search) against a plain binary search, on rows built to test its edges:
// a long common prefix, rows that differ only after the head's eight bytes, rows that are
// prefixes of others, zero bytes (a head pads with them), and targets outside the prefix.
TEST(RowHeadsTest, AgreesWithAPlainBinarySearch) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    const std::string prefix = RandomBytes(rng, rng() % 3 == 0 ? 0 : 1 + rng() % 20, 3);
    std::vector<std::string> rows;
    for (int i = 0; i < 2 + static_cast<int>(rng() % 40); ++i) {
      std::string r = prefix + RandomBytes(rng, rng() % 14, 3);  // bytes 0, 1 and 2
      if (rng() % 4 == 0 && !rows.empty()) r = rows[rng() % rows.size()] + std::string(1 + rng() % 2, '\0');
      rows.push_back(r);
    }
    std::vector<std::string> keys;
    for (const std::string& r : rows) {
      for (int v = 0; v < 1 + static_cast<int>(rng() % 4); ++v) {
        keys.push_back(MakeFlatKey(r, RandomBytes(rng, rng() % 3, 2), static_cast<int64_t>(rng() % 5), CellType::kPut));
      }
    }
    std::sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) { return CompareFlatKeys(a, b) < 0; });
    std::vector<KeyView> views;
    for (const std::string& k : keys) views.push_back(ParseFlatKeyUnchecked(k));
    RowHeads heads;
    heads.Build(views.size(), [&](size_t i) { return views[i].row; });
    auto check = [&](const std::string& target) {
      const KeyView t = ParseFlatKeyUnchecked(target);
      const size_t want = static_cast<size_t>(
          std::lower_bound(views.begin(), views.end(), t, [](const KeyView& a, const KeyView& b) { return CompareKeys(a, b) < 0; }) -
          views.begin());
      ASSERT_EQ(heads.LowerBound(t, [&](size_t i) { return views[i]; }), want) << absl::CEscape(std::string(t.row));
    };
    for (const std::string& r : rows) {
      check(FirstKeyOfRow(r));
      check(MakeFlatKey(r, "a", 2, CellType::kPut));
      check(MakeFlatKey(r + '\0', "", kLatestTimestamp, CellType::kDeleteFamily));
      check(FirstKeyOfRow(r.substr(0, r.size() / 2)));
    }
    for (int k = 0; k < 300; ++k) {
      const std::string base = rng() % 2 == 0 ? prefix : prefix.substr(0, rng() % (prefix.size() + 1));
      check(MakeFlatKey(base + RandomBytes(rng, rng() % 14, 4), RandomBytes(rng, rng() % 3, 3),
                        static_cast<int64_t>(rng() % 6), kTypes[rng() % 4]));
    }
    check(FirstKeyOfRow(""));
    check(MakeFlatKey(std::string(30, '\xff'), "", 0, CellType::kPut));
  }
  RowHeads none;
  none.Build(0, [](size_t) { return std::string_view(); });
  EXPECT_EQ(none.LowerBound(ParseFlatKeyUnchecked(FirstKeyOfRow("a")), [](size_t) { return KeyView(); }), 0u);
}

TEST(BlockCodecTest, ErrorsNameEncodingCellAndOffset) {
  Cells cells = SeedCells(3);
  std::string payload = Build(DataBlockEncoding::kNone, cells);
  payload[29 + 8 + 8 + 2 + 4 + 2] = 0x7f;  // 2nd cell's timestamp high byte: now out of order
  auto d = DecodeBlock(DataBlockEncoding::kNone, payload);
  ASSERT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
  std::string msg(d.status().message());
  EXPECT_NE(msg.find("NONE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cell 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte offset 29"), std::string::npos) << msg;

  d = DecodeBlock(static_cast<DataBlockEncoding>(9), payload);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
}

// A hostile PREFIX block whose cells all share a long key: tiny payload, huge decoded size.
TEST(BlockCodecTest, ExpansionBombIsRefused) {
  std::string key = MakeFlatKey(std::string(30000, 'x'), "q", 1, CellType::kPut);
  std::string payload;
  PutVarint64(&payload, 0);
  PutVarint64(&payload, key.size());
  PutVarint64(&payload, 0);
  payload += key;
  for (int i = 0; i < 20000; ++i) {
    PutVarint64(&payload, key.size());  // share everything
    PutVarint64(&payload, 0);
    PutVarint64(&payload, 0);
  }
  auto d = DecodeBlock(DataBlockEncoding::kPrefix, payload);
  ASSERT_EQ(d.status().code(), absl::StatusCode::kDataLoss) << d.status();
  EXPECT_NE(std::string(d.status().message()).find("decoded size"), std::string::npos) << d.status();

  // The same kind of cells through the builder decode fine.
  Cells cells(301, {key, ""});
  for (DataBlockEncoding e : kEncodings) {
    auto ok = DecodeBlock(e, Build(e, cells));
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ((*ok)->num_cells(), 301);
  }
}

TEST(BlockCodecTest, RowIndexRecordsRowStarts) {
  Cells cells = SeedCells(10);
  std::string payload = Build(DataBlockEncoding::kRowIndex, cells);
  ASSERT_EQ(DecodeFixed32(payload.data() + payload.size() - 4), 10u);
  for (int r = 0; r < 10; ++r) {
    EXPECT_EQ(DecodeFixed32(payload.data() + payload.size() - 4 - 40 + 4 * r), static_cast<uint32_t>(r * 2 * 29));
  }
  // A wrong row offset is caught.
  payload[payload.size() - 4 - 40 + 4] ^= 1;
  EXPECT_EQ(DecodeBlock(DataBlockEncoding::kRowIndex, payload).status().code(), absl::StatusCode::kDataLoss);
}

TEST(BlockCodecTest, FastDiffUnderHalfOfNoneOnSeedTable) {
  Cells cells = SeedCells(1000);
  size_t none = 0;
  for (DataBlockEncoding e : kEncodings) {
    std::string payload = Build(e, cells);
    if (e == DataBlockEncoding::kNone) none = payload.size();
    std::printf("%-9s %7zu bytes, %.2f bytes/cell\n", EncodingName(e), payload.size(),
                static_cast<double>(payload.size()) / static_cast<double>(cells.size()));
    auto d = DecodeBlock(e, payload);
    ASSERT_TRUE(d.ok()) << d.status();
  }
  std::string fast = Build(DataBlockEncoding::kFastDiff, cells);
  EXPECT_LT(fast.size() * 2, none);
}

// Scans a cached decoded block; reports raw cell bytes per second (the target is > 1 GB/s in an
// optimised build; not asserted because sanitizer and debug builds are far slower).
TEST(BlockCodecTest, ScanThroughput) {
  Cells cells = SeedCells(1000);
  auto d = DecodeBlock(DataBlockEncoding::kFastDiff, Build(DataBlockEncoding::kFastDiff, cells));
  ASSERT_TRUE(d.ok());
  auto it = NewBlockIterator(*d);
  size_t raw = 0;
  for (const auto& [k, v] : cells) raw += k.size() + v.size();
  const int kRounds = 2000;
  size_t sum = 0;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < kRounds; ++r) {
    for (it->SeekToFirst(); it->Valid(); it->Next()) sum += it->key().size() + it->value().size();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(sum, raw * kRounds);
  std::printf("scan: %.2f GB/s of raw cell bytes (%.1f ns/cell)\n", static_cast<double>(sum) / secs / 1e9,
              secs * 1e9 / static_cast<double>(cells.size() * kRounds));
}

TEST(CompressionTest, RoundTripAll) {
  std::mt19937_64 rng(5);
  std::vector<std::string> inputs = {"", "a", std::string(100000, 'z'), RandomBytes(rng, 100000),
                                     RandomBytes(rng, 7), Build(DataBlockEncoding::kNone, SeedCells(1000))};
  for (Compression c : kCompressions) {
    for (const std::string& in : inputs) {
      SCOPED_TRACE(absl::StrCat(CompressionName(c), " ", in.size()));
      std::string z, out = "junk";
      ASSERT_TRUE(CompressBlock(c, in, &z).ok());
      if (c != Compression::kNone && in.size() == 100000 && in[0] == 'z' && in[1] == 'z') {
        EXPECT_LT(z.size(), in.size() / 10);
      }
      ASSERT_TRUE(UncompressBlock(c, z, in.size(), &out).ok());
      EXPECT_EQ(out, in);
      // Wrong expected sizes.
      EXPECT_EQ(UncompressBlock(c, z, in.size() + 1, &out).code(), absl::StatusCode::kDataLoss);
      if (!in.empty()) {
        EXPECT_EQ(UncompressBlock(c, z, in.size() - 1, &out).code(), absl::StatusCode::kDataLoss);
      }
      EXPECT_EQ(UncompressBlock(c, z, kMaxUncompressedBlockSize + 1, &out).code(), absl::StatusCode::kDataLoss);
    }
  }
}

TEST(CompressionTest, CorruptInputIsDataLoss) {
  std::string in = Build(DataBlockEncoding::kPrefix, SeedCells(200));
  std::mt19937_64 rng(11);
  for (Compression c : {Compression::kSnappy, Compression::kZlib}) {
    std::string z, out;
    ASSERT_TRUE(CompressBlock(c, in, &z).ok());
    for (size_t len = 0; len < z.size(); len += 1 + len / 16) {
      EXPECT_EQ(UncompressBlock(c, z.substr(0, len), in.size(), &out).code(), absl::StatusCode::kDataLoss) << len;
    }
    // Trailing garbage.
    EXPECT_EQ(UncompressBlock(c, z + "x", in.size(), &out).code(), absl::StatusCode::kDataLoss);
    int bad = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::string p = z;
      p[rng() % p.size()] ^= static_cast<char>(1 << (rng() % 8));
      absl::Status s = UncompressBlock(c, p, in.size(), &out);
      if (!s.ok()) {
        ++bad;
        ASSERT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
        EXPECT_NE(std::string(s.message()).find(CompressionName(c)), std::string::npos) << s;
      } else {
        ASSERT_EQ(out.size(), in.size());
      }
    }
    EXPECT_GT(bad, 0);
    // A length header claiming a huge size is refused before allocating.
    std::string huge;
    PutVarint64(&huge, uint64_t{1} << 40);
    EXPECT_EQ(UncompressBlock(c, huge, size_t{1} << 40, &out).code(), absl::StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace basalt
