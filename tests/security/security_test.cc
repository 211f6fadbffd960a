// Security (docs/DESIGN.md §12) against a real basalt-server with TLS and auth on, and real
// certificates the test makes with openssl (make_certs.sh): who can connect, who is refused, and
// what each user may do, as HBase's AccessController decides it. The rules one by one are
// src/security/access_control_test.cc's; here they go through TLS, the authenticator, the
// gRPC front end, the client library and the shell.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "gtest/gtest.h"
#include "tests/util/server_process.h"
#include "tests/util/temp_dir.h"
#include "tests/util/test_certs.h"

#ifndef BASALT_SERVER_BINARY
#error "BASALT_SERVER_BINARY must name the basalt-server executable"
#endif

namespace basalt::testing {
namespace {

using absl::StatusCode;

// carol authenticates with a token; its SHA-256 is in the users file.
constexpr char kCarolToken[] = "carol-token-6f1d0c2a9e8b47f5a3d2c1b0e9f8a7d6";

class Security : public ::testing::Test {
 protected:
  // Long enough that a loaded, sanitized run opens its scans well within it.
  static constexpr int kLeaseMs = 5000;
  static void SetUpTestSuite() { certs_ = new TestCerts(BASALT_SOURCE_DIR, "admin alice bob dave @admins"); }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  static std::string Cert(const std::string& name) { return (*certs_)(name); }

  void SetUp() override {
    // carol: a token, and the group ops; dave: a certificate, and the group admins (superusers).
    const std::string users = dir_.path() + "/users";
    std::ofstream(users) << "# USER TOKEN-SHA256 GROUPS\n"
                         << "carol " << Sha256(kCarolToken) << " ops\n"
                         << "dave - admins,staff\n";
    server_ = std::make_unique<ServerProcess>(
        BASALT_SERVER_BINARY, dir_.path() + "/data",
        std::vector<std::string>{"--tls_cert=" + Cert("server.pem"), "--tls_key=" + Cert("server.key"),
                                 "--tls_ca=" + Cert("ca.pem"), "--auth=true", "--auth_users_file=" + users,
                                 "--superusers=admin,@admins", "--http_listen=127.0.0.1:0", "--metrics_users=carol",
                                 // Short, for the lease test (no other test pauses a scan).
                                 absl::StrCat("--scanner_lease_ms=", kLeaseMs), "--max_scanners_per_user=2"});
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
    admin_ = Open(As("admin"));
    ASSERT_NE(admin_, nullptr);
    TableInfo t;
    t.name = "t1";
    for (const char* f : {"cf1", "cf2"}) {
      FamilySettings fs;
      fs.name = f;
      t.families.push_back(fs);
    }
    ASSERT_TRUE(admin_->GetAdmin()->CreateTable(t).ok());
    ASSERT_TRUE(admin_->GetTable("t1")->Put(Put("r1").Add("cf1", "q", "one").Add("cf2", "q", "two")).ok());
  }

  static std::string Sha256(const std::string& s) {
    std::string out;
    FILE* p = ::popen(absl::StrCat("printf %s '", s, "' | sha256sum").c_str(), "r");
    char buf[65] = {};
    if (p != nullptr && std::fread(buf, 1, 64, p) == 64) out.assign(buf, 64);
    if (p != nullptr) ::pclose(p);
    return out;
  }

  // A user's certificate and key, with the CA.
  ClientSecurity As(const std::string& user) {
    ClientSecurity s;
    s.tls_ca = Cert("ca.pem");
    s.tls_cert = Cert(user + ".pem");
    s.tls_key = Cert(user + ".key");
    return s;
  }
  ClientSecurity CaOnly() {
    ClientSecurity s;
    s.tls_ca = Cert("ca.pem");
    return s;
  }

