// The write-ahead log (docs/DESIGN.md, §3): one per region server, shared by its regions
// (storage/server_log.h), and one of its own for basalt:meta and for a Region opened alone.
// Records are appended with group commit (many writers, one write + fdatasync per group);
// startup replays every segment in order and cuts a torn tail, never applying it.
//
// A log shared by regions knows, for every segment it wrote, the highest sequence id of each
// region's records in it; a region that flushed tells it so (MarkFlushed), and the oldest
// segments none of whose records is still needed are deleted. Past max_logs live segments it
// asks the regions holding the oldest one to flush (HBase's hbase.regionserver.maxlogs).
//
// Thread-safety: Wal is thread-safe. EncodeWalRecord/DecodeWalPayload/ReplayWal have no state.
//
// Segments are files `<dir>/<20-digit zero-padded number>.wal`, numbered upwards from 1. A
// segment is only ever appended to by the Wal that created it; a reopened Wal starts a new one,
// numbered after every segment that exists or existed (numbers are never reused).
//
// Every segment begins with a preamble and a header record, written and synced when the
// segment is created, before any record:
//
//   preamble = format stamp (common/format_stamp.h: magic "BSLTWALF", version 4,
//              min_reader_version 4) | u32 masked crc32c of the stamp          (20 bytes)
//   header   = a record of region "", seq = the segment's number, no edits
//
// A segment whose first bytes are not these was not written by this log (or was damaged),
// never a torn write; one asking for a newer reader is refused (FailedPrecondition) in every
// recovery mode. Version 1 segments (before the stamp) begin with the header record, and older
// ones with their first record; both are still read. `<dir>/SEGMENTS` (written durably whenever
// a segment is created or old ones go) records the range of live segments, so a deleted
// segment is found missing:
//
//   format stamp (magic "BSLTSEGS", version 2, min_reader_version 2) | u64 first live segment |
//   u64 newest segment | u32 masked crc32c of everything before it
//   (version 1: magic "BSLTWALS" alone in place of the stamp; still read)
//
// Record framing inside a segment (all integers little-endian):
//
//   +----------------+-----------------------+-----------------------+
//   | length u32     | masked crc u32        | payload (length bytes)|
//   +----------------+-----------------------+-----------------------+
//   crc = MaskCrc(Crc32c(4 length bytes ++ payload))
//
//   payload = region         (varint32 length + bytes)
//             seq            varint64
//             edit count     varint32
//             edit*          family, key, value (each varint32 length + bytes)
//                            key is a flat key (storage/cell.h); not parsed here
//             [nonce]        version 3: 'N', varint64 nonce group, varint64 nonce (non-zero):
//                            the client's id of a non-idempotent operation (Increment, Append,
//                            CheckAndMutate), kept with its edits so that a retry that reaches
//                            the region after a crash is recognised (HBase's nonces)
//             [clusters]     version 4: 'C', varint32 count (1 to kMaxWalClusterIds), each id
//                            varint32 length + bytes (1 to 64): the clusters a replicated edit
//                            came through (WalRecord::cluster_ids), so it is never shipped back
//
// A record is valid only if its length fits in the file, its checksum matches and its payload
// decodes exactly (no trailing bytes).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "storage/log_record.h"
#include "storage/options.h"
#include "storage/server_log.h"

