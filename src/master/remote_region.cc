#include "src/master/remote_region.h"

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/schema/meta.h"
#include "src/services/service.h"
#include "src/schema/table_errors.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::master {

rpc::Admin::Stub* RegionServers::Stub(const std::string& server) {
  absl::MutexLock l(&mu_);
  std::unique_ptr<rpc::Admin::Stub>& stub = stubs_[server];
  if (stub == nullptr) {
    stub = rpc::Admin::NewStub(CreateBasaltChannel(server, security_));
  }
  return stub.get();
}

int64_t StartCodeOf(const std::string& node) {
  const size_t comma = node.rfind(',');
  int64_t code = 0;
  if (comma == std::string::npos || !absl::SimpleAtoi(node.substr(comma + 1), &code)) return 0;
  return code;
}

absl::Status RegionServers::CheckLeading() const {
  if (!leading_ || leading_()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("this master (epoch ", epoch_,
                                             ") is no longer the active one: it calls no region server"));
}

namespace {
// Calls a region server's Admin method with the servers' deadline; the reply's status, naming
// the server. A refusal by another run of the server than the one the call names (WrongServer)
// is Unavailable: the run it was for is gone, so the call did nothing, and what that run held is
// recovered from its log once the master sees the new run (Master::Reconcile).
template <class Req, class Resp>
absl::Status CallServer(RegionServers* servers, const std::string& server,
                        grpc::Status (rpc::Admin::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                        const Req& req, Resp* resp, absl::Duration timeout = absl::ZeroDuration()) {
  grpc::ClientContext ctx;
  // (Checked before each call: a master that lost its lease, or its place, moves nothing.)
  BASALT_RETURN_IF_ERROR(servers->CheckLeading());
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + (timeout > absl::ZeroDuration() ? timeout : servers->timeout())));
  absl::Status s = FromGrpcStatus((servers->Stub(server)->*method)(&ctx, req, resp));
  if (s.ok()) return s;
  if (WrongServerOf(s).has_value()) return absl::UnavailableError(absl::StrCat("region server ", server, ": ", s.message()));
  return absl::Status(s.code(), absl::StrCat("region server ", server, ": ", s.message()));
}
}  // namespace

RemoteRegionHandle::RemoteRegionHandle(RegionServers* servers, std::string server, std::string node,
                                       std::string encoded_name, std::function<void()> on_release)
    : servers_(servers), server_(std::move(server)), node_(std::move(node)), encoded_(std::move(encoded_name)),
      on_release_(std::move(on_release)) {}

RemoteRegionHandle::~RemoteRegionHandle() {
  if (on_release_) on_release_();
}

absl::StatusOr<rpc::RegionOpResponse> RemoteRegionHandle::Op(rpc::RegionOp op, const std::string& snapshot_dir) const {
  rpc::RegionOpRequest req;
  req.set_region(encoded_);
  req.set_op(op);
  req.set_snapshot_dir(snapshot_dir);
  req.set_start_code(StartCodeOf(node_));
  req.set_master_epoch(servers_->epoch());
  rpc::RegionOpResponse resp;
  BASALT_RETURN_IF_ERROR(CallServer(servers_, server_, &rpc::Admin::Stub::RegionOperation, req, &resp,
                                    op == rpc::REGION_LOAD ? servers_->load_timeout() : absl::ZeroDuration()));
  return resp;
}

absl::Status RemoteRegionHandle::Flush() { return Op(rpc::REGION_FLUSH).status(); }

absl::Status RemoteRegionHandle::MajorCompact() { return Op(rpc::REGION_MAJOR_COMPACT).status(); }

absl::StatusOr<std::string> RemoteRegionHandle::SplitPoint() const {
  BASALT_ASSIGN_OR_RETURN(rpc::RegionOpResponse resp, Op(rpc::REGION_SPLIT_POINT));
  return resp.split_point();
}

absl::StatusOr<Region::SnapshotFiles> RemoteRegionHandle::Snapshot(const std::string& dir) {
  BASALT_ASSIGN_OR_RETURN(rpc::RegionOpResponse resp, Op(rpc::REGION_SNAPSHOT, dir));
  return Region::SnapshotFiles{resp.snapshot_files(), resp.snapshot_bytes()};
}

