// The verbs transport for real: basalt-server processes serving Get/Put over RDMA verbs on the
// soft-RoCE device rxe0 of the qemu guest (tests/rxe/guest.sh), driven through the client
// library. Runs in the guest only (CTest label rxe); on a host without an RDMA device every
// test skips, since the host's "no RDMA device" behaviour is tested by client_test and
// server_process_test.
//
// $BASALT_RXE_ADDR is the guest's address on rxe0's netdev; the server's gRPC stays on
// 127.0.0.1, so "verbs failed, gRPC works" can happen for real.
#include <httplib.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/basalt.grpc.pb.h"
#include "basalt/transaction.h"
#include "tests/integration/integration_util.h"
#include "transport/grpc/grpc_settings.h"
#include "transport/verbs/client.h"
#include "transport/verbs/frame.h"
#include "transport/verbs/path.h"
#include "transport/verbs/datapath.h"

namespace basalt::testing {
namespace {

using absl::StatusCode;

std::string RxeAddress() {
  const char* a = std::getenv("BASALT_RXE_ADDR");
  return a != nullptr ? a : "";
}

// Receiver-not-ready NAKs the guest's RDMA devices have sent (rxe's hw_counters), or -1 when
// no device counts them.
int64_t RnrNaksSent() {
  int64_t sum = -1;
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) {
    std::ifstream in(dev.path() / "ports/1/hw_counters/send_rnr_err");
    int64_t n = 0;
    if (in >> n) sum = std::max<int64_t>(sum, 0) + n;
  }
  return sum;
}

// Waits up to 60 s for the count `*n`, guarded by `mu`, to reach `want` (async callbacks
// counting themselves done); false if it does not.
bool AwaitCount(absl::Mutex* mu, const int* n, int want) {
  absl::MutexLock l(mu);
  auto reached = [n, want] { return *n == want; };
  return mu->AwaitWithTimeout(absl::Condition(&reached), absl::Seconds(60));
}

// `threads` threads each Put then Get `ops` rows of their own; returns the calls that failed or
// read back something else.
int PutGetOnThreads(Table* t, int threads, int ops, const std::string& prefix) {
  std::atomic<int> errors{0};
  std::vector<std::thread> running;
  for (int i = 0; i < threads; ++i) {
    running.emplace_back([&, i] {
      for (int k = 0; k < ops; ++k) {
        std::string row = absl::StrCat(prefix, i, "-", k);
        std::string v = absl::StrCat(i, ":", k, ":", std::string(k * 10, 'x'));
        if (!t->Put(Put(row).Add("cf", "q", v)).ok()) errors++;
        auto r = t->Get(Get(row));
        if (!r.ok() || r->Value("cf", "q").value_or("") != v) errors++;
      }
    });
  }
  for (auto& th : running) th.join();
  return errors.load();
}

class Verbs : public ServerTest {
 protected:
  void SetUp() override {
    if (!verbs::RdmaDevices().ok() || RxeAddress().empty()) {
      GTEST_SKIP() << "no RDMA device here (the verbs suite runs in the soft-RoCE guest)";
    }
  }

  void StartVerbsServer(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--rdma=on", absl::StrCat("--rdma_listen=", RxeAddress(), ":0"),
                                     "--memstore_flush_size=1MiB"};
    args.insert(args.end(), more.begin(), more.end());
    StartServer(args);
    conn_ = Open(TransportChoice::kVerbs);
    ASSERT_NE(conn_, nullptr);
    CreateTable("t", {"cf"});
    table_ = conn_->GetTable("t");
  }

