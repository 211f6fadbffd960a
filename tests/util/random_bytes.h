// Deterministic pseudo-random bytes for tests (xorshift64): the same seed gives the same bytes
// on every run, so a failure reproduces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace basalt::testing {

inline std::string RandomBytes(size_t n, uint64_t seed = 88172645463325252ull) {
  std::string out(n, '\0');
  uint64_t x = seed;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return out;
}

}  // namespace basalt::testing
