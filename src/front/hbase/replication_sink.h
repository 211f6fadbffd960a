// Basalt as an HBase replication sink: what an unmodified HBase 2.x cluster that replicates into
// this one sends (AdminService.ReplicateWALEntry, proto/hbase/hbase_replication.proto), made into
// Basalt's writes (docs/DESIGN.md §15, "Replication into Basalt").
//
// An HBase source finds its sinks in the peer's ZooKeeper (hbase_zk.h: the cluster id, read as a
// UUID, and the servers under rs/), then sends each sink batches of its log's entries: each entry
// a WALKey (table, region, the clusters the edit has been through) and its cells in the call's cell
// block (KeyValueCodecWithTags, cell_block.h), every cell with its timestamp and its type as the
// source's log has them. The sink's contract (HBase's ReplicationSink): the call returns only once
// every edit is durable here; on an error the source sends the same batch again, later.
//
// How the edits become writes (SinkEditsOf, pure):
//   - consecutive cells of one row in one entry are one row's mutations, applied atomically;
//   - a Put keeps its timestamp; a Delete (one version), DeleteColumn and DeleteFamily keep theirs,
//     so applying a batch again changes nothing a reader can see (idempotent, as HBase's);
//     DeleteFamilyVersion, which Basalt lacks, is refused by name (never applied in part);
//   - an entry whose cluster ids name this cluster came from here (a cycle of peers): skipped;
//   - the log's own markers (family METAFAMILY: flushes, compactions, region events) are not
//     data and are skipped; a bulk load's marker (HBASE::BULK_LOAD) is refused: Basalt cannot read
//     the source's HFiles, so bulk-loaded files are not replicated (the source keeps retrying the
//     batch until replication of bulk loads is turned off there, hbase.replication.bulkload.enabled);
//   - cell tags (per-cell TTL, ACLs, visibility labels) are dropped: Basalt keeps none.
// Each table's rows then go in one batch (one log sync per region), durably whatever the
// source asked: a sink answers only for what is on disk; one batch per table and list of the
// clusters its entries came through (BatchMutateRequest.cluster_ids, kept in this server's log so
// that its own replication never ships them back to any of them). (Entries of one row with
// different lists are applied batch by batch: each cell keeps its timestamp, so what a reader
// sees is the same.)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/basalt.pb.h"
#include "proto/hbase/hbase_replication.pb.h"

namespace basalt::hbase {

// A cluster id as text (8-4-4-4-12 lower-case hex), from HBase's two halves.
std::string UuidText(const UUID& id);

// The writes a ReplicateWALEntry call asks for, a batch per table in the order the tables first
// appear, each table's rows in log order.
struct SinkEdits {
  std::vector<rpc::BatchMutateRequest> batches;
  uint64_t cells = 0;           // the cells applied (skipped ones not counted)
  uint64_t skipped_entries = 0;  // entries that had been through this cluster already
};
// `cell_block` is the call's; `self` this cluster's id (a cell of an entry that names it is
// skipped). InvalidArgument for an entry whose cells are not in the block, a table name Basalt
// does not take; FailedPrecondition for a bulk load's marker and DeleteFamilyVersion.
absl::StatusOr<SinkEdits> SinkEditsOf(const ReplicateWALEntryRequest& req, std::string_view cell_block,
                                      std::string_view self);

// Where a sink's batches go: each applied, with its durability, wherever its rows' regions are;
// OK only once every row is. A standalone server's data service (every row is there), or a
// cluster's region server's router of the rows other servers hold (src/cluster/batch_router.h).
using ApplyBatch = std::function<absl::Status(const rpc::BatchMutateRequest&)>;

// What a sink has applied: /metrics' figures, and HBase's ReplicationLoadSink in the cluster status
// (the shell's status 'replication'). Written by the AdminService that applies, read by anyone.
struct SinkFigures {
  std::atomic<uint64_t> cells{0};
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> failed_batches{0};
  std::atomic<int64_t> age_ms{0};              // of the newest edit of the last batch, when applied
  std::atomic<int64_t> last_write_time_ms{0};  // that edit's time, by the source's clock
  const int64_t started_ms;                    // when this sink started
  SinkFigures();
};

// The bytes of replicated batches being applied at once, bounded: a sink takes a batch only while
// the others it is applying leave room for it (one batch always fits, however large: the port's
// frame limit bounds each). A batch refused waits at its source, which sends it again later
// (RegionTooBusyException). Thread-safe.
class SinkBudget {
 public:
  explicit SinkBudget(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  // Takes `bytes`; ResourceExhausted, saying how much is in use, when they do not fit.
  absl::Status Take(uint64_t bytes);
  void Give(uint64_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_acq_rel); }
  uint64_t in_use() const { return in_use_.load(std::memory_order_acquire); }

 private:
  const uint64_t max_bytes_;
  std::atomic<uint64_t> in_use_{0};
};

}  // namespace basalt::hbase
