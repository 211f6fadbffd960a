#include "src/transactions/transactions.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"

namespace basalt::server {

namespace {

// The state log's record kinds (drawn in transactions.h).
enum : char {
  kStart = 'S',
  kCommit = 'C',
  kAbort = 'A',
  kInvalidate = 'I',
  kCheckpoint = 'K',            // before owners (read, never written)
  kCheckpointWithOwners = 'L',
};

// Tephra's TxConstants.MAX_TX_PER_MS: write pointers are milliseconds x 10^6 plus a counter.
constexpr int64_t kPointersPerMs = 1000000;

void PutSigned(std::string* dst, int64_t v) { PutVarint64(dst, ZigZag(v)); }
bool GetSigned(std::string_view* in, int64_t* v) {
  uint64_t u;
  if (!GetVarint64(in, &u)) return false;
  *v = UnZigZag(u);
  return true;
}

std::string Record(char kind, int64_t write_pointer) {
  std::string r(1, kind);
  PutSigned(&r, write_pointer);
  return r;
}

}  // namespace

bool TxSnapshot::Visible(int64_t ts) const {
  if (ts == write_pointer && write_pointer != 0) return true;
  if (ts > read_pointer) return false;
  return !std::binary_search(excluded.begin(), excluded.end(), ts);
}

TransactionManager::TransactionManager(const Options& options) : options_(options) {}
TransactionManager::~TransactionManager() = default;

int64_t TransactionManager::NowMs() const {
  if (options_.now_ms) return options_.now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<TransactionManager>> TransactionManager::Open(const Options& options) {
  std::unique_ptr<TransactionManager> m(new TransactionManager(options));
  RecordLog::Options lo;
  lo.env = options.env;
  lo.dir = options.dir;
  lo.name = "the transaction log";
  TransactionManager* raw = m.get();
  BASALT_ASSIGN_OR_RETURN(m->log_, RecordLog::Open(lo, [raw](std::string_view record) {
                            absl::MutexLock l(&raw->mu_);
                            ++raw->stats_.replayed_records;
                            return raw->Apply(record);
                          }));
  {
    absl::MutexLock l(&m->mu_);
    m->PruneChangeSets();
  }
  // A log that replayed many records starts afresh from one.
  if (m->log_ != nullptr) {
    BASALT_RETURN_IF_ERROR(m->log_->Checkpoint([raw] {
      absl::MutexLock l(&raw->mu_);
      return raw->EncodeState();
    }));
  }
  return m;
}

absl::Status TransactionManager::Apply(std::string_view record) {
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(absl::StrCat("the transaction log holds a malformed record (", AV(what), ")"));
  };
  if (record.empty()) return bad("empty");
  const char kind = record[0];
  std::string_view in = record.substr(1);
  int64_t wp;
  switch (kind) {
    case kStart: {
      int64_t expires, floor, oldest;
      std::string_view owner;  // (none in a record written before owners)
      if (!GetSigned(&in, &wp) || !GetSigned(&in, &expires) || !GetSigned(&in, &floor) ||
          !GetSigned(&in, &oldest) || (!in.empty() && !GetLengthPrefixed(&in, &owner)) || !in.empty()) {
        return bad("start");
      }
      last_pointer_ = std::max(last_pointer_, wp);
      in_progress_[wp] = InProgress{expires, floor, oldest, 0, std::string(owner)};
      return absl::OkStatus();
    }
    case kCommit: {
      int64_t cp;
      uint64_t n;
      if (!GetSigned(&in, &wp) || !GetSigned(&in, &cp) || !GetVarint64(&in, &n) || n > in.size() / 8) {
        return bad("commit");
      }
      ChangeSet cs{cp, {}};
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t c = 0;
        GetFixed64(&in, &c);
        cs.changes.insert(c);
      }
      if (!in.empty()) return bad("commit");
      last_pointer_ = std::max(last_pointer_, cp);
      in_progress_.erase(wp);
      auto pos = std::lower_bound(change_sets_.begin(), change_sets_.end(), cp,
                                  [](const ChangeSet& a, int64_t p) { return a.commit_pointer < p; });
      if (!cs.changes.empty() && (pos == change_sets_.end() || pos->commit_pointer != cp)) {
        change_sets_.insert(pos, std::move(cs));
      }
      return absl::OkStatus();
    }
    case kAbort:
    case kInvalidate:
      if (!GetSigned(&in, &wp) || !in.empty()) return bad(kind == kAbort ? "abort" : "invalidate");
      in_progress_.erase(wp);
      if (kind == kInvalidate) invalid_.insert(wp);
      return absl::OkStatus();
    case kCheckpoint:
    case kCheckpointWithOwners: {
      uint64_t n;
      in_progress_.clear();
      invalid_.clear();
      change_sets_.clear();
      if (!GetSigned(&in, &last_pointer_) || !GetVarint64(&in, &n) || n > in.size()) return bad("checkpoint");
      for (uint64_t i = 0; i < n; ++i) {
        int64_t expires, floor, oldest;
        std::string_view owner;
        if (!GetSigned(&in, &wp) || !GetSigned(&in, &expires) || !GetSigned(&in, &floor) ||
            !GetSigned(&in, &oldest) || (kind == kCheckpointWithOwners && !GetLengthPrefixed(&in, &owner))) {
          return bad("checkpoint: in progress");
        }
        in_progress_[wp] = InProgress{expires, floor, oldest, 0, std::string(owner)};
      }
      if (!GetVarint64(&in, &n) || n > in.size()) return bad("checkpoint");
      for (uint64_t i = 0; i < n; ++i) {
        if (!GetSigned(&in, &wp)) return bad("checkpoint: invalid");
        invalid_.insert(wp);
      }
      if (!GetVarint64(&in, &n) || n > in.size()) return bad("checkpoint");
      for (uint64_t i = 0; i < n; ++i) {
        ChangeSet cs{0, {}};
        uint64_t m;
        if (!GetSigned(&in, &cs.commit_pointer) || !GetVarint64(&in, &m) || m > in.size() / 8) {
          return bad("checkpoint: change set");
        }
        for (uint64_t j = 0; j < m; ++j) {
          uint64_t c = 0;
          GetFixed64(&in, &c);
          cs.changes.insert(c);
        }
        change_sets_.push_back(std::move(cs));
      }
      if (!in.empty()) return bad("checkpoint: trailing bytes");
      return absl::OkStatus();
    }
    default:
      return bad(absl::StrCat("kind ", static_cast<int>(static_cast<unsigned char>(kind))));
  }
}

