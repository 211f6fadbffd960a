// Admin: the Admin service's calls, family settings named as in HBase's shell.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/core.h"
#include "proto/kept_settings.h"
#include "proto/permission_scope.h"
#include "common/status.h"

namespace basalt::client_internal {
namespace {

TableInfo FromProto(const rpc::DescribeTableResponse& d) {
  TableInfo t;
  t.name = d.table().name();
  t.enabled = d.state() != rpc::TABLE_DISABLED;
  if (d.state() == rpc::TABLE_FAILED_OPEN) t.open_error = d.error().empty() ? "FAILED_OPEN" : d.error();
  t.regions = d.regions();
  t.max_file_size = d.table().max_file_size();
  t.transactional = d.table().transactional();
  t.queue = d.table().queue();
  t.metadata = rpc::KeptFromProto(d.table().kept_attributes());
  t.configuration = rpc::KeptFromProto(d.table().kept_configuration());
  for (const rpc::FamilyDescriptor& f : d.table().families()) t.families.push_back(client_internal::FromProto(f));
  return t;
}

// A table as CreateTable and ModifyTable send it. InvalidArgument without a name or a family.
absl::Status Descriptor(const TableInfo& table, rpc::TableDescriptor* out) {
  if (table.name.empty()) return absl::InvalidArgumentError("empty table name");
  if (table.families.empty()) return absl::InvalidArgumentError("a table needs a family");
  out->set_name(table.name);
  out->set_max_file_size(table.max_file_size);
  out->set_transactional(table.transactional);
  out->set_queue(table.queue);
  rpc::KeptToProto(table.metadata, out->mutable_kept_attributes());
  rpc::KeptToProto(table.configuration, out->mutable_kept_configuration());
  for (const FamilySettings& f : table.families) BASALT_RETURN_IF_ERROR(ToProto(f, out->add_families()));
  return absl::OkStatus();
}

class AdminImpl final : public Admin {
 public:
  explicit AdminImpl(Core* core) : core_(core) {}

  using Admin::CreateTable;
  absl::Status CreateTable(const TableInfo& table, const std::vector<std::string>& split_keys) override {
    const std::string what = absl::StrCat("CreateTable ", table.name);
    rpc::CreateTableRequest req;
    BASALT_RETURN_IF_ERROR(WithContext(Descriptor(table, req.mutable_table()), what));
    for (const std::string& k : split_keys) req.add_split_keys(k);
    rpc::CreateTableResponse resp;
    return WithContext(core_->CallGrpc(true,
                                       [&](GrpcPath* path, grpc::ClientContext* ctx) {
                                         return path->admin_stub()->CreateTable(ctx, req, &resp);
                                       }),
                       what);
  }

  absl::Status ModifyTable(const TableInfo& table) override {
    const std::string what = absl::StrCat("ModifyTable ", table.name);
    rpc::ModifyTableRequest req;
    BASALT_RETURN_IF_ERROR(WithContext(Descriptor(table, req.mutable_table()), what));
    rpc::AdminResponse resp;
    return WithContext(core_->CallGrpc(true,
                                       [&](GrpcPath* path, grpc::ClientContext* ctx) {
                                         return path->admin_stub()->ModifyTable(ctx, req, &resp);
                                       }),
                       what);
  }

  absl::StatusOr<TableInfo> DescribeTable(const std::string& name) override {
    rpc::TableRequest req;
    req.set_table(name);
    rpc::DescribeTableResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->DescribeTable(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, absl::StrCat("DescribeTable ", name));
    return FromProto(resp);
  }

  absl::StatusOr<std::vector<TableInfo>> ListTables() override {
    rpc::ListTablesRequest req;
    rpc::ListTablesResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->ListTables(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "ListTables");
    std::vector<TableInfo> out;
    out.reserve(resp.tables_size());
    for (const rpc::DescribeTableResponse& d : resp.tables()) out.push_back(FromProto(d));
    return out;
  }

