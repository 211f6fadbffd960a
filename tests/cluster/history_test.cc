// The history checker's run (docs/DESIGN.md §6): concurrent clients doing Gets, Puts,
// CheckAndMutates and Increments on a few keys of a cluster whose masters and region servers run
// in network namespaces of their own (tests/cluster/partition_fixture.h), while faults are
// injected one after another: kill -9 of a region server, a SIGSTOP of one, a fast restart of
// one on its port, a region server cut off from ZooKeeper and the masters, kill -9 of the active
// master while regions are moved and split, and the active master cut off from ZooKeeper. Every
// call is recorded (invocation, completion, result, or "unknown" when the client cannot know),
// and the history is checked for linearizability per key (tests/history/history.h).
//
// It prints the figures BENCHMARKS.md records: operations, faults injected, anomalies (must be
// 0), acknowledged increments lost (must be 0), errors surfaced to clients (must be 0), and, per
// kind of fault, the longest time a client saw no acknowledgement across it (goal: 10 s for a
// region server's fault, 5 s for a master's; the run fails past 10 s for either). BASALT_HISTORY_SECONDS (default 60: CI's short
// run) runs whole rounds of every fault until that much time has passed; the soak's command is
// in BENCHMARKS.md.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <cmath>
#include <map>
#include <optional>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "tests/cluster/partition_fixture.h"
#include "tests/history/history.h"

namespace basalt::testing {
namespace {

using history::Op;
using history::OpKind;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const std::vector<std::string> kRegisters = {"r0", "r1", "r2", "r3"};
const std::vector<std::string> kCounters = {"n0", "n1"};

// Clients doing random calls on the keys, each recorded.
class Workload {
 public:
  Workload(std::vector<Table*> tables, int clients) {
    for (int c = 0; c < clients; ++c) {
      threads_.emplace_back([this, c, table = tables[c % tables.size()]] { Run(c, table); });
    }
  }
  ~Workload() { Stop(); }
  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  // Reads every key once more (the history's last word on each), as client `client`.
  void FinalReads(Table* table, int client) {
    for (const std::string& k : kRegisters) Call(client, table, OpKind::kGet, k);
    for (const std::string& k : kCounters) Call(client, table, OpKind::kGet, k);
  }

  std::vector<Op> ops() {
    std::lock_guard<std::mutex> l(mu_);
    return ops_;
  }
  std::map<std::string, int> errors() {
    std::lock_guard<std::mutex> l(mu_);
    return errors_;
  }
  // Each client's acknowledgement times, in order.
  std::map<int, std::vector<int64_t>> acks() {
    std::lock_guard<std::mutex> l(mu_);
    return acks_;
  }

 private:
  void Run(int client, Table* table) {
    std::mt19937_64 rng(client * 7919 + 17);
    while (!stop_) {
      const int dice = static_cast<int>(rng() % 100);
      if (dice < 15) {
        Call(client, table, OpKind::kIncrement, kCounters[rng() % kCounters.size()]);
      } else {
        const std::string key = kRegisters[rng() % kRegisters.size()];
        Call(client, table, dice < 55 ? OpKind::kGet : dice < 85 ? OpKind::kPut : OpKind::kCas, key);
      }
    }
  }

