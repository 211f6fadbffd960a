// hbase:meta as HBase's clients read it, made on each read from the regions Basalt's AdminService
// lists (never kept, so never a second copy of basalt:meta to go stale): a table's state row (the
// bare TableState message) and one row per region named as HBase names it ("table,start,id." +
// MD5 + "."), with info:regioninfo ("PBUF" + RegionInfo), info:server, info:serverstartcode,
// info:seqnumDuringOpen, info:sn and info:state, in HBase's meta order. Where a region serves is
// the ServerDirectory's answer; a region not open on a server with an HBase port has no server
// cells, as HBase's meta has none for a region in transition (the client waits and looks again).
//
// On a standalone server and a master the AdminService lists every region, and this is hbase:meta
// itself (ClientService serves its Get and Scan); on a region server it lists the regions open
// there, and AdminService's GetRegionInfo and GetOnlineRegion describe them through it.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/hbase/hbase_client.pb.h"
#include "src/front/hbase/hbase_service.h"
#include "src/front/hbase/server_directory.h"
#include "src/services/service.h"

namespace basalt::hbase {

class MetaTable {
 public:
  struct Row {
    std::string key;
    Result result;
  };

  // Both must outlive the table.
  MetaTable(server::AdminService* admin, ServerDirectory* directory) : admin_(admin), directory_(directory) {}

  // The rows for `only_table` (Basalt's name; empty: every table), in meta's order.
  absl::StatusOr<std::vector<Row>> Rows(const std::string& only_table) const;
  // A Get of one row (a table's state row or a region's), projected on the Get's columns.
  absl::Status Get(const hbase::Get& get, GetResponse* resp) const;
  // A scan, answered whole in one call (the client's lookups read a few rows): forward (the
  // Admin's region listings) or reversed (the client's region lookup).
  absl::Status Scan(const ScanRequest& req, ScanResponse* resp) const;
  // The HBase RegionInfo of the region `region` (RegionOf(spec)) names, `spec` its full name;
  // NotServingRegionException when it is not listed (it split, merged or moved).
  absl::StatusOr<RegionInfo> RegionInfoOf(const NamedRegion& region, const RegionSpecifier& spec) const;
  // The region `spec` names by its full name or, as Admin.move names it, its encoded name alone
  // (looked up here); UnknownRegionException when none has that name.
  absl::StatusOr<NamedRegion> NamedAnyhow(const RegionSpecifier& spec) const;

 private:
  server::AdminService* const admin_;
  ServerDirectory* const directory_;
};

}  // namespace basalt::hbase
