// Where HBase's answers say regions serve: the HBase name (host, HBase port, start code) of each
// Basalt region server, as hbase:meta, the cluster status and a move name them.
//   - ThisServerOnly: a process that serves its regions itself (a standalone server, a region
//     server): every region it lists is here.
//   - LiveRegistrations: a cluster's master: the live region servers' registrations in ZooKeeper
//     (ServerRegistration::hbase, cluster_member.h), read again when older than a second or when a
//     region names a server it does not list.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/cluster/cluster_member.h"
#include "src/front/hbase/hbase_service.h"

namespace basalt::hbase {

// A live region server with an HBase port.
struct LiveServer {
  ServerName name;
  // It is this process: its load is this process's own (a master's tables count requests per
  // table, not per server).
  bool this_process = false;
};

class ServerDirectory {
 public:
  virtual ~ServerDirectory() = default;
  // The HBase name of the region server Basalt names `server` (its gRPC HOST:PORT, as meta
  // records it); nullopt when it is not live or has no HBase port.
  virtual std::optional<ServerName> HBaseServerOf(const std::string& server) = 0;
  // Every live region server that has an HBase port.
  virtual std::vector<LiveServer> RegionServers() = 0;
  // The Basalt region server (gRPC HOST:PORT) whose HBase port `sn` names; InvalidArgument when no
  // live one has it (HBase's answer to a move to an unknown server).
  virtual absl::StatusOr<std::string> BasaltServerOf(const ServerName& sn) = 0;
};

class ThisServerOnly final : public ServerDirectory {
 public:
  explicit ThisServerOnly(const ThisServer* self) : self_(self) {}
  std::optional<ServerName> HBaseServerOf(const std::string&) override { return self_->name(); }
  std::vector<LiveServer> RegionServers() override { return {LiveServer{self_->name(), true}}; }
  absl::StatusOr<std::string> BasaltServerOf(const ServerName& sn) override;

 private:
  const ThisServer* const self_;
};

class LiveRegistrations final : public ServerDirectory {
 public:
  using Source = std::function<absl::StatusOr<std::vector<server::ServerRegistration>>()>;
  // `source`: the live registrations (server::LiveRegistrations); `log`: why a read failed (the
  // copy it has stays).
  LiveRegistrations(Source source, std::function<void(std::string_view)> log)
      : source_(std::move(source)), log_(std::move(log)) {}
  std::optional<ServerName> HBaseServerOf(const std::string& server) override;
  std::vector<LiveServer> RegionServers() override;
  absl::StatusOr<std::string> BasaltServerOf(const ServerName& sn) override;

 private:
  void Read(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Source source_;
  const std::function<void(std::string_view)> log_;
  absl::Mutex mu_;
  std::map<std::string, server::ServerRegistration> by_name_ ABSL_GUARDED_BY(mu_);  // by gRPC HOST:PORT
  absl::Time read_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// The HBase name a registration gives its HBase port; nullopt when it has none or it does not parse.
std::optional<ServerName> HBaseNameOf(const server::ServerRegistration& r);

}  // namespace basalt::hbase
