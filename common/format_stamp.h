// The stamp that begins every file Basalt persists (docs/FORMATS.md), the same way for each:
//
//   +----------+-------------+------------------------+
//   | magic[8] | version u32 | min_reader_version u32 |   16 bytes, little-endian
//   +----------+-------------+------------------------+
//
// `version` is the format the writer wrote; `min_reader_version` the oldest reader version that
// can still read it (a change old readers can skip keeps it low, RocksDB's format_version idea).
// A reader that knows versions up to K refuses a file whose min_reader_version is above K with
// FailedPrecondition naming the file and both numbers: a newer file is never misread, and never
// taken for damage. Files written before the stamp existed carry an older magic; their readers
// keep a path for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace basalt {

inline constexpr size_t kFormatStampSize = 16;

struct FormatStamp {
  uint32_t version = 0;
  uint32_t min_reader_version = 0;
};

// Appends the stamp. `magic` is 8 bytes.
void AppendFormatStamp(std::string* out, std::string_view magic, uint32_t version, uint32_t min_reader_version);

// Whether `bytes` begin with `magic`.
bool HasFormatMagic(std::string_view bytes, std::string_view magic);

// Reads the stamp at the start of `bytes` for a reader that knows versions up to
// `known_version`. `what` names the file in messages ("manifest d/MANIFEST"). DataLoss when the
// bytes are too short or the magic differs; FailedPrecondition when the file needs a newer reader.
absl::StatusOr<FormatStamp> ReadFormatStamp(std::string_view bytes, std::string_view magic, uint32_t known_version,
                                            std::string_view what);

}  // namespace basalt