  absl::Status DisableTable(const std::string& name) override {
    return TableCall("DisableTable", name, &rpc::Admin::Stub::DisableTable);
  }
  absl::Status EnableTable(const std::string& name) override {
    return TableCall("EnableTable", name, &rpc::Admin::Stub::EnableTable);
  }
  absl::Status DropTable(const std::string& name) override {
    return TableCall("DropTable", name, &rpc::Admin::Stub::DropTable);
  }
  absl::Status TruncateTable(const std::string& name, bool preserve_splits) override {
    rpc::TruncateTableRequest req;
    req.set_table(name);
    req.set_preserve_splits(preserve_splits);
    rpc::AdminResponse resp;
    // (Not retried: a truncate that was done, asked again, finds its table enabled.)
    return WithContext(core_->CallGrpc(false,
                                       [&](GrpcPath* path, grpc::ClientContext* ctx) {
                                         return path->admin_stub()->TruncateTable(ctx, req, &resp);
                                       }),
                       absl::StrCat("TruncateTable ", name));
  }
  absl::Status Flush(const std::string& name) override { return TableCall("Flush", name, &rpc::Admin::Stub::Flush); }
  absl::Status MajorCompact(const std::string& name) override {
    return TableCall("MajorCompact", name, &rpc::Admin::Stub::MajorCompact);
  }
  absl::Status AssignTable(const std::string& name) override {
    return TableCall("AssignTable", name, &rpc::Admin::Stub::AssignTable);
  }

  absl::Status Split(const std::string& name, const std::string& split_row) override {
    rpc::SplitRequest req;
    req.set_name(name);
    req.set_split_row(split_row);
    return AdminCall(absl::StrCat("Split ", name), req, &rpc::Admin::Stub::Split);
  }

  absl::Status MergeRegions(const std::string& first, const std::string& second) override {
    rpc::MergeRequest req;
    req.set_first(first);
    req.set_second(second);
    return AdminCall(absl::StrCat("MergeRegions ", first, " ", second), req, &rpc::Admin::Stub::Merge);
  }

  absl::Status Move(const std::string& region, const std::string& server) override {
    rpc::MoveRequest req;
    req.set_region(region);
    req.set_server(server);
    return AdminCall(absl::StrCat("Move ", region, server.empty() ? "" : " to ", server), req, &rpc::Admin::Stub::Move);
  }

  absl::Status Unassign(const std::string& region) override {
    rpc::RegionRequest req;
    req.set_region(region);
    return AdminCall(absl::StrCat("Unassign ", region), req, &rpc::Admin::Stub::Unassign);
  }

  absl::Status AssignRegion(const std::string& region) override {
    rpc::RegionRequest req;
    req.set_region(region);
    return AdminCall(absl::StrCat("AssignRegion ", region), req, &rpc::Admin::Stub::AssignRegion);
  }

  absl::StatusOr<BalanceResult> Balance() override {
    rpc::BalanceRequest req;
    rpc::BalanceResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->Balance(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "Balance");
    return BalanceResult{static_cast<int>(resp.moves()), resp.reason()};
  }

  absl::StatusOr<std::vector<RegionStatus>> ListRegions(const std::string& table) override {
    rpc::TableRequest req;
    req.set_table(table);
    rpc::ListRegionsResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->ListRegions(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, absl::StrCat("ListRegions ", table));
    std::vector<RegionStatus> out;
    for (const rpc::RegionStatus& r : resp.regions()) {
      RegionStatus o;
      o.name = r.name();
      o.encoded_name = r.encoded_name();
      o.start_key = r.start_key();
      o.end_key = r.end_key();
      o.id = r.id();
      o.state = r.state();
      o.server = r.server();
      o.store_file_bytes = r.store_file_bytes();
      o.store_files = r.store_files();
      o.memstore_bytes = r.memstore_bytes();
      o.read_requests = r.read_requests();
      o.write_requests = r.write_requests();
      out.push_back(std::move(o));
    }
    return out;
  }

