#include "src/regions/region_host.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/log.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "common/zookeeper.h"
#include "src/schema/meta.h"
#include "src/regions/split_policy.h"
#include "src/schema/table_errors.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

RegionHost::RegionHost(const Options& options) : options_(options) {
  if (options_.env == nullptr) options_.env = Env::Default();
  options_.region.env = options_.env;
}

RegionHost::~RegionHost() { CloseAll().IgnoreError(); }

absl::StatusOr<std::unique_ptr<RegionHost>> RegionHost::Open(const Options& options) {
  if (options.log_dir.empty()) return absl::InvalidArgumentError("a region server needs a log directory of its own");
  std::unique_ptr<RegionHost> host(new RegionHost(options));
  if (options.auto_split && options.request_split) {
    host->options_.region.on_files_changed = [h = host.get()](const std::string& region) {
      absl::MutexLock l(&h->checks_mu_);
      h->split_checks_.insert(region);
    };
  }
  BASALT_RETURN_IF_ERROR(host->options_.env->CreateDirs(options.data_dir + "/tables"));
  ServerLog::Options lo;
  lo.env = host->options_.env;
  lo.dir = options.log_dir;
  lo.roll_size = options.wal_roll_size;
  lo.max_logs = options.wal_max_logs;
  lo.recovery = options.region.wal_recovery;
  lo.table_of = &TableOfRegionName;
  lo.lost_found = absl::StrCat(options.data_dir, "/", kLostFoundDir);
  lo.log = [h = host.get()](std::string_view line) { h->Log(line); };
  lo.max_held_segments = options.wal_max_held_segments;
  lo.on_hold_dropped = options.on_wal_hold_dropped;
  absl::StatusOr<std::unique_ptr<ServerLog>> log = ServerLog::Open(lo);
  if (!log.ok()) {
    return absl::Status(log.status().code(),
                        absl::StrCat("opening the server log in ", lo.dir, ": ", log.status().message()));
  }
  host->log_ = *std::move(log);
  host->options_.region.server_log = host->log_.get();
  host->split_checker_ = std::thread([h = host.get()] { h->SplitCheckLoop(); });
  return host;
}

void RegionHost::Log(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    log::Info(line);
  }
}

absl::StatusOr<std::shared_ptr<Table>> RegionHost::Find(std::string_view name, std::string_view region) const {
  if (const SessionLease* lease = options_.lease; lease != nullptr && !lease->Held()) {
    // Cut off from ZooKeeper for its session timeout: a master may be reopening this server's
    // regions elsewhere, so it serves nothing (not even a read) and the client locates the row
    // again (docs/DESIGN.md §6, "Leases").
    return NotServingRegionError(region, absl::StrCat("region server ", ServerName(),
                                                      " has lost its ZooKeeper session lease and serves no region"));
  }
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    if (auto it = hosted_.find(name); it != hosted_.end()) return it->second.table;
  }
  // No region of the table (any more) is here: the client locates it again.
  if (!region.empty()) {
    return NotServingRegionError(region, absl::StrCat("region ", AV(region), " of table ", AV(name),
                                                      " is not served here"));
  }
  return absl::UnavailableError(absl::StrCat("table ", AV(name), " has no region on this server; locate its rows in ",
                                             kMetaTableName));
}

absl::StatusOr<TableSpec> RegionHost::Describe(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = hosted_.find(name);
  if (it == hosted_.end()) return NotFound(name);
  return it->second.spec;
}

std::vector<TableSpec> RegionHost::List() const {
  std::vector<TableSpec> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [n, h] : hosted_) out.push_back(h.spec);
  return out;
}

std::vector<TableInfo> RegionHost::Stats() const {
  std::vector<std::pair<TableInfo, std::shared_ptr<Table>>> tables;
  {
    absl::ReaderMutexLock l(&mu_);
    for (const auto& [n, h] : hosted_) tables.emplace_back(TableInfo{h.spec, {}, {}, h.regions.size()}, h.table);
  }
  std::vector<TableInfo> out;
  for (auto& [info, t] : tables) {
    info.stats = t->Stats();
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::vector<RegionStatus>> RegionHost::Regions(std::string_view name) const {
  std::shared_ptr<Table> table;
  {
    absl::ReaderMutexLock l(&mu_);
    auto it = hosted_.find(name);
    if (it == hosted_.end()) return NotFound(name);
    table = it->second.table;
  }
  const std::string here = ServerName();
  std::vector<RegionStatus> out;
  for (const HostedRegion& h : table->regions()) {
    if (h.placeholder) continue;
    out.push_back(RegionStatus{h.info, "OPEN", h.region->GetStats(), here});
  }
  return out;
}

size_t RegionHost::RegionCount(std::string_view name) const {
  absl::ReaderMutexLock l(&mu_);
  auto it = hosted_.find(name);
  return it == hosted_.end() ? 0 : it->second.regions.size();
}

size_t RegionHost::size() const {
  absl::ReaderMutexLock l(&mu_);
  return hosted_.size();
}

absl::Status RegionHost::Flush(std::string_view name) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Find(name));
  return t->Flush();
}

