// Partitioned transactional queues with consumer groups and exactly-once delivery
// (docs/DESIGN.md §7), after CDAP's queue on HBase (Terence Yim's post, the seed
// transactional-queues.txt), on Basalt's transactions (basalt/transaction.h):
//
//   // once
//   BASALT_RETURN_IF_ERROR(basalt::CreateQueue(conn, "events"));
//   BASALT_RETURN_IF_ERROR(basalt::ConfigureQueue(conn, "events", {{"counter", 2}, {"indexer", 3}}));
//   // a producer: many events, one commit
//   basalt::QueueProducer producer(conn, "events");
//   basalt::TransactionContext tx(conn);
//   tx.Start();
//   producer.Enqueue(&tx, {{"payload 1"}, {"payload 2"}});
//   tx.Commit();
//   // consumer 0 of group "counter": what it writes and what it dequeued commit together
//   basalt::QueueConsumer consumer(conn, "events", "counter", 0);
//   tx.Start();
//   auto events = consumer.Dequeue(&tx, 500);
//   ... tx.Put("counts", ...) for each event ...
//   tx.Commit();  // Aborted: another consumer took one of them first; nothing happened
//
// A queue is a transactional table, pre-split into salt buckets so producers never hotspot one
// region. Each event is written once per consumer group, in a row
//   salt (1 byte) | group id (u16) | partition (u16) | producer write pointer (u64) | counter (u32)
// (big-endian), its payload and key in family "e" (e:p, e:k); a group's entries spread over the queue's
// partitions (round robin, or by hash of the event's key), and consumer i of a group of n owns
// the partitions p with p % n == i (a FIFO group's consumers all share every partition). A
// consumer dequeues with a scan of each partition it owns: committed entries only (its snapshot
// sees nothing else), oldest first, skipping those its group has consumed; it marks each one
// consumed (cell e:d of the entry's row) in its transaction. So the transaction's commit is
// the dequeue: exactly once. Two consumers that took the same entry (a FIFO group, or a resize
// under way) both wrote its e:d: the second to commit conflicts and aborts, as if it had never
// dequeued it. Producers write rows no one else writes: they never conflict. A major compaction
// removes the entries whose consumed mark every snapshot sees (the server's eviction, CDAP's).
//
// Differences from CDAP: a group's size is a partition mapping over a fixed number of
// partitions, so producers need not know it, and a resize (ConfigureQueue) is one transaction:
// consumers read the configuration in every dequeue's transaction, and the conflict on s:done
// keeps an entry from being consumed twice while old and new owners overlap, so no pause is
// needed.
//
// Thread-safety: a producer or consumer is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "basalt/client.h"
#include "basalt/queue_layout.h"
#include "basalt/transaction.h"

namespace basalt {

enum class Partitioning : uint8_t {
  kRoundRobin,  // each producer spreads its events over the partitions in turn
  kHash,        // by the event's key: one key, one partition, one consumer (in order)
  kFifo,        // every consumer of the group takes from every partition
};

struct ConsumerGroup {
  std::string name;  // 1-64 bytes of [A-Za-z0-9_.-]
  int size = 1;      // consumers 0..size-1
  Partitioning partitioning = Partitioning::kRoundRobin;
};

struct QueueOptions {
  int partitions = 12;   // per group (a group of n consumers uses at most this many): 1..4096
  int salt_buckets = 4;  // regions the queue's table is pre-split into: 1..255
};

struct QueueConfig {
  QueueOptions options;
  std::vector<std::pair<ConsumerGroup, uint16_t>> groups;  // with their ids
};

struct QueueEvent {
  std::string payload;
  std::string key = {};  // kHash groups partition by it
};

struct DequeuedEvent {
  std::string payload;
  std::string key;
  int64_t write_pointer = 0;  // its producer transaction's
  uint32_t counter = 0;       // its position in that transaction
  uint16_t partition = 0;
};

// Creates the queue's table (transactional, pre-split) and its configuration (no groups).
absl::Status CreateQueue(Connection* connection, const std::string& name, const QueueOptions& options = {});
// Sets the consumer groups, in one transaction (retried on conflict): a group named before
// keeps its id (a resize), a new one gets the next id and sees the events enqueued from then
// on, one not named is removed (its entries are no one's). InvalidArgument for a bad name or
// size.
absl::Status ConfigureQueue(Connection* connection, const std::string& name, const std::vector<ConsumerGroup>& groups);
absl::StatusOr<QueueConfig> DescribeQueue(Connection* connection, const std::string& name);

class QueueProducer {
 public:
  QueueProducer(Connection* connection, std::string queue);
  // Writes each event for every group, in `tx` (its commit publishes them all at once).
  // FailedPrecondition without a transaction in progress; NotFound for a missing queue.
  absl::Status Enqueue(TransactionContext* tx, const std::vector<QueueEvent>& events);

 private:
  const std::string queue_;
  uint64_t round_robin_;
  int64_t write_pointer_ = 0;  // of the transaction counter_ counts in
  uint32_t counter_ = 0;
};

class QueueConsumer {
 public:
  QueueConsumer(Connection* connection, std::string queue, std::string group, int instance);
  // Up to `max` entries of its partitions that its group has not consumed, marked consumed in
  // `tx`. FailedPrecondition when the group (as `tx` sees it) has no consumer `instance` (it
  // shrank): such a consumer should wait. NotFound for a missing queue or group.
  absl::StatusOr<std::vector<DequeuedEvent>> Dequeue(TransactionContext* tx, int max);

 private:
  const std::string queue_, group_;
  const int instance_;
  uint32_t next_partition_ = 0;  // where the next dequeue starts, for fairness
  // (group id, partition) -> the row its scans start from: every entry before it is consumed,
  // or hidden for good (its transaction invalid), in every snapshot from now on.
  std::map<std::pair<uint16_t, int>, std::string> floors_;
};

struct ConsumerStatus {
  int instance = 0;
  uint64_t depth = 0;          // entries of its partitions its group has not consumed
  int64_t oldest_age_ms = 0;   // age of the oldest of them (0: none)
  uint64_t consumed = 0;       // entries of its partitions consumed and not yet removed
};

struct GroupStatus {
  ConsumerGroup group;
  std::vector<ConsumerStatus> consumers;
};

// Per group and consumer, what has committed now (a read in a transaction of its own).
absl::StatusOr<std::vector<GroupStatus>> GetQueueStatus(Connection* connection, const std::string& name);

}  // namespace basalt