  std::unique_ptr<Connection> Open(TransportChoice t, int max_endpoints = 32, int async_endpoints = 16) {
    ConnectionOptions o;
    o.address = server_->address();
    o.timeout = absl::Seconds(60);
    o.transport = t;
    o.verbs_max_endpoints = max_endpoints;
    o.verbs_async_endpoints = async_endpoints;
    o.verbs_retry = absl::Milliseconds(300);
    auto c = Connection::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // The server's status over gRPC (the verbs_* counters).
  rpc::StatusResponse ServerStatus() {
    auto stub = rpc::Admin::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    rpc::StatusResponse resp;
    grpc::Status s = stub->Status(&ctx, rpc::StatusRequest(), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  void SetServerVerbs(bool enabled) {
    auto stub = rpc::Admin::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    rpc::SetVerbsRequest req;
    req.set_enabled(enabled);
    rpc::AdminResponse resp;
    grpc::Status s = stub->SetVerbs(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  absl::StatusOr<verbs::VerbsSession> FetchSession() {
    auto stub = rpc::Basalt::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    rpc::VerbsSessionRequest req;
    req.set_frame_version(verbs::kFrameVersion);
    rpc::VerbsSessionResponse resp;
    grpc::Status s = stub->OpenVerbsSession(&ctx, req, &resp);
    if (!s.ok()) return absl::UnavailableError(s.error_message());
    return verbs::SessionFromProto(resp);
  }

  std::unique_ptr<Table> table_;
};

TEST_F(Verbs, GetAndPutTakeVerbs) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  rpc::StatusResponse st = ServerStatus();
  EXPECT_TRUE(st.verbs_enabled());
  EXPECT_NE(st.verbs().find("rxe0"), std::string::npos) << st.verbs();
  ASSERT_TRUE(table_->Put(Put("r1").Add("cf", "a", "v1", 100)).ok());
  ASSERT_TRUE(table_->Put(Put("r1").Add("cf", "b", "v2")).ok());
  auto r = table_->Get(Get("r1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->row(), "r1");
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(r->Value("cf", "a").value_or("?"), "v1");
  EXPECT_EQ(r->cells()[0].timestamp, 100);
  // The engine's answers travel unchanged: a missing row, an unknown family, a delete.
  auto missing = table_->Get(Get("nope"));
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->empty());
  EXPECT_EQ(table_->Get(Get("r1").AddFamily("zz")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(conn_->GetTable("no_table")->Put(Put("r").Add("cf", "a", "v")).code(), StatusCode::kNotFound);
  ASSERT_TRUE(table_->Delete(Delete("r1").AddColumns("cf", "a")).ok());
  r = table_->Get(Get("r1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);
  // A filter travels with a Get over verbs and the server applies it (docs/DESIGN.md §7).
  ASSERT_TRUE(table_->Put(Put("r2").Add("cf", "a", "apple").Add("cf", "b", "berry")).ok());
  r = table_->Get(Get("r2").SetFilter(Filter::Value(FilterOp::kEqual, Comparator::Regex("^b"))));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(r->Value("cf", "b").value_or("?"), "berry");
  r = table_->Get(Get("r2").SetFilter(Filter::Row(FilterOp::kEqual, Comparator::Binary("r1"))));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(table_->Get(Get("r2").SetFilter(Filter::Value(FilterOp::kLess, Comparator::Regex("x")))).status().code(),
            StatusCode::kInvalidArgument);

  TransportStats ts = conn_->GetTransportStats();
  EXPECT_EQ(ts.verbs_state, "up");
  EXPECT_GE(ts.verbs_calls, 12u);
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_GE(ServerStatus().verbs_requests(), 8u);
}

// A transaction's Gets and Puts go over verbs too, each carrying its snapshot or write pointer
// (kFlagTransaction), and the server applies its visibility filter (docs/DESIGN.md §7).
TEST_F(Verbs, TransactionsReadAndWriteOverVerbs) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  TableInfo t;
  t.name = "tx";
  t.transactional = true;
  t.families.push_back(FamilySettings{});
  t.families.back().name = "cf";
  ASSERT_TRUE(conn_->GetAdmin()->CreateTable(t).ok());
  TransactionContext a(conn_.get());
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(a.Put("tx", Put("r").Add("cf", "q", "committed")).ok());
  ASSERT_TRUE(a.Commit().ok());
  const TransportStats before = conn_->GetTransportStats();
  TransactionContext reader(conn_.get()), writer(conn_.get());
  ASSERT_TRUE(reader.Start().ok());
  ASSERT_TRUE(writer.Start().ok());
  ASSERT_TRUE(writer.Put("tx", Put("r").Add("cf", "q", "uncommitted")).ok());
  auto own = writer.Get("tx", Get("r"));
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->Value("cf", "q").value_or("?"), "uncommitted");  // its own write
  auto seen = reader.Get("tx", Get("r"));
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->Value("cf", "q").value_or("?"), "committed");  // not the other's
  ASSERT_TRUE(writer.Commit().ok());
  seen = reader.Get("tx", Get("r"));
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->Value("cf", "q").value_or("?"), "committed");  // its snapshot, still
  ASSERT_TRUE(reader.Commit().ok());
  const TransportStats after = conn_->GetTransportStats();
  EXPECT_GE(after.verbs_calls, before.verbs_calls + 4);  // the Put and the three Gets
  EXPECT_EQ(after.grpc_fallbacks, before.grpc_fallbacks);
}

// Gets and Puts over verbs are counted on the server's /metrics under transport "verbs", apart
// from gRPC's (docs/DESIGN.md §11).
TEST_F(Verbs, GetsAndPutsOverVerbsAreCountedInMetricsAsVerbs) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer({"--http_listen=127.0.0.1:0"}));
  constexpr int kRows = 20;
  ASSERT_EQ(PutGetOnThreads(table_.get(), 1, kRows, "m"), 0);
  EXPECT_EQ(table_->Get(Get("m0-0").AddFamily("zz")).status().code(), StatusCode::kInvalidArgument);
  const std::string http = ServerStatus().http_address();
  ASSERT_FALSE(http.empty());
  httplib::Client c(http.substr(0, http.rfind(':')), std::stoi(http.substr(http.rfind(':') + 1)));
  httplib::Result res = c.Get("/metrics");
  ASSERT_TRUE(res);
  const std::string& text = res->body;
  for (const std::string& line : {absl::StrCat("basalt_requests_total{op=\"get\",transport=\"verbs\"} ", kRows + 1),
                                  absl::StrCat("basalt_requests_total{op=\"mutate\",transport=\"verbs\"} ", kRows),
                                  std::string("basalt_request_errors_total{op=\"get\",transport=\"verbs\"} 1"),
                                  absl::StrCat("basalt_request_duration_seconds_count{op=\"get\",transport=\"verbs\"} ",
                                               kRows + 1),
                                  std::string("basalt_requests_total{op=\"get\",transport=\"grpc\"} 0")}) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
  }
}

// A table of several regions over verbs: the frame names no region, so the server routes each
// Get and Put by row, also while the table splits under the writer (the server retries a write
// its closing region refused); nothing falls back to gRPC and no error reaches the caller.
TEST_F(Verbs, GetsAndPutsOfATableOfRegionsGoToTheRowsRegionAlsoWhileItSplits) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  CreateTable("mr", {"cf"}, {"m"});
  auto t = conn_->GetTable("mr");
  constexpr int kRows = 300;
  std::atomic<int> written{0}, errors{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load() || i < kRows; ++i) {
      const std::string row = absl::StrFormat("%c%05d", "ahnu"[i % 4], i % kRows);
      const std::string v = absl::StrCat("v", i);
      if (!t->Put(Put(row).Add("cf", "q", v)).ok()) errors++;
      auto r = t->Get(Get(row));
      if (!r.ok() || r->Value("cf", "q").value_or("") != v) errors++;
      written++;
    }
  });
  while (written.load() < 50) absl::SleepFor(absl::Milliseconds(5));
  auto admin = conn_->GetAdmin();
  EXPECT_TRUE(admin->Split("mr", "f").ok());
  EXPECT_TRUE(admin->Split("mr", "s").ok());
  stop = true;
  writer.join();
  EXPECT_EQ(errors.load(), 0);
  auto regions = admin->ListRegions("mr");
  ASSERT_TRUE(regions.ok()) << regions.status();
  EXPECT_EQ(regions->size(), 4u);
  for (int i = 0; i < kRows; ++i) {
    auto r = t->Get(Get(absl::StrFormat("%c%05d", "ahnu"[i % 4], i)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->empty()) << i;
  }
  TransportStats ts = conn_->GetTransportStats();
  EXPECT_GE(ts.verbs_calls, 3u * kRows);
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
}

TEST_F(Verbs, StartUpChecksTheDevicePortAndGidIndex) {
  // rxe0's GID index 1 is 10.0.2.15's RoCE v2 GID; index 0 is the link-local one.
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer({"--rdma_device=rxe0", "--rdma_device_port=1", "--rdma_gid_index=1"}));
  EXPECT_NE(ServerStatus().verbs().find("rxe0 port 1, GID index 1 (RoCE)"), std::string::npos) << ServerStatus().verbs();
  for (const char* bad : {"--rdma_gid_index=0", "--rdma_device=mlx5_0", "--rdma_device_port=2"}) {
    ServerProcess other(BASALT_SERVER_BINARY, dir_.path() + "/other",
                        {"--rdma=on", absl::StrCat("--rdma_listen=", RxeAddress(), ":0"), bad});
    absl::Status st = other.Start();
    EXPECT_FALSE(st.ok()) << bad;  // rdma=on: the mismatch stops start-up
  }
}

TEST_F(Verbs, PayloadsFromOneByteTo64KiB) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  const std::vector<size_t> sizes = {1, 7, 100, 1024, 4096, 16384, 60000, 65536};
  for (size_t n : sizes) {
    std::string v(n, '\0');
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + n) & 0xff);
    const std::string row = absl::StrCat("row", n);
    ASSERT_TRUE(table_->Put(Put(row).Add("cf", "q", v)).ok()) << n;
    auto r = table_->Get(Get(row));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->Value("cf", "q").value_or(""), v) << n;
  }
  TransportStats ts = conn_->GetTransportStats();
  EXPECT_EQ(ts.verbs_calls, 2 * sizes.size());
  EXPECT_EQ(ts.oversized, 0u);
  // Larger than a verbs message (72 KiB): the Put's request travels by rendezvous (the server
  // reads it from the client's memory), the Get's reply too (the server writes it into the
  // client's reply buffer).
  std::string big(200 * 1024, 'b');
  ASSERT_TRUE(table_->Put(Put("big").Add("cf", "q", big)).ok());
  auto r = table_->Get(Get("big"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("cf", "q").value_or("").size(), big.size());
  ts = conn_->GetTransportStats();
  EXPECT_EQ(ts.oversized, 0u);
  EXPECT_EQ(ts.verbs_calls, 2 * sizes.size() + 2);
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
}

