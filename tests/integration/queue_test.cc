// Queues (docs/DESIGN.md §7): exactly-once delivery to every consumer
// group, with 3 producer processes and 2 groups (2 and 3 consumers) killed with SIGKILL at
// random points and restarted, and each group resized while they run. After, every event of a
// committed producer transaction was processed exactly once by each group, and no event of an
// aborted or killed producer transaction ever was. Plus the API's behaviour in one process.
#include <signal.h>

#include <deque>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "basalt/queue.h"
#include "tests/integration/integration_util.h"
#include "tests/util/child_process.h"

namespace basalt::testing {
namespace {

using absl::StatusCode;

class Queues : public ServerTest {
 protected:
  void SetUp() override { StartServer(); }
  void CreateTx(const std::string& name) { CreateTable(name, {"c"}, {}, /*transactional=*/true); }
  // Every row of `table` that has committed, with its cells.
  std::map<std::string, std::vector<KeyValue>> ReadAll(const std::string& table) {
    std::map<std::string, std::vector<KeyValue>> rows;
    auto scanner = conn_->GetTable(table)->GetScanner(Scan());
    EXPECT_TRUE(scanner.ok()) << scanner.status();
    if (!scanner.ok()) return rows;
    Result r;
    for (;;) {
      absl::StatusOr<bool> more = (*scanner)->Next(&r);
      EXPECT_TRUE(more.ok()) << more.status();
      if (!more.ok() || !*more) break;
      rows[r.row()] = r.cells();
    }
    return rows;
  }
  uint64_t Depth(const std::string& queue) {
    auto status = GetQueueStatus(conn_.get(), queue);
    EXPECT_TRUE(status.ok()) << status.status();
    if (!status.ok()) return ~0ull;
    uint64_t depth = 0;
    for (const GroupStatus& g : *status) {
      for (const ConsumerStatus& c : g.consumers) depth += c.depth;
    }
    return depth;
  }
};

TEST_F(Queues, EnqueueDequeueInTransactions) {
  QueueOptions o;
  o.partitions = 4;
  o.salt_buckets = 2;
  ASSERT_TRUE(CreateQueue(conn_.get(), "q", o).ok());
  ASSERT_TRUE(ConfigureQueue(conn_.get(), "q", {{"all", 1}, {"pair", 2, Partitioning::kHash}}).ok());
  auto config = DescribeQueue(conn_.get(), "q");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->groups.size(), 2u);
  EXPECT_EQ(config->options.partitions, 4);

  QueueProducer producer(conn_.get(), "q");
  TransactionContext tx(conn_.get());
  ASSERT_TRUE(tx.Start().ok());
  std::vector<QueueEvent> events;
  for (int i = 0; i < 20; ++i) events.push_back({absl::StrCat("e", i), absl::StrCat("key", i % 3)});
  ASSERT_TRUE(producer.Enqueue(&tx, events).ok());
  // Not committed: no consumer sees them.
  QueueConsumer all(conn_.get(), "q", "all", 0);
  TransactionContext ctx(conn_.get());
  ASSERT_TRUE(ctx.Start().ok());
  auto none = all.Dequeue(&ctx, 100);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(ctx.Commit().ok());
  ASSERT_TRUE(tx.Commit().ok());

