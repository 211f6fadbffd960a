#include "common/crc.h"

#include <array>

#include "isa-l/crc.h"

namespace basalt {

uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

uint32_t Crc32cExtend(uint32_t init, const void* data, size_t n) {
  // ISA-L's crc32_iscsi takes and returns the raw (un-inverted) register, and an int length:
  // feed it in chunks below INT_MAX.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t reg = init ^ 0xFFFFFFFFu;
  constexpr size_t kChunk = size_t{1} << 30;
  while (n > 0) {
    const size_t len = n < kChunk ? n : kChunk;
    reg = crc32_iscsi(p, static_cast<int>(len), reg);
    p += len;
    n -= len;
  }
  return reg ^ 0xFFFFFFFFu;
}

uint32_t Crc32(const void* data, size_t n) {
  return crc32_gzip_refl(0, static_cast<const unsigned char*>(data), n);
}

namespace {
constexpr std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kCrc32cTable = MakeCrc32cTable();
}  // namespace

uint32_t Crc32cTableLoop(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = kCrc32cTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

}  // namespace basalt