  void Call(int client, Table* table, OpKind kind, const std::string& key) {
    Op op;
    op.client = client;
    op.kind = kind;
    op.key = key;
    absl::Status s;
    const bool counter = key[0] == 'n';
    switch (kind) {
      case OpKind::kGet: {
        op.invoked_ns = NowNs();
        absl::StatusOr<Result> r = table->Get(Get(key));
        s = r.status();
        if (r.ok()) {
          std::optional<std::string_view> v = r->Value("f", "q");
          if (counter) {
            op.output = v.has_value() ? absl::StrCat(DecodeCounter(*v).value_or(-1)) : "0";
          } else {
            op.output = std::string(v.value_or(""));
          }
        }
        break;
      }
      case OpKind::kPut: {
        op.input = absl::StrCat("c", client, "-", seq_++);
        op.invoked_ns = NowNs();
        s = table->Put(Put(key).Add("f", "q", op.input));
        break;
      }
      case OpKind::kCas: {
        // Expect what this client last saw of the key (absent at first).
        {
          std::lock_guard<std::mutex> l(mu_);
          op.expected = last_seen_[{client, key}];
        }
        op.input = absl::StrCat("c", client, "-", seq_++);
        CheckAndMutate cam = op.expected.empty() ? CheckAndMutate::IfNotExists(key, "f", "q")
                                                 : CheckAndMutate::IfEquals(key, "f", "q", op.expected);
        cam.Then(Put(key).Add("f", "q", op.input));
        op.invoked_ns = NowNs();
        absl::StatusOr<bool> done = table->CheckAndMutate(cam);
        s = done.status();
        if (done.ok()) op.output = *done ? "1" : "0";
        break;
      }
      case OpKind::kIncrement: {
        op.input = "1";
        op.invoked_ns = NowNs();
        absl::StatusOr<int64_t> n = table->IncrementColumnValue(key, "f", "q", 1);
        s = n.status();
        if (n.ok()) op.output = absl::StrCat(*n);
        break;
      }
    }
    op.completed_ns = NowNs();
    std::lock_guard<std::mutex> l(mu_);
    if (s.ok()) {
      acks_[client].push_back(op.completed_ns);
      if (kind == OpKind::kGet && !counter) last_seen_[{client, key}] = op.output;
      if (kind == OpKind::kCas && op.output == "1") last_seen_[{client, key}] = op.input;
      if (kind == OpKind::kPut) last_seen_[{client, key}] = op.input;
    } else {
      // The client cannot know whether it took effect; and every error reaching a client is
      // counted (the goal is none).
      op.unknown = true;
      ++errors_[absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message().substr(0, 160))];
    }
    ops_.push_back(std::move(op));
  }

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> seq_{0};
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::vector<Op> ops_;
  std::map<std::string, int> errors_;
  std::map<int, std::vector<int64_t>> acks_;
  std::map<std::pair<int, std::string>, std::string> last_seen_;
};

struct Fault {
  std::string kind;
  bool master;  // a master's fault (goal 5 s) or a region server's (goal 10 s)
  int64_t at_ns;
};
// The longest time one client saw no acknowledgement across a kind of fault, and where.
struct Gap {
  int64_t ns = 0;
  int client = 0;
  int64_t from_ns = 0, to_ns = 0;  // the acknowledgements before and after
  const Fault* fault = nullptr;
};

class History : public PartitionFixture {};

TEST_F(History, ConcurrentClientsSeeALinearizableHistoryThroughEveryFault) {
  int seconds = 60;
  if (const char* s = std::getenv("BASALT_HISTORY_SECONDS")) {
    ASSERT_TRUE(absl::SimpleAtoi(s, &seconds)) << s;
  }
  // Two seconds: with both cores busy, a 1 s session lost to a starved ZooKeeper now and then.
  constexpr int kServerSessionMs = 2000;
  constexpr int kMasterSessionMs = 2000;
  std::map<std::string, std::unique_ptr<ChildProcess>> masters;
  masters["m1"] = StartMasterIn("m1", kMasterSessionMs);
  ASSERT_TRUE(masters["m1"]);
  ASSERT_TRUE(Eventually([&] { return Leader() == "m1"; }));
  masters["m2"] = StartMasterIn("m2", kMasterSessionMs);
  ASSERT_TRUE(masters["m2"]);
  std::vector<std::string> names = {"s0", "s1", "s2"};
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (const std::string& n : names) {
    servers.push_back(StartServerIn(n, kServerSessionMs));
    ASSERT_TRUE(servers.back());
  }
  ASSERT_TRUE(Eventually([&] { return MasterServes() && Children("/rs").size() == 3u; }));
  auto admin_conn = Connect(absl::Seconds(20));
  ASSERT_TRUE(admin_conn);
  ASSERT_TRUE(admin_conn->GetAdmin()->CreateTable(TableNamed("h"), {"n1", "r2"}).ok());
  std::vector<std::unique_ptr<Connection>> conns;
  std::vector<std::unique_ptr<Table>> tables;
  std::vector<Table*> raw;
  for (int i = 0; i < 2; ++i) {
    conns.push_back(Connect(absl::Seconds(20)));
    ASSERT_TRUE(conns.back());
    tables.push_back(conns.back()->GetTable("h"));
    raw.push_back(tables.back().get());
  }
  constexpr int kClients = 6;
  Workload work(raw, kClients);

  // Moves all along (a region to a random server each second), as an operator's or the
  // balancer's; their errors (a server gone meanwhile) are the admin's, not the clients'.
  std::atomic<bool> stop_moves{false};
  std::atomic<int> moves{0}, moves_failed{0}, splits{0};
  std::thread mover([&] {
    std::mt19937_64 rng(99);
    while (!stop_moves) {
      auto regions = admin_conn->GetAdmin()->ListRegions("h");
      if (regions.ok() && !regions->empty()) {
        const RegionStatus& r = (*regions)[rng() % regions->size()];
        (admin_conn->GetAdmin()->Move(r.encoded_name).ok() ? moves : moves_failed)++;
      }
      absl::SleepFor(absl::Seconds(1));
    }
  });

  std::vector<Fault> faults;
  auto note = [&](const std::string& kind, bool master = false) {
    faults.push_back({kind, master, NowNs()});
    std::printf("%7.1f s: %s\n", (faults.back().at_ns - faults.front().at_ns) / 1e9, kind.c_str());
  };
  // A server that ended (fenced, its lease lapsed) or was killed comes back as a new run.
  auto restart = [&](ServerProcess* s) {
    s->WaitForExit(std::chrono::seconds(15));
    s->Kill();
    ASSERT_TRUE(s->Start().ok());
  };
  auto steady = [&] { absl::SleepFor(absl::Seconds(2)); };
  auto active_master = [&]() -> std::string { return Leader(); };
  const absl::Time end = absl::Now() + absl::Seconds(seconds);
  int round = 0;
  int restarted_masters = 0;
  do {
    // A master that ended on its own (an active master whose session expired ends: exit 3) is
    // started again, as its unit restarts it.
    for (auto& [m, p] : masters) {
      if (std::optional<int> code = p->WaitForExit(absl::ZeroDuration()); code.has_value()) {
        std::printf("master %s had ended (exit %d): started again, as its unit would\n", m.c_str(), *code);
        p = StartMasterIn(m, kMasterSessionMs);
        ASSERT_TRUE(p);
        ++restarted_masters;
      }
    }
    ServerProcess* s = servers[round % 3].get();
    const std::string node = names[round % 3];

    note("kill -9 of a region server");
    s->Kill();
    absl::SleepFor(absl::Seconds(3));
    ASSERT_NO_FATAL_FAILURE(restart(s));
    steady();

    s = servers[(round + 1) % 3].get();
    note("SIGSTOP of a region server (6 s)");
    s->Signal(SIGSTOP);
    absl::SleepFor(absl::Seconds(6));
    s->Signal(SIGCONT);
    ASSERT_NO_FATAL_FAILURE(restart(s));
    steady();

    s = servers[(round + 2) % 3].get();
    note("fast restart of a region server on its port");
    s->Kill();
    ASSERT_TRUE(s->Start().ok());
    steady();

    s = servers[round % 3].get();
    note("a region server cut off from ZooKeeper and the masters (6 s)");
    ASSERT_TRUE(lab_->Cut(node, lab_->host_ip(), BASALT_PARTITION_ZK_PORT).ok());
    for (const auto& [m, p] : masters) ASSERT_TRUE(lab_->Cut(node, lab_->ip(m)).ok());
    absl::SleepFor(absl::Seconds(6));
    ASSERT_TRUE(lab_->Heal(node).ok());
    ASSERT_NO_FATAL_FAILURE(restart(s));
    steady();

    {
      const std::string m = active_master();
      ASSERT_FALSE(m.empty());
      // A split asked just before (its regions then move on), then the master killed.
      std::thread splitter([&] {
        if (admin_conn->GetAdmin()->Split("h", round % 2 == 0 ? "r1" : "r3").ok()) ++splits;
      });
      absl::SleepFor(absl::Milliseconds(100));
      note("kill -9 of the active master during moves and a split", true);
      masters[m]->Stop(SIGKILL);
      absl::SleepFor(absl::Seconds(2));
      masters[m] = StartMasterIn(m, kMasterSessionMs);
      ASSERT_TRUE(masters[m]);
      splitter.join();
      steady();
    }
    {
      const std::string m = active_master();
      ASSERT_FALSE(m.empty());
      note("the active master cut off from ZooKeeper (4 s)", true);
      ASSERT_TRUE(lab_->Cut(m, lab_->host_ip(), BASALT_PARTITION_ZK_PORT).ok());
      absl::SleepFor(absl::Seconds(4));
      ASSERT_TRUE(lab_->Heal(m).ok());
      masters[m]->WaitForExit(absl::Seconds(10));
      masters[m]->Stop(SIGKILL);
      masters[m] = StartMasterIn(m, kMasterSessionMs);
      ASSERT_TRUE(masters[m]);
      steady();
    }
    ++round;
  } while (absl::Now() < end);
  stop_moves = true;
  mover.join();
  work.Stop();
  ASSERT_TRUE(Eventually([&] { return Children("/rs").size() == 3u; }));
  work.FinalReads(raw[0], kClients);

  // The check, and the figures.
  const std::vector<Op> ops = work.ops();
  const history::Verdict verdict = history::Check(ops, kCounters);
  for (const history::KeyVerdict& k : verdict.anomalies) {
    std::printf("NOT LINEARIZABLE: key %s (%zu calls, %zu unknown):\n", k.key.c_str(), k.ops, k.unknown);
    for (const std::string& line : k.ops_text) std::printf("  %s\n", line.c_str());
  }
  EXPECT_TRUE(verdict.linearizable) << verdict.anomalies.size() << " key(s) with a non-linearizable history";
  EXPECT_TRUE(verdict.undecided.empty()) << verdict.undecided.size() << " key(s) undecided";
  // Acknowledged increments: every one counted in the final value.
  int64_t lost = 0;
  for (const std::string& k : kCounters) {
    int64_t acked = 0, final_value = -1;
    for (const Op& op : ops) {
      if (op.key != k || op.unknown) continue;
      if (op.kind == OpKind::kIncrement) ++acked;
      if (op.kind == OpKind::kGet && op.client == kClients && !absl::SimpleAtoi(op.output, &final_value)) {
        ADD_FAILURE() << "counter " << k << " read as '" << op.output << "'";
      }
    }
    lost += std::max<int64_t>(0, acked - final_value);
  }
  EXPECT_EQ(lost, 0) << "acknowledged increments lost";
  int surfaced = 0;
  for (const auto& [what, n] : work.errors()) {
    surfaced += n;
    std::printf("error surfaced to clients, %d time(s): %s\n", n, what.c_str());
  }
  EXPECT_EQ(surfaced, 0) << "errors reached the clients";
  // The longest time without an acknowledgement after each kind of fault, over all clients. A
  // gap is the latest fault's that began by 1 s after the gap did (the client's call then in
  // flight): a fault that came later found the client already waiting on an earlier one (a
  // master killed while a partitioned server's regions were still being placed again).
  std::map<std::string, Gap> longest;
  constexpr int64_t kInFlightNs = 1000000000;
  for (const auto& [client, times] : work.acks()) {
    for (size_t i = 1; i < times.size(); ++i) {
      const Fault* cause = nullptr;
      for (const Fault& f : faults) {
        if (f.at_ns <= times[i - 1] + kInFlightNs && f.at_ns <= times[i]) cause = &f;
      }
      if (cause == nullptr || times[i] - times[i - 1] < 100000000) continue;  // (before any fault; or short)
      Gap& g = longest[cause->kind];
      if (times[i] - times[i - 1] > g.ns) g = {times[i] - times[i - 1], client, times[i - 1], times[i], cause};
    }
  }
  std::printf("history: %zu calls (%zu unknown) by %d clients in %d round(s) of faults (%zu faults), %d moves "
              "(%d refused), %d splits, %d master(s) that ended on their own restarted; anomalies %zu; acknowledged "
              "increments lost %lld; errors surfaced %d\n",
              verdict.ops, verdict.unknown, kClients, round, faults.size(), moves.load(), moves_failed.load(),
              splits.load(), restarted_masters, verdict.anomalies.size(), static_cast<long long>(lost), surfaced);
  for (const auto& [kind, g] : longest) {
    // The goals: 10 s for a region server's fault, 5 s for a master's. Both are met in the soak
    // with both cores busy (BENCHMARKS.md §16); a machine far more loaded than that (a build
    // beside it as well) missed them, so this run fails only past 10 s for either, and says
    // when the 5 s goal is missed.
    if (g.fault == nullptr) continue;
    const int64_t ns = g.ns;
    const double at = (g.fault->at_ns - faults.front().at_ns) / 1e9;
    const double from = (g.from_ns - g.fault->at_ns) / 1e9;
    std::printf("longest time a client saw no acknowledgement after \"%s\": %.2f s (client %d, from %.2f s %s "
                "the fault at %.1f s to %.2f s after)%s\n",
                kind.c_str(), ns / 1e9, g.client, std::abs(from), from < 0 ? "before" : "after", at,
                (g.to_ns - g.fault->at_ns) / 1e9,
                g.fault->master && ns > 5 * int64_t{1000000000} ? " (over the 5 s goal for a master's fault)" : "");
    EXPECT_LE(ns, 10 * int64_t{1000000000}) << kind;
  }
}

}  // namespace
}  // namespace basalt::testing
