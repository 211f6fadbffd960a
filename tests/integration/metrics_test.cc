// /metrics on a real basalt-server (docs/DESIGN.md §11): scraped before and after a small
// load through the client, read by Prometheus' own parser (tests/util/prometheus_text.h); the
// counters moved as the load says (Gets and Puts counted and timed, bytes in and out, log
// appends and syncs, the table's memstore). And the HTTP port's settings: one given must bind,
// the default only warns when taken.
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/integration/integration_util.h"
#include "tests/util/http_get.h"
#include "tests/util/prometheus_text.h"

namespace basalt::testing {
namespace {

class MetricsScrape : public ServerTest {
 protected:
  // HOST:PORT of the server's HTTP port, as its status says.
  std::string HttpAddress() {
    auto st = conn_->GetAdmin()->Status();
    EXPECT_TRUE(st.ok()) << st.status();
    return st.ok() ? st->http_address : "";
  }
  // One scrape, parsed; fails the test when the port does not answer or the text does not parse.
  std::map<std::string, double> Scrape(const std::string& address, std::string* content_type = nullptr) {
    absl::StatusOr<HttpReply> res = HttpGet(address, "/metrics");
    EXPECT_TRUE(res.ok()) << res.status();
    if (!res.ok()) return {};
    EXPECT_EQ(res->status, 200);
    if (content_type != nullptr) *content_type = res->content_type;
    auto parsed = ParsePrometheusText(res->body);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return parsed.ok() ? *parsed : std::map<std::string, double>{};
  }
  static double Delta(const std::map<std::string, double>& before, const std::map<std::string, double>& after,
                      const std::string& key) {
    const double b = before.count(key) ? before.at(key) : 0;
    EXPECT_TRUE(after.count(key)) << key << " is not in the scrape";
    return (after.count(key) ? after.at(key) : 0) - b;
  }
};

TEST_F(MetricsScrape, CountersMoveAsTheLoadSaysAndTheTextParses) {
  StartServer({"--http_listen=127.0.0.1:0"});
  CreateTable("t");
  const std::string http = HttpAddress();
  ASSERT_FALSE(http.empty()) << "the server reports no HTTP port";
  std::string content_type;
  const std::map<std::string, double> before = Scrape(http, &content_type);
  EXPECT_EQ(content_type, "text/plain; version=0.0.4; charset=utf-8");

  auto table = conn_->GetTable("t");
  const std::string value(1024, 'v');
  constexpr int kPuts = 50, kGets = 80;
  for (int i = 0; i < kPuts; ++i) ASSERT_TRUE(table->Put(Put(absl::StrCat("row", i)).Add("cf", "q", value)).ok());
  for (int i = 0; i < kGets; ++i) {
    auto r = table->Get(Get(absl::StrCat("row", i % kPuts)));
    ASSERT_TRUE(r.ok()) << r.status();
  }
  EXPECT_FALSE(table->Get(Get("row1").AddFamily("nope")).ok());  // refused by the server: an error, counted
  auto scanner = table->GetScanner(Scan());
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  int rows = 0;
  for (Result r;;) {
    auto more = (*scanner)->Next(&r);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ++rows;
  }
  EXPECT_EQ(rows, kPuts);
  const std::map<std::string, double> after = Scrape(http);

  // Get and Put took the TCP fast path (the client's choice where there is no RDMA device), and
  // the server counts them under it.
  EXPECT_EQ(Delta(before, after, "basalt_requests_total{op=get,transport=tcp}"), kGets + 1);
  EXPECT_EQ(Delta(before, after, "basalt_request_errors_total{op=get,transport=tcp}"), 1);
  EXPECT_EQ(Delta(before, after, "basalt_requests_total{op=mutate,transport=tcp}"), kPuts);
  EXPECT_EQ(Delta(before, after, "basalt_request_duration_seconds_count{op=get,transport=tcp}"), kGets + 1);
  EXPECT_EQ(Delta(before, after, "basalt_request_duration_seconds_count{op=mutate,transport=tcp}"), kPuts);
  EXPECT_GT(Delta(before, after, "basalt_request_duration_seconds_sum{op=get,transport=tcp}"), 0);
  EXPECT_EQ(Delta(before, after, "basalt_requests_total{op=get,transport=grpc}"), 0);
  EXPECT_GE(Delta(before, after, "basalt_received_bytes_total{transport=tcp}"), kPuts * 1024);
  EXPECT_GE(Delta(before, after, "basalt_sent_bytes_total{transport=tcp}"), kGets * 1024);
  EXPECT_GE(Delta(before, after, "basalt_tcp_calls_total{}"), kGets + kPuts + 1);
  // A scan counts once, its bytes as the messages go: this one, and the client's read of the
  // table's regions from basalt:meta (a scan) before its first Put.
  EXPECT_EQ(Delta(before, after, "basalt_requests_total{op=scan,transport=grpc}"), 2);
  EXPECT_EQ(Delta(before, after, "basalt_request_duration_seconds_count{op=scan,transport=grpc}"), 2);
  EXPECT_GE(Delta(before, after, "basalt_sent_bytes_total{transport=grpc}"), kPuts * 1024);  // the scan's
  EXPECT_EQ(Delta(before, after, "basalt_wal_appends_total{}"), kPuts);
  // Every Put is durable when answered (SYNC_WAL): one sync, or fewer shared by writers.
  const double syncs = Delta(before, after, "basalt_wal_syncs_total{}");
  EXPECT_GE(syncs, 1);
  EXPECT_LE(syncs, kPuts);
  EXPECT_EQ(Delta(before, after, "basalt_wal_synced_records_total{}"), kPuts);
  EXPECT_GE(after.at("basalt_table_memstore_bytes{table=t}"), kPuts * 1024);
  EXPECT_EQ(after.at("basalt_table_regions{table=t}"), 1);
  EXPECT_GT(after.at("basalt_process_resident_bytes{}"), 0);
  EXPECT_GT(after.at("basalt_process_threads{}"), 1);
}

// The snapshot gauges: a snapshot's bytes are shared with its table until the table lets them
// go (a drop), then pinned by the snapshot alone; deleting it frees them.
TEST_F(MetricsScrape, TheSnapshotGaugesFollowWhatTheSnapshotsAloneKeep) {
  StartServer({"--http_listen=127.0.0.1:0"});
  CreateTable("t");
  const std::string http = HttpAddress();
  ASSERT_FALSE(http.empty()) << "the server reports no HTTP port";
  std::map<std::string, double> m = Scrape(http);
  EXPECT_EQ(m["basalt_snapshots{}"], 0);
  EXPECT_EQ(m["basalt_snapshot_bytes{}"], 0);

  auto table = conn_->GetTable("t");
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(table->Put(Put(absl::StrCat("row", i)).Add("cf", "q", std::string(1024, 'v'))).ok());
  }
  ASSERT_TRUE(conn_->GetAdmin()->Snapshot("t", "s1").ok());
  m = Scrape(http);
  EXPECT_EQ(m["basalt_snapshots{}"], 1);
  EXPECT_GE(m["basalt_snapshot_bytes{}"], 20 * 1024) << "the memstore was flushed into the snapshot's files";
  EXPECT_EQ(m["basalt_snapshot_pinned_bytes{}"], 0) << "the table still names every file";