  // A connection; failed calls are not retried (a refusal is final, and a test waits for none).
  std::unique_ptr<Connection> Open(const ClientSecurity& security,
                                   TransportChoice transport = TransportChoice::kGrpc) {
    ConnectionOptions o;
    o.address = server_->address();
    o.timeout = absl::Seconds(10);
    o.max_attempts = 1;
    o.transport = transport;
    o.security = security;
    auto c = Connection::Open(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  static void ExpectDenied(const absl::Status& s, const std::string& user, const std::string& call,
                           const std::string& scope) {
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s;
    EXPECT_NE(s.message().find("user '" + user + "' may not " + call), std::string::npos) << s;
    EXPECT_NE(s.message().find(scope), std::string::npos) << s;
  }

  static TestCerts* certs_;
  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Connection> admin_;
};

TestCerts* Security::certs_ = nullptr;

TEST_F(Security, AClientWithoutTheServersCaCannotConnect) {
  // Plain text to a TLS port: no answer that gRPC takes for one.
  auto plain = Open(ClientSecurity{});
  ASSERT_NE(plain, nullptr);
  absl::Status s = plain->GetTable("t1")->Get(Get("r1")).status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  // TLS, trusting another CA: the server's certificate does not verify.
  ClientSecurity rogue;
  rogue.tls_ca = Cert("rogue-ca.pem");
  auto other = Open(rogue);
  ASSERT_NE(other, nullptr);
  s = other->GetTable("t1")->Get(Get("r1")).status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  // A token is never sent over plain text: the client refuses to open.
  ConnectionOptions o;
  o.address = server_->address();
  o.security.token = kCarolToken;
  auto refused = Connection::Open(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("only over TLS"), std::string::npos) << refused.status();
}

TEST_F(Security, ACallWithNoCertificateOrKnownTokenIsUnauthenticated) {
  auto anonymous = Open(CaOnly());
  ASSERT_NE(anonymous, nullptr);
  absl::Status s = anonymous->GetTable("t1")->Get(Get("r1")).status();
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << s;
  EXPECT_NE(s.message().find("requires authentication"), std::string::npos) << s;
  ClientSecurity wrong = CaOnly();
  wrong.token = "not-a-token-the-server-knows";
  auto guesser = Open(wrong);
  ASSERT_NE(guesser, nullptr);
  s = guesser->GetAdmin()->ListTables().status();
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << s;
  // A certificate another CA signed (with an admin's name) never gets through the handshake.
  ClientSecurity forged = CaOnly();
  forged.tls_cert = Cert("rogue.pem");
  forged.tls_key = Cert("rogue.key");
  auto mallory = Open(forged);
  ASSERT_NE(mallory, nullptr);
  s = mallory->GetAdmin()->DropTable("t1");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s;
  // Who is who: a certificate's common name, a token's user with its groups.
  auto carol = Open([&] {
    ClientSecurity c = CaOnly();
    c.token = kCarolToken;
    return c;
  }());
  auto who = carol->GetAdmin()->WhoAmI();
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->user, "carol");
  EXPECT_EQ(who->authentication, "token");
  EXPECT_EQ(who->groups, std::vector<std::string>{"ops"});
  EXPECT_FALSE(who->superuser);
  auto dave = Open(As("dave"))->GetAdmin()->WhoAmI();
  ASSERT_TRUE(dave.ok()) << dave.status();
  EXPECT_EQ(dave->user, "dave");
  EXPECT_EQ(dave->authentication, "certificate");
  EXPECT_TRUE(dave->superuser);  // by the group admins
}

// A certificate whose common name starts with '@' names a group, which no user is: refused, not
// taken for a member of that group (here a superusers' one).
TEST_F(Security, ACertificateNamingAGroupIsRefused) {
  auto impostor = Open(As("@admins"));
  ASSERT_NE(impostor, nullptr);
  absl::Status s = impostor->GetAdmin()->ListTables().status();
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated) << s;
  EXPECT_NE(s.message().find("may not start with '@'"), std::string::npos) << s;
}

// The HTTP port under auth=true (docs/DESIGN.md §12): TLS with the gRPC port's certificate, callers
// authenticated as on gRPC (a client certificate or a bearer token); every page needs global A,
// /metrics global A or a scrape identity (metrics_users=carol), /healthz nothing.
TEST_F(Security, TheHttpPortAuthenticatesAsGrpcAndShowsItsPagesToAdminsOnly) {
  auto status = admin_->GetAdmin()->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  const std::string http = status->http_address;
  ASSERT_FALSE(http.empty());
  const std::string host = http.substr(0, http.rfind(':'));
  const int port = std::stoi(http.substr(http.rfind(':') + 1));
  // GET `path` as `user` (its certificate; "" none), with `token` ("" none): the status, or -1
  // when the exchange failed.
  auto get = [&](const std::string& path, const std::string& user, const std::string& token) {
    std::unique_ptr<httplib::SSLClient> c =
        user.empty() ? std::make_unique<httplib::SSLClient>(host, port)
                     : std::make_unique<httplib::SSLClient>(host, port, Cert(user + ".pem"), Cert(user + ".key"));
    c->set_ca_cert_path(Cert("ca.pem"));
    c->enable_server_certificate_verification(true);
    c->set_read_timeout(10, 0);
    if (!token.empty()) c->set_bearer_token_auth(token);
    httplib::Result r = c->Get(path);
    return r ? r->status : -1;
  };
  EXPECT_EQ(get("/healthz", "", ""), 200) << "the liveness path needs no one";
  for (const char* page : {"/", "/status.json", "/conf", "/logs", "/metrics"}) {
    EXPECT_EQ(get(page, "", ""), 401) << page;
    EXPECT_EQ(get(page, "", "not-a-token-the-server-knows"), 401) << page;
    EXPECT_EQ(get(page, "alice", ""), 403) << page << ": alice holds no global A";
    EXPECT_EQ(get(page, "admin", ""), 200) << page;
    EXPECT_EQ(get(page, "dave", ""), 200) << page << ": dave is a superuser by his group";
  }
  EXPECT_EQ(get("/metrics", "", kCarolToken), 200) << "carol scrapes (metrics_users)";
  EXPECT_EQ(get("/", "", kCarolToken), 403) << "but reads no page";
  EXPECT_EQ(get("/", "@admins", ""), 401) << "a certificate naming a group";
  // Plain HTTP to the TLS port gets nothing.
  httplib::Client plain(host, port);
  plain.set_read_timeout(5, 0);
  httplib::Result r = plain.Get("/healthz");
  EXPECT_FALSE(r && r->status == 200) << "the port answered plain HTTP";
}

// Transactions belong to the user who started them (docs/DESIGN.md §12): starting one needs W somewhere;
// another user's commit, abort or invalidate is refused; a user with global A may end any.
TEST_F(Security, AnotherUsersTransactionCannotBeCommittedAbortedOrInvalidated) {
  auto alice = Open(As("alice"));
  auto bob = Open(As("bob"));
  ASSERT_NE(alice, nullptr);
  ASSERT_NE(bob, nullptr);
  absl::Status s = alice->StartTransaction(absl::Seconds(30)).status();
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << "alice holds W on nothing yet: " << s;
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "RW", "", "t1", "", ""}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"bob", "RW", "", "t1", "", ""}).ok());
  auto tx = alice->StartTransaction(absl::Seconds(30));
  ASSERT_TRUE(tx.ok()) << tx.status();
  const int64_t wp = tx->write_pointer;
  for (absl::Status refused : {bob->CommitTransaction(wp, {}), bob->AbortTransaction(wp), bob->InvalidateTransaction(wp)}) {
    EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << refused;
    EXPECT_NE(refused.message().find("another user started it"), std::string::npos) << refused;
  }
  // Still alice's, still in progress: a snapshot taken now excludes it.
  auto other = bob->StartTransaction(absl::Seconds(30));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(std::find(other->excluded.begin(), other->excluded.end(), wp), other->excluded.end());
  EXPECT_TRUE(alice->CommitTransaction(wp, {}).ok());
  EXPECT_TRUE(admin_->InvalidateTransaction(other->write_pointer).ok()) << "a superuser ends any";
}

