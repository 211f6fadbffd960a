#include "src/front/hbase/server_directory.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "src/base/flags.h"
#include "src/front/hbase/zk_records.h"

namespace basalt::hbase {

namespace {
absl::Status NoSuchServer(const ServerName& sn) {
  return absl::InvalidArgumentError(
      absl::StrCat("no live region server has the HBase port ", sn.host_name(), ":", sn.port()));
}
}  // namespace

std::optional<ServerName> HBaseNameOf(const server::ServerRegistration& r) {
  std::string host;
  int port = 0;
  if (r.hbase.empty() || !server::SplitHostPort(r.hbase, &host, &port).ok()) return std::nullopt;
  return ServerNameOf(host, port, static_cast<uint64_t>(r.start_code));
}

absl::StatusOr<std::string> ThisServerOnly::BasaltServerOf(const ServerName& sn) { return NoSuchServer(sn); }

std::optional<ServerName> LiveRegistrations::HBaseServerOf(const std::string& server) {
  absl::MutexLock l(&mu_);
  const absl::Time now = absl::Now();
  auto it = by_name_.find(server);
  if (now - read_ > absl::Seconds(1) || (it == by_name_.end() && now - read_ > absl::Milliseconds(100))) {
    Read(now);
    it = by_name_.find(server);
  }
  if (it == by_name_.end()) return std::nullopt;
  return HBaseNameOf(it->second);
}

std::vector<LiveServer> LiveRegistrations::RegionServers() {
  absl::MutexLock l(&mu_);
  if (absl::Now() - read_ > absl::Seconds(1)) Read(absl::Now());
  std::vector<LiveServer> out;
  for (const auto& [name, reg] : by_name_) {
    if (std::optional<ServerName> sn = HBaseNameOf(reg)) out.push_back(LiveServer{*sn, false});
  }
  return out;
}

absl::StatusOr<std::string> LiveRegistrations::BasaltServerOf(const ServerName& sn) {
  const std::string hbase = absl::StrCat(sn.host_name(), ":", sn.port());
  absl::MutexLock l(&mu_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (const auto& [name, reg] : by_name_) {
      if (reg.hbase == hbase) return name;
    }
    if (attempt == 0) Read(absl::Now());
  }
  return NoSuchServer(sn);
}

void LiveRegistrations::Read(absl::Time now) {
  read_ = now;
  absl::StatusOr<std::vector<server::ServerRegistration>> regs = source_();
  if (!regs.ok()) {
    if (log_) log_(absl::StrCat("listing the region servers: ", regs.status().message()));
    return;  // the copy it has stays
  }
  by_name_.clear();
  for (server::ServerRegistration& r : *regs) by_name_[r.name] = std::move(r);
}

}  // namespace basalt::hbase
