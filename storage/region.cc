#include "storage/region.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/env.h"
#include "common/fault_point.h"
#include "common/log.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "storage/internal/block_format.h"
#include "storage/internal/bloom.h"
#include "storage/internal/manifest.h"
#include "storage/internal/region_impl.h"
#include "storage/internal/store.h"
#include "storage/internal/visibility.h"
#include "storage/internal/wal.h"
#include "storage/server_log.h"

namespace basalt {

using internal::ColumnTarget;
using internal::ColumnTargets;

namespace {

constexpr char kManifestName[] = "MANIFEST";
constexpr char kLostFoundDir[] = "lost+found";
// Write limits. A data block holds block_size (<= 16 MiB) plus at most one cell, so with these a
// block stays far below compression.h's 64 MiB read limit; a batch stays far below the WAL's.
// HBase's client default is 10 MiB per cell (hbase.client.keyvalue.maxsize).
constexpr uint64_t kMaxValueSize = 16ull << 20;
constexpr uint64_t kMaxQualifierSize = 64ull << 10;
constexpr uint64_t kMaxBatchBytes = 256ull << 20;

size_t RowStripe(std::string_view row) { return std::hash<std::string_view>{}(row); }

bool Selected(const std::vector<std::string>* quals, std::string_view q) {
  return quals == nullptr || std::binary_search(quals->begin(), quals->end(), q);
}

ReadRules RulesOf(const ReadSpec& spec) {
  ReadRules r;
  r.min_ts = spec.min_ts;
  r.max_ts = spec.max_ts;
  r.max_versions = spec.max_versions;
  return r;
}

}  // namespace

absl::Status RegionRangeError(const RegionDescriptor& desc, std::string_view row) {
  return absl::OutOfRangeError(absl::StrCat("row '", ToStringBinary(row), "' is not in region ", desc.name, " ['",
                                            ToStringBinary(desc.start_key), "', '", ToStringBinary(desc.end_key),
                                            "')"));
}

RegionImpl::RegionImpl(const RegionOptions& options, RegionDescriptor desc, std::string dir)
    : options_(options), desc_(std::move(desc)), dir_(std::move(dir)),
      row_locks_(new absl::Mutex[kRowLockStripes]) {
  if (options_.env == nullptr) options_.env = Env::Default();
  if (!options_.clock) {
    options_.clock = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
}

RegionImpl::~RegionImpl() {
  Close().IgnoreError();
}

int64_t RegionImpl::Now() const { return options_.clock(); }

namespace {
bool HasReferences(const FileList& files) {
  for (const auto& f : files) {
    if (f->range() != nullptr) return true;
  }
  return false;
}
}  // namespace

absl::Status WriteReferenceRegion(Env* env, const std::vector<RegionSource>& sources, const std::string& dir) {
  Manifest out;
  for (const RegionSource& src : sources) {
    const std::string mpath = src.dir + "/" + kManifestName;
    BASALT_ASSIGN_OR_RETURN(std::string bytes, env->ReadFileToString(mpath));
    BASALT_ASSIGN_OR_RETURN(Manifest m, DecodeManifest(bytes, mpath));
    if (!m.references.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("region directory ", src.dir, " still refers to ",
                                                        m.references.size(),
                                                        " file(s) of another region; a compaction rewrites them first"));
    }
    out.flushed_seq = std::max(out.flushed_seq, m.flushed_seq);
    // A retry of an operation the parent applied reaches a daughter (or the merged region).
    out.nonces.insert(m.nonces.begin(), m.nonces.end());
    out.answers.insert(m.answers.begin(), m.answers.end());
    const std::string rel = "../" + std::filesystem::path(src.dir).filename().string();
    for (const auto& [family, files] : m.files) {
      auto& mine = out.files[family];
      for (uint64_t f : files) {
        const uint64_t number = out.next_file_number++;
        mine.push_back(number);
        out.references[number] = FileReference{rel, f, src.start_row, src.end_row};
      }
    }
  }
  BASALT_RETURN_IF_ERROR(env->CreateDirs(dir));
  return env->WriteFileDurably(dir + "/" + kManifestName, EncodeManifest(out));
}

absl::StatusOr<std::unique_ptr<Region>> Region::Open(const RegionOptions& options, const RegionDescriptor& desc,
                                                     const std::string& dir) {
  if (desc.name.empty()) return absl::InvalidArgumentError("region name is empty");
  if (desc.families.empty()) return absl::InvalidArgumentError(absl::StrCat("region ", desc.name, " has no families"));
  if (!desc.end_key.empty() && desc.end_key <= desc.start_key) {
    return absl::InvalidArgumentError(absl::StrCat("region ", desc.name, ": end key '", ToStringBinary(desc.end_key),
                                                   "' is not after start key '", ToStringBinary(desc.start_key), "'"));
  }
  std::unique_ptr<RegionImpl> r(new RegionImpl(options, desc, dir));
  for (const auto& f : desc.families) {
    BASALT_RETURN_IF_ERROR(ValidateFamily(f));
    if (r->stores_.count(f.name)) {
      return absl::InvalidArgumentError(absl::StrCat("region ", desc.name, ": family ", f.name, " given twice"));
    }
    r->stores_[f.name] = std::make_unique<Store>(f, r->options_, r->options_.env, dir);
  }
  BASALT_RETURN_IF_ERROR(r->Recover());
  if (r->options_.background_compaction) {
    // A daughter of a split (or a merged region) rewrites its references first (HBase too).
    for (const auto& [n, st] : r->stores_) {
      if (!st->References().empty()) {
        absl::MutexLock l(&r->state_mu_);
        r->bg_requested_ = true;
      }
    }
  }
  r->bg_thread_ = std::thread([p = r.get()] { p->BackgroundLoop(); });
  return std::unique_ptr<Region>(std::move(r));
}

void RegionImpl::Log(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    log::Info(line);
  }
}

absl::Status RegionImpl::MoveAside(const std::string& name, std::string_view why) {
  const std::string aside = dir_ + "/" + kLostFoundDir;
  BASALT_RETURN_IF_ERROR(options_.env->CreateDirs(aside));
  std::string to = aside + "/" + name;
  for (int i = 1; options_.env->FileExists(to); ++i) to = absl::StrCat(aside, "/", name, ".", i);
  BASALT_RETURN_IF_ERROR(options_.env->ReplaceFile(dir_ + "/" + name, to));
  Log(absl::StrCat("region ", desc_.name, ": moved ", dir_, "/", name, " aside to ", to, " (", AV(why), ")"));
  return absl::OkStatus();
}

struct RegionImpl::Replay {
  uint64_t flushed = 0;     // the manifest's: older records are in block files
  uint64_t last = 0;        // the highest sequence id applied
  uint64_t records = 0;     // records applied
  uint64_t from_files = 0;  // of them, from logs in the region's directory
  // On the server log only: a split a crash cut short and ran again wrote some records twice.
  bool dedupe = false;
  std::set<uint64_t> applied;
  ReplayStats stats;  // of every directory replayed, added up
};

