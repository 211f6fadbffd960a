// The block cache shared by every store of a server: blocks of block files, keyed by
// (file id, block offset), bounded in bytes (the charge the inserter states), evicted LRU.
//
// Values are immutable objects shared by the cache and its readers: a pinned block (a
// shared_ptr a reader holds) stays alive while the reader holds it, even after it is evicted or
// erased. The cache is split into 2^num_shard_bits shards, each with its own mutex, LRU list and
// hash map, and an equal share of the capacity.
//
// Thread-safety: every method may be called from any number of threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace basalt {

struct CacheKey {
  uint64_t file_id;
  uint64_t offset;

  bool operator==(const CacheKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const CacheKey& k) {
    return H::combine(std::move(h), k.file_id, k.offset);
  }
};

class BlockCache {
 public:
  // capacity_bytes is split evenly over 2^num_shard_bits shards (num_shard_bits clamped to
  // [0, 16]); the sum of the shards' capacities is exactly capacity_bytes.
  explicit BlockCache(size_t capacity_bytes, int num_shard_bits = 4);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // The cached value, or nullptr on a miss. A hit becomes the shard's most recently used entry,
  // unless it is already among the most recent quarter of the shard's entries: there it keeps
  // its place (so a hot block is read without relinking the list). Does not allocate (one
  // atomic increment for the returned reference).
  std::shared_ptr<const void> Lookup(const CacheKey& k);

  // Caches value under k with the given charge in bytes, replacing any value already there, then
  // evicts the shard's least recently used entries until the shard is within its capacity. An
  // entry whose charge exceeds a shard's capacity is not cached (and any old value under k is
  // dropped). A null value only drops the old value.
  void Insert(const CacheKey& k, std::shared_ptr<const void> value, size_t charge);

  // Drops the value under k, if any.
  void Erase(const CacheKey& k);

  // Drops every block of a file (after compaction deleted it). Walks every entry.
  void EraseFile(uint64_t file_id);

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t inserts = 0;    // values cached by Insert (not those too large to cache)
    uint64_t evictions = 0;  // entries dropped to make room (not Erase/EraseFile/replacement)
    size_t usage_bytes = 0;
    size_t capacity_bytes = 0;
    size_t entries = 0;
  };
  // A sum over the shards, each read under its lock (not one atomic snapshot of the cache).
  Stats GetStats() const;

  // A process-wide unique file id (never 0), so blocks of different files never share a key.
  static uint64_t NewFileId();

 private:
  class Shard;
  Shard& ShardFor(const CacheKey& k) const;

  const size_t capacity_;
  const int shard_bits_;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace basalt
