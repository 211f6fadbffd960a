// Starts the real basalt-server executable on a port picked at run time (--listen=...:0 and
// --port_file), talks to it with the generated gRPC stubs, stops it with SIGTERM (exit code 0)
// and restarts it to check that acknowledged writes and the catalogue come back.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/basalt.grpc.pb.h"
#include "tests/util/child_process.h"
#include "tests/util/server_process.h"
#include "tests/util/temp_dir.h"
#include "transport/grpc/grpc_settings.h"
#include "transport/verbs/setup.h"

namespace basalt::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A basalt-server child process on a port picked at run time; its stdout and stderr go to
// files in the test directory.
std::unique_ptr<testing::ServerProcess> StartServer(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--handler_threads=2", "--block_cache_size=8MiB"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto server = std::make_unique<testing::ServerProcess>(BASALT_SERVER_BINARY, dir + "/data", args, dir);
  absl::Status s = server->Start();
  EXPECT_TRUE(s.ok()) << s << "\n" << ReadFile(dir + "/stderr");
  return server;
}

// Runs the binary to completion with args; returns the exit code. Its stdout and stderr go to
// out_path, or stderr to err_path when that is given.
int RunToExit(std::vector<std::string> args, const std::string& out_path, const std::string& err_path = "") {
  args.insert(args.begin(), BASALT_SERVER_BINARY);
  testing::ChildProcess::Output output;
  output.stdout_path = out_path;
  output.stderr_path = err_path;
  output.truncate = true;
  absl::StatusOr<std::unique_ptr<testing::ChildProcess>> p = testing::ChildProcess::Spawn(std::move(args), output);
  if (!p.ok()) return -1;
  return (*p)->Wait();
}

struct Client {
  explicit Client(int port) {
    channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(),
                                        ClientChannelArguments());
    data = rpc::Basalt::NewStub(channel);
    admin = rpc::Admin::NewStub(channel);
    echo = rpc::Echo::NewStub(channel);
  }
  template <class Fn>
  grpc::Status Call(Fn fn) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return fn(&ctx);
  }
  grpc::Status Put(const std::string& table, const std::string& row, const std::string& fam, const std::string& q,
                   const std::string& v) {
    rpc::MutateRequest req;
    req.set_table(table);
    req.mutable_mutation()->set_row(row);
    auto* m = req.mutable_mutation()->add_mutations();
    m->set_family(fam);
    m->set_qualifier(q);
    m->set_value(v);
    rpc::MutateResponse resp;
    return Call([&](grpc::ClientContext* c) { return data->Mutate(c, req, &resp); });
  }
  grpc::Status Get(const std::string& table, const std::string& row, rpc::GetResponse* resp, int max_versions = 0) {
    rpc::GetRequest req;
    req.set_table(table);
    req.set_row(row);
    req.mutable_read()->set_max_versions(max_versions);
    return Call([&](grpc::ClientContext* c) { return data->Get(c, req, resp); });
  }
  // The value of row's single newest f:q, or "<none>".
  std::string Value(const std::string& table, const std::string& row, const std::string& fam = "f",
                    const std::string& q = "q") {
    rpc::GetResponse resp;
    grpc::Status s = Get(table, row, &resp);
    if (!s.ok()) return "<error " + s.error_message() + ">";
    for (const auto& c : resp.row().cells()) {
      if (c.family() == fam && c.qualifier() == q) return c.value();
    }
    return "<none>";
  }
  grpc::Status Admin(grpc::Status (rpc::Admin::Stub::*fn)(grpc::ClientContext*, const rpc::TableRequest&,
                                                          rpc::AdminResponse*),
                     const std::string& table) {
    rpc::TableRequest req;
    req.set_table(table);
    rpc::AdminResponse resp;
    return Call([&](grpc::ClientContext* c) { return (admin.get()->*fn)(c, req, &resp); });
  }

  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<rpc::Basalt::Stub> data;
  std::unique_ptr<rpc::Admin::Stub> admin;
  std::unique_ptr<rpc::Echo::Stub> echo;
};

std::string BigEndian(int64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[i] = static_cast<char>(v & 0xff);
  return s;
}

#define EXPECT_CODE(status, code)                                                   \
  do {                                                                              \
    const grpc::Status basalt_s_ = (status);                                        \
    EXPECT_EQ(basalt_s_.error_code(), grpc::StatusCode::code) << basalt_s_.error_message(); \
  } while (0)

