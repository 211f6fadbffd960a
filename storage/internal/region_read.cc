// RegionImpl's reads (storage/region.h): Get (the stores' readers merged under the read point
// and the read rules), scans across the stores, and the reused row a Get fills.
#include "storage/internal/region_impl.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "storage/internal/store.h"
#include "storage/internal/visibility.h"

namespace basalt {

using internal::ColumnTarget;
using internal::ColumnTargets;
using internal::RulesOf;
using internal::Selected;

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
  thread_local std::string seek;  // reused: a row key past the string's inline bytes allocated
  AssignFirstKeyOfRow(&seek, row);
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

  void SetDeadline(absl::Time deadline) override { deadline_ = deadline; }

  absl::StatusOr<bool> Next(RowResult* out) override {
    ReadFilter* filter = spec_.filter.get();
    for (uint32_t skipped = 0;; ++skipped) {
      if (spec_.limit != 0 && rows_ >= spec_.limit) return false;
      // (The clock is read every 32 rows the filter refused.)
      if (skipped % 32 == 31 && deadline_ != absl::InfiniteFuture() && absl::Now() > deadline_) {
        out->Reset({});
        return true;
      }
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
  absl::Time deadline_ = absl::InfiniteFuture();
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
