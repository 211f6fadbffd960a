// The shell's queue commands (docs/DESIGN.md §7).
#include "src/tools/shell/command_args.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "basalt/queue.h"
#include "basalt/transaction.h"
#include "common/status.h"
#include "src/tools/shell/escape.h"

namespace basalt::shell::internal {

namespace {

// ---------------------------------------------------------------------------------------------
// Queues (basalt/queue.h): Basalt's, after CDAP's transactional queue on HBase.

absl::StatusOr<Partitioning> PartitioningArg(const Ctx& c, const Value& v) {
  const absl::StatusOr<std::string> p = Enum(c, v, "PARTITIONING", {"ROUND_ROBIN", "HASH", "FIFO"});
  if (!p.ok()) return p.status();
  if (*p == "HASH") return Partitioning::kHash;
  if (*p == "FIFO") return Partitioning::kFifo;
  return Partitioning::kRoundRobin;
}

const char* PartitioningText(Partitioning p) {
  switch (p) {
    case Partitioning::kHash: return "HASH";
    case Partitioning::kFifo: return "FIFO";
    default: return "ROUND_ROBIN";
  }
}

}  // namespace

absl::StatusOr<Reply> CmdCreateQueue(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  QueueOptions o;
  if (c.cmd.args.size() > 1) {
    const Value& h = c.cmd.args[1];
    if (!h.is_hash()) return ArgError(c, h, "a hash: {PARTITIONS => 12, SALT_BUCKETS => 4}");
    BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"PARTITIONS", "SALT_BUCKETS"}));
    if (const Value* v = h.Find("PARTITIONS")) {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, *v, "PARTITIONS", 1, 4096));
      o.partitions = static_cast<int>(n);
    }
    if (const Value* v = h.Find("SALT_BUCKETS")) {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, *v, "SALT_BUCKETS", 1, 255));
      o.salt_buckets = static_cast<int>(n);
    }
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, name, CreateQueue(c.conn, name, o)));
  Reply r = Done(c, name);
  r.messages.push_back(absl::StrCat("Created queue ", ToStringBinary(name), " (", o.partitions, " partitions, ",
                                    o.salt_buckets, " salt buckets)"));
  return r;
}

absl::StatusOr<Reply> CmdQueueConfigure(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  std::vector<ConsumerGroup> groups;
  for (size_t i = 1; i < c.cmd.args.size(); ++i) {
    const Value& h = c.cmd.args[i];
    if (!h.is_hash()) return ArgError(c, h, "a group: {NAME => 'g', SIZE => 2, PARTITIONING => 'HASH'}");
    BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"NAME", "SIZE", "PARTITIONING"}));
    ConsumerGroup g;
    const Value* n = h.Find("NAME");
    if (n == nullptr) return absl::InvalidArgumentError("queue_configure: each group needs a NAME");
    BASALT_ASSIGN_OR_RETURN(g.name, Bytes(c, *n, "a group name", false));
    if (const Value* v = h.Find("SIZE")) {
      BASALT_ASSIGN_OR_RETURN(int64_t size, IntInRange(c, *v, "SIZE", 1, 4096));
      g.size = static_cast<int>(size);
    }
    if (const Value* v = h.Find("PARTITIONING")) {
      BASALT_ASSIGN_OR_RETURN(g.partitioning, PartitioningArg(c, *v));
    }
    groups.push_back(std::move(g));
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, name, ConfigureQueue(c.conn, name, groups)));
  BASALT_ASSIGN_OR_RETURN(QueueConfig config, DescribeQueue(c.conn, name));
  Reply r = Done(c, name);
  r.kind = Reply::Kind::kText;
  for (const auto& [g, id] : config.groups) {
    absl::StrAppend(&r.text, "group ", g.name, ": ", g.size, g.size == 1 ? " consumer" : " consumers", ", ",
                    PartitioningText(g.partitioning), "\n");
  }
  if (config.groups.empty()) r.text = "no consumer groups\n";
  return r;
}

absl::StatusOr<Reply> CmdEnqueue(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  std::vector<QueueEvent> events;
  std::string key;
  for (size_t i = 1; i < c.cmd.args.size(); ++i) {
    const Value& v = c.cmd.args[i];
    if (v.is_hash() && i + 1 == c.cmd.args.size()) {
      BASALT_RETURN_IF_ERROR(CheckKeys(c, v, {"KEY"}));
      if (const Value* k = v.Find("KEY")) {
        BASALT_ASSIGN_OR_RETURN(key, Bytes(c, *k, "a partitioning key"));
      }
      continue;
    }
    BASALT_ASSIGN_OR_RETURN(std::string payload, Bytes(c, v, "an event's payload"));
    events.push_back(QueueEvent{std::move(payload), ""});
  }
  if (events.empty()) return absl::InvalidArgumentError("enqueue: give at least one event: enqueue 'q', 'payload'");
  for (QueueEvent& e : events) e.key = key;
  TransactionContext tx(c.conn);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, tx.Start()));
  QueueProducer producer(c.conn, name);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, producer.Enqueue(&tx, events)));
  BASALT_RETURN_IF_ERROR(Wrap(c, name, tx.Commit()));
  Reply r = Done(c, name);
  r.messages.push_back(absl::StrCat("Enqueued ", events.size(), events.size() == 1 ? " event" : " events"));
  return r;
}

