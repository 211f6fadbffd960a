// Tests for the bloom filter (storage/internal/bloom.h) and the block cache
// (storage/internal/block_cache.h).
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/coding.h"
#include "common/crc.h"
#include "storage/internal/block_cache.h"
#include "storage/internal/bloom.h"

namespace basalt {
namespace {

std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "row%08d", i);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Bloom

TEST(BloomTest, EmptyFilterContainsNothing) {
  BloomBuilder b;
  EXPECT_EQ(b.num_keys(), 0u);
  std::string data = b.Finish();
  auto r = BloomReader::Parse(data);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->MayContain("a"));
  EXPECT_FALSE(r->MayContain(""));
}

TEST(BloomTest, NoFalseNegativesAndLowFalsePositiveRate) {
  constexpr int kKeys = 100000;
  BloomBuilder b(10);
  for (int i = 0; i < kKeys; ++i) b.AddKey(Key(i));
  EXPECT_EQ(b.num_keys(), static_cast<size_t>(kKeys));
  std::string data = b.Finish();
  auto r = BloomReader::Parse(data);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(r->MayContain(Key(i))) << i;

  int fp = 0;
  constexpr int kProbes = 100000;
  for (int i = 0; i < kProbes; ++i) fp += r->MayContain(Key(kKeys + i)) ? 1 : 0;
  const double rate = static_cast<double>(fp) / kProbes;
  std::printf("bloom: %zu bits, k=%d, false-positive rate %.4f%%\n", r->num_bits(),
              r->num_probes(), rate * 100);
  EXPECT_LT(rate, 0.02);
}

TEST(BloomTest, VaryingLengthsAndSizes) {
  for (int n : {1, 10, 100, 1000, 10000}) {
    BloomBuilder b;
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.push_back(std::string(static_cast<size_t>(i % 23), 'x') + Key(i));
    for (const auto& k : keys) b.AddKey(k);
    std::string data = b.Finish();
    auto r = BloomReader::Parse(data);
    ASSERT_TRUE(r.ok()) << r.status();
    for (const auto& k : keys) ASSERT_TRUE(r->MayContain(k)) << n;
  }
}

TEST(BloomTest, ConsecutiveDuplicatesCountedOnce) {
  BloomBuilder b;
  b.AddKey("r1");
  b.AddKey("r1");
  b.AddKey("r1");
  b.AddKey("r2");
  b.AddKey("r1");  // not consecutive: counted again (harmless, same bits)
  EXPECT_EQ(b.num_keys(), 3u);
  auto data = b.Finish();
  EXPECT_EQ(b.num_keys(), 0u);  // Finish resets
  auto r = BloomReader::Parse(data);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->MayContain("r1"));
  EXPECT_TRUE(r->MayContain("r2"));
}

TEST(BloomTest, RowColKeysDoNotCollide) {
  // Different splits of the same bytes are different keys.
  EXPECT_NE(BloomKeyRowCol("a", "bc"), BloomKeyRowCol("ab", "c"));
  EXPECT_NE(BloomKeyRowCol("", "abc"), BloomKeyRowCol("abc", ""));
  EXPECT_NE(BloomKeyRowCol("abc", ""), std::string("abc"));  // ROWCOL key != ROW key
  std::set<std::string> seen;
  const std::string s = "abcdef";
  for (size_t i = 0; i <= s.size(); ++i) {
    EXPECT_TRUE(seen.insert(BloomKeyRowCol(s.substr(0, i), s.substr(i))).second) << i;
  }
  // A long row uses a multi-byte varint length.
  std::string long_row(300, 'r');
  EXPECT_NE(BloomKeyRowCol(long_row, "q"), BloomKeyRowCol(long_row + "q", ""));

  // A ROWCOL filter answers for (row, qualifier), not for the row alone or another column.
  BloomBuilder b;
  for (int i = 0; i < 1000; ++i) b.AddKey(BloomKeyRowCol(Key(i), "q1"));
  std::string data = b.Finish();
  auto r = BloomReader::Parse(data);
  ASSERT_TRUE(r.ok());
  int row_hits = 0, other_col_hits = 0;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(r->MayContain(BloomKeyRowCol(Key(i), "q1")));
    row_hits += r->MayContain(Key(i));
    other_col_hits += r->MayContain(BloomKeyRowCol(Key(i), "q2"));
  }
  EXPECT_LT(row_hits, 50);
  EXPECT_LT(other_col_hits, 50);
}

