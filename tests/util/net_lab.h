// A private network on this machine for partition tests (docs/DESIGN.md §6): a bridge holding the host's
// address 198.18.K.1/24 (RFC 2544's benchmarking range, never routed anywhere; K from the test's
// pid) and one network namespace per node, joined to the bridge by a veth pair and given
// 198.18.K.<10+i>. A daemon started under Exec(node) lives in that namespace; the test process,
// ZooKeeper and Ceph stay on the host's side. Cut() drops a node's traffic to and from an
// address (one port or all) with nftables inside the node's namespace, both ways, so a partition
// is real: packets are lost, connections hang. Needs root, ip(8) and nft(8); Create() says
// what is missing otherwise. Everything it made is removed when it goes.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace basalt::testing {

class NetLab {
 public:
  // Unavailable (with the reason) when this process may not make namespaces.
  static absl::StatusOr<std::unique_ptr<NetLab>> Create() {
    if (::geteuid() != 0) return absl::UnavailableError("partition tests need root (network namespaces, nftables)");
    std::string ip_path;
    for (const char* tool : {"ip", "nft"}) {
      std::string path;
      for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/"}) {
        if (path.empty() && ::access(absl::StrCat(dir, tool).c_str(), X_OK) == 0) path = absl::StrCat(dir, tool);
      }
      if (path.empty()) {
        return absl::UnavailableError(absl::StrCat("partition tests need ", tool, "(8) (deploy/install-deps.sh)"));
      }
      if (ip_path.empty()) ip_path = path;
    }
    const int k = static_cast<int>(::getpid() % 512);
    // Names of at most 15 bytes, new for each lab of this process (a namespace goes
    // asynchronously, its veth with it).
    static int labs = 0;
    const char letter = static_cast<char>('a' + labs++ % 26);
    std::unique_ptr<NetLab> lab(new NetLab(absl::StrCat("bz", ::getpid() % 100000, std::string(1, letter)),
                                           18 + k / 256, k % 256, std::move(ip_path)));
    absl::Status made = lab->Run(absl::StrCat("ip link add ", lab->bridge_, " type bridge && ip addr add ",
                                              lab->host_ip(), "/24 dev ", lab->bridge_, " && ip link set ",
                                              lab->bridge_, " up"));
    if (!made.ok()) return made;
    return lab;
  }
  ~NetLab() {
    for (size_t i = 0; i < namespaces_.size(); ++i) {
      Run(absl::StrCat("ip link del ", bridge_, "v", i, "; ip netns del ", bridge_, "n", i)).IgnoreError();
    }
    Run(absl::StrCat("ip link del ", bridge_)).IgnoreError();
  }

  std::string host_ip() const { return absl::StrCat("198.", b_, ".", c_, ".1"); }

  // Makes `node`'s namespace (its loopback up, joined to the bridge); its address.
  absl::StatusOr<std::string> AddNode(const std::string& node) {
    const int i = static_cast<int>(namespaces_.size());
    const std::string ns = absl::StrCat(bridge_, "n", i);
    const std::string veth = absl::StrCat(bridge_, "v", i);
    const std::string ip = absl::StrCat("198.", b_, ".", c_, ".", 10 + i);
    namespaces_[node] = ns;
    ips_[node] = ip;
    absl::Status made = Run(absl::StrCat(
        "ip netns add ", ns, " && ip link add ", veth, " type veth peer name ", veth, "p netns ", ns,
        " && ip link set ", veth, " master ", bridge_, " up && ip -n ", ns, " link set lo up && ip -n ", ns,
        " addr add ", ip, "/24 dev ", veth, "p && ip -n ", ns, " link set ", veth, "p up && ip netns exec ", ns,
        " nft add table inet cut"));
    if (!made.ok()) return made;
    return ip;
  }
  std::string ip(const std::string& node) const { return ips_.at(node); }
  bool has(const std::string& node) const { return ips_.contains(node); }
  // The launcher that runs a program in `node`'s namespace (it execs the program).
  std::vector<std::string> Exec(const std::string& node) const { return {ip_path_, "netns", "exec", namespaces_.at(node)}; }

  // Drops every packet between `node` and `ip` (to and from `port` on `ip`, when given).
  absl::Status Cut(const std::string& node, const std::string& ip, int port = 0) {
    const std::string ns = namespaces_.at(node);
    const std::string to = port == 0 ? "" : absl::StrCat(" tcp dport ", port);
    const std::string from = port == 0 ? "" : absl::StrCat(" tcp sport ", port);
    return Run(absl::StrCat("ip netns exec ", ns, " nft -f - <<'EOF'\n",
                            "add chain inet cut out { type filter hook output priority 0; }\n",
                            "add chain inet cut in { type filter hook input priority 0; }\n",
                            "add rule inet cut out ip daddr ", ip, to, " drop\n",
                            "add rule inet cut in ip saddr ", ip, from, " drop\n", "EOF"));
  }
  // Drops every cut of `node`.
  absl::Status Heal(const std::string& node) {
    const std::string ns = namespaces_.at(node);
    return Run(absl::StrCat("ip netns exec ", ns, " nft flush table inet cut"));
  }

 private:
  NetLab(std::string bridge, int b, int c, std::string ip_path)
      : bridge_(std::move(bridge)), b_(b), c_(c), ip_path_(std::move(ip_path)) {}
  static absl::Status Run(const std::string& cmd) {
    const int rc = std::system(absl::StrCat("{ ", cmd, "\n} >/dev/null 2>&1").c_str());
    if (rc == 0) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("net lab: `", cmd, "` failed (status ", rc, ")"));
  }

  const std::string bridge_;
  const int b_, c_;
  const std::string ip_path_;
  std::map<std::string, std::string> namespaces_;  // node -> namespace
  std::map<std::string, std::string> ips_;         // node -> address
};

}  // namespace basalt::testing