// The wait a quota's refusal names, in ms ("- wait 0.20sec"); -1 if none.
int64_t WaitMs(const absl::Status& s) {
  const std::string text(s.message());
  const size_t at = text.find(" - wait ");
  if (at == std::string::npos || text.find("mins, ", at) != std::string::npos) return -1;
  return static_cast<int64_t>(std::stod(text.substr(at + 8)) * 1000 + 0.5);
}

TEST_F(Security, AQuotaRefusesCallsPastItsLimitAndLetsThemThroughAfterTheWaitItNames) {
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "RW", "", "t1", "", ""}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"bob", "R", "", "t1", "", ""}).ok());
  auto alice = Open(As("alice"));
  auto bob = Open(As("bob"));
  // Only a global admin sets or lists quotas.
  ExpectDenied(alice->GetAdmin()->SetQuota(Quota{"alice", "", "", "", "1000req/sec"}), "alice", "SetQuota",
               "A on global");
  ExpectDenied(alice->GetAdmin()->ListQuotas().status(), "alice", "ListQuotas", "A on global");
  EXPECT_EQ(admin_->GetAdmin()->SetQuota(Quota{"alice", "", "", "", "10CU/sec"}).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(admin_->GetAdmin()->SetQuota(Quota{"alice", "", "", "", "10req/sec"}).ok());
  auto t = alice->GetTable("t1");
  // Calls until one is refused: no more than the bucket held (10) and refilled meanwhile (10 a
  // second), however slow this machine is.
  auto until_refused = [](const std::function<absl::Status()>& call, int* calls) {
    const absl::Time start = absl::Now();
    absl::Status s;
    for (*calls = 0; *calls < 1000 && s.ok(); ++*calls) s = call();
    return std::make_pair(s, absl::ToDoubleSeconds(absl::Now() - start));
  };
  int calls = 0;
  auto [refused, secs] = until_refused([&] { return t->Get(Get("r1")).status(); }, &calls);
  ASSERT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused << " after " << calls << " calls";
  EXPECT_LE(calls, 10 + static_cast<int>(10 * secs) + 2) << "in " << secs << " s";
  EXPECT_NE(refused.message().find("number of requests exceeded - wait "), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("USER => alice"), std::string::npos) << refused;
  EXPECT_TRUE(bob->GetTable("t1")->Get(Get("r1")).ok()) << "bob has no quota";
  const int64_t wait = WaitMs(refused);
  ASSERT_GT(wait, 0) << refused;
  EXPECT_LE(wait, 100) << refused;
  std::this_thread::sleep_for(std::chrono::milliseconds(wait + 10));
  EXPECT_TRUE(t->Get(Get("r1")).ok()) << "still refused after the wait the refusal named";
  // Writes count too (every call, unless the quota says READ or WRITE).
  auto [put_refused, put_secs] = until_refused([&] { return t->Put(Put("r9").Add("cf1", "q", "x")); }, &calls);
  EXPECT_EQ(put_refused.code(), StatusCode::kResourceExhausted) << put_refused;
  EXPECT_LE(calls, 10 + static_cast<int>(10 * put_secs) + 2) << "in " << put_secs << " s";

  // A table's quota limits every user of it together; list_quotas shows both.
  ASSERT_TRUE(admin_->GetAdmin()->SetQuota(Quota{"", "", "t1", "READ", "2req/min"}).ok());
  auto listed = admin_->GetAdmin()->ListQuotas();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].table, "t1");
  EXPECT_EQ((*listed)[0].throttle, "READ_NUMBER");
  EXPECT_EQ((*listed)[0].limit, "2req/min");
  EXPECT_EQ((*listed)[1].user, "alice");
  EXPECT_TRUE(bob->GetTable("t1")->Get(Get("r1")).ok());
  EXPECT_TRUE(bob->GetTable("t1")->Get(Get("r1")).ok());
  absl::Status table_refused = bob->GetTable("t1")->Get(Get("r1")).status();
  EXPECT_EQ(table_refused.code(), StatusCode::kResourceExhausted) << table_refused;
  EXPECT_NE(table_refused.message().find("TABLE => t1"), std::string::npos) << table_refused;
  // The system tables have none: clients still locate regions, admins still list.
  EXPECT_TRUE(admin_->GetAdmin()->ListTables().ok());
  // Removed (LIMIT => NONE), they no longer refuse, and the change outlives a restart.
  ASSERT_TRUE(admin_->GetAdmin()->SetQuota(Quota{"", "", "t1", "", "NONE"}).ok());
  EXPECT_TRUE(bob->GetTable("t1")->Get(Get("r1")).ok());
  ASSERT_EQ(server_->Terminate(), 0);
  ASSERT_TRUE(server_->Start().ok());
  admin_ = Open(As("admin"));
  listed = admin_->GetAdmin()->ListQuotas();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].limit, "10req/sec");
}

