// A region: one table's row range with one store per column family, its write-ahead log,
// flushes and compactions (docs/DESIGN.md §1, §3). This is the storage engine's public face; the
// region server (next) hosts many of them.
//
// Thread-safety: every method may be called from many threads at once. Writes to one row are
// atomic and serialised (row locks); reads see whole writes only (an MVCC read point), never
// half of a multi-cell mutation. Reads never block on flushes or compactions.
//
// Durability: with kSyncWal (the default) Mutate returns only after the edit is on disk in the
// log; a crash at any point loses no acknowledged write. Replay on Open restores them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/cell.h"
#include "storage/options.h"

namespace basalt {

class Store;
class Wal;

namespace internal {
// A store a read touches, with its sorted qualifier filter (all: the whole family).
struct ColumnTarget {
  Store* store;
  bool all;
  std::vector<std::string> qualifiers;
};
// Most reads touch one or two families: kept inline, no allocation per Get.
using ColumnTargets = absl::InlinedVector<ColumnTarget, 2>;
}  // namespace internal

struct RegionDescriptor {
  std::string name;  // unique per WAL; also written in every log record
  std::vector<FamilyOptions> families;
};

struct Mutation {
  enum class Kind : uint8_t {
    kPut,           // value at (family, qualifier, timestamp or now)
    kDelete,        // the version at timestamp; without one, the newest visible version
    kDeleteColumn,  // every version of the column at or below timestamp (or now)
    kDeleteFamily,  // every cell of the family at or below timestamp (or now)
  };
  Kind kind = Kind::kPut;
  std::string family;
  std::string qualifier;
  int64_t timestamp = kLatestTimestamp;  // kLatestTimestamp: the server's clock
  std::string value;
};

struct RowMutation {
  std::string row;
  std::vector<Mutation> mutations;
};

struct ColumnSelection {
  std::string family;
  std::vector<std::string> qualifiers;  // empty: the whole family
};

struct ReadSpec {
  std::vector<ColumnSelection> columns;  // empty: every family
  int64_t min_ts = 0;                    // HBase's time range [min, max)
  int64_t max_ts = kLatestTimestamp;
  int max_versions = 1;
  bool cache_blocks = true;
};

struct ScanSpec : ReadSpec {
  std::string start_row;  // inclusive
  std::string stop_row;   // exclusive; empty: to the end
  uint64_t limit = 0;     // rows; 0: no limit
};

struct RegionStats {
  uint64_t last_seq = 0, flushed_seq = 0;
  uint64_t memstore_bytes = 0;
  uint64_t flushes = 0, minor_compactions = 0, major_compactions = 0;
  uint64_t replayed_records = 0, replay_truncated_bytes = 0;
  // Log records and bytes not replayed at open (WalRecoveryMode other than strict).
  uint64_t replay_skipped_records = 0, replay_skipped_bytes = 0;
  std::string failed;  // why the region failed (writes refused until it heals or reopens)
  uint64_t wal_records = 0, wal_syncs = 0, wal_synced_records = 0;
  uint64_t checksum_failures = 0;  // process-wide: blocks refused for a bad checksum
  uint64_t blocked_writes = 0;     // writes that waited for a flush (memstore over its limit)
  std::map<std::string, size_t> files_per_family;
};

// A cell of a RowResult: views into bytes the result owns.
struct CellView {
  std::string_view row;
  std::string_view family;
  std::string_view qualifier;
  int64_t timestamp = 0;
  CellType type = CellType::kPut;
  std::string_view value;
};

// One row read by Get or a scan, without a heap object per cell: the row's bytes are copied
// once into buffers the result owns and reuses. Reuse one RowResult across calls; its views
// stay valid until it is filled again. Not thread-safe.
class RowResult {
 public:
  std::string_view row() const { return row_.view(); }
  const std::vector<CellView>& cells() const { return views_; }
  size_t size() const { return views_.size(); }
  bool empty() const { return views_.empty(); }
  // Copies the cells out.
  std::vector<Cell> ToCells() const;
  // Raw cell bytes (row, family, qualifier, 8-byte timestamp, type, value per cell).
  size_t RawBytes() const;

