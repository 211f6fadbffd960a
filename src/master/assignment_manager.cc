#include "src/master/assignment_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/fault_point.h"
#include "common/status.h"
#include "src/schema/meta.h"

namespace basalt::master {

absl::StatusOr<server::PlacedRegion> AssignmentManager::Open(const server::TableSpec& spec,
                                                             const server::RegionInfo& info, RegionDescriptor,
                                                             const std::string&, std::string_view destination) {
  const std::string encoded = info.EncodedName();
  std::vector<std::pair<int, std::string>> candidates;  // (load, node)
  {
    absl::MutexLock l(&mu_);
    if (auto it = adopt_.find(encoded); it != adopt_.end()) {
      const auto [server, node] = it->second;
      adopt_.erase(it);
      ++load_[node];
      return Adopt(servers_, server, node, spec, info, Release(node));
    }
    for (const std::string& node : live_) candidates.emplace_back(load_[node], node);
  }
  if (candidates.empty()) {
    return absl::UnavailableError(absl::StrCat("no region server is live to open region ", info.Name(), " on"));
  }
  std::sort(candidates.begin(), candidates.end());
  // A move's destination first; should it fail to open the region, the others follow as usual.
  auto wanted = std::find_if(candidates.begin(), candidates.end(),
                             [&](const auto& c) { return !destination.empty() && AddressOf(c.second) == destination; });
  if (wanted != candidates.end()) std::rotate(candidates.begin(), wanted, wanted + 1);
  absl::Status last;
  for (const auto& [load, node] : candidates) {
    {
      absl::MutexLock l(&mu_);
      ++load_[node];
    }
    std::function<void()> release = Release(node);
    absl::StatusOr<server::PlacedRegion> placed = OpenOn(servers_, AddressOf(node), node, spec, info, release);
    if (placed.ok()) return placed;
    release();
    last = placed.status();
    Log(absl::StrCat("opening region ", info.Name(), " on ", node, ": ", last.message()));
    // A server that failed to open it (its files) would fail again elsewhere; one that did not
    // answer may be dying: the next one is tried.
    if (!absl::IsUnavailable(last) && !absl::IsDeadlineExceeded(last)) return last;
  }
  return last;
}

bool AssignmentManager::SetLive(std::vector<std::string> live) {
  absl::MutexLock l(&mu_);
  bool joined = false;
  for (const std::string& node : live) {
    if (std::find(live_.begin(), live_.end(), node) == live_.end()) joined = true;
  }
  live_ = std::move(live);
  for (auto it = load_.begin(); it != load_.end();) {
    it = std::find(live_.begin(), live_.end(), it->first) == live_.end() ? load_.erase(it) : std::next(it);
  }
  return joined;
}

std::vector<std::string> AssignmentManager::Live() const {
  absl::MutexLock l(&mu_);
  return live_;
}

void AssignmentManager::Found(const std::string& server, const std::string& node,
                              const std::vector<server::RegionInfo>& held) {
  absl::MutexLock l(&mu_);
  for (const server::RegionInfo& r : held) adopt_[r.EncodedName()] = {server, node};
}

size_t AssignmentManager::ForgetUnclaimed() {
  absl::MutexLock l(&mu_);
  const size_t left = adopt_.size();
  adopt_.clear();
  return left;
}

bool AssignmentManager::ServedOn(const server::HostedRegion& h, const std::string& node) {
  const auto* remote = dynamic_cast<const RemoteRegionHandle*>(h.handle.get());
  return remote != nullptr && remote->node() == node;
}

std::function<void()> AssignmentManager::Release(const std::string& node) {
  return [this, node] {
    absl::MutexLock l(&mu_);
    if (auto it = load_.find(node); it != load_.end()) --it->second;
  };
}

std::string AssignmentManager::AddressOf(const std::string& node) { return node.substr(0, node.rfind(',')); }

std::vector<std::string> AssignmentManager::LogsToRecover() const {
  absl::MutexLock l(&mu_);
  return logs_to_recover_;
}

void AssignmentManager::SetLogsToRecover(std::vector<std::string> logs) {
  absl::MutexLock l(&mu_);
  logs_to_recover_ = std::move(logs);
}

void AssignmentManager::KeepClosed(const server::RegionInfo& info) {
  absl::MutexLock l(&mu_);
  held_closed_[info.table].insert(info.EncodedName());
}

bool AssignmentManager::IsHeldClosed(const server::RegionInfo& info) const {
  absl::MutexLock l(&mu_);
  auto it = held_closed_.find(info.table);
  return it != held_closed_.end() && it->second.count(info.EncodedName()) > 0;
}

void AssignmentManager::TableEnabled(std::string_view table) {
  absl::MutexLock l(&mu_);
  if (auto it = held_closed_.find(table); it != held_closed_.end()) held_closed_.erase(it);
}

std::map<std::string, std::vector<std::string>> AssignmentManager::RegionsByServer(
    const server::Catalog& catalog) const {
  std::map<std::string, std::vector<std::string>> held;
  for (const std::string& node : Live()) held[node];
  for (const server::HostedRegion& h : OpenRegions(catalog)) {
    const auto* remote = dynamic_cast<const RemoteRegionHandle*>(h.handle.get());
    if (remote == nullptr) continue;
    if (auto it = held.find(remote->node()); it != held.end()) it->second.push_back(h.encoded_name);
  }
  return held;
}

std::vector<server::HostedRegion> AssignmentManager::OpenRegions(const server::Catalog& catalog) {
  std::vector<server::HostedRegion> out;
  for (const server::TableSpec& spec : catalog.List()) {
    absl::StatusOr<std::shared_ptr<server::Table>> t = catalog.Find(spec.name);
    if (!t.ok()) continue;  // disabled or FAILED_OPEN
    for (const server::HostedRegion& h : (*t)->regions()) {
      if (!h.unassigned && h.open_error.ok()) out.push_back(h);
    }
  }
  return out;
}

std::vector<std::string> AssignmentManager::TablesToAssign(const server::Catalog& catalog) {
  std::vector<std::string> out;
  for (const server::TableSpec& spec : catalog.List()) {
    if (!spec.enabled) continue;
    if (!catalog.OpenError(spec.name).ok()) {
      out.push_back(spec.name);
      continue;
    }
    absl::StatusOr<std::shared_ptr<server::Table>> t = catalog.Find(spec.name);
    if (t.ok() && (*t)->has_failed_regions()) out.push_back(spec.name);
  }
  return out;
}

absl::Status AssignmentManager::Move(server::Catalog* catalog, std::string_view region, std::string_view server) {
  std::string address;
  const std::vector<std::string> live = Live();
  if (!server.empty()) {
    for (const std::string& node : live) {
      if (node == server || AddressOf(node) == server) address = AddressOf(node);
    }
    if (address.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("move: no live region server '", AV(server), "' (live: ",
                                                     live.empty() ? "none" : absl::StrJoin(live, " "), ")"));
    }
  }
  return MoveTo(catalog, region, address);
}

