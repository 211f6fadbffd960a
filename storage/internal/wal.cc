// Write-ahead log: record encoding, the group-commit writer and the replaying reader. See wal.h.
#include "storage/internal/wal.h"


#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/coding.h"
#include "common/format_stamp.h"
#include "common/crc.h"
#include "common/status.h"
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

// Open a record's nonce, after its edits, and its cluster ids, after that.
constexpr char kNonceTag = 'N';
constexpr char kClustersTag = 'C';

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
  if (rec.nonce != 0) {
    out.push_back(kNonceTag);
    PutVarint64(&out, rec.nonce_group);
    PutVarint64(&out, rec.nonce);
  }
  if (!rec.cluster_ids.empty()) {
    out.push_back(kClustersTag);
    PutVarint32(&out, static_cast<uint32_t>(rec.cluster_ids.size()));
    for (const std::string& id : rec.cluster_ids) PutLengthPrefixed(&out, id);
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
  if (!in.empty() && in[0] == kNonceTag) {
    in.remove_prefix(1);
    if (!GetVarint64(&in, &rec.nonce_group) || !GetVarint64(&in, &rec.nonce) || rec.nonce == 0) {
      return PayloadError("bad nonce", payload, in);
    }
  }
  if (!in.empty() && in[0] == kClustersTag) {
    in.remove_prefix(1);
    uint32_t n;
    if (!GetVarint32(&in, &n) || n == 0 || n > kMaxWalClusterIds) return PayloadError("bad cluster id count", payload, in);
    rec.cluster_ids.resize(n);
    for (std::string& id : rec.cluster_ids) {
      std::string_view v;
      if (!GetLengthPrefixed(&in, &v) || v.empty() || v.size() > 64) return PayloadError("bad cluster id", payload, in);
      id.assign(v);
    }
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

namespace {

constexpr std::string_view kSegmentMagic = "BSLTWALF";

// Whether `segment` begins with an intact preamble (its stamp's crc matches).
bool HasPreamble(std::string_view segment) {
  return HasFormatMagic(segment, kSegmentMagic) && segment.size() >= kWalSegmentPreambleSize &&
         DecodeFixed32(segment.data() + kFormatStampSize) == MaskCrc(Crc32c(segment.data(), kFormatStampSize));
}

// FailedPrecondition when an intact preamble asks for a newer reader.
absl::Status CheckSegmentVersion(std::string_view segment, const std::string& path) {
  if (!HasPreamble(segment)) return absl::OkStatus();
  return ReadFormatStamp(segment, kSegmentMagic, kWalVersion, absl::StrCat("WAL segment ", path)).status();
}

}  // namespace

size_t WalFramesStart(std::string_view segment) { return HasPreamble(segment) ? kWalSegmentPreambleSize : 0; }

std::string EncodeWalSegmentHeader(uint64_t number) {
  std::string out;
  AppendFormatStamp(&out, kSegmentMagic, kWalVersion, /*min_reader_version=*/kWalVersion);
  PutFixed32(&out, MaskCrc(Crc32c(out)));
  WalRecord header;
  header.seq = number;  // region "" and no edits: never a region's record
  AppendFramedWalRecord(&out, header);
  return out;
}

namespace {

constexpr std::string_view kIndexMagic = "BSLTSEGS";
constexpr std::string_view kIndexMagicV1 = "BSLTWALS";  // version 1: the magic alone, no stamp
constexpr size_t kIndexSize = kFormatStampSize + 8 + 8 + 4;
constexpr size_t kIndexSizeV1 = 8 + 8 + 8 + 4;

std::string EncodeIndex(uint64_t first, uint64_t last) {
  std::string out;
  AppendFormatStamp(&out, kIndexMagic, kWalVersion, /*min_reader_version=*/kWalVersion);
  PutFixed64(&out, first);
  PutFixed64(&out, last);
  PutFixed32(&out, MaskCrc(Crc32c(out)));
  return out;
}

// The live segment range SEGMENTS records: false when there is no (intact) index, which replay
// then does without; FailedPrecondition for an index written by a newer Basalt.
absl::StatusOr<bool> ReadIndex(Env* env, const std::string& dir, uint64_t* first, uint64_t* last) {
  const std::string path = dir + "/" + kWalIndexName;
  if (!env->FileExists(path)) return false;
  absl::StatusOr<std::string> bytes = env->ReadFileToString(path);
  if (!bytes.ok()) return false;
  const std::string_view b = *bytes;
  size_t body = 0;
  if (HasFormatMagic(b, kIndexMagicV1) && b.size() == kIndexSizeV1) {
    body = 8;
  } else if (HasFormatMagic(b, kIndexMagic) && b.size() >= kFormatStampSize + 4) {
    body = kFormatStampSize;
  } else {
    return false;
  }
  if (DecodeFixed32(b.data() + b.size() - 4) != MaskCrc(Crc32c(b.data(), b.size() - 4))) return false;
  if (body == kFormatStampSize) {
    BASALT_RETURN_IF_ERROR(ReadFormatStamp(b, kIndexMagic, kWalVersion, absl::StrCat("WAL index ", path)).status());
    if (b.size() != kIndexSize) return false;
  }
  *first = DecodeFixed64(b.data() + body);
  *last = DecodeFixed64(b.data() + body + 8);
  return *first <= *last + 1;
}

}  // namespace

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

absl::StatusOr<bool> HasWalSegments(Env* env, const std::string& dir) {
  if (!env->FileExists(dir)) return false;
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, ListSegments(env, dir));
  return !segments.empty();
}

absl::Status DeleteWalDir(Env* env, const std::string& dir) {
  if (!env->FileExists(dir)) return absl::OkStatus();
  const std::string index = dir + "/" + kWalIndexName;
  if (env->FileExists(index)) BASALT_RETURN_IF_ERROR(env->DeleteFile(index));
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, ListSegments(env, dir));
  for (uint64_t n : segments) BASALT_RETURN_IF_ERROR(env->DeleteFile(WalSegmentPath(dir, n)));
  return env->DeleteDir(dir);
}

