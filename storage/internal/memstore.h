// The memstore: one store's recent edits, sorted, in an arena-backed skip list (LevelDB's
// design). Thread-safety: one writer at a time (the store serialises Add with its own mutex);
// any number of readers run concurrently with the writer and with each other, without locks.
// Entries are never removed; the whole memstore is dropped after its flush.
//
// Entry layout in the arena:
//   [varint key_len][flat key][u64 seq][varint value_len][value]
// Order: flat key (cell order), then seq descending (a later edit of the same cell first).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "storage/internal/iterator.h"

namespace basalt {

class MemStore {
 public:
  MemStore();
  ~MemStore();
  MemStore(const MemStore&) = delete;
  MemStore& operator=(const MemStore&) = delete;

  // Adds an edit. Caller holds the store's write mutex.
  void Add(std::string_view flat_key, uint64_t seq, std::string_view value);

  // Bytes of arena in use (what counts toward the flush threshold).
  size_t ApproximateMemoryUsage() const { return memory_.load(std::memory_order_relaxed); }
  uint64_t num_entries() const { return entries_.load(std::memory_order_relaxed); }
  bool empty() const { return num_entries() == 0; }

  // An iterator over entries with seq <= read_point, in order; for equal flat keys the newest
  // visible edit comes first (older ones follow; the merging iterator drops them). The
  // iterator keeps the memstore alive.
  static std::unique_ptr<InternalIterator> NewIterator(std::shared_ptr<const MemStore> mem, uint64_t read_point);

 private:
  struct Node;
  class Iter;
  static constexpr int kMaxHeight = 12;

  char* Allocate(size_t bytes);
  Node* NewNode(const char* entry, int height);
  // Bytes of a node of `height` levels (a multiple of 8), and one built at mem.
  static size_t NodeBytes(int height);
  static Node* PlaceNode(char* mem, const char* entry, int height);
  int RandomHeight();
  // Compares entry a with (key, seq).
  static int CompareEntry(const char* entry, std::string_view key, uint64_t seq);
  Node* FindGreaterOrEqual(std::string_view key, uint64_t seq, Node** prev) const;
  // The last node before (key, newest seq) (an empty key: the last node), or null.
  Node* FindLessThan(std::string_view key) const;
  // The last node before `entry` (one of this memstore's), or null.
  Node* FindLessThan(const char* entry) const;
  // The last node before (key, seq) (key null: the last node), or null.
  Node* FindLast(const std::string_view* key, uint64_t seq) const;

  std::vector<std::unique_ptr<char[]>> blocks_;
  char* alloc_ptr_ = nullptr;
  size_t alloc_left_ = 0;
  Node* head_;
  std::atomic<int> max_height_{1};
  std::atomic<size_t> memory_{0};
  std::atomic<uint64_t> entries_{0};
  uint32_t rnd_ = 0xdeadbeef;
};

}  // namespace basalt
