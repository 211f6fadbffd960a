#include "storage/internal/block_format.h"

#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/coding.h"
#include "common/format_stamp.h"
#include "common/crc.h"
#include "common/status.h"
#include "storage/internal/compression.h"

namespace basalt {
namespace {

constexpr char kMagic[4][9] = {"DATABLK*", "BLOOMBLK", "IDXBLK**", "FILEINF*"};

uint32_t ChunkChecksum(ChecksumType t, const char* p, size_t n) {
  return t == ChecksumType::kCrc32 ? Crc32(p, n) : Crc32c(p, n);
}

std::atomic<uint64_t> checksum_failures{0};

bool ValidChecksumType(uint8_t t) { return t <= static_cast<uint8_t>(ChecksumType::kCrc32c); }

}  // namespace

uint64_t ChecksumFailures() { return checksum_failures.load(std::memory_order_relaxed); }

const char* BlockTypeName(BlockType t) {
  switch (t) {
    case BlockType::kData: return "data";
    case BlockType::kBloom: return "bloom";
    case BlockType::kIndex: return "index";
    case BlockType::kFileInfo: return "file-info";
  }
  return "unknown";
}

const char* BlockHeader::MagicOf(BlockType t) { return kMagic[static_cast<int>(t)]; }

void BlockHeader::EncodeTo(std::string* out) const {
  out->append(magic, 8);
  PutFixed32(out, on_disk_size_no_header);
  PutFixed32(out, uncompressed_size_no_header);
  out->push_back(static_cast<char>(checksum_type));
  PutFixed32(out, bytes_per_checksum);
  PutFixed32(out, on_disk_data_size_with_header);
  out->push_back(static_cast<char>(compression));
  out->push_back(static_cast<char>(encoding));
  out->push_back(static_cast<char>(reserved));
}

BlockHeader BlockHeader::DecodeFrom(const char* p) {
  BlockHeader h;
  std::memcpy(h.magic, p, 8);
  h.on_disk_size_no_header = DecodeFixed32(p + 8);
  h.uncompressed_size_no_header = DecodeFixed32(p + 12);
  h.checksum_type = static_cast<uint8_t>(p[16]);
  h.bytes_per_checksum = DecodeFixed32(p + 17);
  h.on_disk_data_size_with_header = DecodeFixed32(p + 21);
  h.compression = static_cast<uint8_t>(p[25]);
  h.encoding = static_cast<uint8_t>(p[26]);
  h.reserved = static_cast<uint8_t>(p[27]);
  return h;
}

size_t ChecksumBytes(ChecksumType t, uint32_t bpc, size_t data_size) {
  if (t == ChecksumType::kNull) return 0;
  return 4 * ((data_size + bpc - 1) / bpc);
}

absl::Status BuildBlock(BlockType type, std::string_view raw_payload, Compression compression,
                        DataBlockEncoding encoding, ChecksumType checksum, uint32_t bpc, std::string* scratch,
                        std::string* out) {
  if (bpc < 512 || bpc > (1u << 26)) return absl::InvalidArgumentError(absl::StrCat("bytes_per_checksum ", bpc, " out of range"));
  // Never write a block a reader would refuse (compression.h's limit): fail the flush loudly.
  if (raw_payload.size() > kMaxUncompressedBlockSize) {
    return absl::InvalidArgumentError(absl::StrCat(BlockTypeName(type), " block of ", raw_payload.size(),
                                                   " bytes exceeds the format's limit of ", kMaxUncompressedBlockSize));
  }
  std::string_view payload = raw_payload;
  Compression stored = Compression::kNone;
  if (compression != Compression::kNone) {
    BASALT_RETURN_IF_ERROR(CompressBlock(compression, raw_payload, scratch));
    if (scratch->size() < raw_payload.size() - raw_payload.size() / 8) {
      payload = *scratch;
      stored = compression;
    }
  }
  size_t data_size = kBlockHeaderSize + payload.size();
  size_t cks = ChecksumBytes(checksum, bpc, data_size);
  out->clear();
  out->reserve(data_size + cks);
  BlockHeader h;
  std::memcpy(h.magic, BlockHeader::MagicOf(type), 8);
  h.on_disk_size_no_header = static_cast<uint32_t>(payload.size() + cks);
  h.uncompressed_size_no_header = static_cast<uint32_t>(raw_payload.size());
  h.checksum_type = static_cast<uint8_t>(checksum);
  h.bytes_per_checksum = bpc;
  h.on_disk_data_size_with_header = static_cast<uint32_t>(data_size);
  h.compression = static_cast<uint8_t>(stored);
  h.encoding = static_cast<uint8_t>(type == BlockType::kData ? encoding : DataBlockEncoding::kNone);
  h.EncodeTo(out);
  out->append(payload);
  if (checksum != ChecksumType::kNull) {
    for (size_t off = 0; off < data_size; off += bpc) {
      size_t n = std::min<size_t>(bpc, data_size - off);
      PutFixed32(out, ChunkChecksum(checksum, out->data() + off, n));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyRawBlock(const BlockReadContext& ctx, const BlockHandle& h, BlockType type, std::string_view raw) {
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(absl::StrCat("corrupt ", BlockTypeName(type), " block in ", ctx.file->name(),
                                            " at offset ", h.offset, ": ", AV(what)));
  };
  if (raw.size() < kBlockHeaderSize) return bad(absl::StrCat("block of ", raw.size(), " bytes is shorter than its header"));
  const char* p = raw.data();
  const BlockHeader hdr = BlockHeader::DecodeFrom(p);
  if (std::memcmp(hdr.magic, BlockHeader::MagicOf(type), 8) != 0) return bad("bad block magic");
  const uint32_t on_disk_no_header = hdr.on_disk_size_no_header;
  const uint32_t uncompressed = hdr.uncompressed_size_no_header;
  const uint8_t ck = hdr.checksum_type;
  const uint32_t bpc = hdr.bytes_per_checksum;
  const uint32_t data_size = hdr.on_disk_data_size_with_header;
  const uint8_t comp = hdr.compression;
  const uint8_t enc = hdr.encoding;
  if (!ValidChecksumType(ck) || static_cast<ChecksumType>(ck) != ctx.checksum || bpc != ctx.bytes_per_checksum) {
    return bad(absl::StrCat("checksum type ", ck, "/", bpc, " differs from the file's ", static_cast<int>(ctx.checksum),
                            "/", ctx.bytes_per_checksum));
  }
  if (static_cast<uint64_t>(on_disk_no_header) + kBlockHeaderSize != raw.size() || data_size < kBlockHeaderSize ||
      data_size > raw.size() ||
      ChecksumBytes(ctx.checksum, bpc, data_size) != raw.size() - data_size) {
    return bad(absl::StrCat("sizes do not add up: on-disk ", on_disk_no_header, ", data ", data_size, ", block ",
                            raw.size()));
  }
  if (comp > static_cast<uint8_t>(Compression::kZlib) || hdr.reserved != 0 ||
      (comp == 0 && uncompressed != data_size - kBlockHeaderSize)) {
    return bad(absl::StrCat("bad compression ", comp, " or uncompressed size ", uncompressed));
  }
  uint8_t want_enc = type == BlockType::kData ? static_cast<uint8_t>(ctx.encoding) : 0;
  if (enc != want_enc) return bad(absl::StrCat("encoding ", enc, " differs from the file's ", want_enc));
  if (ctx.verify_checksums && ctx.checksum != ChecksumType::kNull) {
    const char* sums = p + data_size;
    for (size_t off = 0, chunk = 0; off < data_size; off += bpc, ++chunk) {
      size_t n = std::min<size_t>(bpc, data_size - off);
      uint32_t computed = ChunkChecksum(ctx.checksum, p + off, n);
      uint32_t stored = DecodeFixed32(sums + 4 * chunk);
      if (computed != stored) {
        checksum_failures.fetch_add(1, std::memory_order_relaxed);
        return bad(absl::StrFormat("%s checksum mismatch in chunk %d: stored 0x%08x, computed 0x%08x",
                                   ChecksumName(ctx.checksum), chunk, stored, computed));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadRawBlock(const BlockReadContext& ctx, const BlockHandle& h, BlockType type) {
  // Bounded by the file's own size (so a damaged handle cannot make us allocate more than the
  // file holds) and by the header's 32-bit sizes.
  if (h.size < kBlockHeaderSize || h.size > UINT32_MAX || h.offset > ctx.file->Size() ||
      h.size > ctx.file->Size() - h.offset) {
    return absl::DataLossError(absl::StrCat("bad ", BlockTypeName(type), " block handle in ", ctx.file->name(),
                                            ": offset ", h.offset, " size ", h.size, " file size ", ctx.file->Size()));
  }
  std::string raw(h.size, '\0');
  auto got = ctx.file->Read(h.offset, h.size, raw.data());
  if (!got.ok()) return got.status();
  BASALT_RETURN_IF_ERROR(VerifyRawBlock(ctx, h, type, raw));
  return raw;
}

absl::StatusOr<std::string> RawBlockPayload(const BlockReadContext& ctx, const BlockHandle& h, std::string_view raw) {
  const BlockHeader hdr = BlockHeader::DecodeFrom(raw.data());
  const uint32_t uncompressed = hdr.uncompressed_size_no_header;
  const uint32_t data_size = hdr.on_disk_data_size_with_header;
  const auto comp = static_cast<Compression>(hdr.compression);
  std::string_view payload = raw.substr(kBlockHeaderSize, data_size - kBlockHeaderSize);
  if (comp == Compression::kNone) return std::string(payload);
  std::string out;
  absl::Status s = UncompressBlock(comp, payload, uncompressed, &out);
  if (!s.ok()) {
    return absl::DataLossError(absl::StrCat("block in ", ctx.file->name(), " at offset ", h.offset, ": ", s.message()));
  }
  return out;
}

namespace {
constexpr std::string_view kTrailerMagic = "BSLTTRLF";
constexpr std::string_view kTrailerMagicV1 = "BSLTTRL1";  // version 1: the magic, u16 major, u16 minor
}  // namespace

std::string EncodeTrailer(const Trailer& t) {
  std::string s;
  AppendFormatStamp(&s, kTrailerMagic, t.version, t.min_reader_version);
  for (const BlockHandle* h : {&t.index, &t.bloom, &t.file_info}) {
    PutFixed64(&s, h->offset);
    PutFixed64(&s, h->size);
  }
  PutFixed64(&s, t.entries);
  s.push_back(static_cast<char>(t.checksum));
  s.push_back(static_cast<char>(t.bloom_type));
  s.push_back(static_cast<char>(t.encoding));
  s.push_back(static_cast<char>(t.compression));
  PutFixed32(&s, t.bytes_per_checksum);
  PutFixed32(&s, MaskCrc(Crc32c(s)));
  return s;
}

absl::StatusOr<Trailer> DecodeTrailer(std::string_view tail, const std::string& file) {
  Trailer t;
  std::string_view b;
  if (tail.size() >= kTrailerSize && HasFormatMagic(tail.substr(tail.size() - kTrailerSize), kTrailerMagic)) {
    b = tail.substr(tail.size() - kTrailerSize);
  } else if (tail.size() >= kTrailerSizeV1 &&
             HasFormatMagic(tail.substr(tail.size() - kTrailerSizeV1), kTrailerMagicV1)) {
    b = tail.substr(tail.size() - kTrailerSizeV1);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(file, " is not a Basalt block file (no trailer magic)"));
  }
  t.size = b.size();
  uint32_t stored = UnmaskCrc(DecodeFixed32(b.data() + b.size() - 4));
  uint32_t computed = Crc32c(b.data(), b.size() - 4);
  if (stored != computed) {
    return absl::DataLossError(absl::StrFormat("trailer checksum mismatch in %s: stored 0x%08x, computed 0x%08x",
                                               file, stored, computed));
  }
  const char* p;
  if (t.size == kTrailerSize) {
    BASALT_ASSIGN_OR_RETURN(FormatStamp stamp,
                            ReadFormatStamp(b, kTrailerMagic, kBlockFileVersion, absl::StrCat("block file ", file)));
    t.version = stamp.version;
    t.min_reader_version = stamp.min_reader_version;
    p = b.data() + kFormatStampSize;
  } else {
    const uint16_t major = DecodeFixed16(b.data() + 8);
    if (major != 1) {
      return absl::FailedPreconditionError(absl::StrCat("block file ", file, " has a version 1 trailer of major ",
                                                        major, "; this build reads major 1"));
    }
    t.version = t.min_reader_version = 1;
    p = b.data() + 12;
  }
  for (BlockHandle* h : {&t.index, &t.bloom, &t.file_info}) {
    h->offset = DecodeFixed64(p);
    h->size = DecodeFixed64(p + 8);
    p += 16;
  }
  t.entries = DecodeFixed64(p);
  p += 8;
  uint8_t ck = p[0], bl = p[1], enc = p[2], comp = p[3];
  t.bytes_per_checksum = DecodeFixed32(p + 4);
  if (ck > 2 || bl > 2 || enc > 3 || comp > 2 || t.bytes_per_checksum < 512 || t.bytes_per_checksum > (1u << 26)) {
    return absl::DataLossError(absl::StrCat("trailer of ", file, " has out-of-range settings"));
  }
  t.checksum = static_cast<ChecksumType>(ck);
  t.bloom_type = static_cast<BloomType>(bl);
  t.encoding = static_cast<DataBlockEncoding>(enc);
  t.compression = static_cast<Compression>(comp);
  return t;
}

}  // namespace basalt
