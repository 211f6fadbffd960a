#include "storage/internal/store.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "storage/cell.h"
#include "storage/internal/bloom.h"
#include "storage/internal/merging_iterator.h"
#include "storage/region.h"

namespace basalt {

Store::Store(FamilyOptions family, const RegionOptions& options, Env* env, std::string dir)
    : family_(std::move(family)), options_(options), env_(env), dir_(std::move(dir)) {
  active_ = std::make_shared<MemStore>();
  files_ = std::make_shared<const FileList>();
}

std::string Store::FileName(uint64_t number) { return absl::StrFormat("%020d.blk", number); }

std::string Store::FilePath(uint64_t number) const { return absl::StrCat(dir_, "/", FileName(number)); }

std::string Store::TempFilePath(const std::string& path) { return std::string(path).append(kTempSuffix); }

bool Store::IsTempFileName(std::string_view name) {
  return name.size() > kTempSuffix.size() && name.ends_with(kTempSuffix) &&
         ParseFileNumber(std::string(name.substr(0, name.size() - kTempSuffix.size()))).ok();
}

absl::StatusOr<uint64_t> Store::ParseFileNumber(const std::string& name) {
  unsigned long long n = 0;
  char tail[8] = {0};
  if (name.size() != 24 || std::sscanf(name.c_str(), "%20llu%7s", &n, tail) != 2 || std::string(tail) != ".blk") {
    return absl::InvalidArgumentError(absl::StrCat("not a block file name: ", name));
  }
  return static_cast<uint64_t>(n);
}

absl::Status Store::OpenFiles(const std::vector<uint64_t>& numbers,
                             const std::map<uint64_t, FileReference>& references) {
  auto files = std::make_shared<FileList>();
  for (uint64_t n : numbers) {
    auto ref = references.find(n);
    std::string path = FilePath(n);
    std::optional<RowRange> range;
    if (ref != references.end()) {
      path = absl::StrFormat("%s/%s/%020d.blk", dir_, ref->second.region_dir, ref->second.number);
      range = RowRange{ref->second.start_row, ref->second.end_row};
    }
    auto r = BlockFileReader::Open(env_, path, family_, options_.block_cache, range ? &*range : nullptr);
    if (r.status().code() == absl::StatusCode::kNotFound) {
      // The manifest names it, so it held data: its loss is data loss, not a missing table.
      return absl::DataLossError(absl::StrCat("family '", family_.name, "': the manifest names ", path,
                                              ref != references.end() ? " (a reference to another region's file)" : "",
                                              " but it is missing: ", r.status().message()));
    }
    if (!r.ok()) return r.status();
    if (ref != references.end()) references_[path] = {n, ref->second};
    files->push_back(std::move(*r));
  }
  absl::MutexLock l(&mu_);
  files_ = std::move(files);
  return absl::OkStatus();
}

std::map<uint64_t, FileReference> Store::References() const {
  std::map<uint64_t, FileReference> out;
  if (references_.empty()) return out;
  const auto files = Files();
  for (const auto& f : *files) {
    if (f->range() == nullptr) continue;
    auto it = references_.find(f->path());
    if (it != references_.end()) out.emplace(it->second.first, it->second.second);
  }
  return out;
}

void Store::Add(std::string_view flat_key, uint64_t seq, std::string_view value) {
  absl::MutexLock w(&write_mu_);
  std::shared_ptr<MemStore> mem;
  {
    absl::MutexLock l(&mu_);
    mem = active_;
  }
  mem->Add(flat_key, seq, value);
}

size_t Store::MemstoreBytes() const {
  absl::MutexLock l(&mu_);
  return active_->ApproximateMemoryUsage() + (frozen_ ? frozen_->ApproximateMemoryUsage() : 0);
}

Store::Snapshot Store::GetSnapshot() const {
  absl::MutexLock l(&mu_);
  return Snapshot{active_, frozen_, files_};
}

std::shared_ptr<const FileList> Store::Files() const {
  absl::MutexLock l(&mu_);
  return files_;
}

std::vector<uint64_t> Store::FileNumbers() const {
  std::vector<uint64_t> out;
  const auto files = Files();  // hold it: a range-for over *Files() would not keep it alive
  for (const auto& f : *files) {
    if (f->range() != nullptr) {
      auto it = references_.find(f->path());
      out.push_back(it != references_.end() ? it->second.first : 0);
      continue;
    }
    out.push_back(ParseFileNumber(f->path().substr(dir_.size() + 1)).value_or(0));
  }
  return out;
}

std::unique_ptr<InternalIterator> Store::NewIterator(const Snapshot& snap, uint64_t read_point, bool fill_cache,
                                                     std::string_view row,
                                                     const std::vector<std::string>* qualifiers) const {
  IteratorList children;
  if (!snap.active->empty()) children.push_back(MemStore::NewIterator(snap.active, read_point));
  if (snap.frozen != nullptr && !snap.frozen->empty()) children.push_back(MemStore::NewIterator(snap.frozen, read_point));
  for (const auto& f : *snap.files) {
    if (!row.empty()) {
      const FileStats& st = f->stats();
      if (st.entries == 0) continue;
      if (ParseFlatKeyUnchecked(st.first_key).row > row || ParseFlatKeyUnchecked(st.last_key).row < row) continue;
      bool may = false;
      if (qualifiers != nullptr && !qualifiers->empty()) {
        // DeleteFamily markers sit at the empty qualifier: always ask for it too.
        may = f->MayContainColumn(row, "");
        for (size_t i = 0; !may && i < qualifiers->size(); ++i) may = f->MayContainColumn(row, (*qualifiers)[i]);
      } else {
        may = f->MayContainRow(row);
      }
      if (!may) {
        BloomReader::CountSkip();
        continue;
      }
    }
    children.push_back(f->NewIterator(fill_cache));
  }
  return NewMergingIterator(std::move(children));
}

void Store::Freeze() {
  absl::MutexLock w(&write_mu_);
  absl::MutexLock l(&mu_);
  if (frozen_ != nullptr) return;  // a previous flush failed; flush it first
  frozen_ = std::move(active_);
  active_ = std::make_shared<MemStore>();
}

absl::StatusOr<std::shared_ptr<BlockFileReader>> Store::WriteFile(InternalIterator* it, uint64_t number,
                                                                  uint64_t max_seq, const VisibilityTracker* drop,
                                                                  CompactionFilter* filter) {
  // Written under a temporary name, renamed once complete and synced: a file with the final
  // name is always whole, and region open removes what a crash left half-written (HBase's .tmp).
  const std::string path = FilePath(number);
  const std::string tmp = TempFilePath(path);
  absl::Status written = [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(auto w, BlockFileWriter::Create(env_, tmp, family_));
    w->set_max_seq(max_seq);
    std::optional<VisibilityTracker> tracker;
    if (drop != nullptr) tracker.emplace(*drop);
    // With a filter, a row's kept cells wait until the row is whole, then go unless it drops them.
    std::vector<std::pair<std::string, std::string>> row_cells;
    std::vector<CellView> views;
    auto flush_row = [&]() -> absl::Status {
      if (row_cells.empty()) return absl::OkStatus();
      views.clear();
      for (const auto& [key, value] : row_cells) {
        const KeyView k = ParseFlatKeyUnchecked(key);
        views.push_back(CellView{k.row, family_.name, k.qualifier, k.timestamp, k.type, value});
      }
      if (!filter->DropRow(views.front().row, views)) {
        for (const auto& [key, value] : row_cells) BASALT_RETURN_IF_ERROR(w->Add(key, value));
      }
      row_cells.clear();
      return absl::OkStatus();
    };
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (tracker && !tracker->Visible(ParseFlatKeyUnchecked(it->key()))) continue;
      if (filter == nullptr) {
        BASALT_RETURN_IF_ERROR(w->Add(it->key(), it->value()));
        continue;
      }
      if (!row_cells.empty() && ParseFlatKeyUnchecked(row_cells.front().first).row != ParseFlatKeyUnchecked(it->key()).row) {
        BASALT_RETURN_IF_ERROR(flush_row());
      }
      row_cells.emplace_back(std::string(it->key()), std::string(it->value()));
    }
    BASALT_RETURN_IF_ERROR(it->status());
    if (filter != nullptr) BASALT_RETURN_IF_ERROR(flush_row());
    BASALT_RETURN_IF_ERROR(w->Finish().status());
    return env_->ReplaceFile(tmp, path);
  }();
  if (!written.ok()) {
    // A failed write (a full disk) must not leave its partial file eating the space it needs.
    env_->DeleteFile(tmp).IgnoreError();
    return written;
  }
  return BlockFileReader::Open(env_, path, family_, options_.block_cache);
}