absl::Status RegionImpl::Recover() {
  Env* env = options_.env;
  BASALT_RETURN_IF_ERROR(env->CreateDirs(dir_));
  const std::string mpath = dir_ + "/" + kManifestName;
  BASALT_ASSIGN_OR_RETURN(auto names, env->ListDir(dir_));
  std::map<uint64_t, std::string> block_files;  // number -> name
  for (const auto& n : names) {
    if (Store::IsTempFileName(n)) {
      // A flush or compaction output a crash cut short: by its name never complete, never named
      // by a manifest, never the only copy of anything.
      BASALT_RETURN_IF_ERROR(env->DeleteFile(dir_ + "/" + n));
      continue;
    }
    if (auto num = Store::ParseFileNumber(n); num.ok()) block_files.emplace(*num, n);
  }
  Manifest m;
  const bool have_manifest = env->FileExists(mpath);
  if (have_manifest) {
    BASALT_ASSIGN_OR_RETURN(std::string bytes, env->ReadFileToString(mpath));
    BASALT_ASSIGN_OR_RETURN(m, DecodeManifest(bytes, mpath));
  } else if (!block_files.empty()) {
    // Every region writes its manifest when it is created, so block files without one mean the
    // manifest was lost: which files are live, and up to which sequence id the log is already
    // in them, is unknown. Guessing could serve deleted or stale cells; refuse instead.
    std::string some;
    for (const auto& [num, n] : block_files) {
      if (some.size() > 100) {
        some += ", ...";
        break;
      }
      absl::StrAppend(&some, some.empty() ? "" : ", ", n);
    }
    return absl::DataLossError(absl::StrCat(
        "region ", desc_.name, ": its manifest ", mpath, " is missing but ", dir_, " holds ", block_files.size(),
        " block file(s) (", some, "); nothing was deleted. Restore the MANIFEST from a backup, then reopen"));
  }
  next_file_number_ = m.next_file_number;
  flushed_seq_ = m.flushed_seq;
  for (const auto& [id, ms] : m.nonces) {
    std::vector<WalEdit> answer;
    if (auto a = m.answers.find(id); a != m.answers.end()) {
      for (const Manifest::AnswerCell& c : a->second) answer.push_back(WalEdit{c.family, c.key, c.value});
    }
    RememberNonce(Nonce{id.first, id.second}, ms, answer.empty() ? nullptr : &answer);
  }
  std::set<uint64_t> live;
  for (auto& [name, store] : stores_) {
    auto it = m.files.find(name);
    if (it == m.files.end()) continue;
    BASALT_RETURN_IF_ERROR(store->OpenFiles(it->second, m.references));
  }
  for (auto& [name, files] : m.files) live.insert(files.begin(), files.end());
  // Block files the manifest does not list. Numbered below its next_file_number, the manifest
  // vouches for them being obsolete: they were numbered before it was written and it left them
  // out, so each is a compacted file whose deletion a crash cut short (a reader still held it)
  // or a flush output whose edits are still in the log. Numbered from there on, it does not
  // know them (a manifest restored from an older backup, say): kept aside, never deleted.
  uint64_t obsolete = 0;
  for (const auto& [num, n] : block_files) {
    if (live.count(num)) continue;
    if (num < m.next_file_number) {
      BASALT_RETURN_IF_ERROR(env->DeleteFile(dir_ + "/" + n));
      ++obsolete;
    } else {
      BASALT_RETURN_IF_ERROR(MoveAside(n, "no manifest names it; nothing was deleted"));
    }
  }
  if (obsolete > 0) {
    Log(absl::StrCat("region ", desc_.name, ": removed ", obsolete,
                     " obsolete block file(s) its manifest no longer lists (compacted away before a crash)"));
  }
  if (!have_manifest) {
    // From now on a missing manifest is damage, never "a new region" (see above). A region that
    // has never flushed has nothing in block files, so the whole log is replayed.
    BASALT_RETURN_IF_ERROR(WriteManifest());
  }
  // Replay the log: edits after the flushed sequence id go back into the memstores.
  Replay replay;
  replay.flushed = m.flushed_seq;
  replay.last = m.flushed_seq;
  replay.dedupe = shared_log();
  const std::string wal_dir = dir_ + "/wal";
  const std::string edits_dir = dir_ + "/" + kRecoveredEditsDir;
  if (shared_log()) {
    BASALT_RETURN_IF_ERROR(options_.server_log->MayOpen(desc_.name));
    // A log of its own from before the server log, and what a split of the server log at
    // start-up gave it.
    BASALT_RETURN_IF_ERROR(ReplayDir(wal_dir, &replay));
    BASALT_RETURN_IF_ERROR(ReplayDir(edits_dir, &replay));
    replay.from_files = replay.records;
    // A region that closed without flushing (it had failed) and opens again: its edits are
    // still in the server log.
    BASALT_RETURN_IF_ERROR(options_.server_log->wal()->ReplayRegion(
        desc_.name, m.flushed_seq, [&](const WalRecord& rec) { return ApplyRecord(rec, &replay); }));
  } else {
    BASALT_RETURN_IF_ERROR(env->CreateDirs(wal_dir));
    BASALT_RETURN_IF_ERROR(ReplayDir(wal_dir, &replay));
  }
  const ReplayStats& rs = replay.stats;
  replayed_records_ = replay.records;
  replay_truncated_bytes_ = rs.truncated_bytes;
  replay_skipped_records_ = rs.skipped_records;
  replay_skipped_bytes_ = rs.skipped_bytes;
  if (rs.truncated_bytes > 0) {
    Log(absl::StrCat("region ", desc_.name, ": cut a torn log tail (a write a crash cut short, never synced) of ",
                     rs.truncated_bytes, " bytes at ", rs.truncated_at));
  }
  for (const std::string& d : rs.damage) Log(absl::StrCat("region ", desc_.name, ": skipped log damage: ", d));
  // Sequence ids of records left unapplied are never handed out again.
  const uint64_t last = std::max(replay.last, rs.max_seq);
  {
    absl::MutexLock l(&seq_mu_);
    last_seq_ = last;
  }
  read_point_ = last;
  if (shared_log()) {
    log_ = options_.server_log->wal();  // only now: Close (also of a region that failed to open) flushes
    if (replay.from_files > 0 || !rs.damage.empty()) {
      // Into block files, so the replayed logs can go (the manifest's flushed sequence id then
      // covers them: a crash before they are removed replays nothing of them again).
      absl::MutexLock fl(&flush_mu_);
      BASALT_RETURN_IF_ERROR(FlushLocked());
    }
    for (const char* d : {"wal", kRecoveredEditsDir}) {
      if (rs.damage.empty() || !env->FileExists(absl::StrCat(dir_, "/", d))) continue;
      BASALT_RETURN_IF_ERROR(MoveAside(d, "it held log damage that was skipped; what was replayed is flushed"));
    }
    BASALT_RETURN_IF_ERROR(DeleteWalDir(env, wal_dir));
    BASALT_RETURN_IF_ERROR(DeleteWalDir(env, edits_dir));
    log_->AttachRegion(desc_.name, [this] {
      absl::MutexLock l(&state_mu_);
      bg_requested_ = true;
    });
    attached_ = true;
    return absl::OkStatus();
  }
  Wal::Options wo;
  wo.env = env;
  wo.dir = wal_dir;
  BASALT_ASSIGN_OR_RETURN(own_wal_, Wal::Open(wo));
  log_ = own_wal_.get();
  if (!rs.damage.empty()) {
    // The operator chose to go on without what is lost. Make what was replayed durable in block
    // files (the manifest's flushed sequence id then covers every record of the old log, so it
    // is never replayed again) and keep the damaged segments in lost+found/ for inspection.
    absl::MutexLock fl(&flush_mu_);
    keep_log_aside_ = true;
    absl::Status s = FlushLocked();
    if (s.ok()) s = log_->DeleteSegmentsBefore(log_->current_segment(), dir_ + "/" + kLostFoundDir + "/wal");
    keep_log_aside_ = false;
    BASALT_RETURN_IF_ERROR(s);
    Log(absl::StrCat("region ", desc_.name, ": after skipping log damage, flushed what was replayed and moved the old "
                     "log segments to ", dir_, "/", kLostFoundDir, "/wal"));
  }
  return absl::OkStatus();
}

absl::Status RegionImpl::ReplayDir(const std::string& dir, Replay* replay) {
  ReplayOptions ro;
  ro.mode = options_.wal_recovery;
  ro.region = desc_.name;
  ReplayStats rs;
  BASALT_RETURN_IF_ERROR(
      ReplayWal(options_.env, dir, ro, [&](const WalRecord& rec) { return ApplyRecord(rec, replay); }, &rs));
  ReplayStats& sum = replay->stats;
  sum.segments += rs.segments;
  sum.records += rs.records;
  sum.truncated_bytes += rs.truncated_bytes;
  if (!rs.truncated_at.empty()) absl::StrAppend(&sum.truncated_at, sum.truncated_at.empty() ? "" : ", ", rs.truncated_at);
  sum.damage.insert(sum.damage.end(), rs.damage.begin(), rs.damage.end());
  sum.skipped_records += rs.skipped_records;
  sum.skipped_bytes += rs.skipped_bytes;
  sum.max_seq = std::max(sum.max_seq, rs.max_seq);
  return absl::OkStatus();
}