  // Consumer 0 of "all" takes them in batches; an aborted dequeue gives them back.
  ASSERT_TRUE(ctx.Start().ok());
  auto got = all.Dequeue(&ctx, 5);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 5u);
  ASSERT_TRUE(ctx.Abort().ok());
  std::multiset<std::string> seen;
  for (int round = 0; round < 10; ++round) {
    ASSERT_TRUE(ctx.Start().ok());
    got = all.Dequeue(&ctx, 7);
    ASSERT_TRUE(got.ok()) << got.status();
    for (const DequeuedEvent& e : *got) seen.insert(e.payload);
    ASSERT_TRUE(ctx.Commit().ok());
  }
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 20u);

  // Group "pair" partitions by key: each key goes to one consumer, in enqueue order.
  std::map<std::string, std::set<int>> consumers_of_key;
  std::set<std::string> pair_seen;
  for (int instance = 0; instance < 2; ++instance) {
    QueueConsumer c(conn_.get(), "q", "pair", instance);
    ASSERT_TRUE(ctx.Start().ok());
    got = c.Dequeue(&ctx, 100);
    ASSERT_TRUE(got.ok()) << got.status();
    for (const DequeuedEvent& e : *got) {
      consumers_of_key[e.key].insert(instance);
      pair_seen.insert(e.payload);
    }
    ASSERT_TRUE(ctx.Commit().ok());
  }
  EXPECT_EQ(pair_seen.size(), 20u);
  for (const auto& [key, consumers] : consumers_of_key) EXPECT_EQ(consumers.size(), 1u) << key;

  // Two consumers that took the same entries: the second to commit conflicts.
  ASSERT_TRUE(tx.Start().ok());
  ASSERT_TRUE(producer.Enqueue(&tx, {QueueEvent{"x", ""}}).ok());
  ASSERT_TRUE(tx.Commit().ok());
  ASSERT_TRUE(ConfigureQueue(conn_.get(), "q", {{"all", 1, Partitioning::kFifo}}).ok());
  QueueConsumer a(conn_.get(), "q", "all", 0);
  TransactionContext t1(conn_.get()), t2(conn_.get());
  ASSERT_TRUE(t1.Start().ok());
  ASSERT_TRUE(t2.Start().ok());
  auto g1 = a.Dequeue(&t1, 10);
  auto g2 = a.Dequeue(&t2, 10);
  ASSERT_TRUE(g1.ok() && g2.ok());
  ASSERT_EQ(g1->size(), 1u);
  ASSERT_EQ(g2->size(), 1u);
  ASSERT_TRUE(t1.Commit().ok());
  EXPECT_EQ(t2.Commit().code(), StatusCode::kAborted);

  // A removed group is gone; a shrunk group's surplus consumer is told to wait.
  auto status = GetQueueStatus(conn_.get(), "q");
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->size(), 1u);
  EXPECT_EQ((*status)[0].consumers[0].depth, 0u);
  QueueConsumer gone(conn_.get(), "q", "pair", 0);
  ASSERT_TRUE(ctx.Start().ok());
  EXPECT_EQ(gone.Dequeue(&ctx, 1).status().code(), StatusCode::kNotFound);
  QueueConsumer surplus(conn_.get(), "q", "all", 1);
  EXPECT_EQ(surplus.Dequeue(&ctx, 1).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(ctx.Abort().ok());
  EXPECT_EQ(ConfigureQueue(conn_.get(), "q", {{"bad name", 1}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ConfigureQueue(conn_.get(), "q", {{"g", 0}}).code(), StatusCode::kInvalidArgument);
}

TEST_F(Queues, AMajorCompactionRemovesTheEntriesEverySnapshotSeesConsumed) {
  QueueOptions o;
  o.partitions = 2;
  o.salt_buckets = 1;
  ASSERT_TRUE(CreateQueue(conn_.get(), "ev", o).ok());
  ASSERT_TRUE(ConfigureQueue(conn_.get(), "ev", {{"g", 1}}).ok());
  auto info = conn_->GetAdmin()->DescribeTable("ev");
  ASSERT_TRUE(info.ok() && info->queue && info->transactional);
  QueueProducer producer(conn_.get(), "ev");
  TransactionContext tx(conn_.get());
  ASSERT_TRUE(tx.Start().ok());
  std::vector<QueueEvent> events;
  for (int i = 0; i < 20; ++i) events.push_back(QueueEvent{absl::StrCat("e", i), ""});
  ASSERT_TRUE(producer.Enqueue(&tx, events).ok());
  ASSERT_TRUE(tx.Commit().ok());
  // The rows a plain read sees: the entries left and the configuration row.
  auto rows = [&] {
    auto admin = conn_->GetAdmin();
    EXPECT_TRUE(admin->Flush("ev").ok());
    EXPECT_TRUE(admin->MajorCompact("ev").ok());
    return ReadAll("ev").size();
  };
  EXPECT_EQ(rows(), 21u);
  QueueConsumer consumer(conn_.get(), "ev", "g", 0);
  auto take = [&](TransactionContext& t, int n) {
    auto got = consumer.Dequeue(&t, n);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? got->size() : 0;
  };
  ASSERT_TRUE(tx.Start().ok());
  EXPECT_EQ(take(tx, 10), 10u);
  ASSERT_TRUE(tx.Commit().ok());
  // A transaction that took 5 more, not committed yet: its marks keep their rows.
  TransactionContext pending(conn_.get());
  ASSERT_TRUE(pending.Start().ok());
  EXPECT_EQ(take(pending, 5), 5u);
  EXPECT_EQ(rows(), 11u);  // the 10 consumed and committed are gone
  ASSERT_TRUE(pending.Commit().ok());
  // A transaction that started before the last 5 were consumed could not see their marks yet:
  // they stay while it is in progress.
  TransactionContext older(conn_.get());
  ASSERT_TRUE(older.Start().ok());
  ASSERT_TRUE(tx.Start().ok());
  EXPECT_EQ(take(tx, 10), 5u);
  ASSERT_TRUE(tx.Commit().ok());
  EXPECT_EQ(rows(), 6u);  // the 5 pending ones went; the last 5 wait for `older`
  ASSERT_TRUE(older.Commit().ok());
  EXPECT_EQ(rows(), 1u);  // the configuration row alone
  // The queue goes on: new events, dequeued once.
  ASSERT_TRUE(tx.Start().ok());
  ASSERT_TRUE(producer.Enqueue(&tx, {QueueEvent{"late", ""}}).ok());
  ASSERT_TRUE(tx.Commit().ok());
  ASSERT_TRUE(tx.Start().ok());
  auto last = consumer.Dequeue(&tx, 10);
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_EQ(last->size(), 1u);
  EXPECT_EQ((*last)[0].payload, "late");
  ASSERT_TRUE(tx.Commit().ok());
}

TEST_F(Queues, TheReadmeExampleRuns) {
  const std::string out = dir_.path() + "/example.out";
  auto p = ChildProcess::Spawn({QUEUE_EXAMPLE_BINARY, server_->address()}, out);
  ASSERT_TRUE(p.ok()) << p.status();
  std::optional<int> rc = (*p)->WaitForExit(absl::Seconds(60));
  std::ifstream f(out);
  const std::string printed((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << printed;
  EXPECT_EQ(printed, "home 2\ncart 1\n");
}

TEST_F(Queues, ExactlyOnceThroughKillsAndResizes) {
  QueueOptions o;
  o.partitions = 12;
  o.salt_buckets = 4;
  ASSERT_TRUE(CreateQueue(conn_.get(), "events", o).ok());
  CreateTx("produced");
  CreateTx("processed");
  // A is FIFO (its consumers all take from every partition, and lose to each other by
  // conflicts), B partitions by hash of the events' keys.
  ASSERT_TRUE(
      ConfigureQueue(conn_.get(), "events", {{"A", 2, Partitioning::kFifo}, {"B", 3, Partitioning::kHash}}).ok());

  struct Worker {
    std::vector<std::string> argv;
    std::unique_ptr<ChildProcess> process = nullptr;
    bool enabled = true;
    int kills = 0;
  };
  std::vector<Worker> workers;
  const std::string address = server_->address();
  for (int p = 0; p < 3; ++p) {
    workers.push_back({{QUEUE_WORKER_BINARY, "producer", address, "events", absl::StrCat("p", p)}});
  }
  auto consumer = [&](const std::string& group, int instance) {
    workers.push_back({{QUEUE_WORKER_BINARY, "consumer", address, "events", group, absl::StrCat(instance)}});
  };
  consumer("A", 0);
  consumer("A", 1);
  consumer("B", 0);
  consumer("B", 1);
  consumer("B", 2);
  const std::string logs = dir_.path() + "/worker.log";
  auto start = [&](Worker& w) {
    auto p = ChildProcess::Spawn(w.argv, logs);
    ASSERT_TRUE(p.ok()) << p.status();
    w.process = std::move(*p);
  };
  for (Worker& w : workers) start(w);

  std::mt19937 rng(20261126);
  const absl::Time begin = absl::Now();
  bool resized = false;
  int kills = 0;
  while (absl::Now() - begin < absl::Seconds(20)) {
    absl::SleepFor(absl::Milliseconds(150 + static_cast<int>(rng() % 350)));
    if (!resized && absl::Now() - begin > absl::Seconds(10)) {
      // Mid-run: A grows to 3 consumers, B shrinks to 2 (its consumer 2 goes for good).
      ASSERT_TRUE(
          ConfigureQueue(conn_.get(), "events", {{"A", 3, Partitioning::kFifo}, {"B", 2, Partitioning::kHash}}).ok());
      consumer("A", 2);
      start(workers.back());
      for (Worker& w : workers) {
        if (w.argv[4] == "B" && w.argv[5] == "2") {
          w.process->Stop(SIGKILL);
          w.enabled = false;
        }
      }
      resized = true;
    }
    Worker& w = workers[rng() % workers.size()];
    if (!w.enabled) continue;
    w.process->Stop(SIGKILL);  // at whatever point it is
    ++w.kills;
    ++kills;
    if (rng() % 3 == 0) absl::SleepFor(absl::Milliseconds(100));
    start(w);
  }
  // Producers stop; consumers drain what committed.
  for (Worker& w : workers) {
    if (w.argv[1] == "producer") {
      w.process->Stop(SIGKILL);
      w.enabled = false;
    }
  }
  uint64_t depth = ~0ull;
  for (absl::Time end = absl::Now() + absl::Seconds(90); absl::Now() < end; absl::SleepFor(absl::Milliseconds(500))) {
    depth = Depth("events");
    if (depth == 0) break;
  }
  for (Worker& w : workers) {
    if (w.enabled) w.process->Stop(SIGKILL);
  }
  ASSERT_EQ(depth, 0u) << "consumers did not drain the queue; see " << logs;
  EXPECT_GE(kills, 20);

  // What the producers committed: "p<id>|<seq>|<write pointer>", each the payload of one
  // committed event. A seq has two write pointers when a killed producer's commit landed after
  // its restart had read `produced` (queue_worker.cc): two events, both to be processed.
  std::set<std::string> committed;
  int reused = 0;
  for (const auto& [row, cells] : ReadAll("produced")) {
    ASSERT_FALSE(cells.empty());
    for (const KeyValue& c : cells) committed.insert(absl::StrCat(row, "|", c.qualifier));
    if (cells.size() > 1) ++reused;
  }
  ASSERT_GT(committed.size(), 500u) << "too few events to say anything";
  std::map<std::string, std::set<std::string>> processed;  // group -> events
  for (const auto& [row, cells] : ReadAll("processed")) {
    const size_t bar = row.find('|');
    ASSERT_NE(bar, std::string::npos) << row;
    const std::string group = row.substr(0, bar), event = row.substr(bar + 1);
    EXPECT_EQ(cells.size(), 1u) << "event " << event << " processed " << cells.size() << " times by group " << group;
    EXPECT_TRUE(committed.count(event)) << "group " << group << " processed " << event
                                        << ", which no committed producer transaction enqueued";
    processed[group].insert(event);
  }
  for (const std::string group : {"A", "B"}) {
    std::vector<std::string> missing;
    std::set_difference(committed.begin(), committed.end(), processed[group].begin(), processed[group].end(),
                        std::back_inserter(missing));
    EXPECT_TRUE(missing.empty()) << "group " << group << " never processed " << missing.size() << " events, e.g. "
                                 << (missing.empty() ? "" : missing[0]);
  }
  std::printf("exactly-once: %zu events (%d seqs reused), %d SIGKILLs, processed A %zu B %zu\n", committed.size(),
              reused, kills, processed["A"].size(), processed["B"].size());
  if (HasFailure()) {
    // The workers' own account (their temporary directory goes with the test).
    std::ifstream f(logs);
    std::deque<std::string> tail;
    for (std::string line; std::getline(f, line);) {
      tail.push_back(line);
      if (tail.size() > 40) tail.pop_front();
    }
    for (const std::string& line : tail) std::printf("worker log: %s\n", line.c_str());
  }
}

}  // namespace
}  // namespace basalt::testing
