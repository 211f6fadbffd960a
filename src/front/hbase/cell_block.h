// Cell blocks in HBase's KeyValueCodec (org.apache.hadoop.hbase.codec.KeyValueCodec, the
// client's default cell_block_codec_class): the cells of a call or an answer, after its
// message, each one a KeyValue without tags, big-endian throughout:
//
//   u32 length (= 8 + key length + value length) | u32 key length | u32 value length | key | value
//   key: u16 row length | row | u8 family length | family | qualifier | u64 timestamp | u8 type
//
// The qualifier's length is what the key leaves for it. A Multi's mutations send their cells
// here (MutationProto.associated_cell_count says how many are each one's), in order.
//
// KeyValueCodecWithTags (a replication source's codec, hbase.replication.rpc.codec) writes a cell
// with tags as the same KeyValue followed by | u16 tags length | tags |, counted in its length;
// a cell without tags is written as above. Both are read here; the tags (HBase's per-cell TTL,
// ACL and visibility labels) are passed over, as Basalt keeps none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt::hbase {

// HBase's KeyValue.Type codes.
enum class KeyValueType : uint8_t {
  kMinimum = 0,
  kPut = 4,
  kDelete = 8,
  kDeleteFamilyVersion = 10,
  kDeleteColumn = 12,
  kDeleteFamily = 14,
  kMaximum = 255,
};

// A cell of a block: views into the block's bytes.
struct BlockCell {
  std::string_view row;
  std::string_view family;
  std::string_view qualifier;
  int64_t timestamp = 0;
  KeyValueType type = KeyValueType::kPut;
  std::string_view value;
};

// Every cell of `block`, in order. InvalidArgument naming the cell (its index and offset) for a
// length that runs past the block or disagrees with the others, or a type HBase does not define.
absl::StatusOr<std::vector<BlockCell>> DecodeCellBlock(std::string_view block);

// Appends `cell` to *block. InvalidArgument for a row over 32767 bytes or a family over 127
// (the key's fields cannot say more).
absl::Status AppendCell(const BlockCell& cell, std::string* block);

}  // namespace basalt::hbase