// HBase's scanner lease: a scan whose client stops taking its messages is closed after the lease,
// and one user holds at most max_scanners_per_user scans at once (here 2).
TEST_F(Security, AScannerIsClosedAfterItsLeaseAndAUserHoldsAtMostItsCap) {
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "R", "", "t1", "", ""}).ok());
  // 24 MiB of rows: far more than gRPC's flow-control windows hold, so a scan whose client stops
  // reading stays open on the server.
  auto t = admin_->GetTable("t1");
  constexpr int kRows = 96;
  for (int i = 0; i < kRows; ++i) {
    char row[8];
    std::snprintf(row, sizeof(row), "s%03d", i);
    ASSERT_TRUE(t->Put(Put(row).Add("cf1", "q", std::string(256 << 10, 'x'))).ok()) << i;
  }
  auto alice = Open(As("alice"));
  auto open_one = [&]() -> absl::StatusOr<std::unique_ptr<ResultScanner>> {
    auto sc = alice->GetTable("t1")->GetScanner(Scan().WithStartRow("s").SetCaching(1));
    if (!sc.ok()) return sc.status();
    Result row;
    absl::StatusOr<bool> more = (*sc)->Next(&row);
    if (!more.ok()) return more.status();
    return sc;
  };
  auto first = open_one();
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = open_one();
  ASSERT_TRUE(second.ok()) << second.status();
  const auto held = std::chrono::steady_clock::now();
  auto third = open_one();
  ASSERT_EQ(third.status().code(), StatusCode::kResourceExhausted) << third.status();
  EXPECT_NE(third.status().message().find("max_scanners_per_user 2"), std::string::npos) << third.status();
  // Neither is read any further: after the lease the server closes both, and a new one opens.
  absl::StatusOr<std::unique_ptr<ResultScanner>> later = absl::UnknownError("not tried");
  while (std::chrono::steady_clock::now() - held < std::chrono::seconds(20)) {
    later = open_one();
    if (later.ok() || later.status().code() != StatusCode::kResourceExhausted) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_GE(std::chrono::steady_clock::now() - held, std::chrono::milliseconds(kLeaseMs - 100));
  // The lapsed scanner's client learns it was closed: its rows end in an error, not quietly.
  Result row;
  int rows = 1;
  absl::Status ended;
  for (;;) {
    absl::StatusOr<bool> more = (*first)->Next(&row);
    if (!more.ok()) {
      ended = more.status();
      break;
    }
    if (!*more) break;
    ++rows;
  }
  EXPECT_EQ(ended.code(), StatusCode::kCancelled) << ended << " (after " << rows << " rows)";
  EXPECT_NE(ended.message().find("scanner lease"), std::string::npos) << ended;
  EXPECT_LT(rows, kRows);
  // One read steadily is not closed: every row, though it takes longer than the lease.
  (*later)->Close();
  (*second)->Close();
  auto steady = alice->GetTable("t1")->GetScanner(Scan().WithStartRow("s").SetCaching(1));
  ASSERT_TRUE(steady.ok()) << steady.status();
  rows = 0;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    absl::StatusOr<bool> more = (*steady)->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status() << " after " << rows << " rows";
    if (!*more) break;
    ++rows;
    if (rows % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs / 8));
  }
  EXPECT_EQ(rows, kRows);
  EXPECT_GT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(kLeaseMs));
}

// A transactional write names its transaction by write pointer, which every snapshot lists: the
// server checks the writer is the transaction's owner, and that it is still in progress.
TEST_F(Security, NoOneWritesInAnotherUsersTransactionOrInOneThatIsOver) {
  TableInfo t;
  t.name = "tx";
  t.transactional = true;
  t.families.push_back(FamilySettings{});
  t.families[0].name = "cf";
  ASSERT_TRUE(admin_->GetAdmin()->CreateTable(t).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "RW", "", "tx", "", ""}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"bob", "RW", "", "tx", "", ""}).ok());
  auto alice = Open(As("alice"));
  auto bob = Open(As("bob"));
  auto tx = alice->StartTransaction(absl::Seconds(30));
  ASSERT_TRUE(tx.ok()) << tx.status();
  auto put = [](int64_t wp, const std::string& value) {
    Put p("r");
    p.Add("cf", "q", value);
    p.transaction = wp;
    return p;
  };
  EXPECT_TRUE(alice->GetTable("tx")->Put(put(tx->write_pointer, "alice's")).ok());
  absl::Status forged = bob->GetTable("tx")->Put(put(tx->write_pointer, "bob's"));
  EXPECT_EQ(forged.code(), StatusCode::kPermissionDenied) << forged;
  EXPECT_NE(forged.message().find("user 'bob' may not write in transaction"), std::string::npos) << forged;
  ASSERT_TRUE(alice->CommitTransaction(tx->write_pointer, {}).ok());
  // Over: a write with its pointer would show at once to every later snapshot.
  absl::Status late = alice->GetTable("tx")->Put(put(tx->write_pointer, "late"));
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition) << late;
  EXPECT_NE(late.message().find("is not in progress"), std::string::npos) << late;
  EXPECT_EQ(bob->GetTable("tx")->Put(put(tx->write_pointer + 1000000, "future")).code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(Security, AReaderCannotWriteAndAFamilyWriterCannotWriteAnother) {
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "R", "", "t1", "", ""}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"bob", "W", "", "t1", "cf1", ""}).ok());
  auto alice = Open(As("alice"));
  auto r = alice->GetTable("t1")->Get(Get("r1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("cf2", "q").value_or("?"), "two");
  ExpectDenied(alice->GetTable("t1")->Put(Put("r2").Add("cf1", "q", "x")), "alice", "Mutate",
               "W on table t1, column cf1:q");
  auto bob = Open(As("bob"));
  EXPECT_TRUE(bob->GetTable("t1")->Put(Put("r2").Add("cf1", "q", "by bob")).ok());
  ExpectDenied(bob->GetTable("t1")->Put(Put("r2").Add("cf2", "q", "x")), "bob", "Mutate",
               "W on table t1, column cf2:q");
  // One row writing both: refused whole, nothing of it written.
  ExpectDenied(bob->GetTable("t1")->Put(Put("r3").Add("cf1", "q", "x").Add("cf2", "q", "y")), "bob", "Mutate",
               "cf2");
  EXPECT_TRUE(admin_->GetTable("t1")->Get(Get("r3"))->empty());
  ExpectDenied(bob->GetTable("t1")->Delete(Delete("r1")), "bob", "Mutate", "W on table t1 ");
  ExpectDenied(bob->GetTable("t1")->Get(Get("r1")).status(), "bob", "Get", "R on table t1");
  // Increment and Append answer with the new value: W alone does not read a column through them
  // (an Increment by 0, an Append of nothing).
  ExpectDenied(bob->GetTable("t1")->Increment(Increment("r1").AddColumn("cf1", "n", 0)).status(), "bob",
               "Increment", "R on table t1, column cf1:n");
  ExpectDenied(bob->GetTable("t1")->Append(Append("r1").Add("cf1", "q", "")).status(), "bob", "Append",
               "R on table t1, column cf1:q");
  // A reader of one family sees only that family, and a scan likewise.
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"bob", "R", "", "t1", "cf2", ""}).ok());
  auto narrowed = bob->GetTable("t1")->Get(Get("r1"));
  ASSERT_TRUE(narrowed.ok()) << narrowed.status();
  ASSERT_EQ(narrowed->size(), 1u);
  EXPECT_EQ(narrowed->cells()[0].family, "cf2");
  auto scanner = bob->GetTable("t1")->GetScanner(Scan());
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  Result row;
  int cells = 0;
  while (true) {
    auto more = (*scanner)->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    for (const auto& c : row.cells()) {
      EXPECT_EQ(c.family, "cf2");
      ++cells;
    }
  }
  EXPECT_EQ(cells, 1);
}

