#include "storage/internal/block_cache.h"

#include <algorithm>
#include <atomic>
#include <list>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/synchronization/mutex.h"

namespace basalt {

// One LRU list and map under one mutex. Aligned to a cache line so neighbouring shards' mutexes
// do not share one.
//
// A hit reads the map's slot only: the value and the stamp of the entry's last move to the
// front live there, not in the list's node. An entry is moved to the front only when it may
// have left the most recent quarter of the list (see Lookup), so a block that stays hot is
// read without a write to the list: the relink wrote the node and both its neighbours, each
// likely a cache miss in a large cache (BENCHMARKS §24d: 1.5 % of a server's samples).
// HBase's LruBlockCache does less still on a hit (it stamps the block's access time and
// orders blocks only when it evicts).
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
    Slot& s = it->second;
    // Every move to the front takes a new stamp, so the list is in stamp order and at most
    // tick_ - s.stamp entries are before this one: within the first quarter, it stays.
    if (tick_ - s.stamp > map_.size() / 4) {
      lru_.splice(lru_.begin(), lru_, s.node);  // relinks the node; no allocation
      s.stamp = ++tick_;
    }
    return s.value;
  }

  void Insert(const CacheKey& k, std::shared_ptr<const void> value, size_t charge)
      ABSL_LOCKS_EXCLUDED(mu_) {
    Dropped dropped;  // destroyed after the lock is released: freeing a block can be slow
    {
      absl::MutexLock lock(&mu_);
      RemoveLocked(k, &dropped);
      if (value == nullptr || charge > capacity_) return;
      lru_.push_front(Entry{k, charge});
      map_.emplace(k, Slot{lru_.begin(), std::move(value), ++tick_});
      usage_ += charge;
      ++inserts_;
      // The new entry fits on its own (charge <= capacity_), so it is never its own victim.
      while (usage_ > capacity_) {
        const CacheKey victim = lru_.back().key;  // a copy: RemoveLocked erases the node
        RemoveLocked(victim, &dropped);
        ++evictions_;
      }
    }
  }

  void Erase(const CacheKey& k) ABSL_LOCKS_EXCLUDED(mu_) {
    Dropped dropped;
    absl::MutexLock lock(&mu_);
    RemoveLocked(k, &dropped);
    // `dropped` is declared before `lock`, so it is destroyed after the unlock.
  }

  void EraseFile(uint64_t file_id) ABSL_LOCKS_EXCLUDED(mu_) {
    Dropped dropped;
    absl::MutexLock lock(&mu_);
    for (auto it = lru_.begin(); it != lru_.end();) {
      const CacheKey k = it->key;
      ++it;  // before RemoveLocked erases the node
      if (k.file_id == file_id) RemoveLocked(k, &dropped);
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
  struct Entry {  // a list node: the order, and what eviction needs
    CacheKey key;
    size_t charge;
  };
  using List = std::list<Entry>;
  struct Slot {  // the map's value: what a hit reads
    List::iterator node;
    std::shared_ptr<const void> value;
    uint64_t stamp;  // tick_ when the node last moved to the front
  };
  using Dropped = std::vector<std::shared_ptr<const void>>;

  // Removes the entry under k, if any, keeping its value in *dropped.
  void RemoveLocked(const CacheKey& k, Dropped* dropped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = map_.find(k);
    if (it == map_.end()) return;
    dropped->push_back(std::move(it->second.value));  // (may throw: before anything is erased)
    usage_ -= it->second.node->charge;
    lru_.erase(it->second.node);
    map_.erase(it);
  }

  size_t capacity_ = 0;  // written only before the cache is shared
  mutable absl::Mutex mu_;
  List lru_ ABSL_GUARDED_BY(mu_);  // front: most recently used
  // Open addressing: a hit reads the slot array, not a chain of nodes (std::unordered_map's
  // bucket, node and key were three cache misses per lookup; BENCHMARKS §24c). A hit allocates
  // nothing.
  absl::flat_hash_map<CacheKey, Slot> map_ ABSL_GUARDED_BY(mu_);
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;  // counts moves to the front
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
