// A binary search over sorted cell keys that reads the keys themselves only at the target's row.
//
// A Get's seek searches a block file's index (one key per block) and then a cached block (one
// key per cell). Each probe of a plain binary search reads a key elsewhere in memory: in a block
// cache larger than the processor's caches, a miss per probe, most of a seek's time (BENCHMARKS
// §24c). RowHeads keeps, beside the keys, each key's row as an eight-byte "head" in one small
// array: the eight bytes of the row that follow the common prefix of all the rows, zero-padded,
// as a big-endian number. Heads order as their rows do wherever two heads differ, so the search
// narrows to the keys whose head equals the target's by the array alone, and compares whole keys
// only among those: the target's row (and rows that differ only after the eight bytes).
//
// Thread-safety: immutable after Build; any number of readers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/cell.h"

namespace basalt {

class RowHeads {
 public:
  // row_at(i) is the i-th key's row, for i in [0, n), non-decreasing.
  template <typename RowAt>
  void Build(size_t n, RowAt row_at) {
    heads_.clear();
    prefix_.clear();
    if (n == 0) return;
    // Every row's common prefix (the first and last rows' when sorted; each is checked, so a
    // list out of order still gets a prefix every row has).
    const std::string_view first = row_at(0);
    size_t p = first.size();
    for (size_t i = 1; i < n && p > 0; ++i) {
      const std::string_view r = row_at(i);
      size_t q = 0;
      while (q < p && q < r.size() && r[q] == first[q]) ++q;
      p = q;
    }
    prefix_.assign(first.data(), p);
    heads_.reserve(n);
    for (size_t i = 0; i < n; ++i) heads_.push_back(Head(row_at(i).substr(p)));
  }

  // The first i in [0, n) whose key is >= target in cell order, or n; key_at(i) is the i-th
  // key (a KeyView), read only where the heads cannot decide.
  template <typename KeyAt>
  size_t LowerBound(const KeyView& target, KeyAt key_at) const {
    const size_t n = heads_.size();
    if (n == 0) return 0;
    const std::string_view row = target.row;
    const size_t p = prefix_.size();
    if (row.size() < p || row.compare(0, p, prefix_) != 0) {
      // Outside the prefix: before every row or after every row.
      return CompareBytes(row.substr(0, p), prefix_) < 0 ? 0 : n;
    }
    const uint64_t head = Head(row.substr(p));
    const auto lo = std::lower_bound(heads_.begin(), heads_.end(), head);
    const auto hi = std::upper_bound(lo, heads_.end(), head);  // [lo, hi): the target's row, mostly
    size_t a = static_cast<size_t>(lo - heads_.begin()), b = static_cast<size_t>(hi - heads_.begin());
    while (a < b) {
      const size_t mid = a + (b - a) / 2;
      if (CompareKeys(key_at(mid), target) < 0) {
        a = mid + 1;
      } else {
        b = mid;
      }
    }
    return a;
  }

  size_t MemoryUsage() const { return prefix_.capacity() + heads_.capacity() * sizeof(uint64_t); }

 private:
  static uint64_t Head(std::string_view suffix) {
    unsigned char b[8] = {};
    std::copy_n(suffix.data(), std::min<size_t>(8, suffix.size()), b);
    uint64_t h = 0;
    for (unsigned char c : b) h = (h << 8) | c;
    return h;
  }

  std::string prefix_;
  std::vector<uint64_t> heads_;
};

}  // namespace basalt