// The TCP fast path under TLS and auth: each Get and Put is the session's user's, authorised as
// over gRPC (the same refusals, word for word), whether that user proved itself with a
// certificate or a token.
TEST_F(Security, TheTcpPathIsTlsAndAuthorisesEachCallAsGrpcDoes) {
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "R", "", "t1", "", ""}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"carol", "W", "", "t1", "cf1", ""}).ok());
  auto status = admin_->GetAdmin()->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_NE(status->tcp.find("(TLS)"), std::string::npos) << status->tcp;
  const uint64_t before = status->tcp_requests;
  auto alice = Open(As("alice"), TransportChoice::kTcp);
  ASSERT_NE(alice, nullptr);
  auto r = alice->GetTable("t1")->Get(Get("r1"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Value("cf2", "q").value_or("?"), "two");
  ExpectDenied(alice->GetTable("t1")->Put(Put("r2").Add("cf1", "q", "x")), "alice", "Mutate",
               "W on table t1, column cf1:q");
  ClientSecurity token = CaOnly();
  token.token = kCarolToken;
  auto carol = Open(token, TransportChoice::kTcp);
  ASSERT_NE(carol, nullptr);
  EXPECT_TRUE(carol->GetTable("t1")->Put(Put("r2").Add("cf1", "q", "by carol")).ok());
  ExpectDenied(carol->GetTable("t1")->Put(Put("r2").Add("cf2", "q", "x")), "carol", "Mutate",
               "W on table t1, column cf2:q");
  ExpectDenied(carol->GetTable("t1")->Get(Get("r1")).status(), "carol", "Get", "R on table t1");
  for (const auto& [c, calls] : {std::pair{alice.get(), 2u}, std::pair{carol.get(), 3u}}) {
    const TransportStats t = c->GetTransportStats();
    EXPECT_EQ(t.path, "tcp");
    EXPECT_EQ(t.tcp_calls, calls);
    EXPECT_EQ(t.grpc_fallbacks, 0u);
  }
  status = admin_->GetAdmin()->Status();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->tcp_requests - before, 5u);
}

TEST_F(Security, ANonAdminCannotCreateDropOrSwitchVerbsAndSeesOnlyItsTables) {
  auto alice = Open(As("alice"));
  TableInfo t;
  t.name = "t2";
  t.families.push_back(FamilySettings{});
  t.families[0].name = "cf";
  ExpectDenied(alice->GetAdmin()->CreateTable(t), "alice", "CreateTable", "C or A on namespace default");
  ExpectDenied(alice->GetAdmin()->DisableTable("t1"), "alice", "DisableTable", "C or A on table t1");
  ExpectDenied(alice->GetAdmin()->DropTable("t1"), "alice", "DropTable", "C or A on table t1");
  ExpectDenied(alice->GetAdmin()->SetVerbs(false), "alice", "SetVerbs", "A on global");
  ExpectDenied(alice->GetAdmin()->Status().status(), "alice", "Status", "A on global");
  ExpectDenied(alice->GetAdmin()->Grant(Permission{"alice", "RWXCA", "", "", "", ""}), "alice", "grant",
               "A on global");
  auto none = alice->GetAdmin()->ListTables();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  // C on the namespace lets her create; A on a table lets her grant on it, nowhere else.
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "C", "default", "", "", ""}).ok());
  ASSERT_TRUE(alice->GetAdmin()->CreateTable(t).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "A", "", "t2", "", ""}).ok());
  EXPECT_TRUE(alice->GetAdmin()->Grant(Permission{"bob", "R", "", "t2", "", ""}).ok());
  ExpectDenied(alice->GetAdmin()->Grant(Permission{"bob", "R", "", "t1", "", ""}), "alice", "grant",
               "A on table t1");
  auto listed = alice->GetAdmin()->ListTables();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 2u);  // C on the namespace holds on every table in it
}

