// Every client operation against a real basalt-server on loopback: reads and writes, atomic
// row operations, scans across flushes, admin, async calls, the buffered mutator, restarts, and
// bad requests with their exact status codes.
#include <signal.h>

#include <atomic>
#include <functional>
#include <future>
#include <thread>

#include "tests/integration/integration_util.h"
#include "transport/verbs/setup.h"

namespace basalt::testing {
namespace {

using absl::StatusCode;

class ClientOps : public ServerTest {
 protected:
  void SetUp() override {
    StartServer();
    CreateTable("t1", {"cf", "cf2"});
    table_ = conn_->GetTable("t1");
  }
  // Writes `n` rows of 1 KB ("row10000"...) and opens a scanner over the table that has
  // returned the first row: a stream with more to send than fits in flight.
  void OpenScannerOverRows(int n, std::unique_ptr<ResultScanner>* scanner) {
    std::vector<RowMutationsBase> rows;
    for (int i = 0; i < n; i++) {
      rows.push_back(Put(absl::StrCat("row", 10000 + i)).Add("cf", "q", std::string(1000, 'v')));
    }
    auto statuses = table_->Batch(rows);
    ASSERT_TRUE(statuses.ok()) << statuses.status();
    auto opened = table_->GetScanner(Scan());
    ASSERT_TRUE(opened.ok()) << opened.status();
    *scanner = std::move(*opened);
    Result first;
    ASSERT_TRUE(*(*scanner)->Next(&first));
    ASSERT_EQ(first.row(), "row10000");
  }
  std::unique_ptr<Table> table_;
};

std::vector<std::string> Values(const Result& r) {
  std::vector<std::string> v;
  for (const auto& c : r.cells()) v.push_back(c.family + ":" + c.qualifier + "=" + c.value);
  return v;
}

TEST_F(ClientOps, PutGetVersionsAndTimeRange) {
  ASSERT_TRUE(table_->Put(Put("r1").Add("cf", "a", "v1", 100).Add("cf2", "b", "x", 100)).ok());
  ASSERT_TRUE(table_->Put(Put("r1").Add("cf", "a", "v2", 200)).ok());
  auto r = table_->Get(Get("r1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->row(), "r1");
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf:a=v2", "cf2:b=x"}));
  EXPECT_EQ(r->Value("cf", "a").value_or("?"), "v2");
  EXPECT_FALSE(r->Value("cf", "zz").has_value());

  // Family max versions is 1 by default: the older version is gone.
  r = table_->Get(Get("r1").AddColumn("cf", "a").SetMaxVersions(5));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);
  // Time range [0, 150) sees nothing of cf:a (only the newest version is kept).
  r = table_->Get(Get("r1").AddFamily("cf2").SetTimeRange(0, 150));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf2:b=x"}));

  // A server timestamp is close to now.
  ASSERT_TRUE(table_->Put(Put("r2").Add("cf", "a", "now")).ok());
  r = table_->Get(Get("r2"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  EXPECT_NEAR(static_cast<double>(r->cells()[0].timestamp), static_cast<double>(now_ms), 60000.0);

  // A missing row is an empty result, not an error.
  r = table_->Get(Get("nope"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST_F(ClientOps, VersionedFamilyAndDeletes) {
  TableInfo t;
  t.name = "v";
  FamilySettings f;
  f.name = "cf";
  f.max_versions = 3;
  t.families.push_back(f);
  ASSERT_TRUE(conn_->GetAdmin()->CreateTable(t).ok());
  auto v = conn_->GetTable("v");
  for (int ts = 1; ts <= 4; ++ts) ASSERT_TRUE(v->Put(Put("r").Add("cf", "q", "v" + std::to_string(ts), ts)).ok());
  auto r = v->Get(Get("r").SetMaxVersions(10));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf:q=v4", "cf:q=v3", "cf:q=v2"}));

  // Delete without a timestamp: the newest version only (HBase's shell delete).
  ASSERT_TRUE(v->Delete(Delete("r").AddColumn("cf", "q")).ok());
  r = v->Get(Get("r").SetMaxVersions(10));
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf:q=v3", "cf:q=v2"}));
  // Exactly one version.
  ASSERT_TRUE(v->Delete(Delete("r").AddColumn("cf", "q", 2)).ok());
  r = v->Get(Get("r").SetMaxVersions(10));
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf:q=v3"}));
  // All versions at or below ts.
  ASSERT_TRUE(v->Put(Put("r").Add("cf", "p", "x", 5)).ok());
  ASSERT_TRUE(v->Delete(Delete("r").AddColumns("cf", "q", 10)).ok());
  r = v->Get(Get("r").SetMaxVersions(10));
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf:p=x"}));
  // Whole row.
  ASSERT_TRUE(v->Delete(Delete("r")).ok());
  r = v->Get(Get("r"));
  EXPECT_TRUE(r->empty());
  // Family delete.
  ASSERT_TRUE(table_->Put(Put("f").Add("cf", "a", "1").Add("cf2", "b", "2")).ok());
  ASSERT_TRUE(table_->Delete(Delete("f").AddFamily("cf")).ok());
  r = table_->Get(Get("f"));
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf2:b=2"}));
}

TEST_F(ClientOps, IncrementAppendCheckAndMutateRowMutations) {
  auto n = table_->IncrementColumnValue("c", "cf", "n", 5);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 5);
  auto r = table_->Increment(Increment("c").AddColumn("cf", "n", -2).AddColumn("cf", "m", 7));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DecodeCounter(r->Value("cf", "n").value_or("")).value_or(-1), 3);
  EXPECT_EQ(DecodeCounter(r->Value("cf", "m").value_or("")).value_or(-1), 7);
  r = table_->Get(Get("c").AddColumn("cf", "n"));
  EXPECT_EQ(r->Value("cf", "n").value_or(""), EncodeCounter(3));

  r = table_->Append(Append("a").Add("cf", "s", "ab"));
  ASSERT_TRUE(r.ok()) << r.status();
  r = table_->Append(Append("a").Add("cf", "s", "cd"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Value("cf", "s").value_or(""), "abcd");

  // CheckAndMutate: NOT_EXISTS, then EQUAL passing and failing.
  auto cam = CheckAndMutate::IfNotExists("k", "cf", "lock");
  cam.Then(Put("k").Add("cf", "lock", "me"));
  auto ok = table_->CheckAndMutate(cam);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(*ok);
  ok = table_->CheckAndMutate(cam);
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE(*ok);
  auto swap = CheckAndMutate::IfEquals("k", "cf", "lock", "me");
  swap.Then(Put("k").Add("cf", "lock", "you")).Then(Delete("k").AddColumn("cf", "other"));
  EXPECT_TRUE(*table_->CheckAndMutate(swap));
  EXPECT_FALSE(*table_->CheckAndMutate(swap));  // value is now "you"
  EXPECT_EQ(table_->Get(Get("k"))->Value("cf", "lock").value_or(""), "you");
  // HBase's direction: kLess passes when the given value < the stored one.
  CheckAndMutate less = CheckAndMutate::IfEquals("k", "cf", "lock", "a");
  less.op = CompareOp::kLess;
  less.Then(Put("k").Add("cf", "less", "1"));
  EXPECT_TRUE(*table_->CheckAndMutate(less));  // "a" < "you"

  // RowMutations: a put and a delete atomically.
  RowMutations rm("k");
  rm.Add(Put("k").Add("cf", "x", "1")).Add(Delete("k").AddColumn("cf", "less"));
  ASSERT_TRUE(table_->MutateRow(rm).ok());
  auto got = table_->Get(Get("k"));
  EXPECT_EQ(Values(*got), (std::vector<std::string>{"cf:lock=you", "cf:x=1"}));
}

// Without RDMA every Get (columns, versions, a time range, a filter) and every Put, Delete and
// row mutation travel over the TCP path as frames; Increment, Append, CheckAndMutate, batches
// and scans take gRPC, as over verbs (docs/DESIGN.md §4).
TEST_F(ClientOps, GetsPutsAndDeletesTakeTheTcpPathAndTheOtherCallsGrpc) {
  auto tcp_calls = [&] { return conn_->GetTransportStats().tcp_calls; };
  const uint64_t before = tcp_calls();
  ASSERT_TRUE(table_->Put(Put("v").Add("cf", "a", "1", 100).Add("cf", "b", "2", 100)).ok());
  ASSERT_TRUE(table_->Delete(Delete("v").AddColumn("cf", "b")).ok());
  auto r = table_->Get(Get("v").AddColumn("cf", "a").SetMaxVersions(3).SetTimeRange(0, 150));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf:a=1"}));
  r = table_->Get(Get("v").AddFamily("cf").SetFilter(Filter::ColumnPrefix("a")));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"cf:a=1"}));
  RowMutations rm("v");  // a Put and a Delete of one row, atomically: one Mutate
  rm.Add(Put("v").Add("cf", "x", "1")).Add(Delete("v").AddColumn("cf", "y"));
  ASSERT_TRUE(table_->MutateRow(rm).ok());
  EXPECT_EQ(tcp_calls() - before, 5u);
  const uint64_t framed = tcp_calls();
  ASSERT_TRUE(table_->Increment(Increment("v").AddColumn("cf", "n", 1)).ok());
  ASSERT_TRUE(table_->Append(Append("v").Add("cf", "s", "x")).ok());
  auto cam = CheckAndMutate::IfNotExists("v", "cf", "lock");
  cam.Then(Put("v").Add("cf", "lock", "me"));
  ASSERT_TRUE(table_->CheckAndMutate(cam).ok());
  auto batch = table_->Batch({Put("w1").Add("cf", "a", "1"), Put("w2").Add("cf", "a", "2")});
  ASSERT_TRUE(batch.ok()) << batch.status();
  auto scanner = table_->GetScanner(Scan());
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  Result row;
  int rows = 0;
  while (*(*scanner)->Next(&row)) ++rows;
  EXPECT_EQ(rows, 3);
  EXPECT_EQ(tcp_calls(), framed);
  const TransportStats ts = conn_->GetTransportStats();
  EXPECT_EQ(ts.path, "tcp");
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_EQ(ts.oversized, 0u);
}

TEST_F(ClientOps, BatchesMultiGetAsyncAndBufferedMutator) {
  std::vector<RowMutationsBase> batch;
  batch.push_back(Put("b1").Add("cf", "q", "1"));
  batch.push_back(Put("b2").Add("nofamily", "q", "2"));  // fails alone
  batch.push_back(Put("b3").Add("cf", "q", "3"));
  auto st = table_->Batch(batch);
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_EQ(st->size(), 3u);
  EXPECT_TRUE((*st)[0].ok());
  EXPECT_EQ((*st)[1].code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE((*st)[2].ok());

  auto rows = table_->Get(std::vector<Get>{Get("b1"), Get("b2"), Get("b3")});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].Value("cf", "q").value_or(""), "1");
  EXPECT_TRUE((*rows)[1].empty());
  EXPECT_EQ((*rows)[2].Value("cf", "q").value_or(""), "3");

  std::promise<absl::Status> put_done;
  table_->PutAsync(Put("async").Add("cf", "q", "a"), [&](absl::Status s) { put_done.set_value(s); });
  ASSERT_TRUE(put_done.get_future().get().ok());
  std::promise<absl::StatusOr<Result>> get_done;
  table_->GetAsync(Get("async"), [&](absl::StatusOr<Result> r) { get_done.set_value(std::move(r)); });
  auto ar = get_done.get_future().get();
  ASSERT_TRUE(ar.ok()) << ar.status();
  EXPECT_EQ(ar->Value("cf", "q").value_or(""), "a");
  std::promise<absl::Status> del_done;
  table_->DeleteAsync(Delete("async"), [&](absl::Status s) { del_done.set_value(s); });
  ASSERT_TRUE(del_done.get_future().get().ok());
  EXPECT_TRUE(table_->Get(Get("async"))->empty());
  std::promise<absl::StatusOr<Result>> bad_done;
  conn_->GetTable("missing")->GetAsync(Get("x"), [&](absl::StatusOr<Result> r) { bad_done.set_value(std::move(r)); });
  EXPECT_EQ(bad_done.get_future().get().status().code(), StatusCode::kNotFound);

  BufferedMutatorOptions bo;
  bo.write_buffer_size = 16 << 10;
  auto m = conn_->GetBufferedMutator("t1", bo);
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(m->Mutate(Put(absl::StrCat("bm", 10000 + i)).Add("cf", "q", std::string(100, 'x'))).ok());
  }
  ASSERT_TRUE(m->Flush().ok());
  ASSERT_TRUE(m->Mutate(Put("bmbad").Add("nofamily", "q", "x")).ok());
  EXPECT_EQ(m->Flush().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(m->Close().ok());
  EXPECT_EQ(m->Mutate(Put("late").Add("cf", "q", "x")).code(), StatusCode::kFailedPrecondition);
  auto sc = table_->GetScanner(Scan().WithStartRow("bm").WithStopRow("bn"));
  ASSERT_TRUE(sc.ok());
  int n = 0;
  Result row;
  while (*(*sc)->Next(&row)) ++n;
  EXPECT_EQ(n, 2000);
}

// Scans see one merged, ordered view across memstore and flushed files, and a scan keeps
// going while flushes and a major compaction run under it.
TEST_F(ClientOps, ScansAcrossFlushesAndCompactions) {
  auto admin = conn_->GetAdmin();
  auto key = [](int i) { return absl::StrCat("row", 100000 + i); };
  for (int i = 0; i < 3000; i += 2) ASSERT_TRUE(table_->Put(Put(key(i)).Add("cf", "q", "old")).ok());
  ASSERT_TRUE(admin->Flush("t1").ok());
  for (int i = 1; i < 3000; i += 2) ASSERT_TRUE(table_->Put(Put(key(i)).Add("cf", "q", "odd")).ok());
  ASSERT_TRUE(admin->Flush("t1").ok());
  for (int i = 0; i < 3000; i += 4) ASSERT_TRUE(table_->Put(Put(key(i)).Add("cf", "q", "new")).ok());
  for (int i = 0; i < 3000; i += 10) ASSERT_TRUE(table_->Delete(Delete(key(i))).ok());

  auto expect_value = [&](int i) -> std::string {
    if (i % 10 == 0) return "";
    if (i % 4 == 0) return "new";
    return i % 2 == 0 ? "old" : "odd";
  };
  auto check_scan = [&](Scan scan, int from, int to, uint64_t limit) {
    auto sc = table_->GetScanner(scan);
    ASSERT_TRUE(sc.ok()) << sc.status();
    Result row;
    int i = from;
    uint64_t rows = 0;
    for (;;) {
      auto more = (*sc)->Next(&row);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) break;
      while (expect_value(i).empty()) ++i;
      ASSERT_EQ(row.row(), key(i));
      ASSERT_EQ(row.Value("cf", "q").value_or(""), expect_value(i));
      ++i;
      ++rows;
      if (rows == 500) {
        // Flush and compact under the open scanner.
        ASSERT_TRUE(admin->Flush("t1").ok());
        ASSERT_TRUE(admin->MajorCompact("t1").ok());
      }
    }
    while (i < to && expect_value(i).empty()) ++i;
    if (limit == 0) {
      EXPECT_EQ(i, to);
    } else {
      EXPECT_EQ(rows, limit);
    }
  };
  check_scan(Scan().SetCaching(7), 0, 3000, 0);
  check_scan(Scan().WithStartRow(key(1234)).WithStopRow(key(2345)).SetCaching(100), 1234, 2345, 0);
  check_scan(Scan().WithStartRow(key(10)).SetLimit(33), 10, 3000, 33);

  // Column selection.
  ASSERT_TRUE(table_->Put(Put(key(1)).Add("cf2", "z", "zz")).ok());
  auto sc = table_->GetScanner(Scan().WithStartRow(key(0)).WithStopRow(key(5)).AddFamily("cf2"));
  ASSERT_TRUE(sc.ok());
  Result row;
  ASSERT_TRUE(*(*sc)->Next(&row));
  EXPECT_EQ(Values(row), (std::vector<std::string>{"cf2:z=zz"}));
  EXPECT_FALSE(*(*sc)->Next(&row));
}

TEST_F(ClientOps, AdminLifecycleAndStatus) {
  auto admin = conn_->GetAdmin();
  TableInfo t;
  t.name = "cfg";
  FamilySettings f;
  f.name = "cf";
  f.max_versions = 3;
  f.ttl_seconds = 60;
  f.encoding = "FAST_DIFF";
  f.compression = "SNAPPY";
  f.bloom = "ROWCOL";
  t.families.push_back(f);
  ASSERT_TRUE(admin->CreateTable(t).ok());
  EXPECT_EQ(admin->CreateTable(t).code(), StatusCode::kAlreadyExists);
  // A standalone server holds every region itself: moving and balancing are a cluster master's.
  auto regions = admin->ListRegions("cfg");
  ASSERT_TRUE(regions.ok()) << regions.status();
  absl::Status moved = admin->Move(regions->front().encoded_name);
  EXPECT_EQ(moved.code(), StatusCode::kFailedPrecondition) << moved;
  EXPECT_NE(moved.message().find("standalone"), std::string_view::npos) << moved;
  EXPECT_EQ(admin->Balance().status().code(), StatusCode::kFailedPrecondition);
  auto d = admin->DescribeTable("cfg");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->families.size(), 1u);
  EXPECT_EQ(d->families[0].max_versions, 3);
  EXPECT_EQ(d->families[0].ttl_seconds, 60);
  EXPECT_EQ(d->families[0].encoding, "FAST_DIFF");
  EXPECT_EQ(d->families[0].compression, "SNAPPY");
  EXPECT_EQ(d->families[0].bloom, "ROWCOL");
  EXPECT_TRUE(d->enabled);
  auto list = admin->ListTables();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "cfg");
  EXPECT_EQ((*list)[1].name, "t1");

