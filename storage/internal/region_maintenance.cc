// RegionImpl's upkeep (storage/region.h): the background thread, healing after a full disk,
// the manifest, flushes, compactions, the split point, closing and the figures.
#include "storage/internal/region_impl.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/fault_point.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "storage/internal/block_format.h"
#include "storage/internal/bloom.h"
#include "storage/internal/manifest.h"
#include "storage/internal/store.h"
#include "storage/server_log.h"

namespace basalt {

using internal::kLostFoundDir;
using internal::kManifestName;

namespace {

// Whether a store reads other regions' files (a split's or merge's references).
bool HasReferences(const FileList& files) {
  for (const auto& f : files) {
    if (f->range() != nullptr) return true;
  }
  return false;
}

// Names every block file `m` lists in `from` again in `to` (made here), and writes there `m`
// without nonces (their retries are the source region's, not the copy's).
absl::StatusOr<LinkedFiles> LinkListedFiles(Env* env, Manifest m, const std::string& from, const std::string& to) {
  BASALT_RETURN_IF_ERROR(env->CreateDirs(to));
  LinkedFiles out;
  for (const auto& [family, numbers] : m.files) {
    for (uint64_t number : numbers) {
      const std::string base = Store::FileName(number);
      const std::string path = absl::StrCat(from, "/", base);
      BASALT_ASSIGN_OR_RETURN(uint64_t size, env->GetFileSize(path));
      BASALT_RETURN_IF_ERROR(env->LinkFile(path, absl::StrCat(to, "/", base)));
      ++out.files;
      out.bytes += size;
    }
  }
  FaultPoint("region:files-linked");  // (crash tests: a region server killed in a snapshot)
  m.nonces.clear();
  m.answers.clear();
  BASALT_RETURN_IF_ERROR(env->WriteFileDurably(absl::StrCat(to, "/", kManifestName), EncodeManifest(m)));
  return out;
}
}  // namespace

namespace internal {
absl::StatusOr<ClosedRegionManifest> ReadClosedRegionManifest(Env* env, const std::string& dir) {
  const std::string mpath = absl::StrCat(dir, "/", kManifestName);
  absl::StatusOr<std::string> bytes = env->ReadFileToString(mpath);
  if (!bytes.ok()) {
    return absl::DataLossError(absl::StrCat("region directory ", dir, " has no readable ", kManifestName, ": ",
                                            bytes.status().message()));
  }
  BASALT_ASSIGN_OR_RETURN(Manifest m, DecodeManifest(*bytes, mpath));
  if (!m.references.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("region directory ", dir, " still refers to ",
                                                      m.references.size(), " file(s) of another region"));
  }
  return ClosedRegionManifest{*std::move(bytes), std::move(m)};
}
}  // namespace internal

absl::StatusOr<LinkedFiles> LinkRegion(Env* env, const std::string& from, const std::string& to) {
  BASALT_ASSIGN_OR_RETURN(internal::ClosedRegionManifest read, internal::ReadClosedRegionManifest(env, from));
  absl::StatusOr<LinkedFiles> linked = LinkListedFiles(env, std::move(read.manifest), from, to);
  if (linked.status().code() == absl::StatusCode::kNotFound) {
    return absl::DataLossError(absl::StrCat("region directory ", from, ": a file its ", kManifestName,
                                            " lists is missing: ", linked.status().message()));
  }
  return linked;
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

absl::StatusOr<Region::SnapshotFiles> RegionImpl::Snapshot(const std::string& dir) {
  BASALT_RETURN_IF_ERROR(CheckOpen());
  // No compaction installs or drops a file, and no flush adds one, until every file is named.
  // (Nothing takes compaction_mu_ while holding flush_mu_: this order cannot deadlock.)
  absl::MutexLock cl(&compaction_mu_);
  BASALT_RETURN_IF_ERROR(CheckOpen());
  absl::MutexLock fl(&flush_mu_);
  BASALT_RETURN_IF_ERROR(FlushLocked());
  Manifest m;
  m.next_file_number = next_file_number_.load();
  m.flushed_seq = flushed_seq_.load();
  for (auto& [name, store] : stores_) {
    if (!store->References().empty()) {
      return absl::FailedPreconditionError(absl::StrCat("region ", desc_.name, " still reads another region's files ",
                                                        "(a split's daughter): major_compact it before a snapshot"));
    }
    m.files[name] = store->FileNumbers();
  }
  return LinkListedFiles(options_.env, std::move(m), dir_, dir);
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

}  // namespace basalt
