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
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "basalt/queue.h"
#include "basalt/transaction.h"
#include "common/coding.h"
#include "common/status.h"
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

// The flags of `server queue`, validated (ParseQueueFlags).
struct QueueBenchOptions {
  ConnectionOptions conn;
  std::string queue;
  int producers = 0, consumers = 0, groups = 0;
  int payload = 0;         // bytes per event (>= 16: the first 8 are the enqueue time)
  int batch = 0;           // events per Enqueue
  int dequeue_batch = 0;   // events per Dequeue at most
  int batches_per_tx = 0;  // Enqueues per producer transaction
  double seconds = 0;      // of producing; the baseline's run is as long
  int partitions = 0;      // 0: twice the largest group's size
  int salt_buckets = 0;
  Partitioning partitioning = Partitioning::kRoundRobin;
  bool keep = false;      // do not drop the queue's table at the end
  bool baseline = false;  // then the same producers' events as plain batched Puts, for the ratio
};

// Reads the flags (refusing any other) and checks them; InvalidArgument names what is wrong.
absl::StatusOr<QueueBenchOptions> ParseQueueFlags(const Flags& flags) {
  QueueBenchOptions o;
  o.conn.address = flags.Str("server", "");
  o.queue = flags.Str("queue", "bench_queue");
  o.producers = static_cast<int>(flags.Int("producers", 3));
  o.consumers = static_cast<int>(flags.Int("consumers", 10));
  o.groups = static_cast<int>(flags.Int("groups", 1));
  o.payload = static_cast<int>(flags.Int("payload", 1024));
  o.batch = static_cast<int>(flags.Int("batch", 500));
  o.dequeue_batch = static_cast<int>(flags.Int("dequeue_batch", o.batch));
  o.batches_per_tx = static_cast<int>(flags.Int("batches_per_tx", 1));
  o.seconds = flags.Double("seconds", 10);
  o.partitions = static_cast<int>(flags.Int("partitions", 0));
  o.salt_buckets = static_cast<int>(flags.Int("salt_buckets", 4));
  const std::string partitioning = flags.Str("partitioning", "round_robin");
  o.keep = flags.Bool("keep");
  o.baseline = !flags.Bool("no_baseline");
  flags.RefuseUnused();
  if (o.conn.address.empty()) return absl::InvalidArgumentError("--server=HOST:PORT is required");
  if (o.producers < 1 || o.groups < 1 || o.consumers < o.groups || o.payload < 16 || o.batch < 1 ||
      o.dequeue_batch < 1 || o.batches_per_tx < 1 || o.seconds <= 0) {
    return absl::InvalidArgumentError(
        "need --producers >= 1, --consumers >= --groups >= 1, --payload >= 16, --batch, --dequeue_batch, "
        "--batches_per_tx >= 1, --seconds > 0");
  }
  if (partitioning == "hash") {
    o.partitioning = Partitioning::kHash;
  } else if (partitioning == "fifo") {
    o.partitioning = Partitioning::kFifo;
  } else if (partitioning != "round_robin") {
    return absl::InvalidArgumentError("--partitioning is round_robin, hash or fifo");
  }
  return o;
}

// Disables and drops `table`, ignoring errors (it need not exist).
void DropTableIfAny(Connection* admin, const std::string& table) {
  (void)admin->GetAdmin()->DisableTable(table);
  (void)admin->GetAdmin()->DropTable(table);
}

// Creates the queue afresh (dropping any table of its name) with the consumers spread over the
// groups, each group's partitions a multiple of its size. The groups into *config, the queue's
// options into *qo.
absl::Status CreateBenchQueue(Connection* admin, const QueueBenchOptions& o, std::vector<ConsumerGroup>* config,
                              QueueOptions* qo) {
  int max_size = 0;
  for (int g = 0; g < o.groups; ++g) {
    ConsumerGroup cg;
    cg.name = absl::StrCat("g", g);
    cg.size = o.consumers / o.groups + (g < o.consumers % o.groups ? 1 : 0);
    cg.partitioning = o.partitioning;
    max_size = std::max(max_size, cg.size);
    config->push_back(cg);
  }
  qo->partitions = o.partitions > 0 ? o.partitions : max_size * 2;
  qo->salt_buckets = o.salt_buckets;
  DropTableIfAny(admin, o.queue);
  BASALT_RETURN_IF_ERROR(CreateQueue(admin, o.queue, *qo));
  return ConfigureQueue(admin, o.queue, *config);
}

