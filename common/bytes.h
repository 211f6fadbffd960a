// Equality and copies of short byte strings (rows, qualifiers, small values) for the scan's
// inner loop: overlapping word loads instead of a library call or a byte loop for up to 16
// bytes (callgrind on `basalt-bench storage seed003`: memcmp/memcpy calls were ~15% of a scan).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace basalt {

namespace bytes_internal {
inline uint64_t Load64(const char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
inline uint32_t Load32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
}  // namespace bytes_internal

inline bool BytesEqual(std::string_view a, std::string_view b) {
  using namespace bytes_internal;
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  if (n >= 8) {
    if (n > 16) return std::memcmp(x, y, n) == 0;
    return Load64(x) == Load64(y) && Load64(x + n - 8) == Load64(y + n - 8);
  }
  if (n >= 4) return Load32(x) == Load32(y) && Load32(x + n - 4) == Load32(y + n - 4);
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return false;
  }
  return true;
}

// Copies s to d (which has room for s.size() bytes).
inline void CopyBytes(char* d, std::string_view s) {
  using namespace bytes_internal;
  const size_t n = s.size();
  const char* p = s.data();
  if (n >= 8 && n <= 16) {
    uint64_t a = Load64(p), b = Load64(p + n - 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t a = Load32(p), b = Load32(p + n - 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else if (n < 4) {
    for (size_t i = 0; i < n; ++i) d[i] = p[i];
  } else {
    std::memcpy(d, p, n);
  }
}

}  // namespace basalt