absl::Status RegionImpl::ApplyRecord(const WalRecord& rec, Replay* replay) {
  if (rec.region != desc_.name || rec.seq <= replay->flushed) return absl::OkStatus();
  // Counted from now: the record does not say when it was written (it lives a little longer).
  if (rec.nonce != 0) RememberNonce(Nonce{rec.nonce_group, rec.nonce}, Now(), &rec.edits);
  if (replay->dedupe && !replay->applied.insert(rec.seq).second) return absl::OkStatus();
  for (const auto& e : rec.edits) {
    Store* s = FindStore(e.family);
    KeyView k;
    if (!ParseFlatKey(e.key, &k)) {
      return absl::DataLossError(absl::StrCat("log record ", rec.seq, " of region ", desc_.name, " has a bad key"));
    }
    if (s == nullptr) {
      // Dropping it would lose an acknowledged write for good once the next flush deletes the
      // log segment: refuse to open instead.
      return absl::FailedPreconditionError(absl::StrCat(
          "region ", desc_.name, ": the log holds unflushed edits (seq ", rec.seq, ") for family '", e.family,
          "', which the descriptor lacks; open with that family (and flush) before removing it"));
    }
    s->Add(e.key, rec.seq, e.value);
  }
  replay->last = std::max(replay->last, rec.seq);
  ++replay->records;
  return absl::OkStatus();
}

Store* RegionImpl::FindStore(std::string_view family) const {
  auto it = stores_.find(family);
  return it == stores_.end() ? nullptr : it->second.get();
}

absl::Status RegionImpl::CheckWritable() const {
  absl::MutexLock l(&state_mu_);
  if (closed_) return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name, " is closed"));
  if (failed_.code() == absl::StatusCode::kResourceExhausted) {
    return absl::FailedPreconditionError(absl::StrCat(
        "region ", desc_.name, " failed for lack of disk space and resumes writes once there is room: ",
        failed_.ToString()));
  }
  if (!failed_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name, " failed and must be reopened: ",
                                                      failed_.message()));
  }
  return absl::OkStatus();
}

absl::Status RegionImpl::CheckOpen() const {
  absl::MutexLock l(&state_mu_);
  if (closed_) return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name, " is closed"));
  return absl::OkStatus();
}

absl::Status RegionImpl::Fail(absl::Status s) {
  absl::MutexLock l(&state_mu_);
  if (failed_.ok()) failed_ = s;
  return s;
}

uint64_t RegionImpl::ReadPoint() const { return read_point_.load(std::memory_order_acquire); }

absl::Status RegionImpl::Put(std::string_view row, std::string_view family, std::string_view qualifier,
                         std::string_view value, int64_t ts, Durability durability) {
  RowMutation rm;
  rm.row.assign(row);
  Mutation m;
  m.family.assign(family);
  m.qualifier.assign(qualifier);
  m.value.assign(value);
  m.timestamp = ts;
  rm.mutations.push_back(std::move(m));
  return Mutate({std::move(rm)}, durability);
}

absl::Status RegionImpl::CheckDurability(Durability d) {
  if (d == Durability::kUseDefault) {
    return absl::InvalidArgumentError("USE_DEFAULT durability is for client requests; the server resolves it");
  }
  return absl::OkStatus();
}

absl::Status RegionImpl::ValidateBatch(const std::vector<RowMutation>& batch) const {
  uint64_t batch_bytes = 0;
  for (const auto& rm : batch) {
    if (rm.row.empty()) return absl::InvalidArgumentError("row key is empty");
    if (rm.row.size() > kMaxRowLength) {
      return absl::InvalidArgumentError(absl::StrCat("row key of ", rm.row.size(), " bytes exceeds ", kMaxRowLength));
    }
    if (!desc_.Contains(rm.row)) return RegionRangeError(desc_, rm.row);
    for (const auto& m : rm.mutations) {
      if (FindStore(m.family) == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("unknown column family '", m.family, "' in region ", desc_.name));
      }
      if (m.value.size() > kMaxValueSize) {
        return absl::InvalidArgumentError(absl::StrCat("value of ", m.value.size(), " bytes exceeds ", kMaxValueSize));
      }
      if (m.qualifier.size() > kMaxQualifierSize) {
        return absl::InvalidArgumentError(absl::StrCat("qualifier of ", m.qualifier.size(), " bytes exceeds ",
                                                       kMaxQualifierSize));
      }
      batch_bytes += rm.row.size() + m.family.size() + m.qualifier.size() + m.value.size() + 32;
      if (m.timestamp < 0) return absl::InvalidArgumentError(absl::StrCat("negative timestamp ", m.timestamp));
    }
  }
  if (batch_bytes > kMaxBatchBytes) {
    return absl::InvalidArgumentError(absl::StrCat("batch of ~", batch_bytes, " bytes exceeds ", kMaxBatchBytes));
  }
  return absl::OkStatus();
}

namespace {
// Holds the row locks of a set of stripes, taken in stripe order (no deadlock between batches).
class StripeLocks {
 public:
  StripeLocks(absl::Mutex* locks, std::vector<size_t> stripes) : locks_(locks), stripes_(std::move(stripes)) {
    std::sort(stripes_.begin(), stripes_.end());
    stripes_.erase(std::unique(stripes_.begin(), stripes_.end()), stripes_.end());
    for (size_t s : stripes_) locks_[s].Lock();
  }
  ~StripeLocks() {
    for (auto it = stripes_.rbegin(); it != stripes_.rend(); ++it) locks_[*it].Unlock();
  }
  StripeLocks(const StripeLocks&) = delete;
  StripeLocks& operator=(const StripeLocks&) = delete;

 private:
  absl::Mutex* locks_;
  std::vector<size_t> stripes_;
};
}  // namespace

absl::Status RegionImpl::Mutate(const std::vector<RowMutation>& batch, Durability durability, Nonce nonce) {
  BASALT_RETURN_IF_ERROR(CheckWritable());
  BASALT_RETURN_IF_ERROR(CheckDurability(durability));
  // Validate everything before touching anything.
  BASALT_RETURN_IF_ERROR(ValidateBatch(batch));
  std::vector<size_t> stripes;
  stripes.reserve(batch.size());
  for (const auto& rm : batch) stripes.push_back(RowStripe(rm.row) % kRowLockStripes);
  StripeLocks locks(row_locks_.get(), std::move(stripes));
  // A retry of a write applied here (its first attempt holds the same row locks): not again.
  if (nonce.nonce != 0 && NonceApplied(nonce, {}, nullptr)) return absl::OkStatus();
  return MutateLocked(batch, durability, nonce);
}

absl::Status RegionImpl::MutateRowWith(std::string_view row, const ReadSpec& spec, const RowUpdateFn& fn,
                                   Durability durability, Nonce nonce) {
  BASALT_RETURN_IF_ERROR(CheckWritable());
  BASALT_RETURN_IF_ERROR(CheckDurability(durability));
  std::vector<RowMutation> batch(1);
  batch[0].row.assign(row);
  BASALT_RETURN_IF_ERROR(ValidateBatch(batch));  // the row key
  StripeLocks locks(row_locks_.get(), {RowStripe(row) % kRowLockStripes});
  // Every earlier write to this row has completed and is visible: we hold its lock, and writes
  // return only once visible.
  RowResult current;
  BASALT_RETURN_IF_ERROR(GetInto(row, spec, &current));
  // A retry of an operation applied here: not applied again, and answered with what it wrote
  // then (or, when only its nonce is known, what is stored now). (A retry cannot race its first
  // attempt past this: both hold the row's lock.)
  if (nonce.nonce != 0) {
    RowResult applied;
    if (NonceApplied(nonce, row, &applied)) return fn(applied.empty() ? current : applied, nullptr);
  }
  BASALT_RETURN_IF_ERROR(fn(current, &batch[0].mutations));
  if (batch[0].mutations.empty()) return absl::OkStatus();
  BASALT_RETURN_IF_ERROR(ValidateBatch(batch));
  return MutateLocked(batch, durability, nonce, /*keep_answer=*/true);
}

