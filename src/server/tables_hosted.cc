// TableManager on a cluster's region server: the regions the master opened here.
#include "src/server/tables.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/string_binary.h"
#include "src/server/meta.h"
#include "src/server/table_errors.h"

namespace basalt::server {

absl::Status TableManager::NotOnRegionServer(std::string_view what) const {
  if (options_.role != Role::kRegionServer) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "this is a region server of a cluster: ", AV(what), " is the master's (connect through ZooKeeper)"));
}

std::shared_ptr<Table> TableManager::HostTable(const TableSpec& spec, std::vector<HostedRegion> open) {
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

absl::Status TableManager::OpenRegion(const TableSpec& spec, const RegionInfo& info) {
  if (options_.role != Role::kRegionServer) {
    return absl::FailedPreconditionError("OpenRegion is for a cluster's region server; this server is standalone");
  }
  absl::MutexLock al(&admin_mu_);
  std::shared_ptr<Table> old;
  {
    absl::ReaderMutexLock l(&mu_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    if (auto it = entries_.find(spec.name); it != entries_.end()) old = it->second.table;
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
  absl::StatusOr<std::unique_ptr<Region>> region = Region::Open(options_.region, std::move(desc), RegionDir(info));
  if (!region.ok()) {
    return absl::Status(region.status().code(),
                        absl::StrCat("opening region ", info.Name(), ": ", region.status().message()));
  }
  const RegionStats st = (*region)->GetStats();
  open.push_back(HostedRegion{info, *std::move(region)});
  InstallHosted(spec, std::move(open));
  if (old != nullptr) old->superseded_.store(true, std::memory_order_release);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  Log(absl::StrCat("opened region ", info.Name(), " in ", ms.count(), " ms (", st.replayed_records,
                   " log records replayed)"));
  return absl::OkStatus();
}

absl::Status TableManager::CloseRegion(std::string_view encoded_name) {
  if (options_.role != Role::kRegionServer) {
    return absl::FailedPreconditionError("CloseRegion is for a cluster's region server; this server is standalone");
  }
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
  InstallHosted(old->spec(), std::move(open));
  // Calls that meet the closed region are refused as not served here (Translate), and located again.
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

void TableManager::InstallHosted(const TableSpec& spec, std::vector<HostedRegion> open) {
  if (open.empty()) {
    absl::MutexLock l(&mu_);
    entries_.erase(spec.name);
    return;
  }
  Entry e;
  e.spec = spec;
  e.table = HostTable(spec, std::move(open));
  for (const HostedRegion& h : e.table->regions()) {
    if (!h.placeholder) e.regions.push_back(h.info);
  }
  absl::MutexLock l(&mu_);
  entries_[spec.name] = std::move(e);
}

absl::StatusOr<std::shared_ptr<Table>> TableManager::TableHolding(std::string_view encoded_name) const {
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    if (e.table == nullptr) continue;
    for (const HostedRegion& h : e.table->regions()) {
      if (!h.placeholder && h.encoded_name == encoded_name) return e.table;
    }
  }
  return absl::NotFoundError(absl::StrCat("region ", AV(encoded_name), " is not open here"));
}

absl::StatusOr<std::shared_ptr<Region>> TableManager::HostedRegionNamed(std::string_view encoded_name) const {
  BASALT_ASSIGN_OR_RETURN(std::shared_ptr<Table> t, TableHolding(encoded_name));
  for (const HostedRegion& h : t->regions()) {
    if (!h.placeholder && h.encoded_name == encoded_name) return h.region;
  }
  return absl::NotFoundError(absl::StrCat("region ", AV(encoded_name), " is not open here"));
}

std::vector<std::pair<TableSpec, RegionInfo>> TableManager::HostedRegions() const {
  std::vector<std::pair<TableSpec, RegionInfo>> out;
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [name, e] : entries_) {
    for (const RegionInfo& r : e.regions) out.emplace_back(e.spec, r);
  }
  return out;
}

}  // namespace basalt::server
