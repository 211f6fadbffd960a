// Write-ahead log: record encoding, the group-commit writer and the replaying reader. See wal.h.
#include "storage/internal/wal.h"


#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/common/coding.h"
#include "src/common/crc.h"
#include "src/common/status.h"
#include "storage/cell.h"

namespace basalt {
namespace {

constexpr std::string_view kSegmentSuffix = ".wal";
constexpr size_t kSegmentDigits = 20;
// Async appends queue in memory; past this many bytes the appender writes the queue itself
// (without a sync) so the queue stays bounded between background syncs.
constexpr size_t kAsyncWriteThreshold = 1 << 20;

uint32_t FrameCrc(const char* length_bytes, std::string_view payload) {
  uint32_t crc = Crc32c(length_bytes, 4);
  return MaskCrc(Crc32cExtend(crc, payload.data(), payload.size()));
}

// Checks the frame at the start of `in` (length fits, checksum matches) without decoding the
// payload or allocating. Returns nullptr and the payload, or the reason it is bad.
const char* CheckFrame(std::string_view in, std::string_view* payload, size_t* framed_size) {
  if (in.size() < kWalHeaderSize) return "header runs past the end";
  uint32_t length = DecodeFixed32(in.data());
  if (length > in.size() - kWalHeaderSize) return "length runs past the end";
  uint32_t stored = DecodeFixed32(in.data() + 4);
  std::string_view p = in.substr(kWalHeaderSize, length);
  if (FrameCrc(in.data(), p) != stored) return "checksum mismatch";
  *payload = p;
  *framed_size = kWalHeaderSize + length;
  return nullptr;
}

absl::Status PayloadError(std::string_view what, std::string_view payload, std::string_view rest) {
  return absl::DataLossError(absl::StrCat("WAL payload: ", AV(what), " at byte ",
                                          payload.size() - rest.size(), " of ", payload.size()));
}

}  // namespace

std::string EncodeWalPayload(const WalRecord& rec) {
  std::string out;
  size_t n = rec.region.size() + 5 + 10 + 5;
  for (const WalEdit& e : rec.edits) n += e.family.size() + e.key.size() + e.value.size() + 15;
  out.reserve(n);
  PutLengthPrefixed(&out, rec.region);
  PutVarint64(&out, rec.seq);
  PutVarint32(&out, static_cast<uint32_t>(rec.edits.size()));
  for (const WalEdit& e : rec.edits) {
    PutLengthPrefixed(&out, e.family);
    PutLengthPrefixed(&out, e.key);
    PutLengthPrefixed(&out, e.value);
  }
  return out;
}

void AppendFramedWalRecord(std::string* dst, const WalRecord& rec) {
  std::string payload = EncodeWalPayload(rec);
  char header[kWalHeaderSize];
  EncodeFixed32(header, static_cast<uint32_t>(payload.size()));
  EncodeFixed32(header + 4, FrameCrc(header, payload));
  dst->append(header, kWalHeaderSize);
  dst->append(payload);
}

std::string EncodeWalRecord(const WalRecord& rec) {
  std::string out;
  AppendFramedWalRecord(&out, rec);
  return out;
}

absl::StatusOr<WalRecord> DecodeWalPayload(std::string_view payload) {
  std::string_view in = payload;
  WalRecord rec;
  std::string_view region;
  if (!GetLengthPrefixed(&in, &region)) return PayloadError("bad region", payload, in);
  rec.region.assign(region);
  if (!GetVarint64(&in, &rec.seq)) return PayloadError("bad sequence id", payload, in);
  uint32_t count;
  if (!GetVarint32(&in, &count)) return PayloadError("bad edit count", payload, in);
  // An edit is at least 15 bytes: a non-empty family and a flat key of >= 11 bytes (cell.h), each
  // length-prefixed, and a value length. This bounds the memory a hostile count can claim.
  if (count > in.size() / 15) {
    return PayloadError(absl::StrCat("edit count ", count, " exceeds the remaining bytes"), payload, in);
  }
  rec.edits.resize(count);
  for (WalEdit& e : rec.edits) {
    std::string_view family, key, value;
    if (!GetLengthPrefixed(&in, &family)) return PayloadError("bad edit family", payload, in);
    if (!GetLengthPrefixed(&in, &key)) return PayloadError("bad edit key", payload, in);
    if (!GetLengthPrefixed(&in, &value)) return PayloadError("bad edit value", payload, in);
    if (family.empty() || key.size() < kKeyOverhead) return PayloadError("edit with an empty family or short key", payload, in);
    e.family.assign(family);
    e.key.assign(key);
    e.value.assign(value);
  }
  if (!in.empty()) return PayloadError("trailing bytes", payload, in);
  return rec;
}

absl::StatusOr<WalRecord> DecodeFramedWalRecord(std::string_view in, size_t* framed_size) {
  std::string_view payload;
  size_t n = 0;
  if (const char* why = CheckFrame(in, &payload, &n)) {
    return absl::DataLossError(absl::StrCat("WAL record: ", why, " (", in.size(), " bytes available)"));
  }
  BASALT_ASSIGN_OR_RETURN(WalRecord rec, DecodeWalPayload(payload));
  *framed_size = n;
  return rec;
}

std::string WalSegmentPath(const std::string& dir, uint64_t number) {
  char name[32];
  std::snprintf(name, sizeof(name), "%020" PRIu64 ".wal", number);
  return absl::StrCat(dir, "/", name);
}

bool ParseWalSegmentName(std::string_view name, uint64_t* number) {
  if (name.size() != kSegmentDigits + kSegmentSuffix.size()) return false;
  if (name.substr(kSegmentDigits) != kSegmentSuffix) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < kSegmentDigits; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *number = v;
  return true;
}

namespace {

// Segment numbers in dir, ascending.
absl::StatusOr<std::vector<uint64_t>> ListSegments(Env* env, const std::string& dir) {
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  std::vector<uint64_t> numbers;
  for (const std::string& name : names) {
    uint64_t n;
    if (ParseWalSegmentName(name, &n)) numbers.push_back(n);
  }
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Writer

Wal::Wal(const Options& options, Env* env) : options_(options), env_(env) {}

absl::StatusOr<std::unique_ptr<Wal>> Wal::Open(const Options& options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("Wal::Open: empty dir");
  Env* env = options.env != nullptr ? options.env : Env::Default();
  BASALT_RETURN_IF_ERROR(env->CreateDirs(options.dir));
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> existing, ListSegments(env, options.dir));
  uint64_t number = existing.empty() ? 1 : existing.back() + 1;
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                          env->NewWritableFile(WalSegmentPath(options.dir, number)));
  // The new segment's directory entry must be durable before any write in it is acknowledged.
  BASALT_RETURN_IF_ERROR(env->SyncDir(options.dir));
  std::unique_ptr<Wal> wal(new Wal(options, env));
  {
    absl::MutexLock l(&wal->mu_);
    wal->segment_ = number;
  }
  wal->file_ = std::move(file);
  if (options.async_sync_interval_ms > 0) {
    wal->syncer_ = std::thread([w = wal.get()] { w->BackgroundSyncer(); });
  }
  return wal;
}

Wal::~Wal() {
  {
    absl::MutexLock l(&mu_);
    shutting_down_ = true;
    bg_cv_.SignalAll();
  }
  if (syncer_.joinable()) syncer_.join();
  absl::MutexLock l(&mu_);
  if (error_.ok()) WaitFor(queued_, /*sync=*/true).IgnoreError();
  while (leader_) cv_.Wait(&mu_);
  if (file_ != nullptr) file_->Close().IgnoreError();
}

absl::Status Wal::LeadGroup(bool sync, bool force_roll) {
  leader_ = true;
  std::string buf;
  buf.swap(pending_);
  const uint64_t end = queued_;
  const uint64_t prev_durable = durable_;
  const uint64_t next_segment = segment_ + 1;
  mu_.Unlock();

  // The leader owns file_ until it clears leader_; nobody else touches it meanwhile.
  absl::Status io;
  if (!buf.empty()) io = file_->Append(buf);
  const bool roll = io.ok() && (force_roll || file_->Size() >= options_.roll_size);
  bool synced = false;
  if (io.ok() && (sync || roll) && end > prev_durable) {
    io = file_->Sync();
    synced = io.ok();
  }
  // A segment that cannot be created leaves the WAL on the old, intact segment: not fatal.
  absl::Status roll_status;
  bool rolled = false;
  if (io.ok() && roll) {
    absl::StatusOr<std::unique_ptr<WritableFile>> next =
        env_->NewWritableFile(WalSegmentPath(options_.dir, next_segment));
    if (next.ok()) next = [&]() -> absl::StatusOr<std::unique_ptr<WritableFile>> {
      BASALT_RETURN_IF_ERROR(env_->SyncDir(options_.dir));
      return std::move(next);
    }();
    if (next.ok()) {
      io = file_->Close();
      file_ = std::move(next).value();
      rolled = true;
    } else {
      roll_status = next.status();
      // Best effort: do not leave an empty newer segment behind (replay copes if this fails too).
      env_->DeleteFile(WalSegmentPath(options_.dir, next_segment)).IgnoreError();
    }
  }

  mu_.Lock();
  leader_ = false;
  if (!io.ok()) {
    if (error_.ok()) error_ = io;
  } else {
    written_ = end;
    if (synced) {
      ++stats_.syncs;
      stats_.synced_records += end - prev_durable;
      durable_ = end;
    }
    if (rolled) segment_ = next_segment;
  }
  cv_.SignalAll();
  if (!io.ok()) return io;
  return roll_status;
}

absl::Status Wal::WaitFor(uint64_t ticket, bool sync) {
  while (true) {
    if (!error_.ok()) return error_;
    if ((sync ? durable_ : written_) >= ticket) return absl::OkStatus();
    if (!leader_) {
      // Lead a group covering everything queued so far, ours included. Its own status is
      // reflected in error_/durable_, checked on the next iteration.
      LeadGroup(sync, /*force_roll=*/false).IgnoreError();
      continue;
    }
    cv_.Wait(&mu_);
  }
}

absl::Status Wal::Append(const WalRecord& rec, Durability d) {
  if (d == Durability::kSkipWal) return absl::InvalidArgumentError("Wal::Append: SKIP_WAL is not logged");
  std::string framed = EncodeWalRecord(rec);
  if (framed.size() - kWalHeaderSize > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("Wal::Append: record of ", framed.size(), " bytes too large"));
  }
  absl::MutexLock l(&mu_);
  if (!error_.ok()) return error_;
  pending_.append(framed);
  const uint64_t ticket = ++queued_;
  ++stats_.records;
  stats_.bytes += framed.size();
  if (d == Durability::kSyncWal) return WaitFor(ticket, /*sync=*/true);
  if (pending_.size() >= kAsyncWriteThreshold && !leader_) LeadGroup(/*sync=*/false, false).IgnoreError();
  return error_;
}

