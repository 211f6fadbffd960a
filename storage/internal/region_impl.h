// The state behind storage/region.h's Region: its stores, log, sequence ids, locks and
// background work. Only the region's own files use it: storage/region.cc (open, recovery,
// writes), region_maintenance.cc (flushes, compactions, close) and region_read.cc (Get, Scan).
//
// Thread-safety: as Region's.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "storage/region.h"
#include "storage/internal/manifest.h"
#include "storage/internal/visibility.h"
#include "storage/internal/wal.h"

namespace basalt {

class BlockFileReader;
class Store;
class Wal;
struct WalRecord;
struct Manifest;

namespace internal {
// A store a read touches, with its sorted qualifier filter (all: the whole family).
struct ColumnTarget {
  Store* store;
  bool all;
  std::vector<std::string> qualifiers;
};
// Most reads touch one or two families: kept inline, no allocation per Get.
using ColumnTargets = absl::InlinedVector<ColumnTarget, 2>;

// A region directory's manifest, and where what its recovery cannot place is moved.
inline constexpr char kManifestName[] = "MANIFEST";
inline constexpr char kLostFoundDir[] = "lost+found";

// Whether a qualifier filter (sorted; null: all) selects `q`.
inline bool Selected(const std::vector<std::string>* quals, std::string_view q) {
  return quals == nullptr || std::binary_search(quals->begin(), quals->end(), q);
}

// The version rules of a read.
inline ReadRules RulesOf(const ReadSpec& spec) {
  ReadRules r;
  r.min_ts = spec.min_ts;
  r.max_ts = spec.max_ts;
  r.max_versions = spec.max_versions;
  return r;
}
// A closed region directory's MANIFEST, as a snapshot's copy (LinkRegion, CopyRegion) reads it:
// its bytes and what they say. DataLoss when it is missing or damaged; FailedPrecondition when it
// still refers to another region's files (a split's daughter not yet compacted).
struct ClosedRegionManifest {
  std::string bytes;
  Manifest manifest;
};
absl::StatusOr<ClosedRegionManifest> ReadClosedRegionManifest(Env* env, const std::string& dir);
}  // namespace internal

class RegionImpl final : public Region {
 public:
  absl::Status Mutate(const std::vector<RowMutation>& batch, Durability durability, Nonce nonce = {},
                      const std::vector<std::string>& cluster_ids = {}) override;
  absl::Status Put(std::string_view row, std::string_view family, std::string_view qualifier, std::string_view value,
           int64_t ts, Durability durability) override;
  absl::Status MutateRowWith(std::string_view row, const ReadSpec& spec, const RowUpdateFn& fn,
                     Durability durability, Nonce nonce) override;
  absl::StatusOr<std::vector<Cell>> Get(std::string_view row, const ReadSpec& spec) override;
  absl::Status Get(std::string_view row, const ReadSpec& spec, RowResult* result) override;
  absl::StatusOr<std::unique_ptr<RegionScanner>> Scan(const ScanSpec& spec) override;
  absl::Status Flush() override;
  absl::Status CompactMinor() override;
  absl::Status MajorCompact() override;
  absl::StatusOr<std::string> SplitPoint() const override;
  absl::StatusOr<SnapshotFiles> Snapshot(const std::string& dir) override;
  absl::Status Close() override;
  RegionStats GetStats() const override;
  const RegionDescriptor& descriptor() const override { return desc_; }
  int64_t Now() const override;

  RegionImpl(const RegionOptions& options, RegionDescriptor desc, std::string dir);
  ~RegionImpl() override;

