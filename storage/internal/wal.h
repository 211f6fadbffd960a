// The write-ahead log (DESIGN.md §3): one per region server, shared by its regions. Records are
// appended with group commit (many writers, one write + fdatasync per group); startup replays
// every segment in order and cuts a torn or corrupt tail, never applying it.
//
// Thread-safety: Wal is thread-safe. EncodeWalRecord/DecodeWalPayload/ReplayWal have no state.
//
// Segments are files `<dir>/<20-digit zero-padded number>.wal`, numbered upwards from 1. A
// segment is only ever appended to by the Wal that created it; a reopened Wal starts a new one.
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
//
// A record is valid only if its length fits in the file, its checksum matches and its payload
// decodes exactly (no trailing bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "src/common/env.h"
#include "storage/options.h"

namespace basalt {

inline constexpr size_t kWalHeaderSize = 8;  // length u32 + masked crc u32

struct WalEdit {
  std::string family;
  std::string key;  // flat key (storage/cell.h)
  std::string value;
  bool operator==(const WalEdit&) const = default;
};

struct WalRecord {
  std::string region;
  uint64_t seq = 0;
  std::vector<WalEdit> edits;
  bool operator==(const WalRecord&) const = default;
};

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

// "<dir>/<20-digit number>.wal"
std::string WalSegmentPath(const std::string& dir, uint64_t number);
// Parses a segment file name (not path); false for anything else.
bool ParseWalSegmentName(std::string_view name, uint64_t* number);

class Wal {
 public:
  struct Options {
    Env* env = nullptr;  // nullptr: Env::Default()
    std::string dir;
    uint64_t roll_size = 64ull << 20;  // roll once the current segment reaches this size
    int64_t async_sync_interval_ms = 100;
  };
  struct Stats {
    uint64_t records = 0;         // records appended
    uint64_t bytes = 0;           // framed bytes appended
    uint64_t syncs = 0;           // fdatasync calls
    uint64_t synced_records = 0;  // records made durable by those syncs
  };

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
  // Deletes every segment numbered below n (their edits are all flushed). InvalidArgument if n
  // is above the current segment (the live segment is never deleted).
  absl::Status DeleteSegmentsBefore(uint64_t n);
  Stats GetStats() const;

 private:
  explicit Wal(const Options& options, Env* env);
  // Waits until the records up to `ticket` are durable (or written, when !sync), leading a group
  // when no other leader is active. Requires mu_.
  absl::Status WaitFor(uint64_t ticket, bool sync) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the queued buffer, writes it (and syncs if asked, or if rolling), rolls if
  // `force_roll` or past roll_size. Called with mu_ held and leader_ false; releases mu_ around
  // I/O. Returns the I/O status (also stored in error_).
  absl::Status LeadGroup(bool sync, bool force_roll) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BackgroundSyncer();

  const Options options_;
  Env* const env_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;     // a group finished (durable_/written_/error_/leader_ changed)
  absl::CondVar bg_cv_;  // wakes the background syncer for shutdown
  std::string pending_ ABSL_GUARDED_BY(mu_);  // framed records queued, not yet written
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;   // records queued so far (tickets)
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;  // records written to a segment
  uint64_t durable_ ABSL_GUARDED_BY(mu_) = 0;  // records synced
  bool leader_ ABSL_GUARDED_BY(mu_) = false;   // a group is being written; file_ is its own
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  uint64_t segment_ ABSL_GUARDED_BY(mu_) = 0;
  // Used only by the leader (leader_ true) outside mu_, or under mu_ with no leader.
  std::unique_ptr<WritableFile> file_;
  std::thread syncer_;
};

struct ReplayStats {
  uint64_t segments = 0;
  uint64_t records = 0;
  uint64_t truncated_bytes = 0;  // bytes cut from torn/corrupt tails
  std::string truncated_at;      // "<segment path>@<offset>" of each cut, comma-separated
};

// Reads every segment in number order and calls fn for every intact record, in order. A torn or
// corrupt tail of the NEWEST segment (a record whose length runs past the end, whose checksum fails or
// whose payload does not decode, with no valid record after it) is cut: the segment is
// truncated at the end of the last good record and the cut reported in stats; it is never
// applied. A bad record followed by a valid one (corruption in the middle) is DataLoss naming
// the segment file and offset, and no record of that segment is applied; so is a bad tail of an
// older segment (it was synced whole before the log rolled, so damage there is lost data, and
// applying later segments would skip acknowledged writes). fn's error stops
// replay and is returned. A missing dir replays nothing. stats may be null.
absl::Status ReplayWal(Env* env, const std::string& dir,
                       const std::function<absl::Status(const WalRecord&)>& fn, ReplayStats* stats);

}  // namespace basalt
