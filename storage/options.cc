#include "storage/options.h"

#include "absl/strings/str_cat.h"
#include "basalt/family_values.h"

namespace basalt {

namespace {
// The names of basalt/family_values.h, by the engine's (on-disk) number.
const char* DiskName(FamilySetting s, uint8_t disk) {
  const FamilyValue* v = FindFamilyValueByDisk(s, disk);
  return v == nullptr ? "UNKNOWN" : v->name.data();  // the table's names are literals
}
}  // namespace

const char* EncodingName(DataBlockEncoding e) { return DiskName(FamilySetting::kEncoding, static_cast<uint8_t>(e)); }
const char* CompressionName(Compression c) { return DiskName(FamilySetting::kCompression, static_cast<uint8_t>(c)); }
const char* ChecksumName(ChecksumType c) { return DiskName(FamilySetting::kChecksum, static_cast<uint8_t>(c)); }
const char* BloomName(BloomType b) { return DiskName(FamilySetting::kBloom, static_cast<uint8_t>(b)); }

absl::Status ValidateFamily(const FamilyOptions& f) {
  auto bad = [&](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("column family '", f.name, "': ", absl::string_view(what.data(), what.size())));
  };
  if (f.name.empty()) return absl::InvalidArgumentError("column family name is empty");
  if (f.name.size() > 200) return bad("name longer than 200 bytes");
  for (char ch : f.name) {
    const auto c = static_cast<unsigned char>(ch);  // bytes >= 0x80 are not control characters
    if (c == ':' || c < 0x20 || c == 0x7f) return bad("name has ':' or a control character");
  }
  if (f.max_versions < 1) return bad(absl::StrCat("VERSIONS ", f.max_versions, " must be at least 1"));
  if (f.min_versions < 0 || f.min_versions > f.max_versions) {
    return bad(absl::StrCat("MIN_VERSIONS ", f.min_versions, " must be between 0 and VERSIONS ", f.max_versions));
  }
  if (f.ttl_ms < 0) return bad(absl::StrCat("TTL ", f.ttl_ms, " is negative"));
  if (f.block_size < 64 || f.block_size > (16u << 20)) return bad(absl::StrCat("BLOCKSIZE ", f.block_size, " not in [64, 16 MiB]"));
  if (f.bytes_per_checksum < 512 || f.bytes_per_checksum > (16u << 20)) {
    return bad(absl::StrCat("BYTES_PER_CHECKSUM ", f.bytes_per_checksum, " not in [512, 16 MiB]"));
  }
  if (static_cast<uint8_t>(f.encoding) > 3) return bad("unknown DATA_BLOCK_ENCODING");
  if (static_cast<uint8_t>(f.compression) > 2) return bad("unknown COMPRESSION");
  if (static_cast<uint8_t>(f.bloom) > 2) return bad("unknown BLOOMFILTER");
  if (static_cast<uint8_t>(f.checksum) > 2) return bad("unknown CHECKSUM_TYPE");
  return absl::OkStatus();
}

}  // namespace basalt