TEST(BloomTest, HashIsStable) {
  // Part of the on-disk format: must never change.
  EXPECT_EQ(BloomHash(""), BloomHash(std::string_view()));
  EXPECT_NE(BloomHash("a"), BloomHash("b"));
  EXPECT_NE(BloomHash(std::string("\0", 1)), BloomHash(""));
  BloomBuilder b;
  b.AddKey("hello");
  std::string d1 = b.Finish();
  b.AddKey("hello");
  EXPECT_EQ(b.Finish(), d1);
}

std::string Sample() {
  BloomBuilder b;
  for (int i = 0; i < 50; ++i) b.AddKey(Key(i));
  return b.Finish();
}

// Rewrites the trailer's crc after a deliberate change, to reach the checks behind it.
void Reseal(std::string* d) {
  const size_t n = d->size();
  EncodeFixed32(d->data() + n - 5, MaskCrc(Crc32c(d->data(), n - 5)));
}

TEST(BloomTest, ParseRejectsTruncation) {
  const std::string data = Sample();
  for (size_t len = 0; len < data.size(); ++len) {
    auto r = BloomReader::Parse(std::string_view(data).substr(0, len));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << len;
  }
  // Dropping leading bytes: sizes no longer add up.
  for (size_t drop = 1; drop < data.size(); ++drop) {
    auto r = BloomReader::Parse(std::string_view(data).substr(drop));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << drop;
  }
}

