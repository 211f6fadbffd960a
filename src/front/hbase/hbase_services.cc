#include "src/front/hbase/hbase_services.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/front/hbase/client_service.h"
#include "src/front/hbase/master_service.h"
#include "src/front/hbase/meta_table.h"
#include "src/front/hbase/region_admin_service.h"
#include "src/front/hbase/registry_service.h"
#include "src/front/hbase/server_directory.h"

namespace basalt::hbase {
namespace {

ClientService::Options ClientOptions(const ServiceParts& parts) {
  ClientService::Options o;
  o.quotas = parts.quotas;
  o.scanners.lease_ms = parts.scanner_lease_ms;
  o.scanners.max_scanners = parts.max_scanners;
  o.scanners.max_scanners_per_user = parts.max_scanners_per_user;
  return o;
}

std::unique_ptr<MasterService> MasterOf(HBaseFront* front, const ServiceParts& parts, const MetaTable* meta,
                                        ServerDirectory* directory, const SinkFigures* sink = nullptr) {
  MasterService::Options o;
  o.admin = parts.admin;
  o.meta = meta;
  o.directory = directory;
  o.self = front->self();
  o.cluster_id = parts.cluster_id;
  o.info_port = parts.info_port;
  o.sink = sink;
  o.balancer_on = parts.balancer_on;
  return std::make_unique<MasterService>(o);
}

// A sink's batches applied by this process's data service, every row of which must be here (a
// standalone server's); any row refused fails the batch (the source sends it again).
ApplyBatch AppliedHere(server::DataService* data) {
  return [data](const rpc::BatchMutateRequest& batch) -> absl::Status {
    rpc::BatchMutateResponse resp;
    BASALT_RETURN_IF_ERROR(data->BatchMutate(batch, &resp));
    for (const rpc::RowStatus& row : resp.results()) {
      if (row.code() == 0) continue;
      return absl::Status(static_cast<absl::StatusCode>(row.code()),
                          absl::StrCat("a replicated row of table ", batch.table(), ": ", row.message()));
    }
    return absl::OkStatus();
  };
}

std::unique_ptr<RegionAdminService> RegionAdminOf(HBaseFront* front, const ServiceParts& parts,
                                                  const ClientService* client, const MetaTable* regions) {
  RegionAdminService::Options o;
  o.admin = parts.admin;
  o.client = client;
  o.regions = regions;
  o.self = front->self();
  o.info_port = parts.info_port;
  o.apply = parts.apply_replicated;
  if (!o.apply && parts.data != nullptr) o.apply = AppliedHere(parts.data);
  o.cluster_id = parts.cluster_id;
  return std::make_unique<RegionAdminService>(o);
}

}  // namespace

void ServeAsStandalone(HBaseFront* front, const ServiceParts& parts) {
  auto directory = std::make_shared<ThisServerOnly>(front->self());
  auto meta = std::make_shared<MetaTable>(parts.admin, directory.get());
  ClientService::Options co = ClientOptions(parts);
  co.data = parts.data;
  co.meta = meta.get();
  auto client = std::make_unique<ClientService>(co);
  std::unique_ptr<RegionAdminService> region_admin = RegionAdminOf(front, parts, client.get(), meta.get());
  front->Serve(std::make_unique<RegistryService>(SelfFacts(parts.cluster_id, front->self()), RunOn::kLoop));
  // (Its sink's figures are in its own cluster status: it is its own master.)
  front->Serve(MasterOf(front, parts, meta.get(), directory.get(), &region_admin->sink_figures()));
  front->Serve(std::move(region_admin));
  front->Serve(std::move(client));
  front->Keep(std::move(meta));
  front->Keep(std::move(directory));
}

void ServeAsMaster(HBaseFront* front, const ServiceParts& parts, LiveRegionServers region_servers) {
  auto directory = std::make_shared<LiveRegistrations>(std::move(region_servers), parts.log);
  auto meta = std::make_shared<MetaTable>(parts.admin, directory.get());
  ClientService::Options co = ClientOptions(parts);
  co.meta = meta.get();
  front->Serve(std::make_unique<RegistryService>(SelfFacts(parts.cluster_id, front->self()), RunOn::kLoop));
  front->Serve(MasterOf(front, parts, meta.get(), directory.get()));
  front->Serve(std::make_unique<ClientService>(co));
  front->Keep(std::move(meta));
  front->Keep(std::move(directory));
}

void ServeAsRegionServer(HBaseFront* front, const ServiceParts& parts, ActiveMaster active_master) {
  // Its AdminService describes the regions open here as hbase:meta would.
  auto directory = std::make_shared<ThisServerOnly>(front->self());
  auto regions = std::make_shared<MetaTable>(parts.admin, directory.get());
  ClientService::Options co = ClientOptions(parts);
  co.data = parts.data;
  auto client = std::make_unique<ClientService>(co);
  // The registry of a region server, as HBase 2.6's: this cluster's id, the active master as the
  // master and hbase:meta's server, this server and the master as bootstrap nodes. The facts are
  // read from ZooKeeper, so off the loop. No master with an HBase port: an IOException the client
  // retries.
  const ThisServer* self = front->self();
  auto facts = [self, cluster_id = parts.cluster_id,
                active_master = std::move(active_master)]() -> absl::StatusOr<ClusterFacts> {
    absl::StatusOr<server::ServerRegistration> master = active_master();
    std::optional<ServerName> sn;
    if (master.ok()) {
      sn = HBaseNameOf(*master);
      if (!sn.has_value()) {
        master = absl::DataLossError(absl::StrCat("the active master's HBase address '", master->hbase, "' does not parse"));
      }
    }
    if (!master.ok()) {
      return absl::UnavailableError(absl::StrCat("this region server (", self->address(),
                                                 ") cannot name the active master: ", master.status().message()));
    }
    ClusterFacts f;
    f.cluster_id = cluster_id;
    f.active_master = *sn;
    f.meta_server = *sn;
    f.bootstrap = {self->name(), *sn};
    return f;
  };
  front->Serve(std::make_unique<RegistryService>(std::move(facts), RunOn::kPool));
  front->Serve(RegionAdminOf(front, parts, client.get(), regions.get()));
  front->Serve(std::move(client));
  front->Keep(std::move(regions));
  front->Keep(std::move(directory));
}

}  // namespace basalt::hbase
