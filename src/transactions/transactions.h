// The transaction service (docs/DESIGN.md §7), as Apache Tephra's TransactionManager.
//
// A transaction gets a write pointer, unique and increasing (wall-clock milliseconds x 10^6
// plus a counter, as Tephra's, so pointers stay ahead of any issued before a restart), which is
// also the timestamp of every cell it writes, and a snapshot: the read pointer (the pointer
// issued before its own) and the excluded pointers (the transactions in progress or invalid
// when it started). It sees a version when the version is its own, or at or below the read
// pointer and not excluded (TxSnapshot::Visible): what committed before it started, nothing
// else.
//
// Commit checks write-write conflicts optimistically: each transaction sends its change set
// (fingerprints of the cells or rows it wrote); one that committed after this one started and
// changed any of the same is a conflict, and this one fails with Aborted. The loser then rolls
// back its writes (the client deletes exactly its versions) and calls Abort; a client that
// cannot roll back calls Invalidate, and its writes stay hidden for good. A transaction not
// committed or aborted within its timeout becomes invalid (a dead client's writes are never
// seen), and its commit is refused.
//
// State lives in a record log (storage/record_log.h) on the same storage as the data: Start,
// Commit and Invalidate return once their record is durable (a commit is visible to no one
// before that), Abort does not wait. The log is checkpointed into one record of the whole state
// once it passes checkpoint_bytes. After a crash the log is replayed: transactions in progress
// stay so (their clients may still commit) until they time out.
//
// Differences from Tephra: commit is one call (canCommit and commit together); the change set
// travels as 64-bit fingerprints (a collision can only make a false conflict); the invalid list
// is not pruned yet.
//
// The state log (`<data_dir>/transactions/`, a RecordLog: WAL segments whose records each carry
// one of these as a value; storage/record_log.h). Varints are LevelDB's, signed ones zigzagged:
//
//   'S' start:      svarint write pointer | svarint expiry (ms) | svarint floor | svarint oldest
//                   [| varint n | n bytes owner]  (absent: no owner, or written by a version before owners)
//   'C' commit:     svarint write pointer | svarint commit pointer | varint n | n × u64 change
//   'A' abort:      svarint write pointer
//   'I' invalidate: svarint write pointer
//   'L' checkpoint: svarint last pointer |
//                   varint n | n × (svarint write pointer | svarint expiry | svarint floor |
//                                   svarint oldest | varint m | m bytes owner)  (in progress) |
//                   varint n | n × svarint write pointer  (invalid) |
//                   varint n | n × (svarint commit pointer | varint m | m × u64 change)
//
//   'K' checkpoint: as 'L' without the owners (written by a version before owners; still read)
//
// Replay applies them in order; each is idempotent (a checkpoint taken while a record was on
// its way is followed by that record). A timeout is not logged: replay finds the expiry.
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "storage/record_log.h"

namespace basalt {
class Env;
}

namespace basalt::server {

// Who asks to end a transaction: its user ("" with authentication off), and whether it may end
// any user's (global A, or access control off). A transaction belongs to the user who started it.
struct TxCaller {
  std::string user;
  bool may_end_any = true;
};

// What a transaction reads (rpc::TransactionSnapshot).
struct TxSnapshot {
  int64_t write_pointer = 0;  // its own; 0: a read outside any transaction
  int64_t read_pointer = 0;
  std::vector<int64_t> excluded;  // ascending
  std::vector<int64_t> in_progress;  // those of excluded still in progress, ascending
  bool Visible(int64_t ts) const;
};

class TransactionManager {
 public:
  struct Options {
    Env* env = nullptr;  // nullptr: Env::Default()
    std::string dir;     // the state log's directory
    int64_t default_timeout_ms = 30000;  // Tephra's data.tx.timeout
    int64_t max_timeout_ms = 24 * 3600 * 1000;
    uint64_t checkpoint_bytes = 4 << 20;
    // Transactions one owner may have in progress at once (docs/DESIGN.md §12: each costs every snapshot a
    // pointer); 0: no cap. Transactions without an owner (authentication off) are not capped.
    int max_in_progress_per_owner = 1000;
    std::function<int64_t()> now_ms;  // the wall clock in milliseconds; empty: the system's
  };
  struct Stats {
    int64_t last_write_pointer = 0;
    uint64_t in_progress = 0, invalid = 0, change_sets = 0;
    uint64_t started = 0, committed = 0, conflicts = 0, aborted = 0, invalidated = 0, timed_out = 0;
    uint64_t replayed_records = 0;
  };