// Namespaces under auth, as HBase's: making, changing and dropping one needs global A;
// describing one A on it; the list shows those the user holds A on; C on one lets a user make a
// table in it and nowhere else; dropping one takes its grants with it, so a namespace made again
// under its name gives no one anything, nor keeps its quotas.
TEST_F(Security, NamespacesNeedGlobalAAndTheirGrantsGoWithThem) {
  auto alice = Open(As("alice"));
  ExpectDenied(alice->GetAdmin()->CreateNamespace(NamespaceInfo{"app", {}, {}}), "alice", "CreateNamespace",
               "A on global");
  ASSERT_TRUE(admin_->GetAdmin()->CreateNamespace(NamespaceInfo{"app", {}, {}}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->CreateNamespace(NamespaceInfo{"ops", {}, {}}).ok());
  ExpectDenied(alice->GetAdmin()->DescribeNamespace("app").status(), "alice", "DescribeNamespace",
               "A on namespace app");
  ExpectDenied(alice->GetAdmin()->DropNamespace("app"), "alice", "DropNamespace", "A on global");
  absl::StatusOr<std::vector<NamespaceInfo>> seen = alice->GetAdmin()->ListNamespaces();
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_TRUE(seen->empty());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "CA", "app", "", "", ""}).ok());
  seen = alice->GetAdmin()->ListNamespaces();
  ASSERT_TRUE(seen.ok()) << seen.status();
  ASSERT_EQ(seen->size(), 1u);
  EXPECT_EQ((*seen)[0].name, "app");
  TableInfo t;
  t.name = "app:t";
  t.families.push_back(FamilySettings{});
  t.families[0].name = "cf";
  ASSERT_TRUE(alice->GetAdmin()->CreateTable(t).ok());
  t.name = "ops:t";
  ExpectDenied(alice->GetAdmin()->CreateTable(t), "alice", "CreateTable", "C or A on namespace ops");
  absl::StatusOr<NamespaceInfo> app = alice->GetAdmin()->DescribeNamespace("app");
  ASSERT_TRUE(app.ok()) << app.status();
  EXPECT_EQ(app->tables, std::vector<std::string>{"app:t"});
  ASSERT_TRUE(alice->GetAdmin()->DisableTable("app:t").ok());
  ASSERT_TRUE(alice->GetAdmin()->DropTable("app:t").ok());
  ASSERT_TRUE(admin_->GetAdmin()->SetQuota(Quota{"", "app", "", "", "100req/sec"}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->SetQuota(Quota{"alice", "app", "", "WRITE", "10req/sec"}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->SetQuota(Quota{"", "ops", "", "", "100req/sec"}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->DropNamespace("app").ok());
  absl::StatusOr<std::vector<Quota>> quotas = admin_->GetAdmin()->ListQuotas();
  ASSERT_TRUE(quotas.ok()) << quotas.status();
  ASSERT_EQ(quotas->size(), 1u);  // (ops's only)
  EXPECT_EQ((*quotas)[0].ns, "ops");
  ASSERT_TRUE(admin_->GetAdmin()->CreateNamespace(NamespaceInfo{"app", {}, {}}).ok());
  t.name = "app:t";
  ExpectDenied(alice->GetAdmin()->CreateTable(t), "alice", "CreateTable", "C or A on namespace app");
}

// A dropped table's grants and quotas go with it (HBase's postDeleteTable and its quota
// observer): one made again under its name hands no one anything. A truncate keeps them, and
// needs what a drop needs.
TEST_F(Security, ADroppedTablesGrantsAndQuotasGoWithItATruncatedTablesStay) {
  TableInfo t;
  t.name = "t2";
  t.families.push_back(FamilySettings{});
  t.families[0].name = "cf";
  ASSERT_TRUE(admin_->GetAdmin()->CreateTable(t).ok());
  ASSERT_TRUE(admin_->GetTable("t2")->Put(Put("r1").Add("cf", "q", "v")).ok());
  const std::unique_ptr<Admin> admin_of = admin_->GetAdmin();
  Admin& admin = *admin_of;
  ASSERT_TRUE(admin.Grant(Permission{"alice", "R", "", "t2", "", ""}).ok());
  ASSERT_TRUE(admin.Grant(Permission{"@ops", "W", "", "t2", "cf", "q"}).ok());
  ASSERT_TRUE(admin.Grant(Permission{"bob", "C", "", "t2", "", ""}).ok());
  ASSERT_TRUE(admin.Grant(Permission{"alice", "R", "", "t1", "", ""}).ok());       // another table's
  ASSERT_TRUE(admin.Grant(Permission{"carol", "R", "default", "", "", ""}).ok());  // the namespace's
  ASSERT_TRUE(admin.SetQuota(Quota{"", "", "t2", "", "1000req/sec"}).ok());
  ASSERT_TRUE(admin.SetQuota(Quota{"alice", "", "t2", "READ", "500req/sec"}).ok());
  ASSERT_TRUE(admin.SetQuota(Quota{"", "", "t1", "", "1000req/sec"}).ok());
  auto grants_on = [&](const std::string& table) {
    absl::StatusOr<std::vector<Permission>> p = admin.UserPermissions(Permission{"", "", "", table, "", ""});
    EXPECT_TRUE(p.ok()) << p.status();
    std::vector<std::string> out;
    for (const Permission& g : p.value_or(std::vector<Permission>{})) {
      out.push_back(absl::StrCat(g.principal, " ", g.actions, " ", g.table, ":", g.family, ":", g.qualifier));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  auto quotas_on = [&](const std::string& table) {
    absl::StatusOr<std::vector<Quota>> all = admin.ListQuotas();
    EXPECT_TRUE(all.ok()) << all.status();
    int n = 0;
    for (const Quota& q : all.value_or(std::vector<Quota>{})) n += q.table == table ? 1 : 0;
    return n;
  };
  const std::vector<std::string> t2_grants = {"@ops W t2:cf:q", "alice R t2::", "bob C t2::"};
  ASSERT_EQ(grants_on("t2"), t2_grants);
  ASSERT_EQ(quotas_on("t2"), 2);

  // A truncate needs C or A on the table, as a drop does; it keeps every grant and quota.
  auto alice = Open(As("alice"));
  ExpectDenied(alice->GetAdmin()->TruncateTable("t2", false), "alice", "TruncateTable", "C or A on table t2");
  auto bob = Open(As("bob"));
  ASSERT_TRUE(bob->GetAdmin()->DisableTable("t2").ok());
  ASSERT_TRUE(bob->GetAdmin()->TruncateTable("t2", false).ok());
  EXPECT_EQ(grants_on("t2"), t2_grants);
  EXPECT_EQ(quotas_on("t2"), 2);
  absl::StatusOr<Result> read = alice->GetTable("t2")->Get(Get("r1"));
  ASSERT_TRUE(read.ok()) << read.status();  // still hers to read (empty now)
  EXPECT_TRUE(read->empty());
  EXPECT_EQ(admin.TruncateTable("t2", false).code(), StatusCode::kFailedPrecondition);  // (enabled again)

  // A drop takes them all, and nothing of another table's or of the namespace's.
  ASSERT_TRUE(bob->GetAdmin()->DisableTable("t2").ok());
  ASSERT_TRUE(bob->GetAdmin()->DropTable("t2").ok());
  EXPECT_TRUE(grants_on("t2").empty());
  EXPECT_EQ(quotas_on("t2"), 0);
  EXPECT_EQ(grants_on("t1"), std::vector<std::string>{"alice R t1::"});
  EXPECT_EQ(quotas_on("t1"), 1);
  absl::StatusOr<std::vector<Permission>> ns = admin.UserPermissions(Permission{"carol", "", "default", "", "", ""});
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ(ns->size(), 1u);
  // The table made again under its name: alice reads nothing of it.
  ASSERT_TRUE(admin.CreateTable(t).ok());
  ExpectDenied(alice->GetTable("t2")->Get(Get("r1")).status(), "alice", "Get", "R on table t2");
}

// HBase's AccessController for snapshots: taking one needs A on the table, deleting one global A;
// a user lists only the snapshots of tables they hold something on.
TEST_F(Security, ASnapshotNeedsAOnItsTableAndItsDeletionGlobalA) {
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "RW", "", "t1", "", ""}).ok());
  auto alice = Open(As("alice"));
  ExpectDenied(alice->GetAdmin()->Snapshot("t1", "s1").status(), "alice", "Snapshot", "A on table t1");
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "A", "", "t1", "", ""}).ok());
  absl::StatusOr<SnapshotDescription> taken = alice->GetAdmin()->Snapshot("t1", "s1");
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(taken->table, "t1");
  // Another table's snapshot, taken by the admin, is not hers to see.
  TableInfo t;
  t.name = "t2";
  t.families.push_back(FamilySettings{});
  t.families[0].name = "cf";
  ASSERT_TRUE(admin_->GetAdmin()->CreateTable(t).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Snapshot("t2", "s2").ok());
  auto hers = alice->GetAdmin()->ListSnapshots();
  ASSERT_TRUE(hers.ok()) << hers.status();
  ASSERT_EQ(hers->size(), 1u);
  EXPECT_EQ((*hers)[0].name, "s1");
  EXPECT_EQ(admin_->GetAdmin()->ListSnapshots().value().size(), 2u);
  EXPECT_EQ((*hers)[0].owner, "alice");
  // HBase's owner rules: her own snapshot she may delete, clone under its table's name only,
  // and restore while she holds A on the table; another's, none of these.
  ExpectDenied(alice->GetAdmin()->DeleteSnapshot("s2"), "alice", "DeleteSnapshot", "A on global");
  ExpectDenied(alice->GetAdmin()->CloneSnapshot("s2", "t3"), "alice", "CloneSnapshot", "A on global");
  ExpectDenied(alice->GetAdmin()->CloneSnapshot("s1", "t3"), "alice", "CloneSnapshot", "A on global");
  ExpectDenied(alice->GetAdmin()->RestoreSnapshot("s2"), "alice", "RestoreSnapshot", "A on global");
  ASSERT_TRUE(alice->GetAdmin()->DisableTable("t1").ok());
  EXPECT_TRUE(alice->GetAdmin()->RestoreSnapshot("s1").ok());
  ASSERT_TRUE(admin_->GetAdmin()->Revoke(Permission{"alice", "", "", "t1", "", ""}).ok());
  ExpectDenied(alice->GetAdmin()->RestoreSnapshot("s1"), "alice", "RestoreSnapshot", "A on table t1");
  // Not even knowing a name helps: a missing snapshot is refused as another's would be.
  ExpectDenied(alice->GetAdmin()->DeleteSnapshot("nope"), "alice", "DeleteSnapshot", "A on global");
  EXPECT_EQ(admin_->GetAdmin()->DeleteSnapshot("nope").code(), StatusCode::kNotFound);
  EXPECT_TRUE(alice->GetAdmin()->DeleteSnapshot("s1").ok());
  EXPECT_TRUE(admin_->GetAdmin()->CloneSnapshot("s2", "t3").ok());
}