absl::StatusOr<std::shared_ptr<BlockFileReader>> Store::WriteFrozen(uint64_t number, uint64_t max_seq) {
  std::shared_ptr<MemStore> frozen;
  {
    absl::MutexLock l(&mu_);
    frozen = frozen_;
  }
  if (frozen == nullptr || frozen->empty()) return std::shared_ptr<BlockFileReader>();
  IteratorList children;
  children.push_back(MemStore::NewIterator(frozen, UINT64_MAX));
  auto it = NewMergingIterator(std::move(children));
  return WriteFile(it.get(), number, max_seq, nullptr);
}

void Store::InstallFlushed(std::shared_ptr<BlockFileReader> file) {
  absl::MutexLock l(&mu_);
  if (file != nullptr) {
    auto files = std::make_shared<FileList>();
    files->push_back(std::move(file));
    files->insert(files->end(), files_->begin(), files_->end());
    files_ = std::move(files);
  }
  frozen_.reset();
}

FileList Store::PickMinor() const {
  auto files = Files();
  const int n = static_cast<int>(files->size());
  if (n < options_.compaction_min_files) return {};
  // Files are newest first. Find the window of [min, max] adjacent files where every file is no
  // bigger than ratio × the sum of the newer files in the window; prefer more files, then less
  // bytes (HBase's ExploringCompactionPolicy, in miniature).
  int best_start = -1, best_len = 0;
  uint64_t best_bytes = 0;
  for (int start = 0; start < n; ++start) {
    uint64_t sum = 0;
    for (int len = 1; start + len <= n && len <= options_.compaction_max_files; ++len) {
      uint64_t size = (*files)[start + len - 1]->stats().file_size;
      bool ok_ratio = len == 1 || size <= static_cast<uint64_t>(options_.compaction_ratio * sum);
      if (!ok_ratio) break;
      sum += size;
      if (len >= options_.compaction_min_files && (len > best_len || (len == best_len && sum < best_bytes))) {
        best_start = start;
        best_len = len;
        best_bytes = sum;
      }
    }
  }
  if (best_start < 0) return {};
  return FileList(files->begin() + best_start, files->begin() + best_start + best_len);
}