absl::Status AssignmentManager::MoveTo(server::Catalog* catalog, std::string_view region,
                                       std::string_view destination) {
  return catalog->Transition([&](server::Catalog::Transitions& t) -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(server::Catalog::RegionNow now, t.Region(region));
    BASALT_RETURN_IF_ERROR(now.TableOpen());
    const server::RegionInfo& info = now.info;
    if (IsHeldClosed(info)) {
      return absl::FailedPreconditionError(
          absl::StrCat("move: region ", info.Name(), " is closed (unassign); assign it to open it again"));
    }
    const absl::Time start = absl::Now();
    std::string from = "nowhere (FAILED_OPEN)";
    if (const server::HostedRegion* h = now.hosted(); h != nullptr && h->open_error.ok()) {  // a FAILED_OPEN one just opens
      if (!destination.empty() && h->server == destination) return absl::OkStatus();
      from = h->server;
      // Calls on it are refused from now on; its server flushes it, so that what it
      // acknowledged is in its files when the next server opens them.
      if (absl::Status closed = h->handle->Close(); !closed.ok()) {
        return absl::Status(closed.code(), absl::StrCat("move: closing region ", info.Name(), " on ", h->server,
                                                        " failed, so it stays there: ", closed.message()));
      }
    }
    const absl::Duration closing = absl::Now() - start;
    FaultPoint("move:closed");
    if (t.Reopen(now.spec.name, {info}, destination, "move") == 1) {
      std::string to = "?";
      if (absl::StatusOr<server::Catalog::RegionNow> after = t.Region(info.EncodedName()); after.ok()) {
        if (const server::HostedRegion* h = after->hosted(); h != nullptr) to = h->server;
      }
      Log(absl::StrCat("moved region ", info.Name(), " from ", from, " to ", to, " in ",
                       absl::ToInt64Milliseconds(absl::Now() - start), " ms (its close took ",
                       absl::ToInt64Milliseconds(closing), " ms)"));
      return absl::OkStatus();
    }
    const absl::Status why = t.WhyNotOpen(now.spec.name, info);
    return absl::Status(why.code(), absl::StrCat("move: region ", info.Name(), " closed but did not open again (",
                                                 "FAILED_OPEN until a server can open it): ", why.message()));
  });
}