absl::Status Wal::Sync() {
  absl::MutexLock l(&mu_);
  return WaitFor(queued_, /*sync=*/true);
}

absl::StatusOr<uint64_t> Wal::Roll() {
  absl::MutexLock l(&mu_);
  while (true) {
    if (!error_.ok()) return error_;
    if (!leader_) break;
    cv_.Wait(&mu_);
  }
  BASALT_RETURN_IF_ERROR(LeadGroup(/*sync=*/true, /*force_roll=*/true));
  return segment_;
}

uint64_t Wal::current_segment() const {
  absl::MutexLock l(&mu_);
  return segment_;
}

absl::Status Wal::DeleteSegmentsBefore(uint64_t n) {
  const uint64_t current = current_segment();
  if (n > current) {
    return absl::InvalidArgumentError(absl::StrCat("Wal::DeleteSegmentsBefore(", n,
                                                   "): above the live segment ", current));
  }
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, ListSegments(env_, options_.dir));
  for (uint64_t s : segments) {
    if (s >= n) break;
    BASALT_RETURN_IF_ERROR(env_->DeleteFile(WalSegmentPath(options_.dir, s)));
  }
  return absl::OkStatus();
}

Wal::Stats Wal::GetStats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

void Wal::BackgroundSyncer() {
  const absl::Duration interval = absl::Milliseconds(options_.async_sync_interval_ms);
  absl::MutexLock l(&mu_);
  while (!shutting_down_) {
    const absl::Time deadline = absl::Now() + interval;
    while (!shutting_down_ && absl::Now() < deadline) bg_cv_.WaitWithDeadline(&mu_, deadline);
    if (shutting_down_) break;
    // Errors are already sticky in error_; the syncer just stops having work.
    if (error_.ok() && durable_ < queued_) WaitFor(queued_, /*sync=*/true).IgnoreError();
  }
}

