// On-disk layout of a block file (docs/DESIGN.md, §3, after HBase's HFile v3 and RocksDB's format
// versions). Background: A. Sharma, "Saving CPU! Using Native Hadoop Libraries for CRC
// computation in HBase" (Apache HBase blog, 2015) on HBase's inline block checksums.
//
//   [data block]* [bloom block]? [index block] [file info block] [trailer: 84 bytes]
//
// Every block is self-describing and carries inline checksums:
//
//   +-------------------------------+  offset
//   | magic[8]    block type        |  0
//   | u32 on_disk_size_no_header    |  8   payload + checksum bytes
//   | u32 uncompressed_size_no_hdr  |  12  payload after uncompression
//   | u8  checksum_type             |  16  ChecksumType
//   | u32 bytes_per_checksum        |  17
//   | u32 on_disk_data_size_w_header|  21  header + payload (what the checksums cover)
//   | u8  compression               |  25  as stored: kNone when compression did not pay
//   | u8  encoding                  |  26  data blocks: the file's DataBlockEncoding; else 0
//   | u8  reserved (0)              |  27
//   +-------------------------------+  28 = kBlockHeaderSize
//   | payload (encoded, compressed) |
//   +-------------------------------+
//   | u32 checksum per chunk        |  one per bytes_per_checksum chunk of header+payload;
//   +-------------------------------+  none for kNull
//
// Trailer (84 bytes, at the end of the file; all integers little-endian):
//   format stamp (common/format_stamp.h: magic "BSLTTRLF", u32 version 2,
//   u32 min_reader_version 2) | u64 index offset | u64 index size | u64 bloom offset |
//   u64 bloom size | u64 file-info offset | u64 file-info size | u64 entries |
//   u8 checksum type | u8 bloom type | u8 encoding | u8 compression | u32 bytes per checksum |
//   u32 masked CRC32C of everything before it
// A reader refuses a trailer needing a newer reader (FailedPrecondition). Version 1 trailers
// (80 bytes: magic "BSLTTRL1", u16 major 1, u16 minor, then the same fields) are still read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/env.h"
#include "storage/options.h"

namespace basalt {

inline constexpr size_t kBlockHeaderSize = 28;
inline constexpr size_t kTrailerSize = 84;    // version 2, written now
inline constexpr size_t kTrailerSizeV1 = 80;  // version 1, still read
inline constexpr uint32_t kBlockFileVersion = 2;

enum class BlockType : uint8_t { kData, kBloom, kIndex, kFileInfo };
const char* BlockTypeName(BlockType t);

// A block's header, as drawn above. Raw fields: validating them is the reader's job
// (VerifyRawBlock), so a damaged header decodes and is then refused with a reason.
struct BlockHeader {
  char magic[8] = {};
  uint32_t on_disk_size_no_header = 0;  // payload + checksum bytes
  uint32_t uncompressed_size_no_header = 0;
  uint8_t checksum_type = 0;
  uint32_t bytes_per_checksum = 0;
  uint32_t on_disk_data_size_with_header = 0;  // what the checksums cover
  uint8_t compression = 0;
  uint8_t encoding = 0;
  uint8_t reserved = 0;

  // The magic of a block of type `t`.
  static const char* MagicOf(BlockType t);
  // Appends the kBlockHeaderSize bytes.
  void EncodeTo(std::string* out) const;
  // The kBlockHeaderSize bytes at `p`.
  static BlockHeader DecodeFrom(const char* p);
};

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;  // whole block on disk: header, payload, checksums
};

struct Trailer {
  uint32_t version = kBlockFileVersion;
  uint32_t min_reader_version = kBlockFileVersion;
  size_t size = kTrailerSize;  // the trailer's bytes on disk (decoded: 84, or 80 for version 1)
  BlockHandle index, bloom, file_info;
  uint64_t entries = 0;
  ChecksumType checksum = ChecksumType::kCrc32c;
  BloomType bloom_type = BloomType::kNone;
  DataBlockEncoding encoding = DataBlockEncoding::kNone;
  Compression compression = Compression::kNone;
  uint32_t bytes_per_checksum = 16 * 1024;
};

std::string EncodeTrailer(const Trailer& t);
// Decodes the trailer from `tail`, the file's last kTrailerSize bytes (fewer when the file is
// shorter); Trailer::size says how many of them it took. InvalidArgument for a file that is not
// a block file; FailedPrecondition for one needing a newer reader; DataLoss for a damaged
// trailer. `file` names the file in messages.
absl::StatusOr<Trailer> DecodeTrailer(std::string_view tail, const std::string& file);

// Bytes of checksums for `data_size` bytes of header+payload.
size_t ChecksumBytes(ChecksumType t, uint32_t bytes_per_checksum, size_t data_size);

// Builds a complete on-disk block: header, payload (compressed with `compression` unless that
// saves less than 1/8, RocksDB's rule), checksums. Returns the bytes to append.
absl::Status BuildBlock(BlockType type, std::string_view raw_payload, Compression compression,
                        DataBlockEncoding encoding, ChecksumType checksum, uint32_t bytes_per_checksum,
                        std::string* scratch, std::string* out);

// What a reader expects of every block of one file.
struct BlockReadContext {
  const RandomAccessFile* file;
  ChecksumType checksum;
  uint32_t bytes_per_checksum;
  DataBlockEncoding encoding;
  bool verify_checksums;
};

// Reads the raw on-disk bytes of a block and verifies header and checksums. DataLoss (naming
// file, block type, offset, and for checksums the chunk, stored and computed values) when
// anything is wrong; the bytes are then never used.
absl::StatusOr<std::string> ReadRawBlock(const BlockReadContext& ctx, const BlockHandle& h, BlockType type);
// Verifies an already-read raw block (as ReadRawBlock does after reading).
absl::Status VerifyRawBlock(const BlockReadContext& ctx, const BlockHandle& h, BlockType type, std::string_view raw);
// Checksum mismatches seen by this process (every one also fails its read with DataLoss).
uint64_t ChecksumFailures();

// Uncompresses a verified raw block's payload.
absl::StatusOr<std::string> RawBlockPayload(const BlockReadContext& ctx, const BlockHandle& h, std::string_view raw);

}  // namespace basalt