absl::Status RegionHost::MajorCompact(std::string_view name) {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, Find(name));
  return t->MajorCompact();
}

std::string RegionHost::ServerName() const {
  absl::ReaderMutexLock l(&mu_);
  return server_name_;
}

absl::Status RegionHost::SetServerName(std::string_view name) {
  absl::MutexLock l(&mu_);
  server_name_.assign(name);
  return absl::OkStatus();
}

absl::Status RegionHost::CloseAll() {
  {
    absl::MutexLock l(&checks_mu_);
    checks_stop_ = true;
  }
  if (split_checker_.joinable()) split_checker_.join();
  std::vector<std::shared_ptr<Table>> open;
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    for (auto& [n, h] : hosted_) open.push_back(h.table);
  }
  absl::Status first;
  for (auto& t : open) {
    absl::Status s = t->Stop(/*close_regions=*/true);
    if (first.ok()) first = s;
  }
  return first;
}

std::shared_ptr<Table> RegionHost::HostTable(const TableSpec& spec, std::vector<HostedRegion> open) {
  std::sort(open.begin(), open.end(),
            [](const HostedRegion& a, const HostedRegion& b) { return a.info.start_key < b.info.start_key; });
  std::vector<HostedRegion> all;
  // The rows from `from` to `to` (empty: the end) are another server's.
  auto gap = [&](const std::string& from, const std::string& to) {
    RegionDescriptor desc = DescriptorOf(spec, RegionInfo{spec.name, from, to, 0});
    desc.name = absl::StrCat(spec.name, " rows [", ToStringBinary(from), ", ", to.empty() ? "end" : ToStringBinary(to), ")");
    absl::Status error = absl::UnavailableError(absl::StrCat("table ", spec.name, ": the region of rows from '",
                                                             ToStringBinary(from), "' is not served here; locate it in ",
                                                             kMetaTableName));
    HostedRegion h{RegionInfo{spec.name, from, to, 0}, NewRefusingRegion(desc, std::move(error), "")};
    h.placeholder = true;
    all.push_back(std::move(h));
  };
  std::string at;
  bool to_end = false;
  for (HostedRegion& h : open) {
    if (h.info.start_key != at) gap(at, h.info.start_key);
    at = h.info.end_key;
    all.push_back(std::move(h));
    if (at.empty()) {
      to_end = true;
      break;
    }
  }
  if (!to_end) gap(at, "");
  return std::make_shared<Table>(spec, std::move(all));
}

absl::Status RegionHost::OpenRegion(const TableSpec& spec, const RegionInfo& info) {
  absl::MutexLock al(&admin_mu_);
  std::shared_ptr<Table> old;
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    if (auto it = hosted_.find(spec.name); it != hosted_.end()) old = it->second.table;
  }
  std::vector<HostedRegion> open;
  if (old != nullptr) {
    for (const HostedRegion& h : old->regions()) {
      if (h.placeholder) continue;
      if (h.info == info) {
        return absl::AlreadyExistsError(absl::StrCat("region ", info.Name(), " is open here already"));
      }
      const bool overlaps = (info.end_key.empty() || h.info.start_key < info.end_key) &&
                            (h.info.end_key.empty() || info.start_key < h.info.end_key);
      if (overlaps) {
        return absl::FailedPreconditionError(absl::StrCat("region ", info.Name(), " overlaps region ",
                                                          h.info.Name(), ", open here; close that one first"));
      }
      open.push_back(h);
    }
  }
  const auto started = std::chrono::steady_clock::now();
  RegionDescriptor desc = DescriptorOf(spec, info);
  if (spec.queue) desc.compaction_filter = options_.queue_compaction_filter;
  absl::StatusOr<std::unique_ptr<Region>> region =
      Region::Open(options_.region, std::move(desc), RegionDirIn(options_.data_dir, info));
  if (!region.ok()) {
    return absl::Status(region.status().code(),
                        absl::StrCat("opening region ", info.Name(), ": ", region.status().message()));
  }
  const RegionStats st = (*region)->GetStats();
  open.push_back(HostedRegion{info, *std::move(region)});
  Install(spec, std::move(open));
  if (old != nullptr) old->superseded_.store(true, std::memory_order_release);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  Log(absl::StrCat("opened region ", info.Name(), " in ", ms.count(), " ms (", st.replayed_records,
                   " log records replayed)"));
  return absl::OkStatus();
}

