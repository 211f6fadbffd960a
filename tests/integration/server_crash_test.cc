// A server SIGKILLed under load and restarted loses no acknowledged write, and shows nothing
// that was never written, in a table of several regions. Writers keep writing through the kills (the client retries while
// the server is down); a write that failed may or may not be there, an acknowledged one must be.
#include <atomic>
#include <functional>
#include <future>
#include <random>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/test_services.h"
#include "tests/integration/integration_util.h"

namespace basalt::testing {
namespace {

// On local disk, and with every file on Ceph RADOS (the tests' cluster, tests/services/: the
// server's log, block files, manifests and the directory moves of recovery all go through
// RadosEnv, with objects of 64 KiB so that files span several).
class ServerCrash : public ServerTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(ServerCrash, KilledServerLosesNoAcknowledgedWrite) {
  // A small flush size, so kills also land during flushes and compactions.
  std::vector<std::string> args = {"--memstore_flush_size=262144"};
  if (GetParam() == "rados") {
    const std::string conf = TestCephConf();
    ASSERT_FALSE(conf.empty()) << kTestServicesHelp;
    args.insert(args.end(), {"--rados_pool=basalt", absl::StrCat("--ceph_conf=", conf),
                             absl::StrCat("--rados_namespace=server-crash-", ::getpid()), "--rados_object_size=64KiB"});
  }
  StartServer(args);
  // Six regions: writers 0 and 1 each write across a region boundary, 2 and 3 into one each.
  const std::vector<std::string> splits = {"w0-100300", "w1", "w1-100300", "w2", "w3"};
  CreateTable("c", {"f", "g"}, splits);

  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("BASALT_CRASH_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::printf("BASALT_CRASH_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);

  constexpr int kWriters = 4;
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  std::vector<std::vector<int>> acked(kWriters);  // indexes acknowledged per writer
  std::vector<int> attempted(kWriters, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      ConnectionOptions o;
      o.address = server_->address();
      o.timeout = absl::Seconds(30);
      o.max_attempts = 1000;  // keep trying through the restart
      o.max_backoff = absl::Milliseconds(100);
      auto conn = Connection::Open(o);
      ASSERT_TRUE(conn.ok());
      auto t = (*conn)->GetTable("c");
      for (int i = 0; !stop; ++i) {
        {
          absl::MutexLock l(&mu);
          attempted[w] = i + 1;
        }
        std::string key = absl::StrCat("w", w, "-", 100000 + i);
        absl::Status s = t->Put(Put(key).Add("f", "v", key).Add("g", "v", std::string(2000, 'x')));
        if (s.ok()) {
          absl::MutexLock l(&mu);
          acked[w].push_back(i);
        }
      }
    });
  }
  for (int cycle = 0; cycle < 4; ++cycle) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 500));
    server_->Kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 200));
    ASSERT_TRUE(server_->Start().ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& t : threads) t.join();

  // One more crash with nothing in flight, then check everything.
  server_->Kill();
  ASSERT_TRUE(server_->Start().ok());
  auto regions = conn_->GetAdmin()->ListRegions("c");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), splits.size() + 1);
  auto table = conn_->GetTable("c");
  size_t total_acked = 0;
  for (int w = 0; w < kWriters; ++w) {
    absl::flat_hash_map<int, bool> seen;
    auto sc = table->GetScanner(Scan().WithStartRow(absl::StrCat("w", w, "-")).WithStopRow(absl::StrCat("w", w, ".")));
    ASSERT_TRUE(sc.ok()) << sc.status();
    Result row;
    for (;;) {
      auto more = (*sc)->Next(&row);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) break;
      int i = std::stoi(row.row().substr(row.row().find('-') + 1)) - 100000;
      ASSERT_LT(i, attempted[w]) << "row " << row.row() << " was never written";
      ASSERT_EQ(row.Value("f", "v").value_or(""), row.row());
      ASSERT_EQ(row.Value("g", "v").value_or("").size(), 2000u) << "half a row: " << row.row();
      seen[i] = true;
    }
    for (int i : acked[w]) ASSERT_TRUE(seen.contains(i)) << "acknowledged write w" << w << "-" << i << " lost";
    total_acked += acked[w].size();
  }
  EXPECT_GT(total_acked, 100u);
  std::printf("acknowledged writes checked: %zu\n", total_acked);
}

