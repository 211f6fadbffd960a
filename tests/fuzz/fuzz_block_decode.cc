// libFuzzer target: data block payloads (storage/internal/block_codec.h) and block compression
// (storage/internal/compression.h).
//
// Input: | selector u8 | rest |
//   selector bit 7 clear: rest is a block payload in encoding (selector & 3).
//   selector bit 7 set:   rest = | uncompressed_size u32 | compressed stream |, compression SNAPPY
//                         when (selector & 1) == 0, else ZLIB; the size is masked to 20 bits
//                         unless bit 6 is set (then sizes above kMaxUncompressedBlockSize must be
//                         refused). A successful uncompression is then decoded as a payload in
//                         encoding ((selector >> 1) & 3).
//
// Checks beyond "no crash": decoding is OK or DataLoss; a decoded block's keys parse and are in
// cell order; the iterator yields exactly the decoded cells; Seek agrees with LowerBound and
// lands on the first cell >= target; re-encoding the cells in every encoding decodes to the same
// cells; uncompression yields exactly the stated size and survives a compress round trip.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/coding.h"
#include "storage/cell.h"
#include "storage/internal/block_codec.h"
#include "storage/internal/compression.h"
#include "tests/fuzz/fuzz_common.h"

namespace basalt::fuzz {
namespace {

constexpr DataBlockEncoding kEncodings[] = {DataBlockEncoding::kNone, DataBlockEncoding::kPrefix,
                                            DataBlockEncoding::kFastDiff, DataBlockEncoding::kRowIndex};

// Seeks `it` to target and checks it lands where LowerBound says, and that LowerBound is right.
void CheckSeek(const DecodedBlock& b, InternalIterator* it, std::string_view target) {
  const int n = b.num_cells();
  const int lb = b.LowerBound(target);
  FUZZ_CHECK(lb >= 0 && lb <= n, "LowerBound %d outside [0, %d]", lb, n);
  FUZZ_CHECK(lb == n || CompareFlatKeys(b.key(lb), target) >= 0, "LowerBound %d lands below target", lb);
  FUZZ_CHECK(lb == 0 || CompareFlatKeys(b.key(lb - 1), target) < 0, "LowerBound %d is not the first >= target", lb);
  it->Seek(target);
  FUZZ_CHECK(it->status().ok(), "block iterator status %s after Seek", CodeName(it->status()));
  if (lb == n) {
    FUZZ_CHECK(!it->Valid(), "Seek valid past the last cell (n=%d)", n);
  } else {
    FUZZ_CHECK(it->Valid(), "Seek invalid but LowerBound=%d of %d", lb, n);
    FUZZ_CHECK(it->key() == b.key(lb) && it->value() == b.value(lb), "Seek disagrees with LowerBound %d", lb);
  }
}

void CheckBlock(DataBlockEncoding e, std::string payload) {
  const size_t payload_size = payload.size();
  auto decoded = DecodeBlock(e, std::move(payload));
  if (!decoded.ok()) {
    FUZZ_CHECK(decoded.status().code() == absl::StatusCode::kDataLoss, "DecodeBlock(%s) returned %s",
               EncodingName(e), CodeName(decoded.status()));
    return;
  }
  const DecodedBlock& b = **decoded;
  const int n = b.num_cells();
  FUZZ_CHECK(b.encoding() == e, "decoded encoding differs");
  size_t decoded_size = 0;
  for (int i = 0; i < n; ++i) {
    KeyView kv;
    FUZZ_CHECK(ParseFlatKey(b.key(i), &kv), "cell %d has a malformed key", i);
    FUZZ_CHECK(i == 0 || CompareFlatKeys(b.key(i - 1), b.key(i)) <= 0, "cells %d and %d out of order", i - 1, i);
    decoded_size += 12 + b.key(i).size() + b.value(i).size();
  }
  FUZZ_CHECK(decoded_size <= kMaxDecodeExpansion * payload_size + kDecodeSlack,
             "decoded %zu bytes from a %zu byte payload, above the decode bound", decoded_size, payload_size);
  (void)b.MemoryUsage();

  auto it = NewBlockIterator(*decoded);
  it->SeekToFirst();
  int i = 0;
  for (; it->Valid(); it->Next(), ++i) {
    FUZZ_CHECK(i < n, "iterator yields more than %d cells", n);
    FUZZ_CHECK(it->key() == b.key(i) && it->value() == b.value(i), "iterator cell %d differs", i);
  }
  FUZZ_CHECK(i == n && it->status().ok(), "iterator yielded %d of %d cells", i, n);

  if (n > 0) {
    for (int k : {0, n / 2, n - 1}) {
      CheckSeek(b, it.get(), b.key(k));
      KeyView kv = ParseFlatKeyUnchecked(b.key(k));
      CheckSeek(b, it.get(), FirstKeyOfRow(kv.row));
      CheckSeek(b, it.get(), FirstKeyOfColumn(kv.row, kv.qualifier));
      // Just past the cell: same column, older timestamp.
      if (kv.timestamp > 0) CheckSeek(b, it.get(), MakeFlatKey(kv.row, kv.qualifier, kv.timestamp - 1, CellType::kPut));
    }
  }

  // Re-encode in every encoding: the builder must accept what the decoder accepted, and the
  // result must decode to the same cells.
  for (DataBlockEncoding e2 : kEncodings) {
    BlockBuilder builder(e2);
    for (int k = 0; k < n; ++k) builder.Add(b.key(k), b.value(k));
    FUZZ_CHECK(builder.num_cells() == n, "builder counted %d of %d cells", builder.num_cells(), n);
    const size_t estimate = builder.EstimatedSize();
    std::string p2 = builder.Finish();
    FUZZ_CHECK(p2.size() == estimate, "EstimatedSize %zu but Finish wrote %zu bytes (%s)", estimate, p2.size(),
               EncodingName(e2));
    auto d2 = DecodeBlock(e2, std::move(p2));
    FUZZ_CHECK(d2.ok(), "re-encoded %s block does not decode: %s", EncodingName(e2),
               std::string(d2.status().message()).c_str());
    FUZZ_CHECK((*d2)->num_cells() == n, "re-encoded %s block has %d of %d cells", EncodingName(e2),
               (*d2)->num_cells(), n);
    for (int k = 0; k < n; ++k) {
      FUZZ_CHECK((*d2)->key(k) == b.key(k) && (*d2)->value(k) == b.value(k), "re-encoded %s cell %d differs",
                 EncodingName(e2), k);
    }
  }
}

void CheckUncompress(Compression c, std::string_view in, size_t size, DataBlockEncoding then) {
  std::string out = "garbage";
  absl::Status s = UncompressBlock(c, in, size, &out);
  if (!s.ok()) {
    FUZZ_CHECK(s.code() == absl::StatusCode::kDataLoss, "UncompressBlock(%s) returned %s", CompressionName(c),
               CodeName(s));
    return;
  }
  FUZZ_CHECK(size <= kMaxUncompressedBlockSize, "UncompressBlock accepted size %zu above the limit", size);
  FUZZ_CHECK(out.size() == size, "UncompressBlock(%s) produced %zu bytes, header says %zu", CompressionName(c),
             out.size(), size);
  std::string again, round;
  absl::Status cs = CompressBlock(c, out, &again);
  FUZZ_CHECK(cs.ok(), "CompressBlock failed: %s", std::string(cs.message()).c_str());
  absl::Status us = UncompressBlock(c, again, out.size(), &round);
  FUZZ_CHECK(us.ok() && round == out, "compress round trip failed (%s)", CompressionName(c));
  CheckBlock(then, std::move(out));
}

}  // namespace
}  // namespace basalt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace basalt;
  using namespace basalt::fuzz;
  if (size < 1) return 0;
  const uint8_t sel = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((sel & 0x80) == 0) {
    CheckBlock(kEncodings[sel & 3], std::string(rest));
    return 0;
  }
  if (rest.size() < 4) return 0;
  size_t usize = DecodeFixed32(rest.data());
  if ((sel & 0x40) == 0) usize &= (1u << 20) - 1;
  Compression c = (sel & 1) == 0 ? Compression::kSnappy : Compression::kZlib;
  CheckUncompress(c, rest.substr(4), usize, kEncodings[(sel >> 1) & 3]);
  return 0;
}
