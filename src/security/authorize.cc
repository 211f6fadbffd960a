#include "src/security/authorize.h"

#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/security/quotas.h"

namespace basalt::server {
namespace {

constexpr uint8_t kCreateOrAdmin = kPermCreate | kPermAdmin;

// W on every column a row's mutations write; the whole table for a row delete.
absl::Status CheckRowWrites(const AccessController& ac, const Identity& id, std::string_view call,
                            const std::string& table, const rpc::RowMutations& row,
                            std::set<std::pair<std::string, std::string>>* checked) {
  for (const rpc::Mutation& m : row.mutations()) {
    std::pair<std::string, std::string> col;
    switch (m.kind()) {
      case rpc::Mutation::DELETE_ROW:
        break;  // the table (family empty)
      case rpc::Mutation::DELETE_FAMILY:
        col.first = m.family();
        break;
      default:
        col = {m.family(), m.qualifier()};
        break;
    }
    if (!checked->insert(col).second) continue;
    BASALT_RETURN_IF_ERROR(ac.CheckTable(id, call, table, kPermWrite, col.first, col.second));
  }
  return absl::OkStatus();
}

// W on the whole table lets every write through without looking at its columns.
bool MayWriteTable(const AccessController& ac, const Identity& id, const std::string& table) {
  PermScope s;
  s.table = table;
  return ac.Holds(id, kPermWrite, s);
}

// The table of a region name ("table,start,id"); empty for an encoded name.
std::string TableOfRegion(const std::string& name) {
  const size_t comma = name.find(',');
  return comma == std::string::npos ? std::string() : name.substr(0, comma);
}

}  // namespace

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::GetRequest* req) {
  return ac.AuthorizeRead(id, "Get", req->table(), req->mutable_read());
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::ScanRequest* req) {
  return ac.AuthorizeRead(id, "Scan", req->table(), req->mutable_read());
}

absl::Status Authorize(const AccessController& ac, const Identity& id, const rpc::MutateRequest& req) {
  if (MayWriteTable(ac, id, req.table())) return absl::OkStatus();
  std::set<std::pair<std::string, std::string>> checked;
  return CheckRowWrites(ac, id, "Mutate", req.table(), req.mutation(), &checked);
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::BatchMutateRequest* req) {
  if (MayWriteTable(ac, id, req->table())) return absl::OkStatus();
  std::set<std::pair<std::string, std::string>> checked;
  for (const rpc::RowMutations& row : req->rows()) {
    BASALT_RETURN_IF_ERROR(CheckRowWrites(ac, id, "BatchMutate", req->table(), row, &checked));
  }
  return absl::OkStatus();
}

// Increment and Append answer with the columns' new values, so they need R as well as W on
// each (docs/DESIGN.md §12: with W alone, an Increment by 0 or an Append of nothing read any column).
template <typename Columns>
absl::Status AuthorizeReadModifyWrite(const AccessController& ac, const Identity& id, std::string_view call,
                                      const std::string& table, const Columns& columns) {
  PermScope whole;
  whole.table = table;
  const bool write_all = ac.Holds(id, kPermWrite, whole), read_all = ac.Holds(id, kPermRead, whole);
  for (const auto& c : columns) {
    if (!write_all) BASALT_RETURN_IF_ERROR(ac.CheckTable(id, call, table, kPermWrite, c.family(), c.qualifier()));
    if (!read_all) BASALT_RETURN_IF_ERROR(ac.CheckTable(id, call, table, kPermRead, c.family(), c.qualifier()));
  }
  return absl::OkStatus();
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::IncrementRequest* req) {
  return AuthorizeReadModifyWrite(ac, id, "Increment", req->table(), req->columns());
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::AppendRequest* req) {
  return AuthorizeReadModifyWrite(ac, id, "Append", req->table(), req->columns());
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::CheckAndMutateRequest* req) {
  BASALT_RETURN_IF_ERROR(ac.CheckTable(id, "CheckAndMutate", req->table(), kPermRead, req->condition().family(),
                                       req->condition().qualifier()));
  if (MayWriteTable(ac, id, req->table())) return absl::OkStatus();
  std::set<std::pair<std::string, std::string>> checked;
  return CheckRowWrites(ac, id, "CheckAndMutate", req->table(), req->mutation(), &checked);
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::CreateTableRequest* req) {
  return ac.CheckNamespace(id, "CreateTable", NamespaceOf(req->table().name()), kCreateOrAdmin);
}

