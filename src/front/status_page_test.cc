// The status pages' rendering (src/front/status_page.h) without a server: escaping, the
// figures in their places, the graph's lines, JSON that a parser reads, and the latency history's
// quantiles per interval. tests/integration/status_page_test.cc loads the page of a real server
// in Chromium.
#include "src/front/status_page.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/util/http_get.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

StatusPageData Sample() {
  StatusPageData d;
  d.program = "basalt-server";
  d.server_name = "127.0.0.1:16020";
  d.now = absl::FromUnixSeconds(1795000000);
  d.status.set_mode("standalone");
  d.status.set_version("basalt 0.1");
  d.status.set_uptime_seconds(93784);
  d.status.mutable_wal()->set_records(10);
  d.status.mutable_wal()->set_syncs(4);
  d.status.mutable_wal()->set_synced_records(10);
  rpc::TableStatus* t = d.status.add_tables();
  t->set_name("a<b>&\"c'");  // not a valid table name: the page escapes whatever it is given
  t->set_state(rpc::TABLE_ENABLED);
  t->set_regions(2);
  t->set_write_requests(1234);
  t->set_error("");
  rpc::RegionStatus r;
  r.set_name("t,,1");
  r.set_encoded_name("abc");
  r.set_start_key(std::string("\x01z", 2));
  r.set_state("OPEN");
  r.set_server("127.0.0.1:16020");
  r.set_write_requests(77);
  d.regions.push_back(r);
  d.conf = {{"listen", "127.0.0.1:16020", true}};
  d.log = {{d.now, log::Level::kWarning, "flush <failed> & healed"}};
  d.latency_interval = absl::Seconds(10);
  std::vector<LatencyHistory::Point> pts;
  for (int i = 0; i < 5; ++i) {
    LatencyHistory::Point p;
    p.at = d.now - absl::Seconds(10 * (4 - i));
    p.count = i == 2 ? 0 : 100;  // one interval without operations: a gap
    p.p50_us = i == 2 ? std::nan("") : 80 + i;
    p.p99_us = i == 2 ? std::nan("") : 900;
    pts.push_back(p);
  }
  d.latency = {{"get", pts}};
  return d;
}

TEST(StatusPageHtml, EscapesWhatItShowsAndPutsTheFiguresInTheirRows) {
  const std::string html = RenderStatusHtml(Sample());
  EXPECT_EQ(html.find("a<b>"), std::string::npos);
  EXPECT_NE(html.find("<tr data-table=\"a&lt;b&gt;&amp;&quot;c&#39;\"><td>a&lt;b&gt;&amp;&quot;c&#39;</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\">1234</td>"), std::string::npos);  // the table's writes
  EXPECT_NE(html.find("<tr data-region=\"abc\"><td>t,,1</td><td>\\x01z</td>"), std::string::npos);
  EXPECT_NE(html.find("flush &lt;failed&gt; &amp; healed"), std::string::npos);
  EXPECT_NE(html.find("1d 2h 3m 4s"), std::string::npos);
  EXPECT_NE(html.find("2.50"), std::string::npos);  // writers per sync: 10 records in 4 syncs
  EXPECT_EQ(html.find("<section id=\"servers\">"), std::string::npos) << "a standalone server lists no servers";
}

TEST(StatusPageHtml, AMasterListsItsRegionServers) {
  StatusPageData d = Sample();
  d.status.set_mode("master");
  d.wal_section = false;
  d.servers_section = true;
  rpc::ServerLoad* s = d.status.add_servers();
  s->set_name("10.0.0.1:16020,17");
  s->set_address("10.0.0.1:16020");
  s->set_regions(3);
  s->set_error("no answer");
  const std::string html = RenderStatusHtml(d);
  EXPECT_NE(html.find("<tr data-server=\"10.0.0.1:16020\"><td>10.0.0.1:16020,17</td><td class=\"n\">3</td>"),
            std::string::npos);
  EXPECT_NE(html.find("no answer"), std::string::npos);
  EXPECT_EQ(html.find("<section id=\"wal\">"), std::string::npos) << "the master's page shows no data log";
}

TEST(StatusPageHtml, SnapshotsAreListedWhereTheProcessKeepsThem) {
  StatusPageData d = Sample();
  EXPECT_EQ(RenderStatusHtml(d).find("<section id=\"snapshots\">"), std::string::npos) << "no catalogue, no section";
  d.snapshots_section = true;
  EXPECT_NE(RenderStatusHtml(d).find("<h2>Snapshots (0)</h2>"), std::string::npos);
  rpc::SnapshotDescription s;
  s.set_name("nightly<1>");
  s.set_table("t");
  s.set_created_ms(int64_t{1795000000} * 1000);
  s.set_ttl_seconds(3600);
  s.set_regions(2);
  s.set_files(5);
  s.set_bytes(1536);
  s.set_only_bytes(1024);
  s.set_owner("bob");
  d.snapshots.push_back(s);
  const std::string html = RenderStatusHtml(d);
  EXPECT_NE(html.find("<tr data-snapshot=\"nightly&lt;1&gt;\"><td>nightly&lt;1&gt;</td><td>t</td>"
                      "<td>2026-11-18T11:06:40.000Z</td><td>2026-11-18T12:06:40.000Z</td><td>bob</td>"
                      "<td class=\"n\">2</td><td class=\"n\">5</td><td class=\"n\">1.5 KiB</td>"
                      "<td class=\"n\">1.0 KiB</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(RenderStatusJson(d).find("\"snapshots\":[{\"name\":\"nightly\\u003c1\\u003e\""), std::string::npos)
      << RenderStatusJson(d);
}