// What the client threads of one run count, shared by them all.
struct QueueRun {
  explicit QueueRun(int groups) : consumed(groups) {}

  // Counts an error; the first one is kept for the end.
  void NoteError(const absl::Status& s) {
    errors.fetch_add(1);
    std::lock_guard<std::mutex> l(error_mu);
    if (first_error.empty()) first_error = s.ToString();
  }

  // Events consumed by the group that consumed the fewest.
  uint64_t LeastConsumed() const {
    uint64_t least = ~0ull;
    for (auto& n : consumed) least = std::min(least, n.load());
    return least;
  }

  std::atomic<bool> stop_producing{false}, stop_consuming{false};
  std::atomic<uint64_t> produced{0}, producer_conflicts{0}, consumer_conflicts{0}, errors{0};
  std::vector<std::atomic<uint64_t>> consumed;               // per group
  std::vector<std::unique_ptr<LatencyHistogram>> latency;  // per consumer thread
  double producing_seconds = 0;  // from the start until the producers were told to stop
  double total_seconds = 0;      // from the start until the consumers were told to stop
  std::mutex error_mu;
  std::string first_error;  // read once the threads have joined
};

// Producer thread p: batches of events, batches_per_tx Enqueues a transaction, each event's
// payload starting with its enqueue time, until run->stop_producing.
void ProduceEvents(const QueueBenchOptions& o, int p, QueueRun* run) {
  auto conn = Connection::Open(o.conn);
  if (!conn.ok()) return run->NoteError(conn.status());
  QueueProducer producer(conn->get(), o.queue);
  std::vector<QueueEvent> events(o.batch);
  for (int i = 0; i < o.batch; ++i) {
    events[i].payload.assign(o.payload, static_cast<char>('a' + p));
    events[i].key = absl::StrCat(p, ":", i);
  }
  while (!run->stop_producing.load()) {
    TransactionContext tx(conn->get());
    if (absl::Status s = tx.Start(); !s.ok()) return run->NoteError(s);
    absl::Status s;
    for (int b = 0; b < o.batches_per_tx && s.ok(); ++b) {
      const uint64_t now = NowNanos();
      for (QueueEvent& e : events) EncodeFixed64(e.payload.data(), now);  // for end-to-end latency
      s = producer.Enqueue(&tx, events);
    }
    if (s.ok()) s = tx.Commit();
    if (s.ok()) {
      run->produced.fetch_add(static_cast<uint64_t>(o.batch) * o.batches_per_tx);
    } else if (absl::IsAborted(s)) {
      run->producer_conflicts.fetch_add(1);
    } else {
      run->NoteError(s);
      (void)tx.Abort();
    }
  }
}