TEST_F(Verbs, ValuesFrom72KiBTo4MiBTravelByRendezvousBothWays) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  const rpc::StatusResponse before = ServerStatus();
  const std::vector<size_t> sizes = {72 * 1024, 100 * 1024, 1 << 20, 4 << 20};
  for (size_t n : sizes) {
    std::string v(n, '\0');
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 7 + n) & 0xff);
    const std::string row = absl::StrCat("big", n);
    ASSERT_TRUE(table_->Put(Put(row).Add("cf", "q", v)).ok()) << n;
    auto r = table_->Get(Get(row));  // asked again with a reply buffer of the size the server says
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->Value("cf", "q").value_or(""), v) << n;
  }
  // A request whose columns alone are over a verbs message: a Get's request by rendezvous.
  ASSERT_TRUE(table_->Put(Put("small").Add("cf", "q", "v")).ok());
  Get many("small");
  for (int i = 0; i < 20000; ++i) many.AddColumn("cf", absl::StrCat("qualifier-", i));
  many.AddColumn("cf", "q");
  auto r = table_->Get(many);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("cf", "q").value_or(""), "v");
  // Async calls too: a large PutAsync, and a Get of many rows (async calls) whose replies are
  // large, go by rendezvous, as sync calls off the client's poller.
  const std::string big(1 << 20, 'z');
  absl::Mutex mu;
  std::optional<absl::Status> put_status;
  table_->PutAsync(Put("async-big").Add("cf", "q", big), [&](absl::Status s) {
    absl::MutexLock l(&mu);
    put_status = std::move(s);
  });
  {
    absl::MutexLock l(&mu);
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                        +[](std::optional<absl::Status>* s) { return s->has_value(); }, &put_status),
                                    absl::Seconds(60)));
    ASSERT_TRUE(put_status->ok()) << *put_status;
  }
  auto rows = table_->Get(std::vector<Get>{Get("async-big"), Get("big4194304"), Get("small")});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].Value("cf", "q").value_or(""), big);
  EXPECT_EQ((*rows)[1].Value("cf", "q").value_or("").size(), size_t{4} << 20);
  EXPECT_EQ((*rows)[2].Value("cf", "q").value_or(""), "v");
  const TransportStats ts = conn_->GetTransportStats();
  // The Puts and Gets, the small Put, the Get of many columns, the PutAsync and 3 async Gets.
  EXPECT_EQ(ts.verbs_calls, 2 * sizes.size() + 2 + 4);
  EXPECT_EQ(ts.verbs_async_calls, 4u);
  EXPECT_EQ(ts.oversized, 0u);
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_EQ(ServerStatus().verbs_malformed_frames(), before.verbs_malformed_frames());
}

// rdma_rendezvous_budget bounds the memory large calls may pin on the server: a call under it
// travels by rendezvous, a larger one over gRPC (and is counted oversized), and both are served.
TEST_F(Verbs, TheRendezvousBudgetSendsLargerCallsToGrpc) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer({"--rdma_rendezvous_budget=1MiB"}));
  for (size_t n : {size_t{512} << 10, size_t{2} << 20}) {
    const std::string v(n, static_cast<char>('a' + n % 26));
    const std::string row = absl::StrCat("big", n);
    ASSERT_TRUE(table_->Put(Put(row).Add("cf", "q", v)).ok()) << n;
    auto r = table_->Get(Get(row));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->Value("cf", "q").value_or(""), v) << n;
  }
  const TransportStats ts = conn_->GetTransportStats();
  EXPECT_EQ(ts.verbs_calls, 2u);  // the 512 KiB Put and Get
  EXPECT_EQ(ts.oversized, 2u);    // the 2 MiB Put and Get
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
}

TEST_F(Verbs, ManyThreadsShareAPoolOfEndpoints) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  // 16 threads on one connection whose pool holds at most 4 endpoints: the pool grows to 4,
  // threads wait for a free one, and endpoints are reused for every call.
  std::unique_ptr<Connection> conn = Open(TransportChoice::kVerbs, /*max_endpoints=*/4);
  ASSERT_NE(conn, nullptr);
  std::unique_ptr<Table> t = conn->GetTable("t");
  constexpr int kThreads = 16;
  constexpr int kOps = 40;
  EXPECT_EQ(PutGetOnThreads(t.get(), kThreads, kOps, "t"), 0);
  TransportStats ts = conn->GetTransportStats();
  EXPECT_EQ(ts.verbs_calls, uint64_t{2 * kThreads * kOps});
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_GE(ts.endpoints_created, 2u);
  EXPECT_LE(ts.endpoints_created, 4u);
  EXPECT_LE(ts.endpoints_open, 4u);
  EXPECT_GT(ts.endpoint_waits, 0u);
  EXPECT_EQ(ts.sessions, 1u);
}

// The server's endpoints receive from one shared receive queue per helper. With one receive
// buffer for 8 endpoints busy at once, a request that finds none posted waits in the client's
// device (receiver-not-ready retries) until the buffer is posted again: every call succeeds
// over verbs, none is refused or sent to gRPC.
TEST_F(Verbs, EndpointsShareTheHelpersReceiveBuffersAndWaitWhenAllAreInUse) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer({"--rdma_srq_depth=1", "--rdma_helper_threads=1"}));
  const int64_t rnr_before = RnrNaksSent();
  ASSERT_GE(rnr_before, 0) << "rxe's hw_counters/send_rnr_err not found";
  std::unique_ptr<Connection> conn = Open(TransportChoice::kVerbs, /*max_endpoints=*/8, /*async_endpoints=*/8);
  ASSERT_NE(conn, nullptr);
  std::unique_ptr<Table> t = conn->GetTable("t");
  constexpr int kThreads = 8;
  constexpr int kOps = 25;
  EXPECT_EQ(PutGetOnThreads(t.get(), kThreads, kOps, "srq"), 0);
  // Async Gets too, 8 in flight on their own endpoints.
  std::vector<Get> gets;
  for (int i = 0; i < kThreads; ++i) gets.push_back(Get(absl::StrCat("srq", i, "-", kOps - 1)));
  auto rows = t->Get(gets);
  ASSERT_TRUE(rows.ok()) << rows.status();
  for (const Result& r : *rows) EXPECT_FALSE(r.empty());
  const TransportStats ts = conn->GetTransportStats();
  EXPECT_EQ(ts.verbs_calls, uint64_t{2 * kThreads * kOps + kThreads});
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_GE(ts.endpoints_created, 2u);
  EXPECT_EQ(ServerStatus().verbs_malformed_frames(), 0u);
  // Requests did find the one buffer taken: the server's device told their senders to wait.
  EXPECT_GT(RnrNaksSent(), rnr_before);
}