TEST(ServerProcess, BadSettingsExitTwo) {
  testing::TempDir dir;
  EXPECT_EQ(RunToExit({"--no_such_flag=1"}, dir.path() + "/out"), 2);
  EXPECT_NE(ReadFile(dir.path() + "/out").find("unknown setting 'no_such_flag'"), std::string::npos);
  EXPECT_EQ(RunToExit({"--cluster"}, dir.path() + "/out"), 2);
  EXPECT_NE(ReadFile(dir.path() + "/out").find("cluster=true needs zookeeper_quorum"), std::string::npos);
  EXPECT_EQ(RunToExit({"--help"}, dir.path() + "/out"), 0);
  EXPECT_NE(ReadFile(dir.path() + "/out").find("--scan_bytes_per_message="), std::string::npos);
}

TEST(ServerProcess, ServesRestartsAndKeepsData) {
  testing::TempDir dir;
  auto server = StartServer(dir.path());
  int port = server->port();
  ASSERT_GT(port, 0) << ReadFile(dir.path() + "/stderr");
  EXPECT_NE(ReadFile(dir.path() + "/stdout").find("basalt-server listening on 127.0.0.1:" + std::to_string(port) +
                                                  " (data dir " + dir.path() + "/data, 0 tables)"),
            std::string::npos)
      << ReadFile(dir.path() + "/stdout");
  auto client = std::make_unique<Client>(port);

  // ---- admin: create
  {
    rpc::CreateTableRequest req;
    req.mutable_table()->set_name("t1");
    auto* f = req.mutable_table()->add_families();
    f->set_name("f");
    f->set_max_versions(3);
    req.mutable_table()->add_families()->set_name("g");
    rpc::CreateTableResponse resp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* c) { return client->admin->CreateTable(c, req, &resp); }).ok());
    grpc::Status again = client->Call([&](grpc::ClientContext* c) { return client->admin->CreateTable(c, req, &resp); });
    EXPECT_CODE(again, ALREADY_EXISTS);
    req.mutable_table()->set_name("bad/name");
    EXPECT_CODE(client->Call([&](grpc::ClientContext* c) { return client->admin->CreateTable(c, req, &resp); }),
                INVALID_ARGUMENT);
    req.mutable_table()->set_name("t9");
    req.mutable_table()->mutable_families(1)->set_name("f");  // twice
    EXPECT_CODE(client->Call([&](grpc::ClientContext* c) { return client->admin->CreateTable(c, req, &resp); }),
                INVALID_ARGUMENT);
    req.mutable_table()->clear_families();
    EXPECT_CODE(client->Call([&](grpc::ClientContext* c) { return client->admin->CreateTable(c, req, &resp); }),
                INVALID_ARGUMENT);
    rpc::TableRequest dreq;
    dreq.set_table("t1");
    rpc::DescribeTableResponse dresp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* c) { return client->admin->DescribeTable(c, dreq, &dresp); }).ok());
    ASSERT_EQ(dresp.table().families_size(), 2);
    EXPECT_EQ(dresp.table().families(0).max_versions(), 3);
    EXPECT_EQ(dresp.table().families(1).block_size(), 64u * 1024);
    EXPECT_EQ(dresp.state(), rpc::TABLE_ENABLED);
  }

  // ---- put, get, versions
  ASSERT_TRUE(client->Put("t1", "r1", "f", "q", "v1").ok());
  std::this_thread::sleep_for(milliseconds(3));  // a distinct timestamp: a second version
  ASSERT_TRUE(client->Put("t1", "r1", "f", "q", "v2").ok());
  ASSERT_TRUE(client->Put("t1", "r1", "g", "x", "gx").ok());
  EXPECT_EQ(client->Value("t1", "r1"), "v2");
  {
    rpc::GetResponse resp;
    ASSERT_TRUE(client->Get("t1", "r1", &resp, 3).ok());
    ASSERT_EQ(resp.row().cells_size(), 3);  // f:q twice (newest first), g:x
    EXPECT_EQ(resp.row().row(), "r1");
    EXPECT_EQ(resp.row().cells(0).value(), "v2");
    EXPECT_EQ(resp.row().cells(1).value(), "v1");
    EXPECT_GT(resp.row().cells(0).timestamp(), 0);
    EXPECT_EQ(resp.row().cells(2).family(), "g");
    rpc::GetResponse none;
    ASSERT_TRUE(client->Get("t1", "absent", &none).ok());
    EXPECT_EQ(none.row().cells_size(), 0);
  }

  // ---- bad requests, exact codes
  {
    rpc::GetResponse resp;
    grpc::Status s = client->Get("nope", "r1", &resp);
    EXPECT_CODE(s, NOT_FOUND);
    EXPECT_EQ(s.error_message(), "table 'nope' does not exist");
    EXPECT_CODE(client->Get("t1", "", &resp), INVALID_ARGUMENT);
    EXPECT_CODE(client->Get("t1", "r1", &resp, -1), INVALID_ARGUMENT);
    EXPECT_CODE(client->Get("", "r1", &resp), INVALID_ARGUMENT);
    grpc::Status fam = client->Put("t1", "r1", "zz", "q", "v");
    EXPECT_CODE(fam, INVALID_ARGUMENT);
    EXPECT_NE(fam.error_message().find("'zz'"), std::string::npos) << fam.error_message();
    EXPECT_CODE(client->Put("t1", "", "f", "q", "v"), INVALID_ARGUMENT);
    rpc::GetRequest req;
    req.set_table("t1");
    req.set_row("r1");
    req.mutable_read()->add_columns()->set_family("nofam");
    EXPECT_CODE(client->Call([&](grpc::ClientContext* c) { return client->data->Get(c, req, &resp); }),
                INVALID_ARGUMENT);
    rpc::MutateRequest mreq;
    mreq.set_table("t1");
    mreq.mutable_mutation()->set_row("r1");
    auto* m = mreq.mutable_mutation()->add_mutations();
    m->set_family("f");
    m->set_kind(static_cast<rpc::Mutation::Kind>(42));
    rpc::MutateResponse mresp;
    EXPECT_CODE(client->Call([&](grpc::ClientContext* c) { return client->data->Mutate(c, mreq, &mresp); }),
                INVALID_ARGUMENT);
    m->set_kind(rpc::Mutation::PUT);
    m->set_timestamp(-5);
    EXPECT_CODE(client->Call([&](grpc::ClientContext* c) { return client->data->Mutate(c, mreq, &mresp); }),
                INVALID_ARGUMENT);
    m->clear_timestamp();
    mreq.set_durability(static_cast<rpc::Durability>(9));
    EXPECT_CODE(client->Call([&](grpc::ClientContext* c) { return client->data->Mutate(c, mreq, &mresp); }),
                INVALID_ARGUMENT);
  }

  // ---- increment
  {
    rpc::IncrementRequest req;
    req.set_table("t1");
    req.set_row("ctr");
    auto* c = req.add_columns();
    c->set_family("f");
    c->set_qualifier("n");
    c->set_amount(5);
    rpc::IncrementResponse resp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* x) { return client->data->Increment(x, req, &resp); }).ok());
    ASSERT_EQ(resp.row().cells_size(), 1);
    EXPECT_EQ(resp.row().cells(0).value(), BigEndian(5));
    const int64_t ts1 = resp.row().cells(0).timestamp();
    req.mutable_columns(0)->set_amount(-8);
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* x) { return client->data->Increment(x, req, &resp); }).ok());
    EXPECT_EQ(resp.row().cells(0).value(), BigEndian(-3));
    EXPECT_GT(resp.row().cells(0).timestamp(), ts1);
    EXPECT_EQ(client->Value("t1", "ctr", "f", "n"), BigEndian(-3));
    // Not a counter.
    req.set_row("r1");
    req.mutable_columns(0)->set_qualifier("q");
    grpc::Status s = client->Call([&](grpc::ClientContext* x) { return client->data->Increment(x, req, &resp); });
    EXPECT_CODE(s, INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "value of f:q is 2 bytes, not a 64-bit counter");
  }

  // ---- append
  {
    rpc::AppendRequest req;
    req.set_table("t1");
    req.set_row("r1");
    auto* c = req.add_columns();
    c->set_family("f");
    c->set_qualifier("q");
    c->set_value("+a");
    rpc::AppendResponse resp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* x) { return client->data->Append(x, req, &resp); }).ok());
    ASSERT_EQ(resp.row().cells_size(), 1);
    EXPECT_EQ(resp.row().cells(0).value(), "v2+a");
    EXPECT_EQ(client->Value("t1", "r1"), "v2+a");
    req.set_row("fresh");
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* x) { return client->data->Append(x, req, &resp); }).ok());
    EXPECT_EQ(resp.row().cells(0).value(), "+a");
  }

  // ---- checkAndMutate
  {
    auto cam = [&](rpc::CompareOp op, const std::string& given, const std::string& new_value, bool* processed,
                   const std::string& mutation_row = "r1") {
      rpc::CheckAndMutateRequest req;
      req.set_table("t1");
      req.set_row("r1");
      req.mutable_condition()->set_family("f");
      req.mutable_condition()->set_qualifier("q");
      req.mutable_condition()->set_op(op);
      req.mutable_condition()->set_value(given);
      req.mutable_mutation()->set_row(mutation_row);
      auto* m = req.mutable_mutation()->add_mutations();
      m->set_family("f");
      m->set_qualifier("q");
      m->set_value(new_value);
      rpc::CheckAndMutateResponse resp;
      grpc::Status s =
          client->Call([&](grpc::ClientContext* x) { return client->data->CheckAndMutate(x, req, &resp); });
      *processed = resp.processed();
      return s;
    };
    bool p = true;
    ASSERT_TRUE(cam(rpc::EQUAL, "wrong", "c1", &p).ok());
    EXPECT_FALSE(p);
    EXPECT_EQ(client->Value("t1", "r1"), "v2+a");
    ASSERT_TRUE(cam(rpc::EQUAL, "v2+a", "c1", &p).ok());
    EXPECT_TRUE(p);
    EXPECT_EQ(client->Value("t1", "r1"), "c1");
    // HBase's direction: LESS passes when the given value is below the stored one.
    ASSERT_TRUE(cam(rpc::LESS, "c0", "c2", &p).ok());
    EXPECT_TRUE(p);
    ASSERT_TRUE(cam(rpc::LESS, "c9", "c3", &p).ok());
    EXPECT_FALSE(p);
    ASSERT_TRUE(cam(rpc::GREATER, "c9", "c3", &p).ok());
    EXPECT_TRUE(p);
    EXPECT_EQ(client->Value("t1", "r1"), "c3");
    ASSERT_TRUE(cam(rpc::NOT_EXISTS, "", "c4", &p).ok());
    EXPECT_FALSE(p);
    EXPECT_CODE(cam(rpc::EQUAL, "c3", "c5", &p, "other"), INVALID_ARGUMENT);
    EXPECT_EQ(client->Value("t1", "r1"), "c3");
  }

  // ---- batch: rows independent, one status each
  {
    rpc::BatchMutateRequest req;
    req.set_table("t1");
    for (int i = 0; i < 5; ++i) {
      auto* rm = req.add_rows();
      rm->set_row("s" + std::to_string(i));
      auto* m = rm->add_mutations();
      m->set_family(i == 2 ? "nofam" : "f");
      m->set_qualifier("q");
      m->set_value("b" + std::to_string(i));
    }
    rpc::BatchMutateResponse resp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* x) { return client->data->BatchMutate(x, req, &resp); }).ok());
    ASSERT_EQ(resp.results_size(), 5);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(resp.results(i).code(), i == 2 ? 3 : 0) << i << " " << resp.results(i).message();
    }
    EXPECT_EQ(client->Value("t1", "s4"), "b4");
    EXPECT_EQ(client->Value("t1", "s2"), "<none>");
  }

  // ---- scan: batching, limit, stop row
  {
    rpc::ScanRequest req;
    req.set_table("t1");
    req.set_start_row("s");
    req.set_stop_row("t");
    req.set_rows_per_message(2);
    grpc::ClientContext ctx;
    auto reader = client->data->Scan(&ctx, req);
    rpc::ScanResponse msg;
    std::vector<std::string> rows;
    int messages = 0;
    while (reader->Read(&msg)) {
      ++messages;
      EXPECT_LE(msg.rows_size(), 2);
      for (const auto& r : msg.rows()) rows.push_back(r.row());
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_EQ(rows, (std::vector<std::string>{"s0", "s1", "s3", "s4"}));
    EXPECT_EQ(messages, 2);

    req.set_limit(3);
    req.set_start_row("");
    req.clear_stop_row();
    grpc::ClientContext ctx2;
    auto r2 = client->data->Scan(&ctx2, req);
    rows.clear();
    while (r2->Read(&msg)) {
      for (const auto& r : msg.rows()) rows.push_back(r.row());
    }
    ASSERT_TRUE(r2->Finish().ok());
    EXPECT_EQ(rows, (std::vector<std::string>{"ctr", "fresh", "r1"}));

    req.set_table("nope");
    grpc::ClientContext ctx3;
    auto r3 = client->data->Scan(&ctx3, req);
    EXPECT_FALSE(r3->Read(&msg));
    EXPECT_CODE(r3->Finish(), NOT_FOUND);

    // A client that walks away mid-scan: the server stops and keeps serving. Enough rows that
    // the stream outgrows the flow-control window before the cancel arrives.
    rpc::BatchMutateRequest bulk;
    bulk.set_table("t1");
    bulk.set_durability(rpc::DURABILITY_ASYNC_WAL);
    for (int i = 0; i < 3000; ++i) {
      auto* rm = bulk.add_rows();
      rm->set_row("z" + std::to_string(100000 + i));
      auto* m = rm->add_mutations();
      m->set_family("f");
      m->set_qualifier("q");
      m->set_value(std::string(100, 'v'));
    }
    rpc::BatchMutateResponse bresp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* x) { return client->data->BatchMutate(x, bulk, &bresp); }).ok());
    req.set_table("t1");
    req.set_start_row("z");
    req.set_limit(0);
    req.set_rows_per_message(1);
    grpc::ClientContext ctx4;
    auto r4 = client->data->Scan(&ctx4, req);
    ASSERT_TRUE(r4->Read(&msg));
    ctx4.TryCancel();
    while (r4->Read(&msg)) {
    }
    EXPECT_CODE(r4->Finish(), CANCELLED);
    EXPECT_EQ(client->Value("t1", "s0"), "b0");
  }

  // ---- delete row
  {
    rpc::MutateRequest req;
    req.set_table("t1");
    req.mutable_mutation()->set_row("s0");
    req.mutable_mutation()->add_mutations()->set_kind(rpc::Mutation::DELETE_ROW);
    rpc::MutateResponse resp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* x) { return client->data->Mutate(x, req, &resp); }).ok());
    EXPECT_EQ(client->Value("t1", "s0"), "<none>");
  }

  // ---- disable / enable / drop on a second table
  {
    rpc::CreateTableRequest req;
    req.mutable_table()->set_name("t2");
    req.mutable_table()->add_families()->set_name("f");
    rpc::CreateTableResponse cresp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* c) { return client->admin->CreateTable(c, req, &cresp); }).ok());
    ASSERT_TRUE(client->Put("t2", "a", "f", "q", "t2a").ok());
    EXPECT_CODE(client->Admin(&rpc::Admin::Stub::DropTable, "t2"), FAILED_PRECONDITION);
    ASSERT_TRUE(client->Admin(&rpc::Admin::Stub::DisableTable, "t2").ok());
    grpc::Status s = client->Put("t2", "a", "f", "q", "x");
    EXPECT_CODE(s, FAILED_PRECONDITION);
    EXPECT_EQ(s.error_message(), "table t2 is disabled");
    rpc::GetResponse g;
    EXPECT_CODE(client->Get("t2", "a", &g), FAILED_PRECONDITION);
    ASSERT_TRUE(client->Admin(&rpc::Admin::Stub::EnableTable, "t2").ok());
    EXPECT_EQ(client->Value("t2", "a"), "t2a");
    ASSERT_TRUE(client->Admin(&rpc::Admin::Stub::Flush, "t2").ok());
    ASSERT_TRUE(client->Admin(&rpc::Admin::Stub::MajorCompact, "t2").ok());
    ASSERT_TRUE(client->Admin(&rpc::Admin::Stub::DisableTable, "t2").ok());
    ASSERT_TRUE(client->Admin(&rpc::Admin::Stub::DropTable, "t2").ok());
    EXPECT_CODE(client->Admin(&rpc::Admin::Stub::Flush, "t2"), NOT_FOUND);
    // A disabled table that survives the restart.
    req.mutable_table()->set_name("t3");
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* c) { return client->admin->CreateTable(c, req, &cresp); }).ok());
    ASSERT_TRUE(client->Admin(&rpc::Admin::Stub::DisableTable, "t3").ok());
  }

  // ---- status and echo
  {
    rpc::StatusRequest req;
    rpc::StatusResponse resp;
    ASSERT_TRUE(client->Call([&](grpc::ClientContext* c) { return client->admin->Status(c, req, &resp); }).ok());
    EXPECT_EQ(resp.version(), "basalt 0.1");
    EXPECT_EQ(resp.mode(), "standalone");
    EXPECT_GT(resp.requests(), 20u);
    EXPECT_EQ(resp.block_cache_capacity(), 8u << 20);
    EXPECT_GT(resp.resident_bytes(), 1u << 20);
    ASSERT_EQ(resp.tables_size(), 2);
    EXPECT_EQ(resp.tables(0).name(), "t1");
    EXPECT_GT(resp.tables(0).memstore_bytes(), 0u);
    EXPECT_EQ(resp.tables(1).state(), rpc::TABLE_DISABLED);
    // Echo is for benchmarks: off unless the server is started with it.
    rpc::EchoRequest ereq;
    ereq.set_payload("ping");
    ereq.set_reply_size(1000);
    rpc::EchoResponse eresp;
    grpc::Status es = client->Call([&](grpc::ClientContext* c) { return client->echo->Echo(c, ereq, &eresp); });
    EXPECT_EQ(es.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(es.error_message().find("--enable_echo=true"), std::string::npos) << es.error_message();
  }

  // ---- SIGTERM (with the client still connected): clean exit; restart: everything
  // acknowledged is back
  auto t0 = steady_clock::now();
  EXPECT_EQ(server->Stop(SIGTERM), 0) << ReadFile(dir.path() + "/stderr");
  EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(5));  // no wait for the idle connection
  client.reset();
  server = StartServer(dir.path());
  port = server->port();
  ASSERT_GT(port, 0) << ReadFile(dir.path() + "/stderr");
  EXPECT_NE(ReadFile(dir.path() + "/stdout").find("2 tables)"), std::string::npos);
  client = std::make_unique<Client>(port);
  EXPECT_EQ(client->Value("t1", "r1"), "c3");
  EXPECT_EQ(client->Value("t1", "ctr", "f", "n"), BigEndian(-3));
  EXPECT_EQ(client->Value("t1", "s4"), "b4");
  EXPECT_EQ(client->Value("t1", "s0"), "<none>");
  EXPECT_EQ(client->Value("t1", "r1", "g", "x"), "gx");
  rpc::GetResponse g;
  EXPECT_CODE(client->Get("t2", "a", &g), NOT_FOUND);
  EXPECT_CODE(client->Get("t3", "a", &g), FAILED_PRECONDITION);
  client.reset();
  EXPECT_EQ(server->Stop(SIGINT), 0) << ReadFile(dir.path() + "/stderr");
}