// (C or A on the table, as HBase's modifyTable.)
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::ModifyTableRequest* req) {
  return ac.CheckTable(id, "ModifyTable", req->table().name(), kCreateOrAdmin);
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::SplitRequest* req) {
  const std::string table = req->name().find(',') == std::string::npos ? req->name() : TableOfRegion(req->name());
  return ac.CheckTable(id, "Split", table, kCreateOrAdmin);
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::MergeRequest* req) {
  const std::string a = TableOfRegion(req->first());
  const std::string b = TableOfRegion(req->second());
  // Encoded names do not say their table: then only a global admin may merge.
  if (a.empty() || b.empty()) return ac.CheckGlobal(id, "Merge", kPermAdmin);
  BASALT_RETURN_IF_ERROR(ac.CheckTable(id, "Merge", a, kCreateOrAdmin));
  return a == b ? absl::OkStatus() : ac.CheckTable(id, "Merge", b, kCreateOrAdmin);
}

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::TruncateTableRequest* req) {
  return ac.CheckTable(id, "TruncateTable", req->table(), kCreateOrAdmin);
}

absl::Status AuthorizeTableAdmin(const AccessController& ac, const Identity& id, std::string_view call,
                                 const rpc::TableRequest& req) {
  if (call == "DescribeTable" || call == "ListRegions") return ac.CheckAnyOn(id, call, req.table());
  return ac.CheckTable(id, call, req.table(), kCreateOrAdmin);
}

absl::Status AuthorizeSnapshotUse(const AccessController& ac, const Identity& id, SnapshotUse use,
                                  std::string_view owner, std::string_view table, std::string_view target) {
  const char* call = use == SnapshotUse::kDelete  ? "DeleteSnapshot"
                     : use == SnapshotUse::kClone ? "CloneSnapshot"
                                                  : "RestoreSnapshot";
  if (!ac.enabled()) return absl::OkStatus();
  if (!owner.empty() && owner == id.user && !ac.Holds(id, kPermAdmin, PermScope{})) {
    switch (use) {
      case SnapshotUse::kDelete:
        return absl::OkStatus();
      case SnapshotUse::kRestore:
        return ac.CheckTable(id, call, table, kPermAdmin);
      case SnapshotUse::kClone:
        if (target == table) return absl::OkStatus();
        break;
    }
  }
  return ac.CheckGlobal(id, call, kPermAdmin);
}

absl::Status ForgetNamespace(AccessController* grants, Quotas* quotas, std::string_view ns) {
  if (ns.empty()) return absl::InvalidArgumentError("ForgetNamespace: no namespace named");
  if (grants != nullptr) {
    PermScope scope;
    scope.ns = std::string(ns);
    BASALT_RETURN_IF_ERROR(grants->RevokeWithin(scope, absl::StrCat("namespace ", AV(ns), " was dropped")));
  }
  if (quotas != nullptr) BASALT_RETURN_IF_ERROR(quotas->RemoveNamespace(ns));
  return absl::OkStatus();
}

absl::Status ForgetTable(AccessController* grants, Quotas* quotas, std::string_view table) {
  // (An empty scope is the global one: everything would go.)
  if (table.empty()) return absl::InvalidArgumentError("ForgetTable: no table named");
  if (grants != nullptr) {
    PermScope scope;
    scope.table = std::string(table);
    BASALT_RETURN_IF_ERROR(grants->RevokeWithin(scope, absl::StrCat("table ", AV(table), " was dropped")));
  }
  if (quotas != nullptr) BASALT_RETURN_IF_ERROR(quotas->RemoveTable(table));
  return absl::OkStatus();
}

}  // namespace basalt::server
