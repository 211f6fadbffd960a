// Data block payloads: the bytes of a data block before compression, in one of four encodings
// (storage/options.h DataBlockEncoding). A block holds cells in cell order (storage/cell.h), each
// a flat key and a value; equal keys are allowed and keep their order. All integers are little
// endian unless said otherwise; varints are LevelDB's (common/coding.h).
//
// NONE (HBase KeyValue-like):
//   cell*  where cell = | key_len u32 | value_len u32 | key | value |
//
// PREFIX (LevelDB-style prefix compression on the whole flat key):
//   cell*  where cell = | shared varint | unshared varint | value_len varint |
//                       | unshared key bytes | value |
//   key = previous key[0, shared) + unshared bytes; the first cell has shared = 0.
//
// FAST_DIFF (after HBase's FastDiffDeltaEncoder). A flat key is split into its prefix part
// P = row_len|row|qualifier and its tail = timestamp (i64 big endian) | type.
//   cell*  where cell = | flags u8 | shared varint | [P_len varint] | [value_len varint] |
//                       | [type u8] | [ts_delta varint] | unshared P bytes | value |
//   flags: 0x01 kSameTimestamp    timestamp equals the previous cell's; no ts_delta
//          0x02 kSameType         type equals the previous cell's; no type byte
//          0x04 kSameValueLength  value length equals the previous cell's; no value_len
//          0x08 kSamePrefixLength P_len equals the previous cell's; no P_len
//          other bits must be 0.
//   shared: bytes of P in common with the previous cell's P. ts_delta: ZigZag of
//   (timestamp - previous timestamp) in wrapping 64-bit arithmetic. Before the first cell the
//   "previous" state is: empty P, timestamp 0, type 0 (invalid, so kSameType is refused there),
//   value length 0.
//
// ROW_INDEX (after HBase's RowIndexCodecV1):
//   | cells as in NONE | row_offset u32 * row_count | row_count u32 |
//   row_offset[i] is the byte offset of the first cell of the i-th row (distinct row, in order).
//
// Decoding bound: a PREFIX or FAST_DIFF block may share key bytes between cells, so its decoded
// form can be larger than its payload. The decoder refuses blocks whose decoded size (cells in
// NONE layout plus 4 bytes of offset per cell) exceeds kMaxDecodeExpansion * payload +
// kDecodeSlack; the builder never writes such a block (it stores a cell's key unshared when
// sharing would cross the bound), so hostile payloads cannot make us allocate much more than
// they are long.
//
// Thread-safety: BlockBuilder is single-user. A DecodedBlock is immutable and shared between
// threads; each iterator is single-user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/coding.h"
#include "storage/internal/iterator.h"
#include "storage/internal/row_heads.h"
#include "storage/options.h"

namespace basalt {

inline constexpr size_t kMaxDecodeExpansion = 32;
inline constexpr size_t kDecodeSlack = 4096;

// Builds one data block payload. Keys must be well-formed flat keys added in cell order
// (non-decreasing by CompareFlatKeys); checked by assert in debug builds only.
class BlockBuilder {
 public:
  explicit BlockBuilder(DataBlockEncoding e);

  // Appends a cell. Not allowed between Finish() and Reset().
  void Add(std::string_view flat_key, std::string_view value);
  // Exact bytes of payload Finish() would return now (including ROW_INDEX's trailer).
  size_t EstimatedSize() const;
  int num_cells() const { return num_cells_; }
  bool empty() const { return num_cells_ == 0; }
  // Returns the payload. num_cells() stays as it was until Reset().
  std::string Finish();
  // Makes the builder empty and reusable.
  void Reset();

 private:
  void AddPrefix(std::string_view key, std::string_view value);
  void AddFastDiff(std::string_view key, std::string_view value);
  // True when sharing key bytes for a cell that adds `encoded` payload bytes would push the decoded
  // size above the decode bound.
  bool SharingExceedsBound(size_t encoded, size_t decoded) const;

  DataBlockEncoding encoding_;
  std::string buf_;
  std::string last_key_;
  int num_cells_ = 0;
  bool finished_ = false;
  size_t decoded_size_ = 0;  // the decoder's measure: sum of 12 + key + value
  // FAST_DIFF state.
  int64_t last_ts_ = 0;
  uint8_t last_type_ = 0;
  size_t last_value_len_ = 0;
  // ROW_INDEX state.
  std::vector<uint32_t> row_offsets_;
};

// A decoded, fully validated data block: cells in NONE layout with an offset per cell. For NONE
// and ROW_INDEX it owns the payload itself (no copy); for PREFIX and FAST_DIFF it owns the
// re-encoded cells. Immutable; share it with std::shared_ptr.
class DecodedBlock {
 public:
  int num_cells() const { return static_cast<int>(offsets_.size()); }
  // 0 <= i < num_cells().
  std::string_view key(int i) const {
    const char* p = data_.data() + offsets_[i];
    return {p + 8, DecodeFixed32(p)};
  }
  std::string_view value(int i) const {
    const char* p = data_.data() + offsets_[i];
    return {p + 8 + DecodeFixed32(p), DecodeFixed32(p + 4)};
  }
  // Index of the first cell whose key is >= target in cell order, or num_cells() if none.
  // `target` must be a well-formed flat key.
  int LowerBound(std::string_view target) const;
  DataBlockEncoding encoding() const { return encoding_; }
  // Bytes of memory held (for block cache charging).
  size_t MemoryUsage() const;

 private:
  friend absl::StatusOr<std::shared_ptr<const DecodedBlock>> DecodeBlock(DataBlockEncoding e, std::string payload);
  DecodedBlock(DataBlockEncoding e, std::string data, std::vector<uint32_t> offsets);

  DataBlockEncoding encoding_;
  std::string data_;
  std::vector<uint32_t> offsets_;  // start of each cell's | key_len | value_len | in data_
  RowHeads heads_;                 // each cell's row head, for LowerBound
};

// Decodes and validates every length, key (ParseFlatKey) and the key order. Anything malformed
// is DataLoss naming the encoding, the cell index and the byte offset. Never reads out of bounds;
// allocates at most a small multiple of payload.size() (see "Decoding bound" above).
absl::StatusOr<std::shared_ptr<const DecodedBlock>> DecodeBlock(DataBlockEncoding e, std::string payload);

// An iterator over a decoded block; it holds `block`. Seek is a binary search; Next reads two
// lengths and allocates nothing. status() is always OK (the block was validated).
std::unique_ptr<InternalIterator> NewBlockIterator(std::shared_ptr<const DecodedBlock> block);

}  // namespace basalt