// A client has at most its session's credits of requests in flight on an endpoint; with one
// credit, it sends its next request only after the last one's reply. One that does not (here a
// Get sent while a Put is still being applied on the handler pool) is counted malformed, and the
// server closes the endpoint. Whether the Get comes before the Put's reply is up to timing, so
// raw endpoints try until one does (each try that does not is answered twice, as it would be
// without the check).
TEST_F(Verbs, ARequestBeyondTheEndpointsCreditsIsMalformedAndClosesTheEndpoint) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer({"--rdma_credits=1"}));
  const uint64_t malformed_before = ServerStatus().verbs_malformed_frames();
  absl::StatusOr<verbs::VerbsSession> session = FetchSession();
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(session->credits, 1u);
  sockaddr_storage dst;
  ASSERT_TRUE(verbs::ParseSockaddr(session->address, session->port, &dst).ok());
  rpc::MutateRequest put;
  put.set_table("t");
  put.set_durability(rpc::DURABILITY_SYNC_WAL);
  put.mutable_mutation()->set_row("first");
  rpc::Mutation* m = put.mutable_mutation()->add_mutations();
  m->set_family("cf");
  m->set_qualifier("q");
  m->set_value("v");
  rpc::GetRequest get;
  get.set_table("t");
  get.set_row("first");
  // One try on a raw endpoint, connected as the client library connects one: true when the
  // server did not answer both requests (it closed the endpoint instead; the raw endpoint does
  // not take the disconnect, so its receives just stay empty).
  auto attempt = [&](int n) -> bool {
    rdma_cm_id* raw = nullptr;
    EXPECT_EQ(rdma_create_id(nullptr, &raw, nullptr, RDMA_PS_TCP), 0);
    verbs::CmId id(raw);
    EXPECT_EQ(rdma_resolve_addr(raw, nullptr, reinterpret_cast<sockaddr*>(&dst), 5000), 0);
    EXPECT_EQ(rdma_resolve_route(raw, 5000), 0);
    auto chunk = verbs::SharedChunk::Create(1, 2 * verbs::kDefaultMessageBytes);
    EXPECT_TRUE(chunk.ok() && (*chunk)->Bind(raw->verbs).ok());
    auto cq = verbs::CompletionQueue::Create(raw->verbs, 32);
    EXPECT_TRUE(cq.ok()) << cq.status();
    auto max_inline = verbs::CreateQueuePair(raw, (*chunk)->pd(), (*cq)->cq());
    EXPECT_TRUE(max_inline.ok()) << max_inline.status();
    if (HasFailure()) return false;
    // Both frames are sent inline, so the second may be written at once.
    EXPECT_GT(*max_inline, 0u);
    verbs::Endpoint ep(std::move(id), chunk->get(), *(*chunk)->Acquire(), *max_inline);
    EXPECT_TRUE(ep.Replenish(1).ok());
    verbs::ConnectData cd;
    std::memcpy(cd.token, session->token.data(), verbs::ConnectData::kTokenBytes);
    cd.max_reply = static_cast<uint32_t>(ep.half());
    std::memset(cd.nonce, n, verbs::ConnectData::kNonceBytes);
    uint8_t priv[verbs::ConnectData::kSize];
    cd.Encode(session->key, priv);
    rdma_conn_param param{};
    param.private_data = priv;
    param.private_data_len = sizeof(priv);
    param.retry_count = 7;
    param.rnr_retry_count = 7;
    EXPECT_EQ(rdma_connect(ep.id(), &param), 0) << std::strerror(errno);
    absl::StatusOr<size_t> len = verbs::EncodeMutateRequest(1, put, ep.send_span());
    EXPECT_TRUE(len.ok() && *len <= *max_inline);
    EXPECT_TRUE(ep.PostSend(1, *len).ok());
    len = verbs::EncodeGetRequest(2, get, ep.send_span());
    EXPECT_TRUE(len.ok() && *len <= *max_inline);
    EXPECT_TRUE(ep.PostSend(2, *len).ok());
    if (HasFailure()) return false;
    int replies = 0;
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (replies < 2 && absl::Now() < deadline) {
      ibv_wc wc[4];
      absl::StatusOr<int> k = (*cq)->Wait(absl::MakeSpan(wc), absl::ZeroDuration(), deadline);
      if (!k.ok()) return false;
      for (int i = 0; i < *k; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) return true;
        if (wc[i].opcode == IBV_WC_RECV) ++replies;
      }
    }
    return replies < 2;
  };
  bool closed = false;
  for (int n = 1; n <= 20 && !closed && !HasFailure(); ++n) closed = attempt(n);
  EXPECT_TRUE(closed) << "20 tries, and the server answered both requests of each";
  EXPECT_EQ(ServerStatus().verbs_malformed_frames(), malformed_before + 1);
  // The server goes on serving the others.
  ASSERT_TRUE(table_->Put(Put("after").Add("cf", "q", "ok")).ok());
  auto r = table_->Get(Get("after"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("cf", "q").value_or(""), "ok");
  EXPECT_EQ(conn_->GetTransportStats().grpc_fallbacks, 0u);
}

TEST_F(Verbs, AsyncGetsAndPutsPipelineOnTheAsyncEndpoints) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  // Up to 4 async endpoints of 8 credits for a window of 32 (Table::Get of many rows) and 300
  // PutAsync at once: the calls beyond the credits wait in the client's queue and go out as
  // replies come back, all on the poller.
  std::unique_ptr<Connection> conn = Open(TransportChoice::kVerbs, /*max_endpoints=*/2, /*async_endpoints=*/4);
  ASSERT_NE(conn, nullptr);
  std::unique_ptr<Table> t = conn->GetTable("t");
  constexpr int kRows = 300;
  absl::Mutex mu;
  int puts_done = 0;
  std::vector<absl::Status> put_status(kRows);
  for (int i = 0; i < kRows; ++i) {
    t->PutAsync(Put(absl::StrCat("a", i)).Add("cf", "q", std::string(100 + i, static_cast<char>('a' + i % 26))),
                [&, i](absl::Status s) {
                  absl::MutexLock l(&mu);
                  put_status[i] = s;
                  ++puts_done;
                });
  }
  ASSERT_TRUE(AwaitCount(&mu, &puts_done, kRows));
  for (int i = 0; i < kRows; ++i) ASSERT_TRUE(put_status[i].ok()) << i << ": " << put_status[i];
  std::vector<Get> gets;
  for (int i = 0; i < kRows; ++i) gets.push_back(Get(absl::StrCat("a", i)));
  gets.push_back(Get("never-written"));
  auto rows = t->Get(gets);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), gets.size());
  for (int i = 0; i < kRows; ++i) {
    ASSERT_EQ((*rows)[i].Value("cf", "q").value_or(""), std::string(100 + i, static_cast<char>('a' + i % 26))) << i;
  }
  EXPECT_TRUE(rows->back().empty());
  TransportStats ts = conn->GetTransportStats();
  EXPECT_EQ(ts.verbs_async_calls, uint64_t{2 * kRows + 1});
  EXPECT_EQ(ts.verbs_calls, uint64_t{2 * kRows + 1});
  EXPECT_GT(ts.verbs_async_queued, 0u);
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_LE(ts.endpoints_open, 2u + 4u);
}

