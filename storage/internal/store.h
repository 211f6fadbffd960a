// A store: one column family of one region — its memstores and its block files (newest
// first). Writers call Add (serialised by the store's write mutex); readers take a Snapshot
// (a consistent set of memstores and files) without blocking writers, flushes or compactions.
// Flush and compaction are driven by the region, which writes the manifest.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "storage/internal/block_file.h"
#include "storage/internal/manifest.h"
#include "storage/internal/memstore.h"
#include "storage/internal/visibility.h"
#include "storage/options.h"

namespace basalt {

class CompactionFilter;

using FileList = std::vector<std::shared_ptr<BlockFileReader>>;

class Store {
 public:
  Store(FamilyOptions family, const RegionOptions& options, Env* env, std::string dir);

  const FamilyOptions& family() const { return family_; }
  // Opens the store's files (newest first) at region open; a number in `references` is another
  // region's file seen through a row range (manifest.h).
  absl::Status OpenFiles(const std::vector<uint64_t>& numbers, const std::map<uint64_t, FileReference>& references);
  // The references among the store's files now, by file number.
  std::map<uint64_t, FileReference> References() const;

  void Add(std::string_view flat_key, uint64_t seq, std::string_view value);
  size_t MemstoreBytes() const;

  struct Snapshot {
    std::shared_ptr<const MemStore> active, frozen;
    std::shared_ptr<const FileList> files;
  };
  Snapshot GetSnapshot() const;

  // Iterator over everything visible at read_point, merged and de-duplicated. With `row`
  // given (not empty), files whose bloom or key range excludes the row (and columns) are skipped.
  std::unique_ptr<InternalIterator> NewIterator(const Snapshot& snap, uint64_t read_point, bool fill_cache,
                                                std::string_view row = {},
                                                const std::vector<std::string>* qualifiers = nullptr) const;

  // Flush, step 1 (region holds writes drained): the active memstore becomes the frozen one.
  void Freeze();
  // Flush, step 2: writes the frozen memstore to file `number` (nullptr when it was empty).
  absl::StatusOr<std::shared_ptr<BlockFileReader>> WriteFrozen(uint64_t number, uint64_t max_seq);
  // Flush, step 3: in one step, the written file (if any) replaces the frozen memstore, so a
  // reader sees one or the other, never both or neither. The region does this for all stores
  // under its snapshot lock.
  void InstallFlushed(std::shared_ptr<BlockFileReader> file);

  // Minor compaction pick: a run of adjacent files chosen by size ratio (HBase's exploring
  // policy, simplified). Empty when nothing is worth doing.
  std::vector<std::shared_ptr<BlockFileReader>> PickMinor() const;
  // Merges `inputs` (adjacent, newest first) into file `number`. major=true drops deleted,
  // expired and surplus versions and every delete marker (inputs must then be all files).
  // Installs the result in place of the inputs; returns the replaced files (the caller deletes
  // them after writing the manifest).
  // `filter` (a major compaction's, may be null) drops whole rows (storage/region.h).
  absl::StatusOr<FileList> Compact(const FileList& inputs, uint64_t number, bool major, int64_t now_ms,
                                   CompactionFilter* filter = nullptr);

  std::vector<uint64_t> FileNumbers() const;
  std::shared_ptr<const FileList> Files() const;
  // A block file's name in its region directory, and its path.
  static std::string FileName(uint64_t number);
  std::string FilePath(uint64_t number) const;
  static absl::StatusOr<uint64_t> ParseFileNumber(const std::string& path);
  // A block file being written is "<number>.blk.tmp" until it is complete and synced; region
  // open deletes such files (they never held the only copy of anything).
  static constexpr std::string_view kTempSuffix = ".tmp";
  static std::string TempFilePath(const std::string& path);
  static bool IsTempFileName(std::string_view name);

 private:
  absl::StatusOr<std::shared_ptr<BlockFileReader>> WriteFile(InternalIterator* it, uint64_t number, uint64_t max_seq,
                                                             const VisibilityTracker* drop,
                                                             CompactionFilter* filter = nullptr);

  const FamilyOptions family_;
  const RegionOptions& options_;
  Env* env_;
  std::string dir_;
  absl::Mutex write_mu_;  // serialises memstore inserts
  mutable absl::Mutex mu_;  // guards the pointers below (held briefly)
  std::shared_ptr<MemStore> active_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<MemStore> frozen_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const FileList> files_ ABSL_GUARDED_BY(mu_);
  // The references the store opened with, by the path of the file each reads (a store refers to
  // a file once), and their numbers here. Set once by OpenFiles.
  std::map<std::string, std::pair<uint64_t, FileReference>, std::less<>> references_;
};

}  // namespace basalt
