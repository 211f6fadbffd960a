// For tests only: where the tests' private Ceph cluster and ZooKeeper are (tests/services/ starts
// them for every test declared with basalt_test(... SERVICES) and names their directory in
// BASALT_TEST_SERVICES). BASALT_CEPH_CONF and BASALT_ZK_QUORUM, when set, point a test run by hand
// at services started by hand (deploy/ceph.sh, deploy/zookeeper.sh). Empty when neither is set.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>

namespace basalt {

inline std::string TestServicesDir() {
  const char* d = std::getenv("BASALT_TEST_SERVICES");
  return d == nullptr ? "" : d;
}

// The ceph.conf of the tests' Ceph cluster (pool "basalt").
inline std::string TestCephConf() {
  if (const char* c = std::getenv("BASALT_CEPH_CONF")) return c;
  return TestServicesDir().empty() ? "" : TestServicesDir() + "/ceph/ceph.conf";
}

// HOST:PORT of the tests' ZooKeeper.
inline std::string TestZkQuorum() {
  if (const char* q = std::getenv("BASALT_ZK_QUORUM")) return q;
  if (TestServicesDir().empty()) return "";
  std::ifstream in(TestServicesDir() + "/zookeeper/port");
  std::string port;
  if (!(in >> port)) return "";
  return "127.0.0.1:" + port;
}

inline constexpr char kTestServicesHelp[] =
    "the tests' Ceph and ZooKeeper are not there: run this test through ctest, which starts them "
    "(tests/services/), or start them with deploy/ceph.sh and deploy/zookeeper.sh and set "
    "BASALT_CEPH_CONF and BASALT_ZK_QUORUM";

}  // namespace basalt