  // For the engine: start a row, then add its cells in order (views are valid as they are added).
  void Reset(std::string_view row);
  // `family` must outlive the result's use (it is a store's name).
  void Add(std::string_view family, std::string_view qualifier, int64_t timestamp, CellType type,
           std::string_view value) {
    const size_t n = qualifier.size() + value.size();
    if (n > chunk_left_) NewChunk(n);
    char* p = chunk_ptr_;
    CopyBytes(p, qualifier);
    CopyBytes(p + qualifier.size(), value);
    chunk_ptr_ += n;
    chunk_left_ -= n;
    views_.push_back(CellView{row_.view(), family, std::string_view(p, qualifier.size()), timestamp, type,
                              std::string_view(p + qualifier.size(), value.size())});
  }

 private:
  void NewChunk(size_t at_least);

  // Cell bytes live in chunks that never move, so views stay valid as cells are added.
  ByteCopy row_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  std::vector<size_t> chunk_sizes_;
  size_t chunks_used_ = 0;
  bool odd_chunks_ = false;  // an oversized chunk to drop at the next Reset
  char* chunk_ptr_ = nullptr;
  size_t chunk_left_ = 0;
  std::vector<CellView> views_;
};

class RegionScanner {
 public:
  virtual ~RegionScanner() = default;
  // Fills *row with the next row that has visible cells (families in name order, then cell
  // order). Returns false at the end. DataLoss when a block is corrupt.
  virtual absl::StatusOr<bool> Next(RowResult* row) = 0;
  // The same, copying the cells out.
  absl::StatusOr<bool> NextRow(std::vector<Cell>* cells);

 private:
  RowResult scratch_;
};

class Region {
 public:
  // Opens (creating when new) the region in dir, replaying its log. Families come from the
  // descriptor; files of families not in it are ignored.
  static absl::StatusOr<std::unique_ptr<Region>> Open(const RegionOptions& options, const RegionDescriptor& desc,
                                                      const std::string& dir);
  ~Region();

  // Applies a batch: each row's mutations atomically. Errors: InvalidArgument (empty or
  // too-long row, unknown family), FailedPrecondition (region closed or failed).
  absl::Status Mutate(const std::vector<RowMutation>& batch, Durability durability = Durability::kSyncWal);
  absl::Status Put(std::string_view row, std::string_view family, std::string_view qualifier, std::string_view value,
                   int64_t ts = kLatestTimestamp, Durability durability = Durability::kSyncWal);

  // Read-modify-write of one row under its row lock (Increment, Append, CheckAndMutate): reads
  // the row with `spec`, seeing every earlier write to it, and calls `fn` with what it read.
  // `fn` fills the mutations to apply (none: nothing is written) or returns an error, which is
  // returned as is. Writes to the row wait meanwhile; `fn` must not call back into the region.
  using RowUpdateFn = std::function<absl::Status(const RowResult& current, std::vector<Mutation>* out)>;
  absl::Status MutateRowWith(std::string_view row, const ReadSpec& spec, const RowUpdateFn& fn,
                             Durability durability = Durability::kSyncWal);

  absl::StatusOr<std::vector<Cell>> Get(std::string_view row, const ReadSpec& spec = {});
  // The same into a reusable result (no allocation per cell once warm).
  absl::Status Get(std::string_view row, const ReadSpec& spec, RowResult* result);
  absl::StatusOr<std::unique_ptr<RegionScanner>> Scan(const ScanSpec& spec);

  // Writes every memstore to block files (also run in the background past the flush size).
  absl::Status Flush();
  // Runs a minor compaction of each store if its files call for one.
  absl::Status CompactMinor();
  // Flushes, then rewrites each store into one file without deleted, expired or surplus
  // versions and without delete markers. As in HBase, it compacts the files there are when it
  // starts: a put written meanwhile at a timestamp below a delete marker the compaction drops is
  // visible afterwards (it was hidden while the marker lived).
  absl::Status MajorCompact();
  // Waits for writes and a compaction in progress, flushes and stops background work; further writes, flushes
  // and compactions fail with FailedPrecondition (reads of what is there still work). Scanners
  // must not outlive the Region.
  absl::Status Close();