std::string TransactionManager::EncodeState() {
  std::string r(1, kCheckpointWithOwners);
  PutSigned(&r, last_pointer_);
  PutVarint64(&r, in_progress_.size());
  for (const auto& [wp, tx] : in_progress_) {
    PutSigned(&r, wp);
    PutSigned(&r, tx.expires_ms);
    PutSigned(&r, tx.floor);
    PutSigned(&r, tx.oldest);
    PutLengthPrefixed(&r, tx.owner);
  }
  PutVarint64(&r, invalid_.size());
  for (int64_t wp : invalid_) PutSigned(&r, wp);
  PutVarint64(&r, change_sets_.size());
  for (const ChangeSet& cs : change_sets_) {
    PutSigned(&r, cs.commit_pointer);
    PutVarint64(&r, cs.changes.size());
    for (uint64_t c : cs.changes) PutFixed64(&r, c);
  }
  return r;
}

int64_t TransactionManager::NextPointer() {
  last_pointer_ = std::max(last_pointer_ + 1, NowMs() * kPointersPerMs);
  return last_pointer_;
}

void TransactionManager::ExpireTimedOut() {
  const int64_t now = NowMs();
  for (auto it = in_progress_.begin(); it != in_progress_.end();) {
    if (it->second.commit_pointer == 0 && it->second.expires_ms < now) {
      invalid_.insert(it->first);
      ++stats_.timed_out;
      it = in_progress_.erase(it);
    } else {
      ++it;
    }
  }
}

void TransactionManager::PruneChangeSets() {
  // A change set matters to the transactions whose commit checks it (InProgress::floor).
  int64_t oldest = last_pointer_ + 1;
  for (const auto& [wp, tx] : in_progress_) oldest = std::min(oldest, tx.floor);
  while (!change_sets_.empty() && change_sets_.front().commit_pointer < oldest) change_sets_.pop_front();
}

TxSnapshot TransactionManager::SnapshotLocked(int64_t write_pointer, int64_t read_pointer) {
  TxSnapshot s;
  s.write_pointer = write_pointer;
  s.read_pointer = read_pointer;
  s.excluded.reserve(in_progress_.size() + invalid_.size());
  s.in_progress.reserve(in_progress_.size());
  for (const auto& [wp, tx] : in_progress_) s.in_progress.push_back(wp);
  auto a = in_progress_.begin();
  auto b = invalid_.begin();
  while (a != in_progress_.end() || b != invalid_.end()) {
    if (b == invalid_.end() || (a != in_progress_.end() && a->first < *b)) {
      s.excluded.push_back((a++)->first);
    } else {
      s.excluded.push_back(*b++);
    }
  }
  return s;
}

