// Tests of basalt-bench's latency histogram and YCSB key space / request distribution.
#include <cmath>
#include <cstdint>
#include <map>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/tools/bench/bench_util.h"
#include "src/tools/bench/histogram.h"
#include "src/tools/bench/ycsb.h"

namespace basalt::bench {
namespace {

TEST(LatencyHistogram, BucketsAreContiguousAndWithinOnePercent) {
  for (int b = 0; b + 1 < LatencyHistogram::kBuckets; ++b) {
    ASSERT_EQ(LatencyHistogram::BucketLow(b) + LatencyHistogram::BucketWidth(b), LatencyHistogram::BucketLow(b + 1))
        << "bucket " << b;
    if (b >= 256) {
      EXPECT_LE(static_cast<double>(LatencyHistogram::BucketWidth(b)) / LatencyHistogram::BucketLow(b), 1.0 / 128);
    }
  }
  for (uint64_t v : {0ull, 1ull, 255ull, 256ull, 257ull, 1000ull, 123456789ull, (1ull << 40) + 12345}) {
    int b = LatencyHistogram::BucketOf(v);
    EXPECT_LE(LatencyHistogram::BucketLow(b), v);
    EXPECT_LT(v, LatencyHistogram::BucketLow(b) + LatencyHistogram::BucketWidth(b));
  }
  EXPECT_EQ(LatencyHistogram::BucketOf(~uint64_t{0}), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogram, PercentilesOfUniformSamples) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v * 1000);  // 1 µs .. 100 ms
  EXPECT_EQ(h.Count(), 100000u);
  for (double q : {0.5, 0.95, 0.99, 0.999}) {
    double want = q * 100000 * 1000;
    EXPECT_NEAR(h.PercentileNanos(q), want, want * 0.005) << q;
  }
  EXPECT_EQ(h.MaxNanos(), 100000000u);
  EXPECT_NEAR(h.MeanNanos(), 50000.5 * 1000, 1);
  EXPECT_LE(h.PercentileNanos(1.0), 100000000.0);
}

TEST(LatencyHistogram, MergeAddsCounts) {
  LatencyHistogram a, b, m;
  std::thread ta([&] { for (int i = 0; i < 1000; ++i) a.Record(100); });
  std::thread tb([&] { for (int i = 0; i < 3000; ++i) b.Record(10000); });
  ta.join();
  tb.join();
  m.Merge(a);
  m.Merge(b);
  EXPECT_EQ(m.Count(), 4000u);
  EXPECT_EQ(m.PercentileNanos(0.25), 100);
  EXPECT_NEAR(m.PercentileNanos(0.26), 10000, 50);
  EXPECT_EQ(m.MaxNanos(), 10000u);
  LatencyHistogram empty;
  EXPECT_EQ(empty.PercentileNanos(0.5), 0);
}

TEST(Ycsb, FnvHashAndKeysAsYcsb) {
  // FNV-1a-64 over eight zero bytes, then |h| as a signed long (Java's Math.abs).
  uint64_t h = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; ++i) h *= 1099511628211ull;
  int64_t sh = static_cast<int64_t>(h);
  EXPECT_EQ(YcsbFnvHash64(0), static_cast<uint64_t>(sh < 0 ? -sh : sh));
  EXPECT_EQ(YcsbKey(0), "user" + std::to_string(YcsbFnvHash64(0)));
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_LT(YcsbFnvHash64(i), uint64_t{1} << 63);
  EXPECT_NE(YcsbKey(1), YcsbKey(2));
}

TEST(Ycsb, ZetaMatchesYcsbConstant) {
  // YCSB's ZipfianGenerator.ZETAN for 10^10 items at theta 0.99.
  EXPECT_NEAR(Zeta(kYcsbScrambledItems, 0.99), 26.46902820178302, 1e-6);
  // Exact sums for small n.
  EXPECT_DOUBLE_EQ(Zeta(1, 0.99), 1.0);
  EXPECT_NEAR(Zeta(3, 0.5), 1 + 1 / std::sqrt(2.0) + 1 / std::sqrt(3.0), 1e-12);
  // Past the exact part: compare with a direct sum.
  double direct = 0;
  for (uint64_t i = 1; i <= 3'000'000; ++i) direct += std::pow(static_cast<double>(i), -0.99);
  EXPECT_NEAR(Zeta(3'000'000, 0.99), direct, 1e-7);
}

