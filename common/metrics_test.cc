// The metrics core (common/metrics.h): counting from many threads, histogram buckets, the text
// format exactly, bad names, and the output read back by the Prometheus project's own Python
// parser (Debian's python3-prometheus-client), as a scraper would read it.
#include "common/metrics.h"

#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/util/prometheus_text.h"

namespace basalt::metrics {
namespace {

TEST(MetricsTest, CountersFromManyThreadsSumExactly) {
  Registry r;
  auto c = r.AddCounter("basalt_test_total", "a test counter");
  ASSERT_TRUE(c.ok()) << c.status();
  auto h = r.AddHistogram("basalt_test_seconds", "a test histogram", {}, {10, 100}, 1e6);
  ASSERT_TRUE(h.ok()) << h.status();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100000; ++i) {
        (*c)->Add();
        (*h)->Observe(static_cast<uint64_t>(t * 20));  // 0, 20, ..., 140
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ((*c)->Value(), 800000u);
  const Histogram::Snapshot s = (*h)->Snap();
  EXPECT_EQ(s.count, 800000u);
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{100000, 600000, 800000}));  // <=10: t=0; <=100: t<=5
  EXPECT_EQ(s.sum, 100000u * (0 + 20 + 40 + 60 + 80 + 100 + 120 + 140));
  // The same name and labels give the same counter.
  EXPECT_EQ(*r.AddCounter("basalt_test_total", "a test counter"), *c);
}

TEST(MetricsTest, TheTextFormatIsExact) {
  Registry r;
  auto gets = r.AddCounter("basalt_requests_total", "Requests by operation.", {{"op", "get"}, {"transport", "grpc"}});
  auto puts = r.AddCounter("basalt_requests_total", "Requests by operation.", {{"op", "put"}, {"transport", "grpc"}});
  ASSERT_TRUE(gets.ok() && puts.ok());
  (*gets)->Add(3);
  (*puts)->Add(1);
  ASSERT_TRUE(r.AddGauge("basalt_memstore_bytes", "Bytes in\nmemstores \\ all.", {{"table", "t\"1"}},
                         [] { return 1536.0; })
                  .ok());
  auto lat = r.AddHistogram("basalt_get_seconds", "Get latency.", {{"transport", "grpc"}}, {25, 1000}, 1e6);
  ASSERT_TRUE(lat.ok());
  (*lat)->Observe(20);
  (*lat)->Observe(500);
  (*lat)->Observe(5000);
  ASSERT_TRUE(r.AddGaugeFamily("basalt_regions", "Regions per table.", [] {
                 return std::vector<std::pair<Labels, double>>{{{{"table", "b"}}, 2}, {{{"table", "a"}}, 0.5}};
               }).ok());
  EXPECT_EQ(r.Render(),
            "# HELP basalt_get_seconds Get latency.\n"
            "# TYPE basalt_get_seconds histogram\n"
            "basalt_get_seconds_bucket{transport=\"grpc\",le=\"2.5e-05\"} 1\n"
            "basalt_get_seconds_bucket{transport=\"grpc\",le=\"0.001\"} 2\n"
            "basalt_get_seconds_bucket{transport=\"grpc\",le=\"+Inf\"} 3\n"
            "basalt_get_seconds_sum{transport=\"grpc\"} 0.00552\n"
            "basalt_get_seconds_count{transport=\"grpc\"} 3\n"
            "# HELP basalt_memstore_bytes Bytes in\\nmemstores \\\\ all.\n"
            "# TYPE basalt_memstore_bytes gauge\n"
            "basalt_memstore_bytes{table=\"t\\\"1\"} 1536\n"
            "# HELP basalt_regions Regions per table.\n"
            "# TYPE basalt_regions gauge\n"
            "basalt_regions{table=\"a\"} 0.5\n"
            "basalt_regions{table=\"b\"} 2\n"
            "# HELP basalt_requests_total Requests by operation.\n"
            "# TYPE basalt_requests_total counter\n"
            "basalt_requests_total{op=\"get\",transport=\"grpc\"} 3\n"
            "basalt_requests_total{op=\"put\",transport=\"grpc\"} 1\n");
}