INSTANTIATE_TEST_SUITE_P(Storage, ServerCrash, ::testing::Values("local", "rados"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// On one server (docs/DESIGN.md §6): the server applies an Increment (an Append, a
// CheckAndMutate, a Put) and is killed before it answers; the client's retry, carrying the same nonce,
// reaches the restarted server, which finds the nonce in the log it replayed and answers from
// what is stored: the counter counts once.
class NonceCrash : public ServerTest {};

TEST_F(NonceCrash, AnOperationAppliedButNeverAnsweredCountsOnceWhenItsRetryReachesTheRestartedServer) {
  server_ = std::make_unique<ServerProcess>(BASALT_SERVER_BINARY, dir_.path() + "/data");
  ASSERT_TRUE(server_->Start().ok());
  Connect();
  CreateTable("n");
  auto table = conn_->GetTable("n");
  TableInfo v;
  v.name = "v";
  v.families.push_back(FamilySettings{.name = "cf", .max_versions = 5});
  ASSERT_TRUE(conn_->GetAdmin()->CreateTable(v).ok());
  auto versioned = conn_->GetTable("v");
  ASSERT_TRUE(table->Put(Put("a").Add("cf", "s", "x")).ok());
  server_->Kill();
  // Each operation, once: the server kills itself after applying it, and comes back a second
  // later while the client retries.
  struct Case {
    std::string point;
    std::function<void()> run_and_check;
  };
  std::vector<Case> cases = {
      {"data.increment.applied",
       [&] {
         auto n = table->IncrementColumnValue("c", "cf", "n", 5);
         ASSERT_TRUE(n.ok()) << n.status();
         EXPECT_EQ(*n, 5);  // the answered retry returns the stored value
       }},
      {"data.append.applied",
       [&] {
         auto r = table->Append(Append("a").Add("cf", "s", "y"));
         ASSERT_TRUE(r.ok()) << r.status();
         EXPECT_EQ(r->Value("cf", "s").value_or(""), "xy");
       }},
      {"data.check_and_mutate.applied",
       [&] {
         auto done = table->CheckAndMutate(
             CheckAndMutate::IfEquals("a", "cf", "s", "xy").Then(Put("a").Add("cf", "s", "xyz")));
         ASSERT_TRUE(done.ok()) << done.status();
         EXPECT_TRUE(*done);  // its condition held when it was applied (it no longer does)
       }},
      // A Put without a timestamp, sync and async (over the TCP path where there is no RDMA):
      // applied twice it would leave two versions of its cell.
      {"data.mutate.applied", [&] { ASSERT_TRUE(versioned->Put(Put("p").Add("cf", "q", "sync")).ok()); }},
      {"data.mutate.applied",
       [&] {
         std::promise<absl::Status> put;
         versioned->PutAsync(Put("p").Add("cf", "q2", "async"), [&](absl::Status s) { put.set_value(s); });
         const absl::Status s = put.get_future().get();
         ASSERT_TRUE(s.ok()) << s;
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.point);
    server_->set_launcher({"env", "BASALT_FAULT_POINT=" + c.point});
    ASSERT_TRUE(server_->Start().ok());
    std::thread restart([&] {
      server_->WaitForExit(std::chrono::seconds(20));
      server_->set_launcher({});
      absl::SleepFor(absl::Seconds(1));
      ASSERT_TRUE(server_->Start().ok());
    });
    c.run_and_check();
    restart.join();
    server_->Kill();
  }
  server_->set_launcher({});
  ASSERT_TRUE(server_->Start().ok());
  auto row = table->Get(Get("a"));
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->Value("cf", "s").value_or(""), "xyz");
  auto n = table->Get(Get("c"));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(DecodeCounter(n->Value("cf", "n").value_or("")).value_or(-1), 5);
  auto p = versioned->Get(Get("p").SetMaxVersions(5));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->size(), 2u) << "one version of each Put's cell";
}

}  // namespace
}  // namespace basalt::testing
