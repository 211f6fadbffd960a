// A region: one table's row range with one store per column family, its write-ahead log,
// flushes and compactions (docs/DESIGN.md, §1, §3). This is the storage engine's public face; the
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
#include "absl/time/time.h"
#include "absl/synchronization/mutex.h"
#include "storage/cell.h"
#include "storage/options.h"
#include "storage/read_filter.h"

namespace basalt {

struct CellView;

// Asked at a major compaction, row by row of each store, with the cells the compaction keeps
// (after versions, delete markers and TTL): true drops them all. The region server's (a
// queue's consumed entries, src/transactions/queue_eviction.h); one per compaction, not thread-safe.
class CompactionFilter {
 public:
  virtual ~CompactionFilter() = default;
  virtual bool DropRow(std::string_view row, const std::vector<CellView>& cells) = 0;
};

struct RegionDescriptor {
  std::string name;  // unique per WAL; also written in every log record
  std::vector<FamilyOptions> families;
  // The rows the region holds: [start_key, end_key); an empty end_key is the end of the key
  // space. A row outside them is refused with OutOfRange (RegionRangeError), a scan is clipped.
  std::string start_key;
  std::string end_key;
  bool Contains(std::string_view row) const {
    return row >= start_key && (end_key.empty() || row < end_key);
  }
  // Made for each major compaction of a store; empty: none.
  std::function<std::unique_ptr<CompactionFilter>()> compaction_filter = nullptr;
};

// The error for a row the region does not hold: OutOfRange naming the row, the region and its
// range. A region server answers it when a client's idea of the region boundaries is stale.
absl::Status RegionRangeError(const RegionDescriptor& desc, std::string_view row);

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

// A client's id of one non-idempotent operation (HBase's nonce group: the client, and nonce:
// the operation). A retry carries the same, so that a region that applied it does not again.
struct Nonce {
  uint64_t group = 0;
  uint64_t nonce = 0;  // 0: none
  bool operator==(const Nonce&) const = default;
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
  // Evaluated per row and per cell (storage/read_filter.h); shared by the read's scanners
  // (a table scan across regions), so its state carries on. Null: none.
  std::shared_ptr<ReadFilter> filter;
};

struct ScanSpec : ReadSpec {
  // Forward: start_row (inclusive) to stop_row (exclusive; empty: to the end).
  // Reversed (HBase's): rows in descending order from start_row (inclusive; empty: the last
  // row) down to stop_row (exclusive; empty: the first row).
  std::string start_row;
  std::string stop_row;
  uint64_t limit = 0;     // rows; 0: no limit
  bool reversed = false;
  bool start_exclusive = false;  // start_row itself is not scanned (a resumed scan)
};

// A region's counters, in one list: the struct below, a table's sum of its regions
// (src/regions/table.cc) and the RegionLoad message a region server reports them in
// (proto/basalt.proto, whose fields carry the same names; src/services/proto_convert.cc, and
// proto_convert_test checks the message against this list both ways) are made from it. A new
// counter is a line here, a field there, and the engine's code that counts it.
// X(name, how a table adds up its regions' values: kSum, kMax, or kProcess for a process-wide
// figure every region reports alike)
#define BASALT_REGION_COUNTERS(X)                                                                    \
  X(last_seq, kMax)                                                                                  \
  X(flushed_seq, kMax)                                                                               \
  X(memstore_bytes, kSum)                                                                            \
  X(flushes, kSum)                                                                                   \
  X(minor_compactions, kSum)                                                                         \
  X(major_compactions, kSum)                                                                         \
  X(compactions_running, kSum)    /* store compactions under way now */                              \
  X(compactions_queued, kSum)     /* compactions waiting for the one under way */                    \
  X(bloom_skips, kProcess)        /* files a read skipped on their bloom filter */                   \
  X(compacted_bytes, kSum)        /* input bytes of the compactions finished */                      \
  X(replayed_records, kSum)                                                                          \
  X(replay_truncated_bytes, kSum)                                                                    \
  /* log records and bytes not replayed at open (WalRecoveryMode other than strict) */               \
  X(replay_skipped_records, kSum)                                                                    \
  X(replay_skipped_bytes, kSum)                                                                      \
  /* of the region's own log; zero on the server log (ServerLog::GetStats has its figures) */        \
  X(wal_records, kSum)                                                                               \
  X(wal_syncs, kSum)                                                                                 \
  X(wal_synced_records, kSum)                                                                        \
  X(checksum_failures, kProcess)  /* blocks refused for a bad checksum */                            \
  X(blocked_writes, kSum)         /* writes that waited for a flush (memstore over its limit) */     \
  X(store_file_bytes, kSum)       /* block files, all families */                                    \
  X(largest_store_bytes, kMax)    /* of the family with the most */                                  \
  X(reference_files, kSum)        /* files of another region it still reads (a split or merge) */    \
  /* references a compaction has rewritten that a scan begun before it still reads: their files */   \
  /* (another region's) are still in use too */                                                      \
  X(references_still_read, kSum)                                                                     \
  X(read_requests, kSum)          /* Gets and scans */                                               \
  X(write_requests, kSum)         /* row mutations */

struct RegionStats {
#define BASALT_REGION_COUNTER_FIELD(name, how) uint64_t name = 0;
  BASALT_REGION_COUNTERS(BASALT_REGION_COUNTER_FIELD)
#undef BASALT_REGION_COUNTER_FIELD
  std::string failed;  // why the region failed (writes refused until it heals or reopens)
  std::map<std::string, size_t> files_per_family;
};


// A cell of a RowResult: views into bytes the result owns (all of them, the family included).
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
  // Replaces cell i's value (a filter's transform: KeyOnly).
  void SetValue(size_t i, std::string_view value) {
    char* p = Reserve(value.size());
    CopyBytes(p, value);
    views_[i].value = std::string_view(p, value.size());
  }