bool RegionImpl::NonceApplied(Nonce nonce, std::string_view row, RowResult* applied) {
  absl::MutexLock l(&nonce_mu_);
  auto it = nonces_.find({nonce.group, nonce.nonce});
  if (it == nonces_.end() || it->second.ms < Now() - options_.nonce_expiry_ms) return false;
  if (applied != nullptr && !it->second.puts.empty()) {
    applied->Reset(row);
    for (const WalEdit& e : it->second.puts) {
      const KeyView k = ParseFlatKeyUnchecked(e.key);
      applied->Add(e.family, k.qualifier, k.timestamp, k.type, e.value);
    }
  }
  return true;
}

void RegionImpl::RememberNonce(Nonce nonce, int64_t ms, const std::vector<WalEdit>* edits) {
  if (nonce.nonce == 0) return;
  absl::MutexLock l(&nonce_mu_);
  AppliedNonce& at = nonces_[{nonce.group, nonce.nonce}];
  at.ms = std::max(at.ms, ms);
  if (edits != nullptr && at.puts.empty()) {
    for (const WalEdit& e : *edits) {
      if (ParseFlatKeyUnchecked(e.key).type == CellType::kPut) at.puts.push_back(e);
    }
  }
}

void RegionImpl::LiveNonces(Manifest* m) {
  const int64_t oldest = Now() - options_.nonce_expiry_ms;
  std::map<std::pair<uint64_t, uint64_t>, int64_t>& out = m->nonces;
  absl::MutexLock l(&nonce_mu_);
  // Expired ones go here too (a manifest is written at every flush and compaction).
  for (auto it = nonces_.begin(); it != nonces_.end();) {
    if (it->second.ms < oldest) {
      nonces_.erase(it++);
    } else {
      out.emplace(it->first, it->second.ms);
      if (!it->second.puts.empty()) {
        std::vector<Manifest::AnswerCell>& cells = m->answers[it->first];
        for (const WalEdit& e : it->second.puts) cells.push_back({e.family, e.key, e.value});
      }
      ++it;
    }
  }
}

absl::Status RegionImpl::MutateLocked(const std::vector<RowMutation>& batch, Durability durability, Nonce nonce,
                                      bool keep_answer) {
  // Back-pressure: past the blocking limit this writer flushes (one flush at a time) instead of
  // letting memstores grow without bound.
  if (MemstoreBytes() >= options_.memstore_flush_size * options_.memstore_block_multiplier) {
    ++blocked_writes_;
    BASALT_RETURN_IF_ERROR(Flush());
  }
  const int64_t now = Now();
  WalRecord rec;
  rec.region = desc_.name;
  rec.nonce_group = nonce.group;
  rec.nonce = nonce.nonce;
  for (const auto& rm : batch) {
    for (const auto& m : rm.mutations) {
      int64_t ts = m.timestamp == kLatestTimestamp ? now : m.timestamp;
      CellType type = CellType::kPut;
      std::string_view qualifier = m.qualifier;
      switch (m.kind) {
        case Mutation::Kind::kPut: break;
        case Mutation::Kind::kDeleteColumn: type = CellType::kDeleteColumn; break;
        case Mutation::Kind::kDeleteFamily: type = CellType::kDeleteFamily; qualifier = {}; break;
        case Mutation::Kind::kDelete:
          type = CellType::kDelete;
          if (m.timestamp == kLatestTimestamp) {
            // HBase: delete the newest visible version; nothing to do when there is none.
            ReadSpec spec;
            spec.columns.push_back({m.family, {m.qualifier}});
            RowResult found;  // every earlier write to this row has completed: we hold its lock
            BASALT_RETURN_IF_ERROR(GetInto(rm.row, spec, &found));
            if (found.empty()) continue;
            ts = found.cells()[0].timestamp;
          }
          break;
      }
      WalEdit e;
      e.family = m.family;
      AppendFlatKey(&e.key, rm.row, qualifier, ts, type);
      if (type == CellType::kPut) e.value = m.value;
      rec.edits.push_back(std::move(e));
    }
  }
  if (rec.edits.empty()) return absl::OkStatus();
  write_requests_.fetch_add(batch.size(), std::memory_order_relaxed);

  {
    absl::MutexLock l(&seq_mu_);
    seq_mu_.Await(absl::Condition(+[](bool* b) { return !*b; }, &writes_blocked_));
    if (closing_) return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name, " is closed"));
    rec.seq = ++last_seq_;
    inflight_.insert(rec.seq);
  }
  absl::Status s;
  if (durability != Durability::kSkipWal) s = log_->Append(rec, durability);
  if (s.ok()) {
    for (const auto& e : rec.edits) FindStore(e.family)->Add(e.key, rec.seq, e.value);
  }
  {
    absl::MutexLock l(&seq_mu_);
    inflight_.erase(rec.seq);
    read_point_.store(inflight_.empty() ? last_seq_ : *inflight_.begin() - 1, std::memory_order_release);
    // Read-your-writes: return only once this write is visible, i.e. every earlier one is done
    // too (HBase's completeAndWait).
    if (s.ok()) {
      struct Visible {
        const std::atomic<uint64_t>* read_point;
        uint64_t seq;
        bool operator()() const { return read_point->load(std::memory_order_acquire) >= seq; }
      } visible{&read_point_, rec.seq};
      seq_mu_.Await(absl::Condition(&visible));
    }
  }
  // A log I/O error fails the region (an acknowledged write may never be lost); a refused
  // record does not.
  if (!s.ok()) return s.code() == absl::StatusCode::kInvalidArgument ? s : Fail(s);
  RememberNonce(nonce, now, keep_answer ? &rec.edits : nullptr);
  MaybeScheduleBackground();
  return absl::OkStatus();
}

uint64_t RegionImpl::MemstoreBytes() const {
  uint64_t bytes = 0;
  for (auto& [n, st] : stores_) bytes += st->MemstoreBytes();
  return bytes;
}

void RegionImpl::MaybeScheduleBackground() {
  if (MemstoreBytes() < options_.memstore_flush_size) return;
  absl::MutexLock l(&state_mu_);
  bg_requested_ = true;
}

void RegionImpl::BackgroundLoop() {
  for (;;) {
    {
      absl::MutexLock l(&state_mu_);
      state_mu_.AwaitWithTimeout(absl::Condition(+[](RegionImpl* r) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                   return r->bg_requested_ || r->bg_stop_;
                                 }, this),
                                 absl::Seconds(1));
      if (bg_stop_) return;
      if (!bg_requested_ && !(failed_.code() == absl::StatusCode::kResourceExhausted)) continue;
      bg_requested_ = false;
    }
    // A region failed on a full disk retries, about once a second, until space is back.
    if (Healable() && !TryHeal().ok()) continue;
    const uint64_t changes = flushes_ + minor_compactions_ + major_compactions_;
    absl::Status s = Flush();
    if (s.ok() && options_.background_compaction) s = CompactReferences();
    if (s.ok() && options_.background_compaction) s = CompactMinor();
    (void)s;  // a failed flush marks the region failed; nothing else to do here
    if (options_.on_files_changed && flushes_ + minor_compactions_ + major_compactions_ != changes) {
      options_.on_files_changed(desc_.name);
    }
  }
}

bool RegionImpl::Healable() const {
  absl::MutexLock l(&state_mu_);
  return !closed_ && failed_.code() == absl::StatusCode::kResourceExhausted;
}

