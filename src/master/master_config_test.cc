#include "src/master/master_config.h"

#include <fstream>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::master {
namespace {

TEST(MasterConfig, DefaultsAreTheMastersAndTheFileIsUnderTheFlags) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/master.conf";
  std::ofstream(path) << "zookeeper_quorum = 127.0.0.1:2181\nbalancer_period_ms = 1000\nrados_pool = basalt\n";
  auto p = ParseMasterCommandLine({"--config=" + path, "--balancer_period_ms=0", "--name=m1"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->config.server.listen, "127.0.0.1:16000");
  EXPECT_EQ(p->config.server.http_listen, "127.0.0.1:16010");
  EXPECT_EQ(p->config.server.zookeeper_quorum, "127.0.0.1:2181");
  EXPECT_EQ(p->config.server.rados_pool, "basalt");
  EXPECT_EQ(p->config.balancer_period_ms, 0);
  EXPECT_EQ(p->config.name, "m1");
  // /conf: every key of the master's, given or not, and none of the server's own.
  std::map<std::string, server::SettingInForce> by_key;
  for (const server::SettingInForce& e : p->in_force) by_key[e.key] = e;
  EXPECT_TRUE(by_key["balancer_period_ms"].given);
  EXPECT_EQ(by_key["listen"].value, "127.0.0.1:16000");
  EXPECT_FALSE(by_key["listen"].given);
  EXPECT_FALSE(by_key.contains("memstore_flush_size"));
  EXPECT_FALSE(by_key.contains("cluster"));
}

TEST(MasterConfig, RefusesWhatItCannotRunWith) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{}, "zookeeper_quorum is required: the masters' election and the cluster live there"},
      {{"--zookeeper_quorum=z:1", "--balancer_period_ms=-1"},
       "--balancer_period_ms: bad value '-1' for balancer_period_ms: must be in [0, 604800000]"},
      {{"--zookeeper_quorum=z:1", "--zookeeper_session_timeout_ms=10"},
       "--zookeeper_session_timeout_ms: bad value '10' for zookeeper_session_timeout_ms: must be in [200, 600000]"},
      {{"--zookeeper_quorum=z:1", "--memstore_flush_size=1MiB"},
       "--memstore_flush_size: unknown setting 'memstore_flush_size' (see --help)"},
      {{"--zookeeper_quorum=z:1", "--tls_cert=c.pem"},
       "tls_cert and tls_key go together: give both, or neither (plain text)"},
      {{"--zookeeper_quorum=z:1", "--tls_cert=c.pem", "--tls_key=k.pem", "--tls_ca=ca.pem", "--auth=true"},
       "auth=true needs zookeeper_auth_file (the cluster's ZooKeeper identity): without it every node of the cluster "
       "in ZooKeeper can be changed or deleted by anyone who reaches ZooKeeper"},
      {{"--zookeeper_quorum=z:1", "stray"}, "unexpected argument 'stray' (flags are --key=value; see --help)"},
      {{"--zookeeper_quorum=z:1", "--hbase_listen=127.0.0.1:0", "--zookeeper_znode_parent=/hb",
        "--hbase_znode_parent=/hb"},
       "hbase_znode_parent /hb is the cluster's own zookeeper_znode_parent: give HBase's another"},
  };
  for (const Case& c : cases) {
    auto p = ParseMasterCommandLine(c.args);
    ASSERT_FALSE(p.ok()) << c.message;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(p.status().message(), c.message);
  }
  // (The HBase records under an identity: anyone's to read, the identity's to change.)
  EXPECT_TRUE(ParseMasterCommandLine({"--zookeeper_quorum=z:1", "--hbase_listen=127.0.0.1:0", "--zookeeper_auth_file=id"}).ok());
  auto off = ParseMasterCommandLine({"--zookeeper_quorum=z:1", "--http_listen=off"});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_TRUE(off->config.server.http_listen.empty());
}

TEST(MasterConfig, HelpListsTheMastersKeys) {
  auto p = ParseMasterCommandLine({"--help"});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->help);
  const std::string h = MasterHelpText();
  for (const char* want : {"usage: basalt-master", "--zookeeper_quorum=VALUE", "--balancer_period_ms=VALUE",
                           "--name=VALUE", "--listen=VALUE\n      HOST:PORT to serve gRPC on once active",
                           "(default: 127.0.0.1:16010)", "basalt-master.log"}) {
    EXPECT_NE(h.find(want), std::string::npos) << want;
  }
  EXPECT_EQ(h.find("--memstore_flush_size"), std::string::npos);
}

}  // namespace
}  // namespace basalt::master