absl::StatusOr<FileList> Store::Compact(const FileList& inputs, uint64_t number, bool major, int64_t now_ms,
                                        CompactionFilter* filter) {
  if (inputs.empty()) return FileList{};
  IteratorList children;
  uint64_t max_seq = 0;
  for (const auto& f : inputs) {
    children.push_back(f->NewIterator(/*fill_cache=*/false));
    max_seq = std::max(max_seq, f->stats().max_seq);
  }
  auto it = NewMergingIterator(std::move(children));
  std::optional<VisibilityTracker> drop;
  if (major) drop.emplace(family_, now_ms, ReadRules{std::numeric_limits<int64_t>::min(), kLatestTimestamp, INT_MAX});
  BASALT_ASSIGN_OR_RETURN(auto out, WriteFile(it.get(), number, max_seq, drop ? &*drop : nullptr,
                                              major ? filter : nullptr));
  absl::MutexLock l(&mu_);
  auto pos = std::find(files_->begin(), files_->end(), inputs.front());
  if (pos == files_->end() || files_->end() - pos < static_cast<long>(inputs.size()) ||
      !std::equal(inputs.begin(), inputs.end(), pos)) {
    return absl::InternalError("compaction inputs changed while compacting");
  }
  auto files = std::make_shared<FileList>(files_->begin(), pos);
  files->push_back(out);
  files->insert(files->end(), pos + inputs.size(), files_->end());
  files_ = std::move(files);
  return inputs;
}

}  // namespace basalt