absl::Status RegionImpl::TryHeal() {
  if (!Healable()) return absl::OkStatus();
  absl::MutexLock fl(&flush_mu_);
  // The log cuts its segment back to what was synced (a write the full disk cut short is not
  // left as damage in the middle of the log) and starts a new one. A shared log is healed by
  // the first of its regions to try; the others find it healed.
  absl::Status s = log_->Heal();
  absl::Status was;
  {
    absl::MutexLock l(&state_mu_);
    was = failed_;
    if (s.ok()) {
      failed_ = absl::OkStatus();  // writes go to the new segment from here on
    } else {
      failed_ = s;  // still no space (ResourceExhausted): tried again later
    }
  }
  BASALT_RETURN_IF_ERROR(s);
  // What the memstores hold goes to block files (an ASYNC_WAL edit the cut took is only
  // there), and the old segments (the cut one among them) go once the manifest covers them. A
  // failure fails the region again, to be retried.
  BASALT_RETURN_IF_ERROR(FlushLocked());
  Log(absl::StrCat("region ", desc_.name, " healed: writes resumed after ", was.ToString()));
  return absl::OkStatus();
}

absl::Status RegionImpl::WriteManifest() {
  absl::MutexLock l(&manifest_mu_);
  Manifest m;
  m.next_file_number = next_file_number_.load();
  m.flushed_seq = flushed_seq_.load();
  for (auto& [name, store] : stores_) {
    m.files[name] = store->FileNumbers();
    m.references.merge(store->References());
  }
  // Once the flush this manifest records lets the log records go, their nonces live here.
  LiveNonces(&m);
  return options_.env->WriteFileDurably(dir_ + "/" + kManifestName, EncodeManifest(m));
}

absl::Status RegionImpl::Flush() {
  BASALT_RETURN_IF_ERROR(CheckOpen());
  absl::MutexLock fl(&flush_mu_);
  return FlushLocked();
}

absl::Status RegionImpl::FlushLocked() {
  {
    absl::MutexLock l(&state_mu_);
    if (!failed_.ok()) return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name, " failed: ", failed_.message()));
  }
  // A flush that failed after it froze the memstores is finished first, with its own sequence
  // id and log segment: the memstores written since hold later edits, which are in no file yet
  // and whose log records must stay until a flush writes them. (Writing the old frozen ones
  // under the newest sequence id instead let the log go while those edits were only in memory:
  // a close after a healed full disk then lost them.)
  if (frozen_seq_ != 0) BASALT_RETURN_IF_ERROR(WriteFrozenLocked(frozen_seq_, frozen_segment_));
  uint64_t flush_seq;
  absl::StatusOr<uint64_t> segment;
  {
    // Drain writes in flight so the frozen memstores hold exactly the edits <= flush_seq, and
    // roll the log before writes resume so every record in older segments is <= flush_seq
    // (those segments are deleted once the flush is in the manifest). Writers wait for the
    // roll (one fdatasync and a file create).
    absl::MutexLock l(&seq_mu_);
    writes_blocked_ = true;
    seq_mu_.Await(absl::Condition(+[](std::set<uint64_t>* s) { return s->empty(); }, &inflight_));
    flush_seq = last_seq_;
    if (flush_seq != flushed_seq_.load()) {
      for (auto& [n, st] : stores_) st->Freeze();
      frozen_seq_ = flush_seq;
      frozen_segment_.reset();
      // A log of its own rolls, so that every older segment is covered by this flush. A shared
      // log knows which regions' records each segment holds instead.
      if (shared_log()) {
        segment = 0;
      } else {
        segment = log_->Roll();
      }
      if (segment.ok() && !shared_log()) frozen_segment_ = *segment;
    }
    writes_blocked_ = false;
  }
  if (flush_seq == flushed_seq_.load()) return absl::OkStatus();
  if (!segment.ok()) return Fail(segment.status());
  return WriteFrozenLocked(flush_seq, frozen_segment_);
}

absl::Status RegionImpl::WriteFrozenLocked(uint64_t flush_seq, std::optional<uint64_t> segment) {
  std::vector<std::shared_ptr<BlockFileReader>> written;
  for (auto& [n, st] : stores_) {
    auto wrote = st->WriteFrozen(next_file_number_++, flush_seq);
    if (!wrote.ok()) return Fail(wrote.status());  // HBase aborts the server here (DroppedSnapshot)
    written.push_back(std::move(*wrote));
  }
  {
    absl::WriterMutexLock l(&snapshot_mu_);
    size_t i = 0;
    for (auto& [n, st] : stores_) st->InstallFlushed(std::move(written[i++]));
  }
  frozen_seq_ = 0;
  frozen_segment_.reset();
  flushed_seq_ = flush_seq;
  // The log segments go only once the manifest names the files.
  if (absl::Status s = WriteManifest(); !s.ok()) return Fail(s);
  ++flushes_;
  if (shared_log()) return log_->MarkFlushed(desc_.name, flush_seq);
  if (!segment.has_value()) return absl::OkStatus();
  return log_->DeleteSegmentsBefore(*segment, keep_log_aside_ ? dir_ + "/" + kLostFoundDir + "/wal" : "");
}

absl::Status RegionImpl::CompactStore(Store* store, bool major) {
  FileList inputs;
  if (major) {
    auto files = store->Files();
    inputs = *files;
    if (inputs.empty()) return absl::OkStatus();
  } else {
    inputs = store->PickMinor();
    if (inputs.empty()) return absl::OkStatus();
  }
  uint64_t input_bytes = 0;
  for (const auto& f : inputs) input_bytes += f->stats().file_size;
  compacting_.fetch_add(1, std::memory_order_relaxed);
  std::unique_ptr<CompactionFilter> filter;
  if (major && desc_.compaction_filter) filter = desc_.compaction_filter();
  absl::StatusOr<FileList> compacted = store->Compact(inputs, next_file_number_++, major, Now(), filter.get());
  compacting_.fetch_sub(1, std::memory_order_relaxed);
  BASALT_ASSIGN_OR_RETURN(FileList replaced, std::move(compacted));
  compacted_bytes_.fetch_add(input_bytes, std::memory_order_relaxed);
  BASALT_RETURN_IF_ERROR(WriteManifest());
  for (const auto& f : replaced) {
    f->MarkObsolete(options_.env);  // deleted when the last reader lets go
    if (f->range() != nullptr) {
      // A reference's file is its parent's, which the table manager removes: it must know
      // while a scan still reads it.
      absl::MutexLock l(&retired_references_mu_);
      retired_references_.push_back(f);
    }
  }
  ++(major ? major_compactions_ : minor_compactions_);
  return absl::OkStatus();
}

absl::Status RegionImpl::CompactMinor() {
  BASALT_RETURN_IF_ERROR(CheckOpen());
  compactions_queued_.fetch_add(1, std::memory_order_relaxed);
  absl::MutexLock cl(&compaction_mu_);
  compactions_queued_.fetch_sub(1, std::memory_order_relaxed);
  BASALT_RETURN_IF_ERROR(CheckOpen());  // Close may have come and gone while we waited
  for (auto& [n, st] : stores_) BASALT_RETURN_IF_ERROR(CompactStore(st.get(), false));
  return absl::OkStatus();
}

