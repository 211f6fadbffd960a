#include "src/services/region_server_admin.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/services/proto_convert.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

absl::Status RegionServerAdmin::CheckRun(const char* what, int64_t start_code, int64_t master_epoch) {
  if (start_code != 0 && start_code != host_->start_code()) {
    return WrongServerError(host_->ServerName(), host_->start_code(),
                            absl::StrCat(what, " is for the run of ", host_->ServerName(), " started at ", start_code,
                                         "; this is the run started at ", host_->start_code(),
                                         " (the other is gone: what it held is in its log)"));
  }
  if (master_epoch == 0) return absl::OkStatus();
  int64_t seen = master_epoch_.load(std::memory_order_acquire);
  while (seen < master_epoch && !master_epoch_.compare_exchange_weak(seen, master_epoch, std::memory_order_acq_rel)) {
  }
  if (master_epoch >= seen) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(what, " from a deposed master (epoch ", master_epoch,
                                                    "): a master of epoch ", seen, " has taken over"));
}

absl::Status RegionServerAdmin::OpenRegion(const rpc::OpenRegionRequest& req, rpc::OpenRegionResponse* resp) {
  BASALT_RETURN_IF_ERROR(CheckRun("OpenRegion", req.start_code(), req.master_epoch()));
  BASALT_ASSIGN_OR_RETURN(TableSpec spec, TableFromProto(req.table()));
  BASALT_ASSIGN_OR_RETURN(RegionInfo info, RegionFromProto(req.region()));
  if (info.table != spec.name) {
    return absl::InvalidArgumentError(absl::StrCat("region of table ", info.table, " opened as table ", spec.name));
  }
  BASALT_RETURN_IF_ERROR(host_->OpenRegion(spec, info));
  resp->set_server(host_->ServerName());
  return absl::OkStatus();
}

absl::Status RegionServerAdmin::CloseRegion(const rpc::CloseRegionRequest& req, rpc::AdminResponse*) {
  BASALT_RETURN_IF_ERROR(CheckRun("CloseRegion", req.start_code(), req.master_epoch()));
  return host_->CloseRegion(req.region());
}

absl::Status RegionServerAdmin::RegionOperation(const rpc::RegionOpRequest& req, rpc::RegionOpResponse* resp) {
  BASALT_RETURN_IF_ERROR(CheckRun("RegionOperation", req.start_code(), req.master_epoch()));
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Region> region, host_->HostedRegionNamed(req.region()));
  switch (req.op()) {
    case rpc::REGION_LOAD: break;
    case rpc::REGION_FLUSH: BASALT_RETURN_IF_ERROR(region->Flush()); break;
    case rpc::REGION_MAJOR_COMPACT: BASALT_RETURN_IF_ERROR(region->MajorCompact()); break;
    case rpc::REGION_SPLIT_POINT: {
      BASALT_ASSIGN_OR_RETURN(std::string at, region->SplitPoint());
      resp->set_split_point(std::move(at));
      break;
    }
    case rpc::REGION_SNAPSHOT: {
      if (req.snapshot_dir().empty()) return absl::InvalidArgumentError("a region's snapshot names no directory");
      BASALT_ASSIGN_OR_RETURN(Region::SnapshotFiles taken, region->Snapshot(req.snapshot_dir()));
      resp->set_snapshot_files(taken.files);
      resp->set_snapshot_bytes(taken.bytes);
      break;
    }
    default: return absl::InvalidArgumentError(absl::StrCat("unknown region operation ", static_cast<int>(req.op())));
  }
  *resp->mutable_load() = RegionLoadToProto(region->GetStats());
  return absl::OkStatus();
}

absl::Status RegionServerAdmin::HostedRegions(const rpc::HostedRegionsRequest& req, rpc::HostedRegionsResponse* resp) {
  BASALT_RETURN_IF_ERROR(CheckRun("HostedRegions", req.start_code(), req.master_epoch()));
  resp->set_server(host_->ServerName());
  resp->set_start_code(host_->start_code());
  for (const auto& [spec, info] : host_->HostedRegions()) *resp->add_regions() = RegionSpecToProto(info);
  return absl::OkStatus();
}

}  // namespace basalt::server
