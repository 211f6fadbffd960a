// The public way to create the block cache a server shares between all its regions
// (RegionOptions::block_cache) without reaching into storage/internal/. The cache itself is
// storage/internal/block_cache.h.
//
// Thread-safety: the cache and these functions may be used from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace basalt {

class BlockCache;

// A sharded LRU block cache bounded to capacity_bytes (0 is allowed: nothing is cached).
std::shared_ptr<BlockCache> NewBlockCache(size_t capacity_bytes);

struct BlockCacheUsage {
  size_t usage_bytes = 0;
  size_t capacity_bytes = 0;
  uint64_t hits = 0, misses = 0;  // lookups since the cache was made
  uint64_t evictions = 0;         // entries dropped to make room
};
// The cache's current charge, its capacity and its lookups (a sum over shards, not one atomic
// snapshot).
BlockCacheUsage GetBlockCacheUsage(const BlockCache& cache);

}  // namespace basalt
