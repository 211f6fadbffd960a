#include "src/cluster/batch_router.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "grpcpp/grpcpp.h"

namespace basalt::server {
namespace {

// The tables whose regions a router keeps (the replicated ones); past it, it forgets them all.
constexpr size_t kMaxTablesKept = 1024;

// The region of `regions` (by start key) holding `row`, or -1.
int RegionOf(const std::vector<rpc::RegionStatus>& regions, const std::string& row) {
  auto after = std::upper_bound(regions.begin(), regions.end(), row,
                                [](const std::string& r, const rpc::RegionStatus& s) { return r < s.start_key(); });
  if (after == regions.begin()) return -1;
  const rpc::RegionStatus& s = *std::prev(after);
  if (!s.end_key().empty() && row >= s.end_key()) return -1;
  if (s.state() != "OPEN" || s.server().empty()) return -1;
  return static_cast<int>(std::prev(after) - regions.begin());
}

bool Retryable(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded ||
         s.code() == absl::StatusCode::kAborted;
}

}  // namespace

std::vector<RoutedPart> RouteRows(const rpc::BatchMutateRequest& batch, const std::vector<int>& positions,
                                  const std::vector<rpc::RegionStatus>& regions, std::vector<int>* unplaced) {
  std::vector<RoutedPart> parts;
  std::map<std::string, size_t> by_server;
  for (int i : positions) {
    const int r = RegionOf(regions, batch.rows(i).row());
    if (r < 0) {
      unplaced->push_back(i);
      continue;
    }
    const rpc::RegionStatus& region = regions[static_cast<size_t>(r)];
    auto [it, added] = by_server.emplace(region.server(), parts.size());
    if (added) {
      parts.emplace_back();
      parts.back().server = region.server();
      parts.back().request.set_table(batch.table());
      parts.back().request.set_durability(batch.durability());
      *parts.back().request.mutable_cluster_ids() = batch.cluster_ids();
    }
    RoutedPart& part = parts[it->second];
    *part.request.add_rows() = batch.rows(i);
    part.rows.push_back(i);
    auto* runs = part.request.mutable_regions();
    if (runs->empty() || runs->rbegin()->region() != region.encoded_name()) {
      rpc::RegionRun* run = runs->Add();
      run->set_region(region.encoded_name());
    }
    runs->rbegin()->set_rows(runs->rbegin()->rows() + 1);
  }
  return parts;
}

absl::Status BatchRouter::Apply(const rpc::BatchMutateRequest& batch) {
  const absl::Time deadline = absl::Now() + options_.deadline;
  std::vector<int> pending(static_cast<size_t>(batch.rows_size()));
  for (int i = 0; i < batch.rows_size(); ++i) pending[static_cast<size_t>(i)] = i;
  absl::Status last = absl::OkStatus();
  absl::Duration pause = absl::Milliseconds(50);
  for (bool fresh = false; !pending.empty(); fresh = true) {
    if (fresh) {
      if (absl::Now() + pause > deadline) {
        return absl::UnavailableError(absl::StrCat(pending.size(), " of the ", batch.rows_size(), " rows of table ",
                                                   batch.table(), " could not be applied where their regions are in ",
                                                   absl::FormatDuration(options_.deadline), "; last: ", last.message()));
      }
      std::this_thread::sleep_for(absl::ToChronoMilliseconds(pause));
      pause = std::min(pause * 2, absl::Seconds(1));
    }
    absl::StatusOr<RegionList> regions = Regions(batch.table(), fresh);
    if (!regions.ok()) {
      if (!Retryable(regions.status())) return regions.status();
      last = regions.status();
      continue;
    }
    std::vector<int> again;
    for (const RoutedPart& part : RouteRows(batch, pending, **regions, &again)) {
      rpc::BatchMutateResponse resp;
      absl::Status s = Send(part, &resp);
      if (s.ok() && resp.results_size() != part.request.rows_size()) {
        s = absl::DataLossError(absl::StrCat("server ", part.server, " answered ", resp.results_size(),
                                             " rows of a batch of ", part.request.rows_size()));
      }
      if (!s.ok()) {
        if (!Retryable(s)) return s;
        last = absl::Status(s.code(), absl::StrCat("server ", part.server, ": ", s.message()));
        again.insert(again.end(), part.rows.begin(), part.rows.end());
        continue;
      }
      for (int k = 0; k < resp.results_size(); ++k) {
        const rpc::RowStatus& row = resp.results(k);
        if (row.code() == 0) continue;
        absl::Status refused(static_cast<absl::StatusCode>(row.code()),
                             absl::StrCat("server ", part.server, ": ", row.message()));
        if (row.not_serving_region().empty() && !Retryable(refused)) return refused;
        last = refused;
        again.push_back(part.rows[static_cast<size_t>(k)]);
      }
    }
    if (again.size() > 0 && last.ok()) last = absl::UnavailableError("their regions have no open server");
    std::sort(again.begin(), again.end());  // (log order within each server's share)
    pending = std::move(again);
  }
  return absl::OkStatus();
}

absl::StatusOr<BatchRouter::RegionList> BatchRouter::Regions(const std::string& table, bool fresh) {
  {
    absl::MutexLock l(&mu_);
    if (!fresh) {
      if (auto it = regions_.find(table); it != regions_.end()) return it->second;
    }
  }
  ZooKeeper* zk = options_.zk->load();
  if (zk == nullptr) return absl::UnavailableError("this server has not joined its cluster yet");
  BASALT_ASSIGN_OR_RETURN(std::optional<ZkNode> node, zk->Get(options_.paths.meta_server()));
  if (!node.has_value() || node->data.empty()) return absl::UnavailableError("no master serves yet");
  std::shared_ptr<rpc::Admin::Stub> stub;
  {
    absl::MutexLock l(&mu_);
    if (master_stub_ == nullptr || master_ != node->data) {
      master_ = node->data;
      master_stub_ = rpc::Admin::NewStub(CreateBasaltChannel(node->data, options_.security));
    }
    stub = master_stub_;
  }
  rpc::TableRequest req;
  req.set_table(table);
  rpc::ListRegionsResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  absl::Status s = FromGrpcStatus(stub->ListRegions(&ctx, req, &resp));
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("locating table ", table, "'s regions: ", s.message()));
  auto regions = std::make_shared<std::vector<rpc::RegionStatus>>(resp.regions().begin(), resp.regions().end());
  std::sort(regions->begin(), regions->end(),
            [](const rpc::RegionStatus& a, const rpc::RegionStatus& b) { return a.start_key() < b.start_key(); });
  absl::MutexLock l(&mu_);
  if (regions_.size() >= kMaxTablesKept) regions_.clear();
  regions_[table] = regions;
  return RegionList(std::move(regions));
}

absl::Status BatchRouter::Send(const RoutedPart& part, rpc::BatchMutateResponse* resp) {
  if (part.server == options_.self) return options_.local(part.request, resp);
  std::shared_ptr<rpc::Basalt::Stub> stub = StubFor(part.server);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return FromGrpcStatus(stub->BatchMutate(&ctx, part.request, resp));
}

std::shared_ptr<rpc::Basalt::Stub> BatchRouter::StubFor(const std::string& server) {
  absl::MutexLock l(&mu_);
  if (auto it = stubs_.find(server); it != stubs_.end()) return it->second;
  if (stubs_.size() >= kMaxTablesKept) stubs_.clear();  // (servers come and go by address)
  std::shared_ptr<rpc::Basalt::Stub> stub = rpc::Basalt::NewStub(CreateBasaltChannel(server, options_.security));
  stubs_[server] = stub;
  return stub;
}

}  // namespace basalt::server
