// Transactional queues (basalt/queue.h): CDAP's HBase queue, on TransactionContext; like it,
// built on the Connection and Table interfaces alone (basalt_client_base).
#include "basalt/queue.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace basalt {

namespace {

constexpr const char* kEntryFamily = kQueueFamily;  // e:p payload, e:k key; the configuration row
constexpr const char* kStateFamily = kQueueFamily;  // e:d: consumed by the row's group
constexpr const char* kDone = kQueueConsumedQualifier;
const std::string kConfigRow = "\xff" "config";  // after every salt bucket (0..254)
constexpr char kGroupPrefix[] = "g.";            // e:g.<name> = "<id>,<size>,<partitioning>"
constexpr size_t kRowKeySize = 1 + 2 + 2 + 8 + 4;
// Write pointers are milliseconds x 10^6 (src/transactions/transactions.h).
constexpr int64_t kPointersPerMs = 1000000;

void PutBE(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetBE(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[at + i]);
  return v;
}

int SaltOf(const QueueOptions& o, int partition) { return partition % o.salt_buckets; }

// salt | group | partition: the prefix of one group's partition.
std::string PartitionPrefix(const QueueOptions& o, uint16_t group, int partition) {
  std::string k;
  k.reserve(kRowKeySize);
  k.push_back(static_cast<char>(SaltOf(o, partition)));
  PutBE(&k, group, 2);
  PutBE(&k, static_cast<uint64_t>(partition), 2);
  return k;
}

const char* PartitioningName(Partitioning p) {
  switch (p) {
    case Partitioning::kHash: return "hash";
    case Partitioning::kFifo: return "fifo";
    default: return "round_robin";
  }
}

absl::StatusOr<Partitioning> ParsePartitioning(std::string_view s) {
  if (s == "round_robin") return Partitioning::kRoundRobin;
  if (s == "hash") return Partitioning::kHash;
  if (s == "fifo") return Partitioning::kFifo;
  return absl::DataLossError(absl::StrCat("unknown partitioning '", AV(s), "'"));
}

absl::Status ValidateGroup(const ConsumerGroup& g) {
  if (g.name.empty() || g.name.size() > 64 ||
      !std::all_of(g.name.begin(), g.name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
               c == '-';
      })) {
    return absl::InvalidArgumentError(
        absl::StrCat("consumer group name '", g.name, "' is not 1-64 bytes of [A-Za-z0-9_.-]"));
  }
  if (g.size < 1 || g.size > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("consumer group '", g.name, "': size ", g.size, " is not in [1, 4096]"));
  }
  return absl::OkStatus();
}

// The configuration as `tx` sees it.
absl::StatusOr<QueueConfig> ReadConfig(TransactionContext* tx, const std::string& queue) {
  BASALT_ASSIGN_OR_RETURN(Result r, tx->Get(queue, Get(kConfigRow).AddFamily(kEntryFamily)));
  if (r.empty()) return absl::NotFoundError(absl::StrCat("queue ", queue, " has no configuration: CreateQueue it"));
  QueueConfig c;
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(absl::StrCat("queue ", queue, ": its configuration is damaged (", AV(what), ")"));
  };
  for (const KeyValue& kv : r.cells()) {
    if (kv.qualifier == "partitions") {
      if (!absl::SimpleAtoi(kv.value, &c.options.partitions)) return bad("partitions");
    } else if (kv.qualifier == "buckets") {
      if (!absl::SimpleAtoi(kv.value, &c.options.salt_buckets)) return bad("buckets");
    } else if (kv.qualifier.rfind(kGroupPrefix, 0) == 0) {
      std::vector<std::string> parts = absl::StrSplit(kv.value, ',');
      ConsumerGroup g;
      g.name = kv.qualifier.substr(2);
      int id = 0;
      if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &id) || id < 0 || id > 0xffff ||
          !absl::SimpleAtoi(parts[1], &g.size)) {
        return bad(kv.qualifier);
      }
      BASALT_ASSIGN_OR_RETURN(g.partitioning, ParsePartitioning(parts[2]));
      c.groups.emplace_back(std::move(g), static_cast<uint16_t>(id));
    }
  }
  if (c.options.partitions < 1 || c.options.partitions > 4096 || c.options.salt_buckets < 1 ||
      c.options.salt_buckets > 255) {
    return bad("partitions or buckets out of range");
  }
  return c;
}