// Consumer `instance` of group g (named `group`): one transaction per Dequeue, recording each
// event's end-to-end latency into *hist at its commit, until run->stop_consuming.
void ConsumeEvents(const QueueBenchOptions& o, const std::string& group, int g, int instance, LatencyHistogram* hist,
                   QueueRun* run) {
  auto conn = Connection::Open(o.conn);
  if (!conn.ok()) return run->NoteError(conn.status());
  QueueConsumer consumer(conn->get(), o.queue, group, instance);
  while (!run->stop_consuming.load()) {
    TransactionContext tx(conn->get());
    if (absl::Status s = tx.Start(); !s.ok()) return run->NoteError(s);
    absl::StatusOr<std::vector<DequeuedEvent>> events = consumer.Dequeue(&tx, o.dequeue_batch);
    if (!events.ok()) {
      run->NoteError(events.status());
      (void)tx.Abort();
      continue;
    }
    absl::Status s = tx.Commit();
    if (absl::IsAborted(s)) {
      run->consumer_conflicts.fetch_add(1);
      continue;
    }
    if (!s.ok()) {
      run->NoteError(s);
      continue;
    }
    const uint64_t now = NowNanos();
    for (const DequeuedEvent& e : *events) hist->Record(now - DecodeFixed64(e.payload.data()));
    run->consumed[g].fetch_add(events->size());
    if (events->empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// The measured run: the producers and every group's consumers, each on a thread with its own
// Connection; produces for --seconds, then lets the consumers drain (at most as long again plus
// 30 s). Returns once every thread has joined (the error, if any, printed).
void RunQueueClients(const QueueBenchOptions& o, const std::vector<ConsumerGroup>& config, QueueRun* run) {
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int p = 0; p < o.producers; ++p) {
    threads.emplace_back([&o, p, run] { ProduceEvents(o, p, run); });
  }
  for (int g = 0; g < o.groups; ++g) {
    for (int i = 0; i < config[g].size; ++i) {
      run->latency.push_back(std::make_unique<LatencyHistogram>());
      LatencyHistogram* hist = run->latency.back().get();
      threads.emplace_back([&o, &config, g, i, hist, run] { ConsumeEvents(o, config[g].name, g, i, hist, run); });
    }
  }
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t least = run->LeastConsumed();
    if (!run->stop_producing.load() && elapsed >= o.seconds) {
      run->stop_producing = true;
      run->producing_seconds = elapsed;
    }
    GlobalProgress().Update(absl::StrCat("queue: ", static_cast<int>(elapsed), " s, produced ", run->produced.load(),
                                         ", consumed (least group) ", least, ", errors ", run->errors.load()));
    if (run->stop_producing.load() && (least >= run->produced.load() || elapsed >= 2 * o.seconds + 30)) break;
  }
  // The producers have stopped: what they committed is final once they have joined.
  run->total_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  run->stop_consuming = true;
  for (std::thread& t : threads) t.join();
  GlobalProgress().Done();
  if (!run->first_error.empty()) {
    std::fprintf(stderr, "first error (of %llu): %s\n", static_cast<unsigned long long>(run->errors.load()),
                 run->first_error.c_str());
  }
}

// The run's figures: a record per group, then the summary.
void ReportQueueRun(const QueueBenchOptions& o, const std::vector<ConsumerGroup>& config, const QueueOptions& qo,
                    const QueueRun& run, Report* report) {
  LatencyHistogram all;
  for (auto& h : run.latency) all.Merge(*h);
  report->title = "transactional queue (basalt/queue.h)";
  const double prod_rate = static_cast<double>(run.produced.load()) / run.producing_seconds;
  for (int g = 0; g < o.groups; ++g) {
    report->records.push_back({Text("group", config[g].name), Num("consumers", config[g].size),
                               Num("consumed", static_cast<double>(run.consumed[g].load())),
                               Num("consumed_per_s", static_cast<double>(run.consumed[g].load()) / run.total_seconds)});
  }
  const uint64_t least = run.LeastConsumed();
  report->summary = {Num("producers", o.producers), Num("consumers", o.consumers), Num("groups", o.groups),
                     Num("payload_bytes", o.payload), Num("batch", o.batch), Num("partitions", qo.partitions),
                     Num("produced", static_cast<double>(run.produced.load())), Num("produced_per_s", prod_rate),
                     Num("consumed_per_s_each_group", static_cast<double>(least) / run.total_seconds),
                     Num("e2e_p50_ms", all.PercentileNanos(0.5) / 1e6, 1),
                     Num("e2e_p99_ms", all.PercentileNanos(0.99) / 1e6, 1),
                     Num("producer_conflicts", static_cast<double>(run.producer_conflicts.load())),
                     Num("consumer_conflicts", static_cast<double>(run.consumer_conflicts.load())),
                     Num("errors", static_cast<double>(run.errors.load()))};
}

// The floor, in the same run: the same producers writing the same events as plain batched
// Puts (no transaction, no consumer, one row per event) into a table of as many regions, for
// --seconds. Adds its rate and the queue's ratio to it to the summary; the writers' errors go
// to *run. An error only when the table cannot be created.
absl::Status AddPlainPutsFloor(Connection* admin, const QueueBenchOptions& o, QueueRun* run, Report* report) {
  const std::string plain = o.queue + "_plain";
  DropTableIfAny(admin, plain);
  TableInfo t;
  t.name = plain;
  FamilySettings f;
  f.name = "e";
  t.families.push_back(f);
  std::vector<std::string> splits;
  for (int s = 1; s < o.salt_buckets; ++s) splits.emplace_back(1, static_cast<char>(s));
  BASALT_RETURN_IF_ERROR(admin->GetAdmin()->CreateTable(t, splits));
  std::atomic<uint64_t> written{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int p = 0; p < o.producers; ++p) {
    writers.emplace_back([&, p] {
      auto conn = Connection::Open(o.conn);
      if (!conn.ok()) return run->NoteError(conn.status());
      auto table = (*conn)->GetTable(plain);
      std::string value(o.payload, static_cast<char>('a' + p));
      for (uint64_t n = 0; !stop.load(); ++n) {
        std::vector<RowMutationsBase> rows;
        rows.reserve(o.batch);
        for (int i = 0; i < o.batch; ++i) {
          std::string row(1, static_cast<char>((n * o.batch + i) % o.salt_buckets));
          absl::StrAppend(&row, p, ":", n, ":", i);
          rows.push_back(Put(std::move(row)).Add("e", "p", value));
        }
        auto rs = table->Batch(rows);
        if (!rs.ok()) return run->NoteError(rs.status());
        written.fetch_add(o.batch);
      }
    });
  }
  const auto b0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  for (std::thread& w : writers) w.join();
  const double plain_rate = static_cast<double>(written.load()) / std::chrono::duration<double>(Clock::now() - b0).count();
  const double prod_rate = static_cast<double>(run->produced.load()) / run->producing_seconds;
  report->summary.push_back(Num("plain_batched_puts_per_s", plain_rate));
  report->summary.push_back(Num("produced_vs_plain_puts", prod_rate / plain_rate, 2));
  DropTableIfAny(admin, plain);
  return absl::OkStatus();
}

}  // namespace