  ASSERT_TRUE(conn_->GetAdmin()->DisableTable("t").ok());
  ASSERT_TRUE(conn_->GetAdmin()->DropTable("t").ok());
  m = Scrape(http);
  EXPECT_EQ(m["basalt_snapshots{}"], 1);
  EXPECT_EQ(m["basalt_snapshot_pinned_bytes{}"], m["basalt_snapshot_bytes{}"]) << "the drop left them to the snapshot";

  ASSERT_TRUE(conn_->GetAdmin()->DeleteSnapshot("s1").ok());
  m = Scrape(http);
  EXPECT_EQ(m["basalt_snapshots{}"], 0);
  EXPECT_EQ(m["basalt_snapshot_bytes{}"], 0);
  EXPECT_EQ(m["basalt_snapshot_pinned_bytes{}"], 0);
}

TEST_F(MetricsScrape, AnHttpPortGivenMustBindAndOffMeansNone) {
  StartServer({"--http_listen=127.0.0.1:0"});
  const std::string taken = HttpAddress();
  ASSERT_FALSE(taken.empty());
  // Given explicitly and taken: the server does not start, and says why.
  ServerProcess second(BASALT_SERVER_BINARY, dir_.path() + "/second", {"--http_listen=" + taken}, dir_.path());
  EXPECT_FALSE(second.Start().ok());
  std::ifstream err(dir_.path() + "/stderr");
  std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(absl::StrCat("http_listen ", taken, ": cannot listen there")), std::string::npos) << text;
  // off: none.
  ServerProcess third(BASALT_SERVER_BINARY, dir_.path() + "/third", {"--http_listen=off"});
  ASSERT_TRUE(third.Start().ok());
  ConnectionOptions o;
  o.address = third.address();
  auto c = Connection::Open(o);
  ASSERT_TRUE(c.ok()) << c.status();
  auto st = (*c)->GetAdmin()->Status();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->http_address, "");
}

}  // namespace
}  // namespace basalt::testing