absl::Status RegionImpl::CompactReferences() {
  BASALT_RETURN_IF_ERROR(CheckOpen());
  compactions_queued_.fetch_add(1, std::memory_order_relaxed);
  absl::MutexLock cl(&compaction_mu_);
  compactions_queued_.fetch_sub(1, std::memory_order_relaxed);
  BASALT_RETURN_IF_ERROR(CheckOpen());
  for (auto& [n, st] : stores_) {
    if (!st->References().empty()) BASALT_RETURN_IF_ERROR(CompactStore(st.get(), true));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RegionImpl::SplitPoint() const {
  // HBase's: the middle key of the largest file of the largest store, as a row.
  const BlockFileReader* largest = nullptr;
  uint64_t largest_store = 0;
  for (const auto& [n, st] : stores_) {
    const auto files = st->Files();
    uint64_t bytes = 0;
    const BlockFileReader* big = nullptr;
    for (const auto& f : *files) {
      bytes += f->stats().file_size;
      if (big == nullptr || f->stats().file_size > big->stats().file_size) big = f.get();
    }
    if (big != nullptr && HasReferences(*files)) {
      return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name,
                                                        " still refers to its parent's files (a compaction rewrites "
                                                        "them); it cannot split before"));
    }
    if (big != nullptr && bytes > largest_store) {
      largest_store = bytes;
      largest = big;
    }
  }
  if (largest == nullptr || largest->num_blocks() == 0) {
    return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name, " has no flushed data to find a split point in"));
  }
  std::string row(ParseFlatKeyUnchecked(largest->MidKey()).row);
  if (row <= desc_.start_key || (!desc_.end_key.empty() && row >= desc_.end_key)) {
    return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name, ": its middle row '", ToStringBinary(row),
                                                      "' is its start or outside it (too little data to split)"));
  }
  return row;
}

absl::Status RegionImpl::MajorCompact() {
  BASALT_RETURN_IF_ERROR(CheckWritable());
  BASALT_RETURN_IF_ERROR(Flush());
  compactions_queued_.fetch_add(1, std::memory_order_relaxed);
  absl::MutexLock cl(&compaction_mu_);
  compactions_queued_.fetch_sub(1, std::memory_order_relaxed);
  BASALT_RETURN_IF_ERROR(CheckOpen());  // Close may have come and gone while we waited
  for (auto& [n, st] : stores_) BASALT_RETURN_IF_ERROR(CompactStore(st.get(), true));
  return absl::OkStatus();
}

absl::Status RegionImpl::Close() {
  {
    absl::MutexLock l(&state_mu_);
    if (closed_) return absl::OkStatus();
    closed_ = true;
    bg_stop_ = true;
  }
  if (bg_thread_.joinable()) bg_thread_.join();
  if (attached_) log_->DetachRegion(desc_.name);
  // A compaction in progress (a MajorCompact call) finishes first: after Close returns nothing
  // writes into the directory, which the server may then delete or reuse for a new table.
  { absl::MutexLock cl(&compaction_mu_); }
  {
    // No new sequence ids; wait for writes that already have one.
    absl::MutexLock l(&seq_mu_);
    closing_ = true;
    seq_mu_.Await(absl::Condition(+[](std::set<uint64_t>* s) { return s->empty(); }, &inflight_));
  }
  absl::Status s;
  {
    absl::MutexLock l(&state_mu_);
    s = failed_;
  }
  if (s.ok() && log_ != nullptr) {
    absl::MutexLock fl(&flush_mu_);  // waits for a flush a blocked writer may be running
    s = FailPoint("region.close.flush");  // tests of a close whose flush fails
    if (s.ok()) s = FlushLocked();
  }
  // The log lives until the destructor (a shared one, the server's life): a late caller gets
  // FailedPrecondition, never a null log.
  if (log_ != nullptr) {
    absl::Status synced = log_->Sync();
    if (s.ok()) s = synced;
  }
  return s;
}

RegionStats RegionImpl::GetStats() const {
  RegionStats st;
  {
    absl::MutexLock l(&seq_mu_);
    st.last_seq = last_seq_;
  }
  st.flushed_seq = flushed_seq_;
  st.memstore_bytes = MemstoreBytes();
  for (auto& [n, s] : stores_) {
    std::shared_ptr<const FileList> files = s->Files();
    st.files_per_family[n] = files->size();
    uint64_t bytes = 0;
    for (const auto& f : *files) {
      bytes += f->stats().file_size;
      if (f->range() != nullptr) ++st.reference_files;
    }
    st.store_file_bytes += bytes;
    st.largest_store_bytes = std::max(st.largest_store_bytes, bytes);
  }
  {
    absl::MutexLock l(&retired_references_mu_);
    std::erase_if(retired_references_, [](const auto& w) { return w.expired(); });
    st.references_still_read = retired_references_.size();
  }
  st.read_requests = read_requests_.load(std::memory_order_relaxed);
  st.write_requests = write_requests_.load(std::memory_order_relaxed);
  st.flushes = flushes_;
  st.minor_compactions = minor_compactions_;
  st.major_compactions = major_compactions_;
  st.compactions_running = compacting_.load(std::memory_order_relaxed);
  st.compactions_queued = compactions_queued_.load(std::memory_order_relaxed);
  st.bloom_skips = BloomReader::Skips();
  st.compacted_bytes = compacted_bytes_.load(std::memory_order_relaxed);
  st.replayed_records = replayed_records_;
  st.checksum_failures = ChecksumFailures();
  st.blocked_writes = blocked_writes_;
  st.replay_truncated_bytes = replay_truncated_bytes_;
  st.replay_skipped_records = replay_skipped_records_;
  st.replay_skipped_bytes = replay_skipped_bytes_;
  {
    absl::MutexLock l(&state_mu_);
    if (!failed_.ok()) st.failed = failed_.ToString();
  }
  if (own_wal_ != nullptr) {  // a shared log's figures are the server's (ServerLog::GetStats)
    auto ws = own_wal_->GetStats();
    st.wal_records = ws.records;
    st.wal_syncs = ws.syncs;
    st.wal_synced_records = ws.synced_records;
  }
  return st;
}

// ------------------------------------------------------------------ reads

namespace {

// Reads one store's cells, row by row, through a visibility tracker and the read's filter.
class StoreReader {
 public:
  StoreReader(const Store* store, std::unique_ptr<InternalIterator> it, const std::vector<std::string>* quals,
              int64_t now, const ReadSpec& spec)
      : family_(store->family().name), it_(std::move(it)), quals_(quals), filter_(spec.filter.get()),
        tracker_(store->family(), now, RulesOf(spec)) {}

  InternalIterator* it() { return it_.get(); }

  // Appends the cells of `row` the read returns (the iterator must be at or before its first
  // cell; it ends past the row). *row_done is set when the filter refused the rest of the
  // row (kNextRow): the other stores then skip it.
  absl::Status ReadRow(std::string_view row, RowResult* out, bool* row_done) {
    InternalIterator* it = it_.get();
    skip_column_ = false;
    while (it->Valid()) {
      KeyView k = ParseFlatKeyUnchecked(it->key());
      if (!BytesEqual(k.row, row)) return absl::OkStatus();
      // Every cell goes through the tracker (it compares each with the one before); the column
      // selection, the filter and the version count apply to what it finds readable.
      bool included = false;
      if (tracker_.Readable(k) && (quals_ == nullptr || Selected(quals_, k.qualifier))) {
        if (!Offer(k, it->value(), out, &included)) {
          *row_done = true;
          SkipRow(row);
          return it->status();
        }
      }
      if (!included && tracker_.SurplusPuts() >= kSurplusBeforeSeek && !k.qualifier.empty()) {
        // (Never past the empty qualifier's column: DeleteFamily markers live there, sorted
        // by timestamp among its puts, and hide cells of every later column.)
        // A column with many versions (a hot row updated often, all still in the memstore):
        // seek past the rest of it instead of stepping through every version. HBase's
        // SEEK_NEXT_COL. The YCSB A/C benchmark spent 17 % of the server's CPU here (perf).
        // The loop goes on without Next: the iterator is at the next column's first cell.
        SeekPastColumn(k);
        continue;
      }
      it->Next();
    }
    return it->status();
  }

  // Moves the iterator past `row` if it is in it (a row the filter refused).
  void SkipRow(std::string_view row) {
    InternalIterator* it = it_.get();
    if (!it->Valid() || !BytesEqual(ParseFlatKeyUnchecked(it->key()).row, row)) return;
    AssignFirstKeyOfRow(&seek_buf_, row, /*after=*/true);
    Seek(seek_buf_);
  }

