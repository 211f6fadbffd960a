#include "storage/block_cache.h"

#include "storage/internal/block_cache.h"

namespace basalt {

std::shared_ptr<BlockCache> NewBlockCache(size_t capacity_bytes) {
  return std::make_shared<BlockCache>(capacity_bytes);
}

BlockCacheUsage GetBlockCacheUsage(const BlockCache& cache) {
  BlockCache::Stats s = cache.GetStats();
  return BlockCacheUsage{s.usage_bytes, s.capacity_bytes, s.hits, s.misses, s.evictions};
}

}  // namespace basalt
