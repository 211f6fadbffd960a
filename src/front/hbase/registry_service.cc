#include "src/front/hbase/registry_service.h"

#include "common/status.h"

namespace basalt::hbase {

RegistryService::RegistryService(Facts facts, RunOn run_on) : Service(kClientMetaService), facts_(std::move(facts)) {
  // Every method has the one handler: the facts, then client_meta.h's answer for the method
  // (which refuses one it does not know by name).
  const Row<RegistryService> table[] = {
      {"GetClusterId", run_on, &RegistryService::Answer},
      {"GetActiveMaster", run_on, &RegistryService::Answer},
      {"GetMetaRegionLocations", run_on, &RegistryService::Answer},
      {"GetBootstrapNodes", run_on, &RegistryService::Answer},
      {"GetMasters", run_on, &RegistryService::Answer},
  };
  Serve(this, table);
}

absl::StatusOr<std::string> RegistryService::Answer(const Request& r) {
  absl::StatusOr<ClusterFacts> facts = facts_();
  if (!facts.ok()) {
    return EncodeException(r.id(), "java.io.IOException", std::string(facts.status().message()), /*do_not_retry=*/false);
  }
  return AnswerClientMeta(r.call, *facts);
}

RegistryService::Facts SelfFacts(std::string cluster_id, const ThisServer* self) {
  return [cluster_id = std::move(cluster_id), self]() -> absl::StatusOr<ClusterFacts> {
    ClusterFacts facts;
    facts.cluster_id = cluster_id;
    facts.active_master = self->name();
    facts.meta_server = self->name();
    facts.bootstrap = {self->name()};
    return facts;
  };
}

}  // namespace basalt::hbase
