#include "src/base/config.h"

#include <fstream>
#include <map>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

TEST(ServerConfig, Defaults) {
  auto p = ParseCommandLine({});
  ASSERT_TRUE(p.ok()) << p.status();
  const ServerConfig& c = p->config;
  EXPECT_EQ(c.data_dir, "./basalt-data");
  EXPECT_EQ(c.listen, "127.0.0.1:16020");
  EXPECT_EQ(c.port_file, "");
  EXPECT_FALSE(c.cluster);
  EXPECT_EQ(c.handler_threads, 16);
  EXPECT_EQ(c.memstore_flush_size, 128ull << 20);
  EXPECT_EQ(c.block_cache_size, 128ull << 20);
  EXPECT_EQ(c.durability, Durability::kSyncWal);
  EXPECT_EQ(c.wal_recovery, WalRecoveryMode::kStrict);
  EXPECT_FALSE(c.rebuild_catalog);
  EXPECT_EQ(c.max_concurrent_calls, 1000);
  EXPECT_EQ(c.max_request_bytes, 64 << 20);
  EXPECT_EQ(c.scan_rows_per_message, 100u);
  EXPECT_EQ(c.scan_bytes_per_message, 1ull << 20);
  EXPECT_FALSE(p->help);
}

TEST(ServerConfig, FileThenFlagsOverride) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/server.conf";
  {
    std::ofstream out(path);
    out << "# a comment\n"
        << "data_dir = /var/lib/basalt   # trailing comment\n"
        << "\n"
        << "handler_threads=4\n"
        << "  durability = async\n"
        << "block_cache_size = 64MiB\n"
        << "memstore_flush_size = 1g\n";
  }
  auto p = ParseCommandLine({"--config=" + path, "--handler_threads=2", "--listen=[::1]:0", "--durability=skip"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->config.data_dir, "/var/lib/basalt");
  EXPECT_EQ(p->config.handler_threads, 2);  // the flag wins, wherever it is on the line
  EXPECT_EQ(p->config.durability, Durability::kSkipWal);
  EXPECT_EQ(p->config.block_cache_size, 64ull << 20);
  EXPECT_EQ(p->config.memstore_flush_size, 1ull << 30);
  EXPECT_EQ(p->config.listen, "[::1]:0");
}

// The commented sample a cluster's region server starts from (deploy/systemd/) is a valid file.
TEST(ServerConfig, TheRegionServerSampleParses) {
  auto p = ParseCommandLine({std::string("--config=") + BASALT_SOURCE_DIR + "/deploy/systemd/regionserver.conf"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->config.cluster);
  EXPECT_EQ(p->config.rados_pool, "basalt");
  EXPECT_EQ(p->config.listen, "0.0.0.0:16020");
}

// The package's /etc/basalt/basalt.conf (deploy/basalt.conf) parses and names every setting.
TEST(ServerConfig, ThePackagesSampleParsesAndListsEverySetting) {
  const std::string path = std::string(BASALT_SOURCE_DIR) + "/deploy/basalt.conf";
  auto p = ParseCommandLine({"--config=" + path});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->config.data_dir, "/var/lib/basalt");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  for (const SettingInForce& e : SettingsInForce(ServerConfig{})) {
    EXPECT_TRUE(text.str().find("\n# " + e.key + " =") != std::string::npos ||
                text.str().find("\n" + e.key + " = ") != std::string::npos)
        << e.key << " is not in deploy/basalt.conf";
  }
}