// One async endpoint carries its credits' worth of calls at once (8 here, as the server's
// session allows): Puts applied on the handler pool and Gets served inline on the helper, so
// replies come back out of order and each finds its call by its request id. The rest wait in
// the client's queue; no second endpoint is opened, nothing goes to gRPC.
TEST_F(Verbs, AsyncCallsShareOneEndpointsCreditsAndFindTheirRepliesInAnyOrder) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer({"--rdma_credits=8"}));
  std::unique_ptr<Connection> conn = Open(TransportChoice::kVerbs, /*max_endpoints=*/1, /*async_endpoints=*/1);
  ASSERT_NE(conn, nullptr);
  std::unique_ptr<Table> t = conn->GetTable("t");
  constexpr int kRows = 200;
  absl::Mutex mu;
  int done = 0;
  std::vector<absl::Status> status(2 * kRows);
  std::vector<std::string> got(kRows);
  auto value = [](int i) { return std::string(50 + i * 7, static_cast<char>('a' + i % 26)); };
  ASSERT_TRUE(t->Put(Put("r0").Add("cf", "q", value(0))).ok());
  for (int i = 0; i < kRows; ++i) {
    // A Put of row i, and a Get of row i / 2, written before (or by a Put still in flight).
    t->PutAsync(Put(absl::StrCat("r", i)).Add("cf", "q", value(i)), [&, i](absl::Status s) {
      absl::MutexLock l(&mu);
      status[2 * i] = s;
      ++done;
    });
    t->GetAsync(Get(absl::StrCat("r", i / 2)), [&, i](absl::StatusOr<Result> r) {
      absl::MutexLock l(&mu);
      status[2 * i + 1] = r.status();
      if (r.ok()) got[i] = r->Value("cf", "q").value_or("(none)");
      ++done;
    });
  }
  ASSERT_TRUE(AwaitCount(&mu, &done, 2 * kRows));
  for (int i = 0; i < 2 * kRows; ++i) ASSERT_TRUE(status[i].ok()) << i << ": " << status[i];
  for (int i = 0; i < kRows; ++i) {
    // Row i / 2 was put before this Get was sent, unless its Put was still in flight.
    EXPECT_TRUE(got[i] == value(i / 2) || (got[i] == "(none)" && i / 2 > 0)) << i << ": " << got[i].size();
  }
  const TransportStats ts = conn->GetTransportStats();
  EXPECT_EQ(ts.verbs_async_calls, uint64_t{2 * kRows});
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_EQ(ts.verbs_async_peak_per_endpoint, 8u);
  EXPECT_GT(ts.verbs_async_queued, 0u);
  EXPECT_EQ(ts.endpoints_created, 2u);  // the sync one, and one async
  EXPECT_EQ(ServerStatus().verbs_malformed_frames(), 0u);
}

TEST_F(Verbs, AsyncCallsInFlightFallBackToGrpcWhenVerbsGoesOff) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  std::unique_ptr<Connection> conn = Open(TransportChoice::kAuto, 4, 4);
  ASSERT_NE(conn, nullptr);
  std::unique_ptr<Table> t = conn->GetTable("t");
  constexpr int kRows = 64;
  for (int i = 0; i < kRows; ++i) ASSERT_TRUE(t->Put(Put(absl::StrCat("g", i)).Add("cf", "q", absl::StrCat(i))).ok());
  std::vector<Get> gets;
  for (int i = 0; i < kRows; ++i) gets.push_back(Get(absl::StrCat("g", i)));
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, rounds{0};
  std::thread reader([&] {
    while (!stop.load()) {
      auto rows = t->Get(gets);
      if (!rows.ok()) {
        ADD_FAILURE() << rows.status();
        errors++;
        continue;
      }
      for (int i = 0; i < kRows; ++i) {
        if ((*rows)[i].Value("cf", "q").value_or("") != absl::StrCat(i)) errors++;
      }
      rounds++;
    }
  });
  auto wait_rounds = [&](int n) {
    int target = rounds.load() + n;
    absl::Time until = absl::Now() + absl::Seconds(60);
    while (rounds.load() < target && absl::Now() < until) absl::SleepFor(absl::Milliseconds(10));
  };
  wait_rounds(3);
  // Every endpoint is disconnected under the calls in flight: they finish over gRPC.
  SetServerVerbs(false);
  wait_rounds(5);
  const TransportStats off = conn->GetTransportStats();
  SetServerVerbs(true);
  const uint64_t verbs_at_on = conn->GetTransportStats().verbs_calls;
  absl::Time until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < until && conn->GetTransportStats().verbs_calls < verbs_at_on + 2 * kRows) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  stop = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(off.grpc_fallbacks, 0u);
  EXPECT_GT(off.verbs_failures, 0u);
  const TransportStats end = conn->GetTransportStats();
  EXPECT_GE(end.verbs_calls, verbs_at_on + 2 * kRows) << end.verbs_state;
  EXPECT_EQ(end.verbs_state, "up");
}

TEST_F(Verbs, IdleAsyncEndpointsOfARestartedServerAreDroppedAndAsyncCallsComeBack) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  std::vector<Get> gets;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(table_->Put(Put(absl::StrCat("r", i)).Add("cf", "q", absl::StrCat(i))).ok());
    gets.push_back(Get(absl::StrCat("r", i)));
  }
  auto check = [&] {
    auto rows = table_->Get(gets);
    ASSERT_TRUE(rows.ok()) << rows.status();
    for (int i = 0; i < 40; ++i) ASSERT_EQ((*rows)[i].Value("cf", "q").value_or(""), absl::StrCat(i)) << i;
  };
  ASSERT_NO_FATAL_FAILURE(check());  // the async endpoints open, then sit idle
  const uint64_t async_before = conn_->GetTransportStats().verbs_async_calls;
  EXPECT_GE(async_before, 40u);
  // The server goes away under them: each idle endpoint's posted receive is flushed, and the
  // poller drops them all (once each).
  ASSERT_EQ(server_->Terminate(), 0);
  ASSERT_TRUE(server_->Start().ok());
  ASSERT_NO_FATAL_FAILURE(check());  // over gRPC while verbs is down, or over new endpoints
  absl::Time until = absl::Now() + absl::Seconds(30);
  uint64_t verbs_before = conn_->GetTransportStats().verbs_calls;
  while (absl::Now() < until && conn_->GetTransportStats().verbs_calls < verbs_before + 40) {
    ASSERT_NO_FATAL_FAILURE(check());
    absl::SleepFor(absl::Milliseconds(50));
  }
  const TransportStats ts = conn_->GetTransportStats();
  EXPECT_GE(ts.verbs_calls, verbs_before + 40) << ts.verbs_state;
  EXPECT_GT(ts.verbs_async_calls, async_before + 40);
  EXPECT_EQ(ts.verbs_state, "up");
  EXPECT_LE(ts.endpoints_open, 32u + 16u);
}

