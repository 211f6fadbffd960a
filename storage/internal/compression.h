// Block compression: NONE, SNAPPY and ZLIB over a whole block payload. Stateless and
// thread-safe. The uncompressed size is recorded in the block header, so UncompressBlock checks
// it exactly and refuses sizes above kMaxUncompressedBlockSize (hostile headers must not make
// us allocate gigabytes).
//
// Stream formats:
//   SNAPPY: the raw Snappy format (snappy::Compress), which starts with a varint of the
//           uncompressed length; that length must equal the header's.
//   ZLIB:   the zlib format (RFC 1950: 2-byte header, raw deflate, Adler-32 trailer) at
//           Z_DEFAULT_COMPRESSION, one stream per block. The Adler-32 catches corruption that the
//           block checksum was not asked to verify.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "storage/options.h"

namespace basalt {

inline constexpr size_t kMaxUncompressedBlockSize = size_t{64} << 20;

// Compresses `in` with c into *out (replacing its contents). kNone copies. Fails only with
// InvalidArgument (unknown compression, input over 4 GiB) or Internal (codec failure).
absl::Status CompressBlock(Compression c, std::string_view in, std::string* out);

// Uncompresses `in` into *out (replacing its contents). `uncompressed_size` is the exact expected
// size (from the block header). A size mismatch, a decoder failure, trailing input or a size above
// kMaxUncompressedBlockSize is DataLoss naming the compression and the sizes. Never reads outside
// `in`; allocates at most uncompressed_size + 1 bytes.
absl::Status UncompressBlock(Compression c, std::string_view in, size_t uncompressed_size, std::string* out);

}  // namespace basalt
