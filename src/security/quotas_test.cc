// Quotas (quotas.h) over a real basalt:quota region: HBase's LIMIT strings, which limiters a
// call passes, how long a refused call is told to wait and that it passes after that wait, and
// that settings survive a restart. Through a real server: tests/security/security_test.cc.
#include "src/security/quotas.h"

#include <memory>
#include <regex>
#include <thread>

#include "gtest/gtest.h"
#include "src/schema/meta.h"
#include "src/catalog/catalog.h"
#include "src/catalog/test_catalog.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

std::unique_ptr<Quotas> OpenQuotas(Catalog* tm) {
  auto q = Quotas::Open(tm->quota_region());
  EXPECT_TRUE(q.ok()) << q.status();
  return q.ok() ? *std::move(q) : nullptr;
}

rpc::SetQuotaRequest Throttle(std::string user, std::string table, std::string limit, std::string throttle = "",
                              std::string ns = "") {
  rpc::SetQuotaRequest r;
  r.set_user(std::move(user));
  r.set_table(std::move(table));
  r.set_namespace_(std::move(ns));
  r.set_limit(std::move(limit));
  r.set_throttle(std::move(throttle));
  return r;
}

absl::Status Call(Quotas* q, std::string_view user, std::string_view table, bool write = false, int64_t bytes = 0) {
  Quotas::Ticket t;
  return q->Admit(QuotaCall{user, table, write, 1, bytes}, &t);
}

// The wait a refusal names, in ms ("- wait 0.20sec" or "- wait 1mins, 2.00sec").
int64_t WaitMs(const absl::Status& s) {
  std::smatch m;
  const std::string text(s.message());
  if (!std::regex_search(text, m, std::regex(R"(- wait (?:(\d+)mins, )?(\d+\.\d\d)sec)"))) return -1;
  const int64_t mins = m[1].matched ? std::stoll(m[1].str()) : 0;
  return mins * 60000 + static_cast<int64_t>(std::stod(m[2].str()) * 1000 + 0.5);
}

TEST(Quotas, HBasesLimitsParseAndPrint) {
  QuotaSetting s;
  ASSERT_TRUE(ParseThrottle("10req/sec", "", &s).ok());
  EXPECT_EQ(s.type, ThrottleType::kRequestNumber);
  EXPECT_EQ(s.limit, 10);
  EXPECT_EQ(s.unit_seconds, 1);
  EXPECT_EQ(s.LimitString(), "10req/sec");
  ASSERT_TRUE(ParseThrottle("10M/sec", "", &s).ok());
  EXPECT_EQ(s.type, ThrottleType::kRequestSize);
  EXPECT_EQ(s.limit, 10 << 20);
  EXPECT_EQ(s.LimitString(), "10M/sec");
  ASSERT_TRUE(ParseThrottle("5k/min", "READ", &s).ok());
  EXPECT_EQ(s.type, ThrottleType::kReadSize);
  EXPECT_EQ(s.limit, 5 << 10);
  EXPECT_EQ(s.unit_seconds, 60);
  EXPECT_EQ(s.LimitString(), "5K/min");
  ASSERT_TRUE(ParseThrottle("100req/hour", "write", &s).ok());
  EXPECT_EQ(s.type, ThrottleType::kWriteNumber);
  EXPECT_EQ(s.unit_seconds, 3600);
  ASSERT_TRUE(ParseThrottle("1000B/day", "", &s).ok());
  EXPECT_EQ(s.LimitString(), "1000B/day");
  for (const char* bad : {"10req", "10x/sec", "0req/sec", "req/sec", "10req/week", "10CU/sec", "-1req/sec",
                          "99999999999999999999req/sec", "9999999999P/sec"}) {
    absl::Status st = ParseThrottle(bad, "", &s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find(bad), std::string::npos) << st;
  }
  EXPECT_EQ(ParseThrottle("10req/sec", "BOTH", &s).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Quotas, ACallPastItsLimitIsToldHowLongToWaitAndPassesAfterIt) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  auto q = OpenQuotas(tm.get());
  EXPECT_TRUE(q->empty());
  EXPECT_TRUE(Call(q.get(), "alice", "t1").ok());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "", "5req/sec")).ok());
  EXPECT_FALSE(q->empty());
  // A full bucket: five at once, then the sixth is refused as HBase refuses it.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Call(q.get(), "alice", "t1").ok()) << i;
  absl::Status refused = Call(q.get(), "alice", "t1");
  ASSERT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("number of requests exceeded - wait "), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("USER => alice"), std::string::npos) << refused;
  const int64_t wait = WaitMs(refused);
  EXPECT_GT(wait, 0) << refused;
  EXPECT_LE(wait, 200) << refused;  // a fifth of a second refills one request
  // Others are not limited by alice's quota.
  EXPECT_TRUE(Call(q.get(), "bob", "t1").ok());
  EXPECT_TRUE(Call(q.get(), "", "t1").ok());
  // After the wait it names, the call passes.
  std::this_thread::sleep_for(std::chrono::milliseconds(wait + 5));
  EXPECT_TRUE(Call(q.get(), "alice", "t1").ok());
}