 private:
  friend class Region;  // Open
  absl::Status Recover();
  // Recover's steps, in order (region.cc).
  struct Replay;
  absl::Status ListBlockFiles(std::map<uint64_t, std::string>* block_files);
  absl::Status ReadManifest(bool have_manifest, const std::map<uint64_t, std::string>& block_files, Manifest* m);
  absl::Status OpenBlockFiles(const Manifest& m, const std::map<uint64_t, std::string>& block_files,
                              std::map<std::string, std::vector<std::string>>* dropped);
  absl::Status ReplayLogs(const Manifest& m, Replay* replay);
  absl::Status AttachToServerLog(const Replay& replay);
  absl::Status OpenOwnLog(const Replay& replay);
  // Replays log records newer than the manifest's into the memstores, once each (a record a
  // crash made a log split write twice is skipped the second time). Sets last.
  absl::Status ReplayDir(const std::string& dir, Replay* replay);
  absl::Status ApplyRecord(const WalRecord& rec, Replay* replay);
  // Moves dir_/name (a file or directory) into dir_/lost+found/ (durably) and logs it and why.
  absl::Status MoveAside(const std::string& name, std::string_view why);
  void Log(std::string_view line) const;
  absl::Status WriteManifest();
  absl::Status FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(flush_mu_);
  // Flush, steps 2 and 3: writes the frozen memstores (edits <= flush_seq) to block files,
  // installs them, records them in the manifest and lets the log go up to `segment` (none: the
  // log did not roll; nothing goes).
  absl::Status WriteFrozenLocked(uint64_t flush_seq, std::optional<uint64_t> segment)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(flush_mu_);
  absl::Status CompactStore(Store* store, bool major);
  // Rewrites every store that holds references (HBase compacts a daughter's first).
  absl::Status CompactReferences();
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
  // `nonce` (none: 0) goes into the log record, and is remembered once the write is applied.
  // `keep_answer`: the nonce is remembered with the cells written (a read-modify-write's answer).
  absl::Status MutateLocked(const std::vector<RowMutation>& batch, Durability durability, Nonce nonce = {},
                            bool keep_answer = false, const std::vector<std::string>& cluster_ids = {});
  // The nonces of operations applied here (RegionOptions::nonce_expiry_ms): whether one is
  // (and then, in *applied, the cells it wrote when they are known: from its write or its log
  // record, not from a manifest), remembering one (at `ms`, its write's time, with the log
  // edits it wrote), and those not yet expired, for the manifest.
  bool NonceApplied(Nonce nonce, std::string_view row, RowResult* applied);
  void RememberNonce(Nonce nonce, int64_t ms, const std::vector<WalEdit>* edits = nullptr);
  // Fills m->nonces and m->answers.
  void LiveNonces(Manifest* m);
  uint64_t ReadPoint() const { return read_point_.load(std::memory_order_acquire); }
  absl::Status GetInto(std::string_view row, const ReadSpec& spec, RowResult* result);
  absl::Status CheckOpen() const;
  absl::Status Fail(absl::Status s);
  // The stores a read touches, in family name order; a family named twice gets the union.
  absl::StatusOr<internal::ColumnTargets> ResolveColumns(const ReadSpec& spec) const;

  RegionOptions options_;
  RegionDescriptor desc_;
  std::string dir_;
  std::map<std::string, std::unique_ptr<Store>, std::less<>> stores_;
  // Where edits are logged: the server's shared log, or own_wal_. Set once by Recover.
  Wal* log_ = nullptr;
  std::unique_ptr<Wal> own_wal_;
  bool shared_log() const { return options_.server_log != nullptr; }
  bool attached_ = false;  // to the shared log, for flush requests (Close detaches)

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

  absl::Mutex nonce_mu_;
  struct AppliedNonce {
    int64_t ms = 0;
    std::vector<WalEdit> puts;  // the cells it wrote (its answer to a retry); empty: unknown
  };
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, AppliedNonce> nonces_ ABSL_GUARDED_BY(nonce_mu_);

  absl::Mutex flush_mu_;       // one flush at a time
  // A flush that froze the memstores and then failed (a full disk): the frozen memstores hold
  // the edits <= frozen_seq_, and the log rolled to frozen_segment_ when they froze. The next
  // flush writes them first, as that flush would have, before it freezes what came since.
  uint64_t frozen_seq_ ABSL_GUARDED_BY(flush_mu_) = 0;
  std::optional<uint64_t> frozen_segment_ ABSL_GUARDED_BY(flush_mu_);
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

  std::atomic<uint64_t> read_requests_{0}, write_requests_{0};
  std::atomic<uint64_t> flushes_{0}, minor_compactions_{0}, major_compactions_{0}, blocked_writes_{0};
  std::atomic<uint64_t> compacting_{0};        // store compactions running now
  std::atomic<uint64_t> compactions_queued_{0};  // waiting for compaction_mu_
  std::atomic<uint64_t> compacted_bytes_{0};   // input bytes of finished compactions
  // References compacted away whose readers a scan may still hold: the parent's files they read
  // must stay until these expire (RegionStats::references_still_read).
  mutable absl::Mutex retired_references_mu_;
  mutable std::vector<std::weak_ptr<const BlockFileReader>> retired_references_
      ABSL_GUARDED_BY(retired_references_mu_);
  uint64_t replayed_records_ = 0, replay_truncated_bytes_ = 0;
  uint64_t replay_skipped_records_ = 0, replay_skipped_bytes_ = 0;
};

}  // namespace basalt
