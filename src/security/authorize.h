// The permissions each call needs (docs/DESIGN.md §12), as HBase's AccessController
// asks them, checked by the gRPC front end once the caller is authenticated and before the call
// runs:
//   reads (Get, Scan)                       R on what they read (narrowed to what may be read)
//   writes (Mutate, BatchMutate, Increment,
//     Append)                               W on every column written (a row delete: the table)
//   CheckAndMutate                          R on the condition's column, W as a write
//   CreateTable                             C or A on the namespace (or global)
//   Disable, Enable, Drop, Truncate, Flush,
//     Compact, Assign, Split, Merge         C or A on the table
//   DescribeTable, ListRegions              anything on the table; ListTables shows only those
//   Status, SetVerbs, Move, Balance, the
//     region server calls                   A, global
//   Grant, Revoke, UserPermissions          A on the scope (AccessController)
//   Snapshot                                A on the table (the caller becomes its owner)
//   DeleteSnapshot, CloneSnapshot,
//     RestoreSnapshot                       A, global; or, for the snapshot's owner, nothing more
//                                           (delete), A on its table (restore), a clone under its
//                                           table's own name (clone), as HBase's
//   ListSnapshots                           everything to global A; to others, their own
//   CreateNamespace, ModifyNamespace,
//     DropNamespace                         A, global (HBase's)
//   DescribeNamespace                       A on the namespace; ListNamespaces shows only those
// Each returns PermissionDenied naming the user, the call and the scope.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "proto/basalt.pb.h"
#include "src/security/access_control.h"

namespace basalt::server {

absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::GetRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::ScanRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, const rpc::MutateRequest& req);
inline absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::MutateRequest* req) {
  return Authorize(ac, id, *req);
}
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::BatchMutateRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::IncrementRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::AppendRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::CheckAndMutateRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::CreateTableRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::ModifyTableRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::SplitRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::MergeRequest* req);
absl::Status Authorize(const AccessController& ac, const Identity& id, rpc::TruncateTableRequest* req);

// The table administration calls named by a TableRequest: `call` is the method's name.
absl::Status AuthorizeTableAdmin(const AccessController& ac, const Identity& id, std::string_view call,
                                 const rpc::TableRequest& req);
// Calls that need nothing but a caller (WhoAmI, Echo, ListTables whose reply is then filtered,
// the access control calls the controller checks itself).
inline absl::Status AuthorizeAnyone(const AccessController&, const Identity&) { return absl::OkStatus(); }
// Calls that need A on the global scope.
// StartTransaction: W somewhere (a transaction that could write nothing has no use, and each
// one in progress costs every snapshot a pointer).
inline absl::Status AuthorizeStartTransaction(const AccessController* ac, const Identity& id) {
  if (ac == nullptr || ac->HasAnywhere(id, kPermWrite)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("user '", id.user,
                                                  "' may not StartTransaction: it holds W on nothing"));
}

// A call on a snapshot (the rules above): `owner` and `table` are the snapshot's (empty when
// there is no such snapshot: then global A is asked, and the call says NotFound), `target` the
// table a clone makes.
enum class SnapshotUse { kDelete, kClone, kRestore };
absl::Status AuthorizeSnapshotUse(const AccessController& ac, const Identity& id, SnapshotUse use,
                                  std::string_view owner, std::string_view table, std::string_view target = {});

inline absl::Status AuthorizeGlobalAdmin(const AccessController& ac, const Identity& id, std::string_view call) {
  return ac.CheckGlobal(id, call, kPermAdmin);
}

class Quotas;
// What goes with a dropped namespace, whichever port dropped it (AdminService's namespace
// cleanup): the grants at or below it (HBase's postDeleteNamespace), so that one made again under
// its name does not hand them back, and its quota settings (HBase's DeleteNamespaceProcedure).
// Either may be null.
absl::Status ForgetNamespace(AccessController* grants, Quotas* quotas, std::string_view ns);
// What goes with a dropped table (AdminService's table cleanup): its grants, on it and on its
// families and columns (HBase's postDeleteTable), so that a table made again under its name
// starts with none, and its quota settings, the table's and its users' on it (HBase's
// MasterQuotasObserver). A truncate keeps both. Either may be null.
absl::Status ForgetTable(AccessController* grants, Quotas* quotas, std::string_view table);

}  // namespace basalt::server
