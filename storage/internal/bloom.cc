#include "storage/internal/bloom.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/crc.h"
#include "common/metrics.h"
#include "common/status.h"

namespace basalt {
namespace {

// The format stores fixed-width integers and hashes 8-byte words in little-endian order.
static_assert(std::endian::native == std::endian::little, "bloom format assumes little-endian");

constexpr uint64_t kHashSeed = 0xbc9f1d34a2b7c5e1ull;
// Bits are probed with FastRange32, so a filter has at most 2^32 bits (512 MiB).
constexpr uint64_t kMaxBits = uint64_t{1} << 32;
constexpr uint64_t kMinBits = 64;

inline uint32_t FastRange32(uint32_t x, uint64_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(x) * n) >> 32);
}

}  // namespace

// MurmurHash64A (Austin Appleby, public domain): fast, good avalanche, trivially portable.
uint64_t BloomHash(std::string_view key) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ull;
  constexpr int r = 47;
  const size_t len = key.size();
  uint64_t h = kHashSeed ^ (static_cast<uint64_t>(len) * m);
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  const unsigned char* end = p + (len & ~size_t{7});
  for (; p != end; p += 8) {
    uint64_t k;
    std::memcpy(&k, p, 8);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  switch (len & 7) {
    case 7: h ^= static_cast<uint64_t>(p[6]) << 48; [[fallthrough]];
    case 6: h ^= static_cast<uint64_t>(p[5]) << 40; [[fallthrough]];
    case 5: h ^= static_cast<uint64_t>(p[4]) << 32; [[fallthrough]];
    case 4: h ^= static_cast<uint64_t>(p[3]) << 24; [[fallthrough]];
    case 3: h ^= static_cast<uint64_t>(p[2]) << 16; [[fallthrough]];
    case 2: h ^= static_cast<uint64_t>(p[1]) << 8; [[fallthrough]];
    case 1:
      h ^= static_cast<uint64_t>(p[0]);
      h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

std::string BloomKeyRowCol(std::string_view row, std::string_view qualifier) {
  std::string key;
  key.reserve(VarintLength(row.size()) + row.size() + qualifier.size());
  PutVarint64(&key, row.size());
  key.append(row);
  key.append(qualifier);
  return key;
}

BloomBuilder::BloomBuilder(int bits_per_key) : bits_per_key_(std::clamp(bits_per_key, 1, 100)) {
  // k = ln 2 * bits per key minimises the false-positive rate (LevelDB rounds down likewise).
  num_probes_ = std::clamp(static_cast<int>(bits_per_key_ * 0.69), 1, kBloomMaxProbes);
}

void BloomBuilder::AddKey(std::string_view key) {
  const uint64_t h = BloomHash(key);
  // Equal hashes set equal bits, so skipping on the hash is exact, not approximate.
  if (!hashes_.empty() && hashes_.back() == h) return;
  hashes_.push_back(h);
}

std::string BloomBuilder::Finish() {
  uint64_t num_bits = static_cast<uint64_t>(hashes_.size()) * static_cast<uint64_t>(bits_per_key_);
  num_bits = std::clamp(num_bits, kMinBits, kMaxBits);
  num_bits = (num_bits + 63) / 64 * 64;  // whole 8-byte words; kMaxBits is already one
  const size_t num_bytes = static_cast<size_t>(num_bits / 8);

  std::string out(num_bytes, '\0');
  char* bits = out.data();
  for (uint64_t h : hashes_) {
    uint32_t a = static_cast<uint32_t>(h);
    const uint32_t b = static_cast<uint32_t>(h >> 32);
    for (int j = 0; j < num_probes_; ++j) {
      const uint32_t bit = FastRange32(a, num_bits);
      bits[bit >> 3] = static_cast<char>(bits[bit >> 3] | (1 << (bit & 7)));
      a += b;
    }
  }
  PutFixed32(&out, static_cast<uint32_t>(num_bytes));
  out.push_back(static_cast<char>(num_probes_));
  PutFixed32(&out, MaskCrc(Crc32c(out.data(), out.size())));
  out.push_back(static_cast<char>(kBloomFormatVersion));
  hashes_.clear();
  return out;
}

absl::StatusOr<BloomReader> BloomReader::Parse(std::string_view data) {
  if (data.size() < kBloomTrailerSize) {
    return absl::DataLossError(absl::StrCat("bloom filter truncated: ", data.size(),
                                            " bytes, the trailer alone is ", kBloomTrailerSize));
  }
  const size_t n = data.size();
  const uint8_t version = static_cast<uint8_t>(data[n - 1]);
  if (version != kBloomFormatVersion) {
    return absl::DataLossError(absl::StrCat("bloom filter version ", version, " unknown (expected ",
                                            kBloomFormatVersion, ")"));
  }
  const uint32_t num_bytes = DecodeFixed32(data.data() + n - kBloomTrailerSize);
  if (static_cast<uint64_t>(num_bytes) + kBloomTrailerSize != n) {
    return absl::DataLossError(absl::StrCat("bloom filter size mismatch: bit array of ", num_bytes,
                                            " bytes but ", n, " bytes in all"));
  }
  const uint32_t stored = UnmaskCrc(DecodeFixed32(data.data() + n - 5));
  const uint32_t computed = Crc32c(data.data(), n - 5);
  if (stored != computed) {
    return absl::DataLossError(absl::StrCat("bloom filter checksum mismatch: stored ",
                                            absl::Hex(stored), ", computed ", absl::Hex(computed),
                                            ", ", n, " bytes"));
  }
  // Past the crc only a writer bug can fail these; still never trust them.
  const int k = static_cast<uint8_t>(data[n - 6]);
  if (k < 1 || k > kBloomMaxProbes) {
    return absl::DataLossError(absl::StrCat("bloom filter has bad probe count k=", k));
  }
  if (num_bytes == 0 || num_bytes % 8 != 0 || uint64_t{num_bytes} * 8 > kMaxBits) {
    return absl::DataLossError(absl::StrCat("bloom filter has bad bit array size ", num_bytes));
  }
  return BloomReader(data.data(), uint64_t{num_bytes} * 8, k);
}

namespace {
metrics::Counter& SkipCounter() {
  static metrics::Counter* counter = new metrics::Counter();  // never destroyed: readers on other threads
  return *counter;
}
}  // namespace

void BloomReader::CountSkip() { SkipCounter().Add(); }
uint64_t BloomReader::Skips() { return SkipCounter().Value(); }

bool BloomReader::MayContain(std::string_view key) const {
  const uint64_t h = BloomHash(key);
  uint32_t a = static_cast<uint32_t>(h);
  const uint32_t b = static_cast<uint32_t>(h >> 32);
  for (int j = 0; j < num_probes_; ++j) {
    const uint32_t bit = FastRange32(a, num_bits_);
    if ((bits_[bit >> 3] & (1 << (bit & 7))) == 0) return false;
    a += b;
  }
  return true;
}

}  // namespace basalt