std::string TransactionManager::NotInProgress(int64_t write_pointer) {
  if (invalid_.count(write_pointer) != 0) {
    return absl::StrCat("transaction ", write_pointer,
                        " is invalid (it timed out or was invalidated): its writes are never seen");
  }
  if (write_pointer <= 0 || write_pointer > last_pointer_) {
    return absl::StrCat("transaction ", write_pointer, " was never started");
  }
  return absl::StrCat("transaction ", write_pointer, " is not in progress (it committed, aborted or is committing)");
}

absl::Status TransactionManager::CheckOwner(const InProgress& tx, int64_t write_pointer, const TxCaller& caller,
                                            std::string_view what) const {
  if (caller.may_end_any || tx.owner == caller.user) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "user '", caller.user, "' may not ", AV(what), " transaction ", write_pointer,
      ": another user started it (only its owner, or a user with global A, may commit, abort or invalidate it)"));
}

absl::Status TransactionManager::CheckWriter(int64_t write_pointer, const TxCaller& caller) {
  absl::MutexLock l(&mu_);
  auto it = in_progress_.find(write_pointer);
  if (it == in_progress_.end() || it->second.commit_pointer != 0) {
    if (invalid_.count(write_pointer) != 0) return absl::OkStatus();  // hidden for good either way
    return absl::FailedPreconditionError(absl::StrCat("write: ", NotInProgress(write_pointer)));
  }
  if (caller.may_end_any || it->second.owner == caller.user) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("user '", caller.user, "' may not write in transaction ",
                                                  write_pointer, ": another user started it"));
}

absl::StatusOr<TxSnapshot> TransactionManager::Start(int64_t timeout_ms, std::string_view owner) {
  if (timeout_ms < 0 || timeout_ms > options_.max_timeout_ms) {
    return absl::InvalidArgumentError(absl::StrCat("transaction timeout ", timeout_ms, " ms is not in [0, ",
                                                   options_.max_timeout_ms, "]"));
  }
  if (timeout_ms == 0) timeout_ms = options_.default_timeout_ms;
  TxSnapshot snapshot;
  std::string record;
  {
    absl::MutexLock l(&mu_);
    ExpireTimedOut();
    if (!owner.empty() && options_.max_in_progress_per_owner > 0) {
      const auto owned = std::count_if(in_progress_.begin(), in_progress_.end(),
                                       [&](const auto& e) { return e.second.owner == owner; });
      if (owned >= options_.max_in_progress_per_owner) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "user '", AV(owner), "' has ", owned, " transactions in progress, the most one user may ",
            "(max_transactions_per_user): commit or abort some first"));
      }
    }
    const int64_t read_pointer = last_pointer_;
    const int64_t wp = NextPointer();
    snapshot = SnapshotLocked(wp, read_pointer);
    const int64_t expires = NowMs() + timeout_ms;
    int64_t floor = wp;
    for (const auto& [other, tx] : in_progress_) {
      if (tx.commit_pointer != 0) floor = std::min(floor, tx.commit_pointer);
    }
    const int64_t oldest = in_progress_.empty() ? wp : in_progress_.begin()->first;
    in_progress_[wp] = InProgress{expires, floor, oldest, 0, std::string(owner)};
    ++stats_.started;
    record = Record(kStart, wp);
    PutSigned(&record, expires);
    PutSigned(&record, floor);
    PutSigned(&record, oldest);
    if (!owner.empty()) PutLengthPrefixed(&record, owner);
  }
  BASALT_RETURN_IF_ERROR(log_->Append(record, Durability::kSyncWal));
  BASALT_RETURN_IF_ERROR(MaybeCheckpoint());
  return snapshot;
}

