#include "src/front/hbase/replication_source.h"

#include <algorithm>
#include <optional>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/uuid.h"
#include "src/front/hbase/cell_block.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/region_names.h"
#include "storage/cell.h"

namespace basalt::hbase {

absl::Status AddToSourceBatch(const WalRecord& rec, std::string_view table, const SourceOptions& o,
                              SourceBatch* batch) {
  auto where = [&] { return absl::StrCat("log record ", rec.seq, " of region ", rec.region); };
  const std::optional<Uuid> self = ParseUuid(o.cluster_id);
  if (!self.has_value()) return absl::InvalidArgumentError(absl::StrCat(where(), ": cluster id '", o.cluster_id, "' is not a UUID"));
  // The cells go straight into the batch's block; a record refused part way is cut back out.
  std::string& block = batch->cell_block;
  const size_t before = block.size();
  auto refuse = [&](absl::Status s) {
    block.resize(before);
    return s;
  };
  // The clusters it has been through, this one last (HBase's ClusterMarkingEntryFilter); a record
  // that has been through the peer is not shipped there again.
  absl::InlinedVector<Uuid, 4> clusters;  // (most records: this cluster's alone, no allocation)
  for (const std::string& text : rec.cluster_ids) {
    std::optional<Uuid> id = ParseUuid(text);
    if (!id.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": the cluster id '", text, "' it came through is not a UUID"));
    }
    if (o.peer.has_value() && *id == *o.peer) return absl::OkStatus();
    if (std::find(clusters.begin(), clusters.end(), *id) == clusters.end()) clusters.push_back(*id);
  }
  if (std::find(clusters.begin(), clusters.end(), *self) == clusters.end()) clusters.push_back(*self);
  uint64_t cells = 0;
  int64_t newest = 0;
  for (const WalEdit& e : rec.edits) {
    if (!o.replicated(table, e.family)) continue;
    KeyView k;
    if (!ParseFlatKey(e.key, &k)) {
      return refuse(absl::InvalidArgumentError(absl::StrCat(where(), ": an edit's key does not parse")));
    }
    BlockCell c;
    c.row = k.row;
    c.family = e.family;
    c.qualifier = k.qualifier;
    c.timestamp = k.timestamp;
    c.type = static_cast<KeyValueType>(static_cast<uint8_t>(k.type));
    if (k.type == basalt::CellType::kPut) c.value = e.value;
    if (absl::Status s = AppendCell(c, &block); !s.ok()) {
      return refuse(absl::Status(s.code(), absl::StrCat(where(), ": ", s.message())));
    }
    newest = std::max(newest, k.timestamp);
    ++cells;
  }
  if (cells == 0) return absl::OkStatus();
  WALEntry* entry = batch->request.add_entry();
  WALKey* key = entry->mutable_key();
  key->set_encoded_region_name(rec.region);
  const TableName name = TableNameOfBasalt(table);
  key->set_table_name(TableNameOf(name.namespace_(), name.qualifier()));
  key->set_log_sequence_number(rec.seq);
  key->set_write_time(static_cast<uint64_t>(std::clamp<int64_t>(newest, 0, o.now_ms)));
  for (const Uuid& c : clusters) {
    UUID* id = key->add_cluster_ids();
    id->set_most_sig_bits(c.hi);
    id->set_least_sig_bits(c.lo);
  }
  entry->set_associated_cell_count(static_cast<int32_t>(cells));
  batch->cells += cells;
  return absl::OkStatus();
}

}  // namespace basalt::hbase