  // Replays the state log in options.dir (DataLoss on damage: the server must not start).
  static absl::StatusOr<std::unique_ptr<TransactionManager>> Open(const Options& options);
  ~TransactionManager();

  // A new transaction of `owner` (its user; "" with authentication off), in progress until it
  // commits, aborts or times out (timeout_ms; 0: the default). InvalidArgument for a negative
  // timeout or one above max_timeout_ms; ResourceExhausted when the owner has
  // max_in_progress_per_owner in progress already.
  absl::StatusOr<TxSnapshot> Start(int64_t timeout_ms, std::string_view owner = "");
  // Commit, Abort and Invalidate of another user's transaction in progress are PermissionDenied
  // unless `caller` may end any.
  //
  // Aborted on a write-write conflict (the transaction stays in progress: roll back, then
  // Abort); FailedPrecondition when it is not in progress (timed out and invalid, already
  // committed or aborted, or unknown).
  absl::Status Commit(int64_t write_pointer, absl::Span<const uint64_t> changes, const TxCaller& caller = {});
  // Ends a transaction whose writes were rolled back. FailedPrecondition when not in progress
  // (an invalid one stays invalid).
  absl::Status Abort(int64_t write_pointer, const TxCaller& caller = {});
  // Makes a transaction invalid for good (its writes could not be rolled back). OK if it is
  // invalid already; FailedPrecondition for a committed or unknown one.
  absl::Status Invalidate(int64_t write_pointer, const TxCaller& caller = {});
  // Whether `caller` may write with `write_pointer` (a region server's check of a transactional
  // write: the pointer is the client's word, and would otherwise let anyone write into another
  // user's transaction, or into one already committed or aborted, where the cells would show
  // at once). OK for a transaction in progress (not committing) that is the caller's, or when
  // the caller may end any; OK for an invalid one (its writes are never seen: a rollback after
  // a time-out); PermissionDenied for another user's; FailedPrecondition otherwise.
  absl::Status CheckWriter(int64_t write_pointer, const TxCaller& caller);
  // What a read outside any transaction sees: everything committed now.
  TxSnapshot ReadSnapshot();
  // What a compaction may take as settled for good: a version written by a transaction that
  // did not roll it back is seen by every snapshot, now and later, when it is below `bound` (no
  // transaction in progress can exclude it) and not invalid.
  struct Horizon {
    int64_t bound = 0;
    std::vector<int64_t> invalid;  // ascending
    bool Settled(int64_t ts) const;
  };
  Horizon SettledHorizon();
  Stats GetStats();

 private:
  struct InProgress {
    int64_t expires_ms;
    // The oldest commit pointer whose change set this transaction's commit checks: its own
    // write pointer, or older when transactions were committing as it started (their commit
    // pointers are below its write pointer, yet its snapshot excludes them: their record was
    // not durable yet).
    int64_t floor;
    // The oldest transaction in progress when it started (or itself): its snapshot sees every
    // committed transaction older than that.
    int64_t oldest;
    int64_t commit_pointer = 0;  // once committing: its commit record is being written
    std::string owner;           // the user who started it ("" none)
  };
  struct ChangeSet {
    int64_t commit_pointer;
    absl::flat_hash_set<uint64_t> changes;
  };

  explicit TransactionManager(const Options& options);
  int64_t NowMs() const;
  absl::Status Apply(std::string_view record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t NextPointer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireTimedOut() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PruneChangeSets() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  TxSnapshot SnapshotLocked(int64_t write_pointer, int64_t read_pointer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string EncodeState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checkpoints the log once it has grown past checkpoint_bytes. Errors are returned to the
  // caller whose record passed the mark (the log is dead then).
  absl::Status MaybeCheckpoint();
  // OK when `caller` may end `tx` (`what`: "commit", "abort", "invalidate").
  absl::Status CheckOwner(const InProgress& tx, int64_t write_pointer, const TxCaller& caller,
                          std::string_view what) const;
  // "transaction <p>" with, when it is over, what happened to it.
  std::string NotInProgress(int64_t write_pointer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  std::unique_ptr<RecordLog> log_;
  absl::Mutex mu_;
  int64_t last_pointer_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, InProgress> in_progress_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> invalid_ ABSL_GUARDED_BY(mu_);
  std::deque<ChangeSet> change_sets_ ABSL_GUARDED_BY(mu_);  // by commit pointer, ascending
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> checkpointing_{false};
};

}  // namespace basalt::server