namespace basalt {

inline constexpr size_t kWalHeaderSize = 8;  // length u32 + masked crc u32
// 3: records may carry a nonce (version 2 segments are read as ever); 4: and cluster ids (an
// older reader refuses a version 4 segment rather than take its ids for damage).
inline constexpr uint32_t kWalVersion = 4;
inline constexpr size_t kWalSegmentPreambleSize = 20;  // format stamp + its crc

// Where a segment's frames start: after the preamble when `segment` begins with one, else 0
// (a version 1 segment).
size_t WalFramesStart(std::string_view segment);

// The payload bytes of rec (no header).
std::string EncodeWalPayload(const WalRecord& rec);
// Appends the framed record (header + payload) to dst, exactly as it is written to a segment.
void AppendFramedWalRecord(std::string* dst, const WalRecord& rec);
// The framed record (header + payload).
std::string EncodeWalRecord(const WalRecord& rec);
// Decodes a payload. DataLoss on anything malformed (short, over-long counts, trailing bytes);
// never reads out of bounds, whatever the input.
absl::StatusOr<WalRecord> DecodeWalPayload(std::string_view payload);
// Parses one framed record at the start of `in`: checks the length fits, the checksum and the
// payload. On success stores the record and its framed size. DataLoss otherwise.
absl::StatusOr<WalRecord> DecodeFramedWalRecord(std::string_view in, size_t* framed_size);

// The header record that opens segment `number` (framed).
std::string EncodeWalSegmentHeader(uint64_t number);
inline constexpr char kWalIndexName[] = "SEGMENTS";

// "<dir>/<20-digit number>.wal"
std::string WalSegmentPath(const std::string& dir, uint64_t number);
// Parses a segment file name (not path); false for anything else.
bool ParseWalSegmentName(std::string_view name, uint64_t* number);
// The segment numbers in dir, ascending.
absl::StatusOr<std::vector<uint64_t>> ListSegments(Env* env, const std::string& dir);
// Whether dir holds log segments.
absl::StatusOr<bool> HasWalSegments(Env* env, const std::string& dir);
// Removes a log directory whose records are all flushed: SEGMENTS first, then the segments
// oldest first (a crash part way leaves a contiguous run replay reads and skips), then the
// directory. A missing dir is OK.
absl::Status DeleteWalDir(Env* env, const std::string& dir);

class Wal {
 public:
  struct Options {
    Env* env = nullptr;  // nullptr: Env::Default()
    std::string dir;
    uint64_t roll_size = 64ull << 20;  // roll once the current segment reaches this size
    // 0: no background syncer (ASYNC_WAL records wait for the next Sync or SYNC_WAL append).
    int64_t async_sync_interval_ms = 100;
    // Past this many rolled segments written by this log and still live, the regions holding records
    // of the oldest one are asked to flush (AttachRegion). 0: never. Needs the background syncer,
    // which delivers the requests.
    int max_logs = 0;
    // Holds (Hold) keep at most this many segments beyond what the regions need; past it the
    // oldest hold is dropped (on_hold_dropped says whose) and its segments go: a reader that fell
    // this far behind never makes the server run out of disk. 0: no bound.
    uint64_t max_held_segments = 0;
    // Called (without the log's locks, on the thread that rolled) with the name of a hold dropped.
    std::function<void(const std::string&)> on_hold_dropped;
    // Keeps at most the last this many bytes of records written in memory for readers that
    // follow the log (ReadRecent), so that one keeping up reads no file: while a reader holds the
    // log (Hold); a group of writes larger than this is not kept (nor, then, what came before
    // it). 0: none kept.
    uint64_t recent_bytes = 0;
  };
  using Stats = LogStats;

