// The write-ahead log a region server's regions share (docs/DESIGN.md, §3): one log, one group
// commit, so many regions' writers share each fdatasync (HBase's one WAL per region server).
// Each record names its region and carries that region's sequence id. The log rolls by size; a
// segment is deleted once every region with records in it has flushed past them, and past
// `max_logs` live segments the regions holding the oldest are asked to flush.
//
// Open first splits what a previous run left in the directory (HBase's log splitting): every
// intact record goes to its region's `recovered.edits/` (a log of the same format), which the
// region replays, flushes and removes when it opens (storage/region.h); records of regions whose
// table is gone are dropped and counted; then the old segments are deleted, or, after damage a
// recovery mode other than strict skipped, moved to `lost_found`. Until a split has run whole,
// the regions whose records the old segments may hold refuse to open (MayOpen), so none serves
// without its acknowledged writes: in strict mode damage in the old log (whose records could be
// any region's) keeps every region of the previous run closed, as an HBase log split that fails
// leaves the dead server's regions unassigned. RetrySplit runs it again once the operator has
// repaired what stopped it.
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/log_record.h"
#include "storage/options.h"

namespace basalt {

class Env;
class Wal;

// What a write-ahead log did (storage/internal/wal.h; ServerLog::GetStats).
struct LogStats {
  uint64_t records = 0;         // records appended
  uint64_t bytes = 0;           // framed bytes appended
  uint64_t syncs = 0;           // fdatasync calls
  uint64_t synced_records = 0;  // records made durable by those syncs
  uint64_t sync_micros = 0;     // time spent in those syncs
  uint64_t live_segments = 0;   // segments this log wrote that are not deleted yet
  uint64_t deleted_segments = 0;
  uint64_t forced_flushes = 0;  // flushes asked of regions because of max_logs
  uint64_t heals = 0;           // times the log resumed after a full disk (Heal)
};

// The directory, inside a region's, that a log split writes the region's records to.
inline constexpr char kRecoveredEditsDir[] = "recovered.edits";

class ServerLog {
 public:
  struct Options {
    Env* env = nullptr;  // nullptr: Env::Default()
    std::string dir;
    uint64_t roll_size = 64ull << 20;  // HBase: ~0.95 x the HDFS block size
    int max_logs = 32;                 // HBase's hbase.regionserver.maxlogs
    WalRecoveryMode recovery = WalRecoveryMode::kStrict;  // for the split's damage
    // For the split: every region whose records the old segments may hold (name -> its
    // directory), the tables that exist, and the table a region name belongs to. A record of a
    // region not listed whose table exists cannot be placed: the old segments are kept and that
    // table's regions refuse to open until a later start splits them.
    std::map<std::string, std::string> regions;
    std::set<std::string> tables;
    std::function<std::string(std::string_view region)> table_of;
    // A region not listed that has since split: the listed region that now holds `row` (its
    // records go there, edit by edit, as HBase's log splitting sends a split parent's edits to
    // its daughters). Empty: not such a region.
    std::function<std::string(std::string_view region, std::string_view row)> route;
    std::string lost_found;  // where segments holding damage a recovery mode skipped are moved
    // Records of regions neither listed nor routed are dropped (counted) instead of keeping the
    // segments: for a dead server's log split by a master, where every region the server had
    // open is listed and any other region's records were flushed when it closed there.
    bool drop_unknown_regions = false;
    // Readers' holds (Hold) keep at most this many segments beyond the regions' need; past it
    // the oldest hold is dropped and on_hold_dropped names it (never a full disk). 0: no bound.
    uint64_t max_held_segments = 0;
    std::function<void(const std::string&)> on_hold_dropped;
    // The last bytes written kept in memory while a reader holds the log (ReadRecent): a
    // replication shipper that keeps up then reads no file (on RADOS, none of the OSDs taking the
    // writes). 0: none.
    uint64_t recent_bytes = 4ull << 20;
    // Readers' holds carried over a restart: name -> the first segment each still needs (from
    // its persisted place). Once split, the previous run's segments at or above the lowest are
    // moved to HeldLogDir(dir), where only readers look (ReadLogFrom), never a split; those below
    // it go as before. They go from there as the holds move past them.
    std::map<std::string, uint64_t> holds;
    // What the split did, one line per call. Empty: standard error.
    std::function<void(std::string_view)> log;
  };
  struct SplitStats {
    uint64_t segments = 0;         // old segments read
    uint64_t records = 0;          // records written to regions' recovered.edits
    uint64_t regions = 0;          // regions that got records
    uint64_t dropped_records = 0;  // records of regions whose table is gone
    uint64_t routed_records = 0;   // records of split regions, sent on to the regions after them
    uint64_t truncated_bytes = 0;  // a torn tail cut
    std::vector<std::string> damage;  // skipped (recovery modes other than strict)
  };