// Runs `body` in a transaction of its own until it commits without a conflict (a few times).
absl::Status InTransaction(Connection* connection, const std::function<absl::Status(TransactionContext*)>& body) {
  absl::Status last;
  for (int attempt = 0; attempt < 10; ++attempt) {
    TransactionContext tx(connection);
    BASALT_RETURN_IF_ERROR(tx.Start());
    absl::Status s = body(&tx);
    if (!s.ok()) {
      (void)tx.Abort();
      return s;
    }
    last = tx.Commit();
    if (!absl::IsAborted(last)) return last;
  }
  return last;
}

// The partitions consumer `instance` of `group` owns, starting from `first` (for fairness).
std::vector<int> OwnedPartitions(const QueueOptions& o, const ConsumerGroup& group, int instance, uint32_t first) {
  std::vector<int> owned;
  for (int i = 0; i < o.partitions; ++i) {
    const int p = static_cast<int>((first + static_cast<uint32_t>(i)) % static_cast<uint32_t>(o.partitions));
    if (group.partitioning == Partitioning::kFifo || p % group.size == instance) owned.push_back(p);
  }
  return owned;
}

// Entries of one partition, from row `from` on (if past the partition's start), that its group
// has not consumed (`undone`) or has, as `tx` sees them (`keys_only`: without payloads), up to
// `limit` (0: all).
absl::Status ScanPartition(TransactionContext* tx, const std::string& queue, const QueueOptions& o, uint16_t group,
                           int partition, std::string_view from, uint64_t limit, bool undone, bool keys_only,
                           const std::function<void(Result&)>& each) {
  const std::string prefix = PartitionPrefix(o, group, partition);
  Scan scan;
  scan.SetRowPrefix(prefix);
  if (from > scan.start_row) scan.start_row = std::string(from);
  if (limit > 0) scan.SetLimit(limit).SetCaching(static_cast<uint32_t>(std::min<uint64_t>(limit, 1000)));
  // The group's consumed entries (e:d = "1") are filtered in the server, which sees only what
  // the snapshot sees.
  Filter done = Filter::SingleColumnValue(kStateFamily, kDone, undone ? FilterOp::kNotEqual : FilterOp::kEqual,
                                          Comparator::Binary("1"), /*filter_if_missing=*/!undone);
  scan.SetFilter(keys_only ? Filter::List(/*must_pass_all=*/true, {std::move(done), Filter::KeyOnly()}) : std::move(done));
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<ResultScanner> scanner, tx->GetScanner(queue, std::move(scan)));
  Result r;
  for (;;) {
    BASALT_ASSIGN_OR_RETURN(bool more, scanner->Next(&r));
    if (!more) return absl::OkStatus();
    if (r.row().size() != kRowKeySize) continue;  // not an entry
    each(r);
  }
}

}  // namespace

absl::Status CreateQueue(Connection* connection, const std::string& name, const QueueOptions& options) {
  if (options.partitions < 1 || options.partitions > 4096 || options.salt_buckets < 1 || options.salt_buckets > 255) {
    return absl::InvalidArgumentError(absl::StrCat("queue ", name, ": partitions ", options.partitions,
                                                   " must be in [1, 4096] and salt buckets ", options.salt_buckets,
                                                   " in [1, 255]"));
  }
  TableInfo t;
  t.name = name;
  t.transactional = true;
  t.queue = true;
  FamilySettings family;
  family.name = std::string(kQueueFamily);
  t.families.push_back(std::move(family));
  std::vector<std::string> splits;
  for (int s = 1; s < options.salt_buckets; ++s) splits.emplace_back(1, static_cast<char>(s));
  BASALT_RETURN_IF_ERROR(connection->GetAdmin()->CreateTable(t, splits));
  return InTransaction(connection, [&](TransactionContext* tx) {
    return tx->Put(name, Put(kConfigRow)
                             .Add(kEntryFamily, "partitions", absl::StrCat(options.partitions))
                             .Add(kEntryFamily, "buckets", absl::StrCat(options.salt_buckets)));
  });
}

