#include "src/front/hbase/client_meta.h"

#include "absl/strings/str_cat.h"
#include "proto/hbase/hbase_registry.pb.h"

namespace basalt::hbase {
namespace {

// The request of `call` parsed as `M`, or the DoNotRetryIOException answer saying it did not.
template <typename M>
bool ParseRequest(const Call& call, M* request, std::string* answer) {
  if (request->ParsePartialFromString(call.param) && request->IsInitialized()) return true;
  *answer = EncodeException(call.header.call_id(), kDoNotRetry,
                            absl::StrCat("the request of ", call.header.method_name(), " does not parse"),
                            /*do_not_retry=*/true);
  return false;
}

}  // namespace

RegionInfo MetaRegionInfo() {
  RegionInfo r;
  r.set_region_id(1);
  r.mutable_table_name()->set_namespace_("hbase");
  r.mutable_table_name()->set_qualifier("meta");
  r.set_start_key("");
  r.set_end_key("");
  r.set_offline(false);
  r.set_split(false);
  r.set_replica_id(0);
  return r;
}

std::string AnswerNotServed(const Call& call, std::string_view service) {
  return EncodeException(call.header.call_id(), kDoNotRetry,
                         absl::StrCat("method ", call.header.method_name(), " of ", std::string(service),
                                      " is not served by Basalt's HBase port"),
                         /*do_not_retry=*/true);
}

std::string AnswerClientMeta(const Call& call, const ClusterFacts& facts) {
  const std::string& method = call.header.method_name();
  const uint32_t id = call.header.call_id();
  std::string answer;
  if (method == "GetClusterId") {
    GetClusterIdRequest req;
    if (!ParseRequest(call, &req, &answer)) return answer;
    GetClusterIdResponse resp;
    resp.set_cluster_id(facts.cluster_id);
    return EncodeResponse(id, resp);
  }
  if (method == "GetActiveMaster") {
    GetActiveMasterRequest req;
    if (!ParseRequest(call, &req, &answer)) return answer;
    GetActiveMasterResponse resp;
    *resp.mutable_server_name() = facts.active_master;
    return EncodeResponse(id, resp);
  }
  if (method == "GetMetaRegionLocations") {
    GetMetaRegionLocationsRequest req;
    if (!ParseRequest(call, &req, &answer)) return answer;
    GetMetaRegionLocationsResponse resp;
    RegionLocation* loc = resp.add_meta_locations();
    *loc->mutable_region_info() = MetaRegionInfo();
    *loc->mutable_server_name() = facts.meta_server;
    loc->set_seq_num(0);
    return EncodeResponse(id, resp);
  }
  if (method == "GetBootstrapNodes") {
    GetBootstrapNodesRequest req;
    if (!ParseRequest(call, &req, &answer)) return answer;
    GetBootstrapNodesResponse resp;
    for (const ServerName& s : facts.bootstrap) *resp.add_server_name() = s;
    return EncodeResponse(id, resp);
  }
  if (method == "GetMasters") {
    GetMastersRequest req;
    if (!ParseRequest(call, &req, &answer)) return answer;
    GetMastersResponse resp;
    GetMastersResponseEntry* active = resp.add_master_servers();
    *active->mutable_server_name() = facts.active_master;
    active->set_is_active(true);
    return EncodeResponse(id, resp);
  }
  return AnswerNotServed(call, kClientMetaService);
}

}  // namespace basalt::hbase
