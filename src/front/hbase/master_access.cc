// MasterService's calls under auth=true (MasterService::Authorize, master_service.h): HBase's
// AccessController rules for the master's calls, asked of Basalt's grants as the gRPC port asks
// them for the same Basalt call (src/security/authorize.h), so a user may do through HBase's
// client what they may do through Basalt's, and no more:
//   CreateTable                                   C or A on the namespace (or global)
//   ModifyTable, AddColumn, ModifyColumn,
//     DeleteColumn, DisableTable, EnableTable,
//     DeleteTable, truncateTable, FlushTable,
//     ExecProcedure (flush-table-proc),
//     SplitRegion                                 C or A on the table
//   GetTableDescriptors of named tables,
//     GetTableState, GetSchemaAlterStatus         anything on the table (Basalt's DescribeTable;
//                                                 HBase asks C or A to describe)
//   GetTableNames, GetTableDescriptors of all     any caller: only the tables they hold something on
//   GetClusterStatus                              any caller (as HBase): its per-table region
//                                                 counts only of those tables
//   GetNamespaceDescriptor                        A on the namespace (HBase's); listing: any caller,
//                                                 ListNamespaces and ListNamespaceDescriptors only
//                                                 those with A (as the gRPC port's ListNamespaces)
//   ListTableNamesByNamespace,
//     ListTableDescriptorsByNamespace             any caller: only the tables they hold something on
//   CreateNamespace, ModifyNamespace,
//     DeleteNamespace                             global A (HBase's; Basalt's gRPC port asks the same)
//   Snapshot                                      A on the table; the caller becomes its owner
//   DeleteSnapshot, RestoreSnapshot (restore
//     or clone)                                   the owner's rights, else global A
//                                                 (AuthorizeSnapshotUse; asked by the handler)
//   IsSnapshotDone                                its owner, or global A (likewise)
//   GetCompletedSnapshots                         any caller: their own, all to global A
//   IsMasterRunning, getProcedureResult,
//     IsProcedureDone, IsBalancerEnabled,
//     ListNamespaces                              any caller
//   everything else (MoveRegion, the replication
//     peers)                                      global A (Service::Authorize)
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/status.h"
#include "proto/hbase/hbase_master.pb.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/master_service.h"
#include "src/security/authorize.h"

