#include "common/format_stamp.h"

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"

namespace basalt {

void AppendFormatStamp(std::string* out, std::string_view magic, uint32_t version, uint32_t min_reader_version) {
  out->append(magic.data(), 8);
  PutFixed32(out, version);
  PutFixed32(out, min_reader_version);
}

bool HasFormatMagic(std::string_view bytes, std::string_view magic) {
  return bytes.size() >= 8 && bytes.substr(0, 8) == magic.substr(0, 8);
}

absl::StatusOr<FormatStamp> ReadFormatStamp(std::string_view bytes, std::string_view magic, uint32_t known_version,
                                            std::string_view what) {
  if (bytes.size() < kFormatStampSize) {
    return absl::DataLossError(absl::StrCat(AV(what), ": ", bytes.size(), " bytes, shorter than its format stamp"));
  }
  if (!HasFormatMagic(bytes, magic)) return absl::DataLossError(absl::StrCat(AV(what), ": bad magic"));
  FormatStamp s;
  s.version = DecodeFixed32(bytes.data() + 8);
  s.min_reader_version = DecodeFixed32(bytes.data() + 12);
  if (s.min_reader_version > known_version) {
    return absl::FailedPreconditionError(absl::StrCat(AV(what), " has format version ", s.version,
                                                      " and needs a reader of version ", s.min_reader_version,
                                                      "; this build reads up to version ", known_version,
                                                      " (it was written by a newer Basalt)"));
  }
  return s;
}

}  // namespace basalt
