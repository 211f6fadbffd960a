// MasterService's replication peer calls (master_service.h) over Basalt's peers
// (src/replication/peers.h, through the AdminService): what HBase's Admin and shell send for
// add_peer, remove_peer, enable_peer, disable_peer, list_peers, get_peer_config,
// set_peer_tableCFs and the rest, and what enable_table_replication asks before it sets the
// families' scope.
//
// A peer HBase describes and Basalt keeps differ in what they can say. Basalt ships every table
// (replicate_all, the default) or the tables named, of any namespace, with their families
// (TABLE_CFS). What Basalt cannot honour is refused by name, never kept and ignored: a
// replication endpoint class and its CONFIG and data (HBase's Java plug-ins), a BANDWIDTH limit,
// SERIAL, excluded tables or namespaces, and NAMESPACES (a namespace's tables, which Basalt's
// peers do not follow yet).

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "proto/hbase/hbase_replication.pb.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/data_convert.h"
#include "src/front/hbase/master_service.h"

namespace basalt::hbase {
namespace {

constexpr char kPeerNotFound[] = "org.apache.hadoop.hbase.ReplicationPeerNotFoundException";

// Basalt's errors in the classes HBase's client knows for peers.
absl::Status PeerException(absl::Status s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return s;
    case absl::StatusCode::kNotFound:
      return AsException(std::move(s), kPeerNotFound);
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kUnimplemented:
      return AsException(std::move(s), kDoNotRetry);
    default:
      return s;
  }
}

absl::Status Refused(std::string_view id, std::string_view why) {
  return AsException(absl::InvalidArgumentError(absl::StrCat("replication peer ", AV(id), ": ", AV(why))), kDoNotRetry);
}

// HBase's description of peer `id` as Basalt keeps it; what Basalt cannot honour is refused.
absl::StatusOr<rpc::ReplicationPeer> BasaltPeer(const std::string& id, const ReplicationPeer& hp) {
  if (!hp.replicationendpointimpl().empty()) {
    return Refused(id, absl::StrCat("a replication endpoint (", hp.replicationendpointimpl(),
                                    ") is an HBase plug-in; Basalt ships to HBase's own sink only"));
  }
  if (hp.configuration_size() > 0 || hp.data_size() > 0) {
    return Refused(id, "CONFIG and data are settings of an HBase endpoint; Basalt has none to give them to");
  }
  if (hp.bandwidth() > 0) return Refused(id, "BANDWIDTH is not built: Basalt ships as fast as the peer takes");
  if (hp.serial()) return Refused(id, "SERIAL is not built yet");
  if (hp.exclude_table_cfs_size() > 0 || hp.exclude_namespaces_size() > 0) {
    return Refused(id, "EXCLUDE_TABLECFS and EXCLUDE_NAMESPACES are not built: name the tables it gets instead");
  }
  rpc::ReplicationPeer p;
  p.set_id(id);
  p.set_cluster_key(hp.clusterkey());
  if (hp.replicate_all()) return p;  // every table (the tables of table_cfs are not kept, as HBase's)
  // (A Basalt peer follows named tables, or all of them.)
  if (hp.namespaces_size() > 0) {
    return Refused(id, "NAMESPACES is not built: name the tables in TABLE_CFS, or replicate every table");
  }
  if (hp.table_cfs_size() == 0) return Refused(id, "it would replicate no table: give TABLE_CFS");
  for (const TableCF& t : hp.table_cfs()) {
    rpc::PeerTable* pt = p.add_tables();
    BASALT_ASSIGN_OR_RETURN(*pt->mutable_table(), BasaltTableOf(t.table_name()));
    for (const std::string& f : t.families()) pt->add_families(f);
  }
  return p;
}

ReplicationPeerDescription DescribePeer(const rpc::ReplicationPeer& p) {
  ReplicationPeerDescription d;
  d.set_id(p.id());
  d.mutable_state()->set_state(p.enabled() ? ReplicationState::ENABLED : ReplicationState::DISABLED);
  ReplicationPeer* c = d.mutable_config();
  c->set_clusterkey(p.cluster_key());
  c->set_replicate_all(p.tables_size() == 0);
  c->set_bandwidth(0);
  c->set_serial(false);
  for (const rpc::PeerTable& t : p.tables()) {
    TableCF* cf = c->add_table_cfs();
    *cf->mutable_table_name() = TableNameOfBasalt(t.table());
    for (const std::string& f : t.families()) cf->add_families(f);
  }
  return d;
}

// Peer `id` as kept: ReplicationPeerNotFoundException when there is none.
absl::StatusOr<rpc::ReplicationPeer> FindPeer(server::AdminService* admin, const std::string& id) {
  rpc::ListPeersResponse all;
  BASALT_RETURN_IF_ERROR(PeerException(admin->ListPeers(rpc::ListPeersRequest(), &all)));
  for (const rpc::PeerStatus& st : all.peers()) {
    if (st.peer().id() == id) return st.peer();
  }
  return PeerException(absl::NotFoundError(absl::StrCat("replication peer ", id, " does not exist")));
}

}  // namespace