TEST(StatusPageHtml, ReplicationPeersAreListedWithHowFarBehindEachIs) {
  StatusPageData d = Sample();
  EXPECT_EQ(RenderStatusHtml(d).find("<section id=\"replication\">"), std::string::npos) << "no peers kept, no section";
  d.peers_section = true;
  rpc::PeerStatus p;
  p.mutable_peer()->set_id("dr");
  p.mutable_peer()->set_cluster_key("zk1:2181:/hbase");
  p.set_state("RETRYING");
  p.set_lag_bytes(3 << 20);
  p.set_age_ms(1200);
  p.set_entries(42);
  p.set_failed_calls(3);
  p.set_last_error("UNAVAILABLE: sink <b>");
  d.peers.push_back(p);
  const std::string html = RenderStatusHtml(d);
  EXPECT_NE(html.find("<h2>Replication peers (1)</h2>"), std::string::npos) << html;
  EXPECT_NE(html.find("<tr data-peer=\"dr\"><td>dr</td><td>zk1:2181:/hbase</td><td class=\"state-RETRYING\">RETRYING"
                      "</td><td class=\"n\">3.0 MiB</td><td class=\"n\">1200 ms</td><td class=\"n\">42</td>"
                      "<td class=\"n\">3</td><td>UNAVAILABLE: sink &lt;b&gt;</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(RenderStatusJson(d).find("\"replication_peers\":[{\"peer\":{\"id\":\"dr\""), std::string::npos)
      << RenderStatusJson(d);
}

TEST(StatusPageSvg, DrawsEachRunOfIntervalsWithOperationsAndSkipsTheEmptyOnes) {
  StatusPageData d = Sample();
  const std::string svg = LatencySvg(d.latency, d.latency_interval, d.now);
  // p50 and p99, each in two runs around the empty interval.
  EXPECT_EQ(testing::Occurrences(svg, "data-series=\"get-p50\""), 2u);
  EXPECT_EQ(testing::Occurrences(svg, "data-series=\"get-p99\""), 2u);
  EXPECT_EQ(testing::Occurrences(svg, "<polyline"), 4u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  // The newest point sits at the right edge ("now").
  EXPECT_NE(svg.find(absl::StrCat(64 + (900 - 64 - 130), ".0,")), std::string::npos) << svg;
}

TEST(StatusPageJson, PythonReadsItAndNanIsNull) {
  const std::string json = RenderStatusJson(Sample());
  EXPECT_EQ(json.find("nan"), std::string::npos);
  testing::TempDir dir;
  std::ofstream(dir.path() + "/s.json") << json;
  FILE* p = ::popen(absl::StrCat("/usr/bin/python3 -c \"import json,sys; d=json.load(open(sys.argv[1])); "
                                 "print(d['status']['tables'][0]['name'], d['regions'][0]['write_requests'], "
                                 "d['latency']['series']['get'][2]['p50_us'], d['log'][0]['level'])\" ",
                                 dir.path(), "/s.json 2>&1")
                        .c_str(),
                    "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  std::string out;
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << out;
  EXPECT_EQ(out, "a<b>&\"c' 77 None WARNING\n");
}

TEST(StatusPageText, ConfMarksDefaultsAndSizesAreHuman) {
  EXPECT_EQ(RenderConfText({{"a", "1", true}, {"b", "2", false}}),
            "# The settings in force: given (by the config file or a flag), or the default.\na = 1\nb = 2    # default\n");
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(3ull << 30), "3.0 GiB");
  EXPECT_EQ(HumanDuration(59), "59s");
  EXPECT_EQ(HumanDuration(3600), "1h 0m 0s");
}

TEST(LatencyHistory, EachSampleHoldsTheQuantilesOfItsOwnIntervalAndTheLastOnesAreKept) {
  metrics::Histogram h(metrics::LatencyBucketsMicros());
  LatencyHistory history({{"get", &h}}, absl::ZeroDuration(), 3);
  for (int i = 0; i < 100; ++i) h.Observe(40);  // (25, 50]
  history.Sample();
  for (int i = 0; i < 100; ++i) h.Observe(4000);  // (2500, 5000]
  history.Sample();
  history.Sample();  // nothing since
  LatencyHistory::Points pts = history.Get();
  ASSERT_EQ(pts.size(), 1u);
  ASSERT_EQ(pts[0].second.size(), 3u);
  EXPECT_EQ(pts[0].second[0].count, 100u);
  EXPECT_GT(pts[0].second[0].p50_us, 25);
  EXPECT_LE(pts[0].second[0].p99_us, 50);
  EXPECT_EQ(pts[0].second[1].count, 100u);
  EXPECT_GT(pts[0].second[1].p50_us, 2500) << "the second interval's quantiles are its own";
  EXPECT_EQ(pts[0].second[2].count, 0u);
  EXPECT_TRUE(std::isnan(pts[0].second[2].p50_us));
  history.Sample();
  EXPECT_EQ(history.Get()[0].second.size(), 3u) << "only the last 3 are kept";
}

}  // namespace
}  // namespace basalt::server