  absl::StatusOr<ServerStatus> Status() override {
    rpc::StatusRequest req;
    rpc::StatusResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->Status(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "Status");
    ServerStatus out;
    out.version = resp.version();
    out.mode = resp.mode();
    out.uptime_seconds = resp.uptime_seconds();
    out.requests = resp.requests();
    out.block_cache_bytes = resp.block_cache_bytes();
    out.block_cache_capacity = resp.block_cache_capacity();
    out.resident_bytes = resp.resident_bytes();
    out.http_address = resp.http_address();
    out.verbs = resp.verbs();
    out.verbs_enabled = resp.verbs_enabled();
    out.verbs_endpoints = resp.verbs_endpoints();
    out.verbs_requests = resp.verbs_requests();
    out.verbs_connects_accepted = resp.verbs_connects_accepted();
    out.verbs_connects_rejected = resp.verbs_connects_rejected();
    out.verbs_malformed_frames = resp.verbs_malformed_frames();
    out.verbs_sessions = resp.verbs_sessions();
    out.tcp = resp.tcp();
    out.tcp_connections = resp.tcp_connections();
    out.tcp_requests = resp.tcp_requests();
    out.tcp_hellos_refused = resp.tcp_hellos_refused();
    out.tcp_malformed_frames = resp.tcp_malformed_frames();
    out.tcp_sessions = resp.tcp_sessions();
    out.connections_accepted = resp.connections_accepted();
    out.connections_refused = resp.connections_refused();
    out.open_descriptors = resp.open_descriptors();
    out.descriptor_limit = resp.descriptor_limit();
    for (const rpc::TableStatus& t : resp.tables()) {
      TableStatus ts;
      ts.name = t.name();
      ts.enabled = t.state() != rpc::TABLE_DISABLED;
      ts.failed_open = t.state() == rpc::TABLE_FAILED_OPEN;
      ts.error = t.error();
      ts.log_truncated_bytes = t.log_truncated_bytes();
      ts.log_skipped_records = t.log_skipped_records();
      ts.log_skipped_bytes = t.log_skipped_bytes();
      ts.memstore_bytes = t.memstore_bytes();
      ts.store_files = t.store_files();
      ts.flushes = t.flushes();
      ts.compactions = t.compactions();
      ts.regions = t.regions();
      out.tables.push_back(std::move(ts));
    }
    for (const rpc::ServerLoad& l : resp.servers()) {
      RegionServerLoad o;
      o.name = l.name();
      o.address = l.address();
      o.regions = l.regions();
      o.region_names.assign(l.region_names().begin(), l.region_names().end());
      o.requests = l.requests();
      o.memstore_bytes = l.memstore_bytes();
      o.store_files = l.store_files();
      o.resident_bytes = l.resident_bytes();
      o.uptime_seconds = l.uptime_seconds();
      o.error = l.error();
      out.servers.push_back(std::move(o));
    }
    out.dead_servers = resp.dead_servers();
    out.backup_masters.assign(resp.backup_masters().begin(), resp.backup_masters().end());
    return out;
  }

  absl::Status SetVerbs(bool enabled) override {
    rpc::SetVerbsRequest req;
    req.set_enabled(enabled);
    rpc::AdminResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      return path->admin_stub()->SetVerbs(ctx, req, &resp);
    });
    return WithContext(s, enabled ? "SetVerbs on" : "SetVerbs off");
  }

  absl::Status Grant(const Permission& p) override {
    rpc::GrantRequest req;
    req.set_principal(p.principal);
    req.set_permissions(p.actions);
    *req.mutable_scope() = rpc::ScopeProtoOf(p);
    return AdminCall(absl::StrCat("Grant ", p.actions, " to ", p.principal), req, &rpc::Admin::Stub::Grant);
  }

