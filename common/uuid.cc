#include "common/uuid.h"

#include "absl/strings/str_format.h"

namespace basalt {

std::string UuidText(Uuid u) {
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", u.hi >> 32, (u.hi >> 16) & 0xffff, u.hi & 0xffff, u.lo >> 48,
                         u.lo & 0xffffffffffffULL);
}

std::optional<Uuid> ParseUuid(std::string_view s) {
  if (s.size() != 36) return std::nullopt;
  Uuid u;
  int digits = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return std::nullopt;
      continue;
    }
    const char c = s[i];
    uint64_t v;
    if (c >= '0' && c <= '9') {
      v = static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v = static_cast<uint64_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    uint64_t& half = digits < 16 ? u.hi : u.lo;
    half = (half << 4) | v;
    ++digits;
  }
  return u;
}

}  // namespace basalt
