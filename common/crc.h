// Checksums. CRC32C and CRC32 come from Intel ISA-L (crc32_iscsi, crc32_gzip_refl), which uses
// the CPU's carry-less multiply / crc32 instructions (seed checksums-native-crc: native CRC cut
// HBase's checksum share of compaction CPU from 22% to 3%). Thread-safe, no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace basalt {

// Standard CRC32C (Castagnoli): Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(const void* data, size_t n);
inline uint32_t Crc32c(std::string_view s) { return Crc32c(s.data(), s.size()); }
// Extends a running CRC32C (init is a previous Crc32c result, or 0 to start).
uint32_t Crc32cExtend(uint32_t init, const void* data, size_t n);

// Standard CRC32 (IEEE, as zlib/gzip): Crc32("123456789") == 0xCBF43926.
uint32_t Crc32(const void* data, size_t n);

// A byte-at-a-time table loop for CRC32C: the comparison baseline in the checksum benchmark.
uint32_t Crc32cTableLoop(const void* data, size_t n);

// Masked CRC for checksums stored beside the data they cover (LevelDB's trick): a CRC of data
// that itself contains CRCs is then not trivially related to them.
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc(uint32_t m) { uint32_t r = m - 0xa282ead8u; return (r >> 17) | (r << 15); }

}  // namespace basalt