TEST(Quotas, AUsersQuotaOnATableWinsOverTheirsAloneAndTableQuotasLimitEveryone) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  auto q = OpenQuotas(tm.get());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "", "1req/min")).ok());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "t1", "3req/min")).ok());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("", "t2", "2req/min")).ok());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("", "", "4req/min", "", "ns")).ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Call(q.get(), "alice", "t1").ok()) << i;
  EXPECT_EQ(Call(q.get(), "alice", "t1").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Call(q.get(), "alice", "t3").ok());
  absl::Status second = Call(q.get(), "alice", "t3");
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_GT(WaitMs(second), 30000) << second;  // a minute's one request
  // t2's quota is every user's together.
  EXPECT_TRUE(Call(q.get(), "bob", "t2").ok());
  EXPECT_TRUE(Call(q.get(), "carol", "t2").ok());
  absl::Status third = Call(q.get(), "dave", "t2");
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.message().find("TABLE => t2"), std::string::npos) << third;
  // Likewise a namespace's, over its tables.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(Call(q.get(), "bob", i % 2 ? "ns:a" : "ns:b").ok()) << i;
  EXPECT_EQ(Call(q.get(), "carol", "ns:c").code(), absl::StatusCode::kResourceExhausted);
  // The system tables have none (clients locate regions in basalt:meta).
  ASSERT_TRUE(SetQuota(q.get(), Throttle("", "", "1req/min", "", "default")).ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Call(q.get(), "bob", kMetaTableName).ok());
  EXPECT_EQ(SetQuota(q.get(), Throttle("", kMetaTableName, "1req/sec")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetQuota(q.get(), Throttle("", "", "1req/sec")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetQuota(q.get(), Throttle("", "t1", "1req/sec", "", "ns")).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Quotas, ACallOneLimiterRefusesTakesNothingFromTheOthers) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  auto q = OpenQuotas(tm.get());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "", "2req/min")).ok());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("", "t9", "1req/min")).ok());
  EXPECT_TRUE(Call(q.get(), "alice", "t9").ok());
  absl::Status refused = Call(q.get(), "alice", "t9");  // alice's has room; t9's refuses
  EXPECT_NE(refused.message().find("TABLE => t9"), std::string::npos) << refused;
  EXPECT_TRUE(Call(q.get(), "alice", "t8").ok()) << "the refused call used alice's second request";
  EXPECT_NE(Call(q.get(), "alice", "t8").message().find("USER => alice"), std::string::npos);
}