TEST(ServerConfig, UnknownKeysAndBadValues) {
  auto expect_invalid = [](std::vector<std::string> args, std::string_view needle) {
    auto p = ParseCommandLine(args);
    ASSERT_FALSE(p.ok()) << args[0];
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
    EXPECT_NE(std::string(p.status().message()).find(needle), std::string::npos) << p.status();
  };
  expect_invalid({"--nope=1"}, "unknown setting 'nope'");
  expect_invalid({"positional"}, "unexpected argument");
  expect_invalid({"--handler_threads=-1"}, "handler_threads");
  expect_invalid({"--handler_threads=x"}, "expected an integer");
  expect_invalid({"--durability=fast"}, "expected sync, async or skip");
  expect_invalid({"--hbase_listen=nohost"}, "hbase_listen");
  // The HBase port knows its users by their certificates only: with auth on it needs tls_ca.
  expect_invalid({"--auth=true", "--tls_cert=c", "--tls_key=k", "--auth_users_file=u", "--hbase_listen=127.0.0.1:16000"},
                 "hbase_listen with auth=true needs tls_ca");
  EXPECT_TRUE(ParseCommandLine({"--auth=true", "--tls_cert=c", "--tls_key=k", "--tls_ca=ca",
                                "--hbase_listen=127.0.0.1:16000"}).ok());
  // A cluster's HBase records are the master's to publish.
  expect_invalid({"--cluster", "--zookeeper_quorum=127.0.0.1:2181", "--rados_pool=p", "--hbase_listen=127.0.0.1:0",
                  "--hbase_zookeeper_quorum=127.0.0.1:2181"},
                 "hbase_zookeeper_quorum on a cluster's region server");
  expect_invalid({"--wal_recovery=lenient"}, "expected strict, point_in_time or skip_corrupted");
  expect_invalid({"--rebuild_catalog"}, "needs a value");
  expect_invalid({"--listen=localhost"}, "HOST:PORT");
  expect_invalid({"--listen=127.0.0.1:70000"}, "not in [0, 65535]");
  expect_invalid({"--block_cache_size=12XB"}, "byte count");
  expect_invalid({"--block_cache_size=-1"}, "byte count");
  expect_invalid({"--max_request_bytes=4GiB"}, "max_request_bytes");
  expect_invalid({"--cluster=maybe"}, "expected true or false");
  expect_invalid({"--cluster"}, "cluster=true needs zookeeper_quorum");
  expect_invalid({"--cluster=true", "--zookeeper_quorum=127.0.0.1:2181"}, "and rados_pool");
  expect_invalid({"--zookeeper_quorum=127.0.0.1:2181"}, "is for a region server of a cluster");
  expect_invalid({"--data_dir"}, "needs a value");
}

TEST(ServerConfig, RdmaDefaults) {
  auto p = ParseCommandLine({});
  ASSERT_TRUE(p.ok()) << p.status();
  const ServerConfig& c = p->config;
  EXPECT_EQ(c.rdma, TransportChoice::kAuto);
  EXPECT_EQ(c.rdma_listen, "");
  EXPECT_EQ(c.rdma_device, "");
  EXPECT_EQ(c.rdma_device_port, 0);
  EXPECT_EQ(c.rdma_gid_index, -1);
  EXPECT_EQ(c.rdma_helper_threads, 0);
  EXPECT_EQ(c.rdma_max_endpoints, 128);
  EXPECT_EQ(c.rdma_srq_depth, 0);
  EXPECT_EQ(c.rdma_credits, 8);
  EXPECT_EQ(c.rdma_message_bytes, 72u << 10);
  EXPECT_EQ(c.rdma_rendezvous_budget, uint64_t{256} << 20);
  EXPECT_EQ(c.rdma_spin_us, 50);
  EXPECT_EQ(c.rdma_session_ttl_s, 600);
}