  RegionStats GetStats() const;
  const RegionDescriptor& descriptor() const { return desc_; }
  int64_t Now() const;

 private:
  Region(const RegionOptions& options, RegionDescriptor desc, std::string dir);
  absl::Status Recover();
  // Moves dir_/name into dir_/lost+found/ (durably) and logs it.
  absl::Status MoveAside(const std::string& name);
  void Log(std::string_view line) const;
  absl::Status WriteManifest();
  absl::Status FlushLocked();
  absl::Status CompactStore(Store* store, bool major);
  void BackgroundLoop();
  // A region failed on a full disk (ResourceExhausted) replaces its dead log and flushes; on
  // success it serves writes again. Runs on the background thread.
  bool Healable() const;
  absl::Status TryHeal();
  void MaybeScheduleBackground();
  uint64_t MemstoreBytes() const;
  Store* FindStore(std::string_view family) const;
  absl::Status CheckWritable() const;
  absl::Status ValidateBatch(const std::vector<RowMutation>& batch) const;
  static absl::Status CheckDurability(Durability d);
  // Mutate's work once the batch is valid and its rows are locked.
  absl::Status MutateLocked(const std::vector<RowMutation>& batch, Durability durability);
  uint64_t ReadPoint() const;
  absl::Status GetInto(std::string_view row, const ReadSpec& spec, RowResult* result);
  absl::Status CheckOpen() const;
  absl::Status Fail(absl::Status s);
  // The stores a read touches, in family name order; a family named twice gets the union.
  absl::StatusOr<internal::ColumnTargets> ResolveColumns(const ReadSpec& spec) const;

  RegionOptions options_;
  RegionDescriptor desc_;
  std::string dir_;
  std::map<std::string, std::unique_ptr<Store>, std::less<>> stores_;
  std::unique_ptr<Wal> wal_;
  std::atomic<const Wal*> wal_view_{nullptr};       // wal_, for GetStats without flush_mu_
  std::vector<std::unique_ptr<Wal>> retired_wals_;  // logs replaced by TryHeal (flush_mu_)

  // Sequence ids and the MVCC read point.
  mutable absl::Mutex seq_mu_;
  uint64_t last_seq_ ABSL_GUARDED_BY(seq_mu_) = 0;
  std::set<uint64_t> inflight_ ABSL_GUARDED_BY(seq_mu_);
  bool writes_blocked_ ABSL_GUARDED_BY(seq_mu_) = false;
  bool closing_ ABSL_GUARDED_BY(seq_mu_) = false;  // Close has begun: no new sequence ids
  // Readers hold it shared while taking their read point and every store's snapshot; a flush
  // holds it exclusively while its files replace the frozen memstores. So a read sees, for all
  // families at once, either the memstores (filtered by its read point) or the flushed files.
  absl::Mutex snapshot_mu_;
  std::atomic<uint64_t> read_point_{0};

  // Row locks: a fixed stripe of mutexes, taken in index order.
  static constexpr size_t kRowLockStripes = 1024;
  std::unique_ptr<absl::Mutex[]> row_locks_;

  absl::Mutex flush_mu_;       // one flush at a time
  absl::Mutex compaction_mu_;  // one compaction at a time
  absl::Mutex manifest_mu_;    // manifest writes
  std::atomic<uint64_t> next_file_number_{1};
  bool keep_log_aside_ = false;  // while opening after skipped log damage: old segments are kept
  std::atomic<uint64_t> flushed_seq_{0};

  mutable absl::Mutex state_mu_;
  absl::Status failed_ ABSL_GUARDED_BY(state_mu_);
  bool closed_ ABSL_GUARDED_BY(state_mu_) = false;
  bool bg_requested_ ABSL_GUARDED_BY(state_mu_) = false;
  bool bg_stop_ ABSL_GUARDED_BY(state_mu_) = false;
  std::thread bg_thread_;

  std::atomic<uint64_t> flushes_{0}, minor_compactions_{0}, major_compactions_{0}, blocked_writes_{0};
  uint64_t replayed_records_ = 0, replay_truncated_bytes_ = 0;
  uint64_t replay_skipped_records_ = 0, replay_skipped_bytes_ = 0;
};

}  // namespace basalt