TEST(Quotas, ReadBytesAreSettledAfterTheReadAndWritesBiggerThanTheBucketPassWhenItIsFull) {
  testing::TempDir dir;
  auto tm = OpenManager(dir.path());
  auto q = OpenQuotas(tm.get());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "", "100B/sec", "READ")).ok());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "", "1K/min", "WRITE")).ok());
  Quotas::Ticket t;
  ASSERT_TRUE(q->Admit(QuotaCall{"alice", "t1", false, 1, 0}, &t).ok());
  q->Settle(t, 1000);  // a reply of 1000 bytes: 900 in debt, held at one whole bucket (100)
  absl::Status refused = Call(q.get(), "alice", "t1");
  ASSERT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("read size limit exceeded"), std::string::npos) << refused;
  EXPECT_GE(WaitMs(refused), 900) << refused;
  EXPECT_LE(WaitMs(refused), 1100) << refused << ": the debt stops at one bucket";
  // Writes have their own bucket: a 4 KiB write is over the whole of it and passes while it is
  // full (else it could never pass), then the next write waits.
  EXPECT_TRUE(Call(q.get(), "alice", "t1", true, 4096).ok());
  absl::Status next = Call(q.get(), "alice", "t1", true, 10);
  EXPECT_EQ(next.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(next.message().find("write size limit exceeded"), std::string::npos) << next;
}

TEST(Quotas, SettingsSurviveARestartAndNoneRemovesThem) {
  testing::TempDir dir;
  {
    auto tm = OpenManager(dir.path());
    auto q = OpenQuotas(tm.get());
    ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "", "10req/sec")).ok());
    ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "", "2M/min", "WRITE")).ok());
    ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "t1", "5req/sec")).ok());
    ASSERT_TRUE(SetQuota(q.get(), Throttle("bob", "", "1req/sec", "", "ns")).ok());
    ASSERT_TRUE(SetQuota(q.get(), Throttle("", "t2", "7req/min", "READ")).ok());
    // A table of namespace default is named without it: a limit on "default:t2" would never
    // apply to t2. Removing one takes any name.
    const absl::Status literal = SetQuota(q.get(), Throttle("", "default:t2", "7req/min"));
    EXPECT_EQ(literal.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(literal.message().find("named without it ('t2')"), std::string::npos) << literal;
    EXPECT_TRUE(SetQuota(q.get(), Throttle("", "default:t2", "NONE")).ok());
    ASSERT_TRUE(tm->CloseAll().ok());
  }
  auto tm = OpenManager(dir.path());
  auto q = OpenQuotas(tm.get());
  rpc::ListQuotasResponse listed;
  ListQuotas(*q, &listed);
  std::vector<std::string> lines;
  for (const rpc::QuotaSetting& s : listed.settings()) {
    lines.push_back(s.user() + "|" + s.namespace_() + "|" + s.table() + "|" + s.throttle_type() + "|" + s.limit_text());
  }
  EXPECT_EQ(lines, (std::vector<std::string>{"||t2|READ_NUMBER|7req/min", "alice|||REQUEST_NUMBER|10req/sec",
                                             "alice|||WRITE_SIZE|2M/min", "alice||t1|REQUEST_NUMBER|5req/sec",
                                             "bob|ns||REQUEST_NUMBER|1req/sec"}));
  // NONE with a throttle type removes that kind; without one, all of the owner's.
  ASSERT_TRUE(SetQuota(q.get(), Throttle("alice", "", "NONE", "WRITE")).ok());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("bob", "", "NONE", "", "ns")).ok());
  ASSERT_TRUE(SetQuota(q.get(), Throttle("", "t2", "NONE")).ok());
  listed.Clear();
  ListQuotas(*q, &listed);
  ASSERT_EQ(listed.settings_size(), 2);
  ASSERT_TRUE(tm->CloseAll().ok());
  auto tm2 = OpenManager(dir.path());
  auto q2 = OpenQuotas(tm2.get());
  EXPECT_EQ(q2->List().size(), 2u);
  // A region server, which keeps no basalt:quota, refuses to set one.
  auto follower = Quotas::Open(nullptr);
  ASSERT_TRUE(follower.ok());
  EXPECT_EQ(SetQuota(follower->get(), Throttle("alice", "", "1req/sec")).code(),
            absl::StatusCode::kFailedPrecondition);
  (*follower)->Replace(q2->List());
  EXPECT_EQ((*follower)->List().size(), 2u);
}

}  // namespace
}  // namespace basalt::server
