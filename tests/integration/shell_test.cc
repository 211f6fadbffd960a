// The `basalt` shell against a real server: every command in script mode (-e, a script file,
// piped stdin), human and JSON output, and errors that exit non-zero.
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "tests/integration/integration_util.h"
#include "transport/verbs/setup.h"

#ifndef BASALT_SHELL_BINARY
#error "BASALT_SHELL_BINARY must name the basalt shell executable"
#endif

namespace basalt::testing {
namespace {

struct ShellRun {
  int exit_code = -1;
  std::string out, err;
};

class Shell : public ServerTest {
 protected:
  void SetUp() override { StartServer(); }

  // Runs the shell with `args` (already quoted for sh) and optional stdin text.
  ShellRun Run(const std::string& args, const std::string& stdin_text = "") {
    const std::string base = dir_.path() + "/shell" + std::to_string(runs_++);
    std::ofstream(base + ".in") << stdin_text;
    std::string cmd = absl::StrCat(BASALT_SHELL_BINARY, " --server=", server_->address(), " ", args, " <", base,
                                   ".in >", base, ".out 2>", base, ".err");
    int rc = std::system(cmd.c_str());
    ShellRun r;
    r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = Slurp(base + ".out");
    r.err = Slurp(base + ".err");
    return r;
  }
  ShellRun E(const std::string& commands, const std::string& extra = "") {
    return Run(extra + " -e '" + absl::StrReplaceAll(commands, {{"'", "'\\''"}}) + "'");
  }
  static std::string Slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  int runs_ = 0;
};

#define EXPECT_HAS(haystack, needle) EXPECT_TRUE(absl::StrContains(haystack, needle)) << (haystack)

TEST_F(Shell, EveryCommandInScriptMode) {
  ShellRun r = E("create 't1', {NAME => 'cf', VERSIONS => 3, DATA_BLOCK_ENCODING => 'FAST_DIFF', "
                 "COMPRESSION => 'SNAPPY', BLOOMFILTER => 'ROWCOL'}, {NAME => 'cf2', TTL => 3600}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = E("put 't1', 'r1', 'cf:a', 'v1', 100; put 't1', 'r1', 'cf:a', 'v2', 200; put 't1', 'r2', 'cf2:b', \"x\\x00y\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = E("get 't1', 'r1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "cf:a");
  EXPECT_HAS(r.out, "timestamp=200, value=v2");
  EXPECT_HAS(r.out, "1 row(s)");
  r = E("get 't1', 'r1', {COLUMN => 'cf:a', VERSIONS => 3}");
  EXPECT_HAS(r.out, "value=v1");
  r = E("get 't1', 'r1', {COLUMN => 'cf:a', TIMERANGE => [0, 150]}");
  EXPECT_HAS(r.out, "value=v1");
  EXPECT_FALSE(absl::StrContains(r.out, "value=v2")) << r.out;

  r = E("scan 't1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "ROW");
  EXPECT_HAS(r.out, "column=cf2:b");
  EXPECT_HAS(r.out, "value=x\\x00y");  // binary bytes printed as HBase's toStringBinary
  EXPECT_HAS(r.out, "2 row(s)");
  r = E("scan 't1', {STARTROW => 'r2', LIMIT => 1, COLUMNS => ['cf2']}");
  EXPECT_HAS(r.out, "1 row(s)");
  EXPECT_HAS(r.out, " r2 ");
  r = E("scan 't1', {STOPROW => 'r2'}");
  EXPECT_HAS(r.out, "1 row(s)");

  r = E("incr 't1', 'c', 'cf:n', 5; incr 't1', 'c', 'cf:n'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "COUNTER VALUE = 5");
  EXPECT_HAS(r.out, "COUNTER VALUE = 6");
  r = E("get_counter 't1', 'c', 'cf:n'");
  EXPECT_HAS(r.out, "COUNTER VALUE = 6");
  r = E("count 't1'");
  EXPECT_HAS(r.out, "3 row(s)");

  r = E("delete 't1', 'r1', 'cf:a'; get 't1', 'r1', {COLUMN => 'cf:a', VERSIONS => 3}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "value=v1");
  EXPECT_FALSE(absl::StrContains(r.out, "value=v2")) << r.out;
  r = E("deleteall 't1', 'r1'; get 't1', 'r1'");
  EXPECT_HAS(r.out, "0 row(s)");

  r = E("describe 't1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "NAME => 'cf'");
  EXPECT_HAS(r.out, "FAST_DIFF");
  EXPECT_HAS(r.out, "SNAPPY");
  EXPECT_HAS(r.out, "ENABLED");
  r = E("list");
  EXPECT_HAS(r.out, "t1");
  // alter: a setting of cf (the others stay), a family added, one dropped.
  r = E("alter 't1', NAME => 'cf', VERSIONS => 5; alter 't1', 'cf3', 'delete' => 'cf2'; describe 't1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "Updating all regions with the new schema...");
  EXPECT_HAS(r.out, "NAME => 'cf3'");
  EXPECT_FALSE(absl::StrContains(r.out, "NAME => 'cf2'")) << r.out;
  EXPECT_HAS(r.out, "VERSIONS => '5'");
  EXPECT_HAS(r.out, "FAST_DIFF");  // kept
  // Settings Basalt has none for are kept and shown back, through a restart of the catalogue's
  // reader (describe reads the server's); the ones it would not honour are refused by the server.
  r = E("alter 't1', {NAME => 'cf', IN_MEMORY => true, METADATA => {'app.owner' => 'ops'}}, "
        "METADATA => {'OWNER' => 'data-team'}, CONFIGURATION => {'hbase.hstore.blockingStoreFiles' => '20'}; "
        "describe 't1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "CACHE_ENCODED => 'false', METADATA => {'IN_MEMORY' => 'true', 'app.owner' => 'ops'}}");
  EXPECT_HAS(r.out, "{TABLE_ATTRIBUTES => {METADATA => {'OWNER' => 'data-team'}, CONFIGURATION => "
                    "{'hbase.hstore.blockingStoreFiles' => '20'}}}");
  EXPECT_HAS(r.out, "VERSIONS => '5'");  // kept by the alter
  // A family dropped and added again is empty: its cells went with it, as in HBase (r2 held
  // only cf2, written to a block file when the drop closed the region).
  r = E("alter 't1', 'cf2'; get 't1', 'r2'; alter 't1', 'delete' => 'cf2'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "0 row(s)");
  r = E("alter 't1', {NAME => 'cf', KEEP_DELETED_CELLS => true}");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "KEEP_DELETED_CELLS => 'TRUE' is not supported by Basalt");
  r = E("alter 't1', 'delete' => 'nosuch'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "has no family 'nosuch'");
  r = E("put 't1', 'r3', 'cf3:c', 'in cf3'; get 't1', 'r3'");
  EXPECT_HAS(r.out, "value=in cf3");
  r = E("flush 't1'; major_compact 't1'; status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = E("count 't1'");
  EXPECT_HAS(r.out, "2 row(s)");  // c, and r3 (r2 held only cf2)
  r = E("exists 't1'");
  EXPECT_HAS(r.out, "does exist");

  r = E("truncate 't1'; count 't1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "0 row(s)");
  r = E("disable 't1'; drop 't1'; list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(absl::StrContains(r.out, "t1")) << r.out;
}

TEST_F(Shell, PreSplitTablesListRegionsAndScanMeta) {
  ShellRun r = E("create 's1', 'cf', SPLITS => ['g', 'n', 't']; "
                 "create 's2', 'cf', {NUMREGIONS => 16, SPLITALGO => 'HexStringSplit'}; "
                 "create 's3', 'cf', {NUMREGIONS => 4, SPLITALGO => 'UniformSplit'}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = E("put 's1', 'a', 'cf:q', '1'; put 's1', 'h', 'cf:q', '2'; put 's1', 'z', 'cf:q', '3'; scan 's1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "3 row(s)");
  r = E("list_regions 's1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "REGION_NAME");
  EXPECT_HAS(r.out, " s1,g,");
  EXPECT_HAS(r.out, " s1,t,");
  EXPECT_HAS(r.out, "4 rows");
  r = E("describe 's2'");
  EXPECT_HAS(r.out, "s2, {REGIONS => 16}");
  r = E("list_regions 's3'", "--format=json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "\"end_key\":\"@\\u0000\\u0000");  // UniformSplit's first key, 0x4000..00
  r = E("scan 'basalt:meta', {COLUMNS => ['info:state']}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "24 row(s)");
  EXPECT_HAS(r.out, " s1,n,");
  EXPECT_HAS(r.out, "column=info:state");
  r = E("truncate_preserve 's1'; count 's1'; list_regions 's1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "0 row(s)");
  EXPECT_HAS(r.out, " s1,t,");
  EXPECT_HAS(r.out, "4 rows");
  r = E("put 'basalt:meta', 'x', 'info:state', 'OPEN'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "written by the server only");
}

// A snapshot outlives a truncate and a drop of its table, and its bytes are then its own.
TEST_F(Shell, SnapshotsAreListedOutliveTheirTableAndAreDeleted) {
  ShellRun r = E("create 't1', 'cf', SPLITS => ['m']; put 't1', 'a', 'cf:q', 'v1'; put 't1', 'x', 'cf:q', 'v2'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = E("snapshot 't1', 'before'; snapshot 't1', 'brief', {TTL => 3600}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = E("list_snapshots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"( before +t1 \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000\) FOREVER, )"
                                                  R"(REGIONS => 2, FILES => 2, SIZE => \d+(\.\d)? [KMG]?i?B, ONLY => 0 B)")))
      << r.out;
  EXPECT_HAS(r.out, ") 3600, REGIONS => 2");
  EXPECT_HAS(r.out, "2 row(s)");
  // The table goes, and 'brief' with its names; 'before' stays, and now alone names its files.
  r = E("disable 't1'; drop 't1'; delete_snapshot 'brief'; list_table_snapshots 't1', 'bef.*'", "--format=json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch only;
  ASSERT_TRUE(std::regex_search(r.out, only, std::regex(R"("name":"before".*"only_bytes":(\d+))"))) << r.out;
  EXPECT_GT(std::stoull(only[1]), 0u) << r.out;
  r = E("delete_snapshot 'before'; list_snapshots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "0 row(s)");
  EXPECT_FALSE(std::ifstream(dir_.path() + "/data/snapshots/before/SNAPSHOT").good());
  r = E("snapshot 'gone', 's'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "NOT_FOUND");
}

// Namespaces end to end through the shell and Basalt's own client: made with settings, a table
// in one written and read by its full name, listed, altered, described; dropped only once empty;
// the names HBase refuses refused; and all of it there again after a restart.
TEST_F(Shell, NamespacesHoldTablesAndAreDroppedOnlyWhenEmpty) {
  ShellRun r = E("create_namespace 'app', {'hbase.namespace.quota.maxtables' => '5'}; create 'app:events', 'e'; "
                 "put 'app:events', 'r1', 'e:q', 'v1'; create 't1', 'cf'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = E("list_namespace; list_namespace_tables 'app'; describe_namespace 'app'; get 'app:events', 'r1'; list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "NAMESPACE\napp\ndefault\n2 row(s)");
  EXPECT_HAS(r.out, "TABLE\nevents\n1 row(s)");
  EXPECT_HAS(r.out, "{NAME => 'app', 'hbase.namespace.quota.maxtables' => '5'}");
  EXPECT_HAS(r.out, "value=v1");
  EXPECT_HAS(r.out, "app:events");
  r = E("alter_namespace 'app', {METHOD => 'set', 'owner' => 'ops'}; alter_namespace 'app', {METHOD => 'unset', "
        "NAME => 'hbase.namespace.quota.maxtables'}; describe_namespace 'app'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "{NAME => 'app', 'owner' => 'ops'}");
  // What is refused, each saying why.
  r = E("drop_namespace 'app'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "namespace 'app' holds 1 table(s) (app:events): only an empty namespace can be dropped");
  r = E("create 'nope:t', 'cf'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "namespace 'nope' does not exist");
  r = E("create_namespace 'a-b'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "illegal character");
  r = E("drop_namespace 'default'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "reserved");
  r = E("create 'default:t2', 'cf'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "named without it ('t2')");
  r = E("create_namespace 'app'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "already exists");

  // Basalt's own client sees the same, and all of it outlives a kill -9 and a restart.
  server_->Kill();
  ASSERT_TRUE(server_->Start().ok());
  Connect();
  absl::StatusOr<std::vector<NamespaceInfo>> all = conn_->GetAdmin()->ListNamespaces();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "app");
  ASSERT_EQ((*all)[0].configuration.size(), 1u);
  EXPECT_EQ((*all)[0].configuration[0], std::make_pair(std::string("owner"), std::string("ops")));
  absl::StatusOr<NamespaceInfo> app = conn_->GetAdmin()->DescribeNamespace("app");
  ASSERT_TRUE(app.ok()) << app.status();
  EXPECT_EQ(app->tables, std::vector<std::string>{"app:events"});
  absl::StatusOr<Result> row = conn_->GetTable("app:events")->Get(Get("r1"));
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->Value("e", "q"), "v1");
  r = E("disable 'app:events'; drop 'app:events'; drop_namespace 'app'; list_namespace");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "NAMESPACE\ndefault\n1 row(s)");
  EXPECT_EQ(conn_->GetAdmin()->DescribeNamespace("app").status().code(), absl::StatusCode::kNotFound);
}

// A bad batch job undone: restore_snapshot puts the rows back; clone_snapshot makes a copy to
// compare against, which writes never reach the snapshot from.
TEST_F(Shell, RestoreUndoesABadBatchJobAndACloneIsACopy) {
  ShellRun r = E("create 't1', 'cf'; put 't1', 'a', 'cf:q', 'good'; put 't1', 'b', 'cf:q', 'good'; "
                 "snapshot 't1', 'before_job'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = E("put 't1', 'a', 'cf:q', 'bad'; deleteall 't1', 'b'; put 't1', 'c', 'cf:q', 'bad'; "
        "clone_snapshot 'before_job', 'copy'; put 'copy', 'z', 'cf:q', 'copy only'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = E("restore_snapshot 'before_job'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "disable it before restoring");
  r = E("disable 't1'; restore_snapshot 'before_job'; enable 't1'; scan 't1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, " a" + std::string(30, ' ') + "column=cf:q");
  EXPECT_HAS(r.out, " b" + std::string(30, ' ') + "column=cf:q");
  EXPECT_FALSE(absl::StrContains(r.out, "value=bad")) << r.out;
  EXPECT_HAS(r.out, "2 row(s)");
  r = E("scan 'copy'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "value=copy only");
  EXPECT_HAS(r.out, "3 row(s)");
}

TEST_F(Shell, JsonOutputScriptFileAndStdin) {
  ASSERT_EQ(E("create 'j', 'cf'; put 'j', 'r1', 'cf:q', 'v'").exit_code, 0);
  ShellRun r = E("get 'j', 'r1'", "--format=json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "\"row\":\"r1\"");
  EXPECT_HAS(r.out, "\"qualifier\":\"q\"");
  EXPECT_HAS(r.out, "\"value\":\"v\"");

  const std::string script = dir_.path() + "/script.bs";
  std::ofstream(script) << "put 'j', 'r2', 'cf:q', 'from file'\n# a comment\nscan 'j'\n";
  r = Run(script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "value=from file");
  EXPECT_HAS(r.out, "2 row(s)");

  r = Run("", "count 'j'\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "2 row(s)");
}

TEST_F(Shell, QueuesAndTransactionalTables) {
  ShellRun r = E("create_queue 'events', {PARTITIONS => 4, SALT_BUCKETS => 2}; "
                 "queue_configure 'events', {NAME => 'counter', SIZE => 2}, "
                 "{NAME => 'audit', SIZE => 1, PARTITIONING => 'HASH'}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "Created queue events (4 partitions, 2 salt buckets)");
  EXPECT_HAS(r.out, "group counter: 2 consumers, ROUND_ROBIN");
  EXPECT_HAS(r.out, "group audit: 1 consumer, HASH");
  r = E("enqueue 'events', 'click:home', 'click:cart', 'buy:42'; enqueue 'events', 'view:7', {KEY => 'user7'}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "Enqueued 3 events");
  EXPECT_HAS(r.out, "Enqueued 1 event\n");
  // Each event reaches one consumer of every group, once.
  std::string counter;
  for (int consumer = 0; consumer < 2; ++consumer) {
    r = E(absl::StrCat("dequeue 'events', 'counter', ", consumer, ", 100"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    counter += r.out;
  }
  for (const char* e : {"click:home", "click:cart", "buy:42", "view:7"}) EXPECT_HAS(counter, absl::StrCat("value=", e));
  r = E("dequeue 'events', 'counter', 0, 100; dequeue 'events', 'counter', 1, 100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(absl::StrContains(r.out, "value=")) << r.out;
  r = E("dequeue 'events', 'audit', 0, 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "1 row(s)");
  r = E("queue_status 'events', {INTERVAL => 100}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "GROUP");
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\naudit +0 +3 +[0-9]+ +1 "))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\ncounter +0 +0 +0 "))) << r.out;
  // A surplus consumer and an unknown group are refused, clearly.
  r = E("dequeue 'events', 'counter', 5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "has 2 consumers: none is 5");
  r = E("dequeue 'events', 'nobody', 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "no consumer group nobody");
  // A transactional table takes no plain put; describe says what it is.
  r = E("create 'tx', 'cf', {TRANSACTIONAL => true}; describe 'tx'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "{TRANSACTIONAL => 'true'}");
  r = E("put 'tx', 'r', 'cf:q', 'v'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "is transactional: write it in a transaction");
}

TEST_F(Shell, ErrorsSayWhatWasWrongAndExitNonZero) {
  ShellRun r = E("get 'nosuch', 'r'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "nosuch");
  r = E("create 'e', 'cf'; put 'e', 'r', 'nofam:q', 'v'; put 'e', 'r', 'cf:q', 'never'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "nofam");
  // Script mode stops at the first error: the last put never ran.
  r = E("get 'e', 'r'");
  EXPECT_HAS(r.out, "0 row(s)");
  r = E("put 'e', 'r'");  // too few arguments
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(r.err.empty());
  r = E("put 'e', 'r', 'cf:q', 'unterminated");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(r.err.empty());
  r = E("frobnicate 'e'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "help");
  r = E("create 'e', 'cf'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "exists");
}

TEST_F(Shell, StatusShowsTheVerbsTransport) {
  ShellRun r = E("status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "\nverbs: ");
  r = E("status", "--format=json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "\"verbs\":\"");
  if (verbs::RdmaDevices().ok()) return;  // a host with a device: the server may serve verbs
  // rdma=auto (the default) on a host without an RDMA device.
  r = E("status");
  EXPECT_HAS(r.out, "\nverbs: off: no RDMA device (");
  EXPECT_FALSE(absl::StrContains(r.out, "verbs endpoints")) << r.out;  // no counters while off
  r = E("status", "--format=json");
  EXPECT_HAS(r.out, "\"verbs\":\"off: no RDMA device (");
  EXPECT_HAS(r.out, "\"verbs_enabled\":false,\"verbs_endpoints\":0,\"verbs_requests\":0,");
  r = E("verbs_disable");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "ERROR: FAILED_PRECONDITION: SetVerbs off: this server serves no verbs transport (off: no RDMA "
                    "device (");
  EXPECT_EQ(r.out, "");
}

TEST_F(Shell, VerbsSwitchFailsOnAServerWithoutVerbs) {
  StartServer({"--rdma=off"});  // replaces the fixture's server: no verbs on any host
  ShellRun r = E("status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "\nverbs: off: rdma=off\n");
  r = E("verbs_disable; list");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ERROR: FAILED_PRECONDITION: SetVerbs off: this server serves no verbs transport (off: rdma=off)\n");
  EXPECT_EQ(r.out, "");  // the script stopped at the error
  r = E("verbs_enable", "--format=json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ERROR: FAILED_PRECONDITION: SetVerbs on: this server serves no verbs transport (off: rdma=off)\n");
  r = E("help 'verbs_enable'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "Usage: verbs_enable\n");
}

}  // namespace
}  // namespace basalt::testing
