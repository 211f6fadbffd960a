#include "storage/internal/merging_iterator.h"

#include <string>
#include <vector>

#include "storage/cell.h"

namespace basalt {
namespace {

class MergingIterator final : public InternalIterator {
 public:
  explicit MergingIterator(IteratorList children)
      : children_(std::move(children)) {
    heap_.reserve(children_.size());
  }

  bool Valid() const override { return status_.ok() && !heap_.empty(); }
  void SeekToFirst() override {
    for (auto& c : children_) c->SeekToFirst();
    Rebuild();
  }
  void Seek(std::string_view target) override {
    for (auto& c : children_) c->Seek(target);
    Rebuild();
  }
  // The largest of the children's keys before target becomes the top (the only heap entry).
  void SeekBefore(std::string_view target) override {
    heap_.clear();
    status_ = absl::OkStatus();
    for (size_t i = 0; i < children_.size(); ++i) {
      InternalIterator* c = children_[i].get();
      c->SeekBefore(target);
      if (!c->Valid()) {
        if (!c->status().ok()) status_ = c->status();
        continue;
      }
      if (heap_.empty() || CompareFlatKeys(c->key(), Top()->key()) > 0) heap_.assign(1, i);
    }
  }
  void Next() override {
    // Take the current child out of the heap, drop the same cell from every other child (their
    // entries are older), then advance the current child past its own repeats. `k` stays valid
    // throughout: the current child has not moved while others advance, and a child whose keys
    // repeat keeps earlier views valid (iterator.h).
    const size_t cur = heap_[0];
    InternalIterator* it = children_[cur].get();
    const std::string_view k = it->key();
    PopTop();
    while (!heap_.empty() && Top()->key() == k) AdvanceTop();
    it->Next();
    if (!it->unique_keys()) {
      while (it->Valid() && it->key() == k) it->Next();
    }
    if (it->Valid()) {
      Push(cur);
    } else if (!it->status().ok()) {
      status_ = it->status();
    }
  }
  std::string_view key() const override { return Top()->key(); }
  std::string_view value() const override { return Top()->value(); }
  absl::Status status() const override { return status_; }

 private:
  InternalIterator* Top() const { return children_[heap_[0]].get(); }

  // a before b: smaller key, or same key and newer child (smaller index).
  bool Less(size_t a, size_t b) const {
    int c = CompareFlatKeys(children_[a]->key(), children_[b]->key());
    return c < 0 || (c == 0 && a < b);
  }
  void SiftDown(size_t i) {
    size_t n = heap_.size();
    for (;;) {
      size_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < n && Less(heap_[l], heap_[m])) m = l;
      if (r < n && Less(heap_[r], heap_[m])) m = r;
      if (m == i) return;
      std::swap(heap_[i], heap_[m]);
      i = m;
    }
  }
  void PopTop() {
    heap_[0] = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) SiftDown(0);
  }
  void Push(size_t child) {
    heap_.push_back(child);
    size_t i = heap_.size() - 1;
    while (i > 0) {
      size_t parent = (i - 1) / 2;
      if (!Less(heap_[i], heap_[parent])) break;
      std::swap(heap_[i], heap_[parent]);
      i = parent;
    }
  }
  void Rebuild() {
    heap_.clear();
    status_ = absl::OkStatus();
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i]->Valid()) {
        heap_.push_back(i);
      } else if (!children_[i]->status().ok()) {
        status_ = children_[i]->status();
      }
    }
    for (size_t i = heap_.size() / 2; i-- > 0;) SiftDown(i);
  }
  void AdvanceTop() {
    InternalIterator* it = Top();
    it->Next();
    if (!it->Valid()) {
      if (!it->status().ok()) status_ = it->status();
      heap_[0] = heap_.back();
      heap_.pop_back();
      if (heap_.empty()) return;
    }
    SiftDown(0);
  }

  IteratorList children_;
  std::vector<size_t> heap_;
  absl::Status status_;
};

// One child needs no heap, but still drops the memstore's duplicate edits.
class DedupIterator final : public InternalIterator {
 public:
  explicit DedupIterator(std::unique_ptr<InternalIterator> it) : it_(std::move(it)) {}
  bool Valid() const override { return it_->Valid(); }
  void SeekToFirst() override { it_->SeekToFirst(); }
  void Seek(std::string_view t) override { it_->Seek(t); }
  void SeekBefore(std::string_view t) override { it_->SeekBefore(t); }
  void Next() override {
    const std::string_view k = it_->key();  // stays valid: keys that repeat keep their views
    it_->Next();
    while (it_->Valid() && it_->key() == k) it_->Next();
  }
  std::string_view key() const override { return it_->key(); }
  std::string_view value() const override { return it_->value(); }
  absl::Status status() const override { return it_->status(); }

 private:
  std::unique_ptr<InternalIterator> it_;
};

class EmptyIterator final : public InternalIterator {
 public:
  bool Valid() const override { return false; }
  void SeekToFirst() override {}
  void Seek(std::string_view) override {}
  void SeekBefore(std::string_view) override {}
  void Next() override {}
  std::string_view key() const override { return {}; }
  std::string_view value() const override { return {}; }
  absl::Status status() const override { return absl::OkStatus(); }
};

}  // namespace

std::unique_ptr<InternalIterator> NewMergingIterator(IteratorList children) {
  if (children.empty()) return std::make_unique<EmptyIterator>();
  if (children.size() == 1) {
    if (children[0]->unique_keys()) return std::move(children[0]);
    return std::make_unique<DedupIterator>(std::move(children[0]));
  }
  return std::make_unique<MergingIterator>(std::move(children));
}

}  // namespace basalt