TEST_F(Verbs, ConcurrentGetsAndPutsOnTheSameRowsSeeWholeRows) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  // Writers put three columns with one value per Put; readers must never see a mix.
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, errors{0}, reads{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      for (int k = 0; !stop.load(); ++k) {
        std::string v = absl::StrCat("w", w, "-", k);
        Put p(absl::StrCat("row", k % 5));
        p.Add("cf", "a", v).Add("cf", "b", v).Add("cf", "c", v);
        if (!table_->Put(p).ok()) errors++;
      }
    });
  }
  for (int rd = 0; rd < 3; ++rd) {
    threads.emplace_back([&, rd] {
      for (int k = 0; !stop.load(); ++k) {
        auto r = table_->Get(Get(absl::StrCat("row", (k + rd) % 5)));
        if (!r.ok()) {
          errors++;
          continue;
        }
        reads++;
        if (r->empty()) continue;
        auto a = r->Value("cf", "a"), b = r->Value("cf", "b"), c = r->Value("cf", "c");
        if (!a || !b || !c || *a != *b || *b != *c) torn++;
      }
    });
  }
  absl::SleepFor(absl::Seconds(3));
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(reads.load(), 10);
  EXPECT_EQ(conn_->GetTransportStats().grpc_fallbacks, 0u);
}

TEST_F(Verbs, ServerRestartClientsReconnect) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  ASSERT_TRUE(table_->Put(Put("before").Add("cf", "q", "1")).ok());
  ASSERT_EQ(server_->Terminate(), 0);
  // A call while the server is down: verbs fails, gRPC retries until the server is back.
  std::thread restart([&] {
    absl::SleepFor(absl::Milliseconds(500));
    ASSERT_TRUE(server_->Start().ok());
  });
  ASSERT_TRUE(table_->Put(Put("during").Add("cf", "q", "2")).ok());
  restart.join();
  // After verbs_retry the client takes verbs again, with a new session (new port and token).
  uint64_t verbs_before = conn_->GetTransportStats().verbs_calls;
  absl::Time until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < until && conn_->GetTransportStats().verbs_calls < verbs_before + 10) {
    auto r = table_->Get(Get("before"));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->Value("cf", "q").value_or(""), "1");
    absl::SleepFor(absl::Milliseconds(50));
  }
  TransportStats ts = conn_->GetTransportStats();
  EXPECT_GE(ts.verbs_calls, verbs_before + 10) << ts.verbs_state;
  EXPECT_EQ(ts.verbs_state, "up");
  EXPECT_GE(ts.sessions, 2u);
  auto r = table_->Get(Get("during"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Value("cf", "q").value_or(""), "2");
}

TEST_F(Verbs, ConnectsWithoutAValidTokenAreRejected) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer({"--rdma_session_ttl_s=1"}));
  const uint64_t rejected_before = ServerStatus().verbs_connects_rejected();
  absl::StatusOr<verbs::VerbsSession> good = FetchSession();
  ASSERT_TRUE(good.ok()) << good.status();
  // A forged token, always.
  verbs::VerbsSession forged = *good;
  forged.token = std::string(16, 'X');
  auto bad = verbs::VerbsClient::Open([forged]() -> absl::StatusOr<verbs::VerbsSession> { return forged; }, {});
  EXPECT_EQ(bad.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(bad.status().message().find("rejected: bad token"), absl::string_view::npos) << bad.status();
  // A real token past its expiry.
  absl::StatusOr<verbs::VerbsSession> old = FetchSession();
  ASSERT_TRUE(old.ok());
  absl::SleepFor(absl::Milliseconds(1500));
  verbs::VerbsSession stale = *old;
  stale.expires = absl::InfiniteFuture();  // the client believes it; the server does not
  auto expired = verbs::VerbsClient::Open([stale]() -> absl::StatusOr<verbs::VerbsSession> { return stale; }, {});
  EXPECT_EQ(expired.status().code(), StatusCode::kUnavailable) << expired.status();
  // Each Open tried twice (the second time with a "new" session): four rejections.
  EXPECT_EQ(ServerStatus().verbs_connects_rejected(), rejected_before + 4);
  // A good session still connects.
  auto ok = verbs::VerbsClient::Open([this] { return FetchSession(); }, {});
  EXPECT_TRUE(ok.ok()) << ok.status();
}

TEST_F(Verbs, MalformedFramesAreRejectedAndTheServerGoesOn) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  auto client = verbs::VerbsClient::Open([this] { return FetchSession(); }, {});
  ASSERT_TRUE(client.ok()) << client.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  bool failed = false;
  // 1. A good header on a body that is not a Get: an InvalidArgument reply.
  absl::Status st = (*client)->Call(
      [](uint64_t id, absl::Span<uint8_t> out) -> absl::StatusOr<size_t> {
        rpc::GetRequest g;
        g.set_table("t");
        g.set_row("r");
        absl::StatusOr<size_t> n = verbs::EncodeGetRequest(id, g, out);
        if (!n.ok()) return n;
        out[verbs::kFrameHeaderSize] = 0xff;  // table length 0xff.. : past the end
        return *n;
      },
      [](uint64_t id, absl::Span<const uint8_t> reply) {
        rpc::GetResponse resp;
        return verbs::DecodeGetReply(reply, id, &resp);
      },
      deadline, &failed);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  EXPECT_FALSE(failed);
  // 2. Garbage with no header: the server drops the endpoint (our call fails as a transport
  //    failure or times out), and serves on.
  st = (*client)->Call(
      [](uint64_t, absl::Span<uint8_t> out) -> absl::StatusOr<size_t> {
        for (size_t i = 0; i < 64; ++i) out[i] = static_cast<uint8_t>(i * 37);
        return size_t{64};
      },
      [](uint64_t, absl::Span<const uint8_t>) { return absl::InternalError("no reply expected"); },
      absl::Now() + absl::Seconds(5), &failed);
  EXPECT_TRUE(failed || st.code() == StatusCode::kDeadlineExceeded) << st;
  // 3. A Mutate with a durability that does not exist: an InvalidArgument reply.
  auto again = verbs::VerbsClient::Open([this] { return FetchSession(); }, {});
  ASSERT_TRUE(again.ok());
  st = (*again)->Call(
      [](uint64_t id, absl::Span<uint8_t> out) -> absl::StatusOr<size_t> {
        rpc::MutateRequest m;
        m.set_table("t");
        m.mutable_mutation()->set_row("r");
        absl::StatusOr<size_t> n = verbs::EncodeMutateRequest(id, m, out);
        if (!n.ok()) return n;
        out[verbs::kFrameHeaderSize + 3] = 9;  // after str16 "t": the durability byte
        return *n;
      },
      [](uint64_t id, absl::Span<const uint8_t> reply) { return verbs::DecodeMutateReply(reply, id); }, deadline,
      &failed);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  EXPECT_FALSE(failed);
  EXPECT_GE(ServerStatus().verbs_malformed_frames(), 3u);
  // The server still serves verbs.
  ASSERT_TRUE(table_->Put(Put("after").Add("cf", "q", "ok")).ok());
  auto r = table_->Get(Get("after"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("cf", "q").value_or(""), "ok");
  EXPECT_EQ(conn_->GetTransportStats().grpc_fallbacks, 0u);
}