absl::StatusOr<Reply> CmdDequeue(Ctx& c) {
  const auto& a = c.cmd.args;
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string group, Bytes(c, a[1], "a consumer group name", false));
  BASALT_ASSIGN_OR_RETURN(int64_t instance, IntInRange(c, a[2], "the consumer", 0, 4095));
  int64_t max = 10;
  if (a.size() > 3) {
    BASALT_ASSIGN_OR_RETURN(max, IntInRange(c, a[3], "the most events", 1, 100000));
  }
  TransactionContext tx(c.conn);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, tx.Start()));
  QueueConsumer consumer(c.conn, name, group, static_cast<int>(instance));
  absl::StatusOr<std::vector<DequeuedEvent>> events = consumer.Dequeue(&tx, static_cast<int>(max));
  BASALT_RETURN_IF_ERROR(Wrap(c, name, events.status()));
  // The shell's processing is printing them: the dequeue commits now.
  BASALT_RETURN_IF_ERROR(Wrap(c, name, tx.Commit()));
  Reply r = Done(c, name);
  r.kind = Reply::Kind::kRows;
  for (const DequeuedEvent& e : *events) {
    std::vector<KeyValue> cells;
    cells.push_back(KeyValue{"event", "payload", e.write_pointer, e.payload});
    if (!e.key.empty()) cells.push_back(KeyValue{"event", "key", e.write_pointer, e.key});
    r.rows.emplace_back(absl::StrFormat("%d:%d:%d", e.partition, e.write_pointer, e.counter), std::move(cells));
  }
  return r;
}

absl::StatusOr<Reply> CmdQueueStatus(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  int64_t interval_ms = 1000;
  if (c.cmd.args.size() > 1) {
    const Value& h = c.cmd.args[1];
    if (!h.is_hash()) return ArgError(c, h, "a hash: {INTERVAL => 1000}");
    BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"INTERVAL"}));
    if (const Value* v = h.Find("INTERVAL")) {
      BASALT_ASSIGN_OR_RETURN(interval_ms, IntInRange(c, *v, "INTERVAL (ms)", 0, 600000));
    }
  }
  // Two looks INTERVAL apart: the rates are what changed between them.
  absl::StatusOr<std::vector<GroupStatus>> before = GetQueueStatus(c.conn, name);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, before.status()));
  const absl::Time t0 = absl::Now();
  if (interval_ms > 0) absl::SleepFor(absl::Milliseconds(interval_ms));
  absl::StatusOr<std::vector<GroupStatus>> after = GetQueueStatus(c.conn, name);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, after.status()));
  const double secs = std::max(1e-3, absl::ToDoubleSeconds(absl::Now() - t0));
  Reply r = Done(c, name);
  r.kind = Reply::Kind::kText;
  r.text = absl::StrFormat("%-16s %8s %10s %10s %12s %12s %12s\n", "GROUP", "CONSUMER", "DEPTH", "LAG_MS",
                           "CONSUMED", "CONSUMED/S", "ENQUEUED/S");
  for (const GroupStatus& g : *after) {
    const GroupStatus* old = nullptr;
    for (const GroupStatus& b : *before) {
      if (b.group.name == g.group.name) old = &b;
    }
    for (const ConsumerStatus& cs : g.consumers) {
      double consumed_rate = 0, enqueued_rate = 0;
      if (old != nullptr) {
        for (const ConsumerStatus& o : old->consumers) {
          if (o.instance != cs.instance) continue;
          consumed_rate = (static_cast<double>(cs.consumed) - static_cast<double>(o.consumed)) / secs;
          enqueued_rate = (static_cast<double>(cs.depth + cs.consumed) - static_cast<double>(o.depth + o.consumed)) / secs;
        }
      }
      absl::StrAppend(&r.text,
                      absl::StrFormat("%-16s %8s %10d %10d %12d %12.1f %12.1f\n", g.group.name,
                                      g.group.partitioning == Partitioning::kFifo ? "all" : absl::StrCat(cs.instance),
                                      cs.depth, cs.oldest_age_ms, cs.consumed, consumed_rate, enqueued_rate));
    }
  }
  return r;
}

}  // namespace basalt::shell::internal