  auto cfg = conn_->GetTable("cfg");
  ASSERT_TRUE(cfg->Put(Put("r").Add("cf", "q", "v")).ok());
  EXPECT_EQ(admin->DropTable("cfg").code(), StatusCode::kFailedPrecondition);  // still enabled
  ASSERT_TRUE(admin->DisableTable("cfg").ok());
  EXPECT_FALSE(admin->DescribeTable("cfg")->enabled);
  EXPECT_EQ(cfg->Get(Get("r")).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cfg->Put(Put("r").Add("cf", "q", "v")).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(admin->EnableTable("cfg").ok());
  EXPECT_EQ(cfg->Get(Get("r"))->Value("cf", "q").value_or(""), "v");
  ASSERT_TRUE(admin->DisableTable("cfg").ok());
  ASSERT_TRUE(admin->DropTable("cfg").ok());
  EXPECT_EQ(admin->DescribeTable("cfg").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cfg->Get(Get("r")).status().code(), StatusCode::kNotFound);
  // A re-created table starts empty.
  ASSERT_TRUE(admin->CreateTable(t).ok());
  EXPECT_TRUE(cfg->Get(Get("r"))->empty());

  auto status = admin->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->mode, "standalone");
  EXPECT_GT(status->requests, 0u);
  EXPECT_GT(status->resident_bytes, 0u);
  EXPECT_EQ(status->tables.size(), 2u);
}