absl::Status ConfigureQueue(Connection* connection, const std::string& name, const std::vector<ConsumerGroup>& groups) {
  for (size_t i = 0; i < groups.size(); ++i) {
    BASALT_RETURN_IF_ERROR(ValidateGroup(groups[i]));
    for (size_t j = 0; j < i; ++j) {
      if (groups[j].name == groups[i].name) {
        return absl::InvalidArgumentError(absl::StrCat("consumer group '", groups[i].name, "' given twice"));
      }
    }
  }
  return InTransaction(connection, [&](TransactionContext* tx) -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(QueueConfig current, ReadConfig(tx, name));
    int next_id = 0;
    for (const auto& [g, id] : current.groups) next_id = std::max(next_id, id + 1);
    Put put(kConfigRow);
    for (const ConsumerGroup& g : groups) {
      int id = -1;
      for (const auto& [old, old_id] : current.groups) {
        if (old.name == g.name) id = old_id;
      }
      if (id < 0) {
        if (next_id > 0xffff) return absl::ResourceExhaustedError("queue " + name + " ran out of group ids");
        id = next_id++;
      }
      put.Add(kEntryFamily, kGroupPrefix + g.name, absl::StrCat(id, ",", g.size, ",", PartitioningName(g.partitioning)));
    }
    Delete removed(kConfigRow);
    for (const auto& entry : current.groups) {
      const std::string& old_name = entry.first.name;
      if (std::none_of(groups.begin(), groups.end(), [&](const ConsumerGroup& g) { return g.name == old_name; })) {
        removed.AddColumns(kEntryFamily, kGroupPrefix + old_name);
      }
    }
    if (!put.mutations.empty()) BASALT_RETURN_IF_ERROR(tx->Put(name, put));
    if (!removed.mutations.empty()) BASALT_RETURN_IF_ERROR(tx->Delete(name, removed));
    return absl::OkStatus();
  });
}

absl::StatusOr<QueueConfig> DescribeQueue(Connection* connection, const std::string& name) {
  TransactionContext tx(connection);
  BASALT_RETURN_IF_ERROR(tx.Start());
  absl::StatusOr<QueueConfig> c = ReadConfig(&tx, name);
  BASALT_RETURN_IF_ERROR(tx.Commit());
  return c;
}

QueueProducer::QueueProducer(Connection*, std::string queue)
    : queue_(std::move(queue)), round_robin_(std::random_device{}()) {}

absl::Status QueueProducer::Enqueue(TransactionContext* tx, const std::vector<QueueEvent>& events) {
  if (!tx->in_progress()) return absl::FailedPreconditionError("Enqueue: no transaction in progress");
  BASALT_ASSIGN_OR_RETURN(QueueConfig c, ReadConfig(tx, queue_));
  const int64_t wp = tx->snapshot()->write_pointer;
  if (wp != write_pointer_) {
    write_pointer_ = wp;
    counter_ = 0;
  }
  std::vector<RowMutationsBase> rows;
  rows.reserve(events.size() * c.groups.size());
  for (const QueueEvent& e : events) {
    if (e.payload.empty()) return absl::InvalidArgumentError("Enqueue: an event's payload is empty");
    const uint32_t counter = counter_++;
    const uint64_t rr = round_robin_++;
    for (const auto& [g, id] : c.groups) {
      int partition;
      if (g.partitioning == Partitioning::kHash) {
        partition = static_cast<int>(ChangeFingerprint(e.key, "", nullptr, nullptr) %
                                     static_cast<uint64_t>(c.options.partitions));
      } else {
        partition = static_cast<int>(rr % static_cast<uint64_t>(c.options.partitions));
      }
      std::string row = PartitionPrefix(c.options, id, partition);
      PutBE(&row, static_cast<uint64_t>(wp), 8);
      PutBE(&row, counter, 4);
      Put put(std::move(row));
      put.Add(kEntryFamily, "p", e.payload);
      if (!e.key.empty()) put.Add(kEntryFamily, "k", e.key);
      rows.push_back(std::move(put));
    }
  }
  if (rows.empty()) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::vector<absl::Status> results, tx->Batch(queue_, std::move(rows)));
  for (const absl::Status& s : results) {
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("Enqueue to ", queue_, ": ", s.message()));
  }
  return absl::OkStatus();
}

QueueConsumer::QueueConsumer(Connection*, std::string queue, std::string group, int instance)
    : queue_(std::move(queue)), group_(std::move(group)), instance_(instance) {}

