#include "src/tools/shell/shell_flags.h"

#include "gtest/gtest.h"

namespace basalt::shell {
namespace {

TEST(ShellFlags, BothSpellingsOfAValueAndAScript) {
  auto p = ParseShellCommandLine({"--server", "h:1", "--format=json", "--transport", "grpc", "--no-timing",
                                  "--timeout=2.5", "--tls-ca=ca.pem", "--tls_server_name=db", "run.basalt"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->flags.server, "h:1");
  EXPECT_EQ(p->flags.format, OutputFormat::kJson);
  EXPECT_EQ(p->flags.transport, TransportChoice::kGrpc);
  EXPECT_FALSE(p->flags.timing);
  EXPECT_EQ(p->flags.timeout_seconds, 2.5);
  EXPECT_EQ(p->flags.security.tls_ca, "ca.pem");
  EXPECT_EQ(p->flags.security.tls_server_name, "db");
  EXPECT_EQ(p->flags.script, "run.basalt");
  auto e = ParseShellCommandLine({"-e", "list", "--execute=status", "--zookeeper=z:2181", "--znode-parent=/b2"});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->flags.execute, (std::vector<std::string>{"list", "status"}));
  EXPECT_EQ(e->flags.zookeeper, "z:2181");
  EXPECT_EQ(e->flags.znode_parent, "/b2");
  EXPECT_TRUE(e->flags.timing);
  auto stdin_script = ParseShellCommandLine({"-"});
  ASSERT_TRUE(stdin_script.ok());
  EXPECT_EQ(stdin_script->flags.script, "-");
}

TEST(ShellFlags, RefusalsSayWhy) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--format=xml"}, "--format: bad value 'xml' for format: expected human or json"},
      {{"--timeout=0"}, "--timeout: bad value '0' for timeout: must be in [0.001, 86400]"},
      {{"--transport=ib"}, "--transport: bad value 'ib' for transport: expected auto, grpc, verbs or tcp"},
      {{"--znode-parent=b"}, "--znode-parent: bad value 'b' for znode-parent: expected a path such as /basalt"},
      {{"--server"}, "flag --server needs a value: --server=VALUE"},
      {{"--frob=1"}, "--frob: unknown setting 'frob' (see --help)"},
      {{"-x"}, "unknown option -x (see --help)"},
      {{"a", "b"}, "only one script file may be given"},
      {{"-e", "list", "a"}, "give -e or a script file, not both"},
      {{"--server=h:1", "--zookeeper=z:1"}, "give --server or --zookeeper, not both"},
  };
  for (const auto& [args, message] : cases) {
    auto p = ParseShellCommandLine(args);
    ASSERT_FALSE(p.ok()) << message;
    EXPECT_EQ(p.status().message(), message);
  }
}

TEST(ShellFlags, Help) {
  auto p = ParseShellCommandLine({"-h"});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->help);
  const std::string h = ShellHelpText();
  for (const char* want : {"Usage: basalt [options] [script-file | -]", "-e, --execute=VALUE", "--no-timing=VALUE",
                           "--token-file=VALUE", "(default: /basalt)"}) {
    EXPECT_NE(h.find(want), std::string::npos) << want << "\n" << h;
  }
  EXPECT_EQ(h.find("--config"), std::string::npos);
}

}  // namespace
}  // namespace basalt::shell