absl::Status RemoteRegionHandle::Close() {
  rpc::CloseRegionRequest req;
  req.set_region(encoded_);
  req.set_start_code(StartCodeOf(node_));
  req.set_master_epoch(servers_->epoch());
  rpc::AdminResponse resp;
  absl::Status s = CallServer(servers_, server_, &rpc::Admin::Stub::CloseRegion, req, &resp);
  // Closed there already, by the very run that opened it: another run's "not here" never comes
  // back as NotFound (it is refused as for another run, so the region stays where meta says until
  // that run's log is split).
  if (absl::IsNotFound(s)) return absl::OkStatus();
  return s;
}

RegionStats RemoteRegionHandle::GetStats() const {
  absl::StatusOr<rpc::RegionOpResponse> resp = Op(rpc::REGION_LOAD);
  if (resp.ok()) return server::RegionStatsFromProto(resp->load());
  RegionStats st;
  st.failed = absl::StrCat("figures unknown: ", resp.status().message());
  st.reference_files = 1;
  return st;
}

server::PlacedRegion Adopt(RegionServers* servers, const std::string& server, const std::string& node,
                           const server::TableSpec& spec, const server::RegionInfo& info,
                           std::function<void()> on_release) {
  // Data calls on its rows reach the master only from a client whose meta is out of date.
  RegionDescriptor desc = server::DescriptorOf(spec, info);
  absl::Status not_served =
      NotServingRegionError(info.EncodedName(), absl::StrCat("region ", desc.name, " is served by ", server,
                                                             ", not by the master; locate it in ", server::kMetaTableName));
  return server::PlacedRegion{
      server::NewRefusingRegion(std::move(desc), std::move(not_served), ""),
      std::make_shared<RemoteRegionHandle>(servers, server, node, info.EncodedName(), std::move(on_release)), server};
}

absl::StatusOr<server::PlacedRegion> OpenOn(RegionServers* servers, const std::string& server, const std::string& node,
                                            const server::TableSpec& spec, const server::RegionInfo& info,
                                            std::function<void()> on_release) {
  rpc::OpenRegionRequest req;
  *req.mutable_table() = server::TableToProto(spec);
  *req.mutable_region() = server::RegionSpecToProto(info);
  req.set_start_code(StartCodeOf(node));
  req.set_master_epoch(servers->epoch());
  rpc::OpenRegionResponse resp;
  absl::Status s = CallServer(servers, server, &rpc::Admin::Stub::OpenRegion, req, &resp);
  if (!s.ok() && !absl::IsAlreadyExists(s)) return s;
  return Adopt(servers, server, node, spec, info, std::move(on_release));
}

absl::Status ServerStatus(RegionServers* servers, const std::string& server, rpc::StatusResponse* resp) {
  return CallServer(servers, server, &rpc::Admin::Stub::Status, rpc::StatusRequest(), resp, servers->load_timeout());
}

absl::Status ServerPeers(RegionServers* servers, const std::string& server, rpc::ListPeersResponse* resp) {
  return CallServer(servers, server, &rpc::Admin::Stub::ListPeers, rpc::ListPeersRequest(), resp,
                    servers->load_timeout());
}

absl::StatusOr<std::string> ServerNotReplicated(RegionServers* servers, const std::string& server,
                                                const std::string& table, const rpc::ConsistencyToken& token) {
  rpc::CheckConsistencyRequest req;
  req.set_table(table);
  req.set_token(token.SerializeAsString());
  rpc::CheckConsistencyResponse resp;
  BASALT_RETURN_IF_ERROR(
      CallServer(servers, server, &rpc::Admin::Stub::CheckConsistency, req, &resp, servers->load_timeout()));
  return resp.consistent() ? std::string() : resp.waiting_for();
}

absl::StatusOr<std::vector<server::RegionInfo>> HostedOn(RegionServers* servers, const std::string& server,
                                                         const std::string& node, absl::Duration timeout) {
  rpc::HostedRegionsRequest req;
  req.set_start_code(StartCodeOf(node));
  req.set_master_epoch(servers->epoch());
  rpc::HostedRegionsResponse resp;
  BASALT_RETURN_IF_ERROR(CallServer(servers, server, &rpc::Admin::Stub::HostedRegions, req, &resp, timeout));
  std::vector<server::RegionInfo> out;
  for (const rpc::RegionSpec& r : resp.regions()) {
    BASALT_ASSIGN_OR_RETURN(server::RegionInfo info, server::RegionFromProto(r));
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace basalt::master
