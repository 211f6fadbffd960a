// The ZooKeeper session and leader election (common/zookeeper.h) on the tests' real ZooKeeper
// server (tests/services/): nodes and their errors, ephemeral nodes, watches that call back
// into the session, a session paused past its timeout (a zombie in miniature), and elections
// in which the leader resigns, closes, or a middle candidate leaves.
#include "common/zookeeper.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/test_services.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {

class ZooKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(TestZkQuorum().empty()) << kTestServicesHelp;
    root_ = absl::StrCat("/test-", ::getpid(), "-", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::unique_ptr<ZooKeeper> Connect(absl::Duration session = absl::Seconds(4),
                                     std::function<void(std::string_view)> on_expired = nullptr,
                                     SessionLease* lease = nullptr, const std::string& digest = "") {
    ZooKeeper::Options o;
    o.digest = digest;
    o.quorum = TestZkQuorum();
    o.session_timeout = session;
    o.on_expired = std::move(on_expired);
    o.lease = lease;
    auto zk = ZooKeeper::Connect(o);
    EXPECT_TRUE(zk.ok()) << zk.status();
    return zk.ok() ? *std::move(zk) : nullptr;
  }
  // Polls `cond` every 10 ms for up to `limit`.
  static bool Eventually(const std::function<bool()>& cond, absl::Duration limit = absl::Seconds(10)) {
    const absl::Time end = absl::Now() + limit;
    while (absl::Now() < end) {
      if (cond()) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return cond();
  }
  std::string root_;
};

TEST_F(ZooKeeperTest, NodesAndTheirErrors) {
  auto zk = Connect();
  ASSERT_TRUE(zk);
  ASSERT_TRUE(zk->CreatePath(root_ + "/a/b").ok());
  ASSERT_TRUE(zk->CreatePath(root_ + "/a/b").ok());  // again: fine
  EXPECT_EQ(zk->Create(root_ + "/a/b", "x", ZooKeeper::Mode::kPersistent).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(zk->Create(root_ + "/no/such", "x", ZooKeeper::Mode::kPersistent).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(zk->Set(root_ + "/a/b", "value").ok());
  auto node = zk->Get(root_ + "/a/b");
  ASSERT_TRUE(node.ok() && node->has_value()) << node.status();
  EXPECT_EQ((*node)->data, "value");
  EXPECT_EQ((*node)->ephemeral_owner, 0);
  // Conditional on the version: a stale one is refused.
  EXPECT_EQ(zk->Set(root_ + "/a/b", "stale", (*node)->version - 1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(zk->Set(root_ + "/a/b", "next", (*node)->version).ok());
  EXPECT_FALSE(zk->Get(root_ + "/nothing").value().has_value());
  // Data larger than the first read's buffer comes back whole.
  const std::string big(300 << 10, 'z');
  ASSERT_TRUE(zk->Set(root_ + "/a/b", big).ok());
  EXPECT_EQ(zk->Get(root_ + "/a/b").value()->data, big);
  // Sequential nodes get increasing, zero-padded numbers; children come sorted.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(zk->Create(root_ + "/a/s_", "", ZooKeeper::Mode::kPersistentSequential).ok());
  auto kids = zk->Children(root_ + "/a");
  ASSERT_TRUE(kids.ok());
  // (The counter is the parent's: b was made first.)
  EXPECT_EQ(*kids, (std::vector<std::string>{"b", "s_0000000001", "s_0000000002", "s_0000000003"}));
  EXPECT_EQ(zk->Delete(root_ + "/a").code(), absl::StatusCode::kFailedPrecondition);  // not empty
  EXPECT_EQ(zk->Delete(root_ + "/a/nothing").code(), absl::StatusCode::kNotFound);
}

// docs/DESIGN.md §6: the nodes a session with an identity makes are closed to every other session, but
// for reading where asked; and a node open to anyone is told apart.
TEST_F(ZooKeeperTest, NodesMadeUnderAnIdentityAreClosedToEveryoneElse) {
  auto cluster = Connect(absl::Seconds(4), nullptr, nullptr, "basalt:s3cret");
  ASSERT_TRUE(cluster);
  ASSERT_TRUE(cluster->CreatePath(root_ + "/rs").ok());
  ASSERT_TRUE(cluster->Create(root_ + "/rs/s1", "live", ZooKeeper::Mode::kEphemeral).ok());
  ASSERT_TRUE(cluster->Create(root_ + "/meta-server", "m:1", ZooKeeper::Mode::kPersistent, ZooKeeper::Readers::kAnyone).ok());
  EXPECT_FALSE(cluster->OpenToAnyone(root_).value());
  EXPECT_FALSE(cluster->OpenToAnyone(root_ + "/meta-server").value());  // read only
  auto anonymous = Connect();
  auto impostor = Connect(absl::Seconds(4), nullptr, nullptr, "basalt:guess");
  ASSERT_TRUE(anonymous && impostor);
  for (ZooKeeper* other : {anonymous.get(), impostor.get()}) {
    EXPECT_EQ(other->Create(root_ + "/fenced", "", ZooKeeper::Mode::kPersistent).status().code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(other->Create(root_ + "/rs/fake", "", ZooKeeper::Mode::kEphemeral).status().code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(other->Delete(root_ + "/rs/s1").code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(other->Set(root_ + "/meta-server", "evil:1").code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(other->Set(root_ + "/rs/s1", "dead").code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(other->Get(root_ + "/rs/s1").status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(other->Children(root_ + "/rs").status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(other->Get(root_ + "/meta-server").value().value_or(ZkNode{}).data, "m:1");  // clients start there
  }
  EXPECT_EQ(cluster->Get(root_ + "/rs/s1").value().value_or(ZkNode{}).data, "live");
  // A node made without an identity is open to anyone, and seen to be.
  ASSERT_TRUE(anonymous->Create(root_ + "-open", "", ZooKeeper::Mode::kEphemeral).ok());
  EXPECT_TRUE(cluster->OpenToAnyone(root_ + "-open").value());
  EXPECT_EQ(cluster->OpenToAnyone(root_ + "-none").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ZooKeeperTest, AnEphemeralNodeGoesWithItsSession) {
  auto watcher = Connect();
  ASSERT_TRUE(watcher);
  ASSERT_TRUE(watcher->CreatePath(root_ + "/rs").ok());
  {
    auto server = Connect();
    ASSERT_TRUE(server);
    auto made = server->Create(root_ + "/rs/host:1", "info", ZooKeeper::Mode::kEphemeral);
    ASSERT_TRUE(made.ok()) << made.status();
    auto node = watcher->Get(root_ + "/rs/host:1");
    ASSERT_TRUE(node.ok() && node->has_value());
    EXPECT_EQ((*node)->ephemeral_owner, server->session_id());
  }  // closed: its ephemeral node goes at once
  EXPECT_TRUE(watcher->Children(root_ + "/rs").value().empty());
}

TEST_F(ZooKeeperTest, WatchesFireOnceAndMayCallBackIntoTheSession) {
  auto zk = Connect();
  auto other = Connect();
  ASSERT_TRUE(zk && other);
  ASSERT_TRUE(zk->CreatePath(root_ + "/rs").ok());
  // A children watch whose callback lists the children again (a synchronous call from the
  // callback: the C client alone would deadlock there).
  absl::Notification listed;
  std::vector<std::string> seen;
  ASSERT_TRUE(zk->Children(root_ + "/rs", [&] {
                  seen = zk->Children(root_ + "/rs").value_or(std::vector<std::string>{"<error>"});
                  listed.Notify();
                }).ok());
  ASSERT_TRUE(other->Create(root_ + "/rs/s1", "", ZooKeeper::Mode::kEphemeral).ok());
  ASSERT_TRUE(listed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(seen, std::vector<std::string>{"s1"});

  // A watch on a node that does not exist yet fires when it is made; then once only.
  std::atomic<int> fired{0};
  auto got = zk->Get(root_ + "/later", [&] { ++fired; });
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  ASSERT_TRUE(other->Create(root_ + "/later", "v", ZooKeeper::Mode::kPersistent).ok());
  EXPECT_TRUE(Eventually([&] { return fired == 1; }));
  ASSERT_TRUE(other->Set(root_ + "/later", "w").ok());
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(fired, 1);
}

// A process whose session ZooKeeper expires while it is stopped (SIGSTOP: a long GC pause, a
// frozen VM): its ephemeral node goes after the session timeout, and once it runs again it is
// told its session is over, and every call it makes fails.
TEST_F(ZooKeeperTest, ASessionPausedPastItsTimeoutExpiresAndItsOwnerIsTold) {
  int to_parent[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  const std::string node = root_ + "/zombie";
  // Forked before this process connects, while it has no other thread: a child forked from a
  // process whose ZooKeeper thread held a libc lock (getaddrinfo's) hung in its own connect.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(to_parent[0]);
    std::atomic<bool> expired{false};
    auto me = Connect(absl::Milliseconds(600), [&](std::string_view) { expired = true; });
    if (!me || !me->CreatePath(root_).ok() || !me->Create(node, "", ZooKeeper::Mode::kEphemeral).ok()) ::_exit(2);
    ::write(to_parent[1], "r", 1);
    while (!expired) absl::SleepFor(absl::Milliseconds(10));
    const bool refused = absl::IsAborted(me->Create(node + "-after", "", ZooKeeper::Mode::kEphemeral).status());
    ::write(to_parent[1], refused ? "e" : "x", 1);
    ::_exit(0);
  }
  ::close(to_parent[1]);
  char c = 0;
  ASSERT_EQ(::read(to_parent[0], &c, 1), 1);
  ASSERT_EQ(c, 'r');
  auto zk = Connect();
  ASSERT_TRUE(zk);
  ASSERT_TRUE(zk->Get(node).value().has_value());
  ::kill(child, SIGSTOP);
  const absl::Time stopped = absl::Now();
  EXPECT_TRUE(Eventually([&] { return !zk->Get(node).value().has_value(); }));
  const absl::Duration gone_after = absl::Now() - stopped;
  ::kill(child, SIGCONT);
  ASSERT_EQ(::read(to_parent[0], &c, 1), 1);
  EXPECT_EQ(c, 'e') << "the paused process was not told its session expired, or could still write";
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(zk->Get(node + "-after").value().has_value());
  EXPECT_GE(gone_after, absl::Milliseconds(400));  // not before the session timeout
  std::printf("session of 600 ms: its ephemeral node went %s after the pause\n", absl::FormatDuration(gone_after).c_str());
}

// A session's lease (docs/DESIGN.md §6): bounded by the session timeout from the moment it connects, and
// kept while the server answers; it never runs ahead of what the server can promise.
TEST_F(ZooKeeperTest, ASessionLeaseIsKeptWhileTheServerAnswersAndNeverRunsAheadOfIt) {
  SessionLease lease;
  EXPECT_TRUE(lease.Held());  // unbounded before a session bounds it
  std::atomic<bool> expired{false};
  auto zk = Connect(absl::Milliseconds(600), [&](std::string_view) { expired = true; }, &lease);
  ASSERT_TRUE(zk);
  const int64_t timeout_ns = 600 * int64_t{1000000};
  for (int i = 0; i < 150; ++i) {  // 3 s: five session timeouts
    const int64_t now = SessionLease::NowNs();
    ASSERT_TRUE(lease.Held()) << "lapsed while ZooKeeper answers, " << i * 20 << " ms in";
    ASSERT_LE(lease.until_ns(), now + timeout_ns) << "the lease runs past what the server promises";
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_FALSE(expired);
}

TEST_F(ZooKeeperTest, OneLeaderAtATimeAndTheNextTakesOverWhenItGoes) {
  auto a = Connect();
  auto b = Connect();
  auto c = Connect();
  ASSERT_TRUE(a && b && c);
  const std::string dir = root_ + "/master";
  std::atomic<int> elected_a{0}, elected_b{0}, elected_c{0};
  auto ea = std::make_unique<LeaderElection>(a.get(), dir, "a:1", [&] { ++elected_a; });
  LeaderElection eb(b.get(), dir, "b:1", [&] { ++elected_b; });
  LeaderElection ec(c.get(), dir, "c:1", [&] { ++elected_c; });
  ASSERT_TRUE(ea->Start().ok());
  ASSERT_TRUE(eb.Start().ok());
  ASSERT_TRUE(ec.Start().ok());
  EXPECT_TRUE(ea->is_leader());
  EXPECT_FALSE(eb.is_leader());
  EXPECT_FALSE(ec.is_leader());
  EXPECT_EQ(LeaderElection::Leader(c.get(), dir).value().value_or(""), "a:1");

  // A middle candidate leaves: nobody is elected, c now waits on a.
  b.reset();
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_TRUE(ea->is_leader());
  EXPECT_FALSE(ec.is_leader());
  EXPECT_EQ(elected_c, 0);

  // The leader resigns: c takes over, once.
  ASSERT_TRUE(ea->Resign().ok());
  EXPECT_FALSE(ea->is_leader());
  EXPECT_TRUE(Eventually([&] { return ec.is_leader(); }));
  EXPECT_EQ(elected_c, 1);
  EXPECT_EQ(elected_a, 1);
  EXPECT_EQ(elected_b, 0);
  EXPECT_EQ(LeaderElection::Leader(a.get(), dir).value().value_or(""), "c:1");

  // A new candidate behind c; c's session closes: the new one leads.
  std::atomic<int> elected_d{0};
  LeaderElection ed(a.get(), dir, "d:1", [&] { ++elected_d; });
  ASSERT_TRUE(ed.Start().ok());
  EXPECT_FALSE(ed.is_leader());
  c.reset();
  EXPECT_TRUE(Eventually([&] { return ed.is_leader(); }));
  EXPECT_EQ(elected_d, 1);
  EXPECT_EQ(LeaderElection::Leader(a.get(), dir).value().value_or(""), "d:1");
}

TEST_F(ZooKeeperTest, NoServerAnsweringIsUnavailableWithinTheConnectTimeout) {
  ZooKeeper::Options o;
  o.quorum = "127.0.0.1:1";  // nothing listens there
  o.connect_timeout = absl::Milliseconds(500);
  auto zk = ZooKeeper::Connect(o);
  EXPECT_EQ(zk.status().code(), absl::StatusCode::kUnavailable) << zk.status();
}

}  // namespace
}  // namespace basalt