// Admin's view of the verbs transport (Status's verbs fields, SetVerbs) and the client's own
// (GetTransportStats) on a host without an RDMA device; the soft-RoCE guest covers a device.
TEST_F(ClientOps, AdminVerbsStatusAndSwitchWithoutADevice) {
  if (verbs::RdmaDevices().ok()) GTEST_SKIP() << "this host has an RDMA device";
  auto admin = conn_->GetAdmin();
  auto status = admin->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->verbs.starts_with("off: no RDMA device (")) << status->verbs;
  EXPECT_FALSE(status->verbs_enabled);
  EXPECT_EQ(status->verbs_endpoints + status->verbs_requests + status->verbs_connects_accepted +
                status->verbs_connects_rejected + status->verbs_malformed_frames + status->verbs_sessions,
            0u);
  for (bool enabled : {false, true}) {
    absl::Status s = admin->SetVerbs(enabled);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
    const std::string want = absl::StrCat("SetVerbs ", enabled ? "on" : "off",
                                          ": this server serves no verbs transport (off: no RDMA device (");
    EXPECT_TRUE(std::string(s.message()).starts_with(want)) << s;
  }
  // The client found no device either: Get and Put take the TCP fast path, which the server
  // offers (tcp_front.h).
  EXPECT_TRUE(status->tcp.starts_with("on ")) << status->tcp;
  ASSERT_TRUE(table_->Put(Put("r").Add("cf", "q", "v")).ok());
  EXPECT_EQ(table_->Get(Get("r"))->Value("cf", "q").value_or(""), "v");
  TransportStats ts = conn_->GetTransportStats();
  EXPECT_TRUE(ts.verbs_state.starts_with("off: no RDMA device (")) << ts.verbs_state;
  EXPECT_EQ(ts.verbs_calls, 0u);
  EXPECT_EQ(ts.sessions, 0u);
  EXPECT_EQ(ts.path, "tcp");
  EXPECT_EQ(ts.tcp_state, "up");
  EXPECT_GE(ts.tcp_calls, 2u);
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_GE(ts.tcp_sessions, 1u);
  auto after = admin->Status();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GE(after->tcp_requests, 2u);
  EXPECT_GE(after->tcp_connections, 1u);
  EXPECT_EQ(after->tcp_hellos_refused + after->tcp_malformed_frames, 0u);
}