  absl::Status Revoke(const Permission& p) override {
    rpc::RevokeRequest req;
    req.set_principal(p.principal);
    *req.mutable_scope() = rpc::ScopeProtoOf(p);
    return AdminCall(absl::StrCat("Revoke from ", p.principal), req, &rpc::Admin::Stub::Revoke);
  }

  absl::Status SetQuota(const Quota& q) override {
    rpc::SetQuotaRequest req;
    req.set_user(q.user);
    req.set_namespace_(q.ns);
    req.set_table(q.table);
    req.set_throttle(q.throttle);
    req.set_limit(q.limit);
    return AdminCall(absl::StrCat("SetQuota ", q.limit), req, &rpc::Admin::Stub::SetQuota);
  }

  absl::Status CreateNamespace(const NamespaceInfo& ns) override {
    return AdminCall(absl::StrCat("CreateNamespace ", ns.name), NamespaceRequestOf(ns),
                     &rpc::Admin::Stub::CreateNamespace);
  }

  absl::Status ModifyNamespace(const NamespaceInfo& ns) override {
    return AdminCall(absl::StrCat("ModifyNamespace ", ns.name), NamespaceRequestOf(ns),
                     &rpc::Admin::Stub::ModifyNamespace);
  }

  absl::Status DropNamespace(const std::string& name) override {
    rpc::NamespaceNameRequest req;
    req.set_name(name);
    return AdminCall(absl::StrCat("DropNamespace ", name), req, &rpc::Admin::Stub::DropNamespace);
  }

  absl::StatusOr<NamespaceInfo> DescribeNamespace(const std::string& name) override {
    rpc::NamespaceNameRequest req;
    req.set_name(name);
    rpc::DescribeNamespaceResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->DescribeNamespace(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, absl::StrCat("DescribeNamespace ", name));
    NamespaceInfo out = NamespaceOf(resp.namespace_());
    out.tables.assign(resp.tables().begin(), resp.tables().end());
    return out;
  }

  absl::StatusOr<std::vector<NamespaceInfo>> ListNamespaces() override {
    rpc::ListNamespacesRequest req;
    rpc::ListNamespacesResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->ListNamespaces(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "ListNamespaces");
    std::vector<NamespaceInfo> out;
    for (const rpc::NamespaceDescriptor& d : resp.namespaces()) out.push_back(NamespaceOf(d));
    return out;
  }

  absl::StatusOr<std::vector<Quota>> ListQuotas() override {
    rpc::ListQuotasRequest req;
    rpc::ListQuotasResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->ListQuotas(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "ListQuotas");
    std::vector<Quota> out;
    for (const rpc::QuotaSetting& q : resp.settings()) {
      out.push_back(Quota{q.user(), q.namespace_(), q.table(), q.throttle_type(), q.limit_text()});
    }
    return out;
  }

  absl::StatusOr<std::vector<Permission>> UserPermissions(const Permission& scope) override {
    rpc::UserPermissionRequest req;
    req.set_principal(scope.principal);
    *req.mutable_scope() = rpc::ScopeProtoOf(scope);
    rpc::UserPermissionResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->UserPermissions(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "UserPermissions");
    std::vector<Permission> out;
    for (const rpc::UserPermission& u : resp.permissions()) {
      Permission p;
      p.principal = u.principal();
      p.actions = u.permissions();
      rpc::SetScopeFromProto(u.scope(), &p);
      out.push_back(std::move(p));
    }
    return out;
  }

  absl::StatusOr<Identity> WhoAmI() override {
    rpc::WhoAmIRequest req;
    rpc::WhoAmIResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->WhoAmI(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "WhoAmI");
    Identity id;
    id.user = resp.user();
    id.groups.assign(resp.groups().begin(), resp.groups().end());
    id.superuser = resp.superuser();
    id.authentication = resp.authentication();
    id.auth_enabled = resp.auth_enabled();
    return id;
  }