  // Positions the iterator at `key` (a row's first key) after having read elsewhere.
  void Seek(std::string_view key) {
    tracker_.Restart();  // the previous cell's views die with the seek
    it_->Seek(key);
  }
  // The row of the last cell before `bound` (a flat key; empty: the last cell), for a
  // reversed scan; false when there is none. The view lasts until the iterator moves.
  absl::StatusOr<bool> RowBefore(std::string_view bound, std::string_view* row) {
    tracker_.Restart();
    it_->SeekBefore(bound);
    if (!it_->Valid()) {
      BASALT_RETURN_IF_ERROR(it_->status());
      return false;
    }
    *row = ParseFlatKeyUnchecked(it_->key()).row;
    return true;
  }

 private:
  // Seeks are dearer than steps: seek only after stepping over this many surplus versions.
  static constexpr int kSurplusBeforeSeek = 4;

  // A readable cell through the filter and the version count; false when the filter refuses
  // the rest of the row.
  bool Offer(const KeyView& k, std::string_view value, RowResult* out, bool* included) {
    if (skip_column_) {
      if (BytesEqual(k.qualifier, skip_qualifier_.view())) return true;
      skip_column_ = false;
    }
    ReadFilter::CellAction action = ReadFilter::CellAction::kInclude;
    if (filter_ != nullptr) {
      action = filter_->FilterCell(CellView{k.row, family_, k.qualifier, k.timestamp, k.type, value});
    }
    switch (action) {
      case ReadFilter::CellAction::kInclude:
      case ReadFilter::CellAction::kIncludeAndNextColumn:
        if (tracker_.TakeVersion()) {
          out->Add(family_, k.qualifier, k.timestamp, k.type, value);
          *included = true;
        }
        if (action == ReadFilter::CellAction::kInclude) return true;
        break;
      case ReadFilter::CellAction::kSkip:
        return true;
      case ReadFilter::CellAction::kNextColumn:
        break;
      case ReadFilter::CellAction::kNextRow:
        return false;
    }
    skip_column_ = true;
    skip_qualifier_.Assign(k.qualifier);
    return true;
  }

  // Moves the iterator to the first cell after k's column: (row, qualifier + "\0") at the
  // newest timestamp and highest type, which sorts after every cell of k's column and at or
  // before any cell of the next one.
  void SeekPastColumn(const KeyView& k) {
    seek_buf_.clear();
    AppendFlatKey(&seek_buf_, k.row, k.qualifier, kLatestTimestamp, CellType::kDeleteFamily);
    seek_buf_.insert(seek_buf_.size() - 9, 1, '\0');  // after the qualifier, before ts|type
    tracker_.ColumnSkipped();                          // k's views die with the seek
    skip_column_ = false;
    it_->Seek(seek_buf_);
  }

  std::string_view family_;  // the store's name: outlives every reader
  std::string seek_buf_;
  std::unique_ptr<InternalIterator> it_;
  const std::vector<std::string>* quals_;
  ReadFilter* filter_;  // the read's (ReadSpec::filter), or null
  VisibilityTracker tracker_;
  bool skip_column_ = false;  // the filter refused the rest of skip_qualifier_'s column
  ByteCopy skip_qualifier_;
};

}  // namespace

absl::StatusOr<ColumnTargets> RegionImpl::ResolveColumns(const ReadSpec& spec) const {
  ColumnTargets targets;
  if (spec.columns.empty()) {
    for (auto& [n, st] : stores_) targets.push_back({st.get(), true, {}});
    return targets;  // stores_ is in name order
  }
  for (const auto& c : spec.columns) {
    Store* st = FindStore(c.family);
    if (st == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown column family '", c.family, "' in region ", desc_.name));
    }
    auto it = std::find_if(targets.begin(), targets.end(), [&](const ColumnTarget& t) { return t.store == st; });
    if (it == targets.end()) it = targets.insert(targets.end(), ColumnTarget{st, false, {}});
    // The same family named twice: the union of its selections (a whole family wins).
    if (c.qualifiers.empty()) it->all = true;
    it->qualifiers.insert(it->qualifiers.end(), c.qualifiers.begin(), c.qualifiers.end());
  }
  for (auto& t : targets) {
    std::sort(t.qualifiers.begin(), t.qualifiers.end());
    t.qualifiers.erase(std::unique(t.qualifiers.begin(), t.qualifiers.end()), t.qualifiers.end());
  }
  std::sort(targets.begin(), targets.end(),
            [](const ColumnTarget& a, const ColumnTarget& b) { return a.store->family().name < b.store->family().name; });
  return targets;
}

absl::StatusOr<std::vector<Cell>> RegionImpl::Get(std::string_view row, const ReadSpec& spec) {
  RowResult result;
  BASALT_RETURN_IF_ERROR(GetInto(row, spec, &result));
  return result.ToCells();
}

absl::Status RegionImpl::Get(std::string_view row, const ReadSpec& spec, RowResult* result) {
  return GetInto(row, spec, result);
}

absl::Status RegionImpl::GetInto(std::string_view row, const ReadSpec& spec, RowResult* result) {
  if (row.empty() || row.size() > kMaxRowLength) {
    return absl::InvalidArgumentError(absl::StrCat("row key of ", row.size(), " bytes is empty or too long"));
  }
  if (!desc_.Contains(row)) return RegionRangeError(desc_, row);
  read_requests_.fetch_add(1, std::memory_order_relaxed);
  BASALT_ASSIGN_OR_RETURN(ColumnTargets targets, ResolveColumns(spec));
  result->Reset(row);
  std::string seek = FirstKeyOfRow(row);
  const int64_t now = Now();
  // The read point and every family's snapshot, taken together (see snapshot_mu_).
  uint64_t read_point;
  absl::InlinedVector<Store::Snapshot, 4> snaps;
  {
    absl::ReaderMutexLock l(&snapshot_mu_);
    read_point = ReadPoint();
    for (const ColumnTarget& t : targets) snaps.push_back(t.store->GetSnapshot());
  }
  ReadFilter* filter = spec.filter.get();
  if (filter != nullptr) {
    filter->Reset();
    if (filter->FilterRowKey(row)) return absl::OkStatus();
  }
  bool row_done = false;
  for (size_t i = 0; i < targets.size() && !row_done; ++i) {
    const ColumnTarget& t = targets[i];
    const std::vector<std::string>* quals = t.all ? nullptr : &t.qualifiers;
    StoreReader reader(t.store, t.store->NewIterator(snaps[i], read_point, spec.cache_blocks, result->row(), quals),
                       quals, now, spec);
    reader.it()->Seek(seek);
    BASALT_RETURN_IF_ERROR(reader.ReadRow(result->row(), result, &row_done));
  }
  if (filter != nullptr && !result->empty() && filter->FilterRow(result)) result->Reset(row);
  return absl::OkStatus();
}

namespace {

class RegionScannerImpl final : public RegionScanner {
 public:
  // Readers point into `targets`, which the scanner owns.
  RegionScannerImpl(ScanSpec spec, ColumnTargets targets)
      : spec_(std::move(spec)), targets_(std::move(targets)) {}

  const ColumnTargets& targets() const { return targets_; }
  const ScanSpec& spec() const { return spec_; }
  void AddStore(std::unique_ptr<StoreReader> r) { readers_.push_back(std::move(r)); }
  // A reversed scan's bounds: rows below the flat key `upper` (empty: every row), down to
  // `lower` (inclusive unless lower_exclusive).
  void SetReverseBounds(std::string upper, std::string lower, bool lower_exclusive) {
    upper_ = std::move(upper);
    lower_ = std::move(lower);
    lower_exclusive_ = lower_exclusive;
  }

