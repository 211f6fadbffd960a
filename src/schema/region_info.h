// What a region is, as the server records it: its table, its rows [start_key, end_key) and a
// region id, unique on the server (its creation time in ms, as HBase's). Kept in two places
// that say the same: the region's row in basalt:meta (meta.h), which is the authority, and a
// REGIONINFO file in the region's own directory (HBase's .regioninfo), from which meta can be
// rebuilt.
//
// Names (as HBase's): the region name is "<table>,<start key>,<id>" (the start key as HBase's
// Bytes.toStringBinary prints it, common/string_binary.h); the encoded name is the 16 lowercase hex digits of the FNV-1a
// 64-bit hash of the region name, and is the name of the region's directory,
// data_dir/tables/<table>/<encoded name>/. Region id 0 is a table made before regions existed:
// one region over every row whose directory is the table directory itself, and whose log
// records carry the table name.
//
// REGIONINFO layout (integers little-endian, varints as LevelDB):
//
//   format stamp (common/format_stamp.h: magic "BSLTRGNI", version 1, min_reader_version 1) |
//   lp table | lp start_key | lp end_key | varint64 id | u32 masked crc32c of everything before
//   (lp: varint32 length + bytes)
//
// Thread-compatible: plain functions on values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt::server {

inline constexpr char kRegionInfoFileName[] = "REGIONINFO";

// The files start-up repair knows by name: each table directory's own record, and where what
// the catalogue does not list is moved (data_dir/lost+found/).
inline constexpr char kTableInfoName[] = "TABLEINFO";
inline constexpr char kLostFoundDir[] = "lost+found";

struct RegionInfo {
  std::string table;
  std::string start_key;
  std::string end_key;  // empty: to the end of the key space
  uint64_t id = 0;

  std::string Name() const;
  std::string EncodedName() const;
  bool Contains(std::string_view row) const {
    return row >= start_key && (end_key.empty() || row < end_key);
  }
  bool operator==(const RegionInfo&) const = default;
};

std::string EncodeRegionInfo(const RegionInfo& info);
// `path` names the file in errors. DataLoss for any damage; FailedPrecondition for a newer format.
absl::StatusOr<RegionInfo> DecodeRegionInfo(std::string_view bytes, const std::string& path);

// The regions a table is created with: split keys (any order) cut the key space into
// regions [ "", k1 ), [ k1, k2 ), ..., [ kn, "" ). InvalidArgument for an empty or repeated key
// (as HBase's createTable).
absl::StatusOr<std::vector<RegionInfo>> RegionsFromSplitKeys(std::string_view table, std::vector<std::string> split_keys,
                                                             uint64_t first_id);

// Where a table's and a region's files are under a data directory (the names above):
// data_dir/tables/<table>, and its region's directory in it (a region from before regions, id 0:
// the table directory itself).
std::string TableDirIn(std::string_view data_dir, std::string_view table);
std::string RegionDirIn(std::string_view data_dir, const RegionInfo& info);
// The table of a region named in a log record ("table,start,id", or a table's name).
std::string TableOfRegionName(std::string_view region);

// Whether `regions` (sorted by start key) cover the key space once, with no gap or overlap.
// FailedPrecondition naming the first gap or overlap.
absl::Status CheckCoverage(std::string_view table, const std::vector<RegionInfo>& regions);

}  // namespace basalt::server
