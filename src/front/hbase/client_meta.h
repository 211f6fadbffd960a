// HBase's ClientMetaService, answered from what the process knows of its cluster: the calls a
// 2.x client makes when it is given servers' addresses instead of a ZooKeeper quorum
// (RpcConnectionRegistry), and the answer to a call of a service or method not served here.
// Pure: a call in, an answer frame out (rpc_codec.h); the HBase port does the I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "proto/hbase/hbase_cluster.pb.h"
#include "src/front/hbase/rpc_codec.h"

namespace basalt::hbase {

// What ClientMetaService says.
struct ClusterFacts {
  std::string cluster_id;
  ServerName active_master;          // a standalone server names itself
  ServerName meta_server;            // where hbase:meta is served
  std::vector<ServerName> bootstrap; // servers a client may ask next time
};

inline constexpr char kClientMetaService[] = "ClientMetaService";
inline constexpr char kDoNotRetry[] = "org.apache.hadoop.hbase.DoNotRetryIOException";

// The answer to one call of ClientMetaService: GetClusterId, GetActiveMaster,
// GetMetaRegionLocations, GetBootstrapNodes, GetMasters (the active master only). Another method, or a request that does not parse,
// is answered with DoNotRetryIOException saying which (HBase's answer to an unknown method).
std::string AnswerClientMeta(const Call& call, const ClusterFacts& facts);

// The answer to a call of `service` that this port does not serve: DoNotRetryIOException naming
// the service and the method, so the client fails at once instead of retrying.
std::string AnswerNotServed(const Call& call, std::string_view service);

// hbase:meta's one region, as RegionLocation and meta rows describe it.
RegionInfo MetaRegionInfo();

}  // namespace basalt::hbase