absl::StatusOr<std::string> MasterService::AddReplicationPeer(const Request& r) {
  AddReplicationPeerRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(rpc::ReplicationPeer peer, BasaltPeer(req.peer_id(), req.peer_config()));
  peer.set_enabled(req.peer_state().state() == ReplicationState::ENABLED);
  return Procedure<AddReplicationPeerResponse>(r, 0, 0, [&] {
    rpc::AddPeerRequest add;
    *add.mutable_peer() = peer;
    rpc::AdminResponse ignored;
    return PeerException(options_.admin->AddPeer(add, &ignored));
  });
}

absl::StatusOr<std::string> MasterService::UpdateReplicationPeerConfig(const Request& r) {
  UpdateReplicationPeerConfigRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(rpc::ReplicationPeer peer, BasaltPeer(req.peer_id(), req.peer_config()));
  return Procedure<UpdateReplicationPeerConfigResponse>(r, 0, 0, [&] {
    rpc::AddPeerRequest update;
    *update.mutable_peer() = peer;
    rpc::AdminResponse ignored;
    return PeerException(options_.admin->UpdatePeer(update, &ignored));
  });
}

// Remove, enable and disable: a procedure on one peer by id.
template <typename Req, typename Resp>
absl::StatusOr<std::string> MasterService::PeerProcedure(
    const Request& r, absl::Status (server::AdminService::*op)(const rpc::PeerRequest&, rpc::AdminResponse*)) {
  Req req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  return Procedure<Resp>(r, 0, 0, [&] {
    rpc::PeerRequest p;
    p.set_id(req.peer_id());
    rpc::AdminResponse ignored;
    return PeerException((options_.admin->*op)(p, &ignored));
  });
}

absl::StatusOr<std::string> MasterService::RemoveReplicationPeer(const Request& r) {
  return PeerProcedure<RemoveReplicationPeerRequest, RemoveReplicationPeerResponse>(r, &server::AdminService::RemovePeer);
}

absl::StatusOr<std::string> MasterService::EnableReplicationPeer(const Request& r) {
  return PeerProcedure<EnableReplicationPeerRequest, EnableReplicationPeerResponse>(r, &server::AdminService::EnablePeer);
}

absl::StatusOr<std::string> MasterService::DisableReplicationPeer(const Request& r) {
  return PeerProcedure<DisableReplicationPeerRequest, DisableReplicationPeerResponse>(r,
                                                                                    &server::AdminService::DisablePeer);
}

absl::StatusOr<std::string> MasterService::GetReplicationPeerConfig(const Request& r) {
  GetReplicationPeerConfigRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(rpc::ReplicationPeer peer, FindPeer(options_.admin, req.peer_id()));
  GetReplicationPeerConfigResponse resp;
  resp.set_peer_id(peer.id());
  *resp.mutable_peer_config() = DescribePeer(peer).config();
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::IsReplicationPeerEnabled(const Request& r) {
  GetReplicationPeerStateRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(rpc::ReplicationPeer peer, FindPeer(options_.admin, req.peer_id()));
  GetReplicationPeerStateResponse resp;
  resp.set_is_enabled(peer.enabled());
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> MasterService::ListReplicationPeers(const Request& r) {
  ListReplicationPeersRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  std::unique_ptr<NamePattern> pattern;
  if (req.has_regex()) {
    BASALT_ASSIGN_OR_RETURN(pattern, NamePattern::Compile("peer id", req.regex()));
  }
  rpc::ListPeersResponse all;
  absl::Status listed = options_.admin->ListPeers(rpc::ListPeersRequest(), &all);
  // (A cluster keeps no peers yet: it has none, which HBase's enable_table_replication asks first.)
  if (!listed.ok() && !absl::IsUnimplemented(listed)) return PeerException(std::move(listed));
  ListReplicationPeersResponse resp;
  for (const rpc::PeerStatus& st : all.peers()) {
    if (pattern != nullptr && !pattern->Matches(st.peer().id())) continue;
    *resp.add_peer_desc() = DescribePeer(st.peer());
  }
  return EncodeResponse(r.id(), resp);
}

}  // namespace basalt::hbase
