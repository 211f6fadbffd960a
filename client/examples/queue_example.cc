// README.md's "Queues" example, whole: a producer enqueues page clicks in one transaction, and
// the two consumers of group "counter" count them, each dequeue committed with the counts it
// wrote (exactly once). Built with the client library; tests/integration/queue_test.cc runs it.
//
//   queue_example HOST:PORT
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "basalt/queue.h"
#include "basalt/transaction.h"

namespace {

absl::Status Run(basalt::Connection* conn) {
  // Once: the queue and its consumer group, and a transactional table for the counts.
  absl::Status s = basalt::CreateQueue(conn, "clicks");
  if (s.ok()) s = basalt::ConfigureQueue(conn, "clicks", {{"counter", 2}});
  if (!s.ok()) return s;
  basalt::TableInfo counts;
  counts.name = "click_counts";
  counts.transactional = true;
  counts.families.push_back(basalt::FamilySettings{});
  counts.families.back().name = "c";
  if (s = conn->GetAdmin()->CreateTable(counts); !s.ok()) return s;

  // A producer: many events, one commit (nothing is visible before it).
  basalt::QueueProducer producer(conn, "clicks");
  basalt::TransactionContext tx(conn);
  if (s = tx.Start(); !s.ok()) return s;
  if (s = producer.Enqueue(&tx, {{"home"}, {"cart"}, {"home"}}); !s.ok()) return s;
  if (s = tx.Commit(); !s.ok()) return s;

  // The consumers: each event's count and its dequeue commit together. Aborted means another
  // transaction got there first: nothing happened, so take the next batch.
  for (int consumer = 0; consumer < 2; ++consumer) {
    basalt::QueueConsumer queue(conn, "clicks", "counter", consumer);
    for (bool more = true; more;) {
      if (s = tx.Start(); !s.ok()) return s;
      absl::StatusOr<std::vector<basalt::DequeuedEvent>> events = queue.Dequeue(&tx, 100);
      if (!events.ok()) return events.status();
      more = !events->empty();
      for (const basalt::DequeuedEvent& e : *events) {
        absl::StatusOr<basalt::Result> row = tx.Get("click_counts", basalt::Get(e.payload));
        if (!row.ok()) return row.status();
        int64_t n = 0;
        (void)absl::SimpleAtoi(std::string(row->Value("c", "n").value_or("0")), &n);
        s = tx.Put("click_counts", basalt::Put(e.payload).Add("c", "n", absl::StrCat(n + 1)));
        if (!s.ok()) return s;
      }
      if (s = tx.Commit(); !s.ok() && !absl::IsAborted(s)) return s;
    }
  }

  // Outside a transaction a standalone server reads what has committed.
  auto table = conn->GetTable("click_counts");
  for (const char* page : {"home", "cart"}) {
    absl::StatusOr<basalt::Result> row = table->Get(basalt::Get(page));
    if (!row.ok()) return row.status();
    std::printf("%s %s\n", page, std::string(row->Value("c", "n").value_or("0")).c_str());
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  basalt::ConnectionOptions options;
  options.address = argc > 1 ? argv[1] : "127.0.0.1:16020";
  absl::StatusOr<std::unique_ptr<basalt::Connection>> conn = basalt::Connection::Open(options);
  absl::Status s = conn.ok() ? Run(conn->get()) : conn.status();
  if (!s.ok()) {
    std::fprintf(stderr, "queue_example: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
