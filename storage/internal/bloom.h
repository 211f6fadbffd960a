// Bloom filters, one per block file (HBase's ROW and ROWCOL bloom types). A ROW filter holds
// rows; a ROWCOL filter holds BloomKeyRowCol(row, qualifier). Which of the two a filter holds is
// recorded by the block file beside it (FamilyOptions::bloom), not in the filter.
//
// Serialized filter (version 1), all integers little-endian:
//
//   +------------------+-------------------+------+-------------------+------------+
//   | bits[num_bytes]  | num_bytes fixed32 | k u8 | crc32c fixed32    | version u8 |
//   +------------------+-------------------+------+-------------------+------------+
//   <------------------------- covered by the crc ------------------>
//
//   num_bytes is a positive multiple of 8; k (probes per key) is 1..30; the crc is the masked
//   (MaskCrc) CRC32C of everything before it. Bit i lives in bits[i / 8] at (1 << (i % 8)).
//   A key's probes: h = BloomHash(key) (64-bit, MurmurHash64A, fixed seed), a = low 32 bits,
//   b = high 32 bits; probe j sets bit FastRange32(a + j * b, num_bytes * 8), where
//   FastRange32(x, n) = (x * n) >> 32 (multiply-shift instead of a division per probe).
//   The hash is part of the format: it never depends on the process or the platform's hasher.
//
// Thread-safety: BloomBuilder is single-threaded. BloomReader is immutable after Parse, so any
// number of threads may call MayContain at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt {

inline constexpr uint8_t kBloomFormatVersion = 1;
// num_bytes fixed32 + k u8 + crc fixed32 + version u8.
inline constexpr size_t kBloomTrailerSize = 4 + 1 + 4 + 1;
inline constexpr int kBloomMaxProbes = 30;

// The 64-bit hash the filter probes with (stable across processes and releases).
uint64_t BloomHash(std::string_view key);

// The ROWCOL filter key of a cell: varint(row length) + row + qualifier. The length prefix keeps
// ("a", "bc") and ("ab", "c") apart.
std::string BloomKeyRowCol(std::string_view row, std::string_view qualifier);

class BloomBuilder {
 public:
  // bits_per_key is clamped to [1, 100]; 10 gives about a 1% false-positive rate.
  explicit BloomBuilder(int bits_per_key = 10);

  // Adds a key. A key equal to the previous one (same hash) is skipped without work beyond the
  // hash: cells of one row arrive consecutively, so a ROW filter sees each row once.
  void AddKey(std::string_view key);

  // Returns the serialized filter and resets the builder for another filter.
  std::string Finish();

  // Distinct keys added since the last Finish (consecutive duplicates counted once).
  size_t num_keys() const { return hashes_.size(); }

 private:
  int bits_per_key_;
  int num_probes_;
  std::vector<uint64_t> hashes_;
};

class BloomReader {
 public:
  // Validates a serialized filter and views it; the caller keeps `data` alive and unchanged for
  // as long as the reader is used. DataLoss when the data cannot be decoded: truncated, sizes
  // that do not add up, k out of range, crc mismatch or an unknown version (the version byte is
  // not under the crc, so a flipped version is indistinguishable from a newer format).
  static absl::StatusOr<BloomReader> Parse(std::string_view data);

  // False: the key was certainly not added. True: it probably was.
  bool MayContain(std::string_view key) const;

  size_t num_bits() const { return static_cast<size_t>(num_bits_); }

  // Process-wide: files a read did not open because their filter said the row (or column) is
  // not there (counted by the store; /metrics' basalt_bloom_skips_total). A sharded counter.
  static void CountSkip();
  static uint64_t Skips();
  int num_probes() const { return num_probes_; }

 private:
  BloomReader(const char* bits, uint64_t num_bits, int num_probes)
      : bits_(bits), num_bits_(num_bits), num_probes_(num_probes) {}

  const char* bits_;
  uint64_t num_bits_;
  int num_probes_;
};

}  // namespace basalt
