#include "storage/internal/compression.h"

#include <snappy.h>
#include <zlib.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt {
namespace {

absl::Status Corrupt(Compression c, std::string_view what, size_t in_size, size_t expected) {
  return absl::DataLossError(absl::StrCat(CompressionName(c), " block: ", AV(what), " (compressed ", in_size,
                                          " bytes, expected ", expected, " bytes uncompressed)"));
}

absl::Status ZlibCompress(std::string_view in, std::string* out) {
  z_stream zs{};
  if (deflateInit(&zs, Z_DEFAULT_COMPRESSION) != Z_OK) return absl::InternalError("deflateInit failed");
  out->resize(deflateBound(&zs, static_cast<uLong>(in.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(out->size());
  int rc = deflate(&zs, Z_FINISH);
  size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    out->clear();
    return absl::InternalError(absl::StrCat("zlib deflate failed: ", rc));
  }
  out->resize(produced);
  return absl::OkStatus();
}

absl::Status ZlibUncompress(std::string_view in, size_t expected, std::string* out) {
  if (in.size() > UINT32_MAX) return Corrupt(Compression::kZlib, "input too large", in.size(), expected);
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return absl::InternalError("inflateInit failed");
  // One spare byte: a stream that decodes to more than `expected` fills it instead of stopping
  // exactly at the limit, so "too long" is told apart from "exactly right".
  out->resize(expected + 1);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(out->size());
  int rc = inflate(&zs, Z_FINISH);
  size_t produced = zs.total_out;
  size_t left_in = zs.avail_in;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    out->clear();
    const char* what = (rc == Z_DATA_ERROR)  ? "corrupt deflate stream"
                       : produced > expected ? "uncompressed data longer than expected"
                                             : "truncated deflate stream";
    return Corrupt(Compression::kZlib, absl::StrCat(what, ", inflate rc ", rc, ", ", produced, " bytes out"),
                   in.size(), expected);
  }
  if (produced != expected || left_in != 0) {
    out->clear();
    return Corrupt(Compression::kZlib,
                   absl::StrCat("stream decodes to ", produced, " bytes with ", left_in, " input bytes left over"),
                   in.size(), expected);
  }
  out->resize(expected);
  return absl::OkStatus();
}

}  // namespace

absl::Status CompressBlock(Compression c, std::string_view in, std::string* out) {
  if (in.size() > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("block of ", in.size(), " bytes is too large to compress"));
  }
  switch (c) {
    case Compression::kNone:
      out->assign(in.data(), in.size());
      return absl::OkStatus();
    case Compression::kSnappy:
      out->clear();
      snappy::Compress(in.data(), in.size(), out);
      return absl::OkStatus();
    case Compression::kZlib:
      return ZlibCompress(in, out);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown compression ", static_cast<int>(c)));
}

absl::Status UncompressBlock(Compression c, std::string_view in, size_t uncompressed_size, std::string* out) {
  out->clear();
  if (c != Compression::kNone && c != Compression::kSnappy && c != Compression::kZlib) {
    return absl::DataLossError(absl::StrCat("unknown compression ", static_cast<int>(c), " (compressed ", in.size(),
                                            " bytes, expected ", uncompressed_size, " bytes uncompressed)"));
  }
  if (uncompressed_size > kMaxUncompressedBlockSize) {
    return Corrupt(c, absl::StrCat("uncompressed size exceeds the limit of ", kMaxUncompressedBlockSize), in.size(),
                   uncompressed_size);
  }
  switch (c) {
    case Compression::kNone:
      if (in.size() != uncompressed_size) return Corrupt(c, "size mismatch", in.size(), uncompressed_size);
      out->assign(in.data(), in.size());
      return absl::OkStatus();
    case Compression::kSnappy: {
      size_t n = 0;
      if (!snappy::GetUncompressedLength(in.data(), in.size(), &n)) {
        return Corrupt(c, "unreadable length header", in.size(), uncompressed_size);
      }
      if (n != uncompressed_size) {
        return Corrupt(c, absl::StrCat("stream claims ", n, " bytes"), in.size(), uncompressed_size);
      }
      if (!snappy::IsValidCompressedBuffer(in.data(), in.size())) {
        return Corrupt(c, "corrupt snappy stream", in.size(), uncompressed_size);
      }
      out->resize(n);
      if (!snappy::RawUncompress(in.data(), in.size(), out->data())) {
        out->clear();
        return Corrupt(c, "snappy decode failed", in.size(), uncompressed_size);
      }
      return absl::OkStatus();
    }
    case Compression::kZlib:
      return ZlibUncompress(in, uncompressed_size, out);
  }
  return absl::OkStatus();  // unreachable: checked above
}

}  // namespace basalt
