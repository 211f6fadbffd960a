#include "src/front/hbase/region_admin_service.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "common/metrics.h"
#include "common/status.h"
#include "proto/hbase/hbase_master.pb.h"
#include "proto/hbase/hbase_replication.pb.h"
#include "src/front/hbase/replication_sink.h"

namespace basalt::hbase {

RegionAdminService::RegionAdminService(const Options& options)
    : Service("AdminService"), options_(options), sink_budget_(options.max_sink_bytes) {
  static constexpr Row<RegionAdminService> kMethods[] = {
      {"GetRegionInfo", RunOn::kPool, &RegionAdminService::GetRegionInfo},
      {"GetOnlineRegion", RunOn::kPool, &RegionAdminService::GetOnlineRegion},
      {"GetServerInfo", RunOn::kPool, &RegionAdminService::GetServerInfo},
      {"FlushRegion", RunOn::kPool, &RegionAdminService::FlushRegion},
      {"CompactRegion", RunOn::kPool, &RegionAdminService::CompactRegion},
      {"ReplicateWALEntry", RunOn::kPool, &RegionAdminService::ReplicateWALEntry},
  };
  Serve(this, kMethods);
}

absl::Status RegionAdminService::Authorize(const Request& r) const {
  if (r.method() == "ReplicateWALEntry") {
    return r.access->CheckGlobal(*r.caller, "AdminService.ReplicateWALEntry", server::kPermWrite);
  }
  return Service::Authorize(r);
}

absl::StatusOr<std::string> RegionAdminService::GetRegionInfo(const Request& r) {
  GetRegionInfoRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(NamedRegion region, options_.client->Served(req.region()));
  GetRegionInfoResponse resp;
  BASALT_ASSIGN_OR_RETURN(*resp.mutable_region_info(), options_.regions->RegionInfoOf(region, req.region()));
  if (req.compaction_state()) resp.set_compaction_state(GetRegionInfoResponse::NONE);
  resp.set_splittable(true);
  resp.set_mergeable(true);
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> RegionAdminService::GetOnlineRegion(const Request& r) {
  GetOnlineRegionResponse resp;
  BASALT_ASSIGN_OR_RETURN(std::vector<MetaTable::Row> rows, options_.regions->Rows(""));
  for (const MetaTable::Row& row : rows) {
    for (const Cell& c : row.result.cell()) {
      if (c.qualifier() == "regioninfo") resp.add_region_info()->ParseFromString(c.value().substr(4));
    }
  }
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> RegionAdminService::GetServerInfo(const Request& r) {
  GetServerInfoResponse resp;
  *resp.mutable_server_info()->mutable_server_name() = options_.self->name();
  if (options_.info_port != 0) resp.mutable_server_info()->set_webui_port(static_cast<uint32_t>(options_.info_port));
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> RegionAdminService::TableOfRegion(const RegionSpecifier& spec) const {
  BASALT_ASSIGN_OR_RETURN(NamedRegion region, options_.client->Served(spec));
  if (region.meta) return absl::InvalidArgumentError("hbase:meta is Basalt's basalt:meta: flush and compact it there");
  return region.table;
}

// Basalt flushes and compacts a table's regions together: a region's flush or compaction is its
// table's (the same data on disk after; a minor compaction is a major one).
absl::StatusOr<std::string> RegionAdminService::FlushRegion(const Request& r) {
  FlushRegionRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, TableOfRegion(req.region()));
  rpc::TableRequest t;
  t.set_table(table);
  rpc::AdminResponse ignored;
  BASALT_RETURN_IF_ERROR(options_.admin->Flush(t, &ignored));
  FlushRegionResponse resp;
  resp.set_last_flush_time(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())));
  resp.set_flushed(true);
  return EncodeResponse(r.id(), resp);
}

absl::StatusOr<std::string> RegionAdminService::CompactRegion(const Request& r) {
  CompactRegionRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  BASALT_ASSIGN_OR_RETURN(std::string table, TableOfRegion(req.region()));
  rpc::TableRequest t;
  t.set_table(table);
  rpc::AdminResponse ignored;
  BASALT_RETURN_IF_ERROR(options_.admin->MajorCompact(t, &ignored));
  return EncodeResponse(r.id(), CompactRegionResponse());
}

// Every table's rows in one batch, synced to the log before the answer (the sink's contract), as
// the source's log had them; any row refused fails the call, and the source sends the batch again
// (applying it twice changes nothing: every cell carries its timestamp).
absl::StatusOr<std::string> RegionAdminService::ReplicateWALEntry(const Request& r) {
  ReplicateWALEntryRequest req;
  BASALT_RETURN_IF_ERROR(Parse(r.call, &req));
  if (!options_.apply) return absl::UnimplementedError("this process takes no replicated edits");
  const uint64_t bytes = r.call.param.size() + r.call.cell_block.size();
  absl::Status s = sink_budget_.Take(bytes);
  if (s.ok()) {
    s = ApplyReplicated(req, r.call.cell_block);
    sink_budget_.Give(bytes);
  }
  (s.ok() ? figures_.batches : figures_.failed_batches).fetch_add(1, std::memory_order_relaxed);
  if (!s.ok()) return s;
  uint64_t newest = 0;
  for (const WALEntry& e : req.entry()) newest = std::max(newest, e.key().write_time());
  if (newest > 0) {
    figures_.last_write_time_ms.store(static_cast<int64_t>(newest), std::memory_order_relaxed);
    figures_.age_ms.store(absl::ToUnixMillis(absl::Now()) - static_cast<int64_t>(newest), std::memory_order_relaxed);
  }
  return EncodeResponse(r.id(), ReplicateWALEntryResponse());
}

absl::Status RegionAdminService::ApplyReplicated(const ReplicateWALEntryRequest& req, std::string_view cell_block) {
  BASALT_ASSIGN_OR_RETURN(SinkEdits edits, SinkEditsOf(req, cell_block, options_.cluster_id));
  for (rpc::BatchMutateRequest& batch : edits.batches) {
    batch.set_durability(rpc::DURABILITY_SYNC_WAL);
    BASALT_RETURN_IF_ERROR(options_.apply(batch));
  }
  figures_.cells.fetch_add(edits.cells, std::memory_order_relaxed);
  return absl::OkStatus();
}

void RegionAdminService::RegisterMetrics(metrics::Registry* r) const {
  auto read = [](const auto& v) { return [&v] { return static_cast<double>(v.load(std::memory_order_relaxed)); }; };
  absl::Status s = r->AddCounterFunction("basalt_replication_sink_cells_total",
                                         "Cells an HBase replication source sent here, applied.", {}, read(figures_.cells));
  s.Update(r->AddCounterFunction("basalt_replication_sink_batches_total",
                                 "ReplicateWALEntry calls applied whole.", {}, read(figures_.batches)));
  s.Update(r->AddCounterFunction("basalt_replication_sink_failed_batches_total",
                                 "ReplicateWALEntry calls refused (the source sends them again).", {},
                                 read(figures_.failed_batches)));
  s.Update(r->AddGauge("basalt_replication_sink_age_ms",
                       "Age, at its application, of the newest edit of the last batch applied (by the source's clock).",
                       {}, read(figures_.age_ms)));
  s.IgnoreError();  // (a second front end in one process: the first one's figures stand)
}

}  // namespace basalt::hbase