int RunServerQueue(const Flags& flags, Report* report) {
  absl::StatusOr<QueueBenchOptions> o = ParseQueueFlags(flags);
  if (!o.ok()) return Fail(o.status());
  auto admin_conn = Connection::Open(o->conn);
  if (!admin_conn.ok()) return Fail(admin_conn.status());
  Connection* admin = admin_conn->get();
  std::vector<ConsumerGroup> config;
  QueueOptions qo;
  if (absl::Status s = CreateBenchQueue(admin, *o, &config, &qo); !s.ok()) return Fail(s);

  QueueRun run(o->groups);
  RunQueueClients(*o, config, &run);
  ReportQueueRun(*o, config, qo, run, report);
  if (!o->keep) DropTableIfAny(admin, o->queue);
  const uint64_t least = run.LeastConsumed();
  if (o->baseline && least >= run.produced.load()) {
    if (absl::Status s = AddPlainPutsFloor(admin, *o, &run, report); !s.ok()) return Fail(s);
  }
  if (least < run.produced.load()) {
    return Fail(absl::DeadlineExceededError(
        absl::StrCat("the consumers did not drain the queue: ", least, " of ", run.produced.load(), " events")));
  }
  return run.errors.load() == 0 ? 0 : Fail(absl::InternalError(run.first_error));
}

}  // namespace basalt::bench
