#include "storage/internal/memstore.h"

#include <cassert>
#include <cstring>

#include "common/coding.h"
#include "storage/cell.h"

namespace basalt {

struct MemStore::Node {
  const char* entry;
  std::atomic<Node*> next_[1];  // really `height` of them
  Node* Next(int level) const { return next_[level].load(std::memory_order_acquire); }
  void SetNext(int level, Node* n) { next_[level].store(n, std::memory_order_release); }
};

namespace {
constexpr size_t kBlockSize = 256 * 1024;

struct EntryView {
  std::string_view key;
  uint64_t seq;
  std::string_view value;
};

inline EntryView DecodeEntry(const char* p) {
  uint32_t klen = 0;
  p = DecodeVarint32(p, p + 5, &klen);
  EntryView e;
  e.key = std::string_view(p, klen);
  p += klen;
  e.seq = DecodeFixed64(p);
  p += 8;
  uint32_t vlen = 0;
  p = DecodeVarint32(p, p + 5, &vlen);
  e.value = std::string_view(p, vlen);
  return e;
}
}  // namespace

MemStore::MemStore() {
  head_ = NewNode(nullptr, kMaxHeight);
  for (int i = 0; i < kMaxHeight; ++i) head_->SetNext(i, nullptr);
}

MemStore::~MemStore() = default;

char* MemStore::Allocate(size_t bytes) {
  bytes = (bytes + 7) & ~size_t{7};
  if (bytes > alloc_left_) {
    size_t size = bytes > kBlockSize / 4 ? bytes : kBlockSize;
    blocks_.emplace_back(new char[size]);
    if (size != kBlockSize) {
      memory_.fetch_add(size, std::memory_order_relaxed);
      return blocks_.back().get();
    }
    alloc_ptr_ = blocks_.back().get();
    alloc_left_ = size;
  }
  // Counts bytes in use, not whole blocks: an empty memstore weighs next to nothing.
  memory_.fetch_add(bytes, std::memory_order_relaxed);
  char* r = alloc_ptr_;
  alloc_ptr_ += bytes;
  alloc_left_ -= bytes;
  return r;
}

size_t MemStore::NodeBytes(int height) {
  return (sizeof(Node) + sizeof(std::atomic<Node*>) * (height - 1) + 7) & ~size_t{7};
}

MemStore::Node* MemStore::NewNode(const char* entry, int height) {
  return PlaceNode(Allocate(NodeBytes(height)), entry, height);
}

MemStore::Node* MemStore::PlaceNode(char* mem, const char* entry, int height) {
  Node* n = new (mem) Node;
  n->entry = entry;
  for (int i = 1; i < height; ++i) new (&n->next_[i]) std::atomic<Node*>(nullptr);
  return n;
}

int MemStore::RandomHeight() {
  int h = 1;
  while (h < kMaxHeight) {
    rnd_ ^= rnd_ << 13;
    rnd_ ^= rnd_ >> 17;
    rnd_ ^= rnd_ << 5;
    if ((rnd_ & 3) != 0) break;  // branching factor 4
    ++h;
  }
  return h;
}

int MemStore::CompareEntry(const char* entry, std::string_view key, uint64_t seq) {
  EntryView e = DecodeEntry(entry);
  int c = CompareFlatKeys(e.key, key);
  if (c != 0) return c;
  if (e.seq != seq) return e.seq > seq ? -1 : 1;
  return 0;
}

MemStore::Node* MemStore::FindGreaterOrEqual(std::string_view key, uint64_t seq, Node** prev) const {
  Node* x = head_;
  int level = max_height_.load(std::memory_order_relaxed) - 1;
  for (;;) {
    Node* next = x->Next(level);
    if (next != nullptr && CompareEntry(next->entry, key, seq) < 0) {
      x = next;
    } else {
      if (prev != nullptr) prev[level] = x;
      if (level == 0) return next;
      --level;
    }
  }
}

MemStore::Node* MemStore::FindLast(const std::string_view* key, uint64_t seq) const {
  Node* x = head_;
  int level = max_height_.load(std::memory_order_relaxed) - 1;
  for (;;) {
    Node* next = x->Next(level);
    if (next != nullptr && (key == nullptr || CompareEntry(next->entry, *key, seq) < 0)) {
      x = next;
    } else {
      if (level == 0) return x == head_ ? nullptr : x;
      --level;
    }
  }
}

MemStore::Node* MemStore::FindLessThan(std::string_view key) const {
  return FindLast(key.empty() ? nullptr : &key, UINT64_MAX);
}

MemStore::Node* MemStore::FindLessThan(const char* entry) const {
  EntryView e = DecodeEntry(entry);
  return FindLast(&e.key, e.seq);
}

void MemStore::Add(std::string_view flat_key, uint64_t seq, std::string_view value) {
  size_t len = VarintLength(flat_key.size()) + flat_key.size() + 8 + VarintLength(value.size()) + value.size();
  // The node and its entry in one piece, the entry right behind the node: a search stepping
  // onto a node finds the key it compares on the same cache line or the next, not on a line
  // of its own (MemStore::FindGreaterOrEqual led the server's own code in a whole-row Get's
  // profile, BENCHMARKS.md "Throughput").
  const int height = RandomHeight();
  const size_t node_bytes = NodeBytes(height);
  char* mem = Allocate(node_bytes + len);
  char* buf = mem + node_bytes;
  char* p = EncodeVarint64(buf, flat_key.size());
  std::memcpy(p, flat_key.data(), flat_key.size());
  p += flat_key.size();
  EncodeFixed64(p, seq);
  p += 8;
  p = EncodeVarint64(p, value.size());
  std::memcpy(p, value.data(), value.size());

  Node* prev[kMaxHeight];
  FindGreaterOrEqual(flat_key, seq, prev);
  int cur = max_height_.load(std::memory_order_relaxed);
  if (height > cur) {
    for (int i = cur; i < height; ++i) prev[i] = head_;
    max_height_.store(height, std::memory_order_relaxed);
  }
  Node* n = PlaceNode(mem, buf, height);
  for (int i = 0; i < height; ++i) {
    n->next_[i].store(prev[i]->Next(i), std::memory_order_relaxed);
    prev[i]->SetNext(i, n);
  }
  entries_.fetch_add(1, std::memory_order_relaxed);
}

class MemStore::Iter final : public InternalIterator {
 public:
  Iter(std::shared_ptr<const MemStore> mem, uint64_t read_point) : mem_(std::move(mem)), read_point_(read_point) {}
  bool Valid() const override { return node_ != nullptr; }
  void SeekToFirst() override {
    node_ = mem_->head_->Next(0);
    SkipInvisible();
  }
  void Seek(std::string_view target) override {
    node_ = mem_->FindGreaterOrEqual(target, UINT64_MAX, nullptr);
    SkipInvisible();
  }
  void SeekBefore(std::string_view target) override {
    // The last entry before target, then back over entries the read point does not see.
    node_ = mem_->FindLessThan(target);
    while (node_ != nullptr) {
      cur_ = DecodeEntry(node_->entry);
      if (cur_.seq <= read_point_) return;
      node_ = mem_->FindLessThan(node_->entry);
    }
  }
  void Next() override {
    node_ = node_->Next(0);
    SkipInvisible();
  }
  std::string_view key() const override { return cur_.key; }
  std::string_view value() const override { return cur_.value; }
  absl::Status status() const override { return absl::OkStatus(); }

 private:
  void SkipInvisible() {
    while (node_ != nullptr) {
      cur_ = DecodeEntry(node_->entry);
      if (cur_.seq <= read_point_) return;
      node_ = node_->Next(0);
    }
  }
  std::shared_ptr<const MemStore> mem_;
  uint64_t read_point_;
  Node* node_ = nullptr;
  EntryView cur_{};
};

std::unique_ptr<InternalIterator> MemStore::NewIterator(std::shared_ptr<const MemStore> mem, uint64_t read_point) {
  return std::make_unique<Iter>(std::move(mem), read_point);
}

}  // namespace basalt