TEST(ServerConfig, RdmaSettingsFromFileAndFlags) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/rdma.conf";
  {
    std::ofstream out(path);
    out << "rdma = on\n"
        << "rdma_listen = 192.168.10.5:4791\n"
        << "rdma_device = mlx5_0\n"
        << "rdma_device_port = 1\n"
        << "rdma_gid_index = 3\n"
        << "rdma_helper_threads = 4\n"
        << "rdma_max_endpoints = 1024\n"
        << "rdma_srq_depth = 256\n"
        << "rdma_credits = 1\n"
        << "rdma_message_bytes = 1MiB\n"
        << "rdma_rendezvous_budget = 1GiB\n"
        << "rdma_spin_us = 0\n"
        << "rdma_session_ttl_s = 60\n";
  }
  auto p = ParseCommandLine({"--config=" + path});
  ASSERT_TRUE(p.ok()) << p.status();
  const ServerConfig& c = p->config;
  EXPECT_EQ(c.rdma, TransportChoice::kVerbs);
  EXPECT_EQ(c.rdma_listen, "192.168.10.5:4791");
  EXPECT_EQ(c.rdma_device, "mlx5_0");
  EXPECT_EQ(c.rdma_device_port, 1);
  EXPECT_EQ(c.rdma_gid_index, 3);
  EXPECT_EQ(c.rdma_helper_threads, 4);
  EXPECT_EQ(c.rdma_max_endpoints, 1024);
  EXPECT_EQ(c.rdma_srq_depth, 256);
  EXPECT_EQ(c.rdma_credits, 1);
  EXPECT_EQ(c.rdma_message_bytes, 1u << 20);
  EXPECT_EQ(c.rdma_rendezvous_budget, uint64_t{1} << 30);
  EXPECT_EQ(c.rdma_spin_us, 0);
  EXPECT_EQ(c.rdma_session_ttl_s, 60);

  // Flags win; the limits of each range are accepted.
  p = ParseCommandLine({"--config=" + path, "--rdma=off", "--rdma_listen=[fe80::1]:0", "--rdma_device=",
                        "--rdma_device_port=255", "--rdma_gid_index=-1", "--rdma_helper_threads=64",
                        "--rdma_max_endpoints=65536", "--rdma_srq_depth=65536", "--rdma_message_bytes=16MiB", "--rdma_rendezvous_budget=64GiB",
                        "--rdma_spin_us=1000000",
                        "--rdma_session_ttl_s=31536000"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->config.rdma, TransportChoice::kGrpc);
  EXPECT_EQ(p->config.rdma_listen, "[fe80::1]:0");
  EXPECT_EQ(p->config.rdma_device, "");
  EXPECT_EQ(p->config.rdma_device_port, 255);
  EXPECT_EQ(p->config.rdma_gid_index, -1);
  EXPECT_EQ(p->config.rdma_helper_threads, 64);
  EXPECT_EQ(p->config.rdma_max_endpoints, 65536);
  EXPECT_EQ(p->config.rdma_srq_depth, 65536);
  EXPECT_EQ(p->config.rdma_message_bytes, 16u << 20);
  EXPECT_EQ(p->config.rdma_rendezvous_budget, uint64_t{64} << 30);
  EXPECT_EQ(p->config.rdma_spin_us, 1000000);
  EXPECT_EQ(p->config.rdma_session_ttl_s, 31536000);

  p = ParseCommandLine({"--rdma_message_bytes=1024", "--rdma_listen=", "--rdma_rendezvous_budget=0"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->config.rdma_message_bytes, 1024u);
  EXPECT_EQ(p->config.rdma_rendezvous_budget, 0u);  // no rendezvous
  EXPECT_EQ(p->config.rdma_listen, "");  // empty: the listen host, a free port
}

TEST(ServerConfig, RdmaModeSpellings) {
  const std::pair<const char*, TransportChoice> cases[] = {
      {"auto", TransportChoice::kAuto}, {"AUTO", TransportChoice::kAuto}, {"on", TransportChoice::kVerbs},
      {"true", TransportChoice::kVerbs},   {"1", TransportChoice::kVerbs},      {"On", TransportChoice::kVerbs},
      {"off", TransportChoice::kGrpc},   {"false", TransportChoice::kGrpc}, {"0", TransportChoice::kGrpc},
  };
  for (const auto& [text, want] : cases) {
    ServerConfig c;
    c.rdma = want == TransportChoice::kAuto ? TransportChoice::kGrpc : TransportChoice::kAuto;
    absl::Status s = SetConfigValue("rdma", text, &c);
    ASSERT_TRUE(s.ok()) << text << ": " << s;
    EXPECT_EQ(c.rdma, want) << text;
  }
}

TEST(ServerConfig, RdmaBadValuesAreInvalidArgument) {
  const std::pair<const char*, const char*> cases[] = {
      {"--rdma=maybe", "--rdma: bad value 'maybe' for rdma: expected auto, on or off"},
      {"--rdma=", "--rdma: bad value '' for rdma: expected auto, on or off"},
      {"--rdma_listen=nohostport", "--rdma_listen: bad value 'nohostport' for rdma_listen: expected HOST:PORT"},
      {"--rdma_listen=10.0.0.1:99999", "--rdma_listen: bad value '10.0.0.1:99999' for rdma_listen: port '99999' is not in [0, 65535]"},
      {"--rdma_listen=fe80::1:5", "--rdma_listen: bad value 'fe80::1:5' for rdma_listen: IPv6 hosts go in brackets: [::1]:PORT"},
      {"--rdma_message_bytes=10", "--rdma_message_bytes: bad value '10' for rdma_message_bytes: must be in [1KiB, 16MiB]"},
      {"--rdma_message_bytes=17MiB", "--rdma_message_bytes: bad value '17MiB' for rdma_message_bytes: must be in [1KiB, 16MiB]"},
      {"--rdma_message_bytes=lots", "--rdma_message_bytes: bad value 'lots' for rdma_message_bytes: expected a byte count such as 1048576, 64KiB or 128MiB"},
      {"--rdma_gid_index=-2", "--rdma_gid_index: bad value '-2' for rdma_gid_index: must be in [-1, 255]"},
      {"--rdma_gid_index=256", "--rdma_gid_index: bad value '256' for rdma_gid_index: must be in [-1, 255]"},
      {"--rdma_device_port=300", "--rdma_device_port: bad value '300' for rdma_device_port: must be in [0, 255]"},
      {"--rdma_device_port=-1", "--rdma_device_port: bad value '-1' for rdma_device_port: must be in [0, 255]"},
      {"--rdma_helper_threads=-1", "--rdma_helper_threads: bad value '-1' for rdma_helper_threads: must be in [0, 64]"},
      {"--rdma_helper_threads=65", "--rdma_helper_threads: bad value '65' for rdma_helper_threads: must be in [0, 64]"},
      {"--rdma_max_endpoints=0", "--rdma_max_endpoints: bad value '0' for rdma_max_endpoints: must be in [1, 65536]"},
      {"--rdma_max_endpoints=x", "--rdma_max_endpoints: bad value 'x' for rdma_max_endpoints: expected an integer"},
      {"--rdma_credits=0", "--rdma_credits: bad value '0' for rdma_credits: must be in [1, 255]"},
      {"--rdma_credits=256", "--rdma_credits: bad value '256' for rdma_credits: must be in [1, 255]"},
      {"--rdma_srq_depth=-1", "--rdma_srq_depth: bad value '-1' for rdma_srq_depth: must be in [0, 65536]"},
      {"--rdma_srq_depth=65537", "--rdma_srq_depth: bad value '65537' for rdma_srq_depth: must be in [0, 65536]"},
      {"--rdma_rendezvous_budget=65GiB",
       "--rdma_rendezvous_budget: bad value '65GiB' for rdma_rendezvous_budget: must be in [0, 64GiB]"},
      {"--rdma_spin_us=-1", "--rdma_spin_us: bad value '-1' for rdma_spin_us: must be in [0, 1000000]"},
      {"--rdma_session_ttl_s=0", "--rdma_session_ttl_s: bad value '0' for rdma_session_ttl_s: must be in [1, 31536000]"},
  };
  for (const auto& [flag, message] : cases) {
    auto p = ParseCommandLine({flag});
    ASSERT_FALSE(p.ok()) << flag;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << flag;
    EXPECT_EQ(p.status().message(), message) << flag;
  }
  // In a file, the error names the file and line.
  testing::TempDir dir;
  const std::string path = dir.path() + "/rdma.conf";
  std::ofstream(path) << "rdma = on\nrdma_gid_index = -2\n";
  auto p = ParseCommandLine({"--config=" + path});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), path + ":2: bad value '-2' for rdma_gid_index: must be in [-1, 255]");
}

