#include "storage/internal/block_codec.h"


#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"
#include "storage/internal/compression.h"
#include "storage/cell.h"

namespace basalt {
namespace {

constexpr size_t kCellHeader = 8;   // | key_len u32 | value_len u32 |
constexpr size_t kKeyTail = 9;      // | timestamp i64 BE | type |
constexpr size_t kPerCellDecoded = kCellHeader + 4;  // header + one u32 offset

enum FastDiffFlag : uint8_t {
  kSameTimestamp = 0x01,
  kSameType = 0x02,
  kSameValueLength = 0x04,
  kSamePrefixLength = 0x08,
  kAllFlags = 0x0f,
};

size_t SharedPrefix(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i + 8 <= n) {
    uint64_t x, y;
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, b.data() + i, 8);
    if (x != y) return i + (__builtin_ctzll(x ^ y) >> 3);  // little-endian: lowest byte first
    i += 8;
  }
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// The row of a flat key, clamped to the key so a malformed key cannot read past it.
std::string_view RowOf(std::string_view key) {
  if (key.size() < 2) return {};
  size_t len = (static_cast<size_t>(static_cast<unsigned char>(key[0])) << 8) | static_cast<unsigned char>(key[1]);
  return key.substr(2, std::min(len, key.size() - 2));
}

int64_t DecodeBigEndian64(const char* p) { return static_cast<int64_t>(DecodeFixed64BE(p)); }
void EncodeBigEndian64(char* p, int64_t ts) { EncodeFixed64BE(p, static_cast<uint64_t>(ts)); }

void PutCellNone(std::string* dst, std::string_view key, std::string_view value) {
  size_t at = dst->size();
  dst->resize(at + kCellHeader + key.size() + value.size());
  char* p = dst->data() + at;
  EncodeFixed32(p, static_cast<uint32_t>(key.size()));
  EncodeFixed32(p + 4, static_cast<uint32_t>(value.size()));
  std::memcpy(p + kCellHeader, key.data(), key.size());
  if (!value.empty()) std::memcpy(p + kCellHeader + key.size(), value.data(), value.size());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BlockBuilder

BlockBuilder::BlockBuilder(DataBlockEncoding e) : encoding_(e) {}

void BlockBuilder::Reset() {
  buf_.clear();
  last_key_.clear();
  num_cells_ = 0;
  finished_ = false;
  decoded_size_ = 0;
  last_ts_ = 0;
  last_type_ = 0;
  last_value_len_ = 0;
  row_offsets_.clear();
}

size_t BlockBuilder::EstimatedSize() const {
  size_t n = buf_.size();
  if (encoding_ == DataBlockEncoding::kRowIndex) n += 4 * row_offsets_.size() + 4;
  return n;
}

bool BlockBuilder::SharingExceedsBound(size_t encoded, size_t decoded) const {
  return decoded_size_ + decoded > kMaxDecodeExpansion * (buf_.size() + encoded) + kDecodeSlack;
}

void BlockBuilder::Add(std::string_view key, std::string_view value) {
  assert(!finished_);
  assert(key.size() <= UINT32_MAX && value.size() <= UINT32_MAX);
#ifndef NDEBUG
  KeyView kv;
  assert(ParseFlatKey(key, &kv));
  assert(num_cells_ == 0 || CompareFlatKeys(last_key_, key) <= 0);
#endif
  switch (encoding_) {
    case DataBlockEncoding::kNone:
      PutCellNone(&buf_, key, value);
      break;
    case DataBlockEncoding::kRowIndex:
      if (num_cells_ == 0 || RowOf(key) != RowOf(last_key_)) row_offsets_.push_back(static_cast<uint32_t>(buf_.size()));
      PutCellNone(&buf_, key, value);
      break;
    case DataBlockEncoding::kPrefix:
      AddPrefix(key, value);
      break;
    case DataBlockEncoding::kFastDiff:
      AddFastDiff(key, value);
      break;
  }
  decoded_size_ += kPerCellDecoded + key.size() + value.size();
  last_key_.assign(key.data(), key.size());
  ++num_cells_;
}

void BlockBuilder::AddPrefix(std::string_view key, std::string_view value) {
  size_t shared = num_cells_ == 0 ? 0 : SharedPrefix(last_key_, key);
  auto encoded = [&](size_t s) {
    return VarintLength(s) + VarintLength(key.size() - s) + VarintLength(value.size()) + (key.size() - s) +
           value.size();
  };
  if (shared > 0 && SharingExceedsBound(encoded(shared), kPerCellDecoded + key.size() + value.size())) shared = 0;
  PutVarint64(&buf_, shared);
  PutVarint64(&buf_, key.size() - shared);
  PutVarint64(&buf_, value.size());
  buf_.append(key.data() + shared, key.size() - shared);
  buf_.append(value.data(), value.size());
}

void BlockBuilder::AddFastDiff(std::string_view key, std::string_view value) {
  // Keys are at least kKeyOverhead long (asserted in Add); guard anyway so release builds never
  // read before the key.
  if (key.size() < kKeyTail) {
    assert(false);
    return;
  }
  std::string_view prefix = key.substr(0, key.size() - kKeyTail);
  int64_t ts = DecodeBigEndian64(key.data() + prefix.size());
  uint8_t type = static_cast<uint8_t>(key.back());
  std::string_view last_prefix =
      num_cells_ == 0 ? std::string_view() : std::string_view(last_key_).substr(0, last_key_.size() - kKeyTail);

  uint8_t flags = 0;
  if (ts == last_ts_) flags |= kSameTimestamp;
  if (type == last_type_) flags |= kSameType;
  if (value.size() == last_value_len_) flags |= kSameValueLength;
  if (prefix.size() == last_prefix.size()) flags |= kSamePrefixLength;
  uint64_t ts_delta = ZigZag(static_cast<int64_t>(static_cast<uint64_t>(ts) - static_cast<uint64_t>(last_ts_)));

  size_t shared = SharedPrefix(last_prefix, prefix);
  auto encoded = [&](size_t s) {
    size_t n = 1 + VarintLength(s) + (prefix.size() - s) + value.size();
    if (!(flags & kSamePrefixLength)) n += VarintLength(prefix.size());
    if (!(flags & kSameValueLength)) n += VarintLength(value.size());
    if (!(flags & kSameType)) n += 1;
    if (!(flags & kSameTimestamp)) n += VarintLength(ts_delta);
    return n;
  };
  if (shared > 0 && SharingExceedsBound(encoded(shared), kPerCellDecoded + key.size() + value.size())) shared = 0;

  buf_.push_back(static_cast<char>(flags));
  PutVarint64(&buf_, shared);
  if (!(flags & kSamePrefixLength)) PutVarint64(&buf_, prefix.size());
  if (!(flags & kSameValueLength)) PutVarint64(&buf_, value.size());
  if (!(flags & kSameType)) buf_.push_back(static_cast<char>(type));
  if (!(flags & kSameTimestamp)) PutVarint64(&buf_, ts_delta);
  buf_.append(prefix.data() + shared, prefix.size() - shared);
  buf_.append(value.data(), value.size());
  last_ts_ = ts;
  last_type_ = type;
  last_value_len_ = value.size();
}

std::string BlockBuilder::Finish() {
  assert(!finished_);
  if (encoding_ == DataBlockEncoding::kRowIndex) {
    for (uint32_t off : row_offsets_) PutFixed32(&buf_, off);
    PutFixed32(&buf_, static_cast<uint32_t>(row_offsets_.size()));
  }
  finished_ = true;
  std::string out = std::move(buf_);
  buf_.clear();
  return out;
}

// ---------------------------------------------------------------------------------------------
// DecodedBlock

DecodedBlock::DecodedBlock(DataBlockEncoding e, std::string data, std::vector<uint32_t> offsets)
    : encoding_(e), data_(std::move(data)), offsets_(std::move(offsets)) {
  heads_.Build(offsets_.size(), [this](size_t i) { return ParseFlatKeyUnchecked(key(static_cast<int>(i))).row; });
}

int DecodedBlock::LowerBound(std::string_view target) const {
  return static_cast<int>(heads_.LowerBound(ParseFlatKeyUnchecked(target), [this](size_t i) {
    return ParseFlatKeyUnchecked(key(static_cast<int>(i)));
  }));
}

size_t DecodedBlock::MemoryUsage() const {
  return sizeof(*this) + data_.capacity() + offsets_.capacity() * sizeof(uint32_t) + heads_.MemoryUsage();
}

// ---------------------------------------------------------------------------------------------
// Decoding

namespace {

class Decoder {
 public:
  Decoder(DataBlockEncoding e, std::string_view payload) : e_(e), payload_(payload) {}

  absl::Status Corrupt(int cell, size_t offset, std::string_view what) const {
    return absl::DataLossError(absl::StrCat(EncodingName(e_), " data block: ", AV(what), " at cell ", cell,
                                            ", byte offset ", offset, " (payload ", payload_.size(), " bytes)"));
  }

  // Validates `key` (cell `i` at payload byte `off`) and its order after `prev` (empty for the
  // first cell; otherwise already validated).
  absl::Status CheckKey(std::string_view key, std::string_view prev, int i, size_t off) const {
    KeyView kv;
    if (!ParseFlatKey(key, &kv)) return Corrupt(i, off, absl::StrCat("malformed key of ", key.size(), " bytes"));
    if (i > 0 && CompareKeys(ParseFlatKeyUnchecked(prev), kv) > 0) return Corrupt(i, off, "key out of order");
    return absl::OkStatus();
  }

  // Cells in NONE layout in payload_[0, end). Appends each cell's offset. For ROW_INDEX, checks
  // the row starts against `row_index` (row_count u32 offsets).
  absl::Status ParseFlat(size_t end, std::vector<uint32_t>* offsets, const char* row_index, size_t row_count) const {
    const char* base = payload_.data();
    size_t pos = 0;
    size_t rows_seen = 0;
    std::string_view prev;
    int i = 0;
    while (pos < end) {
      if (end - pos < kCellHeader) return Corrupt(i, pos, "truncated cell header");
      size_t klen = DecodeFixed32(base + pos);
      size_t vlen = DecodeFixed32(base + pos + 4);
      size_t rem = end - pos - kCellHeader;
      if (klen > rem || vlen > rem - klen) {
        return Corrupt(i, pos, absl::StrCat("key length ", klen, " + value length ", vlen, " overrun the ", rem,
                                            " bytes left"));
      }
      std::string_view key(base + pos + kCellHeader, klen);
      BASALT_RETURN_IF_ERROR(CheckKey(key, prev, i, pos));
      if (row_index != nullptr && (i == 0 || RowOf(key) != RowOf(prev))) {
        if (rows_seen >= row_count) return Corrupt(i, pos, absl::StrCat("more rows than the index's ", row_count));
        uint32_t want = DecodeFixed32(row_index + 4 * rows_seen);
        if (want != pos) return Corrupt(i, pos, absl::StrCat("row index says row ", rows_seen, " starts at ", want));
        ++rows_seen;
      }
      offsets->push_back(static_cast<uint32_t>(pos));
      prev = key;
      pos += kCellHeader + klen + vlen;
      ++i;
    }
    if (row_index != nullptr && rows_seen != row_count) {
      return Corrupt(i, pos, absl::StrCat("row index has ", row_count, " rows, cells have ", rows_seen));
    }
    return absl::OkStatus();
  }

  // PREFIX or FAST_DIFF into NONE layout in *out, in two passes: the first validates every length
  // and sums the decoded size (refusing it above the expansion bound before anything is
  // allocated); the second allocates exactly that and writes the cells, validating keys.
  absl::Status Rebuild(std::string* out, std::vector<uint32_t>* offsets) const {
    size_t decoded = 0, cells = 0;
    BASALT_RETURN_IF_ERROR(Walk<false>(nullptr, nullptr, &decoded, &cells));
    out->resize(decoded - cells * 4);  // cells in NONE layout; the 4 bytes per cell are offsets
    offsets->reserve(cells);
    return Walk<true>(out, offsets, &decoded, &cells);
  }

 private:
  template <bool kWrite>
  absl::Status Walk(std::string* out, std::vector<uint32_t>* offsets, size_t* decoded_total, size_t* num_cells) const {
    const bool fast = e_ == DataBlockEncoding::kFastDiff;
    const char* const begin = payload_.data();
    const char* const limit = begin + payload_.size();
    // Also an absolute cap: a small payload must not decode to gigabytes (twice the largest block
    // a writer makes: compression.h's limit).
    const size_t max_decoded = std::min(kMaxDecodeExpansion * payload_.size() + kDecodeSlack,
                                        2 * kMaxUncompressedBlockSize);
    size_t decoded = 0;
    size_t at = 0;  // write position in *out
    // Previous cell: its key in *out (offset, length), timestamp, type, value length.
    size_t prev_key_at = 0, prev_key_len = 0;
    int64_t prev_ts = 0;
    uint8_t prev_type = 0;
    uint64_t prev_vlen = 0;
    const char* p = begin;
    int i = 0;
    for (; p < limit; ++i) {
      const size_t off = static_cast<size_t>(p - begin);
      uint8_t flags = 0;
      if (fast) {
        flags = static_cast<uint8_t>(*p++);
        if (flags & ~kAllFlags) return Corrupt(i, off, absl::StrCat("unknown flags 0x", absl::Hex(static_cast<int>(flags))));
      }
      uint64_t shared = 0, klen = 0, vlen = 0, plen = 0;
      int64_t ts = prev_ts;
      uint8_t type = prev_type;
      // For FAST_DIFF the shared bytes come from the previous prefix part.
      const size_t prev_share_len = fast ? (i == 0 ? 0 : prev_key_len - kKeyTail) : prev_key_len;
      if ((p = DecodeVarint64(p, limit, &shared)) == nullptr) return Corrupt(i, off, "bad shared length");
      if (shared > prev_share_len) {
        return Corrupt(i, off, absl::StrCat("shared length ", shared, " exceeds previous key's ", prev_share_len));
      }
      if (!fast) {
        uint64_t unshared;
        if ((p = DecodeVarint64(p, limit, &unshared)) == nullptr) return Corrupt(i, off, "bad unshared length");
        if ((p = DecodeVarint64(p, limit, &vlen)) == nullptr) return Corrupt(i, off, "bad value length");
        if (unshared > static_cast<uint64_t>(limit - p)) return Corrupt(i, off, "unshared key bytes overrun block");
        klen = shared + unshared;
      } else {
        if (flags & kSamePrefixLength) {
          plen = prev_share_len;
        } else if ((p = DecodeVarint64(p, limit, &plen)) == nullptr) {
          return Corrupt(i, off, "bad prefix length");
        }
        if (flags & kSameValueLength) {
          vlen = prev_vlen;
        } else if ((p = DecodeVarint64(p, limit, &vlen)) == nullptr) {
          return Corrupt(i, off, "bad value length");
        }
        if (!(flags & kSameType)) {
          if (p >= limit) return Corrupt(i, off, "truncated type");
          type = static_cast<uint8_t>(*p++);
        }
        if (!(flags & kSameTimestamp)) {
          uint64_t zz;
          if ((p = DecodeVarint64(p, limit, &zz)) == nullptr) return Corrupt(i, off, "bad timestamp delta");
          ts = static_cast<int64_t>(static_cast<uint64_t>(prev_ts) + static_cast<uint64_t>(UnZigZag(zz)));
        }
        if (plen < shared) return Corrupt(i, off, absl::StrCat("prefix length ", plen, " < shared ", shared));
        if (plen - shared > static_cast<uint64_t>(limit - p)) return Corrupt(i, off, "prefix bytes overrun block");
        klen = plen + kKeyTail;
      }
      const size_t unshared = (fast ? plen : klen) - shared;
      if (vlen > static_cast<uint64_t>(limit - p) - unshared) return Corrupt(i, off, "value overruns block");
      if (klen < kKeyOverhead) return Corrupt(i, off, absl::StrCat("key of ", klen, " bytes is too short"));
      decoded += kPerCellDecoded + klen + vlen;
      if (decoded > max_decoded) {
        return Corrupt(i, off, absl::StrCat("decoded size exceeds ", max_decoded, " bytes (", kMaxDecodeExpansion,
                                            "x the payload)"));
      }
      if constexpr (kWrite) {
        // Write | key_len | value_len | key | value | at `at` (sized by the first pass).
        char* o = out->data();
        char* q = o + at;
        EncodeFixed32(q, static_cast<uint32_t>(klen));
        EncodeFixed32(q + 4, static_cast<uint32_t>(vlen));
        q += kCellHeader;
        if (shared > 0) std::memcpy(q, o + prev_key_at, shared);  // disjoint: the previous cell
        q += shared;
        if (unshared > 0) std::memcpy(q, p, unshared);
        q += unshared;
        if (fast) {
          EncodeBigEndian64(q, ts);
          q[8] = static_cast<char>(type);
          q += kKeyTail;
        }
        if (vlen > 0) std::memcpy(q, p + unshared, vlen);
        std::string_view key(o + at + kCellHeader, klen);
        BASALT_RETURN_IF_ERROR(CheckKey(key, std::string_view(o + prev_key_at, prev_key_len), i, off));
        offsets->push_back(static_cast<uint32_t>(at));
        prev_key_at = at + kCellHeader;
      }
      at += kCellHeader + klen + vlen;
      p += unshared + vlen;
      prev_key_len = klen;
      prev_ts = ts;
      prev_type = type;
      prev_vlen = vlen;
    }
    if (at > UINT32_MAX) return Corrupt(i, payload_.size(), "decoded block larger than 4 GiB");
    *decoded_total = decoded;
    *num_cells = static_cast<size_t>(i);
    return absl::OkStatus();
  }

  DataBlockEncoding e_;
  std::string_view payload_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const DecodedBlock>> DecodeBlock(DataBlockEncoding e, std::string payload) {
  Decoder d(e, payload);
  if (payload.size() > UINT32_MAX) return d.Corrupt(0, 0, "payload larger than 4 GiB");
  std::vector<uint32_t> offsets;
  switch (e) {
    case DataBlockEncoding::kNone:
      BASALT_RETURN_IF_ERROR(d.ParseFlat(payload.size(), &offsets, nullptr, 0));
      break;
    case DataBlockEncoding::kRowIndex: {
      if (payload.size() < 4) return d.Corrupt(0, 0, "too short for the row count");
      size_t rows = DecodeFixed32(payload.data() + payload.size() - 4);
      if (rows > (payload.size() - 4) / 4) {
        return d.Corrupt(0, payload.size() - 4, absl::StrCat("row count ", rows, " does not fit the block"));
      }
      size_t end = payload.size() - 4 - 4 * rows;
      BASALT_RETURN_IF_ERROR(d.ParseFlat(end, &offsets, payload.data() + end, rows));
      break;
    }
    case DataBlockEncoding::kPrefix:
    case DataBlockEncoding::kFastDiff: {
      std::string out;
      BASALT_RETURN_IF_ERROR(d.Rebuild(&out, &offsets));
      offsets.shrink_to_fit();
      return std::shared_ptr<const DecodedBlock>(new DecodedBlock(e, std::move(out), std::move(offsets)));
    }
    default:
      return absl::DataLossError(absl::StrCat("unknown data block encoding ", static_cast<int>(e)));
  }
  offsets.shrink_to_fit();
  return std::shared_ptr<const DecodedBlock>(new DecodedBlock(e, std::move(payload), std::move(offsets)));
}

// ---------------------------------------------------------------------------------------------
// Iterator

namespace {

class BlockIterator final : public InternalIterator {
 public:
  explicit BlockIterator(std::shared_ptr<const DecodedBlock> block)
      : block_(std::move(block)), n_(block_->num_cells()), i_(n_) {}

  bool Valid() const override { return i_ < n_; }
  void SeekToFirst() override { Load(0); }
  void Seek(std::string_view target) override { Load(block_->LowerBound(target)); }
  void SeekBefore(std::string_view target) override {
    const int i = target.empty() ? n_ : block_->LowerBound(target);
    Load(i > 0 ? i - 1 : n_);
  }
  void Next() override {
    assert(Valid());
    Load(i_ + 1);
  }
  std::string_view key() const override { return key_; }
  std::string_view value() const override { return value_; }
  absl::Status status() const override { return absl::OkStatus(); }

 private:
  // Per-cell work on the scan path: one offset load and two length loads (DecodedBlock::key/value).
  void Load(int i) {
    i_ = i;
    if (i_ < n_) {
      key_ = block_->key(i_);
      value_ = std::string_view(key_.data() + key_.size(), DecodeFixed32(key_.data() - 4));
    }
  }

  std::shared_ptr<const DecodedBlock> block_;
  int n_;
  int i_;
  std::string_view key_, value_;
};

}  // namespace

std::unique_ptr<InternalIterator> NewBlockIterator(std::shared_ptr<const DecodedBlock> block) {
  return std::make_unique<BlockIterator>(std::move(block));
}

}  // namespace basalt