TEST_F(Verbs, FallsBackToGrpcWhenVerbsFailsMidRun) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  std::unique_ptr<Connection> conn = Open(TransportChoice::kAuto);
  ASSERT_NE(conn, nullptr);
  std::unique_ptr<Table> t = conn->GetTable("t");
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::atomic<int> ops{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; !stop.load(); ++k) {
        std::string row = absl::StrCat("f", i, "-", k % 50);
        std::string v = absl::StrCat(k);
        absl::Status s = t->Put(Put(row).Add("cf", "q", v));
        auto r = t->Get(Get(row));
        if (!s.ok() || !r.ok() || r->Value("cf", "q").value_or("") != v) {
          errors++;
        }
        ops++;
      }
    });
  }
  auto wait_ops = [&](int n) {
    int target = ops.load() + n;
    absl::Time until = absl::Now() + absl::Seconds(60);
    while (ops.load() < target && absl::Now() < until) absl::SleepFor(absl::Milliseconds(20));
  };
  wait_ops(50);
  EXPECT_EQ(conn->GetTransportStats().verbs_state, "up");
  // The operator turns verbs off: every endpoint is disconnected under the running calls.
  SetServerVerbs(false);
  wait_ops(100);
  TransportStats off = conn->GetTransportStats();
  EXPECT_GT(off.grpc_fallbacks, 0u);
  EXPECT_GT(off.verbs_failures, 0u);
  // ... and on again: the client returns to verbs after verbs_retry.
  SetServerVerbs(true);
  uint64_t verbs_at_on = conn->GetTransportStats().verbs_calls;
  absl::Time until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < until && conn->GetTransportStats().verbs_calls < verbs_at_on + 50) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  TransportStats end = conn->GetTransportStats();
  EXPECT_GE(end.verbs_calls, verbs_at_on + 50) << end.verbs_state;
  EXPECT_EQ(end.verbs_state, "up");
}

TEST_F(Verbs, AConnectionOpenedWhileVerbsIsOffTakesItWhenItComesBack) {
  ASSERT_NO_FATAL_FAILURE(StartVerbsServer());
  SetServerVerbs(false);
  std::unique_ptr<Connection> conn = Open(TransportChoice::kAuto);
  ASSERT_NE(conn, nullptr);
  std::unique_ptr<Table> t = conn->GetTable("t");
  ASSERT_TRUE(t->Put(Put("r").Add("cf", "q", "v")).ok());
  EXPECT_EQ(conn->GetTransportStats().verbs_calls, 0u);
  EXPECT_EQ(conn->GetTransportStats().verbs_state.rfind("down: ", 0), 0u) << conn->GetTransportStats().verbs_state;
  SetServerVerbs(true);
  absl::Time until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < until && conn->GetTransportStats().verbs_calls < 5) {
    ASSERT_TRUE(t->Get(Get("r")).ok());
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_GE(conn->GetTransportStats().verbs_calls, 5u);
  EXPECT_EQ(conn->GetTransportStats().verbs_state, "up");
}

TEST_F(Verbs, AServerAtItsEndpointLimitKeepsClientsOnVerbs) {
  StartVerbsServer({"--rdma_max_endpoints=3"});  // conn_ holds one of them
  std::unique_ptr<Connection> conn = Open(TransportChoice::kAuto, /*max_endpoints=*/8);
  ASSERT_NE(conn, nullptr);
  std::unique_ptr<Table> t = conn->GetTable("t");
  EXPECT_EQ(PutGetOnThreads(t.get(), 8, 20, "lim"), 0);
  TransportStats ts = conn->GetTransportStats();
  EXPECT_EQ(ts.verbs_calls, 8u * 20 * 2) << ts.verbs_state;
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  EXPECT_LE(ts.endpoints_open, 2u);
  EXPECT_GE(ServerStatus().verbs_connects_rejected(), 1u);  // "endpoint limit"
}

// ---------------------------------------------------------------------------------------------
// Verbs under TLS and auth (docs/DESIGN.md §12). The certificates are made on the host
// (tests/security/make_certs.sh: the guest has no openssl) and copied to /basalt/certs.

constexpr char kCerts[] = "/basalt/certs/";

