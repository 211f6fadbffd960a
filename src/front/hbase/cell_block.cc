#include "src/front/hbase/cell_block.h"

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"

namespace basalt::hbase {
namespace {

uint32_t U32(const char* p) { return __builtin_bswap32(DecodeFixed32(p)); }
uint16_t U16(const char* p) { return __builtin_bswap16(DecodeFixed16(p)); }
void PutU32(std::string* out, uint32_t v) { PutFixed32(out, __builtin_bswap32(v)); }
void PutU16(std::string* out, uint16_t v) { PutFixed16(out, __builtin_bswap16(v)); }

bool KnownType(uint8_t t) { return t == 0 || t == 4 || t == 8 || t == 10 || t == 12 || t == 14 || t == 255; }

// The fixed bytes of a key besides row, family and qualifier: the row's length (2), the
// family's (1), the timestamp (8) and the type (1).
constexpr uint32_t kKeyFixedBytes = 2 + 1 + 8 + 1;

}  // namespace

absl::StatusOr<std::vector<BlockCell>> DecodeCellBlock(std::string_view block) {
  std::vector<BlockCell> cells;
  size_t at = 0;
  while (at < block.size()) {
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed cell block: cell ", cells.size(), " at byte ", at, ": ", AV(why)));
    };
    if (block.size() - at < 12) return bad("shorter than its three lengths");
    const char* p = block.data() + at;
    const uint32_t length = U32(p), key_length = U32(p + 4), value_length = U32(p + 8);
    const uint64_t kv_length = uint64_t{key_length} + value_length + 8;
    // (Longer than its KeyValue: its tags follow the value, KeyValueCodecWithTags.)
    if (length != kv_length && length < kv_length + 2) return bad("its lengths disagree");
    if (length > block.size() - at - 4) return bad("it runs past the block");
    if (length != kv_length && kv_length + 2 + U16(p + 4 + kv_length) != length) return bad("its lengths disagree");
    if (key_length < kKeyFixedBytes) return bad("its key is too short");
    const char* key = p + 12;
    const uint16_t row_length = U16(key);
    if (uint64_t{row_length} + kKeyFixedBytes > key_length) return bad("its row runs past its key");
    const uint8_t family_length = static_cast<uint8_t>(key[2 + row_length]);
    if (uint64_t{row_length} + family_length + kKeyFixedBytes > key_length) return bad("its family runs past its key");
    BlockCell c;
    c.row = std::string_view(key + 2, row_length);
    c.family = std::string_view(key + 3 + row_length, family_length);
    c.qualifier = std::string_view(key + 3 + row_length + family_length, key_length - kKeyFixedBytes - row_length - family_length);
    const char* tail = key + key_length - 9;
    c.timestamp = static_cast<int64_t>(DecodeFixed64BE(tail));
    const uint8_t type = static_cast<uint8_t>(tail[8]);
    if (!KnownType(type)) return bad(absl::StrCat("type ", type, " is not one of HBase's"));
    c.type = static_cast<KeyValueType>(type);
    c.value = std::string_view(key + key_length, value_length);
    cells.push_back(c);
    at += 4 + length;
  }
  return cells;
}

absl::Status AppendCell(const BlockCell& c, std::string* block) {
  if (c.row.size() > 32767) return absl::InvalidArgumentError(absl::StrCat("a row of ", c.row.size(), " bytes (HBase's limit is 32767)"));
  if (c.family.size() > 127) return absl::InvalidArgumentError(absl::StrCat("a family of ", c.family.size(), " bytes (HBase's limit is 127)"));
  const uint64_t key_length = kKeyFixedBytes + c.row.size() + c.family.size() + c.qualifier.size();
  const uint64_t length = 8 + key_length + c.value.size();
  if (length > 0x7fffffff) return absl::InvalidArgumentError(absl::StrCat("a cell of ", length, " bytes"));
  PutU32(block, static_cast<uint32_t>(length));
  PutU32(block, static_cast<uint32_t>(key_length));
  PutU32(block, static_cast<uint32_t>(c.value.size()));
  PutU16(block, static_cast<uint16_t>(c.row.size()));
  block->append(c.row);
  block->push_back(static_cast<char>(c.family.size()));
  block->append(c.family);
  block->append(c.qualifier);
  char ts[8];
  EncodeFixed64BE(ts, static_cast<uint64_t>(c.timestamp));
  block->append(ts, 8);
  block->push_back(static_cast<char>(c.type));
  block->append(c.value);
  return absl::OkStatus();
}

}  // namespace basalt::hbase