  // For the engine: start a row, then add its cells in order (views are valid as they are added).
  void Reset(std::string_view row);
  // Every byte is copied, the family once per run of cells from the same name: a store's name
  // dies with its region, and a split or a move can free the region while the row is encoded.
  void Add(std::string_view family, std::string_view qualifier, int64_t timestamp, CellType type,
           std::string_view value) {
    if (family.data() != family_source_.data() || family.size() != family_source_.size()) {
      char* f = Reserve(family.size());
      CopyBytes(f, family);
      family_source_ = family;
      family_ = std::string_view(f, family.size());
    }
    char* p = Reserve(qualifier.size() + value.size());
    CopyBytes(p, qualifier);
    CopyBytes(p + qualifier.size(), value);
    views_.push_back(CellView{row_.view(), family_, std::string_view(p, qualifier.size()), timestamp, type,
                              std::string_view(p + qualifier.size(), value.size())});
  }

 private:
  void NewChunk(size_t at_least);
  char* Reserve(size_t n) {
    if (n > chunk_left_) NewChunk(n);
    char* p = chunk_ptr_;
    chunk_ptr_ += n;
    chunk_left_ -= n;
    return p;
  }

  // Cell bytes live in chunks that never move, so views stay valid as cells are added.
  ByteCopy row_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  std::vector<size_t> chunk_sizes_;
  size_t chunks_used_ = 0;
  bool odd_chunks_ = false;  // an oversized chunk to drop at the next Reset
  char* chunk_ptr_ = nullptr;
  size_t chunk_left_ = 0;
  std::string_view family_source_;  // the last family added, as the engine passed it
  std::string_view family_;         // its copy in a chunk
  std::vector<CellView> views_;
};

class RegionScanner {
 public:
  virtual ~RegionScanner() = default;
  // Fills *row with the next row that has visible cells (families in name order, then cell
  // order). Returns false at the end. DataLoss when a block is corrupt.
  // Past the deadline (SetDeadline), a Next that is still skipping rows the filter refuses
  // returns true with *row empty: no row yet, and the scan is not over; the next call resumes
  // where it stopped (what an HBase region server's scan heartbeat is made of).
  virtual absl::StatusOr<bool> Next(RowResult* row) = 0;
  // InfiniteFuture (the default): Next never stops early.
  virtual void SetDeadline(absl::Time deadline) = 0;
  // The same, copying the cells out.
  absl::StatusOr<bool> NextRow(std::vector<Cell>* cells);

 private:
  RowResult scratch_;
};

