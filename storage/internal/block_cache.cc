#include "storage/internal/block_cache.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <list>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/synchronization/mutex.h"

namespace basalt {

// One LRU list and map under one mutex. Aligned to a cache line so neighbouring shards' mutexes
// do not share one.
class alignas(64) BlockCache::Shard {
 public:
  // Called once, before the cache is shared.
  void SetCapacity(size_t capacity) { capacity_ = capacity; }

  std::shared_ptr<const void> Lookup(const CacheKey& k) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = map_.find(k);
    if (it == map_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second);  // relinks the node; no allocation
    return it->second->value;
  }

  void Insert(const CacheKey& k, std::shared_ptr<const void> value, size_t charge)
      ABSL_LOCKS_EXCLUDED(mu_) {
    List dropped;  // destroyed after the lock is released: freeing a block can be slow
    {
      absl::MutexLock lock(&mu_);
      RemoveLocked(k, &dropped);
      if (value == nullptr || charge > capacity_) return;
      lru_.push_front(Entry{k, std::move(value), charge});
      map_.emplace(k, lru_.begin());
      usage_ += charge;
      ++inserts_;
      // The new entry fits on its own (charge <= capacity_), so it is never its own victim.
      while (usage_ > capacity_) {
        auto victim = std::prev(lru_.end());
        usage_ -= victim->charge;
        map_.erase(victim->key);
        dropped.splice(dropped.end(), lru_, victim);
        ++evictions_;
      }
    }
  }

  void Erase(const CacheKey& k) ABSL_LOCKS_EXCLUDED(mu_) {
    List dropped;
    absl::MutexLock lock(&mu_);
    RemoveLocked(k, &dropped);
    // `dropped` is declared before `lock`, so it is destroyed after the unlock.
  }

  void EraseFile(uint64_t file_id) ABSL_LOCKS_EXCLUDED(mu_) {
    List dropped;
    absl::MutexLock lock(&mu_);
    for (auto it = lru_.begin(); it != lru_.end();) {
      auto next = std::next(it);
      if (it->key.file_id == file_id) {
        usage_ -= it->charge;
        map_.erase(it->key);
        dropped.splice(dropped.end(), lru_, it);
      }
      it = next;
    }
  }

  void AddStats(Stats* s) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    s->hits += hits_;
    s->misses += misses_;
    s->inserts += inserts_;
    s->evictions += evictions_;
    s->usage_bytes += usage_;
    s->capacity_bytes += capacity_;
    s->entries += map_.size();
  }

 private:
  struct Entry {
    CacheKey key;
    std::shared_ptr<const void> value;
    size_t charge;
  };
  using List = std::list<Entry>;

  // Moves the entry under k, if any, to *dropped.
  void RemoveLocked(const CacheKey& k, List* dropped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = map_.find(k);
    if (it == map_.end()) return;
    usage_ -= it->second->charge;
    dropped->splice(dropped->end(), lru_, it->second);
    map_.erase(it);
  }

  size_t capacity_ = 0;  // written only before the cache is shared
  mutable absl::Mutex mu_;
  List lru_ ABSL_GUARDED_BY(mu_);  // front: most recently used
  // Open addressing: a hit reads the slot array, not a chain of nodes (std::unordered_map's
  // bucket, node and key were three cache misses per lookup; BENCHMARKS §24c). A hit allocates
  // nothing.
  absl::flat_hash_map<CacheKey, List::iterator> map_ ABSL_GUARDED_BY(mu_);
  size_t usage_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t inserts_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
};

BlockCache::BlockCache(size_t capacity_bytes, int num_shard_bits)
    : capacity_(capacity_bytes),
      shard_bits_(std::clamp(num_shard_bits, 0, 16)),
      shards_(new Shard[size_t{1} << shard_bits_]) {
  const size_t n = size_t{1} << shard_bits_;
  for (size_t i = 0; i < n; ++i) {
    shards_[i].SetCapacity(capacity_ / n + (i < capacity_ % n ? 1 : 0));
  }
}

BlockCache::~BlockCache() = default;

BlockCache::Shard& BlockCache::ShardFor(const CacheKey& k) const {
  if (shard_bits_ == 0) return shards_[0];
  // splitmix64's finaliser over both fields; the top bits pick the shard, so the shard choice
  // is independent of the low bits the per-shard map buckets by.
  uint64_t h = k.file_id * 0x9e3779b97f4a7c15ull + k.offset;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return shards_[h >> (64 - shard_bits_)];
}

std::shared_ptr<const void> BlockCache::Lookup(const CacheKey& k) { return ShardFor(k).Lookup(k); }

void BlockCache::Insert(const CacheKey& k, std::shared_ptr<const void> value, size_t charge) {
  ShardFor(k).Insert(k, std::move(value), charge);
}

void BlockCache::Erase(const CacheKey& k) { ShardFor(k).Erase(k); }

void BlockCache::EraseFile(uint64_t file_id) {
  const size_t n = size_t{1} << shard_bits_;
  for (size_t i = 0; i < n; ++i) shards_[i].EraseFile(file_id);
}

BlockCache::Stats BlockCache::GetStats() const {
  Stats s;
  const size_t n = size_t{1} << shard_bits_;
  for (size_t i = 0; i < n; ++i) shards_[i].AddStats(&s);
  return s;
}

uint64_t BlockCache::NewFileId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace basalt
