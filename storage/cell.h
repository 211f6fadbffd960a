// Cells and their order (docs/DESIGN.md, §1). Within a store (one family) a cell's key is
// (row, qualifier, timestamp, type); the order is row and qualifier ascending (bytewise),
// timestamp descending, type descending: DeleteFamily > DeleteColumn > Delete > Put.
//
// Flat key: the byte form every block, memstore entry and index key uses (after HBase's
// KeyValue key, without the family, which is the store's):
//
//   +-------------+-----+-----------+------------------+------+
//   | row_len u16 | row | qualifier | timestamp i64 BE | type |
//   +-------------+-----+-----------+------------------+------+
//   qualifier length = key length - 2 - row_len - 9
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "basalt/types.h"

namespace basalt {

enum class CellType : uint8_t { kPut = 4, kDelete = 8, kDeleteColumn = 12, kDeleteFamily = 14 };

inline constexpr size_t kMaxRowLength = 32767;  // HBase's Short.MAX_VALUE
inline constexpr size_t kKeyOverhead = 2 + 8 + 1;

bool IsValidCellType(uint8_t t);
const char* CellTypeName(CellType t);

// A parsed flat key; views into the flat key's bytes.
struct KeyView {
  std::string_view row;
  std::string_view qualifier;
  int64_t timestamp = 0;
  CellType type = CellType::kPut;
};

// Appends the flat key of k to dst.
void AppendFlatKey(std::string* dst, std::string_view row, std::string_view qualifier, int64_t ts, CellType type);
inline std::string MakeFlatKey(std::string_view row, std::string_view qualifier, int64_t ts, CellType type) {
  std::string s;
  AppendFlatKey(&s, row, qualifier, ts, type);
  return s;
}
// Parses a flat key; false if it is malformed (lengths do not add up, unknown type).
bool ParseFlatKey(std::string_view flat, KeyView* out);
// Unchecked parse of a key known to be well-formed (written by us, or already validated).
// Inline: it runs for every cell a scan visits.
inline KeyView ParseFlatKeyUnchecked(std::string_view flat) {
  const auto* u = reinterpret_cast<const unsigned char*>(flat.data());
  const size_t row_len = (static_cast<size_t>(u[0]) << 8) | u[1];
  const size_t qual_len = flat.size() - kKeyOverhead - row_len;
  KeyView k;
  k.row = std::string_view(flat.data() + 2, row_len);
  k.qualifier = std::string_view(flat.data() + 2 + row_len, qual_len);
  uint64_t be;
  std::memcpy(&be, u + 2 + row_len + qual_len, 8);
  k.timestamp = static_cast<int64_t>(__builtin_bswap64(be));
  k.type = static_cast<CellType>(u[flat.size() - 1]);
  return k;
}

// Bytewise three-way comparison; short strings (rows, qualifiers) without a library call.
inline int CompareBytes(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  if (n <= 8) {
    uint64_t x = 0, y = 0;
    if (n > 0) {
      std::memcpy(&x, a.data(), n);
      std::memcpy(&y, b.data(), n);
    }
    if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
  } else if (int c = std::memcmp(a.data(), b.data(), n); c != 0) {
    return c;
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

// Compares only (row, qualifier).
inline int CompareColumns(const KeyView& a, const KeyView& b) {
  int c = CompareBytes(a.row, b.row);
  return c != 0 ? c : CompareBytes(a.qualifier, b.qualifier);
}

// Three-way comparison in cell order.
inline int CompareKeys(const KeyView& a, const KeyView& b) {
  int c = CompareColumns(a, b);
  if (c != 0) return c;
  if (a.timestamp != b.timestamp) return a.timestamp > b.timestamp ? -1 : 1;  // newest first
  if (a.type != b.type) return static_cast<uint8_t>(a.type) > static_cast<uint8_t>(b.type) ? -1 : 1;
  return 0;
}
inline int CompareFlatKeys(std::string_view a, std::string_view b) {
  return CompareKeys(ParseFlatKeyUnchecked(a), ParseFlatKeyUnchecked(b));
}

// The smallest flat key of a row (sorts before every cell of that row).
std::string FirstKeyOfRow(std::string_view row);
// The same into *dst (its buffer reused); `after`: of the row just after `row` (row + "\0"),
// which sorts after every cell of `row`.
void AssignFirstKeyOfRow(std::string* dst, std::string_view row, bool after = false);
// The smallest flat key of a column within a row.
std::string FirstKeyOfColumn(std::string_view row, std::string_view qualifier);

// A reusable copy of a short byte string (a row or qualifier being tracked): assigning the
// usual few bytes is an inline copy, not a library call; grows when needed, never shrinks.
class ByteCopy {
 public:
  void Assign(std::string_view s) {
    if (s.size() > buf_.size()) buf_.resize(std::max(s.size(), 2 * buf_.size()));
    CopyBytes(buf_.data(), s);
    size_ = s.size();
  }
  std::string_view view() const { return std::string_view(buf_.data(), size_); }
  bool empty() const { return size_ == 0; }

 private:
  std::string buf_ = std::string(32, '\0');
  size_t size_ = 0;
};

// A cell as the API sees it.
struct Cell {
  std::string row;
  std::string family;
  std::string qualifier;
  int64_t timestamp = 0;
  CellType type = CellType::kPut;
  std::string value;
  bool operator==(const Cell&) const = default;
};

std::string DebugString(const Cell& c);

}  // namespace basalt