  absl::StatusOr<SnapshotDescription> Snapshot(const std::string& table, const std::string& name,
                                                int64_t ttl_seconds) override {
    rpc::SnapshotRequest req;
    req.set_table(table);
    req.set_name(name);
    req.set_ttl_seconds(ttl_seconds);
    rpc::SnapshotResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->Snapshot(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, absl::StrCat("Snapshot ", name, " of ", table));
    return SnapshotOf(resp.snapshot());
  }

  absl::StatusOr<std::vector<SnapshotDescription>> ListSnapshots(const std::string& table) override {
    rpc::ListSnapshotsRequest req;
    req.set_table(table);
    rpc::ListSnapshotsResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->ListSnapshots(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "ListSnapshots");
    std::vector<SnapshotDescription> out;
    for (const rpc::SnapshotDescription& d : resp.snapshots()) out.push_back(SnapshotOf(d));
    return out;
  }

  absl::Status DeleteSnapshot(const std::string& name) override {
    rpc::DeleteSnapshotRequest req;
    req.set_name(name);
    return AdminCall(absl::StrCat("DeleteSnapshot ", name), req, &rpc::Admin::Stub::DeleteSnapshot);
  }

  absl::Status CloneSnapshot(const std::string& snapshot, const std::string& table, bool restore_acl) override {
    rpc::CloneSnapshotRequest req;
    req.set_snapshot(snapshot);
    req.set_table(table);
    req.set_restore_acl(restore_acl);
    return AdminCall(absl::StrCat("CloneSnapshot ", snapshot, " as ", table), req, &rpc::Admin::Stub::CloneSnapshot);
  }

  absl::Status RestoreSnapshot(const std::string& snapshot, bool restore_acl) override {
    rpc::RestoreSnapshotRequest req;
    req.set_snapshot(snapshot);
    req.set_restore_acl(restore_acl);
    return AdminCall(absl::StrCat("RestoreSnapshot ", snapshot), req, &rpc::Admin::Stub::RestoreSnapshot);
  }

  absl::Status AddPeer(const ReplicationPeer& peer) override {
    rpc::AddPeerRequest req;
    rpc::ReplicationPeer* p = req.mutable_peer();
    p->set_id(peer.id);
    p->set_cluster_key(peer.cluster_key);
    p->set_enabled(peer.enabled);
    for (const auto& [table, families] : peer.table_cfs) {
      rpc::PeerTable* t = p->add_tables();
      t->set_table(table);
      for (const std::string& f : families) t->add_families(f);
    }
    return AdminCall(absl::StrCat("AddPeer ", peer.id), req, &rpc::Admin::Stub::AddPeer);
  }

  absl::Status RemovePeer(const std::string& id) override { return PeerCall("RemovePeer ", id, &rpc::Admin::Stub::RemovePeer); }
  absl::Status EnablePeer(const std::string& id) override { return PeerCall("EnablePeer ", id, &rpc::Admin::Stub::EnablePeer); }
  absl::Status DisablePeer(const std::string& id) override {
    return PeerCall("DisablePeer ", id, &rpc::Admin::Stub::DisablePeer);
  }

  absl::StatusOr<std::string> GenerateConsistencyToken(const std::string& table) override {
    rpc::ConsistencyTokenRequest req;
    req.set_table(table);
    rpc::ConsistencyTokenResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->GenerateConsistencyToken(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, absl::StrCat("GenerateConsistencyToken ", table));
    return resp.token();
  }

  absl::StatusOr<bool> CheckConsistency(const std::string& table, const std::string& token,
                                        std::string* waiting_for) override {
    rpc::CheckConsistencyRequest req;
    req.set_table(table);
    req.set_token(token);
    rpc::CheckConsistencyResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->CheckConsistency(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, absl::StrCat("CheckConsistency ", table));
    if (waiting_for != nullptr) *waiting_for = resp.waiting_for();
    return resp.consistent();
  }