absl::Status TransactionManager::Commit(int64_t write_pointer, absl::Span<const uint64_t> changes,
                                        const TxCaller& caller) {
  std::string record;
  {
    absl::MutexLock l(&mu_);
    auto it = in_progress_.find(write_pointer);
    if (it != in_progress_.end() && it->second.commit_pointer == 0 && it->second.expires_ms < NowMs()) {
      ExpireTimedOut();
      it = in_progress_.end();
    }
    if (it == in_progress_.end() || it->second.commit_pointer != 0) {
      return absl::FailedPreconditionError(absl::StrCat("commit: ", NotInProgress(write_pointer)));
    }
    BASALT_RETURN_IF_ERROR(CheckOwner(it->second, write_pointer, caller, "commit"));
    // The transactions whose writes its snapshot does not see: those that committed after it
    // started, and those committing as it started (from its floor on), newest first. A
    // transaction that committed durably between the floor and its start is checked too: a
    // false conflict at worst.
    const int64_t floor = it->second.floor;
    for (auto cs = change_sets_.rbegin(); cs != change_sets_.rend() && cs->commit_pointer >= floor; ++cs) {
      for (uint64_t c : changes) {
        if (cs->changes.contains(c)) {
          ++stats_.conflicts;
          return absl::AbortedError(absl::StrCat(
              "transaction ", write_pointer, " conflicts with a transaction that committed after it started (at ",
              cs->commit_pointer, ") and wrote the same cell: roll it back and abort it, then retry"));
        }
      }
    }
    const int64_t cp = NextPointer();
    it->second.commit_pointer = cp;
    if (!changes.empty()) change_sets_.push_back(ChangeSet{cp, {changes.begin(), changes.end()}});
    record = Record(kCommit, write_pointer);
    PutSigned(&record, cp);
    PutVarint64(&record, changes.size());
    for (uint64_t c : changes) PutFixed64(&record, c);
  }
  // A read-only transaction wrote nothing to lose: if its record is lost it times out instead.
  absl::Status s = log_->Append(record, changes.empty() ? Durability::kAsyncWal : Durability::kSyncWal);
  {
    absl::MutexLock l(&mu_);
    if (!s.ok()) return s;  // the log is dead; the transaction stays committing
    in_progress_.erase(write_pointer);
    ++stats_.committed;
    PruneChangeSets();
  }
  return MaybeCheckpoint();
}

absl::Status TransactionManager::Abort(int64_t write_pointer, const TxCaller& caller) {
  {
    absl::MutexLock l(&mu_);
    auto it = in_progress_.find(write_pointer);
    if (it == in_progress_.end() || it->second.commit_pointer != 0) {
      if (invalid_.count(write_pointer) != 0) return absl::OkStatus();  // hidden either way
      return absl::FailedPreconditionError(absl::StrCat("abort: ", NotInProgress(write_pointer)));
    }
    BASALT_RETURN_IF_ERROR(CheckOwner(it->second, write_pointer, caller, "abort"));
    in_progress_.erase(it);
    ++stats_.aborted;
    PruneChangeSets();
  }
  // Lost in a crash, the transaction is in progress again and times out: its writes, rolled
  // back, stay hidden either way.
  BASALT_RETURN_IF_ERROR(log_->Append(Record(kAbort, write_pointer), Durability::kAsyncWal));
  return MaybeCheckpoint();
}

absl::Status TransactionManager::Invalidate(int64_t write_pointer, const TxCaller& caller) {
  {
    absl::MutexLock l(&mu_);
    if (invalid_.count(write_pointer) != 0) return absl::OkStatus();
    auto it = in_progress_.find(write_pointer);
    if (it == in_progress_.end() || it->second.commit_pointer != 0) {
      return absl::FailedPreconditionError(absl::StrCat("invalidate: ", NotInProgress(write_pointer)));
    }
    BASALT_RETURN_IF_ERROR(CheckOwner(it->second, write_pointer, caller, "invalidate"));
    in_progress_.erase(it);
    invalid_.insert(write_pointer);
    ++stats_.invalidated;
    PruneChangeSets();
  }
  BASALT_RETURN_IF_ERROR(log_->Append(Record(kInvalidate, write_pointer), Durability::kSyncWal));
  return MaybeCheckpoint();
}

TxSnapshot TransactionManager::ReadSnapshot() {
  absl::MutexLock l(&mu_);
  ExpireTimedOut();
  return SnapshotLocked(0, last_pointer_);
}

bool TransactionManager::Horizon::Settled(int64_t ts) const {
  return ts < bound && !std::binary_search(invalid.begin(), invalid.end(), ts);
}

TransactionManager::Horizon TransactionManager::SettledHorizon() {
  absl::MutexLock l(&mu_);
  ExpireTimedOut();
  Horizon h;
  h.bound = last_pointer_ + 1;
  for (const auto& [wp, tx] : in_progress_) h.bound = std::min(h.bound, tx.oldest);
  h.invalid.assign(invalid_.begin(), invalid_.end());
  return h;
}

TransactionManager::Stats TransactionManager::GetStats() {
  absl::MutexLock l(&mu_);
  ExpireTimedOut();
  Stats s = stats_;
  s.last_write_pointer = last_pointer_;
  s.in_progress = in_progress_.size();
  s.invalid = invalid_.size();
  s.change_sets = change_sets_.size();
  return s;
}

absl::Status TransactionManager::MaybeCheckpoint() {
  if (log_->BytesSinceCheckpoint() < options_.checkpoint_bytes) return absl::OkStatus();
  if (checkpointing_.exchange(true)) return absl::OkStatus();
  absl::Status s = log_->Checkpoint([this] {
    absl::MutexLock l(&mu_);
    return EncodeState();
  });
  checkpointing_.store(false);
  return s;
}

}  // namespace basalt::server
