// What each Basalt process serves on its HBase port (docs/DESIGN.md §15), as HBase divides its
// services between a master and its region servers:
//   a standalone server   the registry (naming itself), MasterService, AdminService, and
//                         ClientService with hbase:meta and every table's regions;
//   a cluster's master    the registry (naming itself), MasterService, and ClientService with
//                         hbase:meta only, whose regions name the region servers' HBase ports;
//   a region server       the registry (naming the active master), AdminService, and ClientService
//                         with the regions open on it.
// What a process does not serve is absent from its front end and refused by name there.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/cluster/cluster_member.h"
#include "src/front/hbase/hbase_front.h"
#include "src/front/hbase/replication_sink.h"
#include "src/security/quotas.h"
#include "src/services/service.h"

namespace basalt::hbase {

// The process's parts the services answer from. They must outlive the front end.
struct ServiceParts {
  server::DataService* data = nullptr;
  server::AdminService* admin = nullptr;
  server::Quotas* quotas = nullptr;  // the quotas data calls pass; null: none
  std::string cluster_id;            // what the registry and the cluster status say
  ApplyBatch apply_replicated;       // where an HBase source's edits go (empty: `data`, every row here)
  int info_port = 0;                 // the HTTP port, 0: none
  int64_t scanner_lease_ms = 60000;  // HBase's scanner lease
  int max_scanners = 10000;
  int max_scanners_per_user = 0;  // with authentication; 0: no cap
  bool balancer_on = false;       // a cluster's master that balances on its own (balancer_period_ms > 0)
  std::function<void(std::string_view)> log;
};

// A region server's registry reads the active master's registration (its HBase port) each call.
using ActiveMaster = std::function<absl::StatusOr<server::ServerRegistration>()>;
// A master's directory: the live region servers' registrations.
using LiveRegionServers = std::function<absl::StatusOr<std::vector<server::ServerRegistration>>()>;

void ServeAsStandalone(HBaseFront* front, const ServiceParts& parts);
void ServeAsMaster(HBaseFront* front, const ServiceParts& parts, LiveRegionServers region_servers);
void ServeAsRegionServer(HBaseFront* front, const ServiceParts& parts, ActiveMaster active_master);

}  // namespace basalt::hbase