class SecureVerbs : public Verbs {
 protected:
  void SetUp() override {
    Verbs::SetUp();
    if (IsSkipped()) return;
    server_ = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, dir_.path() + "/data", Flags(2));
    ASSERT_TRUE(server_->Start().ok());
    admin_ = OpenAs("admin", TransportChoice::kGrpc);
    ASSERT_NE(admin_, nullptr);
    TableInfo t;
    t.name = "t";
    for (const char* f : {"cf", "cf2"}) {
      FamilySettings fs;
      fs.name = f;
      t.families.push_back(fs);
    }
    ASSERT_TRUE(admin_->GetAdmin()->CreateTable(t).ok());
    ASSERT_TRUE(admin_->GetTable("t")->Put(Put("r").Add("cf", "q", "one").Add("cf2", "q", "two")).ok());
    ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "R", "", "t", "", ""}).ok());
    ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"bob", "W", "", "t", "cf", ""}).ok());
  }

  // The secure server's settings, with sessions valid for `ttl_s` (2: the expiry test's).
  std::vector<std::string> Flags(int ttl_s, std::vector<std::string> more = {}) {
    std::vector<std::string> f = {"--rdma=on",
                                  absl::StrCat("--rdma_listen=", RxeAddress(), ":0"),
                                  absl::StrCat("--rdma_session_ttl_s=", ttl_s),
                                  absl::StrCat("--tls_cert=", kCerts, "server.pem"),
                                  absl::StrCat("--tls_key=", kCerts, "server.key"),
                                  absl::StrCat("--tls_ca=", kCerts, "ca.pem"), "--auth=true", "--superusers=admin",
                                  "--http_listen=off"};
    f.insert(f.end(), more.begin(), more.end());
    return f;
  }

  static ClientSecurity As(const std::string& user) {
    ClientSecurity s;
    s.tls_ca = absl::StrCat(kCerts, "ca.pem");
    if (!user.empty()) {
      s.tls_cert = absl::StrCat(kCerts, user, ".pem");
      s.tls_key = absl::StrCat(kCerts, user, ".key");
    }
    return s;
  }

  std::unique_ptr<Connection> OpenAs(const std::string& user, TransportChoice t) {
    ConnectionOptions o;
    o.address = server_->address();
    o.timeout = absl::Seconds(60);
    o.max_attempts = 1;
    o.transport = t;
    o.security = As(user);
    auto c = Connection::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // A session as `user` (empty: no certificate), over gRPC with TLS, as the client library asks.
  absl::StatusOr<verbs::VerbsSession> SessionAs(const std::string& user) {
    absl::StatusOr<ChannelSecurity> sec = MakeChannelSecurity(As(user));
    if (!sec.ok()) return sec.status();
    auto stub = rpc::Basalt::NewStub(CreateBasaltChannel(server_->address(), *sec));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    rpc::VerbsSessionRequest req;
    req.set_frame_version(verbs::kFrameVersion);
    rpc::VerbsSessionResponse resp;
    grpc::Status s = stub->OpenVerbsSession(&ctx, req, &resp);
    if (!s.ok()) return FromGrpcStatus(s);
    return verbs::SessionFromProto(resp);
  }

  static absl::Status Connect(const verbs::VerbsSession& session) {
    return verbs::VerbsClient::Open([session]() -> absl::StatusOr<verbs::VerbsSession> { return session; }, {})
        .status();
  }

  rpc::StatusResponse SecureStatus() {
    absl::StatusOr<ChannelSecurity> sec = MakeChannelSecurity(As("admin"));
    EXPECT_TRUE(sec.ok()) << sec.status();
    auto stub = rpc::Admin::NewStub(CreateBasaltChannel(server_->address(), *sec));
    grpc::ClientContext ctx;
    rpc::StatusResponse resp;
    grpc::Status s = stub->Status(&ctx, rpc::StatusRequest(), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  std::unique_ptr<Connection> admin_;
};

TEST_F(SecureVerbs, ConnectsWithAForgedExpiredOrAnotherUsersTokenAreRefused) {
  // Sessions go only to authenticated callers who may read or write something.
  EXPECT_EQ(SessionAs("").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(SessionAs("carl").status().code(), StatusCode::kPermissionDenied);  // no grants
  absl::StatusOr<verbs::VerbsSession> alice = SessionAs("alice");
  ASSERT_TRUE(alice.ok()) << alice.status();
  absl::StatusOr<verbs::VerbsSession> bob = SessionAs("bob");
  ASSERT_TRUE(bob.ok()) << bob.status();
  const uint64_t rejected_before = SecureStatus().verbs_connects_rejected();
  EXPECT_TRUE(Connect(*alice).ok());
  // A token never issued.
  verbs::VerbsSession forged = *alice;
  forged.token = std::string(verbs::ConnectData::kTokenBytes, 'X');
  absl::Status s = Connect(forged);
  EXPECT_NE(s.message().find("rejected: bad token"), absl::string_view::npos) << s;
  // Bob's token in Alice's hands (she has not his session's key), and the other way round.
  verbs::VerbsSession stolen = *alice;
  stolen.token = bob->token;
  s = Connect(stolen);
  EXPECT_NE(s.message().find("rejected: bad signature"), absl::string_view::npos) << s;
  stolen = *bob;
  stolen.token = alice->token;
  s = Connect(stolen);
  EXPECT_NE(s.message().find("rejected: bad signature"), absl::string_view::npos) << s;
  // A real session past its expiry (the client is told it is still good).
  absl::SleepFor(absl::Milliseconds(2500));
  verbs::VerbsSession stale = *alice;
  stale.expires = absl::InfiniteFuture();
  s = Connect(stale);
  EXPECT_NE(s.message().find("rejected: expired token"), absl::string_view::npos) << s;
  // Each Open tries twice: eight refusals, counted.
  EXPECT_EQ(SecureStatus().verbs_connects_rejected(), rejected_before + 8);
}

TEST_F(SecureVerbs, GetsAndPutsOverVerbsObeyTheCallersPermissions) {
  auto alice = OpenAs("alice", TransportChoice::kVerbs);
  ASSERT_NE(alice, nullptr);
  auto t = alice->GetTable("t");
  auto r = t->Get(Get("r"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->size(), 2u);
  absl::Status denied = t->Put(Put("r").Add("cf", "q", "x"));
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied) << denied;
  EXPECT_NE(denied.message().find("user 'alice' may not Mutate"), absl::string_view::npos) << denied;
  TransportStats ts = alice->GetTransportStats();
  EXPECT_EQ(ts.verbs_state, "up");
  EXPECT_GE(ts.verbs_calls, 2u);
  EXPECT_EQ(ts.grpc_fallbacks, 0u);

  auto bob = OpenAs("bob", TransportChoice::kVerbs);
  ASSERT_NE(bob, nullptr);
  auto bt = bob->GetTable("t");
  EXPECT_TRUE(bt->Put(Put("r2").Add("cf", "q", "by bob")).ok());
  denied = bt->Put(Put("r2").Add("cf2", "q", "x"));
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied) << denied;
  EXPECT_NE(denied.message().find("column cf2:q"), absl::string_view::npos) << denied;
  EXPECT_EQ(bt->Get(Get("r")).status().code(), StatusCode::kPermissionDenied);
  ts = bob->GetTransportStats();
  EXPECT_GE(ts.verbs_calls, 3u);
  EXPECT_EQ(ts.grpc_fallbacks, 0u);
  // What bob wrote is there, and only that.
  auto back = admin_->GetTable("t")->Get(Get("r2"));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->Value("cf", "q").value_or("?"), "by bob");
  // A grant reaches the verbs path at once.
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"bob", "RW", "", "t", "", ""}).ok());
  EXPECT_TRUE(bt->Put(Put("r2").Add("cf2", "q", "now")).ok());
  EXPECT_TRUE(bt->Get(Get("r2")).ok());
}

// One user holds at most rdma_max_endpoints_per_user endpoints (2 here) and
// rdma_max_sessions_per_user sessions (4), so one user cannot take every endpoint from the others.
TEST_F(SecureVerbs, OneUserHoldsAtMostItsCapOfEndpointsAndSessionsAndOthersStillConnect) {
  // The same data (alice's and bob's grants), sessions valid long enough for this emulated guest.
  ASSERT_EQ(server_->Terminate(), 0);
  server_ = std::make_unique<ServerProcess>(
      BASALT_SERVER_BINARY, dir_.path() + "/data",
      Flags(600, {"--rdma_max_endpoints_per_user=2", "--rdma_max_sessions_per_user=4"}));
  ASSERT_TRUE(server_->Start().ok());
  absl::StatusOr<verbs::VerbsSession> alice = SessionAs("alice");
  ASSERT_TRUE(alice.ok()) << alice.status();
  auto open = [](const verbs::VerbsSession& s) {
    return verbs::VerbsClient::Open([s]() -> absl::StatusOr<verbs::VerbsSession> { return s; }, {});
  };
  std::vector<std::unique_ptr<verbs::VerbsClient>> held;
  for (int i = 0; i < 2; ++i) {
    auto c = open(*alice);
    ASSERT_TRUE(c.ok()) << c.status();
    held.push_back(*std::move(c));
  }
  absl::Status third = Connect(*alice);
  EXPECT_NE(third.message().find("rejected: user endpoint limit"), absl::string_view::npos) << third;
  // Another of her sessions is hers too.
  absl::StatusOr<verbs::VerbsSession> again = SessionAs("alice");
  ASSERT_TRUE(again.ok()) << again.status();
  third = Connect(*again);
  EXPECT_NE(third.message().find("rejected: user endpoint limit"), absl::string_view::npos) << third;
  // Bob is not held back by her endpoints.
  absl::StatusOr<verbs::VerbsSession> bob = SessionAs("bob");
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_TRUE(Connect(*bob).ok());
  // Once one of hers closes, she connects again.
  held.pop_back();
  absl::Status back = absl::UnknownError("not tried");
  for (int i = 0; i < 50 && !back.ok(); ++i) {
    back = Connect(*alice);
    if (!back.ok()) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(back.ok()) << back;
  // Two sessions so far; two more are hers to have, a fifth while the four are valid is refused
  // (her client stays on gRPC), and bob still gets his.
  ASSERT_TRUE(SessionAs("alice").ok());
  ASSERT_TRUE(SessionAs("alice").ok());
  absl::Status fifth = SessionAs("alice").status();
  EXPECT_EQ(fifth.code(), StatusCode::kResourceExhausted) << fifth;
  EXPECT_NE(fifth.message().find("rdma_max_sessions_per_user 4"), absl::string_view::npos) << fifth;
  EXPECT_TRUE(SessionAs("bob").ok());
}

}  // namespace
}  // namespace basalt::testing
