#include "src/front/hbase/replication_sink.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "common/uuid.h"
#include "src/front/hbase/cell_block.h"
#include "src/front/hbase/data_convert.h"
#include "storage/log_record.h"

namespace basalt::hbase {
namespace {

// The family of the log's own markers, and the qualifier of a bulk load's (HBase's WALEdit).
constexpr std::string_view kMetaFamily = "METAFAMILY";
constexpr std::string_view kBulkLoad = "HBASE::BULK_LOAD";

Uuid UuidOf(const UUID& id) { return Uuid{id.most_sig_bits(), id.least_sig_bits()}; }

// The clusters an entry's edits have been through, the first where they were written, and HBase
// 0.94's single id (which newer sources no longer write) when it is not among them.
std::vector<Uuid> ClustersOf(const WALKey& key) {
  std::vector<Uuid> out;
  for (const UUID& id : key.cluster_ids()) out.push_back(UuidOf(id));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  if (key.has_cluster_id() && std::find(out.begin(), out.end(), UuidOf(key.cluster_id())) == out.end()) {
    out.push_back(UuidOf(key.cluster_id()));
  }
#pragma GCC diagnostic pop
  return out;
}

// One cell as a mutation of its row.
absl::Status AddMutation(const BlockCell& c, std::string_view table, rpc::RowMutations* row) {
  rpc::Mutation* m = row->add_mutations();
  m->set_family(std::string(c.family));
  m->set_qualifier(std::string(c.qualifier));
  m->set_timestamp(c.timestamp);
  switch (c.type) {
    case KeyValueType::kPut:
      m->set_kind(rpc::Mutation::PUT);
      m->set_value(std::string(c.value));
      return absl::OkStatus();
    case KeyValueType::kDelete:
      m->set_kind(rpc::Mutation::DELETE);
      return absl::OkStatus();
    case KeyValueType::kDeleteColumn:
      m->set_kind(rpc::Mutation::DELETE_COLUMN);
      return absl::OkStatus();
    case KeyValueType::kDeleteFamily:
      m->set_kind(rpc::Mutation::DELETE_FAMILY);
      m->clear_qualifier();
      return absl::OkStatus();
    case KeyValueType::kDeleteFamilyVersion:
      return absl::FailedPreconditionError(
          absl::StrCat("a replicated DeleteFamilyVersion of table ", AV(table), " (family ", AV(c.family),
                       "): Basalt has no such delete, so the batch is not applied"));
    default:
      return absl::InvalidArgumentError(absl::StrCat("a replicated cell of type ", static_cast<int>(c.type),
                                                     " in table ", AV(table), ": not a Put or a Delete"));
  }
}

}  // namespace

std::string UuidText(const UUID& id) { return basalt::UuidText(UuidOf(id)); }

absl::StatusOr<SinkEdits> SinkEditsOf(const ReplicateWALEntryRequest& req, std::string_view cell_block,
                                      std::string_view self) {
  BASALT_ASSIGN_OR_RETURN(std::vector<BlockCell> all, DecodeCellBlock(cell_block));
  CellCursor cursor(std::move(all));
  const std::optional<Uuid> self_id = ParseUuid(self);
  SinkEdits edits;
  // (table, the clusters its edits came through) → its batch in edits.batches
  absl::flat_hash_map<std::string, size_t> batch_of;
  for (int e = 0; e < req.entry_size(); ++e) {
    const WALEntry& entry = req.entry(e);
    if (entry.key_value_bytes_size() > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("log entry ", e, " carries its cells inline (key_value_bytes), as no HBase 2 source does: "
                       "send them in the cell block"));
    }
    absl::StatusOr<std::vector<BlockCell>> cells = cursor.Take(entry.associated_cell_count());
    if (!cells.ok()) return absl::InvalidArgumentError(absl::StrCat("log entry ", e, ": ", cells.status().message()));
    const std::vector<Uuid> clusters = ClustersOf(entry.key());
    if (self_id.has_value() && std::find(clusters.begin(), clusters.end(), *self_id) != clusters.end()) {
      ++edits.skipped_entries;  // it has been through here already
      continue;
    }
    absl::StatusOr<std::string> table = BasaltTableOfText(entry.key().table_name());
    if (!table.ok()) {
      return absl::Status(table.status().code(),
                          absl::StrCat("log entry ", e, " of table ", AV(entry.key().table_name()), ": ",
                                       table.status().message()));
    }
    if (clusters.size() > kMaxWalClusterIds) {
      return absl::InvalidArgumentError(absl::StrCat("log entry ", e, " names ", clusters.size(),
                                                     " clusters it came through; at most ", kMaxWalClusterIds));
    }
    std::string batch_key = *table;  // (and the ids' bytes: a table name holds no NUL)
    for (const Uuid& id : clusters) {
      batch_key.push_back('\0');
      batch_key.append(reinterpret_cast<const char*>(&id), sizeof(id));
    }
    rpc::RowMutations* row = nullptr;
    for (const BlockCell& c : *cells) {
      if (c.family == kMetaFamily) {
        if (c.qualifier == kBulkLoad) {
          return absl::FailedPreconditionError(
              absl::StrCat("a bulk load into table ", *table,
                           " was replicated: Basalt cannot read the source's HFiles, so bulk-loaded files are not "
                           "replicated into it (set hbase.replication.bulkload.enabled=false on the source, and "
                           "copy the files' rows another way)"));
        }
        continue;  // a flush's, a compaction's or a region event's marker: not data
      }
      auto [at, added] = batch_of.try_emplace(batch_key, edits.batches.size());
      if (added) {
        rpc::BatchMutateRequest& b = edits.batches.emplace_back();
        b.set_table(*table);
        for (const Uuid& id : clusters) b.add_cluster_ids(basalt::UuidText(id));
        row = nullptr;
      }
      rpc::BatchMutateRequest& batch = edits.batches[at->second];
      if (row == nullptr || batch.rows().empty() || &batch.rows(batch.rows_size() - 1) != row || row->row() != c.row) {
        row = batch.add_rows();
        row->set_row(std::string(c.row));
      }
      BASALT_RETURN_IF_ERROR(AddMutation(c, *table, row));
      ++edits.cells;
    }
  }
  return edits;
}

SinkFigures::SinkFigures() : started_ms(absl::ToUnixMillis(absl::Now())) {}

absl::Status SinkBudget::Take(uint64_t bytes) {
  uint64_t used = in_use_.load(std::memory_order_acquire);
  do {
    if (used > 0 && used + bytes > max_bytes_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("this server is applying ", used, " bytes of replicated batches (its limit is ", max_bytes_,
                       "): send this one of ", bytes, " bytes again later"));
    }
  } while (!in_use_.compare_exchange_weak(used, used + bytes, std::memory_order_acq_rel));
  return absl::OkStatus();
}

}  // namespace basalt::hbase