TEST(MetricsTest, MalformedNamesAndClashesAreRefused) {
  Registry r;
  EXPECT_EQ(r.AddCounter("", "x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.AddCounter("9lives_total", "x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.AddCounter("a-b_total", "x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.AddCounter("ok_total", "x", {{"__reserved", "v"}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.AddCounter("ok_total", "x", {{"a:b", "v"}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.AddHistogram("h", "x", {{"le", "1"}}, {1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.AddHistogram("h", "x", {}, {5, 1}).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(r.AddCounter("ok_total", "x").ok());
  EXPECT_EQ(r.AddGauge("ok_total", "x", {}, [] { return 1.0; }).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.AddCounter("ok_total", "other help").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MetricsTest, FormatValue) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(12345678901234.0), "12345678901234");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(1e300), "1e+300");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(0.0 / 0.0), "NaN");
}

// The output as Prometheus' own parser reads it: every sample with its labels and value.
TEST(MetricsTest, PrometheusOwnParserReadsTheOutput) {
  Registry r;
  auto c = r.AddCounter("basalt_requests_total", "Requests.", {{"op", "get"}, {"transport", "verbs"}});
  ASSERT_TRUE(c.ok());
  (*c)->Add(42);
  ASSERT_TRUE(r.AddGauge("basalt_memstore_bytes", "Memstore \"bytes\"\nsecond line", {{"table", "t\\1\"x"}},
                         [] { return 2048.0; })
                  .ok());
  auto h = r.AddHistogram("basalt_get_seconds", "Get latency.", {}, LatencyBucketsMicros(), 1e6);
  ASSERT_TRUE(h.ok());
  (*h)->Observe(80);
  (*h)->Observe(3000);
  auto parsed = basalt::testing::ParsePrometheusText(r.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const std::map<std::string, double> want = {
      {"basalt_requests_total{op=get,transport=verbs}", 42},
      {"basalt_memstore_bytes{table=t\\\\1\"x}", 2048},  // the label value t\1"x, repr-escaped
      {"basalt_get_seconds_bucket{le=0.0001}", 1},
      {"basalt_get_seconds_bucket{le=+Inf}", 2},
      {"basalt_get_seconds_count{}", 2},
      {"basalt_get_seconds_sum{}", 0.00308},
  };
  for (const auto& [key, value] : want) {
    ASSERT_TRUE(parsed->count(key)) << key << " is not among what the parser read";
    EXPECT_DOUBLE_EQ(parsed->at(key), value) << key;
  }
}

TEST(Quantile, InterpolatesWithinTheBucketAsPrometheusDoes) {
  const std::vector<uint64_t> bounds = {100, 200, 400};
  // 10 observations <= 100, 10 in (100, 200], none in (200, 400], 0 above.
  const std::vector<uint64_t> cumulative = {10, 20, 20, 20};
  EXPECT_DOUBLE_EQ(Quantile(bounds, cumulative, 0.5), 100);   // rank 10: the first bucket's top
  EXPECT_DOUBLE_EQ(Quantile(bounds, cumulative, 0.25), 50);   // rank 5: halfway into [0, 100]
  EXPECT_DOUBLE_EQ(Quantile(bounds, cumulative, 0.75), 150);  // rank 15: halfway into (100, 200]
  // Observations above the last bound: the last bound.
  EXPECT_DOUBLE_EQ(Quantile(bounds, {0, 0, 0, 5}, 0.99), 400);
  EXPECT_TRUE(std::isnan(Quantile(bounds, {0, 0, 0, 0}, 0.5)));
  EXPECT_TRUE(std::isnan(Quantile(bounds, {1, 2}, 0.5)));
}

}  // namespace
}  // namespace basalt::metrics