absl::Status RegionHost::CloseRegion(std::string_view encoded_name) {
  absl::MutexLock al(&admin_mu_);
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> old, TableHolding(encoded_name));
  std::vector<HostedRegion> open;
  std::shared_ptr<Region> closing;
  RegionInfo info;
  for (const HostedRegion& h : old->regions()) {
    if (h.placeholder) continue;
    if (h.encoded_name == encoded_name) {
      closing = h.region;
      info = h.info;
    } else {
      open.push_back(h);
    }
  }
  Install(old->spec(), std::move(open));
  // Calls that meet the closed region are refused as not served here (the data service's
  // Translate), and located again.
  old->superseded_.store(true, std::memory_order_release);
  absl::Status closed = closing->Close();
  if (!closed.ok()) {
    const absl::Status why(closed.code(), absl::StrCat("closed region ", info.Name(), " but its flush failed (",
                                                       closed.message(), "): what it had not flushed is only in this ",
                                                       "server's log, which the master splits once the server is gone"));
    Log(std::string(why.message()));
    if (options_.abort) options_.abort(why);
    return why;
  }
  Log(absl::StrCat("closed region ", info.Name()));
  return absl::OkStatus();
}

void RegionHost::Install(const TableSpec& spec, std::vector<HostedRegion> open) {
  if (open.empty()) {
    absl::MutexLock l(&mu_);
    hosted_.erase(spec.name);
    return;
  }
  Hosted h;
  h.spec = spec;
  h.table = HostTable(spec, std::move(open));
  for (const HostedRegion& r : h.table->regions()) {
    if (!r.placeholder) h.regions.push_back(r.info);
  }
  absl::MutexLock l(&mu_);
  hosted_[spec.name] = std::move(h);
}

absl::StatusOr<std::shared_ptr<Table>> RegionHost::TableHolding(std::string_view encoded_name) const {
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, h] : hosted_) {
    for (const HostedRegion& r : h.table->regions()) {
      if (!r.placeholder && r.encoded_name == encoded_name) return h.table;
    }
  }
  return absl::NotFoundError(absl::StrCat("region ", AV(encoded_name), " is not open here"));
}

absl::StatusOr<std::shared_ptr<Region>> RegionHost::HostedRegionNamed(std::string_view encoded_name) const {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, TableHolding(encoded_name));
  for (const HostedRegion& h : t->regions()) {
    if (!h.placeholder && h.encoded_name == encoded_name) return h.region;
  }
  return absl::NotFoundError(absl::StrCat("region ", AV(encoded_name), " is not open here"));
}

std::vector<std::pair<TableSpec, RegionInfo>> RegionHost::HostedRegions() const {
  std::vector<std::pair<TableSpec, RegionInfo>> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, h] : hosted_) {
    for (const RegionInfo& r : h.regions) out.emplace_back(h.spec, r);
  }
  return out;
}

void RegionHost::SplitCheckLoop() {
  absl::MutexLock l(&checks_mu_);
  while (true) {
    checks_mu_.Await(absl::Condition(+[](RegionHost* h) ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return h->checks_stop_ || !h->split_checks_.empty();
    }, this));
    if (checks_stop_) break;
    std::set<std::string> checks;
    checks.swap(split_checks_);
    checks_mu_.Unlock();
    for (const std::string& r : checks) MaybeAskSplit(r);
    checks_mu_.Lock();
  }
}

void RegionHost::MaybeAskSplit(const std::string& region) {
  TableSpec spec;
  std::shared_ptr<Table> t;
  size_t regions = 0;
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return;
    auto it = hosted_.find(TableOfRegionName(region));
    if (it == hosted_.end()) return;
    spec = it->second.spec;
    t = it->second.table;
    regions = it->second.regions.size();
  }
  const HostedRegion* hosted = nullptr;
  for (const HostedRegion& h : t->regions()) {
    if (!h.placeholder && RegionName(spec, h.info) == region) hosted = &h;
  }
  if (hosted == nullptr || hosted->info.id == 0) return;  // gone meanwhile, or from before regions
  const RegionStats st = hosted->region->GetStats();
  // A daughter still reading its parent's files is looked at again once its compaction ends.
  if (st.reference_files > 0) return;
  const uint64_t limit = SplitSize(spec, regions, options_.region_max_size, options_.region.memstore_flush_size);
  if (st.largest_store_bytes <= limit) return;
  // The master splits it (closing it here first, through CloseRegion).
  absl::Status asked = options_.request_split(hosted->encoded_name);
  Log(absl::StrCat("region ", hosted->info.Name(), " passed ", limit, " bytes: asked the master to split it: ",
                   asked.ok() ? "split" : asked.ToString()));
}

}  // namespace basalt::server
