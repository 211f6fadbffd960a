// HBase's ClientMetaService, the RPC registry (RpcConnectionRegistry): the calls a 2.x client makes
// when it is given servers' addresses (hbase.client.bootstrap.servers) instead of a ZooKeeper
// quorum: the cluster id, the active master, meta's location, bootstrap nodes, and 2.4's
// GetMasters. The answers are client_meta.h's; what they say comes from the process:
//   - a standalone server and the active master name themselves (SelfFacts), answered on the loop;
//   - a region server names the active master, read from ZooKeeper, answered on the pool (its
//     facts function may block), as HBase 2.6's region servers answer.
#pragma once

#include <functional>

#include "absl/status/statusor.h"
#include "src/front/hbase/client_meta.h"
#include "src/front/hbase/hbase_service.h"

namespace basalt::hbase {

class RegistryService final : public Service {
 public:
  // What the registry says, each call; an error is answered as a java.io.IOException, which the
  // client retries (its message says why).
  using Facts = std::function<absl::StatusOr<ClusterFacts>()>;
  RegistryService(Facts facts, RunOn run_on);

  // Any authenticated caller: where the cluster is, as HBase's ZooKeeper records are to anyone.
  absl::Status Authorize(const Request&) const override { return absl::OkStatus(); }

 private:
  absl::StatusOr<std::string> Answer(const Request& r);

  const Facts facts_;
};

// A process that is the cluster's master and meta's server itself: `cluster_id`, and `self` as the
// active master, meta's server and the one bootstrap node.
RegistryService::Facts SelfFacts(std::string cluster_id, const ThisServer* self);

}  // namespace basalt::hbase