// RESTORE_ACL (HBase's): a snapshot keeps its table's grants (on it, a family, a column); a clone
// or a restore asked to gives them on the table, one not asked gives none.
TEST_F(Security, ASnapshotKeepsItsTablesGrantsAndGivesThemOnlyWhenAsked) {
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"alice", "R", "", "t1", "", ""}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"@ops", "W", "", "t1", "cf1", ""}).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Snapshot("t1", "with-acl").ok());
  auto alice = Open(As("alice"));
  ASSERT_TRUE(admin_->GetAdmin()->CloneSnapshot("with-acl", "plain").ok());
  ExpectDenied(alice->GetTable("plain")->Get(Get("r1")).status(), "alice", "Get", "R on table plain");
  ASSERT_TRUE(admin_->GetAdmin()->CloneSnapshot("with-acl", "granted", /*restore_acl=*/true).ok());
  EXPECT_TRUE(alice->GetTable("granted")->Get(Get("r1")).ok());
  auto listed = admin_->GetAdmin()->UserPermissions(Permission{"", "", "", "granted", "", ""});
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 2u) << "alice's R on the table and @ops' W on its family cf1";
  // A restore asked to gives back what was revoked since.
  ASSERT_TRUE(admin_->GetAdmin()->Revoke(Permission{"alice", "", "", "t1", "", ""}).ok());
  ExpectDenied(alice->GetTable("t1")->Get(Get("r1")).status(), "alice", "Get", "R on table t1");
  ASSERT_TRUE(admin_->GetAdmin()->DisableTable("t1").ok());
  ASSERT_TRUE(admin_->GetAdmin()->RestoreSnapshot("with-acl").ok());
  ASSERT_TRUE(admin_->GetAdmin()->EnableTable("t1").ok());
  ExpectDenied(alice->GetTable("t1")->Get(Get("r1")).status(), "alice", "Get", "R on table t1");
  ASSERT_TRUE(admin_->GetAdmin()->DisableTable("t1").ok());
  ASSERT_TRUE(admin_->GetAdmin()->RestoreSnapshot("with-acl", /*restore_acl=*/true).ok());
  ASSERT_TRUE(admin_->GetAdmin()->EnableTable("t1").ok());
  alice = Open(As("alice"));  // (the restored regions are new: a client of one attempt must look them up)
  absl::Status got = alice->GetTable("t1")->Get(Get("r1")).status();
  EXPECT_TRUE(got.ok()) << got;
}

