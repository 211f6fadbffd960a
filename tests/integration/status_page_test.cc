// The status page of a real basalt-server, as a person sees it (docs/DESIGN.md §11): headless
// Chromium (Debian's chromium) loads http://HOST:PORT/ of a server with tables, regions and a
// little load, and the test reads the DOM the browser built (--dump-dom): the tables and regions
// listed with their numbers, the latency graph drawn. A screenshot is kept beside the test
// (status_page.png in the test's working directory, build/tests/integration/). And /status.json,
// /conf and /logs answer with what the page shows.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/integration/integration_util.h"
#include "tests/util/child_process.h"
#include "tests/util/http_get.h"

namespace basalt::testing {
namespace {

// Runs a program, returning what it printed on stdout (stderr dropped: Chromium's chatter).
absl::StatusOr<std::string> RunCommand(std::vector<std::string> argv) {
  const std::string what = absl::StrJoin(argv, " ");
  absl::StatusOr<ChildProcess::Finished> run = ChildProcess::Run(std::move(argv), /*with_stderr=*/false);
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) return absl::InternalError(absl::StrCat("exit code ", run->exit_code, " from: ", what));
  return run->output;
}

std::string ChromiumBinary() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// The text of each cell (<td>) of the row whose opening tag carries `attribute`, tags stripped.
std::vector<std::string> RowCells(const std::string& dom, const std::string& attribute) {
  std::vector<std::string> cells;
  const size_t row = dom.find("<tr " + attribute);
  if (row == std::string::npos) return cells;
  const size_t end = dom.find("</tr>", row);
  const std::string tr = dom.substr(row, end - row);
  for (size_t at = tr.find("<td"); at != std::string::npos; at = tr.find("<td", at + 1)) {
    const size_t open_end = tr.find('>', at);
    const size_t close = tr.find("</td>", open_end);
    std::string text;
    bool in_tag = false;
    for (char c : tr.substr(open_end + 1, close - open_end - 1)) {
      if (c == '<') in_tag = true;
      if (!in_tag) text += c;
      if (c == '>') in_tag = false;
    }
    cells.push_back(text);
  }
  return cells;
}

class StatusPage : public ServerTest {};

TEST_F(StatusPage, ChromiumShowsTheTablesRegionsAndLatencyOfARunningServer) {
  const std::string chromium = ChromiumBinary();
  ASSERT_FALSE(chromium.empty()) << "no Chromium (Debian's chromium package; deploy/install-deps.sh installs it)";
  StartServer({"--http_listen=127.0.0.1:0", "--latency_graph_interval_ms=300"});
  CreateTable("users", {"info"});
  CreateTable("events", {"d"}, {"g", "n"});
  auto status = conn_->GetAdmin()->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  const std::string http = status->http_address;
  ASSERT_FALSE(http.empty());

  // A little load: 60 rows in events (20 a region), read back; one row in users.
  auto events = conn_->GetTable("events");
  constexpr int kRows = 60;
  for (int i = 0; i < kRows; ++i) {
    const std::string row = absl::StrCat(std::string(1, "cix"[i % 3]), i);  // c.. , i.. , x..: each region
    ASSERT_TRUE(events->Put(Put(row).Add("d", "q", "value")).ok());
    auto got = events->Get(Get(row));
    ASSERT_TRUE(got.ok()) << got.status();
  }
  ASSERT_TRUE(conn_->GetTable("users")->Put(Put("alice").Add("info", "city", "Lisbon")).ok());
  ASSERT_TRUE(conn_->GetAdmin()->Snapshot("events", "events-monday", /*ttl_seconds=*/7 * 24 * 3600).ok());
  absl::SleepFor(absl::Milliseconds(900));  // past two of the graph's intervals

  TempDir profile;
  const std::string url = absl::StrCat("http://", http, "/");
  auto with_flags = [&](std::vector<std::string> more) {
    std::vector<std::string> argv = {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                     "--no-first-run", "--user-data-dir=" + profile.path()};
    argv.insert(argv.end(), more.begin(), more.end());
    return argv;
  };
  absl::StatusOr<std::string> dom = RunCommand(with_flags({"--dump-dom", url}));
  ASSERT_TRUE(dom.ok()) << dom.status();
  ASSERT_NE(dom->find("<title>basalt-server"), std::string::npos) << *dom;

  // The tables, each with its regions and state; events' writes as the load made them.
  std::vector<std::string> ev = RowCells(*dom, "data-table=\"events\"");
  ASSERT_EQ(ev.size(), 11u) << *dom;
  EXPECT_EQ(ev[0], "events");
  EXPECT_EQ(ev[1], "ENABLED");
  EXPECT_EQ(ev[2], "3");                           // regions
  EXPECT_EQ(ev[7], absl::StrCat(kRows));           // writes
  EXPECT_EQ(ev[6], absl::StrCat(kRows));           // reads
  EXPECT_NE(ev[3], "0 B") << "events' memstore holds the rows";
  std::vector<std::string> users = RowCells(*dom, "data-table=\"users\"");
  ASSERT_EQ(users.size(), 11u);
  EXPECT_EQ(users[2], "1");
  EXPECT_EQ(users[7], "1");
  // Every region, with its keys and where it serves; each of events' took a third of the rows.
  EXPECT_EQ(Occurrences(*dom, "<tr data-region="), 4u);
  size_t events_regions = 0;
  for (size_t at = dom->find("<tr data-region="); at != std::string::npos; at = dom->find("<tr data-region=", at + 1)) {
    const std::string attr = dom->substr(at + 4, dom->find('>', at) - at - 4);
    std::vector<std::string> cells = RowCells(*dom, attr);
    ASSERT_EQ(cells.size(), 10u);
    EXPECT_EQ(cells[3], "OPEN");
    EXPECT_EQ(cells[4], server_->address());
    if (cells[0].rfind("events,", 0) == 0) {
      ++events_regions;
      EXPECT_EQ(cells[9], absl::StrCat(kRows / 3)) << cells[0];
    }
  }
  EXPECT_EQ(events_regions, 3u);
  // The snapshot: its table, its regions, a size, an expiry (its TTL), and nothing its own yet
  // (events still names every file).
  std::vector<std::string> snap = RowCells(*dom, "data-snapshot=\"events-monday\"");
  ASSERT_EQ(snap.size(), 9u) << *dom;
  EXPECT_EQ(snap[1], "events");
  EXPECT_NE(snap[3], "never");
  EXPECT_EQ(snap[5], "3");
  EXPECT_NE(snap[7], "0 B");
  EXPECT_EQ(snap[8], "0 B");
  // The log: the server's own lines, the write-ahead log's figures.
  EXPECT_NE(dom->find("listening on " + server_->address()), std::string::npos);
  const size_t records = dom->find("Records appended</th><td><span class=\"num\">");
  ASSERT_NE(records, std::string::npos);
  uint64_t appended = 0;
  const size_t num = dom->find('>', dom->find("<span", records)) + 1;
  ASSERT_TRUE(absl::SimpleAtoi(dom->substr(num, dom->find('<', num) - num), &appended));
  EXPECT_EQ(appended, kRows + 1u);
  // The graph: a p50 and a p99 line for Gets and Mutates, and the figures under it. They took the
  // TCP fast path (the client's choice where there is no RDMA device): its series.
  EXPECT_NE(dom->find("<svg id=\"latency-graph\""), std::string::npos);
  for (const char* series : {"get (tcp)-p50", "get (tcp)-p99", "mutate (tcp)-p50", "mutate (tcp)-p99"}) {
    EXPECT_NE(dom->find(absl::StrCat("data-series=\"", series, "\"")), std::string::npos) << series;
  }
  std::vector<std::string> gets = RowCells(*dom, "data-op=\"get (tcp)\"");
  ASSERT_EQ(gets.size(), 6u);
  EXPECT_EQ(gets[2], absl::StrCat(kRows)) << "Gets in the graph's span";
  EXPECT_TRUE(gets[3].find("µs") != std::string::npos || gets[3].find("ms") != std::string::npos) << gets[3];

  // A screenshot, kept for a person to look at.
  const std::string png = "status_page.png";
  std::remove(png.c_str());
  ASSERT_TRUE(RunCommand(with_flags({"--window-size=1280,1800", "--screenshot=" + png, url})).ok());
  std::ifstream in(png, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 10000u) << "no screenshot";
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  std::printf("screenshot: %s\n", (std::filesystem::current_path() / png).c_str());
}

TEST_F(StatusPage, TheJsonConfAndLogsSayWhatThePageShows) {
  StartServer({"--http_listen=127.0.0.1:0", "--block_cache_size=64MiB"});
  CreateTable("t", {"cf"}, {"m"});
  ASSERT_TRUE(conn_->GetAdmin()->Snapshot("t", "t-1").ok());
  auto status = conn_->GetAdmin()->Status();
  ASSERT_TRUE(status.ok());
  const std::string http = status->http_address;

  absl::StatusOr<HttpReply> json = HttpGet(http, "/status.json");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->status, 200);
  EXPECT_EQ(json->content_type, "application/json");
  // Read by Python's json module, as a script would.
  TempDir dir;
  std::ofstream(dir.path() + "/s.json") << json->body;
  absl::StatusOr<std::string> read = RunCommand(
      {"/usr/bin/python3", "-c",
       "import json,sys; d=json.load(open(sys.argv[1])); "
       "print(d['status']['mode'], len(d['regions']), d['regions'][0]['server'], d['conf']['block_cache_size'], "
       "[t['name'] for t in d['status']['tables']], sorted(d['latency']['series']), "
       "[(x['name'], x['table'], x['regions']) for x in d['snapshots']])",
       dir.path() + "/s.json"});
  ASSERT_TRUE(read.ok()) << read.status() << "\n" << json->body;
  EXPECT_EQ(*read, absl::StrCat("standalone 2 ", server_->address(),
                                " 64MiB ['t'] ['get', 'get (tcp)', 'mutate', 'mutate (tcp)', 'scan'] [('t-1', 't', 2)]\n"));

  absl::StatusOr<HttpReply> conf = HttpGet(http, "/conf");
  ASSERT_TRUE(conf.ok());
  EXPECT_NE(conf->body.find("\nblock_cache_size = 64MiB\n"), std::string::npos) << conf->body;
  EXPECT_NE(conf->body.find("\nmemstore_flush_size = 128MiB    # default\n"), std::string::npos) << conf->body;

  absl::StatusOr<HttpReply> logs = HttpGet(http, "/logs");
  ASSERT_TRUE(logs.ok());
  EXPECT_EQ(logs->content_type, "text/plain; charset=utf-8");
  EXPECT_NE(logs->body.find(" INFO listening on " + server_->address()), std::string::npos) << logs->body;

  absl::StatusOr<HttpReply> missing = HttpGet(http, "/nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
}

}  // namespace
}  // namespace basalt::testing
