// Block files: immutable sorted files of one store's cells (layout in block_format.h).
// A writer is used by one thread. A reader is immutable after Open and thread-safe; its
// iterators are not (one per thread). Readers drop their cached blocks when destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "storage/cell.h"
#include "storage/internal/block_format.h"
#include "storage/internal/iterator.h"
#include "storage/internal/row_heads.h"
#include "storage/options.h"

namespace basalt {

class BlockCache;
class BlockBuilder;
class BloomBuilder;
class BloomReader;
class DecodedBlock;

struct FileStats {
  uint64_t entries = 0;
  uint64_t file_size = 0;
  uint64_t max_seq = 0;  // highest WAL sequence id of any edit in the file
  std::string first_key, last_key;
};

class BlockFileWriter {
 public:
  // Writes a new file at path with the family's encoding, compression, checksums and bloom.
  static absl::StatusOr<std::unique_ptr<BlockFileWriter>> Create(Env* env, const std::string& path,
                                                                  const FamilyOptions& family);
  ~BlockFileWriter();
  // Keys must come in cell order (non-decreasing; the caller drops duplicate cells).
  absl::Status Add(std::string_view flat_key, std::string_view value);
  void set_max_seq(uint64_t seq) { stats_.max_seq = std::max(stats_.max_seq, seq); }
  // Writes bloom, index, file info and trailer, then syncs and closes the file.
  absl::StatusOr<FileStats> Finish();

 private:
  BlockFileWriter(std::unique_ptr<WritableFile> file, const FamilyOptions& family);
  absl::Status FlushDataBlock();
  absl::Status WriteBlock(BlockType type, std::string_view payload, BlockHandle* handle);

  std::unique_ptr<WritableFile> file_;
  FamilyOptions family_;
  std::unique_ptr<BlockBuilder> data_;
  std::unique_ptr<BloomBuilder> bloom_;
  std::string index_;  // entries: last key, offset, size
  uint32_t index_entries_ = 0;
  std::string last_key_;
  std::string block_buf_, scratch_;
  FileStats stats_;
};

// Rows [start, end); an empty end: to the end of the key space.
struct RowRange {
  std::string start, end;
  bool Contains(std::string_view row) const { return row >= start && (end.empty() || row < end); }
};

class BlockFileReader : public std::enable_shared_from_this<BlockFileReader> {
 public:
  // Opens and checks trailer, index, bloom and file info. InvalidArgument for a file that is not
  // a block file or of an unknown version; DataLoss for damage.
  //
  // With `range`, the file is seen through it: iterators, blooms and statistics cover only the
  // cells of its rows (HBase's HalfStoreFileReader, for a region that refers to another's file
  // after a split or merge). The file then belongs to that other region: MarkObsolete does
  // nothing, and entries, file_size, first_key and last_key are estimates from the index blocks.
  static absl::StatusOr<std::shared_ptr<BlockFileReader>> Open(Env* env, const std::string& path,
                                                               const FamilyOptions& family, BlockCache* cache,
                                                               const RowRange* range = nullptr);
  ~BlockFileReader();

  // fill_cache=false reads through the cache without adding to it (a scan's cache_blocks=false).
  std::unique_ptr<InternalIterator> NewIterator(bool fill_cache) const;

  // Bloom checks: false means the file certainly holds no cell of that row (column).
  bool MayContainRow(std::string_view row) const;
  bool MayContainColumn(std::string_view row, std::string_view qualifier) const;

  const FileStats& stats() const { return stats_; }
  const Trailer& trailer() const { return trailer_; }
  const std::string& path() const { return path_; }
  uint64_t file_id() const { return file_id_; }
  size_t num_blocks() const { return index_keys_.size(); }
  // Reads (or finds in the cache) data block i, verified and decoded.
  absl::StatusOr<std::shared_ptr<const DecodedBlock>> GetBlock(size_t i, bool fill_cache) const;
  // The last key of the middle block (of the blocks in range, for a reference): where HBase
  // splits. Empty without blocks.
  std::string MidKey() const;
  // Index of the first block whose last key >= target (num_blocks() if none).
  size_t FindBlock(std::string_view target) const;
  // The file is no longer in the manifest (compacted away): delete it once the last reader
  // lets go, not while a scan may still read it (a shared store has no unlink-while-open).
  void MarkObsolete(Env* env) {
    if (!range_) obsolete_env_.store(env);
  }
  // The rows it is seen through (a reference), or nullptr for a region's own file.
  const RowRange* range() const { return range_ ? &*range_ : nullptr; }

 private:
  BlockFileReader() = default;
  class Iter;
  class RangeIter;
  // Limits the statistics to range_ (an estimate by index block).
  void ClipStatsToRange();
  // The data blocks [first, last) that may hold rows of range_ (all without one).
  std::pair<size_t, size_t> BlocksInRange() const;

  std::string path_;
  std::unique_ptr<RandomAccessFile> file_;
  FamilyOptions family_;
  BlockCache* cache_ = nullptr;
  std::atomic<Env*> obsolete_env_{nullptr};
  uint64_t file_id_ = 0;
  Trailer trailer_;
  BlockReadContext ctx_{};
  std::vector<std::string> index_keys_;
  std::vector<KeyView> index_views_;  // index_keys_ parsed once, for FindBlock
  RowHeads index_heads_;              // their rows' heads, for FindBlock
  std::vector<BlockHandle> index_handles_;
  std::string bloom_data_;
  std::unique_ptr<BloomReader> bloom_;
  FileStats stats_;
  std::optional<RowRange> range_;
};

}  // namespace basalt