TEST(Ycsb, ZipfianIsSkewedAsTheory) {
  const uint64_t items = 1000;
  ZipfianGenerator z(items, 0.99, Zeta(items, 0.99));
  uint64_t rng = 1;
  std::vector<uint64_t> counts(items);
  const int n = 1'000'000;
  for (int i = 0; i < n; ++i) {
    uint64_t v = z.Next(UnitDouble(SplitMix64(&rng)));
    ASSERT_LT(v, items);
    ++counts[v];
  }
  // P(0) = 1 / zeta(n), P(1) = 2^-theta / zeta(n).
  double zeta = Zeta(items, 0.99);
  EXPECT_NEAR(counts[0] / static_cast<double>(n), 1 / zeta, 0.005);
  EXPECT_NEAR(counts[1] / static_cast<double>(n), std::pow(0.5, 0.99) / zeta, 0.005);
  EXPECT_GT(counts[0], counts[10]);
  EXPECT_GT(counts[10], counts[500]);
}

TEST(Ycsb, ScrambledZipfianStaysInRangeAndSpreadsHotKeys) {
  const uint64_t records = 100000;
  ScrambledZipfianGenerator g(records, 7);
  std::map<uint64_t, int> counts;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    uint64_t v = g.Next();
    ASSERT_LT(v, records);
    ++counts[v];
  }
  // The hottest key (Zipfian item 0) takes about 1/zeta(10^10) ≈ 3.8 % of requests...
  int hottest = 0;
  uint64_t hottest_key = 0;
  for (const auto& [k, c] : counts) {
    if (c > hottest) hottest = c, hottest_key = k;
  }
  EXPECT_NEAR(hottest / static_cast<double>(n), 1 / 26.469, 0.005);
  EXPECT_EQ(hottest_key, YcsbFnvHash64(0) % records);
  // ...and the requests touch much of the key space, not just its start.
  EXPECT_GT(counts.size(), records / 4);
  EXPECT_GT(counts.rbegin()->first, records * 9 / 10);
}

TEST(Ycsb, SkewedLatestFavoursTheNewestAndFollowsGrowth) {
  SkewedLatestGenerator g(11);
  const int n = 100000;
  for (uint64_t latest : {1000u, 5000u}) {  // the second grows zeta term by term
    std::map<uint64_t, int> counts;
    for (int i = 0; i < n; ++i) {
      uint64_t v = g.Next(latest);
      ASSERT_LT(v, latest);
      ++counts[v];
    }
    EXPECT_NEAR(counts[latest - 1] / static_cast<double>(n), 1 / Zeta(latest, 0.99), 0.01) << latest;
    EXPECT_GT(counts[latest - 1], counts[latest - 2]);
    EXPECT_GT(counts[latest - 2], counts[latest - 50]);
  }
  // A single record is always the one.
  EXPECT_EQ(g.Next(1), 0u);
}

TEST(Ycsb, InsertOrdinalsAcknowledgeOnlyAContiguousPrefix) {
  InsertOrdinals ins(100);
  uint64_t a = ins.Take(), b = ins.Take(), c = ins.Take();
  EXPECT_EQ(a, 100u);
  EXPECT_EQ(c, 102u);
  EXPECT_EQ(ins.Acknowledged(), 100u);
  ins.Ack(c);  // done out of order: 100 and 101 are not yet
  EXPECT_EQ(ins.Acknowledged(), 100u);
  ins.Ack(a);
  EXPECT_EQ(ins.Acknowledged(), 101u);
  ins.Ack(b);
  EXPECT_EQ(ins.Acknowledged(), 103u);
}

}  // namespace
}  // namespace basalt::bench