TEST(ServerProcess, BusyBeyondMaxConcurrentCalls) {
  testing::TempDir dir;
  auto server_owner = StartServer(dir.path(), {"--max_concurrent_calls=1", "--durability=async"});
  testing::ServerProcess& server = *server_owner;
  const int port = server.port();
  ASSERT_GT(port, 0) << ReadFile(dir.path() + "/stderr");
  Client client(port);
  rpc::CreateTableRequest creq;
  creq.mutable_table()->set_name("t");
  creq.mutable_table()->add_families()->set_name("f");
  rpc::CreateTableResponse cresp;
  ASSERT_TRUE(client.Call([&](grpc::ClientContext* c) { return client.admin->CreateTable(c, creq, &cresp); }).ok());
  rpc::BatchMutateRequest bulk;
  bulk.set_table("t");
  for (int i = 0; i < 3000; ++i) {
    auto* rm = bulk.add_rows();
    rm->set_row("r" + std::to_string(100000 + i));
    auto* m = rm->add_mutations();
    m->set_family("f");
    m->set_value(std::string(100, 'v'));
  }
  rpc::BatchMutateResponse bresp;
  ASSERT_TRUE(client.Call([&](grpc::ClientContext* c) { return client.data->BatchMutate(c, bulk, &bresp); }).ok());

  // A scan the client stops reading holds its call open (the stream outgrows the window).
  rpc::ScanRequest sreq;
  sreq.set_table("t");
  sreq.set_rows_per_message(1);
  grpc::ClientContext sctx;
  auto reader = client.data->Scan(&sctx, sreq);
  rpc::ScanResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  rpc::GetResponse g;
  grpc::Status busy = client.Get("t", "r100000", &g);
  EXPECT_CODE(busy, RESOURCE_EXHAUSTED);
  EXPECT_EQ(busy.error_message(), "server busy: 1 calls in flight");

  sctx.TryCancel();
  while (reader->Read(&msg)) {
  }
  EXPECT_CODE(reader->Finish(), CANCELLED);
  // The cancelled scan leaves; calls are admitted again.
  grpc::Status s;
  for (int i = 0; i < 200; ++i) {
    s = client.Get("t", "r100000", &g);
    if (s.ok()) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(g.row().cells_size(), 1);
  EXPECT_EQ(server.Stop(SIGTERM), 0) << ReadFile(dir.path() + "/stderr");
}

// ---- the verbs transport as a host without an RDMA device sees it (docs/DESIGN.md, §8: "no RDMA
// device" reported cleanly, gRPC served). The soft-RoCE guest tests (tests/rxe) cover a device.

// Whether this host has an RDMA device: the no-device expectations do not apply then.
bool HostHasRdmaDevice() { return verbs::RdmaDevices().ok(); }

rpc::StatusResponse ServerStatus(Client& client) {
  rpc::StatusRequest req;
  rpc::StatusResponse resp;
  grpc::Status s = client.Call([&](grpc::ClientContext* c) { return client.admin->Status(c, req, &resp); });
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

grpc::Status OpenVerbsSession(Client& client) {
  rpc::VerbsSessionRequest req;
  req.set_frame_version(1);
  rpc::VerbsSessionResponse resp;
  return client.Call([&](grpc::ClientContext* c) { return client.data->OpenVerbsSession(c, req, &resp); });
}

grpc::Status SetVerbs(Client& client, bool enabled) {
  rpc::SetVerbsRequest req;
  req.set_enabled(enabled);
  rpc::AdminResponse resp;
  return client.Call([&](grpc::ClientContext* c) { return client.admin->SetVerbs(c, req, &resp); });
}

// Checks that the server serves no verbs transport, for the reason `state` (Status's verbs),
// and that the verbs calls say so with FAILED_PRECONDITION.
void ExpectNoVerbs(Client& client, const std::string& state_prefix) {
  rpc::StatusResponse st = ServerStatus(client);
  EXPECT_TRUE(st.verbs().starts_with(state_prefix)) << st.verbs();
  EXPECT_FALSE(st.verbs_enabled());
  EXPECT_EQ(st.verbs_endpoints(), 0u);
  EXPECT_EQ(st.verbs_requests(), 0u);
  EXPECT_EQ(st.verbs_connects_accepted(), 0u);
  EXPECT_EQ(st.verbs_connects_rejected(), 0u);
  EXPECT_EQ(st.verbs_malformed_frames(), 0u);
  EXPECT_EQ(st.verbs_sessions(), 0u);
  const std::string why = "this server serves no verbs transport (" + state_prefix;
  grpc::Status session = OpenVerbsSession(client);
  EXPECT_CODE(session, FAILED_PRECONDITION);
  EXPECT_TRUE(session.error_message().starts_with(why)) << session.error_message();
  for (bool enabled : {false, true}) {
    grpc::Status set = SetVerbs(client, enabled);
    EXPECT_CODE(set, FAILED_PRECONDITION);
    EXPECT_TRUE(set.error_message().starts_with(why)) << set.error_message();
  }
  // Still off, and still serving.
  EXPECT_FALSE(ServerStatus(client).verbs_enabled());
}

TEST(ServerProcess, VerbsAutoWithoutDeviceServesGrpc) {
  if (HostHasRdmaDevice()) GTEST_SKIP() << "this host has an RDMA device: the no-device behaviour is not seen here";
  testing::TempDir dir;
  auto server = StartServer(dir.path());  // rdma=auto, the default
  ASSERT_GT(server->port(), 0) << ReadFile(dir.path() + "/stderr");
  const std::string out = ReadFile(dir.path() + "/stdout");
  const size_t verbs_line = out.find("basalt-server: verbs off: no RDMA device (");
  EXPECT_NE(verbs_line, std::string::npos) << out;
  EXPECT_NE(out.find("see deploy/RDMA.md\n"), std::string::npos) << out;
  EXPECT_LT(verbs_line, out.find("basalt-server listening on 127.0.0.1:")) << out;
  EXPECT_EQ(ReadFile(dir.path() + "/stderr"), "");

  Client client(server->port());
  rpc::CreateTableRequest creq;
  creq.mutable_table()->set_name("t");
  creq.mutable_table()->add_families()->set_name("f");
  rpc::CreateTableResponse cresp;
  ASSERT_TRUE(client.Call([&](grpc::ClientContext* c) { return client.admin->CreateTable(c, creq, &cresp); }).ok());
  ASSERT_TRUE(client.Put("t", "r", "f", "q", "over gRPC").ok());
  EXPECT_EQ(client.Value("t", "r"), "over gRPC");

  ExpectNoVerbs(client, "off: no RDMA device");
  EXPECT_EQ(client.Value("t", "r"), "over gRPC");
  EXPECT_EQ(server->Terminate(), 0) << ReadFile(dir.path() + "/stderr");
}

TEST(ServerProcess, VerbsOnWithoutDeviceExitsOne) {
  if (HostHasRdmaDevice()) GTEST_SKIP() << "this host has an RDMA device: the no-device behaviour is not seen here";
  testing::TempDir dir;
  const std::vector<std::string> common = {"--data_dir=" + dir.path() + "/data", "--listen=127.0.0.1:0",
                                           "--port_file=" + dir.path() + "/port"};
  std::vector<std::string> args = common;
  args.push_back("--rdma=on");
  EXPECT_EQ(RunToExit(args, dir.path() + "/out", dir.path() + "/err"), 1);
  const std::string err = ReadFile(dir.path() + "/err");
  EXPECT_TRUE(err.starts_with("basalt-server: rdma=on: no RDMA device (")) << err;
  EXPECT_NE(err.find("see deploy/RDMA.md\n"), std::string::npos) << err;
  EXPECT_EQ(ReadFile(dir.path() + "/out"), "");  // it never said it was listening
  EXPECT_EQ(ReadFile(dir.path() + "/port"), "");  // nor wrote the port file
}

TEST(ServerProcess, VerbsWildcardListenIsRefused) {
  // The wildcard is refused before the device is looked for: the same on every host.
  testing::TempDir dir;
  const std::vector<std::string> common = {"--data_dir=" + dir.path() + "/data", "--listen=127.0.0.1:0"};
  for (const char* wildcard : {"0.0.0.0:0", "[::]:4791"}) {
    std::vector<std::string> args = common;
    args.push_back("--rdma=on");
    args.push_back(std::string("--rdma_listen=") + wildcard);
    EXPECT_EQ(RunToExit(args, dir.path() + "/out", dir.path() + "/err"), 1) << wildcard;
    const std::string host = std::string(wildcard).substr(0, std::string(wildcard).rfind(':'));
    EXPECT_EQ(ReadFile(dir.path() + "/err"), "basalt-server: rdma=on: verbs listen address '" + host +
                                                 "' is a wildcard: give the address of the RDMA interface\n");
  }
  // rdma=auto: served over gRPC alone, and Status says why.
  auto server = StartServer(dir.path(), {"--rdma_listen=0.0.0.0:0"});
  ASSERT_GT(server->port(), 0) << ReadFile(dir.path() + "/stderr");
  EXPECT_NE(ReadFile(dir.path() + "/stdout").find("basalt-server: verbs off: verbs listen address '0.0.0.0' is a "
                                                  "wildcard: give the address of the RDMA interface\n"),
            std::string::npos)
      << ReadFile(dir.path() + "/stdout");
  Client client(server->port());
  ExpectNoVerbs(client, "off: verbs listen address '0.0.0.0' is a wildcard");
  EXPECT_EQ(server->Terminate(), 0) << ReadFile(dir.path() + "/stderr");
}

TEST(ServerProcess, VerbsOffByConfig) {
  testing::TempDir dir;
  auto server = StartServer(dir.path(), {"--rdma=off"});
  ASSERT_GT(server->port(), 0) << ReadFile(dir.path() + "/stderr");
  EXPECT_NE(ReadFile(dir.path() + "/stdout").find("basalt-server: verbs off: rdma=off\n"), std::string::npos)
      << ReadFile(dir.path() + "/stdout");
  Client client(server->port());
  EXPECT_EQ(ServerStatus(client).verbs(), "off: rdma=off");
  ExpectNoVerbs(client, "off: rdma=off");
  EXPECT_EQ(server->Terminate(), 0) << ReadFile(dir.path() + "/stderr");
}

// Started by systemd as Type=notify: READY=1 once it serves, STOPPING=1 at SIGTERM, as
// datagrams to $NOTIFY_SOCKET (src/base/notify.h).
TEST(ServerProcess, TellsSystemdWhenItIsReadyAndWhenItStops) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/notify";
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  auto receive = [fd] {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) return std::string();
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  };
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);  // the server inherits it
  auto server = StartServer(dir.path());
  ::unsetenv("NOTIFY_SOCKET");
  ASSERT_GT(server->port(), 0) << ReadFile(dir.path() + "/stderr");
  EXPECT_EQ(receive(), absl::StrCat("READY=1\nSTATUS=serving on 127.0.0.1:", server->port()));
  EXPECT_EQ(server->Terminate(), 0) << ReadFile(dir.path() + "/stderr");
  EXPECT_EQ(receive(), "STOPPING=1");
  ::close(fd);
}

}  // namespace
}  // namespace basalt::server
