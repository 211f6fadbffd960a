// basalt-master's settings: the ones it shares with basalt-server (ZooKeeper, RADOS, its ports,
// TLS and auth, the log), from the server's table with the master's defaults, and its own two
// (name, balancer_period_ms). One parser (src/base/flags.h): a config file of `key = value` lines
// under --key=value flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/base/config.h"
#include "src/base/flags.h"

namespace basalt::master {

struct MasterConfig {
  // The settings shared with basalt-server; only MasterFlags' keys are read (listen defaults to
  // HBase's master port 16000, http_listen to its UI port 16010).
  server::ServerConfig server;
  std::string name;                       // how this master is known (empty: HOST:PID)
  int64_t balancer_period_ms = 300000;    // 0: only when asked (HBase's 5 minutes)
};

struct ParsedMasterArgs {
  MasterConfig config;
  bool help = false;                             // print MasterHelpText() and exit 0
  std::vector<server::SettingInForce> in_force;  // for /conf
};

// The master's command line (without argv[0]). InvalidArgument naming the flag, or the file and
// line, for an unknown key or a bad value, and for what the master cannot run without (a
// ZooKeeper quorum; auth without TLS or without the cluster's ZooKeeper identity); NotFound when
// the config file cannot be read.
absl::StatusOr<ParsedMasterArgs> ParseMasterCommandLine(const std::vector<std::string>& args);

// The --help text: usage and every key with its default.
std::string MasterHelpText();

}  // namespace basalt::master