// ---------------------------------------------------------------------------------------------
// Writer

Wal::Wal(const Options& options, Env* env) : options_(options), env_(env) {}

absl::StatusOr<std::unique_ptr<Wal>> Wal::Open(const Options& options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("Wal::Open: empty dir");
  Env* env = options.env != nullptr ? options.env : Env::Default();
  BASALT_RETURN_IF_ERROR(env->CreateDirs(options.dir));
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> existing, ListSegments(env, options.dir));
  uint64_t index_first = 0, index_last = 0;
  BASALT_ASSIGN_OR_RETURN(const bool have_index, ReadIndex(env, options.dir, &index_first, &index_last));
  // Never reuse a number: a segment deleted behind our back must stay a gap replay can see.
  const uint64_t number = std::max(existing.empty() ? 0 : existing.back(), have_index ? index_last : 0) + 1;
  std::unique_ptr<Wal> wal(new Wal(options, env));
  wal->own_first_ = number;
  {
    absl::MutexLock l(&wal->index_mu_);
    wal->index_first_ = have_index ? index_first : existing.empty() ? number : existing.front();
  }
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, wal->CreateSegment(number));
  {
    absl::MutexLock l(&wal->mu_);
    wal->segment_ = number;
    wal->synced_size_ = file->Size();  // the header, synced
    wal->segment_regions_[number];
  }
  wal->file_ = std::move(file);
  if (options.async_sync_interval_ms > 0) {
    wal->syncer_ = std::thread([w = wal.get()] { w->BackgroundSyncer(); });
  }
  return wal;
}

absl::StatusOr<std::unique_ptr<WritableFile>> Wal::CreateSegment(uint64_t number) {
  const std::string path = WalSegmentPath(options_.dir, number);
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env_->NewWritableFile(path));
  // The header is durable, and so is the directory entry, before any record is acknowledged.
  absl::Status s = file->Append(EncodeWalSegmentHeader(number));
  if (s.ok()) s = file->Sync();
  if (s.ok()) s = env_->SyncDir(options_.dir);
  if (!s.ok()) {
    file->Close().IgnoreError();
    env_->DeleteFile(path).IgnoreError();  // best effort: replay copes with a header-only segment
    return s;
  }
  absl::MutexLock l(&index_mu_);
  BASALT_RETURN_IF_ERROR(WriteIndex(index_first_, number));
  return file;
}

absl::Status Wal::WriteIndex(uint64_t first, uint64_t last) {
  BASALT_RETURN_IF_ERROR(env_->WriteFileDurably(options_.dir + "/" + kWalIndexName, EncodeIndex(first, last)));
  index_first_ = first;
  index_last_ = last;
  return absl::OkStatus();
}

