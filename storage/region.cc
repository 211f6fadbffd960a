#include "storage/region.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "storage/internal/block_format.h"
#include "storage/internal/manifest.h"
#include "storage/internal/region_impl.h"
#include "storage/internal/store.h"
#include "storage/internal/visibility.h"
#include "storage/internal/wal.h"
#include "storage/server_log.h"

namespace basalt {

using internal::ColumnTarget;
using internal::ColumnTargets;
using internal::kLostFoundDir;
using internal::kManifestName;
using internal::RulesOf;
using internal::Selected;

namespace {

// Write limits. A data block holds block_size (<= 16 MiB) plus at most one cell, so with these a
// block stays far below compression.h's 64 MiB read limit; a batch stays far below the WAL's.
// HBase's client default is 10 MiB per cell (hbase.client.keyvalue.maxsize).
constexpr uint64_t kMaxValueSize = 16ull << 20;
constexpr uint64_t kMaxQualifierSize = 64ull << 10;
constexpr uint64_t kMaxBatchBytes = 256ull << 20;

size_t RowStripe(std::string_view row) { return std::hash<std::string_view>{}(row); }

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

// Opening a region: its manifest (or the refusal to guess without one), its block files, the
// log replayed into the memstores, then the log it writes to from now on. Each step below.
absl::Status RegionImpl::Recover() {
  BASALT_RETURN_IF_ERROR(options_.env->CreateDirs(dir_));
  std::map<uint64_t, std::string> block_files;  // number -> name
  BASALT_RETURN_IF_ERROR(ListBlockFiles(&block_files));
  const bool have_manifest = options_.env->FileExists(dir_ + "/" + kManifestName);
  Manifest m;
  BASALT_RETURN_IF_ERROR(ReadManifest(have_manifest, block_files, &m));
  std::map<std::string, std::vector<std::string>> dropped;  // files of families no longer described
  BASALT_RETURN_IF_ERROR(OpenBlockFiles(m, block_files, &dropped));
  if (!have_manifest) {
    // From now on a missing manifest is damage, never "a new region" (ReadManifest). A region that
    // has never flushed has nothing in block files, so the whole log is replayed.
    BASALT_RETURN_IF_ERROR(WriteManifest());
  }
  Replay replay;
  BASALT_RETURN_IF_ERROR(ReplayLogs(m, &replay));
  if (!dropped.empty()) {
    // As in HBase, a dropped family's cells are gone, and a family added again under its name
    // starts empty. Only now, once the log replayed (an unflushed edit of such a family refused
    // the open above, with nothing moved): the files leave the manifest, a durable record that
    // they are obsolete, then go aside to lost+found/ as HBase archives them, never read again.
    BASALT_RETURN_IF_ERROR(WriteManifest());
    for (const auto& [family, files] : dropped) {
      for (const std::string& f : files) {
        BASALT_RETURN_IF_ERROR(MoveAside(f, absl::StrCat("its family '", family, "' was dropped from the table")));
      }
    }
  }
  return shared_log() ? AttachToServerLog(replay) : OpenOwnLog(replay);
}

absl::Status RegionImpl::ListBlockFiles(std::map<uint64_t, std::string>* block_files) {
  BASALT_ASSIGN_OR_RETURN(auto names, options_.env->ListDir(dir_));
  for (const auto& n : names) {
    if (Store::IsTempFileName(n)) {
      // A flush or compaction output a crash cut short: by its name never complete, never named
      // by a manifest, never the only copy of anything.
      BASALT_RETURN_IF_ERROR(options_.env->DeleteFile(dir_ + "/" + n));
      continue;
    }
    if (auto num = Store::ParseFileNumber(n); num.ok()) block_files->emplace(*num, n);
  }
  return absl::OkStatus();
}

absl::Status RegionImpl::ReadManifest(bool have_manifest, const std::map<uint64_t, std::string>& block_files,
                                      Manifest* m) {
  const std::string mpath = dir_ + "/" + kManifestName;
  if (have_manifest) {
    BASALT_ASSIGN_OR_RETURN(std::string bytes, options_.env->ReadFileToString(mpath));
    BASALT_ASSIGN_OR_RETURN(*m, DecodeManifest(bytes, mpath));
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
  next_file_number_ = m->next_file_number;
  flushed_seq_ = m->flushed_seq;
  for (const auto& [id, ms] : m->nonces) {
    std::vector<WalEdit> answer;
    if (auto a = m->answers.find(id); a != m->answers.end()) {
      for (const Manifest::AnswerCell& c : a->second) answer.push_back(WalEdit{c.family, c.key, c.value});
    }
    RememberNonce(Nonce{id.first, id.second}, ms, answer.empty() ? nullptr : &answer);
  }
  return absl::OkStatus();
}

absl::Status RegionImpl::OpenBlockFiles(const Manifest& m, const std::map<uint64_t, std::string>& block_files,
                                        std::map<std::string, std::vector<std::string>>* dropped) {
  std::set<uint64_t> live;
  for (auto& [name, store] : stores_) {
    auto it = m.files.find(name);
    if (it == m.files.end()) continue;
    BASALT_RETURN_IF_ERROR(store->OpenFiles(it->second, m.references));
  }
  for (auto& [name, files] : m.files) live.insert(files.begin(), files.end());
  // Block files of families the descriptor no longer has (a modify of the table dropped them),
  // by family: set aside once the log has replayed (Recover).
  for (const auto& [name, files] : m.files) {
    if (stores_.count(name)) continue;
    for (uint64_t num : files) {
      if (auto it = block_files.find(num); it != block_files.end()) (*dropped)[name].push_back(it->second);
    }
    if (!files.empty()) (*dropped)[name];  // (references only: they leave the manifest all the same)
  }
  // Block files the manifest does not list. Numbered below its next_file_number, the manifest
  // vouches for them being obsolete: they were numbered before it was written and it left them
  // out, so each is a compacted file whose deletion a crash cut short (a reader still held it)
  // or a flush output whose edits are still in the log. Numbered from there on, it does not
  // know them (a manifest restored from an older backup, say): kept aside, never deleted.
  uint64_t obsolete = 0;
  for (const auto& [num, n] : block_files) {
    if (live.count(num)) continue;
    if (num < m.next_file_number) {
      BASALT_RETURN_IF_ERROR(options_.env->DeleteFile(dir_ + "/" + n));
      ++obsolete;
    } else {
      BASALT_RETURN_IF_ERROR(MoveAside(n, "no manifest names it; nothing was deleted"));
    }
  }
  if (obsolete > 0) {
    Log(absl::StrCat("region ", desc_.name, ": removed ", obsolete,
                     " obsolete block file(s) its manifest no longer lists (compacted away before a crash)"));
  }
  return absl::OkStatus();
}

// Replays the log: edits after the flushed sequence id go back into the memstores.
absl::Status RegionImpl::ReplayLogs(const Manifest& m, Replay* replay) {
  replay->flushed = m.flushed_seq;
  replay->last = m.flushed_seq;
  replay->dedupe = shared_log();
  const std::string wal_dir = dir_ + "/wal";
  if (shared_log()) {
    BASALT_RETURN_IF_ERROR(options_.server_log->MayOpen(desc_.name));
    // A log of its own from before the server log, and what a split of the server log at
    // start-up gave it.
    BASALT_RETURN_IF_ERROR(ReplayDir(wal_dir, replay));
    BASALT_RETURN_IF_ERROR(ReplayDir(dir_ + "/" + kRecoveredEditsDir, replay));
    replay->from_files = replay->records;
    // A region that closed without flushing (it had failed) and opens again: its edits are
    // still in the server log.
    BASALT_RETURN_IF_ERROR(options_.server_log->wal()->ReplayRegion(
        desc_.name, m.flushed_seq, [&](const WalRecord& rec) { return ApplyRecord(rec, replay); }));
  } else {
    BASALT_RETURN_IF_ERROR(options_.env->CreateDirs(wal_dir));
    BASALT_RETURN_IF_ERROR(ReplayDir(wal_dir, replay));
  }
  const ReplayStats& rs = replay->stats;
  replayed_records_ = replay->records;
  replay_truncated_bytes_ = rs.truncated_bytes;
  replay_skipped_records_ = rs.skipped_records;
  replay_skipped_bytes_ = rs.skipped_bytes;
  if (rs.truncated_bytes > 0) {
    Log(absl::StrCat("region ", desc_.name, ": cut a torn log tail (a write a crash cut short, never synced) of ",
                     rs.truncated_bytes, " bytes at ", rs.truncated_at));
  }
  for (const std::string& d : rs.damage) Log(absl::StrCat("region ", desc_.name, ": skipped log damage: ", d));
  // Sequence ids of records left unapplied are never handed out again.
  const uint64_t last = std::max(replay->last, rs.max_seq);
  {
    absl::MutexLock l(&seq_mu_);
    last_seq_ = last;
  }
  read_point_ = last;
  return absl::OkStatus();
}

absl::Status RegionImpl::AttachToServerLog(const Replay& replay) {
  Env* env = options_.env;
  const ReplayStats& rs = replay.stats;
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
  BASALT_RETURN_IF_ERROR(DeleteWalDir(env, dir_ + "/wal"));
  BASALT_RETURN_IF_ERROR(DeleteWalDir(env, dir_ + "/" + kRecoveredEditsDir));
  log_->AttachRegion(desc_.name, [this] {
    absl::MutexLock l(&state_mu_);
    bg_requested_ = true;
  });
  attached_ = true;
  return absl::OkStatus();
}

absl::Status RegionImpl::OpenOwnLog(const Replay& replay) {
  Wal::Options wo;
  wo.env = options_.env;
  wo.dir = dir_ + "/wal";
  BASALT_ASSIGN_OR_RETURN(own_wal_, Wal::Open(wo));
  log_ = own_wal_.get();
  if (!replay.stats.damage.empty()) {
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

absl::Status RegionImpl::Mutate(const std::vector<RowMutation>& batch, Durability durability, Nonce nonce,
                                const std::vector<std::string>& cluster_ids) {
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
  return MutateLocked(batch, durability, nonce, /*keep_answer=*/false, cluster_ids);
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
                                      bool keep_answer, const std::vector<std::string>& cluster_ids) {
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
  rec.cluster_ids = cluster_ids;
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

}  // namespace basalt