  static absl::StatusOr<std::unique_ptr<ServerLog>> Open(const Options& options);
  // Splits a dead (fenced) server's log in options.dir into its regions' recovered.edits, then
  // removes the directory: what a master does before reopening the server's regions elsewhere.
  // Running it again after a crash part way through is harmless (a region applies each sequence
  // id once). The split's error leaves the directory as it was.
  static absl::StatusOr<SplitStats> SplitDeadServerLog(const Options& options);
  // Once every region is closed: removes the segments whose records are all flushed.
  ~ServerLog();
  ServerLog(const ServerLog&) = delete;
  ServerLog& operator=(const ServerLog&) = delete;

  // OK, or why `region` may not open yet: the old log could not be split whole (see above).
  absl::Status MayOpen(std::string_view region) const;
  // Not OK while the split of the old segments has not finished (its error).
  absl::Status split_error() const;
  // Splits the old segments again with these regions and tables (Options), when the last try
  // failed; OK at once when there is nothing left to split. Its error otherwise.
  absl::Status RetrySplit(const std::map<std::string, std::string>& regions, const std::set<std::string>& tables);
  SplitStats split_stats() const;
  // A region whose directory is gone (its table dropped): its records no longer keep segments.
  absl::Status ForgetRegion(const std::string& region);
  // Whether the log may still hold a record of `region`: in a live segment, or in the previous
  // run's segments while their split is left to retry. A region's meta row stays while it may
  // (a split parent's), so that a start-up split knows where its records go.
  bool HoldsRecordsOf(const std::string& region) const;
  LogStats GetStats() const;

  // --- Readers that follow the log (storage/log_tail.h: a replication source), by name.
  // Keeps segment `from` and every later one (in the log, and in HeldLogDir) until the reader
  // moves on (Hold again) or Releases.
  void Hold(const std::string& name, uint64_t from);
  void Release(const std::string& name);
  // Where the durable records end (ReadLogFrom reads up to it).
  WalPosition DurableEnd() const;
  // The durable bytes of `segment` from `offset` on, when still in memory (Options::
  // recent_bytes); nullopt otherwise. For ReadLogFrom's `recent`.
  std::optional<std::string> ReadRecent(uint64_t segment, uint64_t offset) const;
  const std::string& dir() const { return options_.dir; }
  // For the engine (storage/region.cc).
  Wal* wal() const { return wal_.get(); }

 private:
  explicit ServerLog(const Options& options);
  // Splits the segments numbered below `below` (0: all) by region; fills the split state.
  absl::Status Split(uint64_t below) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a split: removes the old segments (or records why not, blocking regions).
  void Finish(absl::Status split) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Say(std::string_view line) const;
  // Removes the held segments (HeldLogDir) below every hold (all of them when there is none).
  void PruneHeld();

  Options options_;
  std::unique_ptr<Wal> wal_;
  uint64_t first_own_ = 0;  // the first segment of this run's log
  mutable absl::Mutex mu_;  // the split state
  SplitStats split_stats_ ABSL_GUARDED_BY(mu_);
  absl::Status split_error_ ABSL_GUARDED_BY(mu_);
  bool block_all_ ABSL_GUARDED_BY(mu_) = false;  // every region of options_.regions waits
  std::set<std::string> blocked_tables_ ABSL_GUARDED_BY(mu_);  // these tables' regions wait
};

}  // namespace basalt
