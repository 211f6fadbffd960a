// The gRPC front end's method table (grpc_server.h): each method of the Basalt, Admin and Echo
// services with its handler, what the caller needs (authorize.h), whether it runs on the handler
// pool, and its quotas. How a call finds its handler: docs/DESIGN.md §14 ("How a call finds its
// handler").
#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/front/grpc_calls.h"
#include "src/security/authorize.h"
#include "src/security/quotas.h"

namespace basalt::server::grpc_internal {

// Reads run inline on the CQ threads; writes (which wait for the log's fdatasync) and admin
// calls (flushes, compactions) run on the handler pool, so they never hold up reads and many
// writers can share one fdatasync. HBase splits its call queues the same way.
// Each method is counted under its name (basalt_requests_total{op="get"}); the data service's
// (handler d) are timed too, as the handler's type says at compile time. `authz` is what the
// caller needs (authorize.h).
#define BASALT_ARM_(svc, Method, Req, Resp)                                                      \
[svc](grpc::ServerContext* ctx, Req* req, grpc::ServerAsyncResponseWriter<Resp>* w,          \
      grpc::ServerCompletionQueue* cq, void* tag) { svc->Request##Method(ctx, req, w, cq, cq, tag); }
#define BASALT_UNARY_(svc, handler, Method, Req, Resp, on_pool, authz)                                          \
AddUnary<Req, Resp>(                                                                                           \
    impl, &methods, BASALT_ARM_(svc, Method, Req, Resp),                                                       \
    [handler](const Identity&, const grpc::ServerContext&, const Req& req, Resp* resp) {                      \
      return handler->Method(req, resp);                                                                       \
    },                                                                                                         \
    authz, on_pool, #Method, std::is_same_v<decltype(handler), DataService*>)
#define BASALT_BY_REQUEST_ [ac](const Identity& id, auto* req) { return Authorize(*ac, id, req); }
#define BASALT_TABLE_ADMIN_(Method) \
[ac](const Identity& id, auto* req) { return AuthorizeTableAdmin(*ac, id, #Method, *req); }
#define BASALT_GLOBAL_ADMIN_(Method) \
[ac](const Identity& id, auto*) { return AuthorizeGlobalAdmin(*ac, id, #Method); }

void AddDataMethods(GrpcServer::Impl* impl) {
  auto& methods = impl->methods;
  DataService* d = impl->data;
  AccessController* ac = impl->options.access;
  auto* bs = &impl->basalt_service;
  BASALT_UNARY_(bs, d, Get, rpc::GetRequest, rpc::GetResponse, false, BASALT_BY_REQUEST_);
  // A transactional write names its transaction by write pointer: the writer must be its owner
  // (TransactionManager::CheckWriter), or anyone could write into another user's transaction.
  // Checked after the quotas: on a cluster's region server it asks the master.
#define BASALT_TX_WRITER_(Req)                                                                     \
  [ac, d](const Identity& id, const Req& req) -> absl::Status {                                    \
    if (req.transaction() == 0) return absl::OkStatus();                                           \
    return d->CheckWriter(TxCaller{id.user, ac->Holds(id, kPermAdmin, PermScope{})}, req.transaction()); \
  }
  BASALT_UNARY_(bs, d, Mutate, rpc::MutateRequest, rpc::MutateResponse, true, BASALT_BY_REQUEST_)->check =
      BASALT_TX_WRITER_(rpc::MutateRequest);
  // The clusters a batch came through are a replication sink's to say (a region server routing a
  // sink's rows, with the cluster's identity): anyone else's are dropped, not refused.
  BASALT_UNARY_(bs, d, BatchMutate, rpc::BatchMutateRequest, rpc::BatchMutateResponse, true,
                ([ac](const Identity& id, rpc::BatchMutateRequest* req) {
                  if (req->cluster_ids_size() > 0 && ac->enabled() && !ac->Holds(id, kPermAdmin, PermScope{})) {
                    req->clear_cluster_ids();
                  }
                  return Authorize(*ac, id, req);
                }))
      ->check = BASALT_TX_WRITER_(rpc::BatchMutateRequest);
#undef BASALT_TX_WRITER_
  BASALT_UNARY_(bs, d, Increment, rpc::IncrementRequest, rpc::IncrementResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(bs, d, Append, rpc::AppendRequest, rpc::AppendResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(bs, d, CheckAndMutate, rpc::CheckAndMutateRequest, rpc::CheckAndMutateResponse, true,
                BASALT_BY_REQUEST_);
  // Transactions (docs/DESIGN.md §12): starting one needs W somewhere (Tephra has no permissions of its
  // own); it belongs to its caller, and only that user, or one with global A, commits, aborts or
  // invalidates it (TxCaller). What it reads and writes is authorised table by table.
#define BASALT_TX_(Method, Req, Resp, authz)                                                             \
  AddUnary<Req, Resp>(                                                                                    \
      impl, &methods, BASALT_ARM_(bs, Method, Req, Resp),                                                 \
      [d, ac](const Identity& id, const grpc::ServerContext&, const Req& req, Resp* resp) {               \
        return d->Method(TxCaller{id.user, ac == nullptr || ac->Holds(id, kPermAdmin, PermScope{})}, req, resp); \
      },                                                                                                  \
      authz, true, #Method, true)
#define BASALT_ANY_CALLER_ [](const Identity&, auto*) { return absl::OkStatus(); }
  BASALT_TX_(StartTransaction, rpc::StartTransactionRequest, rpc::StartTransactionResponse,
             [ac](const Identity& id, auto*) { return AuthorizeStartTransaction(ac, id); });
  BASALT_TX_(CommitTransaction, rpc::CommitTransactionRequest, rpc::CommitTransactionResponse, BASALT_ANY_CALLER_);
  BASALT_TX_(AbortTransaction, rpc::TransactionRequest, rpc::TransactionResponse, BASALT_ANY_CALLER_);
  BASALT_TX_(InvalidateTransaction, rpc::TransactionRequest, rpc::TransactionResponse, BASALT_ANY_CALLER_);
#undef BASALT_ANY_CALLER_
#undef BASALT_TX_
  BASALT_UNARY_(bs, d, CheckTransactionWriter, rpc::TransactionWriterRequest, rpc::TransactionResponse, true,
                BASALT_GLOBAL_ADMIN_(CheckTransactionWriter));
}

void AddAdminMethods(GrpcServer::Impl* impl) {
  auto& methods = impl->methods;
  AdminService* a = impl->admin;
  AccessController* ac = impl->options.access;
  auto* bs = &impl->basalt_service;
  auto* as = &impl->admin_service;
  BASALT_UNARY_(as, a, CreateTable, rpc::CreateTableRequest, rpc::CreateTableResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, ModifyTable, rpc::ModifyTableRequest, rpc::AdminResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, DescribeTable, rpc::TableRequest, rpc::DescribeTableResponse, true,
                BASALT_TABLE_ADMIN_(DescribeTable));
  BASALT_UNARY_(as, a, DisableTable, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(DisableTable));
  BASALT_UNARY_(as, a, EnableTable, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(EnableTable));
  BASALT_UNARY_(as, a, DropTable, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(DropTable));
  BASALT_UNARY_(as, a, TruncateTable, rpc::TruncateTableRequest, rpc::AdminResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, Flush, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(Flush));
  BASALT_UNARY_(as, a, MajorCompact, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(MajorCompact));
  BASALT_UNARY_(as, a, AssignTable, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(AssignTable));
  BASALT_UNARY_(as, a, ListRegions, rpc::TableRequest, rpc::ListRegionsResponse, true,
                BASALT_TABLE_ADMIN_(ListRegions));
  BASALT_UNARY_(as, a, Split, rpc::SplitRequest, rpc::AdminResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, Merge, rpc::MergeRequest, rpc::AdminResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, Status, rpc::StatusRequest, rpc::StatusResponse, true, BASALT_GLOBAL_ADMIN_(Status));
  BASALT_UNARY_(as, a, SetVerbs, rpc::SetVerbsRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(SetVerbs));
  BASALT_UNARY_(as, a, Move, rpc::MoveRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(Move));
  BASALT_UNARY_(as, a, Balance, rpc::BalanceRequest, rpc::BalanceResponse, true, BASALT_GLOBAL_ADMIN_(Balance));
  BASALT_UNARY_(as, a, Unassign, rpc::RegionRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(Unassign));
  BASALT_UNARY_(as, a, AssignRegion, rpc::RegionRequest, rpc::AdminResponse, true,
                BASALT_GLOBAL_ADMIN_(AssignRegion));
  BASALT_UNARY_(as, a, OpenRegion, rpc::OpenRegionRequest, rpc::OpenRegionResponse, true,
                BASALT_GLOBAL_ADMIN_(OpenRegion));
  BASALT_UNARY_(as, a, CloseRegion, rpc::CloseRegionRequest, rpc::AdminResponse, true,
                BASALT_GLOBAL_ADMIN_(CloseRegion));
  BASALT_UNARY_(as, a, RegionOperation, rpc::RegionOpRequest, rpc::RegionOpResponse, true,
                BASALT_GLOBAL_ADMIN_(RegionOperation));
  BASALT_UNARY_(as, a, HostedRegions, rpc::HostedRegionsRequest, rpc::HostedRegionsResponse, true,
                BASALT_GLOBAL_ADMIN_(HostedRegions));
  // A verbs session is issued to its caller (its endpoints act as them, verbs_front.cc): under
  // auth, only to one who may read or write something.
  AddUnary<rpc::VerbsSessionRequest, rpc::VerbsSessionResponse>(
      impl, &methods, BASALT_ARM_(bs, OpenVerbsSession, rpc::VerbsSessionRequest, rpc::VerbsSessionResponse),
      [a](const Identity& id, const grpc::ServerContext&, const rpc::VerbsSessionRequest& req,
          rpc::VerbsSessionResponse* resp) { return a->OpenVerbsSession(id, req, resp); },
      [ac](const Identity& id, rpc::VerbsSessionRequest*) -> absl::Status {
        if (ac->HasAnywhere(id, kPermRead | kPermWrite)) return absl::OkStatus();
        return ac->CheckGlobal(id, "OpenVerbsSession", kPermRead | kPermWrite);  // denied, and said so
      },
      /*on_pool=*/false, "OpenVerbsSession");
  // Tables the caller holds nothing on are left out of the list.
  AddUnary<rpc::ListTablesRequest, rpc::ListTablesResponse>(
      impl, &methods, BASALT_ARM_(as, ListTables, rpc::ListTablesRequest, rpc::ListTablesResponse),
      [a, ac](const Identity& id, const grpc::ServerContext&, const rpc::ListTablesRequest& req,
              rpc::ListTablesResponse* resp) -> absl::Status {
        BASALT_RETURN_IF_ERROR(a->ListTables(req, resp));
        if (ac == nullptr || !ac->enabled()) return absl::OkStatus();
        auto* tables = resp->mutable_tables();
        tables->erase(std::remove_if(tables->begin(), tables->end(),
                                     [&](const rpc::DescribeTableResponse& t) {
                                       return !ac->HasAnyOn(id, t.table().name());
                                     }),
                      tables->end());
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/true, "ListTables");
}

namespace {

// The table's grants (on it, its families and its columns) put in a Snapshot request, as the
// snapshot keeps them for RESTORE_ACL (HBase's users_and_permissions).
absl::Status AttachTableGrants(const AccessController* ac, rpc::SnapshotRequest* req) {
  req->clear_grants();
  if (ac == nullptr) return absl::OkStatus();
  Identity server;
  server.superuser = true;
  BASALT_ASSIGN_OR_RETURN(std::vector<PermGrant> grants, ac->List(server, PermScope{"", req->table(), "", ""}, ""));
  for (const PermGrant& g : grants) {
    rpc::GrantRequest* out = req->add_grants();
    out->set_principal(g.principal);
    out->set_permissions(PermString(g.perms));
    *out->mutable_scope() = ScopeToProto(g.scope);
  }
  return absl::OkStatus();
}

// RESTORE_ACL: the grants snapshot `name` kept, given on `table` (the clone, or the restored
// table) with the server's authority, as HBase's master does; the audit log names `by`.
absl::Status GiveSnapshotGrants(AdminService* a, AccessController* ac, const Identity& by, const std::string& name,
                                std::string table) {
  BASALT_ASSIGN_OR_RETURN(SnapshotInfo info, a->ReadSnapshot(name));
  if (table.empty()) table = info.table.name;
  if (info.grants.empty()) return absl::OkStatus();
  if (ac == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("snapshot ", name, " keeps ", info.grants.size(),
                                                      " grant(s), but this server keeps no permissions"));
  }
  Identity server = by;
  server.superuser = true;
  for (const SnapshotGrant& g : info.grants) {
    BASALT_RETURN_IF_ERROR(ac->Grant(server, PermGrant{g.principal, PermScope{"", table, g.family, g.qualifier}, g.perms}));
  }
  return absl::OkStatus();
}

}  // namespace

// Namespaces, as HBase's: making, changing and dropping one needs global A; describing one A on
// it; the list shows the namespaces the caller holds A on (all, to a global admin).
void AddNamespaceMethods(GrpcServer::Impl* impl) {
  auto& methods = impl->methods;
  AdminService* a = impl->admin;
  AccessController* ac = impl->options.access;
  auto* as = &impl->admin_service;
  BASALT_UNARY_(as, a, CreateNamespace, rpc::NamespaceRequest, rpc::AdminResponse, true,
                BASALT_GLOBAL_ADMIN_(CreateNamespace));
  BASALT_UNARY_(as, a, ModifyNamespace, rpc::NamespaceRequest, rpc::AdminResponse, true,
                BASALT_GLOBAL_ADMIN_(ModifyNamespace));
  // (Its grants and quotas go with it: AdminService's namespace cleanup.)
  BASALT_UNARY_(as, a, DropNamespace, rpc::NamespaceNameRequest, rpc::AdminResponse, true,
                BASALT_GLOBAL_ADMIN_(DropNamespace));
  BASALT_UNARY_(as, a, DescribeNamespace, rpc::NamespaceNameRequest, rpc::DescribeNamespaceResponse, true,
                ([ac](const Identity& id, rpc::NamespaceNameRequest* req) {
                  return ac->CheckNamespace(id, "DescribeNamespace", req->name(), kPermAdmin);
                }));
  AddUnary<rpc::ListNamespacesRequest, rpc::ListNamespacesResponse>(
      impl, &methods, BASALT_ARM_(as, ListNamespaces, rpc::ListNamespacesRequest, rpc::ListNamespacesResponse),
      [a, ac](const Identity& id, const grpc::ServerContext&, const rpc::ListNamespacesRequest& req,
              rpc::ListNamespacesResponse* resp) -> absl::Status {
        BASALT_RETURN_IF_ERROR(a->ListNamespaces(req, resp));
        if (ac == nullptr || !ac->enabled()) return absl::OkStatus();
        auto* all = resp->mutable_namespaces();
        all->erase(std::remove_if(all->begin(), all->end(),
                                  [&](const rpc::NamespaceDescriptor& n) {
                                    return !ac->Holds(id, kPermAdmin, PermScope{n.name(), "", "", ""});
                                  }),
                   all->end());
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/true, "ListNamespaces");
}

// Snapshots: taking one needs A on the table (HBase's), listing shows the snapshots of the tables
// the caller holds something on (as ListTables), deleting one needs global A.
void AddSnapshotMethods(GrpcServer::Impl* impl) {
  auto& methods = impl->methods;
  AdminService* a = impl->admin;
  AccessController* ac = impl->options.access;
  auto* as = &impl->admin_service;
  // Taken as the caller: its owner is whoever the server authenticated, whatever the request says.
  BASALT_UNARY_(as, a, Snapshot, rpc::SnapshotRequest, rpc::SnapshotResponse, true,
                [ac](const Identity& id, rpc::SnapshotRequest* req) {
                  req->set_owner(id.user);
                  BASALT_RETURN_IF_ERROR(ac->CheckTable(id, "Snapshot", req->table(), kPermAdmin));
                  return AttachTableGrants(ac, req);
                });
  // The owner's rights need the snapshot's owner and table (none known: global A is asked).
  auto use = [a, ac](const Identity& id, SnapshotUse u, const std::string& name, std::string_view target = {}) {
    absl::StatusOr<SnapshotInfo> s = a->ReadSnapshot(name);
    return AuthorizeSnapshotUse(*ac, id, u, s.ok() ? s->owner : "", s.ok() ? s->table.name : "", target);
  };
  BASALT_UNARY_(as, a, DeleteSnapshot, rpc::DeleteSnapshotRequest, rpc::AdminResponse, true,
                [use](const Identity& id, rpc::DeleteSnapshotRequest* req) {
                  return use(id, SnapshotUse::kDelete, req->name());
                });
  // With restore_acl, the grants the snapshot kept are given once the table is there.
  AddUnary<rpc::CloneSnapshotRequest, rpc::AdminResponse>(
      impl, &methods, BASALT_ARM_(as, CloneSnapshot, rpc::CloneSnapshotRequest, rpc::AdminResponse),
      [a, ac](const Identity& id, const grpc::ServerContext&, const rpc::CloneSnapshotRequest& req,
              rpc::AdminResponse* resp) -> absl::Status {
        BASALT_RETURN_IF_ERROR(a->CloneSnapshot(req, resp));
        return req.restore_acl() ? GiveSnapshotGrants(a, ac, id, req.snapshot(), req.table()) : absl::OkStatus();
      },
      [use](const Identity& id, rpc::CloneSnapshotRequest* req) {
        return use(id, SnapshotUse::kClone, req->snapshot(), req->table());
      },
      /*on_pool=*/true, "CloneSnapshot");
  AddUnary<rpc::RestoreSnapshotRequest, rpc::AdminResponse>(
      impl, &methods, BASALT_ARM_(as, RestoreSnapshot, rpc::RestoreSnapshotRequest, rpc::AdminResponse),
      [a, ac](const Identity& id, const grpc::ServerContext&, const rpc::RestoreSnapshotRequest& req,
              rpc::AdminResponse* resp) -> absl::Status {
        BASALT_RETURN_IF_ERROR(a->RestoreSnapshot(req, resp));
        return req.restore_acl() ? GiveSnapshotGrants(a, ac, id, req.snapshot(), "") : absl::OkStatus();
      },
      [use](const Identity& id, rpc::RestoreSnapshotRequest* req) { return use(id, SnapshotUse::kRestore, req->snapshot()); },
      /*on_pool=*/true, "RestoreSnapshot");
  AddUnary<rpc::ListSnapshotsRequest, rpc::ListSnapshotsResponse>(
      impl, &methods, BASALT_ARM_(as, ListSnapshots, rpc::ListSnapshotsRequest, rpc::ListSnapshotsResponse),
      [a, ac](const Identity& id, const grpc::ServerContext&, const rpc::ListSnapshotsRequest& req,
              rpc::ListSnapshotsResponse* resp) -> absl::Status {
        BASALT_RETURN_IF_ERROR(a->ListSnapshots(req, resp));
        if (ac == nullptr || !ac->enabled() || ac->Holds(id, kPermAdmin, PermScope{})) return absl::OkStatus();
        auto* all = resp->mutable_snapshots();
        all->erase(std::remove_if(all->begin(), all->end(),
                                  [&](const rpc::SnapshotDescription& s) { return s.owner() != id.user; }),
                   all->end());
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/true, "ListSnapshots");
}

// Replication peers: global A (HBase's: its replication admin calls need the global ADMIN).
// The consistency token: R or W on its table.
void AddPeerMethods(GrpcServer::Impl* impl) {
  auto& methods = impl->methods;
  AdminService* a = impl->admin;
  AccessController* ac = impl->options.access;
  auto* as = &impl->admin_service;
  BASALT_UNARY_(as, a, AddPeer, rpc::AddPeerRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(AddPeer));
  BASALT_UNARY_(as, a, RemovePeer, rpc::PeerRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(RemovePeer));
  BASALT_UNARY_(as, a, UpdatePeer, rpc::AddPeerRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(UpdatePeer));
  BASALT_UNARY_(as, a, EnablePeer, rpc::PeerRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(EnablePeer));
  BASALT_UNARY_(as, a, DisablePeer, rpc::PeerRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(DisablePeer));
  BASALT_UNARY_(as, a, ListPeers, rpc::ListPeersRequest, rpc::ListPeersResponse, true, BASALT_GLOBAL_ADMIN_(ListPeers));
  // The consistency token is a writer's or reader's question about its table: R or W there.
  BASALT_UNARY_(as, a, GenerateConsistencyToken, rpc::ConsistencyTokenRequest, rpc::ConsistencyTokenResponse, true,
                [ac](const Identity& id, rpc::ConsistencyTokenRequest* req) {
                  return ac->CheckTable(id, "GenerateConsistencyToken", req->table(), kPermRead | kPermWrite);
                });
  BASALT_UNARY_(as, a, CheckConsistency, rpc::CheckConsistencyRequest, rpc::CheckConsistencyResponse, true,
                [ac](const Identity& id, rpc::CheckConsistencyRequest* req) {
                  return ac->CheckTable(id, "CheckConsistency", req->table(), kPermRead | kPermWrite);
                });
}

void AddSecurityMethods(GrpcServer::Impl* impl) {
  auto& methods = impl->methods;
  AccessController* ac = impl->options.access;
  auto* as = &impl->admin_service;
  // Access control: the controller checks A on the scope itself.
  AddUnary<rpc::GrantRequest, rpc::AdminResponse>(
      impl, &methods, BASALT_ARM_(as, Grant, rpc::GrantRequest, rpc::AdminResponse),
      [ac](const Identity& id, const grpc::ServerContext&, const rpc::GrantRequest& req, rpc::AdminResponse*) {
        if (ac == nullptr) return absl::FailedPreconditionError("this server keeps no permissions");
        PermGrant g;
        g.principal = req.principal();
        g.scope = ScopeFromProto(req.scope());
        BASALT_ASSIGN_OR_RETURN(g.perms, ParsePerms(req.permissions()));
        return ac->Grant(id, g);
      },
      nullptr, /*on_pool=*/true, "Grant");
  AddUnary<rpc::RevokeRequest, rpc::AdminResponse>(
      impl, &methods, BASALT_ARM_(as, Revoke, rpc::RevokeRequest, rpc::AdminResponse),
      [ac](const Identity& id, const grpc::ServerContext&, const rpc::RevokeRequest& req, rpc::AdminResponse*) {
        if (ac == nullptr) return absl::FailedPreconditionError("this server keeps no permissions");
        return ac->Revoke(id, req.principal(), ScopeFromProto(req.scope()));
      },
      nullptr, /*on_pool=*/true, "Revoke");
  AddUnary<rpc::UserPermissionRequest, rpc::UserPermissionResponse>(
      impl, &methods, BASALT_ARM_(as, UserPermissions, rpc::UserPermissionRequest, rpc::UserPermissionResponse),
      [ac](const Identity& id, const grpc::ServerContext&, const rpc::UserPermissionRequest& req,
           rpc::UserPermissionResponse* resp) -> absl::Status {
        if (ac == nullptr) return absl::FailedPreconditionError("this server keeps no permissions");
        BASALT_ASSIGN_OR_RETURN(std::vector<PermGrant> grants,
                                ac->List(id, ScopeFromProto(req.scope()), req.principal()));
        for (const PermGrant& g : grants) {
          rpc::UserPermission* p = resp->add_permissions();
          p->set_principal(g.principal);
          *p->mutable_scope() = ScopeToProto(g.scope);
          p->set_permissions(PermString(g.perms));
        }
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/true, "UserPermissions");
  AddUnary<rpc::WhoAmIRequest, rpc::WhoAmIResponse>(
      impl, &methods, BASALT_ARM_(as, WhoAmI, rpc::WhoAmIRequest, rpc::WhoAmIResponse),
      [ac, authn = impl->options.authn](const Identity& id, const grpc::ServerContext& ctx, const rpc::WhoAmIRequest&,
                                        rpc::WhoAmIResponse* resp) {
        resp->set_user(id.user);
        for (const std::string& g : id.groups) resp->add_groups(g);
        resp->set_superuser(id.superuser);
        resp->set_authentication(std::string(authn != nullptr ? Authenticator::Method(ctx) : "none"));
        resp->set_auth_enabled(ac != nullptr && ac->enabled());
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/false, "WhoAmI");
  // Quotas: set and listed by holders of global A (HBase's set_quota and list_quotas need it).
  Quotas* quotas = impl->options.quotas;
  AddUnary<rpc::SetQuotaRequest, rpc::AdminResponse>(
      impl, &methods, BASALT_ARM_(as, SetQuota, rpc::SetQuotaRequest, rpc::AdminResponse),
      [quotas](const Identity& id, const grpc::ServerContext&, const rpc::SetQuotaRequest& req,
               rpc::AdminResponse*) -> absl::Status {
        if (quotas == nullptr) return absl::FailedPreconditionError("this server keeps no quotas");
        BASALT_RETURN_IF_ERROR(SetQuota(quotas, req));
        AccessController::Audit(absl::StrCat("set_quota by ", id.user.empty() ? "(anyone)" : id.user, ": ",
                                             QuotaSubject{req.user(), req.namespace_(), req.table()}.ToString(),
                                             req.throttle().empty() ? "" : ", THROTTLE_TYPE => ", req.throttle(),
                                             ", LIMIT => ", req.limit()));
        return absl::OkStatus();
      },
      BASALT_GLOBAL_ADMIN_(SetQuota), /*on_pool=*/true, "SetQuota");
  AddUnary<rpc::ListQuotasRequest, rpc::ListQuotasResponse>(
      impl, &methods, BASALT_ARM_(as, ListQuotas, rpc::ListQuotasRequest, rpc::ListQuotasResponse),
      [quotas](const Identity&, const grpc::ServerContext&, const rpc::ListQuotasRequest&,
               rpc::ListQuotasResponse* resp) -> absl::Status {
        if (quotas == nullptr) return absl::FailedPreconditionError("this server keeps no quotas");
        ListQuotas(*quotas, resp);
        return absl::OkStatus();
      },
      BASALT_GLOBAL_ADMIN_(ListQuotas), /*on_pool=*/true, "ListQuotas");
}

#undef BASALT_GLOBAL_ADMIN_
#undef BASALT_TABLE_ADMIN_
#undef BASALT_BY_REQUEST_
#undef BASALT_UNARY_
#undef BASALT_ARM_

void AddEchoMethod(GrpcServer::Impl* impl) {
  auto& methods = impl->methods;
  auto* es = &impl->echo_service;
  const bool echo_on = impl->options.enable_echo;
  const uint32_t max_reply = impl->options.echo_max_reply_bytes;
  AddUnary<rpc::EchoRequest, rpc::EchoResponse>(
      impl, &methods,
      [es](grpc::ServerContext* ctx, rpc::EchoRequest* req, grpc::ServerAsyncResponseWriter<rpc::EchoResponse>* w,
           grpc::ServerCompletionQueue* cq, void* tag) { es->RequestEcho(ctx, req, w, cq, cq, tag); },
      [echo_on, max_reply](const Identity&, const grpc::ServerContext&, const rpc::EchoRequest& req,
                           rpc::EchoResponse* resp) -> absl::Status {
        if (!echo_on) {
          return absl::FailedPreconditionError(
              "Echo is off: it is for benchmarks; start basalt-server with --enable_echo=true (or run basalt-bench "
              "with --no_floor)");
        }
        if (req.reply_size() > max_reply) {
          return absl::InvalidArgumentError(
              absl::StrCat("reply_size ", req.reply_size(), " exceeds echo_max_reply_bytes (", max_reply, ")"));
        }
        resp->mutable_payload()->assign(req.reply_size(), 'x');
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/false);
}

}  // namespace basalt::server::grpc_internal