// A region made of other regions' files: a split's daughters, a merge's region.
struct RegionSource {
  // Its directory. The new region must be opened beside it: references name it "../<name>".
  std::string dir;
  std::string start_row, end_row;  // the source's rows the new region takes ([start, end))
};
// Writes the manifest of a new region in `dir` (which may be written elsewhere and moved beside
// its sources before it opens) whose stores refer to each source's block files,
// seen through the source's rows (HBase's Reference files): no data is copied. Each source must
// be closed (flushed, so nothing of it is only in a log) and hold no references itself
// (FailedPrecondition). The new region starts from the highest flushed sequence id of its
// sources, so their log records (all flushed) are never applied to it twice. Its compactions
// rewrite the references into files of its own.
absl::Status WriteReferenceRegion(Env* env, const std::vector<RegionSource>& sources, const std::string& dir);

// A closed region directory `from` (a snapshot's region, Region::Snapshot) named again in `to`
// (made here): every block file its MANIFEST lists gets a second name there (Env::LinkFile; no
// byte is copied) and `to` gets a MANIFEST of its own naming them, without `from`'s nonces. `to`
// then opens as a region holding exactly `from`'s cells, and its flushes and compactions never
// touch `from`'s names. DataLoss for a damaged MANIFEST or a file it lists that is missing;
// FailedPrecondition when `from` still refers to another region's files. After an error `to`
// may hold some of the names, and its caller removes it.
struct LinkedFiles {
  uint64_t files = 0;
  uint64_t bytes = 0;
};
absl::StatusOr<LinkedFiles> LinkRegion(Env* env, const std::string& from, const std::string& to);

// A closed region directory `from` in `from_env` (a snapshot's region) copied into `to` in
// `to_env`: another store, another cluster's, a backup directory (the snapshot export,
// src/catalog/snapshot_export.h). Each block file its MANIFEST lists is read once and every
// block's header and checksums are verified as it is read (CopyBlockFile), or, when `to_env`
// holds the same file already (`find_copy`), named again there instead; then the MANIFEST,
// verbatim. A file already whole under its own name in `to` (a copy cut short and run again) is
// kept. DataLoss for damage in `from` (naming the file, the block and the offset), and whatever
// `to_env` refuses (a full disk): `to` may then hold some files, each whole, and its caller
// removes it or runs the copy again.
struct RegionCopyOptions {
  // Called as each block is written, with its bytes: progress and pacing. An error stops the copy.
  std::function<absl::Status(uint64_t bytes)> on_bytes;
  // The path in `to_env` of a file with the same contents as block file `name` of this region
  // (`size` bytes ending in `tail`, its trailer), to name again instead of copying; "" if none.
  std::function<std::string(std::string_view name, uint64_t size, std::string_view tail)> find_copy;
  size_t read_bytes = 4 << 20;  // each read of `from` (one RADOS round trip)
};
struct CopiedFiles {
  uint64_t files = 0, bytes = 0;                // the region's block files
  uint64_t copied_files = 0, copied_bytes = 0;  // read, verified and written
  uint64_t linked_files = 0, linked_bytes = 0;  // held by the target already (named again, or kept)
};
absl::StatusOr<CopiedFiles> CopyRegion(Env* from_env, const std::string& from, Env* to_env, const std::string& to,
                                       const RegionCopyOptions& options);
// One block file: its trailer decoded first, then every block from the first to the trailer read
// in `read_bytes` pieces, its header and checksums verified (VerifyRawBlock) and appended to
// "`to`.tmp", which is synced and renamed `to` once whole; a temporary is removed after an error.
// The blocks must tile the file exactly and end where the trailer's index, bloom and file info say.
absl::Status CopyBlockFile(Env* from_env, const std::string& from, Env* to_env, const std::string& to,
                           const std::function<absl::Status(uint64_t bytes)>& on_bytes, size_t read_bytes = 4 << 20);
// Whether `path` in `env` is the block file of `size` bytes ending in `tail` (its trailer's
// bytes, which hold the index's and file info's places and sizes and a CRC of them): how
// CopyRegion, and an export's search of its target, take a file there for the same one.
bool HoldsBlockFile(Env* env, const std::string& path, uint64_t size, std::string_view tail);

// The contract; the state lives behind it (storage/internal/region_impl.h).
class Region {
 public:
  // Opens (creating when new) the region in dir, replaying its log. Families come from the
  // descriptor; files of families not in it are ignored.
  static absl::StatusOr<std::unique_ptr<Region>> Open(const RegionOptions& options, const RegionDescriptor& desc,
                                                      const std::string& dir);
  virtual ~Region() = default;