  // Creates dir if needed and starts a NEW segment numbered after any existing ones (never
  // appends to an old segment). Does not replay: replay (ReplayWal) first.
  static absl::StatusOr<std::unique_ptr<Wal>> Open(const Options& options);
  // Stops the background syncer, syncs what is queued, closes the segment.
  ~Wal();
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Appends one record. kSyncWal: returns once the record is durable; concurrent callers share
  // one write + fdatasync (group commit). kAsyncWal: returns once the record is queued; it is
  // synced by the next Sync/SYNC append or by the background syncer within
  // async_sync_interval_ms. kSkipWal must not be passed (InvalidArgument). After a write or sync
  // error every waiting and later caller gets that error: the WAL is dead and the server must
  // abort (an acknowledged write may never be lost).
  absl::Status Append(const WalRecord& rec, Durability d);
  // Makes every record appended before the call durable.
  absl::Status Sync();
  // Syncs the current segment, starts a new one, returns its number. Also happens by itself
  // when a segment reaches roll_size.
  absl::StatusOr<uint64_t> Roll();
  uint64_t current_segment() const;
  // Resumes the log after a write or sync error (a full disk): the current segment is cut back
  // to what was last synced (a partial write the error left is not taken for damage once newer
  // segments follow it) and a new segment starts; appends work again. Records cut were never
  // synced: a SYNC_WAL writer of theirs got the error; an ASYNC_WAL one's edits are still in its
  // region's memstore, so every attached region with records in the cut segment, or queued, is
  // asked to flush. OK and nothing done when the log has no error; the error (the log stays
  // dead) when the cut or the new segment fails.
  absl::Status Heal();
  // Deletes every segment numbered below n (their edits are all flushed). InvalidArgument if n
  // is above the current segment (the live segment is never deleted). With `move_to` set, the
  // segments are moved into that directory instead (log damage kept for the operator).
  absl::Status DeleteSegmentsBefore(uint64_t n, const std::string& move_to = "");
  Stats GetStats() const;

  // --- A log shared by regions.
  // `region` has every edit up to `seq` in block files: the oldest segments this log wrote
  // holding no record of any region above what that region flushed are deleted (never the
  // current one, and none while segments from before Open remain: those go by
  // DeleteSegmentsBefore once split).
  absl::Status MarkFlushed(const std::string& region, uint64_t seq);
  // At shutdown, once every region closed: rolls, so that every segment whose records are all
  // flushed is deleted, and the next Open finds only what it must split.
  absl::Status Retire();
  // A region gone for good (its table dropped): its records never keep a segment again.
  absl::Status ForgetRegion(const std::string& region);
  // Whether a live segment (or a write not yet in one) holds a record of `region`.
  bool HoldsRecordsOf(const std::string& region) const;
  // `request_flush` is called (from the log's background thread, or from Heal's caller) when
  // the log needs the region to flush; it must not block. Detach before the region goes;
  // DetachRegion waits for a call in progress.
  void AttachRegion(const std::string& region, std::function<void()> request_flush);
  void DetachRegion(const std::string& region);
  // --- Readers that follow the log (a replication source: storage/log_tail.h).
  // Keeps segment `from` and every later one until Release(name) or a later Hold(name, ...)
  // (segments below every hold and every region's need go as before). Bounded by
  // max_held_segments, counted from `from` (an earlier run's segments a reader holds count too).
  void Hold(const std::string& name, uint64_t from);
  void Release(const std::string& name);
  // The lowest segment a hold keeps; UINT64_MAX when there is no hold.
  uint64_t FirstHeldSegment() const;
  // Where the durable records end: every record before byte `offset` of segment `segment`, and
  // every record of the segments before it, is synced and whole (offset: a size of that file).
  WalPosition DurableEnd() const;
  // The bytes of segment `segment` from `offset` on, as far as they are durable, when the log
  // still has them in memory from `offset` (Options::recent_bytes); nullopt otherwise (read the
  // file). A segment's first bytes (its preamble and header) never are; a rolled segment's are
  // there to its end once its last group is.
  std::optional<std::string> ReadRecent(uint64_t segment, uint64_t offset) const;

  // Calls fn, in log order, for every record of `region` with a sequence id above `after` in the
  // segments this log wrote (a region that closed without flushing and opens again finds its
  // edits here). Rolls first, so those segments are whole. DataLoss on damage.
  absl::Status ReplayRegion(const std::string& region, uint64_t after,
                            const std::function<absl::Status(const WalRecord&)>& fn);

