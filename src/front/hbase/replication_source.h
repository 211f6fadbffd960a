// Basalt as an HBase replication source (docs/DESIGN.md §15, "Replication from Basalt"): the
// records of a server's log (storage/log_tail.h) as the AdminService.ReplicateWALEntry calls an
// HBase sink takes (an HBase cluster's region server, or a Basalt one: replication_sink.h), so
// one transport serves Basalt → Basalt and Basalt → HBase.
//
// A log record is one region's edits of one write; it becomes one WALEntry:
//   key    the table (HBase's text form), the region's name, the record's sequence id, the time
//          it was written (its newest cell's timestamp, never later than now), and the clusters
//          the edit has been through: those its record names (a replicated edit's, the first
//          where it was written), then this one (a sink that is one of them skips it, and a
//          record that names the peer is not shipped there at all: no loop between peers);
//   cells  its edits of the families the table replicates (REPLICATION_SCOPE), each a KeyValue
//          in the call's cell block with the timestamp and kind the log has (Put, Delete,
//          DeleteColumn, DeleteFamily), in log order.
// A record with no replicated edit adds nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/uuid.h"
#include "proto/hbase/hbase_replication.pb.h"
#include "storage/log_record.h"

namespace basalt::hbase {

// A ReplicateWALEntry call being built.
struct SourceBatch {
  ReplicateWALEntryRequest request;
  std::string cell_block;  // KeyValueCodec (no tags)
  uint64_t cells = 0;
  void Clear() { *this = SourceBatch(); }
};

struct SourceOptions {
  std::string cluster_id;  // this cluster's (a UUID's text)
  // The peer's: a record that has been through it (WalRecord::cluster_ids) is not shipped there.
  std::optional<Uuid> peer;
  // Whether `family` of Basalt table `table` is replicated to this peer.
  std::function<bool(std::string_view table, std::string_view family)> replicated;
  int64_t now_ms = 0;  // the newest a write time may be
};

// Appends `rec`, a record of Basalt table `table` (its region's), to `batch` as one entry of its
// replicated edits (none: nothing appended). InvalidArgument, naming the region and sequence id,
// for an edit whose key does not parse or a cluster id that is not a UUID.
absl::Status AddToSourceBatch(const WalRecord& rec, std::string_view table, const SourceOptions& options,
                              SourceBatch* batch);

}  // namespace basalt::hbase
