// HBase's names for tables and regions, as hbase:meta's rows, a call's RegionSpecifier and the
// client's region cache carry them, and the order of hbase:meta's rows (HBase's
// MetaCellComparator), which is not the bytes' order. The client recomputes a region's name from
// the RegionInfo it read in meta and sends it back, so ours must be byte for byte HBase's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace basalt::hbase {

// hbase:meta's one region, whose name is in HBase's old format (no MD5 part).
inline constexpr char kMetaTableName[] = "hbase:meta";
inline constexpr char kMetaRegionName[] = "hbase:meta,,1";
inline constexpr char kMetaEncodedName[] = "1588230740";

// A table's name as HBase writes it: the qualifier alone in the "default" namespace, else
// "namespace:qualifier".
std::string TableNameOf(std::string_view ns, std::string_view qualifier);

// A region's name: "<table>,<start key>,<region id>." + MD5 hex of what precedes the dot + ".".
std::string RegionNameOf(std::string_view table, std::string_view start_key, uint64_t region_id);
// The encoded name: the MD5 part of a region name (the text between its last two dots), or for
// an old-format name (hbase:meta's), HBase's number for it. Empty when `region_name` is neither.
std::string EncodedNameOf(std::string_view region_name);

// hbase:meta's row order (<0, 0, >0): by table (up to the first ','), then start key (up to the
// last ','), then the rest (the region id); a row without ',' (a table's state row) comes before
// every region row of its table.
int CompareMetaRows(std::string_view a, std::string_view b);

}  // namespace basalt::hbase