// A client that opened a scanner and stopped reading leaves the server's stream blocked on
// flow control, holding the table: Enable waited 10 s for it, then failed Unavailable, until
// the stream's deadline. Disabling the table now ends such streams.
TEST_F(ClientOps, PausedScannerDoesNotHoldUpEnable) {
  std::unique_ptr<ResultScanner> scanner;
  ASSERT_NO_FATAL_FAILURE(OpenScannerOverRows(3000, &scanner));
  auto admin = conn_->GetAdmin();
  ASSERT_TRUE(admin->DisableTable("t1").ok());
  const absl::Time start = absl::Now();
  absl::Status enabled = admin->EnableTable("t1");
  EXPECT_TRUE(enabled.ok()) << enabled;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(table_->Get(Get("row10000")).ok());
}

TEST_F(ClientOps, BadRequestsGetTheRightCodes) {
  auto admin = conn_->GetAdmin();
  auto missing = conn_->GetTable("missing");
  EXPECT_EQ(missing->Get(Get("r")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing->Put(Put("r").Add("cf", "q", "v")).code(), StatusCode::kNotFound);
  // A scan of a missing table fails at open or at the first Next.
  auto msc = missing->GetScanner(Scan());
  absl::Status scan_status = msc.status();
  if (msc.ok()) {
    Result row;
    scan_status = (*msc)->Next(&row).status();
  }
  EXPECT_EQ(scan_status.code(), StatusCode::kNotFound) << scan_status;
  EXPECT_EQ(admin->Flush("missing").code(), StatusCode::kNotFound);
  EXPECT_EQ(admin->DisableTable("missing").code(), StatusCode::kNotFound);

  EXPECT_EQ(table_->Put(Put("r").Add("nofamily", "q", "v")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table_->Put(Put("").Add("cf", "q", "v")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table_->Get(Get("")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table_->Get(Get("r").AddFamily("nofamily")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table_->Put(Put(std::string(40000, 'r')).Add("cf", "q", "v")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table_->Put(Put("r").Add("cf", "q", "v", -5)).code(), StatusCode::kInvalidArgument);
  // Over the engine's 16 MiB value limit, under the 64 MiB message cap.
  EXPECT_EQ(table_->Put(Put("r").Add("cf", "q", std::string(17 << 20, 'v'))).code(), StatusCode::kInvalidArgument);
  // Over the message cap: refused at once, not retried (it was sent 15 times over ~15 s).
  const absl::Time big_start = absl::Now();
  absl::Status big = table_->Put(Put("r").Add("cf", "q", std::string(65 << 20, 'v')));
  EXPECT_EQ(big.code(), StatusCode::kResourceExhausted) << big;
  EXPECT_LT(absl::Now() - big_start, absl::Seconds(3)) << big;
  EXPECT_EQ(std::string(big.message()).find("attempts"), std::string::npos) << big;
  // Counter over a value that is not 8 bytes.
  ASSERT_TRUE(table_->Put(Put("s").Add("cf", "q", "abc")).ok());
  EXPECT_EQ(table_->IncrementColumnValue("s", "cf", "q", 1).status().code(), StatusCode::kInvalidArgument);
  // CheckAndMutate whose mutation names another row.
  auto cam = CheckAndMutate::IfNotExists("x", "cf", "q");
  cam.mutations.row = "y";
  cam.mutations.mutations.push_back(CellMutation{CellMutation::Kind::kPut, "cf", "q", kLatestTimestamp, "v"});
  EXPECT_EQ(table_->CheckAndMutate(cam).status().code(), StatusCode::kInvalidArgument);

  TableInfo bad;
  bad.name = "bad name!";
  bad.families.push_back(FamilySettings{.name = "cf"});
  EXPECT_EQ(admin->CreateTable(bad).code(), StatusCode::kInvalidArgument);
  bad.name = "nofamilies";
  bad.families.clear();
  EXPECT_EQ(admin->CreateTable(bad).code(), StatusCode::kInvalidArgument);
  bad.families.push_back(FamilySettings{.name = "cf", .max_versions = -1});
  EXPECT_EQ(admin->CreateTable(bad).code(), StatusCode::kInvalidArgument);
  bad.families[0].max_versions = 1;
  bad.families[0].compression = "LZMA";
  EXPECT_EQ(admin->CreateTable(bad).code(), StatusCode::kInvalidArgument);
  // The server is still fine.
  EXPECT_TRUE(table_->Put(Put("r").Add("cf", "q", "v")).ok());
}

// --handler_threads=0 runs writes and admin calls inline on the CQ threads. They were queued
// for a pool with no threads instead: every write and admin call hung until its deadline.
class InlineHandlers : public ServerTest {};

TEST_F(InlineHandlers, HandlerThreadsZeroServesWritesAndAdmin) {
  StartServer({"--handler_threads=0"});
  Connect(absl::Seconds(5));
  CreateTable("t", {"cf"});
  auto table = conn_->GetTable("t");
  absl::Status put = table->Put(Put("r").Add("cf", "q", "v"));
  ASSERT_TRUE(put.ok()) << put;
  auto got = table->Get(Get("r"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->Value("cf", "q"), "v");
  EXPECT_EQ(server_->Terminate(), 0);
}

// Many clients write and read the same rows at once: a row's cells always come from one write
// (a write sets columns a and b to the same value), counters lose no increment, and a
// compare-and-set lock admits exactly one holder at a time.
TEST_F(ClientOps, ConcurrentClientsSeeWholeRowWrites) {
  constexpr int kWriters = 4, kReaders = 4, kRows = 8, kWrites = 150;
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0};
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<Connection>> conns;
  for (int i = 0; i < kWriters + kReaders; ++i) {
    ConnectionOptions o;
    o.address = server_->address();
    conns.push_back(std::move(*Connection::Open(o)));
  }
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto t = conns[w]->GetTable("t1");
      for (int i = 0; i < kWrites; ++i) {
        std::string v = absl::StrCat("w", w, "-", i);
        std::string row = absl::StrCat("shared", i % kRows);
        ASSERT_TRUE(t->Put(Put(row).Add("cf", "a", v).Add("cf2", "b", v)).ok());
        ASSERT_TRUE(t->IncrementColumnValue("counter", "cf", "n", 1).ok());
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      auto t = conns[kWriters + r]->GetTable("t1");
      while (!stop) {
        auto got = t->Get(Get(absl::StrCat("shared", reads % kRows)));
        ASSERT_TRUE(got.ok()) << got.status();
        ++reads;
        if (got->empty()) continue;
        if (got->Value("cf", "a") != got->Value("cf2", "b")) ++torn;
        auto sc = t->GetScanner(Scan().WithStartRow("shared").WithStopRow("sharee"));
        ASSERT_TRUE(sc.ok());
        Result row;
        while (*(*sc)->Next(&row)) {
          if (row.Value("cf", "a") != row.Value("cf2", "b")) ++torn;
        }
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  stop = true;
  for (size_t i = kWriters; i < threads.size(); ++i) threads[i].join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(*table_->IncrementColumnValue("counter", "cf", "n", 0), kWriters * kWrites);

  // Compare-and-set: each thread bumps a value it read, only if unchanged.
  ASSERT_TRUE(table_->Put(Put("cas").Add("cf", "v", "0")).ok());
  std::atomic<int> wins{0};
  std::vector<std::thread> casers;
  for (int c = 0; c < 4; ++c) {
    casers.emplace_back([&, c] {
      auto t = conns[c]->GetTable("t1");
      for (int i = 0; i < 50; ++i) {
        auto cur = t->Get(Get("cas"));
        ASSERT_TRUE(cur.ok());
        std::string v(cur->Value("cf", "v").value_or("0"));
        auto cam = CheckAndMutate::IfEquals("cas", "cf", "v", v);
        cam.Then(Put("cas").Add("cf", "v", std::to_string(std::stoi(v) + 1)));
        auto ok = t->CheckAndMutate(cam);
        ASSERT_TRUE(ok.ok());
        if (*ok) ++wins;
      }
    });
  }
  for (auto& t : casers) t.join();
  EXPECT_EQ(table_->Get(Get("cas"))->Value("cf", "v").value_or(""), std::to_string(wins.load()));
}

// SIGTERM shuts down cleanly (exit 0) and a restart brings the catalogue and the data back.
TEST_F(ClientOps, CleanRestartKeepsTablesAndData) {
  ASSERT_TRUE(table_->Put(Put("r").Add("cf", "q", "v1").SetDurability(Durability::kAsyncWal)).ok());
  // Disable/enable closes and reopens the region: the write must survive that too.
  ASSERT_TRUE(conn_->GetAdmin()->DisableTable("t1").ok());
  ASSERT_TRUE(conn_->GetAdmin()->EnableTable("t1").ok());
  ASSERT_TRUE(table_->Put(Put("r2").Add("cf2", "q", "v2").SetDurability(Durability::kSkipWal)).ok());
  EXPECT_EQ(server_->Terminate(), 0);
  // The server comes back a second later; a call made meanwhile rides out the restart with the
  // default retry budget.
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ASSERT_TRUE(server_->Start().ok());
  });
  auto r = table_->Get(Get("r"));
  restart.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("cf", "q").value_or(""), "v1");
  // A clean shutdown flushes, so even the SKIP_WAL write survives it.
  EXPECT_EQ(table_->Get(Get("r2"))->Value("cf2", "q").value_or(""), "v2");
  auto list = conn_->GetAdmin()->ListTables();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->size(), 1u);
}

// A scanner open across a clean restart resumes after the last row it returned (client.h:
// a broken stream is reopened), neither skipping nor repeating rows.
TEST_F(ClientOps, ScannerResumesAcrossCleanRestart) {
  std::unique_ptr<ResultScanner> scanner;
  ASSERT_NO_FATAL_FAILURE(OpenScannerOverRows(3000, &scanner));
  const absl::Time stop_start = absl::Now();
  EXPECT_EQ(server_->Terminate(), 0);
  const absl::Duration stop_took = absl::Now() - stop_start;
  ASSERT_TRUE(server_->Start().ok());
  int n = 1;
  std::string last = "row10000";  // the first row, already returned
  Result row;
  for (;;) {
    absl::StatusOr<bool> more = scanner->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ASSERT_LT(last, row.row());
    last = row.row();
    n++;
  }
  EXPECT_EQ(n, 3000);
  EXPECT_LT(stop_took, absl::Seconds(5));
}

// A call to a server that is alive but does not answer (stopped, as a frozen VM or a long pause
// is) ends at the call's deadline (client.h: "A call has one deadline"), over a connection that
// was open before the server stopped: a read, a write, a scan and an admin call.
TEST_F(ClientOps, CallsToAStoppedServerEndAtTheirDeadline) {
  ASSERT_TRUE(table_->Put(Put("r").Add("cf", "q", "v")).ok());
  Connect(absl::Milliseconds(700));
  std::unique_ptr<Table> table = conn_->GetTable("t1");
  ASSERT_TRUE(table->Get(Get("r")).ok());
  server_->Signal(SIGSTOP);
  // (Which call, when one fails: a CI run once saw one of the four answered OK at once by the
  // stopped server, 0 in 26 runs here since, 20 of them on a loaded machine.)
  auto took = [](size_t i, const std::function<absl::Status()>& call) {
    const absl::Time start = absl::Now();
    absl::Status s = call();
    EXPECT_FALSE(s.ok()) << "call " << i << " (get, put, scan, list tables) answered OK after "
                         << absl::FormatDuration(absl::Now() - start);
    EXPECT_TRUE(absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s)) << "call " << i << ": " << s;
    return absl::Now() - start;
  };
  std::vector<absl::Duration> times;
  // Each call in a thread of its own, so that a hang fails the test instead of stopping it.
  std::vector<std::function<absl::Status()>> calls = {
      [&] { return table->Get(Get("r")).status(); },
      [&] { return table->Put(Put("r").Add("cf", "q", "w")); },
      [&] {
        auto scanner = table->GetScanner(Scan());
        if (!scanner.ok()) return scanner.status();
        Result row;
        return (*scanner)->Next(&row).status();
      },
      [&] { return conn_->GetAdmin()->ListTables().status(); },
  };
  for (auto& call : calls) {
    auto done = std::async(std::launch::async, [&] { return took(times.size(), call); });
    if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      server_->Signal(SIGCONT);  // lets the hung call end, so that the test can
      FAIL() << "call " << times.size() << " still waiting 10 s after its 700 ms deadline";
    }
    times.push_back(done.get());
  }
  server_->Signal(SIGCONT);
  for (size_t i = 0; i < times.size(); i++) EXPECT_LT(times[i], absl::Seconds(3)) << "call " << i;
  // The server answers again once it runs (the Put that timed out may or may not have applied).
  Connect();
  EXPECT_TRUE(conn_->GetTable("t1")->Get(Get("r")).ok());
}

// alter (ModifyTable): a family's settings change, a family is added and one dropped, while a
// writer keeps writing (the regions reopen one after another; its calls are retried and none
// fails); a disabled table takes the change when enabled; what cannot change is refused.
TEST_F(ClientOps, ModifyTableChangesFamiliesWhileAWriterWrites) {
  CreateTable("alt", {"f", "old"}, {"m"});
  std::unique_ptr<Admin> admin = conn_->GetAdmin();
  std::unique_ptr<Table> t = conn_->GetTable("alt");
  ASSERT_TRUE(t->Put(Put("a").Add("old", "q", "gone soon")).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  absl::Status writer_error;
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      const std::string row = absl::StrCat(i % 2 == 0 ? "b" : "x", i);
      absl::Status s = t->Put(Put(row).Add("f", "q", "v"));
      if (!s.ok()) {
        writer_error = s;
        return;
      }
      written.fetch_add(1);
    }
  });
  while (written.load() < 50) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  absl::StatusOr<TableInfo> info = admin->DescribeTable("alt");
  ASSERT_TRUE(info.ok()) << info.status();
  TableInfo changed = *info;
  ASSERT_EQ(changed.families.size(), 2u);
  changed.families[0].max_versions = 3;  // f
  changed.families.erase(changed.families.begin() + 1);  // old
  changed.families.push_back(FamilySettings{"g"});
  ASSERT_TRUE(admin->ModifyTable(changed).ok());
  const int at_modify = written.load();
  while (written.load() < at_modify + 50 && writer_error.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  writer.join();
  EXPECT_TRUE(writer_error.ok()) << "a write failed while the table's regions reopened: " << writer_error;

  info = admin->DescribeTable("alt");
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->families.size(), 2u);
  EXPECT_EQ(info->families[0].name, "f");
  EXPECT_EQ(info->families[0].max_versions, 3);
  EXPECT_EQ(info->families[1].name, "g");
  // f keeps 3 versions now, in both regions; g takes writes; old is gone.
  for (const char* row : {"a", "z"}) {
    for (int v = 1; v <= 4; ++v) ASSERT_TRUE(t->Put(Put(row).Add("f", "c", absl::StrCat("v", v), v)).ok());
    absl::StatusOr<Result> r = t->Get(Get(row).AddColumn("f", "c").SetMaxVersions(10));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->size(), 3u) << row;
  }
  ASSERT_TRUE(t->Put(Put("a").Add("g", "q", "new")).ok());
  EXPECT_EQ(t->Get(Get("a"))->Value("g", "q").value_or("<none>"), "new");
  EXPECT_FALSE(t->Get(Get("a"))->Value("old", "q").has_value());
  EXPECT_EQ(t->Put(Put("a").Add("old", "q", "v")).code(), StatusCode::kInvalidArgument);

  // Disabled: the change is kept and the regions open with it.
  ASSERT_TRUE(admin->DisableTable("alt").ok());
  changed = *info;
  changed.families[1].max_versions = 2;
  ASSERT_TRUE(admin->ModifyTable(changed).ok());
  EXPECT_FALSE(admin->DescribeTable("alt")->enabled);
  ASSERT_TRUE(admin->EnableTable("alt").ok());
  EXPECT_EQ(admin->DescribeTable("alt")->families[1].max_versions, 2);

  // Refused: a table that is not there, becoming transactional, no family left.
  changed.name = "nosuch";
  EXPECT_EQ(admin->ModifyTable(changed).code(), StatusCode::kNotFound);
  changed.name = "alt";
  changed.transactional = true;
  EXPECT_EQ(admin->ModifyTable(changed).code(), StatusCode::kInvalidArgument);
  changed.transactional = false;
  changed.families.clear();
  EXPECT_EQ(admin->ModifyTable(changed).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace basalt::testing
