// basalt-server: parses settings, starts its parts (region_server.h: a standalone server, or with
// --cluster a cluster's region server), serves until SIGTERM or SIGINT, then shuts down cleanly
// (finishes calls in flight, closes every region) and exits 0.
// Exit codes: 0 clean shutdown, 1 start-up or shutdown failure, 2 bad settings, 3 its ZooKeeper
// session expired or its lease lapsed, or it found itself fenced (a master is fencing it and will
// reopen its regions elsewhere), 4 a cluster's region server aborted (a region's close could not
// flush: the master splits its log).
#include <signal.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "src/base/config.h"
#include "src/daemon/daemon.h"
#include "src/server/region_server.h"

namespace basalt::server {
namespace {

int Run(int argc, char** argv) {
  Daemon daemon("basalt-server");
  absl::StatusOr<ParsedArgs> parsed = ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (std::optional<int> exit = daemon.Settle(parsed.status(), parsed.ok() && parsed->help, HelpText)) return *exit;
  const ServerConfig& config = parsed->config;
  if (!daemon.Start(config).ok()) return Daemon::kFailed;
  // Its ZooKeeper session's settings, the identity (zookeeper_auth_file) read before anything starts.
  absl::StatusOr<ZooKeeper::Options> zk = daemon.ZooKeeperSession(config);
  if (!zk.ok()) {
    log::Error(std::string(zk.status().message()));
    return Daemon::kBadSettings;
  }
  absl::StatusOr<std::unique_ptr<RegionServer>> server = RegionServer::Start(&daemon, config, *std::move(zk));
  if (!server.ok()) {
    log::Error(std::string(server.status().message()));
    return Daemon::kFailed;
  }
  // Serving (and registered, in a cluster): systemd's Type=notify unit is started.
  daemon.Ready(absl::StrCat("serving on ", (*server)->address()));
  const int sig = daemon.WaitForStop();
  std::cout << "basalt-server: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ", shutting down" << std::endl;
  if (absl::Status stopped = (*server)->Stop(); !stopped.ok()) {
    log::Error(stopped.ToString());
    return Daemon::kFailed;
  }
  std::cout << "basalt-server: stopped" << std::endl;
  return Daemon::kStopped;
}

}  // namespace
}  // namespace basalt::server

int main(int argc, char** argv) { return basalt::server::Run(argc, argv); }