Wal::~Wal() {
  {
    absl::MutexLock l(&mu_);
    shutting_down_ = true;
    bg_cv_.SignalAll();
    gather_cv_.SignalAll();
  }
  if (syncer_.joinable()) syncer_.join();
  absl::MutexLock l(&mu_);
  if (error_.ok()) WaitFor(queued_, /*sync=*/true).IgnoreError();
  while (leader_) cv_.Wait(&mu_);
  if (file_ != nullptr) file_->Close().IgnoreError();
}

void Wal::GatherGroup() {
  const uint64_t expect = last_group_;
  if (expect < kGatherMinGroup || queued_ - written_ >= expect * 3 / 4) return;
  const absl::Time deadline = absl::Now() + absl::Microseconds(std::min(last_sync_micros_, kGatherMaxMicros));
  gather_until_ = written_ + expect * 3 / 4;
  while (queued_ < gather_until_ && error_.ok() && !shutting_down_) {
    if (gather_cv_.WaitWithDeadline(&mu_, deadline)) break;  // timed out
  }
  gather_until_ = 0;
}

absl::Status Wal::LeadGroup(bool sync, bool force_roll, bool gather) {
  leader_ = true;
  if (sync && gather && !force_roll) GatherGroup();
  const uint64_t group_first = written_;  // what this group writes starts after it
  std::string buf;
  buf.swap(pending_);
  // Whose records the segment gets (counted before the write: also when it fails, some may
  // have reached the file). Merged, not swapped: the map keeps its buckets for the next group.
  RegionSeqs& held = segment_regions_[segment_];
  for (const auto& [region, seq] : pending_regions_) held[region] = std::max(held[region], seq);
  pending_regions_.clear();
  const uint64_t end = queued_;
  const uint64_t prev_durable = durable_;
  const uint64_t next_segment = segment_ + 1;
  // Kept for the log's readers only while one holds it (a replication shipper: Hold).
  const bool keep_recent = options_.recent_bytes > 0 && !holds_.empty();
  mu_.Unlock();

  // The leader owns file_ until it clears leader_; nobody else touches it meanwhile.
  absl::Status io;
  const uint64_t buf_at = file_->Size();
  if (!buf.empty()) io = file_->Append(buf);
  const bool roll = io.ok() && (force_roll || file_->Size() >= options_.roll_size);
  bool synced = false;
  uint64_t sync_micros = 0;
  if (io.ok() && (sync || roll) && end > prev_durable) {
    const absl::Time sync_start = absl::Now();
    io = file_->Sync();
    synced = io.ok();
    sync_micros = static_cast<uint64_t>(absl::ToInt64Microseconds(absl::Now() - sync_start));
  }
  uint64_t synced_size = 0;  // the segment's size once synced (only the leader touches file_)
  if (synced) synced_size = file_->Size();
  std::shared_ptr<const std::string> recent;  // (made before mu_ is taken again)
  if (io.ok() && keep_recent && !buf.empty() && buf.size() <= options_.recent_bytes) {
    recent = std::make_shared<const std::string>(std::move(buf));
  }
  // A segment that cannot be created leaves the WAL on the old, intact segment: not fatal.
  absl::Status roll_status;
  bool rolled = false;
  if (io.ok() && roll) {
    absl::StatusOr<std::unique_ptr<WritableFile>> next = CreateSegment(next_segment);
    if (next.ok()) {
      io = file_->Close();
      file_ = std::move(next).value();
      rolled = true;
    } else {
      roll_status = next.status();
    }
  }

  mu_.Lock();
  leader_ = false;
  if (!io.ok()) {
    if (error_.ok()) error_ = io;
  } else {
    written_ = end;
    if (recent != nullptr) {
      recent_size_ += recent->size();
      recent_.push_back(RecentGroup{segment_, buf_at, std::move(recent)});
      while (recent_size_ > options_.recent_bytes) {
        recent_size_ -= recent_.front().bytes->size();
        recent_.pop_front();
      }
    } else if (!buf.empty() && !recent_.empty()) {  // a group not kept: nor what came before it
      recent_.clear();
      recent_size_ = 0;
    }
    if (synced) {
      ++stats_.syncs;
      stats_.sync_micros += sync_micros;
      stats_.synced_records += end - prev_durable;
      last_group_ = end - group_first;
      last_sync_micros_ = sync_micros;
      durable_ = end;
      synced_size_ = synced_size;
    }
    if (rolled) {
      segment_ = next_segment;
      synced_size_ = file_->Size();  // its header, synced by CreateSegment
      segment_regions_[segment_];
      std::vector<std::string> flush = RegionsToFlush();
      if (!flush.empty() && flush_requests_.empty()) {
        flush_requests_ = std::move(flush);
        bg_cv_.SignalAll();  // the background thread asks them (never a writer's thread)
      }
    }
  }
  cv_.SignalAll();
  if (!io.ok()) return io;
  return roll_status;
}

