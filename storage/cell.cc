#include "storage/cell.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt {

bool IsValidCellType(uint8_t t) {
  return t == 4 || t == 8 || t == 12 || t == 14;
}

const char* CellTypeName(CellType t) {
  switch (t) {
    case CellType::kPut: return "Put";
    case CellType::kDelete: return "Delete";
    case CellType::kDeleteColumn: return "DeleteColumn";
    case CellType::kDeleteFamily: return "DeleteFamily";
  }
  return "Unknown";
}

void AppendFlatKey(std::string* dst, std::string_view row, std::string_view qualifier, int64_t ts, CellType type) {
  size_t at = dst->size();
  dst->resize(at + kKeyOverhead + row.size() + qualifier.size());
  char* p = dst->data() + at;
  p[0] = static_cast<char>(row.size() >> 8);
  p[1] = static_cast<char>(row.size());
  p += 2;
  if (!row.empty()) std::memcpy(p, row.data(), row.size());  // memcpy from null is UB even for 0 bytes
  p += row.size();
  if (!qualifier.empty()) std::memcpy(p, qualifier.data(), qualifier.size());
  p += qualifier.size();
  uint64_t u = static_cast<uint64_t>(ts);
  for (int i = 7; i >= 0; --i) *p++ = static_cast<char>(u >> (8 * i));
  *p = static_cast<char>(type);
}

bool ParseFlatKey(std::string_view flat, KeyView* out) {
  if (flat.size() < kKeyOverhead) return false;
  const auto* u = reinterpret_cast<const unsigned char*>(flat.data());
  size_t row_len = (static_cast<size_t>(u[0]) << 8) | u[1];
  if (row_len > kMaxRowLength || row_len > flat.size() - kKeyOverhead) return false;
  if (!IsValidCellType(u[flat.size() - 1])) return false;
  *out = ParseFlatKeyUnchecked(flat);
  return true;
}

std::string FirstKeyOfRow(std::string_view row) {
  return MakeFlatKey(row, "", kLatestTimestamp, CellType::kDeleteFamily);
}
void AssignFirstKeyOfRow(std::string* dst, std::string_view row, bool after) {
  dst->clear();
  AppendFlatKey(dst, row, "", kLatestTimestamp, CellType::kDeleteFamily);
  if (!after) return;
  // row + "\0": one more byte of row (its length is the first two bytes), an empty qualifier.
  const size_t len = row.size() + 1;
  (*dst)[0] = static_cast<char>(len >> 8);
  (*dst)[1] = static_cast<char>(len);
  dst->insert(2 + row.size(), 1, '\0');
}
std::string FirstKeyOfColumn(std::string_view row, std::string_view qualifier) {
  return MakeFlatKey(row, qualifier, kLatestTimestamp, CellType::kDeleteFamily);
}

std::string DebugString(const Cell& c) {
  return absl::StrCat(absl::CEscape(c.row), "/", c.family, ":", absl::CEscape(c.qualifier), "/", c.timestamp, "/",
                      CellTypeName(c.type), " = ", absl::CEscape(c.value));
}

}  // namespace basalt
