// basalt-master's core: one active master among any number, elected through ZooKeeper, that
// tracks the live region servers and fences every one that dies (docs/DESIGN.md §6). Fencing
// comes before anything is reopened elsewhere: the dead server's RADOS client is blocklisted, the
// newest OSD map awaited, and one write made into every placement group (RadosEnv::Fence), so a
// server that was only paused (a long GC, a frozen VM) can never again write or acknowledge.
//
// Not built yet, and refused rather than imitated: assigning regions, moving and balancing
// them, splitting a dead server's log and reopening its regions (the later steps).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/rados_env.h"
#include "common/zookeeper.h"
#include "src/server/cluster_member.h"

namespace basalt::master {

class Master {
 public:
  struct Options {
    std::string name;                  // how this master is known (HOST:PORT or HOST:PID)
    ZooKeeper::Options zk;
    server::ClusterPaths paths;
    RadosEnv* rados = nullptr;         // the shared storage, to fence with (nullptr: cannot fence)
    std::function<void(std::string_view)> log;
  };

  // Connects and enters the election; returns at once (active or a backup).
  static absl::StatusOr<std::unique_ptr<Master>> Start(Options options);
  ~Master();

  bool active() const;
  // The live servers' node names ("<name>,<start code>") as the active master sees them.
  std::vector<std::string> LiveServers() const;

 private:
  explicit Master(Options options);
  void BecomeActive();
  // Lists the live and the registered servers (watching the live ones) and fences every
  // registered server that is no longer live.
  void Reconcile();
  absl::Status FenceServer(const std::string& node, const server::ServerRegistration& reg);
  void Log(std::string_view line) const;

  Options options_;
  std::unique_ptr<ZooKeeper> zk_;
  std::unique_ptr<LeaderElection> election_;
  mutable absl::Mutex mu_;
  bool active_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> live_ ABSL_GUARDED_BY(mu_);
  absl::Mutex reconcile_mu_;  // one reconciliation at a time
};

}  // namespace basalt::master
