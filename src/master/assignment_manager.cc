#include "src/master/assignment_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status.h"

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

std::map<std::string, std::vector<std::string>> AssignmentManager::RegionsByServer(
    const server::Catalog& catalog) const {
  std::map<std::string, std::vector<std::string>> held;
  for (const std::string& node : Live()) held[node];
  for (const server::HostedRegion& h : catalog.OpenRegions()) {
    const auto* remote = dynamic_cast<const RemoteRegionHandle*>(h.handle.get());
    if (remote == nullptr) continue;
    if (auto it = held.find(remote->node()); it != held.end()) it->second.push_back(h.encoded_name);
  }
  return held;
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
  return catalog->Move(region, address);
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
    absl::Status s = catalog->Move(region, AddressOf(node));
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