namespace basalt::hbase {
namespace {

// The Basalt table a call's request of type `Req` names where `field` says.
template <typename Req, typename Field>
absl::StatusOr<std::string> Named(const Call& call, Field field) {
  Req req;
  BASALT_RETURN_IF_ERROR(Parse(call, &req));
  return BasaltTableOf(field(req));
}

constexpr auto kTableName = [](const auto& req) -> const TableName& { return req.table_name(); };
constexpr auto kSchemaName = [](const auto& req) -> const TableName& { return req.table_schema().table_name(); };

// The calls on one table: where each names it, and whether it changes the table (C or A) or
// only reads its state (anything on it).
struct TableCall {
  absl::StatusOr<std::string> (*table)(const Call&);
  bool changes;
};
const absl::flat_hash_map<std::string_view, TableCall>& TableCalls() {
  static const auto* calls = new absl::flat_hash_map<std::string_view, TableCall>{
      {"ModifyTable", {[](const Call& c) { return Named<ModifyTableRequest>(c, kSchemaName); }, true}},
      {"AddColumn", {[](const Call& c) { return Named<AddColumnRequest>(c, kTableName); }, true}},
      {"ModifyColumn", {[](const Call& c) { return Named<ModifyColumnRequest>(c, kTableName); }, true}},
      {"DeleteColumn", {[](const Call& c) { return Named<DeleteColumnRequest>(c, kTableName); }, true}},
      {"DisableTable", {[](const Call& c) { return Named<DisableTableRequest>(c, kTableName); }, true}},
      {"EnableTable", {[](const Call& c) { return Named<EnableTableRequest>(c, kTableName); }, true}},
      {"DeleteTable", {[](const Call& c) { return Named<DeleteTableRequest>(c, kTableName); }, true}},
      {"FlushTable", {[](const Call& c) { return Named<FlushTableRequest>(c, kTableName); }, true}},
      {"truncateTable",
       {[](const Call& c) {
          return Named<TruncateTableRequest>(c, [](const TruncateTableRequest& r) -> const TableName& {
            return r.tablename();
          });
        },
        true}},
      {"SplitRegion",
       {[](const Call& c) {
          return Named<SplitTableRegionRequest>(c, [](const SplitTableRegionRequest& r) -> const TableName& {
            return r.region_info().table_name();
          });
        },
        true}},
      {"ExecProcedure",
       {[](const Call& c) -> absl::StatusOr<std::string> {
          ExecProcedureRequest req;
          BASALT_RETURN_IF_ERROR(Parse(c, &req));
          return MasterService::FlushProcedureTable(req.procedure());
        },
        true}},
      {"GetTableState", {[](const Call& c) { return Named<GetTableStateRequest>(c, kTableName); }, false}},
      {"GetSchemaAlterStatus", {[](const Call& c) { return Named<GetSchemaAlterStatusRequest>(c, kTableName); }, false}},
  };
  return *calls;
}

}  // namespace

bool MasterService::Sees(const Request& r, std::string_view table) {
  return r.access == nullptr || r.caller == nullptr || r.access->HasAnyOn(*r.caller, table);
}

std::string MasterService::OwnerOf(const Request& r) { return r.caller != nullptr ? r.caller->user : ""; }

bool MasterService::SeesSnapshot(const Request& r, std::string_view owner) {
  if (r.access == nullptr || r.caller == nullptr) return true;
  return owner == r.caller->user || r.access->Holds(*r.caller, server::kPermAdmin, server::PermScope{});
}

bool MasterService::AdministersNamespace(const Request& r, const std::string& ns) {
  if (r.access == nullptr || r.caller == nullptr) return true;
  server::PermScope scope;
  scope.ns = ns;
  return r.access->Holds(*r.caller, server::kPermAdmin, scope);
}

absl::Status MasterService::Authorize(const Request& r) const {
  static const absl::flat_hash_set<std::string_view> kAnyCaller = {
      "IsMasterRunning", "getProcedureResult",     "IsBalancerEnabled",        "ListNamespaces", "IsProcedureDone",
      "GetTableNames",   "GetClusterStatus",       "ListNamespaceDescriptors", "GetCompletedSnapshots",
      "ListTableNamesByNamespace", "ListTableDescriptorsByNamespace"};
  const std::string& m = r.method();
  if (kAnyCaller.contains(m)) return absl::OkStatus();
  const server::AccessController& ac = *r.access;
  const server::Identity& id = *r.caller;
  const std::string call = absl::StrCat("MasterService.", m);
  if (auto it = TableCalls().find(m); it != TableCalls().end()) {
    // (A request that does not parse, or names no Basalt table, is answered as the handler would.)
    BASALT_ASSIGN_OR_RETURN(std::string table, it->second.table(r.call));
    return it->second.changes ? ac.CheckTable(id, call, table, server::kPermCreate | server::kPermAdmin)
                              : ac.CheckAnyOn(id, call, table);
  }
  if (m == "CreateTable") {
    CreateTableRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOf(req.table_schema().table_name()));
    return ac.CheckNamespace(id, call, server::NamespaceOf(table), server::kPermCreate | server::kPermAdmin);
  }
  if (m == "GetTableDescriptors") {  // named tables: each (the rest is filtered by the handler)
    GetTableDescriptorsRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    for (const TableName& t : req.table_names()) {
      absl::StatusOr<std::string> table = BasaltTableOf(t);
      if (table.ok()) BASALT_RETURN_IF_ERROR(ac.CheckAnyOn(id, call, *table));
    }
    return absl::OkStatus();
  }
  if (m == "GetNamespaceDescriptor") {
    GetNamespaceDescriptorRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    return ac.CheckNamespace(id, call, req.namespacename(), server::kPermAdmin);
  }
  if (m == "Snapshot") {
    SnapshotRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    BASALT_ASSIGN_OR_RETURN(std::string table, BasaltTableOfText(req.snapshot().table()));
    return ac.CheckTable(id, call, table, server::kPermAdmin);
  }
  // (These read the snapshot's manifest, a file: their handlers ask AuthorizeSnapshotCall on the
  // pool, never on the loop that runs Authorize.)
  if (m == "IsSnapshotDone" || m == "DeleteSnapshot" || m == "RestoreSnapshot") return absl::OkStatus();
  return Service::Authorize(r);
}

// The snapshot's owner and table decide (none such: global A is asked, and the call then says
// SnapshotDoesNotExist).
absl::Status MasterService::AuthorizeSnapshotCall(const Request& r) const {
  if (r.access == nullptr || r.caller == nullptr) return absl::OkStatus();
  const std::string& m = r.method();
  std::string name, target;
  if (m == "IsSnapshotDone") {
    IsSnapshotDoneRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    name = req.snapshot().name();
  } else if (m == "DeleteSnapshot") {
    DeleteSnapshotRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    name = req.snapshot().name();
  } else {
    RestoreSnapshotRequest req;
    BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
    name = req.snapshot().name();
    BASALT_ASSIGN_OR_RETURN(target, BasaltTableOfText(req.snapshot().table()));
  }
  absl::StatusOr<server::SnapshotInfo> s = options_.admin->ReadSnapshot(name);
  const std::string owner = s.ok() ? s->owner : "";
  const std::string table = s.ok() ? s->table.name : "";
  const std::string call = absl::StrCat("MasterService.", m);
  if (m == "IsSnapshotDone") {
    if (s.ok() && SeesSnapshot(r, owner)) return absl::OkStatus();
    return r.access->CheckGlobal(*r.caller, call, server::kPermAdmin);
  }
  const server::SnapshotUse use = m == "DeleteSnapshot" ? server::SnapshotUse::kDelete
                                  : target == table     ? server::SnapshotUse::kRestore
                                                        : server::SnapshotUse::kClone;
  return server::AuthorizeSnapshotUse(*r.access, *r.caller, use, owner, table, target);
}

}  // namespace basalt::hbase
