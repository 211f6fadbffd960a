// basalt:meta, the system table of regions (HBase's hbase:meta): one row per region of every
// user table, the authority on which regions a table has. It is an ordinary Region (its own
// log, flushes, block files) in data_dir/meta/, served read-only to clients like any table
// (`scan 'basalt:meta'`), so the cluster can later host it on any server.
//
// Row key: "<table>,<start key>,<region id>" (the start key as raw bytes; table names have no
// ','). Family "info", columns (values are bytes a person can read):
//   info:startkey, info:endkey  the region's rows [start, end) (raw bytes; end empty: to the end)
//   info:id                     the region id, decimal
//   info:encoded                the encoded name (the region's directory name)
//   info:state                  OPEN, CLOSED (table disabled, or region unassigned in an enabled
//                               table: a cluster's), FAILED_OPEN, or SPLIT (a parent
//                               its daughters replaced; kept, offline, while they still read its
//                               files, as HBase's split parents)
//   info:server                 host:port of the server serving it
//   info:splitA, info:splitB    a SPLIT parent's daughters (their row keys)
//   info:mergedinto             a MERGED parent's merged region (its row key); the merged
//   info:merge0, info:merge1    region's parents (kept, offline, until it no longer reads them)
// Writes that change which regions exist go in one batch: one log record, so a crash keeps all
// of it or none.
//
// Thread-safety: as Region's.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "src/schema/catalog_file.h"
#include "src/schema/region_info.h"
#include "storage/region.h"

namespace basalt::server {

inline constexpr char kMetaTableName[] = "basalt:meta";
inline constexpr char kMetaFamily[] = "info";

// The descriptor of meta's one region.
RegionDescriptor MetaDescriptor();

// basalt:acl, the system table of permissions (HBase's hbase:acl; src/security/access_control.h
// says its rows): one region in data_dir/acl/, kept beside meta by the same servers, read-only
// to clients (it changes through the Admin service's Grant and Revoke).
inline constexpr char kAclTableName[] = "basalt:acl";
inline constexpr char kAclFamily[] = "l";
RegionDescriptor AclDescriptor();

// basalt:quota, the system table of quotas (HBase's hbase:quota; src/security/quotas.h says its
// rows): one region in data_dir/quota/, kept as basalt:acl is, changed through SetQuota.
inline constexpr char kQuotaTableName[] = "basalt:quota";
inline constexpr char kQuotaFamily[] = "q";
RegionDescriptor QuotaDescriptor();

// basalt:meta, basalt:acl or basalt:quota.
inline bool IsSystemTable(std::string_view name) {
  return name == kMetaTableName || name == kAclTableName || name == kQuotaTableName;
}

// A table named in a call that reads or administers it: a legal user table name, or a system
// table's (basalt:meta, basalt:acl, basalt:quota), which ValidateTableName refuses since no one may create one.
inline absl::Status ValidateTableRef(std::string_view name) {
  return IsSystemTable(name) ? absl::OkStatus() : ValidateTableName(name);
}

std::string MetaRowKey(const RegionInfo& info);
// The row recording `info` with `state` and `server`.
RowMutation MetaPut(const RegionInfo& info, std::string_view state, std::string_view server);
inline constexpr char kSplitState[] = "SPLIT";
inline constexpr char kMergedState[] = "MERGED";
// The rows of a split, in one batch (the split's commit): the parent SPLIT, naming its
// daughters, and the daughters with `state`.
std::vector<RowMutation> MetaSplit(const RegionInfo& parent, const RegionInfo& a, const RegionInfo& b,
                                   std::string_view state, std::string_view server);
// The rows of a merge, in one batch (its commit): both parents MERGED, naming the merged region
// (info:mergedinto), and the merged region with `state`, naming them (info:merge0, info:merge1,
// as HBase's merge qualifiers).
std::vector<RowMutation> MetaMerge(const RegionInfo& a, const RegionInfo& b, const RegionInfo& merged,
                                   std::string_view state, std::string_view server);
// Removes the row of `info`.
RowMutation MetaDelete(const RegionInfo& info);

// Every region meta records, by table, each table's regions sorted by start key. DataLoss for a
// row that does not decode. Split and merged parents are not among them: with `retired` given,
// they go there. With `closed` given, the encoded names of the regions recorded CLOSED go there.
absl::StatusOr<std::map<std::string, std::vector<RegionInfo>>> LoadMeta(
    Region* meta, std::map<std::string, std::vector<RegionInfo>>* retired = nullptr,
    std::set<std::string>* closed = nullptr);
inline constexpr char kClosedState[] = "CLOSED";

}  // namespace basalt::server
