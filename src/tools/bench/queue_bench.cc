// `basalt-bench server queue`: the transactional queue (basalt/queue.h) at full speed, as the
// seed's CDAP figure was measured: producer threads enqueue batches of events, each batch one
// transaction, and consumer threads of one or more groups dequeue batches, each dequeue and its
// processing one transaction, for --seconds; then the producers stop and the consumers drain
// what is left. Reports events/s produced (committed) and consumed (per group), conflicts, and
// the end-to-end latency from the enqueue call to the commit of the dequeue that took the event.
// Every client thread has its own Connection (its own gRPC channel), as separate processes would.
#include <atomic>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "basalt/queue.h"
#include "basalt/transaction.h"
#include "common/coding.h"
#include "src/tools/bench/bench_util.h"
#include "src/tools/bench/histogram.h"

namespace basalt::bench {
namespace {

using Clock = std::chrono::steady_clock;

int Fail(const absl::Status& s) {
  GlobalProgress().Done();
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

uint64_t NowNanos() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

}  // namespace

int RunServerQueue(const Flags& flags, Report* report) {
  ConnectionOptions co;
  co.address = flags.Str("server", "");
  const std::string queue = flags.Str("queue", "bench_queue");
  const int producers = static_cast<int>(flags.Int("producers", 3));
  const int consumers = static_cast<int>(flags.Int("consumers", 10));
  const int groups = static_cast<int>(flags.Int("groups", 1));
  const int payload = static_cast<int>(flags.Int("payload", 1024));
  const int batch = static_cast<int>(flags.Int("batch", 500));
  const int dequeue_batch = static_cast<int>(flags.Int("dequeue_batch", batch));
  const int batches_per_tx = static_cast<int>(flags.Int("batches_per_tx", 1));
  const double seconds = flags.Double("seconds", 10);
  const int partitions = static_cast<int>(flags.Int("partitions", 0));
  const int buckets = static_cast<int>(flags.Int("salt_buckets", 4));
  const std::string partitioning = flags.Str("partitioning", "round_robin");
  const bool keep = flags.Bool("keep");  // do not drop the queue's table at the end
  // Then the same producers' events as plain batched Puts, for the ratio.
  const bool baseline = !flags.Bool("no_baseline");
  flags.RefuseUnused();
  if (co.address.empty()) return Fail(absl::InvalidArgumentError("--server=HOST:PORT is required"));
  if (producers < 1 || groups < 1 || consumers < groups || payload < 16 || batch < 1 || dequeue_batch < 1 ||
      batches_per_tx < 1 || seconds <= 0) {
    return Fail(absl::InvalidArgumentError(
        "need --producers >= 1, --consumers >= --groups >= 1, --payload >= 16, --batch, --dequeue_batch, "
        "--batches_per_tx >= 1, --seconds > 0"));
  }
  Partitioning part = Partitioning::kRoundRobin;
  if (partitioning == "hash") {
    part = Partitioning::kHash;
  } else if (partitioning == "fifo") {
    part = Partitioning::kFifo;
  } else if (partitioning != "round_robin") {
    return Fail(absl::InvalidArgumentError("--partitioning is round_robin, hash or fifo"));
  }
  auto open = [&]() { return Connection::Open(co); };
  auto admin_conn = open();
  if (!admin_conn.ok()) return Fail(admin_conn.status());
  Connection* admin = admin_conn->get();
  // Consumers spread over the groups; each group's partitions a multiple of its size.
  std::vector<ConsumerGroup> config;
  int max_size = 0;
  for (int g = 0; g < groups; ++g) {
    ConsumerGroup cg;
    cg.name = absl::StrCat("g", g);
    cg.size = consumers / groups + (g < consumers % groups ? 1 : 0);
    cg.partitioning = part;
    max_size = std::max(max_size, cg.size);
    config.push_back(cg);
  }
  QueueOptions qo;
  qo.partitions = partitions > 0 ? partitions : max_size * 2;
  qo.salt_buckets = buckets;
  (void)admin->GetAdmin()->DisableTable(queue);
  (void)admin->GetAdmin()->DropTable(queue);
  if (absl::Status s = CreateQueue(admin, queue, qo); !s.ok()) return Fail(s);
  if (absl::Status s = ConfigureQueue(admin, queue, config); !s.ok()) return Fail(s);

  std::atomic<bool> stop_producing{false}, stop_consuming{false};
  std::atomic<uint64_t> produced{0}, producer_conflicts{0}, consumer_conflicts{0}, errors{0};
  std::vector<std::atomic<uint64_t>> consumed(groups);
  std::vector<std::unique_ptr<LatencyHistogram>> latency;  // per consumer thread
  std::string first_error;
  std::mutex error_mu;
  auto note_error = [&](const absl::Status& s) {
    errors.fetch_add(1);
    std::lock_guard<std::mutex> l(error_mu);
    if (first_error.empty()) first_error = s.ToString();
  };
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  std::atomic<double> producing_seconds{0};
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      auto conn = open();
      if (!conn.ok()) return note_error(conn.status());
      QueueProducer producer(conn->get(), queue);
      std::vector<QueueEvent> events(batch);
      for (int i = 0; i < batch; ++i) {
        events[i].payload.assign(payload, static_cast<char>('a' + p));
        events[i].key = absl::StrCat(p, ":", i);
      }
      while (!stop_producing.load()) {
        TransactionContext tx(conn->get());
        if (absl::Status s = tx.Start(); !s.ok()) return note_error(s);
        absl::Status s;
        for (int b = 0; b < batches_per_tx && s.ok(); ++b) {
          const uint64_t now = NowNanos();
          for (QueueEvent& e : events) EncodeFixed64(e.payload.data(), now);  // for end-to-end latency
          s = producer.Enqueue(&tx, events);
        }
        if (s.ok()) s = tx.Commit();
        if (s.ok()) {
          produced.fetch_add(static_cast<uint64_t>(batch) * batches_per_tx);
        } else if (absl::IsAborted(s)) {
          producer_conflicts.fetch_add(1);
        } else {
          note_error(s);
          (void)tx.Abort();
        }
      }
    });
  }
  int c = 0;
  for (int g = 0; g < groups; ++g) {
    for (int i = 0; i < config[g].size; ++i, ++c) {
      latency.push_back(std::make_unique<LatencyHistogram>());
      LatencyHistogram* hist = latency.back().get();
      threads.emplace_back([&, g, i, hist] {
        auto conn = open();
        if (!conn.ok()) return note_error(conn.status());
        QueueConsumer consumer(conn->get(), queue, config[g].name, i);
        while (!stop_consuming.load()) {
          TransactionContext tx(conn->get());
          if (absl::Status s = tx.Start(); !s.ok()) return note_error(s);
          absl::StatusOr<std::vector<DequeuedEvent>> events = consumer.Dequeue(&tx, dequeue_batch);
          if (!events.ok()) {
            note_error(events.status());
            (void)tx.Abort();
            continue;
          }
          absl::Status s = tx.Commit();
          if (absl::IsAborted(s)) {
            consumer_conflicts.fetch_add(1);
            continue;
          }
          if (!s.ok()) {
            note_error(s);
            continue;
          }
          const uint64_t now = NowNanos();
          for (const DequeuedEvent& e : *events) hist->Record(now - DecodeFixed64(e.payload.data()));
          consumed[g].fetch_add(events->size());
          if (events->empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      });
    }
  }
  // Produce for --seconds, then let the consumers drain (at most as long again).
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t least = ~0ull;
    for (auto& n : consumed) least = std::min(least, n.load());
    if (!stop_producing.load() && elapsed >= seconds) {
      stop_producing = true;
      producing_seconds = elapsed;
    }
    GlobalProgress().Update(absl::StrCat("queue: ", static_cast<int>(elapsed), " s, produced ", produced.load(),
                                         ", consumed (least group) ", least, ", errors ", errors.load()));
    if (stop_producing.load() && (least >= produced.load() || elapsed >= 2 * seconds + 30)) break;
  }
  // The producers have stopped: what they committed is final once they have joined.
  const double total_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  stop_consuming = true;
  for (std::thread& t : threads) t.join();
  GlobalProgress().Done();
  if (!first_error.empty()) std::fprintf(stderr, "first error (of %llu): %s\n",
                                         static_cast<unsigned long long>(errors.load()), first_error.c_str());
  LatencyHistogram all;
  for (auto& h : latency) all.Merge(*h);
  report->title = "transactional queue (basalt/queue.h)";
  const double prod_rate = static_cast<double>(produced.load()) / producing_seconds.load();
  for (int g = 0; g < groups; ++g) {
    report->records.push_back({Text("group", config[g].name), Num("consumers", config[g].size),
                               Num("consumed", static_cast<double>(consumed[g].load())),
                               Num("consumed_per_s", static_cast<double>(consumed[g].load()) / total_seconds)});
  }
  uint64_t least = ~0ull;
  for (auto& n : consumed) least = std::min(least, n.load());
  report->summary = {Num("producers", producers), Num("consumers", consumers), Num("groups", groups),
                     Num("payload_bytes", payload), Num("batch", batch), Num("partitions", qo.partitions),
                     Num("produced", static_cast<double>(produced.load())), Num("produced_per_s", prod_rate),
                     Num("consumed_per_s_each_group", static_cast<double>(least) / total_seconds),
                     Num("e2e_p50_ms", all.PercentileNanos(0.5) / 1e6, 1),
                     Num("e2e_p99_ms", all.PercentileNanos(0.99) / 1e6, 1),
                     Num("producer_conflicts", static_cast<double>(producer_conflicts.load())),
                     Num("consumer_conflicts", static_cast<double>(consumer_conflicts.load())),
                     Num("errors", static_cast<double>(errors.load()))};
  if (!keep) {
    (void)admin->GetAdmin()->DisableTable(queue);
    (void)admin->GetAdmin()->DropTable(queue);
  }
  // The floor, in the same run: the same producers writing the same events as plain batched
  // Puts (no transaction, no consumer, one row per event) into a table of as many regions.
  if (baseline && least >= produced.load()) {
    const std::string plain = queue + "_plain";
    (void)admin->GetAdmin()->DisableTable(plain);
    (void)admin->GetAdmin()->DropTable(plain);
    TableInfo t;
    t.name = plain;
    FamilySettings f;
    f.name = "e";
    t.families.push_back(f);
    std::vector<std::string> splits;
    for (int s = 1; s < buckets; ++s) splits.emplace_back(1, static_cast<char>(s));
    if (absl::Status s = admin->GetAdmin()->CreateTable(t, splits); !s.ok()) return Fail(s);
    std::atomic<uint64_t> written{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int p = 0; p < producers; ++p) {
      writers.emplace_back([&, p] {
        auto conn = open();
        if (!conn.ok()) return note_error(conn.status());
        auto table = (*conn)->GetTable(plain);
        std::string value(payload, static_cast<char>('a' + p));
        for (uint64_t n = 0; !stop.load(); ++n) {
          std::vector<RowMutationsBase> rows;
          rows.reserve(batch);
          for (int i = 0; i < batch; ++i) {
            std::string row(1, static_cast<char>((n * batch + i) % buckets));
            absl::StrAppend(&row, p, ":", n, ":", i);
            rows.push_back(Put(std::move(row)).Add("e", "p", value));
          }
          auto rs = table->Batch(rows);
          if (!rs.ok()) return note_error(rs.status());
          written.fetch_add(batch);
        }
      });
    }
    const auto b0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
    for (std::thread& w : writers) w.join();
    const double plain_rate = static_cast<double>(written.load()) / std::chrono::duration<double>(Clock::now() - b0).count();
    report->summary.push_back(Num("plain_batched_puts_per_s", plain_rate));
    report->summary.push_back(Num("produced_vs_plain_puts", prod_rate / plain_rate, 2));
    (void)admin->GetAdmin()->DisableTable(plain);
    (void)admin->GetAdmin()->DropTable(plain);
  }
  if (least < produced.load()) {
    return Fail(absl::DeadlineExceededError(
        absl::StrCat("the consumers did not drain the queue: ", least, " of ", produced.load(), " events")));
  }
  return errors.load() == 0 ? 0 : Fail(absl::InternalError(first_error));
}

}  // namespace basalt::bench
