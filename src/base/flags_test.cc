#include "src/base/flags.h"

#include <fstream>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

struct Settings {
  std::string server = "127.0.0.1:1";
  int64_t retries = 3;
  bool timing = true;
  std::vector<std::string> execute;
};

FlagSet Table(Settings* s, FlagSet::Syntax syntax) {
  FlagSet f("prog", syntax);
  f.Add("server", "127.0.0.1:1", "where", [s](std::string_view v) {
           std::string host;
           int port;
           if (absl::Status st = SplitHostPort(v, &host, &port); !st.ok()) return BadValue("server", v, st.message());
           s->server = std::string(v);
           return absl::OkStatus();
         });
  f.Add("max_retries", "3", "how often", [s](std::string_view v) -> absl::Status {
           absl::StatusOr<int64_t> n = ParseInt("max_retries", v, 0, 10);
           if (!n.ok()) return n.status();
           s->retries = *n;
           return absl::OkStatus();
         });
  f.Add("timing", "true", "say how long", [s](std::string_view v) -> absl::Status {
           absl::StatusOr<bool> b = ParseBool("timing", v);
           if (!b.ok()) return b.status();
           s->timing = *b;
           return absl::OkStatus();
         },
        "true");
  f.Add("execute", "", "commands", [s](std::string_view v) {
           s->execute.emplace_back(v);
           return absl::OkStatus();
         },
        "", 'e');
  return f;
}

TEST(FlagSet, FlagsOverTheFileAndEitherSpellingOfAKey) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/p.conf";
  std::ofstream(path) << "# a comment\nmax_retries = 5\nserver = 10.0.0.1:9\n";
  Settings s;
  FlagSet f = Table(&s, {});
  ASSERT_TRUE(f.Parse({"--config=" + path, "--max-retries=7"}).ok());
  EXPECT_EQ(s.retries, 7);
  EXPECT_EQ(s.server, "10.0.0.1:9");
  EXPECT_TRUE(f.Given("max_retries"));
  EXPECT_FALSE(f.Given("timing"));
  std::vector<SettingInForce> in_force = f.InForce();
  ASSERT_EQ(in_force.size(), 4u);
  EXPECT_EQ(in_force[1].key, "max_retries");
  EXPECT_EQ(in_force[1].value, "7");
  EXPECT_TRUE(in_force[1].given);
  EXPECT_EQ(in_force[2].value, "true");
  EXPECT_FALSE(in_force[2].given);
}

TEST(FlagSet, ErrorsSayWhichFlagOrLine) {
  Settings s;
  FlagSet f = Table(&s, {});
  absl::Status st = f.Parse({"--max_retries=11"});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "--max_retries: bad value '11' for max_retries: must be in [0, 10]");
  st = Table(&s, {}).Parse({"--frobnicate=1"});
  EXPECT_EQ(st.message(), "--frobnicate: unknown setting 'frobnicate' (see --help)");
  st = Table(&s, {}).Parse({"--server"});
  EXPECT_EQ(st.message(), "flag --server needs a value: --server=VALUE");
  st = Table(&s, {}).Parse({"script.txt"});
  EXPECT_EQ(st.message(), "unexpected argument 'script.txt' (flags are --key=value; see --help)");
  st = Table(&s, {}).Parse({"-x", "1"});
  EXPECT_EQ(st.message(), "unknown option -x (see --help)");
  st = Table(&s, {}).Parse({"--config=/nonexistent/p.conf"});
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  testing::TempDir dir;
  const std::string path = dir.path() + "/p.conf";
  std::ofstream(path) << "server = 10.0.0.1:9\nmax_retries 4\n";
  st = Table(&s, {}).Parse({"--config=" + path});
  EXPECT_EQ(st.message(), path + ":2: expected 'key = value', got 'max_retries 4'");
}

TEST(FlagSet, TheShellsSyntaxSeparateValuesShortNamesSwitchesAndAScript) {
  Settings s;
  FlagSet f = Table(&s, {.config_file = false, .separate_values = true, .positional = true});
  ASSERT_TRUE(f.Parse({"--server", "h:2", "-e", "list", "--execute=scan 't'", "--timing=false", "run.txt"}).ok());
  EXPECT_EQ(s.server, "h:2");
  EXPECT_EQ(s.execute, (std::vector<std::string>{"list", "scan 't'"}));
  EXPECT_FALSE(s.timing);
  EXPECT_EQ(f.positional(), std::vector<std::string>{"run.txt"});
  // A switch alone means its bare value; "-" is a positional argument (stdin).
  Settings t;
  t.timing = false;
  FlagSet g = Table(&t, {.config_file = false, .separate_values = true, .positional = true});
  ASSERT_TRUE(g.Parse({"--timing", "-"}).ok());
  EXPECT_TRUE(t.timing);
  EXPECT_EQ(g.positional(), std::vector<std::string>{"-"});
  // Without a config file, --config is an unknown flag.
  EXPECT_EQ(Table(&t, {.config_file = false}).Parse({"--config=x"}).message(),
            "--config: unknown setting 'config' (see --help)");
}

TEST(FlagSet, HelpListsEveryFlagWithItsDefault) {
  Settings s;
  FlagSet f = Table(&s, {});
  EXPECT_TRUE(f.Reword("server", "127.0.0.1:2", "where else"));
  EXPECT_FALSE(f.Reword("nothing", "", ""));
  ASSERT_TRUE(f.Parse({"--help", "--frobnicate"}).ok());
  EXPECT_TRUE(f.help());
  const std::string h = f.Help("usage: prog\n");
  EXPECT_EQ(h.rfind("usage: prog\n", 0), 0u);
  for (const char* want : {"--config=FILE", "--server=VALUE\n      where else (default: 127.0.0.1:2)",
                           "--max_retries=VALUE\n      how often (default: 3)", "(default: true; --timing alone: true)",
                           "-e, --execute=VALUE\n      commands (default: unset)"}) {
    EXPECT_NE(h.find(want), std::string::npos) << want << "\n" << h;
  }
}

TEST(FlagSet, ValueParsers) {
  EXPECT_EQ(*ParseBytes("k", "64KiB"), 64u << 10);
  EXPECT_EQ(*ParseBytes("k", "3 m"), 3u << 20);
  EXPECT_FALSE(ParseBytes("k", "-1").ok());
  EXPECT_FALSE(ParseBytes("k", "99999999999G").ok());
  EXPECT_EQ(*ParseDouble("k", "2.5", 0, 10), 2.5);
  EXPECT_EQ(ParseDouble("k", "nan", 0, 10).status().message(), "bad value 'nan' for k: must be in [0, 10]");
  EXPECT_EQ(*ParseBool("k", "Off"), false);
  std::vector<std::string> users;
  ASSERT_TRUE(ParsePrincipals("k", "alice, @ops", &users).ok());
  EXPECT_EQ(users, (std::vector<std::string>{"alice", "@ops"}));
  EXPECT_TRUE(IsSecretSetting("tls_key"));
  EXPECT_FALSE(IsSecretSetting("tls_cert"));
}

}  // namespace
}  // namespace basalt::server