TEST(ServerConfig, FileErrorsNameFileAndLine) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/bad.conf";
  {
    std::ofstream out(path);
    out << "listen = 127.0.0.1:0\nfrobnicate = 3\n";
  }
  auto p = ParseCommandLine({"--config=" + path});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(p.status().message()).find(path + ":2: unknown setting 'frobnicate'"), std::string::npos)
      << p.status();

  ServerConfig c;
  absl::Status s = ParseConfigText("listen 127.0.0.1:1\n", "x.conf", &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("x.conf:1: expected 'key = value'"), std::string::npos) << s;

  auto missing = ParseCommandLine({"--config=" + dir.path() + "/absent.conf"});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(ServerConfig, RecoverySettings) {
  auto p = ParseCommandLine({"--wal_recovery=Point_In_Time", "--rebuild_catalog=true"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->config.wal_recovery, WalRecoveryMode::kPointInTime);
  EXPECT_TRUE(p->config.rebuild_catalog);
  p = ParseCommandLine({"--wal_recovery=skip_corrupted"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->config.wal_recovery, WalRecoveryMode::kSkipCorrupted);
}

TEST(ServerConfig, HelpListsEveryKey) {
  auto p = ParseCommandLine({"--help", "--nonsense=1"});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->help);
  std::string h = HelpText();
  for (const char* k : {"data_dir", "listen", "port_file", "cluster", "cq_threads", "handler_threads", "memstore_flush_size",
                        "block_cache_size", "durability", "wal_recovery", "rebuild_catalog", "max_concurrent_calls",
                        "reserved_fds", "max_request_bytes",
                        "scan_rows_per_message", "scan_bytes_per_message", "config", "rdma", "rdma_listen",
                        "rdma_device", "rdma_device_port", "rdma_gid_index", "rdma_helper_threads",
                        "rdma_max_endpoints", "rdma_credits", "rdma_srq_depth", "rdma_message_bytes", "rdma_rendezvous_budget", "rdma_spin_us",
                        "rdma_session_ttl_s", "log_level",
                        "log_dir", "log_max_file_size", "latency_graph_interval_ms"}) {
    EXPECT_NE(h.find(std::string("--") + k + "="), std::string::npos) << k;
  }
}

// /conf shows every setting: its text as given, or the default's; a secret's value masked.
TEST(ServerConfig, SettingsInForceSayWhatWasGivenAndMaskSecrets) {
  auto p = ParseCommandLine({"--block_cache_size=64MiB", "--log_level=warn", "--log_dir=/tmp/l"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->config.log_level, log::Level::kWarning);
  EXPECT_EQ(p->config.log_dir, "/tmp/l");
  std::map<std::string, SettingInForce> by_key;
  for (SettingInForce& e : SettingsInForce(p->config)) by_key[e.key] = e;
  EXPECT_EQ(by_key.at("block_cache_size").value, "64MiB");
  EXPECT_TRUE(by_key.at("block_cache_size").given);
  EXPECT_EQ(by_key.at("memstore_flush_size").value, "128MiB");
  EXPECT_FALSE(by_key.at("memstore_flush_size").given);
  EXPECT_EQ(by_key.at("latency_graph_interval_ms").value, "10000");
  for (const char* secret : {"tls_key_password", "ssl_private_key", "zookeeper_auth_token", "rados_keyring"}) {
    EXPECT_TRUE(IsSecretSetting(secret)) << secret;
  }
  for (const char* plain : {"rdma_gid_index", "listen", "ceph_conf", "rados_client"}) {
    EXPECT_FALSE(IsSecretSetting(plain)) << plain;
  }
  EXPECT_EQ(ParseCommandLine({"--log_level=loud"}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ServerConfig, SplitHostPort) {
  std::string host;
  int port = -1;
  ASSERT_TRUE(SplitHostPort("127.0.0.1:0", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(SplitHostPort("[::1]:16020", &host, &port).ok());
  EXPECT_EQ(host, "[::1]");
  EXPECT_EQ(port, 16020);
  EXPECT_FALSE(SplitHostPort(":1", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort("::1:5", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort("h:+5", &host, &port).ok());
}

}  // namespace
}  // namespace basalt::server