// ---------------------------------------------------------------------------------------------
// Replay

namespace {

absl::Status ReplaySegment(Env* env, const std::string& path, bool last,
                           const std::function<absl::Status(const WalRecord&)>& fn, ReplayStats* stats) {
  BASALT_ASSIGN_OR_RETURN(std::string data, env->ReadFileToString(path));
  const std::string_view all(data);
  std::vector<WalRecord> records;
  size_t pos = 0;
  std::string bad_reason;
  while (pos < all.size()) {
    std::string_view payload;
    size_t n = 0;
    if (const char* why = CheckFrame(all.substr(pos), &payload, &n)) {
      bad_reason = why;
      break;
    }
    absl::StatusOr<WalRecord> rec = DecodeWalPayload(payload);
    if (!rec.ok()) {
      bad_reason = std::string(rec.status().message());
      break;
    }
    records.push_back(std::move(rec).value());
    pos += n;
  }

  if (pos < all.size()) {
    // A bad record: a torn tail (cut) unless intact records follow it to the end of the segment
    // (damage in the middle, which must not be skipped silently). The search is bounded: at
    // most ~2x the tail's bytes are checksummed, so a large torn tail (a big value cut short)
    // cannot stall recovery; past the budget the bad record is taken as a tail. A later frame
    // only counts if frames run from it cleanly to the very end, so a valid-looking frame
    // inside a torn record's value is not mistaken for a following record.
    int64_t budget = 2 * static_cast<int64_t>(all.size() - pos) + (1 << 20);
    auto frames_to_end = [&](size_t q) {
      while (q < all.size()) {
        if (all.size() - q < kWalHeaderSize) return false;
        const uint32_t len = DecodeFixed32(all.data() + q);
        if (len > all.size() - q - kWalHeaderSize) return false;
        budget -= len;
        if (budget < 0) return false;
        std::string_view payload;
        size_t n = 0;
        if (CheckFrame(all.substr(q), &payload, &n) != nullptr || !DecodeWalPayload(payload).ok()) return false;
        q += n;
      }
      return true;
    };
    for (size_t q = pos + 1; q + kWalHeaderSize <= all.size() && budget > 0; ++q) {
      const uint32_t len = DecodeFixed32(all.data() + q);
      if (len > all.size() - q - kWalHeaderSize) continue;  // cannot be a frame: no checksum work
      if (frames_to_end(q)) {
        return absl::DataLossError(absl::StrCat("WAL segment ", path, ": corrupt record at offset ", pos, " (",
                                                bad_reason, ") followed by valid records from offset ", q,
                                                " to the end; segment size ", all.size()));
      }
    }
    // Only the newest segment can end in a torn write: an older one was synced whole before the
    // log rolled past it, so damage there is lost data, never a tail to cut.
    if (!last) {
      return absl::DataLossError(absl::StrCat("WAL segment ", path, ": corrupt record at offset ", pos, " (",
                                              bad_reason, ") in a segment that newer segments follow; segment size ",
                                              all.size()));
    }
    BASALT_RETURN_IF_ERROR(env->Truncate(path, pos));
    if (stats != nullptr) {
      stats->truncated_bytes += all.size() - pos;
      if (!stats->truncated_at.empty()) stats->truncated_at += ", ";
      absl::StrAppend(&stats->truncated_at, path, "@", pos);
    }
  }

  for (const WalRecord& rec : records) {
    BASALT_RETURN_IF_ERROR(fn(rec));
    if (stats != nullptr) ++stats->records;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReplayWal(Env* env, const std::string& dir,
                       const std::function<absl::Status(const WalRecord&)>& fn, ReplayStats* stats) {
  if (env == nullptr) env = Env::Default();
  if (!env->FileExists(dir)) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, ListSegments(env, dir));
  // The newest non-empty segment is the one that may end in a torn write: a roll that failed
  // after creating its file can leave an empty newer segment behind.
  size_t last_nonempty = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    auto size = env->GetFileSize(WalSegmentPath(dir, segments[i]));
    if (size.ok() && *size > 0) last_nonempty = i;
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const bool last = i >= last_nonempty;
    BASALT_RETURN_IF_ERROR(ReplaySegment(env, WalSegmentPath(dir, segments[i]), last, fn, stats));
    if (stats != nullptr) ++stats->segments;
  }
  return absl::OkStatus();
}

}  // namespace basalt