TEST(BloomTest, ParseRejectsEveryBitFlip) {
  const std::string data = Sample();
  ASSERT_TRUE(BloomReader::Parse(data).ok());
  for (size_t i = 0; i < data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string d = data;
      d[i] = static_cast<char>(d[i] ^ (1 << bit));
      auto r = BloomReader::Parse(d);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(BloomTest, ParseRejectsBadFieldsBehindAValidCrc) {
  const std::string data = Sample();
  const size_t n = data.size();
  for (int k : {0, kBloomMaxProbes + 1, 255}) {
    std::string d = data;
    d[n - 6] = static_cast<char>(k);
    Reseal(&d);
    auto r = BloomReader::Parse(d);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << k;
    EXPECT_NE(r.status().message().find("probe count"), std::string::npos) << r.status();
  }
  {
    std::string d = data;
    d[n - 1] = 2;  // unknown version
    EXPECT_EQ(BloomReader::Parse(d).status().code(), absl::StatusCode::kDataLoss);
  }
  {
    // A bit array that is not whole words, with a consistent size field and crc.
    std::string d(12, '\0');
    PutFixed32(&d, 12);
    d.push_back(6);
    PutFixed32(&d, 0);
    d.push_back(static_cast<char>(kBloomFormatVersion));
    Reseal(&d);
    auto r = BloomReader::Parse(d);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find("bit array size"), std::string::npos) << r.status();
  }
  {
    // An empty bit array.
    std::string d;
    PutFixed32(&d, 0);
    d.push_back(6);
    PutFixed32(&d, 0);
    d.push_back(static_cast<char>(kBloomFormatVersion));
    Reseal(&d);
    EXPECT_EQ(BloomReader::Parse(d).status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(BloomTest, ParseNeverCrashesOnGarbage) {
  std::mt19937 rng(42);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string d(rng() % 64, '\0');
    for (auto& c : d) c = static_cast<char>(rng());
    if (!d.empty() && iter % 2 == 0) d.back() = static_cast<char>(kBloomFormatVersion);
    auto r = BloomReader::Parse(d);
    if (r.ok()) {
      r->MayContain("x");
    } else {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Block cache

std::shared_ptr<const void> Val(const std::string& s) { return std::make_shared<const std::string>(s); }
std::string AsString(const std::shared_ptr<const void>& v) {
  return *static_cast<const std::string*>(v.get());
}

TEST(BlockCacheTest, HitAndMiss) {
  BlockCache cache(1 << 20);
  const uint64_t f = BlockCache::NewFileId();
  EXPECT_EQ(cache.Lookup({f, 0}), nullptr);
  cache.Insert({f, 0}, Val("zero"), 100);
  cache.Insert({f, 4096}, Val("one"), 100);
  ASSERT_NE(cache.Lookup({f, 0}), nullptr);
  EXPECT_EQ(AsString(cache.Lookup({f, 0})), "zero");
  EXPECT_EQ(AsString(cache.Lookup({f, 4096})), "one");
  EXPECT_EQ(cache.Lookup({f + 1, 0}), nullptr);  // other file, same offset

  cache.Insert({f, 0}, Val("zero'"), 300);  // replaces
  EXPECT_EQ(AsString(cache.Lookup({f, 0})), "zero'");

  auto s = cache.GetStats();
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.inserts, 3u);
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.usage_bytes, 400u);
  EXPECT_EQ(s.capacity_bytes, size_t{1} << 20);

  cache.Erase({f, 0});
  EXPECT_EQ(cache.Lookup({f, 0}), nullptr);
  EXPECT_EQ(cache.GetStats().usage_bytes, 100u);
  cache.Erase({f, 12345});  // absent: no-op
}

TEST(BlockCacheTest, LruOrder) {
  BlockCache cache(300, /*num_shard_bits=*/0);
  cache.Insert({1, 0}, Val("a"), 100);
  cache.Insert({1, 1}, Val("b"), 100);
  cache.Insert({1, 2}, Val("c"), 100);
  ASSERT_NE(cache.Lookup({1, 0}), nullptr);  // a is now most recent; b is the LRU
  cache.Insert({1, 3}, Val("d"), 100);
  EXPECT_EQ(cache.Lookup({1, 1}), nullptr);
  EXPECT_NE(cache.Lookup({1, 0}), nullptr);
  EXPECT_NE(cache.Lookup({1, 2}), nullptr);
  EXPECT_NE(cache.Lookup({1, 3}), nullptr);
  // Order now (LRU first): a, c, d. A 200-byte entry evicts a and c.
  cache.Insert({1, 4}, Val("e"), 200);
  EXPECT_EQ(cache.Lookup({1, 0}), nullptr);
  EXPECT_EQ(cache.Lookup({1, 2}), nullptr);
  EXPECT_NE(cache.Lookup({1, 3}), nullptr);
  EXPECT_NE(cache.Lookup({1, 4}), nullptr);
  EXPECT_EQ(cache.GetStats().evictions, 3u);
  EXPECT_EQ(cache.GetStats().usage_bytes, 300u);
}

// A hit on an entry among the most recent quarter keeps its place; one older than that
// becomes the most recent.
TEST(BlockCacheTest, AHitInTheMostRecentQuarterKeepsItsPlace) {
  BlockCache cache(800, /*num_shard_bits=*/0);
  for (uint64_t i = 0; i < 8; ++i) cache.Insert({1, i}, Val("v"), 100);
  ASSERT_NE(cache.Lookup({1, 6}), nullptr);  // second most recent: stays behind 7
  ASSERT_NE(cache.Lookup({1, 1}), nullptr);  // old: moves to the front
  // Order now (LRU first): 0, 2, 3, 4, 5, 6, 7, 1. Six new entries evict the first six.
  for (uint64_t i = 8; i < 14; ++i) cache.Insert({1, i}, Val("v"), 100);
  for (uint64_t gone : {0, 2, 3, 4, 5, 6}) EXPECT_EQ(cache.Lookup({1, gone}), nullptr) << gone;
  EXPECT_NE(cache.Lookup({1, 7}), nullptr);
  EXPECT_NE(cache.Lookup({1, 1}), nullptr);
  EXPECT_EQ(cache.GetStats().evictions, 6u);
}

TEST(BlockCacheTest, TooLargeIsNotCached) {
  BlockCache cache(1000, /*num_shard_bits=*/2);  // 250 bytes a shard
  cache.Insert({1, 0}, Val("small"), 100);
  cache.Insert({1, 0}, Val("huge"), 251);  // not cached, and the old value is gone
  EXPECT_EQ(cache.Lookup({1, 0}), nullptr);
  auto s = cache.GetStats();
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.usage_bytes, 0u);
  EXPECT_EQ(s.inserts, 1u);
  cache.Insert({1, 0}, Val("fits"), 250);
  EXPECT_NE(cache.Lookup({1, 0}), nullptr);
}

TEST(BlockCacheTest, CapacityBoundInBytes) {
  constexpr size_t kCapacity = 64 * 1024;
  BlockCache cache(kCapacity, 3);
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const size_t charge = 1 + rng() % 4096;
    cache.Insert({rng() % 4, static_cast<uint64_t>(rng() % 2000) * 4096}, Val("v"), charge);
    auto s = cache.GetStats();
    ASSERT_LE(s.usage_bytes, kCapacity) << i;
    ASSERT_EQ(s.capacity_bytes, kCapacity);
  }
  auto s = cache.GetStats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_GT(s.usage_bytes, kCapacity / 2);  // shards fill up, not merely stay under
}

TEST(BlockCacheTest, PinnedValueSurvivesEviction) {
  BlockCache cache(100, 0);
  cache.Insert({1, 0}, Val("pinned"), 100);
  std::shared_ptr<const void> pin = cache.Lookup({1, 0});
  ASSERT_NE(pin, nullptr);
  std::weak_ptr<const void> weak = pin;
  cache.Insert({1, 1}, Val("other"), 100);  // evicts the pinned block
  EXPECT_EQ(cache.Lookup({1, 0}), nullptr);
  EXPECT_EQ(AsString(pin), "pinned");
  cache.EraseFile(1);
  EXPECT_EQ(AsString(pin), "pinned");
  pin.reset();
  EXPECT_TRUE(weak.expired());  // the cache held no other reference
}

TEST(BlockCacheTest, EraseFile) {
  BlockCache cache(1 << 20);
  const uint64_t f1 = BlockCache::NewFileId();
  const uint64_t f2 = BlockCache::NewFileId();
  EXPECT_NE(f1, f2);
  EXPECT_NE(f1, 0u);
  for (uint64_t off = 0; off < 100; ++off) {
    cache.Insert({f1, off * 4096}, Val("1"), 10);
    cache.Insert({f2, off * 4096}, Val("2"), 10);
  }
  EXPECT_EQ(cache.GetStats().entries, 200u);
  cache.EraseFile(f1);
  auto s = cache.GetStats();
  EXPECT_EQ(s.entries, 100u);
  EXPECT_EQ(s.usage_bytes, 1000u);
  for (uint64_t off = 0; off < 100; ++off) {
    EXPECT_EQ(cache.Lookup({f1, off * 4096}), nullptr);
    ASSERT_NE(cache.Lookup({f2, off * 4096}), nullptr);
    EXPECT_EQ(AsString(cache.Lookup({f2, off * 4096})), "2");
  }
}

TEST(BlockCacheTest, NewFileIdUniqueAcrossThreads) {
  std::vector<std::vector<uint64_t>> ids(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ids, t] {
      for (int i = 0; i < 1000; ++i) ids[t].push_back(BlockCache::NewFileId());
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), 4000u);
}

TEST(BlockCacheTest, ConcurrentLookupInsert) {
  constexpr size_t kCapacity = 32 * 1024;
  BlockCache cache(kCapacity, 2);
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, &bad, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 50000; ++i) {
        const uint64_t file = rng() % 3;
        const uint64_t off = rng() % 256;
        const CacheKey k{file, off};
        const uint32_t op = rng() % 100;
        if (op < 60) {
          auto v = cache.Lookup(k);
          // Every value stored under k names k; a pinned value stays readable.
          if (v != nullptr && AsString(v) != std::to_string(file) + ":" + std::to_string(off)) {
            bad.fetch_add(1);
          }
        } else if (op < 95) {
          cache.Insert(k, Val(std::to_string(file) + ":" + std::to_string(off)), 64 + rng() % 512);
        } else if (op < 99) {
          cache.Erase(k);
        } else {
          cache.EraseFile(file);
        }
        if (i % 1000 == 0 && cache.GetStats().usage_bytes > kCapacity) bad.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0u);
  auto s = cache.GetStats();
  EXPECT_LE(s.usage_bytes, kCapacity);
  EXPECT_GT(s.hits, 0u);
  EXPECT_GT(s.misses, 0u);
}

}  // namespace
}  // namespace basalt
