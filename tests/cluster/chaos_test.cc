// The chaos test (docs/DESIGN.md §6). 16 writers and 4 readers go through one client to a
// table of twelve regions on three region servers, while a region server is killed with SIGKILL
// every ~20 s (and started again once its regions serve elsewhere) and, half way, the active
// master is killed too (a backup takes over). After: every acknowledged write is there, nothing
// that was never written is, and each failover's time to serve again (kill -9 until a Get of a
// row of one of the dead server's regions answers) is printed, p50 and max.
//
// BASALT_CHAOS_SECONDS sets how long (default 100 s: four server kills and one master kill);
// BASALT_CHAOS_SEED the victims' order.
#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "tests/cluster/cluster_fixture.h"

namespace basalt::testing {
namespace {

using Chaos = ClusterFixture;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

TEST_F(Chaos, KillsUnderLoadLoseNoAcknowledgedWriteAndInventNone) {
  const absl::Duration run = absl::Seconds(EnvInt("BASALT_CHAOS_SECONDS", 100));
  const absl::Duration every = absl::Seconds(20);
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("BASALT_CHAOS_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::printf("BASALT_CHAOS_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);

  // The balancer runs every 5 s, so that a restarted server gets regions back.
  std::map<std::string, std::unique_ptr<ChildProcess>> masters;
  masters["m1"] = StartMaster("m1", /*balancer_ms=*/5000);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  masters["m2"] = StartMaster("m2", /*balancer_ms=*/5000);
  std::vector<std::unique_ptr<ServerProcess>> servers;
  ASSERT_NO_FATAL_FAILURE(StartServers(3, &servers));
  auto conn = Connect();
  ASSERT_TRUE(conn);
  std::vector<std::string> splits;
  for (char c = 'b'; c <= 'l'; ++c) splits.emplace_back(1, c);  // twelve regions: [,b) [b,c) ... [l,)
  ASSERT_TRUE(conn->GetAdmin()->CreateTable(TableNamed("c"), splits).ok());

  // Rows spread over the regions by their first letter; the value is the row.
  auto row_of = [](int writer, int i) {
    return absl::StrCat(std::string(1, static_cast<char>('a' + (i * 7 + writer) % 13)), "-", writer, "-", i);
  };
  constexpr int kWriters = 16;
  constexpr int kReaders = 4;
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  std::vector<std::string> acked;          // guarded by mu
  std::set<std::string> failed;            // writes that got an error: there or not
  std::vector<std::string> errors;         // what the client surfaced
  std::atomic<int> reads{0};
  std::vector<std::thread> load;
  const absl::Time begin = absl::Now();
  for (int w = 0; w < kWriters; ++w) {
    load.emplace_back([&, w] {
      auto t = conn->GetTable("c");
      for (int i = 0; !stop.load(); ++i) {
        const std::string row = row_of(w, i);
        absl::Status s = t->Put(Put(row).Add("f", "q", row));
        absl::MutexLock l(&mu);
        if (s.ok()) {
          acked.push_back(row);
        } else {
          failed.insert(row);
          errors.push_back(absl::StrCat("put ", row, ": ", s.ToString()));
        }
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    load.emplace_back([&, r] {
      auto t = conn->GetTable("c");
      std::mt19937_64 pick(seed + r);
      while (!stop.load()) {
        std::string row;
        {
          absl::MutexLock l(&mu);
          if (!acked.empty()) row = acked[pick() % acked.size()];
        }
        if (row.empty()) {
          absl::SleepFor(absl::Milliseconds(10));
          continue;
        }
        auto got = t->Get(Get(row));
        std::string error = !got.ok() ? absl::StrCat("get ", row, ": ", got.status().ToString())
                            : got->Value("f", "q").value_or("<lost>") != row
                                ? absl::StrCat("get ", row, ": an acknowledged write is lost (t=",
                                               absl::FormatDuration(absl::Now() - begin), ")")
                                : "";
        if (error.empty()) {
          reads.fetch_add(1);
        } else {
          absl::MutexLock l(&mu);
          errors.push_back(error);
        }
      }
    });
  }

  // The chaos: a server every `every`, the active master once half way.
  std::vector<absl::Duration> failovers;
  auto probe = Connect();
  ASSERT_TRUE(probe);
  auto probe_table = probe->GetTable("c");
  const absl::Time start = absl::Now();
  bool master_killed = false;
  int kills = 0;
  while (absl::Now() - start + every <= run) {
    absl::SleepFor(every);
    if (!master_killed && absl::Now() - start >= run / 2) {
      // The active master dies; the backup takes over and a new backup starts.
      master_killed = true;
      const std::string was = Leader();
      ASSERT_TRUE(masters[was]) << "the active master '" << was << "' is not one of the test's";
      masters[was]->Stop(SIGKILL);
      const absl::Time killed = absl::Now();
      ASSERT_TRUE(Eventually([&] { return !Leader().empty() && Leader() != was; }));
      std::printf("master %s killed: %s active %s later\n", was.c_str(), Leader().c_str(),
                  absl::FormatDuration(absl::Now() - killed).c_str());
      masters["m3"] = StartMaster("m3", /*balancer_ms=*/5000);
    }
    // A server holding regions dies; a Get of a row in one of its regions waits for them.
    auto regions = probe->GetAdmin()->ListRegions("c");
    ASSERT_TRUE(regions.ok()) << regions.status();
    std::vector<RegionStatus> held;
    size_t k = rng() % servers.size();
    for (size_t tries = 0; tries < servers.size() && held.empty(); ++tries, k = (k + 1) % servers.size()) {
      for (const RegionStatus& r : *regions) {
        if (r.state == "OPEN" && r.server == servers[k]->address()) held.push_back(r);
      }
      if (!held.empty()) break;
    }
    ASSERT_FALSE(held.empty()) << "no server holds a region";
    const std::string victim = servers[k]->address();
    const std::string probe_row = held[rng() % held.size()].start_key + "\x01probe";
    servers[k]->Kill();
    const absl::Time killed = absl::Now();
    ++kills;
    auto got = probe_table->Get(Get(probe_row));
    const absl::Duration took = absl::Now() - killed;
    ASSERT_TRUE(got.ok()) << "region of " << victim << " not serving again: " << got.status();
    failovers.push_back(took);
    std::printf("t=%s: server %s (%zu regions) killed; its regions serve again %s later\n",
                absl::FormatDuration(killed - start).c_str(), victim.c_str(), held.size(),
                absl::FormatDuration(took).c_str());
    // It comes back as a new server (a new start code); the balancer gives it regions again.
    ASSERT_TRUE(servers[k]->Start().ok());
  }
  absl::SleepFor(absl::Seconds(2));
  stop = true;
  for (std::thread& t : load) t.join();

  // Every acknowledged write is there with its value; every row there was written.
  std::map<std::string, std::string> found;
  ASSERT_NO_FATAL_FAILURE(ScanValues(conn->GetTable("c").get(), &found));
  absl::MutexLock l(&mu);
  size_t lost = 0, invented = 0;
  absl::flat_hash_set<std::string> acked_set(acked.begin(), acked.end());
  for (const std::string& row : acked) lost += !found.contains(row) || found[row] != row;
  for (const auto& [row, value] : found) {
    invented += value != row || (!acked_set.contains(row) && !failed.contains(row));
  }
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(invented, 0u);
  EXPECT_GE(kills, 3);
  EXPECT_TRUE(master_killed);
  std::sort(failovers.begin(), failovers.end());
  const absl::Duration p50 = failovers.empty() ? absl::ZeroDuration() : failovers[failovers.size() / 2];
  const absl::Duration max = failovers.empty() ? absl::ZeroDuration() : failovers.back();
  std::printf("chaos for %s: %d server kills and 1 master kill; %zu writes acknowledged, %zu failed, %d reads "
              "checked, %zu errors surfaced; failover (kill -9 to serving again, session timeout 1 s): p50 %s, "
              "max %s; lost %zu, invented %zu\n",
              absl::FormatDuration(absl::Now() - start).c_str(), kills, acked.size(), failed.size(), reads.load(),
              errors.size(), absl::FormatDuration(p50).c_str(), absl::FormatDuration(max).c_str(), lost, invented);
  for (size_t i = 0; i < errors.size() && i < 5; ++i) std::printf("  error: %s\n", errors[i].c_str());
  // The client rides out each failover within its 30 s timeout: no error reaches the caller.
  EXPECT_TRUE(errors.empty()) << errors.size() << " error(s), the first: " << errors.front();
  for (const absl::Duration d : failovers) EXPECT_LT(d, absl::Seconds(10));
}

}  // namespace
}  // namespace basalt::testing