absl::Status AssignmentManager::Unassign(server::Catalog* catalog, std::string_view region) {
  return catalog->Transition([&](server::Catalog::Transitions& t) -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(server::Catalog::RegionNow now, t.Region(region));
    BASALT_RETURN_IF_ERROR(now.TableOpen());
    const server::RegionInfo& info = now.info;
    if (IsHeldClosed(info)) return absl::OkStatus();
    std::string from = "nowhere (FAILED_OPEN)";
    if (const server::HostedRegion* h = now.hosted(); h != nullptr && h->open_error.ok()) {  // a FAILED_OPEN one is closed already
      from = h->server;
      if (absl::Status closed = h->handle->Close(); !closed.ok()) {
        return absl::Status(closed.code(), absl::StrCat("unassign: closing region ", info.Name(), " on ", h->server,
                                                        " failed, so it stays open: ", closed.message()));
      }
    }
    if (absl::Status s = t.RecordClosed(info); !s.ok()) {
      t.Reopen(now.spec.name, {info}, from, "unassign");  // meta still says where it was: it serves there again
      return absl::Status(s.code(), absl::StrCat("unassign: recording region ", info.Name(), " CLOSED in ",
                                                 server::kMetaTableName, " failed, so it was opened again: ",
                                                 s.message()));
    }
    KeepClosed(info);
    absl::Status reinstalled = t.Reinstall(now.spec.name);
    Log(absl::StrCat("unassigned region ", info.Name(), " (closed on ", from, "; closed until assign)"));
    return reinstalled;
  });
}

absl::Status AssignmentManager::AssignRegion(server::Catalog* catalog, std::string_view region) {
  return catalog->Transition([&](server::Catalog::Transitions& t) -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(server::Catalog::RegionNow now, t.Region(region));
    const server::RegionInfo& info = now.info;
    if (!now.open_error.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("assign: table ", now.spec.name, " is FAILED_OPEN as a whole (",
                                                        now.open_error.message(), "); assign the table"));
    }
    if (now.table == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("assign: table ", now.spec.name, " is disabled; enable it instead"));
    }
    const bool was_held = IsHeldClosed(info);
    if (!was_held) {
      if (const server::HostedRegion* h = now.hosted(); h != nullptr && h->open_error.ok()) return absl::OkStatus();
    }
    {
      absl::MutexLock l(&mu_);
      if (auto it = held_closed_.find(info.table); it != held_closed_.end()) it->second.erase(info.EncodedName());
    }
    if (t.Reopen(now.spec.name, {info}, /*destination=*/{}, "assign") == 1) {
      Log(absl::StrCat("assigned region ", info.Name(), was_held ? " (it was unassigned)" : " (it was FAILED_OPEN)"));
      return absl::OkStatus();
    }
    return absl::UnavailableError(absl::StrCat("assign: region ", info.Name(),
                                               " did not open (FAILED_OPEN until a server can open it; see the log)"));
  });
}

absl::StatusOr<size_t> AssignmentManager::Recover(server::Catalog* catalog, const std::string& log_dir,
                                                  const std::string& node) {
  size_t placed = 0;
  BASALT_RETURN_IF_ERROR(catalog->Transition([&](server::Catalog::Transitions& t) -> absl::Status {
    if (!log_dir.empty()) BASALT_RETURN_IF_ERROR(t.SplitLog(log_dir));
    for (const std::shared_ptr<server::Table>& table : t.OpenTables()) {
      std::vector<server::RegionInfo> again;
      for (const server::HostedRegion& h : table->regions()) {
        if (ServedOn(h, node)) again.push_back(h.info);
      }
      if (!again.empty()) placed += t.Reopen(table->name(), again, /*destination=*/{}, "recover");
    }
    return absl::OkStatus();
  }));
  return placed;
}

absl::Status AssignmentManager::Balance(server::Catalog* catalog, rpc::BalanceResponse* resp) {
  absl::MutexLock bl(&balance_mu_);
  std::map<std::string, std::vector<std::string>> held = RegionsByServer(*catalog);
  if (held.size() < 2) {
    resp->set_reason(absl::StrCat(held.size(), " live region server(s): nothing to balance"));
    return absl::OkStatus();
  }
  // The plan, one region at a time from the fullest server to the emptiest.
  std::vector<std::pair<std::string, std::string>> plan;  // (encoded name, node)
  for (;;) {
    auto [lo, hi] = std::minmax_element(held.begin(), held.end(), [](const auto& a, const auto& b) {
      return a.second.size() < b.second.size();
    });
    if (hi->second.size() <= lo->second.size() + 1) break;
    plan.emplace_back(hi->second.back(), lo->first);
    lo->second.push_back(hi->second.back());
    hi->second.pop_back();
  }
  if (plan.empty()) {
    resp->set_reason("balanced: no two live region servers differ by more than one region");
    return absl::OkStatus();
  }
  const absl::Time start = absl::Now();
  uint32_t moved = 0;
  absl::Status first;
  for (const auto& [region, node] : plan) {
    absl::Status s = MoveTo(catalog, region, AddressOf(node));
    if (s.ok()) {
      ++moved;
    } else {
      if (first.ok()) first = s;
      Log(absl::StrCat("balancer: moving region ", region, " to ", node, ": ", s.ToString()));
    }
  }
  Log(absl::StrCat("balancer: moved ", moved, " of ", plan.size(), " region(s) in ",
                   absl::ToInt64Milliseconds(absl::Now() - start), " ms"));
  resp->set_moves(moved);
  if (moved == 0) return first;
  if (!first.ok()) resp->set_reason(absl::StrCat("some moves failed, the first: ", first.ToString()));
  return absl::OkStatus();
}

}  // namespace basalt::master
