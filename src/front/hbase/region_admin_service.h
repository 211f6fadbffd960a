// HBase's AdminService, a region server's: what the shell's flush, compact and major_compact of a
// region and the client's region queries ask of the server holding a region (GetRegionInfo,
// GetOnlineRegion, GetServerInfo, FlushRegion, CompactRegion). It answers for the regions this
// process's ClientService serves (ClientService::Served), describing them through a MetaTable over
// the process's own AdminService. And what an HBase cluster replicating into this one sends its
// sinks (ReplicateWALEntry, replication_sink.h), applied through the data service. Every method
// runs on the pool.
#pragma once


#include "proto/hbase/hbase_replication.pb.h"
#include "src/front/hbase/client_service.h"
#include "src/front/hbase/hbase_service.h"
#include "src/front/hbase/meta_table.h"
#include "src/front/hbase/replication_sink.h"
#include "src/services/service.h"

namespace basalt::hbase {

class RegionAdminService final : public Service {
 public:
  struct Options {
    server::AdminService* admin = nullptr;
    const ClientService* client = nullptr;  // which regions are served here
    const MetaTable* regions = nullptr;     // how they are described
    const ThisServer* self = nullptr;
    int info_port = 0;  // the HTTP port (GetServerInfo's web UI port), 0: none
    ApplyBatch apply;                     // where replicated edits are written; empty: nowhere
    std::string cluster_id;               // this cluster's: edits that name it are not applied again
    uint64_t max_sink_bytes = 256ull << 20;  // replicated batches applied at once (SinkBudget)
  };
  // Under auth: ReplicateWALEntry needs global W (as HBase's preReplicateLogEntries), since it
  // writes into any table; every other call global A (Service's default).
  absl::Status Authorize(const Request& r) const override;
  // Everything `options` points to must outlive the service.
  explicit RegionAdminService(const Options& options);
  // The sink's figures: basalt_replication_sink_{cells,batches,failed_batches}_total, and
  // basalt_replication_sink_age_ms (HBase's ageOfLastAppliedOp: how old, by its source's clock,
  // the newest edit of the last batch applied was when it was applied).
  void RegisterMetrics(metrics::Registry* registry) const override;
  // What the sink applied (a standalone server's MasterService reports it in the cluster status).
  const SinkFigures& sink_figures() const { return figures_; }

 private:
  absl::StatusOr<std::string> GetRegionInfo(const Request& r);
  absl::StatusOr<std::string> GetOnlineRegion(const Request& r);
  absl::StatusOr<std::string> GetServerInfo(const Request& r);
  absl::StatusOr<std::string> FlushRegion(const Request& r);
  absl::StatusOr<std::string> CompactRegion(const Request& r);
  absl::StatusOr<std::string> ReplicateWALEntry(const Request& r);
  absl::Status ApplyReplicated(const ReplicateWALEntryRequest& req, std::string_view cell_block);
  // The table of the region `spec` names, which must be served here and not be hbase:meta.
  absl::StatusOr<std::string> TableOfRegion(const RegionSpecifier& spec) const;

  const Options options_;
  SinkBudget sink_budget_;
  SinkFigures figures_;
};

}  // namespace basalt::hbase
