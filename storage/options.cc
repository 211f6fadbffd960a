#include "storage/options.h"

namespace basalt {

const char* EncodingName(DataBlockEncoding e) {
  switch (e) {
    case DataBlockEncoding::kNone: return "NONE";
    case DataBlockEncoding::kPrefix: return "PREFIX";
    case DataBlockEncoding::kFastDiff: return "FAST_DIFF";
    case DataBlockEncoding::kRowIndex: return "ROW_INDEX";
  }
  return "UNKNOWN";
}
const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "NONE";
    case Compression::kSnappy: return "SNAPPY";
    case Compression::kZlib: return "ZLIB";
  }
  return "UNKNOWN";
}
const char* ChecksumName(ChecksumType c) {
  switch (c) {
    case ChecksumType::kNull: return "NULL";
    case ChecksumType::kCrc32: return "CRC32";
    case ChecksumType::kCrc32c: return "CRC32C";
  }
  return "UNKNOWN";
}
const char* BloomName(BloomType b) {
  switch (b) {
    case BloomType::kNone: return "NONE";
    case BloomType::kRow: return "ROW";
    case BloomType::kRowCol: return "ROWCOL";
  }
  return "UNKNOWN";
}

}  // namespace basalt