  // Applies a batch: each row's mutations atomically. Errors: InvalidArgument (empty or
  // too-long row, unknown family), FailedPrecondition (region closed or failed).
  // With a `nonce` the region applied before (see MutateRowWith), nothing is applied again and
  // the answer is OK. `cluster_ids`: the clusters a replicated batch came through, kept in its
  // log record (WalRecord::cluster_ids; a replication sink's, none otherwise).
  virtual absl::Status Mutate(const std::vector<RowMutation>& batch, Durability durability = Durability::kSyncWal,
                              Nonce nonce = {}, const std::vector<std::string>& cluster_ids = {}) = 0;
  virtual absl::Status Put(std::string_view row, std::string_view family, std::string_view qualifier,
                           std::string_view value, int64_t ts = kLatestTimestamp,
                           Durability durability = Durability::kSyncWal) = 0;

  // Read-modify-write of one row under its row lock (Increment, Append, CheckAndMutate): reads
  // the row with `spec`, seeing every earlier write to it, and calls `fn` with what it read.
  // `fn` fills the mutations to apply (none: nothing is written) or returns an error, which is
  // returned as is. Writes to the row wait meanwhile; `fn` must not call back into the region.
  // With a `nonce` the region applied before (a retry: remembered in memory, in its log records
  // and in its manifest for RegionOptions::nonce_expiry_ms, so across a crash, a log split and
  // a move), `fn` is called with `out` null: nothing is applied again, and `fn` answers from the
  // cells the first attempt wrote (so a retried Increment returns its own new value, not one
  // another client's increment made since), or, once only the nonce is known (from a manifest,
  // after a flush or a move), from the row as stored now (HBase's nonces).
  using RowUpdateFn = std::function<absl::Status(const RowResult& current, std::vector<Mutation>* out)>;
  virtual absl::Status MutateRowWith(std::string_view row, const ReadSpec& spec, const RowUpdateFn& fn,
                                     Durability durability = Durability::kSyncWal, Nonce nonce = {}) = 0;

  virtual absl::StatusOr<std::vector<Cell>> Get(std::string_view row, const ReadSpec& spec = {}) = 0;
  // The same into a reusable result (no allocation per cell once warm).
  virtual absl::Status Get(std::string_view row, const ReadSpec& spec, RowResult* result) = 0;
  virtual absl::StatusOr<std::unique_ptr<RegionScanner>> Scan(const ScanSpec& spec) = 0;

  // Writes every memstore to block files (also run in the background past the flush size).
  virtual absl::Status Flush() = 0;
  // Runs a minor compaction of each store if its files call for one.
  virtual absl::Status CompactMinor() = 0;
  // Flushes, then rewrites each store into one file without deleted, expired or surplus
  // versions and without delete markers. As in HBase, it compacts the files there are when it
  // starts: a put written meanwhile at a timestamp below a delete marker the compaction drops is
  // visible afterwards (it was hidden while the marker lived).
  virtual absl::Status MajorCompact() = 0;
  // A snapshot of the region (docs/DESIGN.md §16): flushes, then gives every block file it reads a
  // second name in `dir` (made here; Env::LinkFile: no byte is copied) and writes there a
  // MANIFEST naming them, so that `dir` opens as a region holding exactly the cells this one held
  // at the flush: every write acknowledged before the call. No flush or compaction changes the
  // files meanwhile; writes go on. FailedPrecondition for a region that still reads another's
  // files (a split's daughter, until a compaction rewrites them: major_compact first); after any
  // other error `dir` may hold some of the names, and its caller removes it.
  using SnapshotFiles = LinkedFiles;
  virtual absl::StatusOr<SnapshotFiles> Snapshot(const std::string& dir) = 0;
  // Where the region would split (HBase's): the row of the middle key of the largest file of
  // its largest store. FailedPrecondition when it has no flushed data, when that row is its
  // start, or while it still refers to another region's files (a daughter not yet compacted).
  virtual absl::StatusOr<std::string> SplitPoint() const = 0;
  // Waits for writes and a compaction in progress, flushes and stops background work; further writes, flushes
  // and compactions fail with FailedPrecondition (reads of what is there still work). Scanners
  // must not outlive the Region.
  virtual absl::Status Close() = 0;

  virtual RegionStats GetStats() const = 0;
  virtual const RegionDescriptor& descriptor() const = 0;
  virtual int64_t Now() const = 0;
};

}  // namespace basalt