 private:
  explicit Wal(const Options& options, Env* env);
  // Waits until the records up to `ticket` are durable (or written, when !sync), leading a group
  // when no other leader is active; `gather`: such a group may gather first (GatherGroup), for a
  // SYNC_WAL Append, not for Sync, the background syncer or shutdown. Requires mu_.
  absl::Status WaitFor(uint64_t ticket, bool sync, bool gather = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the queued buffer, writes it (and syncs if asked, or if rolling), rolls if
  // `force_roll` or past roll_size. Called with mu_ held and leader_ false; releases mu_ around
  // I/O. Returns the I/O status (also stored in error_).
  absl::Status LeadGroup(bool sync, bool force_roll, bool gather = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Before a leader syncs: when the last synced group wrote kGatherMinGroup records or more and
  // fewer than three quarters as many are queued now, waits (mu_ released) until that many are
  // queued, for at most the last sync's duration (capped at kGatherMaxMicros). Many writers then
  // share fewer fdatasyncs — PostgreSQL's commit_delay, sized by the load itself. A writer
  // after small groups never waits; the first lone writer after a burst waits once, then the
  // groups it leads are small.
  void GatherGroup() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BackgroundSyncer();
  // Creates segment `number`: its header written and synced, the directory synced, then the
  // index naming it the newest. On failure before the index names it, the file is removed.
  absl::StatusOr<std::unique_ptr<WritableFile>> CreateSegment(uint64_t number);
  absl::Status WriteIndex(uint64_t first, uint64_t last) ABSL_EXCLUSIVE_LOCKS_REQUIRED(index_mu_);
  // The first segment MarkFlushed may not delete: the oldest one this log wrote that still
  // holds a record some region has not flushed (or the current one).
  uint64_t FirstNeededSegment() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The first segment DeleteCovered may not delete: FirstNeededSegment, or a hold's if lower.
  uint64_t FirstKeptSegment() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lowest segment a hold keeps; UINT64_MAX when there is none.
  uint64_t LowestHold() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the holds that keep more than max_held_segments beyond the regions' need; their names.
  std::vector<std::string> DropHoldsPastBound() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Regions holding records of the oldest live segment that they have not flushed, when more
  // than max_logs segments are live (empty otherwise).
  std::vector<std::string> RegionsToFlush() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RequestFlushes(const std::vector<std::string>& regions);
  // Deletes the segments MarkFlushed found covered.
  absl::Status DeleteCovered();

  using RegionSeqs = absl::flat_hash_map<std::string, uint64_t>;  // region -> highest seq

  const Options options_;
  Env* const env_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;     // a group finished (durable_/written_/error_/leader_ changed)
  absl::CondVar bg_cv_;  // wakes the background syncer for shutdown
  std::string pending_ ABSL_GUARDED_BY(mu_);  // framed records queued, not yet written
  RegionSeqs pending_regions_ ABSL_GUARDED_BY(mu_);  // whose records pending_ holds
  // Segments this log wrote (rolled and current) and whose records each holds.
  std::map<uint64_t, RegionSeqs> segment_regions_ ABSL_GUARDED_BY(mu_);
  RegionSeqs flushed_ ABSL_GUARDED_BY(mu_);  // MarkFlushed
  std::map<std::string, uint64_t> holds_ ABSL_GUARDED_BY(mu_);  // Hold: name -> first segment kept
  std::vector<std::string> flush_requests_ ABSL_GUARDED_BY(mu_);  // for the background thread
  uint64_t own_first_ = 0;  // the first segment this log wrote (set by Open)
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;   // records queued so far (tickets)
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;  // records written to a segment
  uint64_t durable_ ABSL_GUARDED_BY(mu_) = 0;  // records synced
  bool leader_ ABSL_GUARDED_BY(mu_) = false;   // a group is being written; file_ is its own
  // GatherGroup: the records the last synced group wrote and how long its sync took; while a
  // leader gathers, the queued_ count it waits for (0: no leader gathering).
  static constexpr uint64_t kGatherMinGroup = 4;
  static constexpr uint64_t kGatherMaxMicros = 1000;
  uint64_t last_group_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_sync_micros_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t gather_until_ ABSL_GUARDED_BY(mu_) = 0;
  absl::CondVar gather_cv_;  // the gathering leader's count is reached (or shutdown)
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  uint64_t segment_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t synced_size_ ABSL_GUARDED_BY(mu_) = 0;  // bytes of the current segment known synced
  // The last groups written (Options::recent_bytes), oldest first, each where it lies; a
  // segment's groups are contiguous. Emptied when Heal cuts the segment, and when a group is not
  // kept (larger than recent_bytes, or no reader holds the log): no gap is ever left. Shared,
  // so that ReadRecent copies the bytes after letting go of mu_.
  struct RecentGroup {
    uint64_t segment;
    uint64_t offset;
    std::shared_ptr<const std::string> bytes;
  };
  std::deque<RecentGroup> recent_ ABSL_GUARDED_BY(mu_);
  uint64_t recent_size_ ABSL_GUARDED_BY(mu_) = 0;
  // Used only by the leader (leader_ true) outside mu_, or under mu_ with no leader.
  std::unique_ptr<WritableFile> file_;
  std::thread syncer_;
  absl::Mutex heal_mu_;
  absl::Mutex delete_mu_;  // one deletion of segments at a time
  absl::Mutex attach_mu_;
  std::map<std::string, std::function<void()>> attached_ ABSL_GUARDED_BY(attach_mu_);
  absl::Mutex index_mu_;  // the SEGMENTS file and what it says
  uint64_t index_first_ ABSL_GUARDED_BY(index_mu_) = 0;
  uint64_t index_last_ ABSL_GUARDED_BY(index_mu_) = 0;
};

struct ReplayStats {
  uint64_t segments = 0;
  uint64_t records = 0;          // records passed to fn
  uint64_t truncated_bytes = 0;  // bytes cut from torn tails
  std::string truncated_at;      // "<segment path>@<offset>" of each cut, comma-separated
  // Damage left behind (only in modes other than strict, which stop at it instead): one line
  // each, naming the file, offset, size and the sequence ids around what is lost.
  std::vector<std::string> damage;
  uint64_t skipped_records = 0;  // intact records not applied (after a point-in-time stop)
  uint64_t skipped_bytes = 0;    // damaged bytes, and every byte after a point-in-time stop
  uint64_t max_seq = 0;          // highest seq of any intact record of the region, applied or not
};

struct ReplayOptions {
  WalRecoveryMode mode = WalRecoveryMode::kStrict;
  // The region whose records the sequence ids in messages and max_seq speak of ("": all).
  std::string region;
  // Not 0: only segments numbered below it (those a live log appends to are left alone).
  uint64_t below = 0;
};

// Reads every segment in number order and calls fn for every intact record, in order. A torn
// tail of the NEWEST segment (its last record cut short by a crash mid-write: the frame runs
// past the end of the file, or the file ends in zeros from inside it, and no intact record
// follows) is cut in every mode: the segment is truncated after the last good record, the cut
// reported in stats, nothing of it applied. Anything else is damage: a record that is whole
// but fails its checksum or does not decode, intact records after a bad one, a bad tail of an
// older segment (it was synced whole before the log rolled past it), a segment without its
// header, a segment missing from the range SEGMENTS records. In kStrict mode damage is
// DataLoss naming the file, offset and the region's sequence ids around the loss, and nothing
// after it is applied; kPointInTime applies what precedes the first damage and skips the rest;
// kSkipCorrupted skips each damaged span (to the next point from which intact records run to
// the end of the segment) and missing segments. fn's error stops replay and is returned. A
// missing dir replays nothing. stats may be null.
absl::Status ReplayWal(Env* env, const std::string& dir, const ReplayOptions& options,
                       const std::function<absl::Status(const WalRecord&)>& fn, ReplayStats* stats);
// The same in kStrict mode.
absl::Status ReplayWal(Env* env, const std::string& dir,
                       const std::function<absl::Status(const WalRecord&)>& fn, ReplayStats* stats);

}  // namespace basalt
