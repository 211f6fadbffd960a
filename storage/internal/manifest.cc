#include "storage/internal/manifest.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/format_stamp.h"
#include "common/crc.h"
#include "common/status.h"

namespace basalt {

namespace {
constexpr std::string_view kMagic = "BSLTMANF";
constexpr std::string_view kMagicV1 = "BSLTMAN1";  // version 1: the magic alone, no stamp
}

std::string EncodeManifest(const Manifest& m) {
  std::string s;
  AppendFormatStamp(&s, kMagic, kManifestVersion, /*min_reader_version=*/kManifestVersion);
  PutVarint64(&s, m.next_file_number);
  PutVarint64(&s, m.flushed_seq);
  PutVarint32(&s, static_cast<uint32_t>(m.files.size()));
  for (const auto& [family, files] : m.files) {
    PutLengthPrefixed(&s, family);
    PutVarint32(&s, static_cast<uint32_t>(files.size()));
    for (uint64_t f : files) PutVarint64(&s, f);
  }
  PutFixed32(&s, MaskCrc(Crc32c(s)));
  return s;
}

absl::StatusOr<Manifest> DecodeManifest(std::string_view b, const std::string& file) {
  auto bad = [&](std::string_view why) {
    return absl::DataLossError(absl::StrCat("corrupt manifest ", file, ": ", AV(why)));
  };
  size_t header = 8;  // version 1
  if (HasFormatMagic(b, kMagic)) {
    header = kFormatStampSize;
  } else if (!HasFormatMagic(b, kMagicV1)) {
    return bad("bad magic");
  }
  if (b.size() < header + 4) return bad("too short");
  // Every version ends with the checksum of all before it, so damage (a flipped stamp byte too)
  // is told apart from a newer format.
  uint32_t stored = UnmaskCrc(DecodeFixed32(b.data() + b.size() - 4));
  if (stored != Crc32c(b.data(), b.size() - 4)) return bad("checksum mismatch");
  if (header == kFormatStampSize) {
    BASALT_RETURN_IF_ERROR(ReadFormatStamp(b, kMagic, kManifestVersion, absl::StrCat("manifest ", file)).status());
  }
  std::string_view in = b.substr(header, b.size() - header - 4);
  Manifest m;
  uint32_t nfam;
  if (!GetVarint64(&in, &m.next_file_number) || !GetVarint64(&in, &m.flushed_seq) || !GetVarint32(&in, &nfam)) {
    return bad("truncated header");
  }
  for (uint32_t i = 0; i < nfam; ++i) {
    std::string_view name;
    uint32_t n;
    if (!GetLengthPrefixed(&in, &name) || !GetVarint32(&in, &n) || n > in.size()) return bad("truncated family");
    auto& files = m.files[std::string(name)];
    for (uint32_t j = 0; j < n; ++j) {
      uint64_t f;
      if (!GetVarint64(&in, &f) || f >= m.next_file_number) return bad("bad file number");
      files.push_back(f);
    }
  }
  if (!in.empty()) return bad("trailing bytes");
  return m;
}

}  // namespace basalt