absl::Status Wal::WaitFor(uint64_t ticket, bool sync, bool gather) {
  while (true) {
    if (!error_.ok()) return error_;
    if ((sync ? durable_ : written_) >= ticket) return absl::OkStatus();
    if (!leader_) {
      // Lead a group covering everything queued so far, ours included. Its own status is
      // reflected in error_/durable_, checked on the next iteration.
      LeadGroup(sync, /*force_roll=*/false, gather).IgnoreError();
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
  uint64_t& held = pending_regions_[rec.region];
  held = std::max(held, rec.seq);
  const uint64_t ticket = ++queued_;
  if (gather_until_ != 0 && queued_ >= gather_until_) gather_cv_.Signal();
  ++stats_.records;
  stats_.bytes += framed.size();
  if (d == Durability::kSyncWal) return WaitFor(ticket, /*sync=*/true, /*gather=*/true);
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

absl::Status Wal::Heal() {
  absl::MutexLock hl(&heal_mu_);  // one heal at a time (each would start the same next segment)
  std::vector<std::string> flush;
  {
    absl::MutexLock l(&mu_);
    while (leader_) cv_.Wait(&mu_);
    if (error_.ok()) return absl::OkStatus();
    // Cut the segment back to what was synced, then start the next one.
    if (file_ != nullptr) {
      file_->Close().IgnoreError();
      file_.reset();
    }
    BASALT_RETURN_IF_ERROR(env_->Truncate(WalSegmentPath(options_.dir, segment_), synced_size_));
    recent_.clear();  // (some of it was cut)
    recent_size_ = 0;
    const uint64_t next = segment_ + 1;
    mu_.Unlock();
    absl::StatusOr<std::unique_ptr<WritableFile>> file = CreateSegment(next);
    mu_.Lock();
    BASALT_RETURN_IF_ERROR(file.status());
    for (const auto& [region, seq] : segment_regions_[segment_]) flush.push_back(region);
    for (const auto& [region, seq] : pending_regions_) flush.push_back(region);
    pending_.clear();
    pending_regions_.clear();
    // The tickets queued before the error were answered with it (or, ASYNC_WAL, are in memstores).
    written_ = durable_ = queued_;
    file_ = *std::move(file);
    segment_ = next;
    segment_regions_[segment_];
    synced_size_ = file_->Size();
    error_ = absl::OkStatus();
    ++stats_.heals;
    cv_.SignalAll();
  }
  RequestFlushes(flush);
  return absl::OkStatus();
}

std::optional<std::string> Wal::ReadRecent(uint64_t segment, uint64_t offset) const {
  struct Piece {
    std::shared_ptr<const std::string> bytes;
    size_t from, to;
  };
  std::vector<Piece> pieces;
  {
    absl::MutexLock l(&mu_);
    // Durable: the current segment up to its last sync; an earlier one whole (synced as it rolled).
    const uint64_t durable = segment == segment_ ? synced_size_ : UINT64_MAX;
    uint64_t next = 0;  // where the segment's next group must start (0: none taken yet)
    for (const RecentGroup& g : recent_) {
      if (g.segment != segment) {
        if (!pieces.empty()) break;  // (past the segment's last group)
        continue;
      }
      const uint64_t g_end = g.offset + g.bytes->size();
      if (pieces.empty()) {
        if (g.offset > offset) return std::nullopt;  // its start is no longer here
        if (g_end <= offset) continue;
      } else if (g.offset != next) {
        return std::nullopt;  // (never: the groups kept leave no gap; but a gap is never joined)
      }
      const uint64_t from = std::max(offset, g.offset);
      const uint64_t to = std::min(g_end, durable);
      if (from >= to) break;
      pieces.push_back(Piece{g.bytes, static_cast<size_t>(from - g.offset), static_cast<size_t>(to - g.offset)});
      next = g_end;
      if (to < g_end) break;
    }
  }
  if (pieces.empty()) return std::nullopt;
  std::string out;  // copied with mu_ let go: writers never wait for a reader
  for (const Piece& p : pieces) out.append(*p.bytes, p.from, p.to - p.from);
  return out;
}

uint64_t Wal::current_segment() const {
  absl::MutexLock l(&mu_);
  return segment_;
}

absl::Status Wal::DeleteSegmentsBefore(uint64_t n, const std::string& move_to) {
  const uint64_t current = current_segment();
  if (n > current) {
    return absl::InvalidArgumentError(absl::StrCat("Wal::DeleteSegmentsBefore(", n,
                                                   "): above the live segment ", current));
  }
  {
    // The index first: a segment below its range that a crash left behind is replayed (and
    // skipped by sequence id), never taken for a missing one.
    absl::MutexLock l(&index_mu_);
    if (n > index_first_) BASALT_RETURN_IF_ERROR(WriteIndex(n, std::max(index_last_, current)));
  }
  absl::MutexLock dl(&delete_mu_);
  {
    absl::MutexLock l(&mu_);
    for (auto it = segment_regions_.begin(); it != segment_regions_.end() && it->first < n;) {
      it = segment_regions_.erase(it);
    }
  }
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, ListSegments(env_, options_.dir));
  if (!move_to.empty()) BASALT_RETURN_IF_ERROR(env_->CreateDirs(move_to));
  uint64_t gone = 0;
  absl::Cleanup count = [&] {
    absl::MutexLock l(&mu_);
    stats_.deleted_segments += gone;
  };
  for (uint64_t s : segments) {
    if (s >= n) break;
    ++gone;
    const std::string path = WalSegmentPath(options_.dir, s);
    if (move_to.empty()) {
      BASALT_RETURN_IF_ERROR(env_->DeleteFile(path));
      continue;
    }
    std::string to = WalSegmentPath(move_to, s);
    for (int i = 1; env_->FileExists(to); ++i) to = absl::StrCat(WalSegmentPath(move_to, s), ".", i);
    BASALT_RETURN_IF_ERROR(env_->ReplaceFile(path, to));
  }
  return absl::OkStatus();
}

Wal::Stats Wal::GetStats() const {
  absl::MutexLock l(&mu_);
  Stats st = stats_;
  st.live_segments = segment_regions_.size();
  return st;
}

void Wal::BackgroundSyncer() {
  const absl::Duration interval = absl::Milliseconds(options_.async_sync_interval_ms);
  absl::MutexLock l(&mu_);
  while (!shutting_down_) {
    const absl::Time deadline = absl::Now() + interval;
    while (!shutting_down_ && flush_requests_.empty() && absl::Now() < deadline) bg_cv_.WaitWithDeadline(&mu_, deadline);
    if (shutting_down_) break;
    if (!flush_requests_.empty()) {
      std::vector<std::string> regions;
      regions.swap(flush_requests_);
      mu_.Unlock();
      RequestFlushes(regions);
      mu_.Lock();
      continue;
    }
    // Errors are already sticky in error_; the syncer just stops having work.
    if (error_.ok() && durable_ < queued_) WaitFor(queued_, /*sync=*/true).IgnoreError();
  }
}

// ---------------------------------------------------------------------------------------------
// Replay

namespace {

// A segment's preamble and header frame are at most this long (the header record: region "",
// a 10-byte varint, a zero count).
constexpr size_t kMaxHeaderFrameBytes = kWalSegmentPreambleSize + kWalHeaderSize + 1 + 10 + 1;

// What a segment holds, in file order.
struct SegmentItem {
  enum class Kind { kRecord, kTorn, kDamage };
  Kind kind;
  size_t offset = 0;
  size_t size = 0;
  WalRecord rec;       // kRecord
  std::string reason;  // kTorn, kDamage
};

bool FrameOk(std::string_view all, size_t q, size_t* n, WalRecord* rec, std::string* why) {
  std::string_view payload;
  if (const char* bad = CheckFrame(all.substr(q), &payload, n)) {
    if (why != nullptr) *why = bad;
    return false;
  }
  absl::StatusOr<WalRecord> r = DecodeWalPayload(payload);
  if (!r.ok()) {
    if (why != nullptr) *why = std::string(r.status().message());
    return false;
  }
  if (rec != nullptr) *rec = *std::move(r);
  return true;
}

// The first offset after `pos` from which intact frames run to the very end of the segment, or
// 0. Bounded: at most ~2x the bytes after pos are checksummed, so a large torn tail (a big value
// cut short) cannot stall recovery. A later frame only counts if frames run from it cleanly to
// the end, so a valid-looking frame inside a torn record's value is not taken for a record.
size_t Resync(std::string_view all, size_t pos) {
  int64_t budget = 2 * static_cast<int64_t>(all.size() - pos) + (1 << 20);
  auto frames_to_end = [&](size_t q) {
    while (q < all.size()) {
      if (all.size() - q < kWalHeaderSize) return false;
      const uint32_t len = DecodeFixed32(all.data() + q);
      if (len > all.size() - q - kWalHeaderSize) return false;
      budget -= len;
      if (budget < 0) return false;
      size_t n = 0;
      if (!FrameOk(all, q, &n, nullptr, nullptr)) return false;
      q += n;
    }
    return true;
  };
  for (size_t q = pos + 1; q + kWalHeaderSize <= all.size() && budget > 0; ++q) {
    const uint32_t len = DecodeFixed32(all.data() + q);
    if (len > all.size() - q - kWalHeaderSize) continue;  // cannot be a frame: no checksum work
    if (frames_to_end(q)) return q;
  }
  return 0;
}

// Whether the bad frame at pos, with nothing intact after it, is what a crash mid-write leaves:
// the frame runs past the end of the file, or the file ends in a run of zeros (pages never
// written) that starts inside the frame. A whole frame with a bad checksum is damage.
bool LooksTorn(std::string_view all, size_t pos) {
  if (all.size() - pos < kWalHeaderSize) return true;
  const uint64_t len = DecodeFixed32(all.data() + pos);
  if (len > all.size() - pos - kWalHeaderSize) return true;
  size_t z = all.size();
  while (z > pos && all[z - 1] == '\0') --z;
  const size_t zeros = all.size() - z;
  return z < pos + kWalHeaderSize + len && (zeros >= 32 || z <= pos + kWalHeaderSize);
}

std::vector<SegmentItem> ParseSegment(std::string_view all, uint64_t number, bool newest) {
  std::vector<SegmentItem> items;
  if (all.empty()) return items;  // a crash between creating the file and writing its header
  size_t pos = WalFramesStart(all);  // after the preamble (version 2), or 0 (version 1)
  bool may_be_torn = newest;
  {
    WalRecord rec;
    size_t n = 0;
    if (FrameOk(all, pos, &n, &rec, nullptr)) {
      if (rec.region.empty()) {
        if (rec.seq != number) {
          items.push_back({SegmentItem::Kind::kDamage, 0, all.size(), {},
                           absl::StrCat("the file holds the header of segment ", rec.seq, ", not ", number)});
          return items;
        }
        pos += n;
      }
      // else: a segment written before segments had headers; its records start at 0.
    } else if (all.size() <= kMaxHeaderFrameBytes) {
      // A header a crash cut short (the segment was being created): records are written only
      // once the header is synced, so none was lost, wherever the segment stands.
      items.push_back({SegmentItem::Kind::kTorn, 0, all.size(), {}, "a torn segment header"});
      return items;
    } else {
      // The header is synced before any record is written: more bytes than a header, without
      // one, is not a torn write.
      may_be_torn = false;
    }
  }
  while (pos < all.size()) {
    SegmentItem item;
    size_t n = 0;
    if (FrameOk(all, pos, &n, &item.rec, &item.reason)) {
      item.kind = SegmentItem::Kind::kRecord;
      item.offset = pos;
      item.size = n;
      items.push_back(std::move(item));
      pos += n;
      continue;
    }
    item.offset = pos;
    if (const size_t q = Resync(all, pos); q != 0) {
      item.kind = SegmentItem::Kind::kDamage;
      item.size = q - pos;
      item.reason = absl::StrCat("damaged record (", item.reason, ") followed by intact records from offset ", q);
      items.push_back(std::move(item));
      pos = q;
      continue;
    }
    item.size = all.size() - pos;
    if (may_be_torn && LooksTorn(all, pos)) {
      item.kind = SegmentItem::Kind::kTorn;
    } else {
      item.kind = SegmentItem::Kind::kDamage;
      item.reason = absl::StrCat(newest ? "damaged record (" : "damaged tail of an older segment (", item.reason, ")");
    }
    items.push_back(std::move(item));
    break;
  }
  return items;
}

bool OfRegion(const WalRecord& rec, const ReplayOptions& o) {
  return !rec.region.empty() && (o.region.empty() || rec.region == o.region);
}

}  // namespace

absl::Status ReplayWal(Env* env, const std::string& dir, const ReplayOptions& options,
                       const std::function<absl::Status(const WalRecord&)>& fn, ReplayStats* stats) {
  if (env == nullptr) env = Env::Default();
  ReplayStats local;
  if (stats == nullptr) stats = &local;
  if (!env->FileExists(dir)) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, ListSegments(env, dir));
  // Every number the log should hold: the range SEGMENTS records (segments below it may linger
  // after a crash mid-delete; their records are all flushed) up to the newest there is.
  uint64_t first = 0, last = 0;
  BASALT_ASSIGN_OR_RETURN(const bool have_index, ReadIndex(env, dir, &first, &last));
  if (options.below != 0) {
    segments.erase(std::lower_bound(segments.begin(), segments.end(), options.below), segments.end());
    last = std::min(last, options.below - 1);
  }
  if (!have_index) {
    first = segments.empty() ? 1 : segments.front();
    last = segments.empty() ? 0 : segments.back();
  }
  std::vector<uint64_t> numbers = segments;
  for (uint64_t n = first; n <= std::max(last, segments.empty() ? 0 : segments.back()); ++n) numbers.push_back(n);
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  const std::set<uint64_t> present(segments.begin(), segments.end());
  // The newest segment holding more than its header is the one that may end in a torn write.
  uint64_t newest = 0;
  for (uint64_t n : segments) {
    auto size = env->GetFileSize(WalSegmentPath(dir, n));
    if (size.ok() && *size > EncodeWalSegmentHeader(n).size()) newest = n;
  }

  const std::string mode = options.mode == WalRecoveryMode::kStrict        ? "strict"
                           : options.mode == WalRecoveryMode::kPointInTime ? "point_in_time"
                                                                           : "skip_corrupted";
  const std::string whose = options.region.empty() ? "records" : absl::StrCat("region ", options.region, "'s records");
  uint64_t seq_before = 0;  // the highest seq of the region's records replayed so far
  bool stopped = false;     // point in time: damage seen, nothing more is applied
  // The lowest seq of the region's intact records after item i of segment numbers[k].
  auto seq_after = [&](size_t k, const std::vector<SegmentItem>* items, size_t i) -> uint64_t {
    uint64_t best = 0;
    auto consider = [&](const SegmentItem& it) {
      if (it.kind == SegmentItem::Kind::kRecord && OfRegion(it.rec, options) && (best == 0 || it.rec.seq < best)) {
        best = it.rec.seq;
      }
    };
    if (items != nullptr) {
      for (size_t j = i + 1; j < items->size(); ++j) consider((*items)[j]);
      if (best != 0) return best;
    }
    for (size_t m = k + 1; m < numbers.size() && best == 0; ++m) {
      if (!present.count(numbers[m])) continue;
      absl::StatusOr<std::string> data = env->ReadFileToString(WalSegmentPath(dir, numbers[m]));
      if (!data.ok()) continue;
      for (const SegmentItem& it : ParseSegment(*data, numbers[m], false)) consider(it);
    }
    return best;
  };
  auto on_damage = [&](const std::string& where, const std::string& what, uint64_t bytes, uint64_t after) {
    std::string line = absl::StrCat(where, ": ", what, "; ", whose, " after ",
                                     seq_before == 0 ? "the start of the log" : absl::StrCat("seq ", seq_before),
                                     " and before ", after == 0 ? "the end of the log" : absl::StrCat("seq ", after),
                                     " are lost");
    if (options.mode == WalRecoveryMode::kStrict) {
      return absl::DataLossError(absl::StrCat(
          line, "; recovery stopped (wal_recovery=strict): restore the file, or reopen with wal_recovery=point_in_time "
                "or skip_corrupted to replay what is intact"));
    }
    stats->damage.push_back(absl::StrCat(line, " (wal_recovery=", mode, ")"));
    stats->skipped_bytes += bytes;
    if (options.mode == WalRecoveryMode::kPointInTime) stopped = true;
    return absl::OkStatus();
  };

  for (size_t k = 0; k < numbers.size(); ++k) {
    const uint64_t number = numbers[k];
    const std::string path = WalSegmentPath(dir, number);
    if (!present.count(number)) {
      BASALT_RETURN_IF_ERROR(
          on_damage(path, "log segment missing (SEGMENTS or later segments name it)", 0, seq_after(k, nullptr, 0)));
      continue;
    }
    BASALT_ASSIGN_OR_RETURN(std::string data, env->ReadFileToString(path));
    BASALT_RETURN_IF_ERROR(CheckSegmentVersion(data, path));  // a newer format: never skipped
    const std::vector<SegmentItem> items = ParseSegment(data, number, number == newest);
    for (size_t i = 0; i < items.size(); ++i) {
      const SegmentItem& it = items[i];
      switch (it.kind) {
        case SegmentItem::Kind::kRecord:
          if (it.rec.region.empty()) break;  // a segment header
          if (OfRegion(it.rec, options)) stats->max_seq = std::max(stats->max_seq, it.rec.seq);
          if (stopped) {
            ++stats->skipped_records;
            stats->skipped_bytes += it.size;
            break;
          }
          BASALT_RETURN_IF_ERROR(fn(it.rec));
          ++stats->records;
          if (OfRegion(it.rec, options)) seq_before = std::max(seq_before, it.rec.seq);
          break;
        case SegmentItem::Kind::kTorn:
          // Never synced (a crash mid-write): cut in every mode, so the next write follows
          // intact records.
          BASALT_RETURN_IF_ERROR(env->Truncate(path, it.offset));
          stats->truncated_bytes += it.size;
          if (!stats->truncated_at.empty()) stats->truncated_at += ", ";
          absl::StrAppend(&stats->truncated_at, path, "@", it.offset);
          break;
        case SegmentItem::Kind::kDamage:
          BASALT_RETURN_IF_ERROR(on_damage(absl::StrCat("WAL segment ", path),
                                           absl::StrCat(it.reason, " at offset ", it.offset, " (", it.size,
                                                        " bytes; segment size ", data.size(), ")"),
                                           it.size, seq_after(k, &items, i)));
          break;
      }
    }
    ++stats->segments;
  }
  return absl::OkStatus();
}

absl::Status ReplayWal(Env* env, const std::string& dir,
                       const std::function<absl::Status(const WalRecord&)>& fn, ReplayStats* stats) {
  return ReplayWal(env, dir, ReplayOptions{}, fn, stats);
}

absl::Status Wal::ReplayRegion(const std::string& region, uint64_t after,
                               const std::function<absl::Status(const WalRecord&)>& fn) {
  auto holds = [&](const RegionSeqs& m) {
    auto it = m.find(region);
    return it != m.end() && it->second > after;
  };
  {
    absl::MutexLock l(&mu_);
    bool any = holds(pending_regions_);
    for (const auto& [n, held] : segment_regions_) any = any || holds(held);
    if (!any) return absl::OkStatus();
  }
  // Its records (the region is closed: no more come) into whole, synced segments.
  BASALT_RETURN_IF_ERROR(Roll().status());
  std::vector<uint64_t> numbers;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [n, held] : segment_regions_) {
      if (n < segment_ && holds(held)) numbers.push_back(n);
    }
  }
  // Not deleted meanwhile: they hold records of the region above what it flushed.
  for (uint64_t n : numbers) {
    const std::string path = WalSegmentPath(options_.dir, n);
    BASALT_ASSIGN_OR_RETURN(std::string data, env_->ReadFileToString(path));
    for (const SegmentItem& it : ParseSegment(data, n, /*newest=*/false)) {
      if (it.kind != SegmentItem::Kind::kRecord) {
        return absl::DataLossError(absl::StrCat("WAL segment ", path, ": ", it.reason, " at offset ", it.offset,
                                                " while reading region ", region, "'s records"));
      }
      if (it.rec.region == region && it.rec.seq > after) BASALT_RETURN_IF_ERROR(fn(it.rec));
    }
  }
  return absl::OkStatus();
}

}  // namespace basalt