TEST_F(Security, GrantsAndRevokesTakeEffectAtOnceAndSurviveARestart) {
  auto carol_security = CaOnly();
  carol_security.token = kCarolToken;
  auto carol = Open(carol_security);
  ExpectDenied(carol->GetTable("t1")->Put(Put("r9").Add("cf1", "q", "x")), "carol", "Mutate", "W on table t1");
  // A grant to her group, without a restart.
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"@ops", "RW", "", "t1", "", ""}).ok());
  EXPECT_TRUE(carol->GetTable("t1")->Put(Put("r9").Add("cf1", "q", "x")).ok());
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"carol", "R", "", "t1", "cf2", ""}).ok());
  auto listed = admin_->GetAdmin()->UserPermissions(Permission{"", "", "", "t1", "", ""});
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 2u);
  // A revoke, without a restart.
  ASSERT_TRUE(admin_->GetAdmin()->Revoke(Permission{"@ops", "", "", "t1", "", ""}).ok());
  ExpectDenied(carol->GetTable("t1")->Put(Put("r9").Add("cf1", "q", "y")), "carol", "Mutate", "W on table t1");
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"carol", "W", "", "t1", "cf1", ""}).ok());
  // SIGKILL: the grants were synced before they were acknowledged.
  server_->Kill();
  ASSERT_TRUE(server_->Start().ok());
  carol = Open(carol_security);
  EXPECT_TRUE(carol->GetTable("t1")->Put(Put("r9").Add("cf1", "q", "z")).ok());
  ExpectDenied(carol->GetTable("t1")->Put(Put("r9").Add("cf2", "q", "z")), "carol", "Mutate", "column cf2:q");
  auto r = carol->GetTable("t1")->Get(Get("r9"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->empty());  // she reads cf2 only, and r9 has only cf1
  auto mine = carol->GetAdmin()->UserPermissions(Permission{"carol", "", "", "", "", ""});
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_EQ(mine->size(), 2u);
}

TEST_F(Security, TheShellTalksTlsWithATokenAndGrants) {
  const std::string token_file = dir_.path() + "/token";
  std::ofstream(token_file) << kCarolToken << "\n";
  ASSERT_TRUE(admin_->GetAdmin()->Grant(Permission{"@ops", "A", "", "t1", "", ""}).ok());
  const std::string out = dir_.path() + "/shell.out";
  const std::string cmd =
      absl::StrCat(BASALT_SHELL_BINARY, " --server=", server_->address(), " --tls-ca=", Cert("ca.pem"),
                   " --token-file=", token_file, " --no-timing",
                   " -e \"whoami; grant 'alice', 'RW', 't1', 'cf1'; user_permission 't1'\" >", out, " 2>&1");
  const int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(WEXITSTATUS(rc), 0) << text;
  EXPECT_NE(text.find("carol (token)"), std::string::npos) << text;
  EXPECT_NE(text.find("default,t1,cf1,: [Permission: actions=READ,WRITE]"), std::string::npos) << text;
  EXPECT_NE(text.find("@ops"), std::string::npos) << text;
  auto alice = Open(As("alice"));
  EXPECT_TRUE(alice->GetTable("t1")->Put(Put("r5").Add("cf1", "q", "x")).ok());
}

// The default is loopback and plain text; a server listening beyond it without TLS or auth says
// so when it starts.
TEST(SecurityDefaults, AServerOffLoopbackWithoutTlsOrAuthSaysSo) {
  TempDir dir;
  ServerProcess server(BASALT_SERVER_BINARY, dir.path() + "/data", {"--listen=0.0.0.0:0", "--http_listen=off"},
                       dir.path());
  ASSERT_TRUE(server.Start().ok());
  server.Terminate();
  std::ifstream in(dir.path() + "/stderr");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("serving without TLS on 0.0.0.0:0, which is not a loopback address"), std::string::npos) << text;
  EXPECT_NE(text.find("serving without authentication on 0.0.0.0:0: anyone who reaches it may read, write"),
            std::string::npos)
      << text;
  TempDir quiet_dir;  // on loopback: nothing to say
  ServerProcess quiet(BASALT_SERVER_BINARY, quiet_dir.path() + "/data", {"--http_listen=off"}, quiet_dir.path());
  ASSERT_TRUE(quiet.Start().ok());
  quiet.Terminate();
  std::ifstream qin(quiet_dir.path() + "/stderr");
  std::string qtext((std::istreambuf_iterator<char>(qin)), std::istreambuf_iterator<char>());
  EXPECT_EQ(qtext.find("serving without"), std::string::npos) << qtext;
}

}  // namespace
}  // namespace basalt::testing
