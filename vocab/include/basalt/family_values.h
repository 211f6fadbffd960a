// The values a column family's enumerated settings take, in one table: the names the shell and
// the client accept and print (HBase's spelling), the number each travels as on the wire
// (basalt.proto) and the number the engine stores on disk (storage/options.h). The shell, the
// client library, the server and the engine all read this table, so adding a codec (ZSTD, LZ4)
// is a row here and its engine code, not an edit in every layer. Public and dependency-free.
#pragma once

#include <cstdint>
#include <string_view>

namespace basalt {

enum class FamilySetting : uint8_t { kEncoding, kCompression, kBloom, kChecksum };

struct FamilyValue {
  FamilySetting setting;
  std::string_view name;  // the first row of a (setting, wire) pair is the name printed
  int wire;               // basalt.proto's enum value
  uint8_t disk;           // the engine's enum value (stored in block files and manifests)
};

inline constexpr FamilyValue kFamilyValues[] = {
    {FamilySetting::kEncoding, "NONE", 0, 0},
    {FamilySetting::kEncoding, "PREFIX", 1, 1},
    {FamilySetting::kEncoding, "FAST_DIFF", 2, 2},
    {FamilySetting::kEncoding, "ROW_INDEX", 3, 3},
    {FamilySetting::kCompression, "NONE", 0, 0},
    {FamilySetting::kCompression, "SNAPPY", 1, 1},
    {FamilySetting::kCompression, "ZLIB", 2, 2},
    {FamilySetting::kCompression, "GZ", 2, 2},  // HBase's name for zlib: accepted, printed ZLIB
    {FamilySetting::kBloom, "NONE", 1, 0},
    {FamilySetting::kBloom, "ROW", 0, 1},  // wire 0: HBase's default
    {FamilySetting::kBloom, "ROWCOL", 2, 2},
    {FamilySetting::kChecksum, "NULL", 2, 0},
    {FamilySetting::kChecksum, "CRC32", 1, 1},
    {FamilySetting::kChecksum, "CRC32C", 0, 2},  // wire 0: the default
};

// The setting's HBase name: DATA_BLOCK_ENCODING, COMPRESSION, BLOOMFILTER, CHECKSUM_TYPE.
constexpr std::string_view FamilySettingName(FamilySetting s) {
  switch (s) {
    case FamilySetting::kEncoding: return "DATA_BLOCK_ENCODING";
    case FamilySetting::kCompression: return "COMPRESSION";
    case FamilySetting::kBloom: return "BLOOMFILTER";
    case FamilySetting::kChecksum: return "CHECKSUM_TYPE";
  }
  return "?";
}

// The row for a setting's value by name (ASCII case-insensitive), wire or disk number; nullptr
// when there is none.
constexpr const FamilyValue* FindFamilyValueByName(FamilySetting s, std::string_view name) {
  for (const FamilyValue& v : kFamilyValues) {
    if (v.setting != s || v.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      char a = name[i], b = v.name[i];
      if (a >= 'a' && a <= 'z') a = static_cast<char>(a - 'a' + 'A');
      same = a == b;
    }
    if (same) return &v;
  }
  return nullptr;
}
constexpr const FamilyValue* FindFamilyValueByWire(FamilySetting s, int wire) {
  for (const FamilyValue& v : kFamilyValues) {
    if (v.setting == s && v.wire == wire) return &v;
  }
  return nullptr;
}
constexpr const FamilyValue* FindFamilyValueByDisk(FamilySetting s, uint8_t disk) {
  for (const FamilyValue& v : kFamilyValues) {
    if (v.setting == s && v.disk == disk) return &v;
  }
  return nullptr;
}

}  // namespace basalt
