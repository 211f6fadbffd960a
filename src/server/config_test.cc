#include "src/server/config.h"

#include <fstream>

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
  EXPECT_TRUE(c.standalone);
  EXPECT_EQ(c.handler_threads, 16);
  EXPECT_EQ(c.memstore_flush_size, 128ull << 20);
  EXPECT_EQ(c.block_cache_size, 128ull << 20);
  EXPECT_EQ(c.durability, Durability::kSyncWal);
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
  expect_invalid({"--listen=localhost"}, "HOST:PORT");
  expect_invalid({"--listen=127.0.0.1:70000"}, "not in [0, 65535]");
  expect_invalid({"--block_cache_size=12XB"}, "byte count");
  expect_invalid({"--block_cache_size=-1"}, "byte count");
  expect_invalid({"--max_request_bytes=4GiB"}, "max_request_bytes");
  expect_invalid({"--standalone=maybe"}, "expected true or false");
  expect_invalid({"--standalone=false"}, "cluster mode needs a master; not built yet");
  expect_invalid({"--data_dir"}, "needs a value");
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

TEST(ServerConfig, HelpListsEveryKey) {
  auto p = ParseCommandLine({"--help", "--nonsense=1"});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->help);
  std::string h = HelpText();
  for (const char* k : {"data_dir", "listen", "port_file", "standalone", "cq_threads", "handler_threads", "memstore_flush_size",
                        "block_cache_size", "durability", "max_concurrent_calls", "max_request_bytes",
                        "scan_rows_per_message", "scan_bytes_per_message", "config"}) {
    EXPECT_NE(h.find(std::string("--") + k + "="), std::string::npos) << k;
  }
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