  absl::StatusOr<bool> Next(RowResult* out) override {
    ReadFilter* filter = spec_.filter.get();
    for (;;) {
      if (spec_.limit != 0 && rows_ >= spec_.limit) return false;
      if (filter != nullptr && filter->FilterAllRemaining()) return false;
      std::string_view next;
      BASALT_ASSIGN_OR_RETURN(bool any, spec_.reversed ? PreviousRow(&next) : FollowingRow(&next));
      if (!any) return false;
      out->Reset(next);
      if (spec_.reversed) {  // every store to the row's first cell
        AssignFirstKeyOfRow(&upper_, out->row());
        for (auto& r : readers_) r->Seek(upper_);
      }
      if (filter != nullptr) {
        filter->Reset();
        if (filter->FilterRowKey(out->row())) {
          if (!spec_.reversed) {
            for (auto& r : readers_) r->SkipRow(out->row());
          }
          continue;
        }
      }
      bool row_done = false;
      for (auto& r : readers_) {
        if (row_done) {
          if (!spec_.reversed) r->SkipRow(out->row());
          continue;
        }
        BASALT_RETURN_IF_ERROR(r->ReadRow(out->row(), out, &row_done));
      }
      if (!out->empty() && (filter == nullptr || !filter->FilterRow(out))) {
        ++rows_;
        return true;
      }
    }
  }

 private:
  // The smallest current row across stores, below the stop row (a status is looked at only
  // once a store ends).
  absl::StatusOr<bool> FollowingRow(std::string_view* next) {
    bool any = false;
    for (auto& r : readers_) {
      InternalIterator* it = r->it();
      if (!it->Valid()) {
        BASALT_RETURN_IF_ERROR(it->status());
        continue;
      }
      std::string_view row = ParseFlatKeyUnchecked(it->key()).row;
      if (!any || row < *next) *next = row;
      any = true;
    }
    return any && (spec_.stop_row.empty() || *next < spec_.stop_row);
  }
  // The largest row across stores below the last one returned, above the lower bound (HBase's
  // seekToPreviousRow: each store finds its last cell before the bound).
  absl::StatusOr<bool> PreviousRow(std::string_view* next) {
    bool any = false;
    for (auto& r : readers_) {
      std::string_view row;
      BASALT_ASSIGN_OR_RETURN(bool found, r->RowBefore(upper_, &row));
      if (found && (!any || row > *next)) *next = row;
      any |= found;
    }
    return any && (lower_exclusive_ ? *next > lower_ : *next >= lower_);
  }

  ScanSpec spec_;
  const ColumnTargets targets_;
  std::vector<std::unique_ptr<StoreReader>> readers_;
  uint64_t rows_ = 0;
  std::string upper_, lower_;
  bool lower_exclusive_ = false;
};

}  // namespace

absl::StatusOr<bool> RegionScanner::NextRow(std::vector<Cell>* cells) {
  BASALT_ASSIGN_OR_RETURN(bool more, Next(&scratch_));
  *cells = more ? scratch_.ToCells() : std::vector<Cell>{};
  return more;
}

namespace {
constexpr size_t kRowChunkSize = 32 * 1024;
}

void RowResult::Reset(std::string_view row) {
  row_.Assign(row);
  views_.clear();
  family_source_ = {};
  family_ = {};
  chunks_used_ = 0;
  chunk_ptr_ = nullptr;
  chunk_left_ = 0;
  if (!odd_chunks_) return;
  // Only standard-size chunks are kept for reuse; an oversized one (a big value) is dropped.
  odd_chunks_ = false;
  size_t kept = 0;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    if (chunk_sizes_[i] != kRowChunkSize) continue;
    chunks_[kept] = std::move(chunks_[i]);
    chunk_sizes_[kept++] = kRowChunkSize;
  }
  chunks_.resize(kept);
  chunk_sizes_.resize(kept);
}

void RowResult::NewChunk(size_t at_least) {
  // Reuse the next standard chunk when it fits; otherwise allocate.
  if (chunks_used_ < chunks_.size() && at_least <= chunk_sizes_[chunks_used_]) {
    chunk_ptr_ = chunks_[chunks_used_].get();
    chunk_left_ = chunk_sizes_[chunks_used_];
    ++chunks_used_;
    return;
  }
  size_t size = std::max(at_least, kRowChunkSize);
  if (size != kRowChunkSize) odd_chunks_ = true;
  auto chunk = std::make_unique<char[]>(size);
  chunk_ptr_ = chunk.get();
  chunk_left_ = size;
  chunks_.insert(chunks_.begin() + chunks_used_, std::move(chunk));
  chunk_sizes_.insert(chunk_sizes_.begin() + chunks_used_, size);
  ++chunks_used_;
}

std::vector<Cell> RowResult::ToCells() const {
  std::vector<Cell> out;
  out.reserve(views_.size());
  for (const CellView& v : views_) {
    out.push_back(Cell{std::string(v.row), std::string(v.family), std::string(v.qualifier), v.timestamp, v.type,
                       std::string(v.value)});
  }
  return out;
}

size_t RowResult::RawBytes() const {
  size_t n = 0;
  for (const CellView& v : views_) n += v.row.size() + v.family.size() + v.qualifier.size() + 9 + v.value.size();
  return n;
}

absl::StatusOr<std::unique_ptr<RegionScanner>> RegionImpl::Scan(const ScanSpec& spec_in) {
  BASALT_ASSIGN_OR_RETURN(ColumnTargets targets, ResolveColumns(spec_in));
  read_requests_.fetch_add(1, std::memory_order_relaxed);
  // The scanner's own copy of the spec, clipped to the region's rows.
  ScanSpec clipped = spec_in;
  std::string upper, lower;
  bool lower_exclusive = false;
  if (clipped.start_exclusive && !clipped.start_row.empty() && !clipped.reversed) {
    clipped.start_row.push_back('\0');  // the first row after it
  }
  if (!clipped.reversed) {
    if (clipped.start_row < desc_.start_key) clipped.start_row = desc_.start_key;
    if (!desc_.end_key.empty() && (clipped.stop_row.empty() || clipped.stop_row > desc_.end_key)) {
      clipped.stop_row = desc_.end_key;
    }
  } else {
    // From start_row (inclusive) or the region's end (exclusive), whichever is lower.
    if (!clipped.start_row.empty() && (desc_.end_key.empty() || clipped.start_row < desc_.end_key)) {
      // The first key of the row (exclusive), or the first key after the row's cells.
      AssignFirstKeyOfRow(&upper, clipped.start_row, /*after=*/!clipped.start_exclusive);
    } else if (!desc_.end_key.empty()) {
      upper = FirstKeyOfRow(desc_.end_key);
    }
    // Down to stop_row (exclusive) or the region's start (inclusive), whichever is higher.
    lower_exclusive = !clipped.stop_row.empty() && clipped.stop_row >= desc_.start_key;
    lower = lower_exclusive ? clipped.stop_row : desc_.start_key;
  }
  auto scanner = std::make_unique<RegionScannerImpl>(std::move(clipped), std::move(targets));
  const ScanSpec& spec = scanner->spec();
  const int64_t now = Now();
  uint64_t rp;
  std::vector<Store::Snapshot> snaps;
  {
    absl::ReaderMutexLock l(&snapshot_mu_);  // see snapshot_mu_
    rp = ReadPoint();
    for (const ColumnTarget& t : scanner->targets()) snaps.push_back(t.store->GetSnapshot());
  }
  const std::string seek = FirstKeyOfRow(spec.start_row);
  size_t i = 0;
  for (const ColumnTarget& t : scanner->targets()) {
    const Store::Snapshot& snap = snaps[i++];
    auto reader = std::make_unique<StoreReader>(t.store, t.store->NewIterator(snap, rp, spec.cache_blocks),
                                                t.all ? nullptr : &t.qualifiers, now, spec);
    if (!spec.reversed) reader->it()->Seek(seek);  // a reversed scan seeks row by row
    scanner->AddStore(std::move(reader));
  }
  if (spec.reversed) scanner->SetReverseBounds(std::move(upper), std::move(lower), lower_exclusive);
  return std::unique_ptr<RegionScanner>(std::move(scanner));
}

}  // namespace basalt