  absl::StatusOr<std::vector<PeerStatus>> ListPeers() override {
    rpc::ListPeersRequest req;
    rpc::ListPeersResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      resp.Clear();
      return path->admin_stub()->ListPeers(ctx, req, &resp);
    });
    if (!s.ok()) return WithContext(s, "ListPeers");
    std::vector<PeerStatus> out;
    for (const rpc::PeerStatus& st : resp.peers()) {
      PeerStatus& o = out.emplace_back();
      o.peer.id = st.peer().id();
      o.peer.cluster_key = st.peer().cluster_key();
      o.peer.enabled = st.peer().enabled();
      for (const rpc::PeerTable& t : st.peer().tables()) {
        o.peer.table_cfs[t.table()].assign(t.families().begin(), t.families().end());
      }
      o.state = st.state();
      o.last_error = st.last_error();
      o.segment = st.segment();
      o.offset = st.offset();
      o.entries = st.entries();
      o.cells = st.cells();
      o.batches = st.batches();
      o.failed_calls = st.failed_calls();
      o.age_ms = st.age_ms();
      o.lag_bytes = st.lag_bytes();
    }
    return out;
  }

 private:
  absl::Status PeerCall(std::string_view op, const std::string& id,
                        grpc::Status (rpc::Admin::Stub::*method)(grpc::ClientContext*, const rpc::PeerRequest&,
                                                                 rpc::AdminResponse*)) {
    rpc::PeerRequest req;
    req.set_id(id);
    return AdminCall(absl::StrCat(AV(op), id), req, method);
  }

  static SnapshotDescription SnapshotOf(const rpc::SnapshotDescription& d) {
    return SnapshotDescription{d.name(), d.table(), d.created_ms(), d.ttl_seconds(),
                               d.regions(), d.files(), d.bytes(), d.only_bytes(), d.owner()};
  }

  using TableMethod = grpc::Status (rpc::Admin::Stub::*)(grpc::ClientContext*, const rpc::TableRequest&,
                                                         rpc::AdminResponse*);

  absl::Status TableCall(std::string_view op, const std::string& name, TableMethod method) {
    rpc::TableRequest req;
    req.set_table(name);
    return AdminCall(absl::StrCat(AV(op), " ", name), req, method);
  }
  // A unary admin call answered with an AdminResponse; `what` names it in an error.
  template <class Request>
  absl::Status AdminCall(std::string_view what, const Request& req,
                         grpc::Status (rpc::Admin::Stub::*method)(grpc::ClientContext*, const Request&,
                                                                  rpc::AdminResponse*)) {
    rpc::AdminResponse resp;
    absl::Status s = core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      return (path->admin_stub()->*method)(ctx, req, &resp);
    });
    return WithContext(s, what);
  }

  static rpc::NamespaceRequest NamespaceRequestOf(const NamespaceInfo& ns) {
    rpc::NamespaceRequest req;
    req.mutable_namespace_()->set_name(ns.name);
    rpc::KeptToProto(ns.configuration, req.mutable_namespace_()->mutable_configuration());
    return req;
  }
  static NamespaceInfo NamespaceOf(const rpc::NamespaceDescriptor& d) {
    NamespaceInfo out;
    out.name = d.name();
    out.configuration = rpc::KeptFromProto(d.configuration());
    return out;
  }

  Core* const core_;
};

}  // namespace

std::unique_ptr<Admin> NewAdmin(Core* core) { return std::make_unique<AdminImpl>(core); }

}  // namespace basalt::client_internal

namespace basalt {

absl::Status Admin::WaitForReplication(const std::string& table, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<std::string> token = GenerateConsistencyToken(table);
  if (!token.ok()) return token.status();
  std::string waiting;
  for (;;) {
    absl::StatusOr<bool> consistent = CheckConsistency(table, *token, &waiting);
    if (!consistent.ok()) return consistent.status();
    if (*consistent) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("WaitForReplication ", table, ": after ",
                                                      absl::FormatDuration(timeout), ", ", waiting));
    }
    absl::SleepFor(std::min(absl::Milliseconds(50), deadline - absl::Now()));
  }
}

}  // namespace basalt
