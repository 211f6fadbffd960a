// What a cluster's active master asks of a region server (proto/basalt.proto "Region servers of
// a cluster"): open and close a region, a region's figures, flush, compaction and split point,
// and the regions open here, served from the process's RegionHost. A call that names another
// run of this server (its start_code: a master that has not yet seen that the run before this
// one at the same address died) is refused with a WrongServerError, so that "not open here"
// never speaks for a run that may have left writes in its log; one from a deposed master (an
// epoch below the highest seen) is refused as such.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "proto/basalt.pb.h"
#include "src/regions/region_host.h"
#include "src/services/admin_parts.h"

namespace basalt::server {

class RegionServerAdmin final : public RegionServerCalls {
 public:
  explicit RegionServerAdmin(RegionHost* host) : host_(host) {}

  absl::Status OpenRegion(const rpc::OpenRegionRequest& req, rpc::OpenRegionResponse* resp) override;
  absl::Status CloseRegion(const rpc::CloseRegionRequest& req, rpc::AdminResponse* resp) override;
  absl::Status RegionOperation(const rpc::RegionOpRequest& req, rpc::RegionOpResponse* resp) override;
  absl::Status HostedRegions(const rpc::HostedRegionsRequest& req, rpc::HostedRegionsResponse* resp) override;

 private:
  // OK when `start_code` is this run's or 0, and `master_epoch` is 0 or the highest seen yet
  // (kept); else a WrongServerError, or FailedPrecondition from a deposed master, for `what`.
  absl::Status CheckRun(const char* what, int64_t start_code, int64_t master_epoch);

  RegionHost* const host_;
  std::atomic<int64_t> master_epoch_{0};  // the highest master epoch a call has carried
};

}  // namespace basalt::server
