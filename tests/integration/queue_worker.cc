// A producer or consumer process of the exactly-once queue test (queue_test.cc), run until
// killed. Everything it does goes through transactions, so whatever point a SIGKILL hits, the
// store holds exactly the work of the transactions that committed:
//
//   queue_worker producer ADDRESS QUEUE ID
//     Each transaction enqueues 1-30 events "p<ID>|<seq>|<write pointer>" (key "k<seq % 7>")
//     and records each in table `produced` (row "p<ID>|<seq>", a column named after the write
//     pointer); one in ten is aborted on purpose. A restart continues after the last committed
//     seq. That can reuse a seq: a commit whose outcome the worker never learned (it was killed
//     while the commit was in flight, or the call failed) may land after the restart read the
//     table. Both transactions' events then count, under two columns of one row.
//   queue_worker consumer ADDRESS QUEUE GROUP INSTANCE
//     Each transaction dequeues up to 50 events and records each in table `processed` (row
//     "<GROUP>|<payload>", a column named after its own write pointer): an event processed by
//     two committed transactions would have two columns. One in twenty is aborted on purpose.
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "basalt/queue.h"
#include "basalt/transaction.h"

namespace {

using namespace basalt;

void Fail(const absl::Status& s, const char* what) {
  std::fprintf(stderr, "queue_worker: %s: %s\n", what, s.ToString().c_str());
}

// A batch's first failure: the call's, or a row's.
absl::Status FirstError(const absl::StatusOr<std::vector<absl::Status>>& rows) {
  if (!rows.ok()) return rows.status();
  for (const absl::Status& r : *rows) {
    if (!r.ok()) return r;
  }
  return absl::OkStatus();
}

// The first seq producer `id` has not committed.
absl::StatusOr<int64_t> NextSeq(Connection* conn, const std::string& id) {
  auto scanner = conn->GetTable("produced")->GetScanner(Scan().SetRowPrefix(id + "|"));
  if (!scanner.ok()) return scanner.status();
  int64_t next = 0;
  Result r;
  for (;;) {
    absl::StatusOr<bool> more = (*scanner)->Next(&r);
    if (!more.ok()) return more.status();
    if (!*more) return next;
    int64_t seq = 0;
    if (!absl::SimpleAtoi(r.row().substr(id.size() + 1), &seq)) return absl::DataLossError("bad produced row");
    next = std::max(next, seq + 1);
  }
}

int Producer(Connection* conn, const std::string& queue, const std::string& id) {
  std::mt19937_64 rng(static_cast<uint64_t>(::getpid()) * 7919 + absl::ToUnixNanos(absl::Now()));
  int64_t seq = -1;
  QueueProducer producer(conn, queue);
  for (;;) {
    if (seq < 0) {
      absl::StatusOr<int64_t> next = NextSeq(conn, id);
      if (!next.ok()) {
        Fail(next.status(), "reading produced");
        absl::SleepFor(absl::Milliseconds(100));
        continue;
      }
      seq = *next;
    }
    TransactionContext tx(conn);
    if (absl::Status s = tx.Start(); !s.ok()) {
      Fail(s, "start");
      absl::SleepFor(absl::Milliseconds(100));
      continue;
    }
    const int64_t wp = tx.snapshot()->write_pointer;
    const int n = 1 + static_cast<int>(rng() % 30);
    std::vector<QueueEvent> events;
    std::vector<RowMutationsBase> records;
    for (int i = 0; i < n; ++i) {
      const std::string name = absl::StrFormat("%s|%08d", id, seq + i);
      events.push_back(QueueEvent{absl::StrCat(name, "|", wp), absl::StrCat("k", (seq + i) % 7)});
      records.push_back(Put(name).Add("c", absl::StrCat(wp), "1"));  // empty is a delete
    }
    absl::Status s = producer.Enqueue(&tx, events);
    if (s.ok()) s = FirstError(tx.Batch("produced", records));
    if (!s.ok() || rng() % 10 == 0) {
      if (!s.ok()) Fail(s, "enqueue");
      (void)tx.Abort();
    } else if (absl::Status c = tx.Commit(); c.ok()) {
      seq += n;
    } else {
      Fail(c, "commit");
      if (!absl::IsAborted(c)) seq = -1;  // the outcome may be unknown: read it back
    }
    absl::SleepFor(absl::Milliseconds(20 + static_cast<int64_t>(rng() % 40)));
  }
}

int Consumer(Connection* conn, const std::string& queue, const std::string& group, int instance) {
  std::mt19937_64 rng(static_cast<uint64_t>(::getpid()) * 104729 + absl::ToUnixNanos(absl::Now()));
  QueueConsumer consumer(conn, queue, group, instance);
  for (;;) {
    TransactionContext tx(conn);
    if (absl::Status s = tx.Start(); !s.ok()) {
      Fail(s, "start");
      absl::SleepFor(absl::Milliseconds(100));
      continue;
    }
    absl::StatusOr<std::vector<DequeuedEvent>> events = consumer.Dequeue(&tx, 50);
    if (!events.ok()) {
      if (!absl::IsFailedPrecondition(events.status())) Fail(events.status(), "dequeue");
      (void)tx.Abort();
      absl::SleepFor(absl::Milliseconds(100));
      continue;
    }
    std::vector<RowMutationsBase> records;
    const std::string column = absl::StrCat(tx.snapshot()->write_pointer);
    for (const DequeuedEvent& e : *events) {
      records.push_back(Put(absl::StrCat(group, "|", e.payload)).Add("c", column, absl::StrCat(instance)));
    }
    absl::Status s;
    if (!records.empty()) s = FirstError(tx.Batch("processed", records));
    if (!s.ok() || rng() % 20 == 0) {
      if (!s.ok()) Fail(s, "record");
      (void)tx.Abort();
    } else if (absl::Status c = tx.Commit(); !c.ok() && !absl::IsAborted(c)) {
      Fail(c, "commit");
    }
    if (events->empty()) absl::SleepFor(absl::Milliseconds(30));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: queue_worker producer ADDRESS QUEUE ID | consumer ADDRESS QUEUE GROUP INSTANCE\n");
    return 2;
  }
  ConnectionOptions o;
  o.address = argv[2];
  o.timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<Connection>> conn = Connection::Open(o);
  if (!conn.ok()) {
    Fail(conn.status(), "connect");
    return 1;
  }
  const std::string mode = argv[1];
  if (mode == "producer") return Producer(conn->get(), argv[3], argv[4]);
  int instance = 0;
  if (mode == "consumer" && argc == 6 && absl::SimpleAtoi(argv[5], &instance)) {
    return Consumer(conn->get(), argv[3], argv[4], instance);
  }
  std::fprintf(stderr, "queue_worker: bad arguments\n");
  return 2;
}