absl::StatusOr<std::vector<DequeuedEvent>> QueueConsumer::Dequeue(TransactionContext* tx, int max) {
  if (!tx->in_progress()) return absl::FailedPreconditionError("Dequeue: no transaction in progress");
  BASALT_ASSIGN_OR_RETURN(QueueConfig c, ReadConfig(tx, queue_));
  const ConsumerGroup* group = nullptr;
  uint16_t id = 0;
  for (const auto& [g, gid] : c.groups) {
    if (g.name == group_) {
      group = &g;
      id = gid;
    }
  }
  if (group == nullptr) return absl::NotFoundError(absl::StrCat("queue ", queue_, " has no consumer group ", group_));
  if (instance_ < 0 || instance_ >= group->size) {
    return absl::FailedPreconditionError(absl::StrCat("consumer group ", group_, " of queue ", queue_, " has ",
                                                      group->size, " consumers: none is ", instance_));
  }
  std::vector<DequeuedEvent> out;
  std::vector<RowMutationsBase> done;
  for (int p : OwnedPartitions(c.options, *group, instance_, next_partition_)) {
    if (out.size() >= static_cast<size_t>(max)) break;
    std::string& floor = floors_[std::make_pair(id, p)];
    std::string first_undone;
    BASALT_RETURN_IF_ERROR(ScanPartition(tx, queue_, c.options, id, p, floor, static_cast<uint64_t>(max) - out.size(),
                                         /*undone=*/true, /*keys_only=*/false, [&](Result& r) {
                                           if (first_undone.empty()) first_undone = r.row();
                                           DequeuedEvent e;
                                           e.payload = std::string(r.Value(kEntryFamily, "p").value_or(""));
                                           e.key = std::string(r.Value(kEntryFamily, "k").value_or(""));
                                           e.partition = static_cast<uint16_t>(p);
                                           e.write_pointer = static_cast<int64_t>(GetBE(r.row(), 5, 8));
                                           e.counter = static_cast<uint32_t>(GetBE(r.row(), 13, 4));
                                           out.push_back(std::move(e));
                                           done.push_back(Put(r.row()).Add(kStateFamily, kDone, "1"));
                                         }));
    // Where the next dequeue of this partition starts: every entry before it is consumed or
    // hidden for good in any later snapshot. Not past the first entry left or taken now (an
    // abort gives it back), nor past what a transaction in progress may still commit, nor past
    // what this snapshot cannot see yet.
    const TransactionSnapshot& s = *tx->snapshot();
    std::string next = PartitionPrefix(c.options, id, p);
    int64_t bound = s.read_pointer + 1;
    if (!s.in_progress.empty()) bound = std::min(bound, s.in_progress.front());
    PutBE(&next, static_cast<uint64_t>(bound), 8);
    if (!first_undone.empty()) next = std::min(next, first_undone);
    floor = std::max(floor, next);
  }
  next_partition_ = (next_partition_ + 1) % static_cast<uint32_t>(c.options.partitions);
  if (done.empty()) return out;
  BASALT_ASSIGN_OR_RETURN(std::vector<absl::Status> results, tx->Batch(queue_, std::move(done)));
  for (const absl::Status& s : results) {
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("Dequeue from ", queue_, ": ", s.message()));
  }
  return out;
}

absl::StatusOr<std::vector<GroupStatus>> GetQueueStatus(Connection* connection, const std::string& name) {
  TransactionContext tx(connection);
  BASALT_RETURN_IF_ERROR(tx.Start());
  BASALT_ASSIGN_OR_RETURN(QueueConfig c, ReadConfig(&tx, name));
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::vector<GroupStatus> out;
  for (const auto& [g, id] : c.groups) {
    GroupStatus gs;
    gs.group = g;
    const int consumers = g.partitioning == Partitioning::kFifo ? 1 : g.size;
    gs.consumers.resize(consumers);
    for (int i = 0; i < consumers; ++i) gs.consumers[i].instance = i;
    for (int p = 0; p < c.options.partitions; ++p) {
      ConsumerStatus& cs = gs.consumers[g.partitioning == Partitioning::kFifo ? 0 : p % g.size];
      for (bool undone : {true, false}) {
        BASALT_RETURN_IF_ERROR(ScanPartition(&tx, name, c.options, id, p, "", 0, undone, /*keys_only=*/true,
                                             [&](Result& r) {
                                               if (!undone) {
                                                 ++cs.consumed;
                                                 return;
                                               }
                                               ++cs.depth;
                                               const int64_t age =
                                                   now_ms - static_cast<int64_t>(GetBE(r.row(), 5, 8)) / kPointersPerMs;
                                               cs.oldest_age_ms = std::max(cs.oldest_age_ms, age);
                                             }));
      }
    }
    out.push_back(std::move(gs));
  }
  BASALT_RETURN_IF_ERROR(tx.Commit());
  return out;
}

}  // namespace basalt
