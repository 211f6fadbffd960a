// The shell's commands and session against an in-memory fake server: what each command sends,
// what it prints (human and JSON), and the error policy of scripts and interactive use.
#include "src/tools/shell/commands.h"

#include <gtest/gtest.h>

#include <sstream>

#include "src/tools/shell/fake_connection.h"
#include "src/tools/shell/session.h"

namespace basalt::shell {
namespace {

class ShellTest : public ::testing::Test {
 protected:
  // Runs `script` in a fresh session; returns the exit code.
  int Run(std::string_view script, OutputFormat format = OutputFormat::kHuman) {
    out_.str("");
    err_.str("");
    SessionOptions o;
    o.format = format;
    o.show_timing = false;
    o.confirm = confirm_;
    Session s(conn_.get(), o, &out_, &err_);
    s.RunScript(script);
    return s.exit_code();
  }
  std::string out() const { return out_.str(); }
  std::string err() const { return err_.str(); }

  FakeServer server_;
  std::unique_ptr<Connection> conn_ = NewFakeConnection(&server_, "127.0.0.1:16020");
  std::ostringstream out_, err_;
  std::function<bool(const std::string&)> confirm_;  // the user's answers; unset: nobody to ask
};

TEST_F(ShellTest, CreatePutGetScanHuman) {
  ASSERT_EQ(Run("create 't1', 'cf'; put 't1', 'r1', 'cf:q', 'v'; put 't1', 'r2', 'cf:a', 'w', 5"), 0) << err();
  EXPECT_EQ(out(), "Created table t1\n");
  ASSERT_EQ(Run("get 't1', 'r1'"), 0) << err();
  EXPECT_EQ(out(),
            "COLUMN                          CELL\n"
            " cf:q                           timestamp=1700000000000, value=v\n"
            "1 row(s)\n");
  ASSERT_EQ(Run("scan 't1'"), 0) << err();
  EXPECT_EQ(out(),
            "ROW                             COLUMN+CELL\n"
            " r1                             column=cf:q, timestamp=1700000000000, value=v\n"
            " r2                             column=cf:a, timestamp=5, value=w\n"
            "2 row(s)\n");
  ASSERT_EQ(Run("get 't1', 'nope'"), 0) << err();
  EXPECT_EQ(out(), "COLUMN                          CELL\n0 row(s)\n");
}

TEST_F(ShellTest, TimingLine) {
  SessionOptions o;
  Session s(conn_.get(), o, &out_, &err_);
  s.RunScript("list");
  EXPECT_TRUE(out().starts_with("TABLE\n0 row(s)\nTook 0.")) << out();
  EXPECT_TRUE(out().ends_with(" seconds\n")) << out();
}

TEST_F(ShellTest, JsonOutput) {
  ASSERT_EQ(Run("create 't1', 'cf'; put 't1', 'r1', 'cf:q', \"v\\xff\"; get 't1', 'r1'; scan 't1', {LIMIT => 1};"
                "get 't1', 'zz'; incr 't1', 'r1', 'cf:n', 2; list; exists 't1'; count 't1'",
                OutputFormat::kJson),
            0)
      << err();
  EXPECT_EQ(out(),
            "{\"command\":\"create\",\"table\":\"t1\",\"ok\":true}\n"
            "{\"command\":\"put\",\"table\":\"t1\",\"ok\":true}\n"
            "{\"command\":\"get\",\"table\":\"t1\",\"rows\":[{\"row\":\"r1\",\"cells\":[{\"family\":\"cf\","
            "\"qualifier\":\"q\",\"timestamp\":1700000000000,\"value\":\"v\\u00ff\"}]}]}\n"
            "{\"command\":\"scan\",\"table\":\"t1\",\"rows\":[{\"row\":\"r1\",\"cells\":[{\"family\":\"cf\","
            "\"qualifier\":\"q\",\"timestamp\":1700000000000,\"value\":\"v\\u00ff\"}]}]}\n"
            "{\"command\":\"get\",\"table\":\"t1\",\"rows\":[]}\n"
            "{\"command\":\"incr\",\"table\":\"t1\",\"row\":\"r1\",\"column\":\"cf:n\",\"value\":2}\n"
            "{\"command\":\"list\",\"tables\":[\"t1\"]}\n"
            "{\"command\":\"exists\",\"table\":\"t1\",\"exists\":true}\n"
            "{\"command\":\"count\",\"table\":\"t1\",\"count\":1}\n");
}

TEST_F(ShellTest, JsonErrorsGoToStderrAsText) {
  EXPECT_EQ(Run("get 't9', 'r1'", OutputFormat::kJson), 1);
  EXPECT_EQ(out(), "");
  EXPECT_EQ(err(), "ERROR: Unknown table t9! (table t9 does not exist)\n");
}

TEST_F(ShellTest, CreateWithFamilySettings) {
  ASSERT_EQ(Run("create 't1', {NAME => 'cf', VERSIONS => 3, TTL => 60, MIN_VERSIONS => 0, "
                "DATA_BLOCK_ENCODING => 'FAST_DIFF', COMPRESSION => 'snappy', BLOOMFILTER => 'ROWCOL', "
                "BLOCKSIZE => 65536, BLOCKCACHE => false, IN_MEMORY => 'false'}, 'cf2'"),
            0)
      << err();
  const TableInfo& info = server_.tables["t1"].info;
  ASSERT_EQ(info.families.size(), 2u);
  const FamilySettings& f = info.families[0];
  EXPECT_EQ(f.name, "cf");
  EXPECT_EQ(f.max_versions, 3);
  EXPECT_EQ(f.ttl_seconds, 60);
  EXPECT_EQ(f.encoding, "FAST_DIFF");
  EXPECT_EQ(f.compression, "SNAPPY");
  EXPECT_EQ(f.bloom, "ROWCOL");
  EXPECT_EQ(f.block_size, 65536u);
  EXPECT_FALSE(f.block_cache);
  EXPECT_EQ(info.families[1].name, "cf2");
  EXPECT_EQ(info.families[1].max_versions, 1);

  ASSERT_EQ(Run("create 't2', 'a', 'b', 'c'"), 0) << err();
  EXPECT_EQ(server_.tables["t2"].info.families.size(), 3u);
  ASSERT_EQ(Run("create 't3', NAME => 'cf', VERSIONS => '2', TTL => 'FOREVER'"), 0) << err();
  EXPECT_EQ(server_.tables["t3"].info.families[0].max_versions, 2);
  EXPECT_EQ(server_.tables["t3"].info.families[0].ttl_seconds, 0);
}

TEST_F(ShellTest, SettingsBasaltHasNoneForAreKeptAndDescribed) {
  ASSERT_EQ(Run("create 't1', {NAME => 'cf', IN_MEMORY => true, REPLICATION_SCOPE => 1, "
                "METADATA => {'app' => 'x', 'n' => 7}, CONFIGURATION => {'hbase.hstore.blockingStoreFiles' => '20'}}, "
                "{METADATA => {'OWNER' => 'ops'}}"),
            0)
      << err();
  const TableInfo& info = server_.tables["t1"].info;
  using Kept = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(info.families[0].metadata, (Kept{{"IN_MEMORY", "true"}, {"REPLICATION_SCOPE", "1"}, {"app", "x"}, {"n", "7"}}));
  EXPECT_EQ(info.families[0].configuration, (Kept{{"hbase.hstore.blockingStoreFiles", "20"}}));
  EXPECT_EQ(info.metadata, (Kept{{"OWNER", "ops"}}));
  ASSERT_EQ(Run("describe 't1'"), 0);
  EXPECT_NE(out().find("t1, {REGIONS => 1}, {TABLE_ATTRIBUTES => {METADATA => {'OWNER' => 'ops'}}}\n"), std::string::npos)
      << out();
  EXPECT_NE(out().find("CACHE_ENCODED => 'false', METADATA => {'IN_MEMORY' => 'true', 'REPLICATION_SCOPE' => '1', "
                       "'app' => 'x', 'n' => '7'}, CONFIGURATION => {'hbase.hstore.blockingStoreFiles' => '20'}}"),
            std::string::npos)
      << out();
  ASSERT_EQ(Run("describe 't1'", OutputFormat::kJson), 0);
  EXPECT_NE(out().find("\"METADATA\":{\"OWNER\":\"ops\"}"), std::string::npos) << out();
  EXPECT_NE(out().find("\"CONFIGURATION\":{\"hbase.hstore.blockingStoreFiles\":\"20\"}"), std::string::npos) << out();
  // alter sets a key again in place, adds new ones, keeps the rest.
  ASSERT_EQ(Run("alter 't1', {NAME => 'cf', IN_MEMORY => false, KEEP_DELETED_CELLS => 'false'}, "
                "METADATA => {'OWNER' => 'team2', 'SLA' => 'gold'}"),
            0)
      << err();
  EXPECT_EQ(info.families[0].metadata, (Kept{{"IN_MEMORY", "false"}, {"REPLICATION_SCOPE", "1"}, {"app", "x"},
                                             {"n", "7"}, {"KEEP_DELETED_CELLS", "FALSE"}}));
  EXPECT_EQ(info.metadata, (Kept{{"OWNER", "team2"}, {"SLA", "gold"}}));
  EXPECT_EQ(Run("create 't2', {NAME => 'cf', METADATA => 'x'}"), 1);
  EXPECT_TRUE(err().starts_with("ERROR: create: expected a hash: METADATA => {'key' => 'value'}")) << err();
}

TEST_F(ShellTest, CreatePreSplit) {
  ASSERT_EQ(Run("create 't1', 'cf', SPLITS => ['n', 'g', \"\\x00t\"]"), 0) << err();
  EXPECT_EQ(server_.tables["t1"].split_keys, (std::vector<std::string>{std::string("\0t", 2), "g", "n"}));
  ASSERT_EQ(Run("create 't2', 'cf', {NUMREGIONS => 4, SPLITALGO => 'HexStringSplit'}"), 0) << err();
  EXPECT_EQ(server_.tables["t2"].split_keys, (std::vector<std::string>{"40000000", "80000000", "c0000000"}));
  ASSERT_EQ(Run("create 't3', {NAME => 'cf'}, {NUMREGIONS => 2, SPLITALGO => 'UniformSplit'}"), 0) << err();
  EXPECT_EQ(server_.tables["t3"].split_keys, (std::vector<std::string>{std::string("\x80\0\0\0\0\0\0\0", 8)}));
  ASSERT_EQ(Run("describe 't2'"), 0) << err();
  EXPECT_NE(out().find("t2, {REGIONS => 4}\n"), std::string::npos) << out();
  ASSERT_EQ(Run("list_regions 't1'"), 0) << err();
  EXPECT_EQ(out(),
            "     SERVER_NAME |                REGION_NAME | START_KEY | END_KEY | SIZE | REQ | STOREFILES | STATE |\n"
            " --------------- | -------------------------- | --------- | ------- | ---- | --- | ---------- | ----- |\n"
            " 127.0.0.1:16020 |      t1,,1700000000000.e0. |           |   \\x00t |    0 |   0 |          0 |  OPEN |\n"
            " 127.0.0.1:16020 | t1,\\x00t,1700000000000.e1. |     \\x00t |       g | 1000 |  30 |          1 |  OPEN |\n"
            " 127.0.0.1:16020 |     t1,g,1700000000000.e2. |         g |       n | 2000 |  60 |          2 |  OPEN |\n"
            " 127.0.0.1:16020 |     t1,n,1700000000000.e3. |         n |         | 3000 |  90 |          3 |  OPEN |\n"
            "4 rows\n");
  ASSERT_EQ(Run("list_regions 't2'", OutputFormat::kJson), 0) << err();
  EXPECT_NE(out().find("\"regions\":[{\"name\":\"t2,,1700000000000\",\"encoded_name\":\"e0\",\"start_key\":\"\","
                       "\"end_key\":\"40000000\""),
            std::string::npos)
      << out();

  // A table's own split size, and manual splits and merges.
  ASSERT_EQ(Run("create 't5', 'cf', MAX_FILESIZE => 2097152"), 0) << err();
  ASSERT_EQ(Run("describe 't5'"), 0) << err();
  EXPECT_NE(out().find("{MAX_FILESIZE => '2097152'}"), std::string::npos) << out();
  // A transactional table (docs/DESIGN.md §7), alone or with other table options.
  ASSERT_EQ(Run("create 'tx1', 'cf', {TRANSACTIONAL => true}"), 0) << err();
  EXPECT_TRUE(server_.tables["tx1"].info.transactional);
  ASSERT_EQ(Run("describe 'tx1'"), 0) << err();
  EXPECT_NE(out().find("{TRANSACTIONAL => 'true'}"), std::string::npos) << out();
  ASSERT_EQ(Run("create 'tx2', 'cf', {TRANSACTIONAL => true, SPLITS => ['m']}"), 0) << err();
  EXPECT_TRUE(server_.tables["tx2"].info.transactional);
  EXPECT_EQ(server_.tables["tx2"].split_keys, (std::vector<std::string>{"m"}));
  EXPECT_EQ(Run("create 'tx3', 'cf', {TRANSACTIONAL => 'maybe'}"), 1);
  EXPECT_FALSE(server_.tables.count("tx3"));
  EXPECT_EQ(Run("create 't6', 'cf', MAX_FILESIZE => 'big'"), 1);
  EXPECT_NE(err().find("a size in bytes"), std::string::npos) << err();
  ASSERT_EQ(Run("split 't1', 'h'"), 0) << err();
  EXPECT_EQ(server_.tables["t1"].split_keys, (std::vector<std::string>{std::string("\0t", 2), "g", "h", "n"}));
  EXPECT_EQ(Run("split 't1', 'h'"), 1);  // already a region's start
  ASSERT_EQ(Run("merge_region 'e1', 'e2'"), 1);  // the fake has no regions to merge: the error is shown
  EXPECT_EQ(server_.admin_calls.back(), "merge_region e1 e2");
  // move and balancer reach the server; a standalone one refuses them with why.
  EXPECT_EQ(Run("move 'e1', '10.0.0.7:16020'"), 1);
  EXPECT_EQ(server_.admin_calls.back(), "move e1 10.0.0.7:16020");
  EXPECT_NE(err().find("FAILED_PRECONDITION: move is a cluster master's"), std::string::npos) << err();
  EXPECT_EQ(Run("move 'e1'"), 1);
  EXPECT_EQ(server_.admin_calls.back(), "move e1");
  EXPECT_EQ(Run("balancer"), 1);
  EXPECT_EQ(server_.admin_calls.back(), "balancer");
  EXPECT_EQ(Run("balancer 't1'"), 1);  // takes no argument
  EXPECT_EQ(server_.admin_calls.back(), "balancer");
  // unassign and assign of a region likewise; assign of a table is the table's.
  EXPECT_EQ(Run("unassign 'e1', true"), 1);
  EXPECT_EQ(server_.admin_calls.back(), "unassign e1");
  EXPECT_NE(err().find("FAILED_PRECONDITION: unassign is a cluster master's"), std::string::npos) << err();
  EXPECT_EQ(Run("unassign 'e1', 'maybe'"), 1);
  EXPECT_EQ(server_.admin_calls.back(), "unassign e1");  // not sent
  EXPECT_EQ(Run("assign 'e1'"), 1);
  EXPECT_EQ(server_.admin_calls.back(), "assign e1");
  EXPECT_NE(err().find("FAILED_PRECONDITION: assign is a cluster master's"), std::string::npos) << err();

  EXPECT_EQ(Run("create 't4', 'cf', SPLITS => 'g'"), 1);
  EXPECT_NE(err().find("an array of split keys"), std::string::npos) << err();
  EXPECT_EQ(Run("create 't4', 'cf', {NUMREGIONS => 4}"), 1);
  EXPECT_NE(err().find("NUMREGIONS and SPLITALGO go together"), std::string::npos) << err();
  EXPECT_EQ(Run("create 't4', 'cf', {NUMREGIONS => 4, SPLITALGO => 'Nope'}"), 1);
  EXPECT_NE(err().find("unknown SPLITALGO 'Nope'"), std::string::npos) << err();
  EXPECT_EQ(Run("create 't4', 'cf', {NUMREGIONS => 1, SPLITALGO => 'UniformSplit'}"), 1);
  EXPECT_EQ(Run("create 't4', 'cf', SPLITS => ['a'], NUMREGIONS => 2, SPLITALGO => 'UniformSplit'"), 1);
  EXPECT_NE(err().find("not both"), std::string::npos) << err();
  EXPECT_FALSE(server_.tables.count("t4"));
}

TEST_F(ShellTest, CreateErrors) {
  EXPECT_EQ(Run("create 't1'"), 1);
  EXPECT_EQ(err(), "ERROR: create: a table needs at least one column family: create 't1', 'cf'\n");
  EXPECT_EQ(Run("create 't1', {VERSIONS => 3}"), 1);
  EXPECT_EQ(err(), "ERROR: create: table option VERSIONS is not supported (SPLITS, NUMREGIONS, SPLITALGO, MAX_FILESIZE, "
                   "TRANSACTIONAL, METADATA and CONFIGURATION are); a family is 'cf' or {NAME => 'cf', ...}\n");
  EXPECT_EQ(Run("create 't1', {NAME => 'cf', COMPRESSION => 'LZO'}"), 1);
  EXPECT_EQ(err(), "ERROR: create: COMPRESSION must be one of NONE, SNAPPY, ZLIB, GZ, not 'LZO'\n");
  EXPECT_EQ(Run("create 't1', {NAME => 'cf', VERSIONS => 0}"), 1);
  EXPECT_EQ(err(), "ERROR: create: VERSIONS must be between 1 and 2147483647, not 0\n");
  EXPECT_EQ(Run("create 't1', {NAME => 'cf', FOO => 1}"), 1);
  EXPECT_TRUE(err().starts_with("ERROR: create: unsupported option FOO (supported: NAME, VERSIONS")) << err();
  EXPECT_EQ(Run("create 't1', 'cf', 'cf'"), 1);
  EXPECT_EQ(err(), "ERROR: create: family 'cf' is given twice\n");
  EXPECT_EQ(Run("create 't1', cf"), 1);
  EXPECT_EQ(err(), "ERROR: create: expected a column family ('cf' or {NAME => 'cf', ...}), found the name cf at "
                   "column 14 (quote it: 'cf')\n");
  EXPECT_TRUE(server_.tables.empty());
  ASSERT_EQ(Run("create 't1', 'cf'"), 0);
  EXPECT_EQ(Run("create 't1', 'cf'"), 1);
  EXPECT_EQ(err(), "ERROR: Table already exists: t1! (table t1 exists)\n");
}

TEST_F(ShellTest, GetOptionsBecomeTheRequest) {
  ASSERT_EQ(Run("create 't1', 'cf', 'cf2'"), 0);
  ASSERT_EQ(Run("get 't1', 'r1', 'cf:a', 'cf2'"), 0) << err();
  ASSERT_TRUE(server_.last_get.has_value());
  ASSERT_EQ(server_.last_get->columns.size(), 2u);
  EXPECT_EQ(server_.last_get->columns[0].family, "cf");
  EXPECT_EQ(server_.last_get->columns[0].qualifiers, std::vector<std::string>{"a"});
  EXPECT_EQ(server_.last_get->columns[1].family, "cf2");
  EXPECT_TRUE(server_.last_get->columns[1].qualifiers.empty());

  ASSERT_EQ(Run("get 't1', 'r1', {COLUMN => ['cf:a', 'cf:b'], VERSIONS => 3, TIMERANGE => [10, 20]}"), 0) << err();
  EXPECT_EQ(server_.last_get->columns[0].qualifiers, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(server_.last_get->max_versions, 3);
  EXPECT_EQ(server_.last_get->min_ts, 10);
  EXPECT_EQ(server_.last_get->max_ts, 20);

  ASSERT_EQ(Run("get 't1', 'r1', {TIMESTAMP => 7}"), 0) << err();
  EXPECT_EQ(server_.last_get->min_ts, 7);
  EXPECT_EQ(server_.last_get->max_ts, 8);
  EXPECT_TRUE(server_.last_get->columns.empty());

  ASSERT_EQ(Run("get 't1', 'r1', ['cf:a', 'cf'], COLUMNS => 'cf:z'"), 0) << err();
  ASSERT_EQ(server_.last_get->columns.size(), 1u);
  EXPECT_TRUE(server_.last_get->columns[0].qualifiers.empty());  // the family absorbs its columns

  EXPECT_EQ(Run("get 't1', 'r1', {TIMERANGE => [5]}"), 1);
  EXPECT_EQ(err(), "ERROR: get: expected TIMERANGE => [min, max], found an array at column 31\n");
  EXPECT_EQ(Run("get 't1', 'r1', {REVERSED => true}"), 1);
  EXPECT_EQ(err(), "ERROR: get: unsupported option REVERSED (supported: COLUMN, COLUMNS, VERSIONS, TIMERANGE, "
                   "TIMESTAMP, CACHE_BLOCKS, FILTER)\n");
  EXPECT_EQ(Run("get 't1', 'r1', {TIMESTAMP => 1, TIMERANGE => [0, 2]}"), 1);
  EXPECT_EQ(err(), "ERROR: get: give TIMESTAMP or TIMERANGE, not both\n");
}

TEST_F(ShellTest, VersionsAndTimeRanges) {
  ASSERT_EQ(Run("create 't1', {NAME => 'cf', VERSIONS => 5}; put 't1', 'r', 'cf:q', 'a', 10; "
                "put 't1', 'r', 'cf:q', 'b', 20; put 't1', 'r', 'cf:q', 'c', 30"),
            0)
      << err();
  ASSERT_EQ(Run("get 't1', 'r', {COLUMN => 'cf:q', VERSIONS => 2}"), 0) << err();
  EXPECT_EQ(out(),
            "COLUMN                          CELL\n"
            " cf:q                           timestamp=30, value=c\n"
            " cf:q                           timestamp=20, value=b\n"
            "1 row(s)\n");
  ASSERT_EQ(Run("scan 't1', {VERSIONS => 3, TIMERANGE => [0, 25]}"), 0) << err();
  EXPECT_EQ(out(),
            "ROW                             COLUMN+CELL\n"
            " r                              column=cf:q, timestamp=20, value=b\n"
            " r                              column=cf:q, timestamp=10, value=a\n"
            "1 row(s)\n");
}

TEST_F(ShellTest, ScanOptionsBecomeTheRequest) {
  ASSERT_EQ(Run("create 't1', 'cf'"), 0);
  ASSERT_EQ(Run("scan 't1', {STARTROW => 'a', STOPROW => 'z', LIMIT => 10, COLUMNS => ['cf:q', 'cf2'], "
                "VERSIONS => 2, TIMERANGE => [1, 9], CACHE => 100, CACHE_BLOCKS => false}"),
            0)
      << err();
  ASSERT_TRUE(server_.last_scan.has_value());
  const Scan& s = *server_.last_scan;
  EXPECT_EQ(s.start_row, "a");
  EXPECT_EQ(s.stop_row, "z");
  EXPECT_EQ(s.limit, 10u);
  ASSERT_EQ(s.columns.size(), 2u);
  EXPECT_EQ(s.columns[1].family, "cf2");
  EXPECT_EQ(s.max_versions, 2);
  EXPECT_EQ(s.min_ts, 1);
  EXPECT_EQ(s.max_ts, 9);
  EXPECT_EQ(s.caching, 100u);
  EXPECT_FALSE(s.cache_blocks);

  ASSERT_EQ(Run("scan 't1', {ROWPREFIXFILTER => \"ab\\xff\"}"), 0) << err();
  EXPECT_EQ(server_.last_scan->start_row, "ab\xff");
  EXPECT_EQ(server_.last_scan->stop_row, "ac");

  EXPECT_EQ(Run("scan 't1', 'cf'"), 1);
  EXPECT_EQ(err(), "ERROR: scan: expected a hash of scan options {STARTROW => ...}, found the string 'cf' at "
                   "column 12\n");
  EXPECT_EQ(Run("scan 't1', {INTERVAL => 5}"), 1);
  EXPECT_EQ(err(), "ERROR: scan: INTERVAL is an option of count\n");
}

TEST_F(ShellTest, FilterAndReversedBecomeTheRequest) {
  ASSERT_EQ(Run("create 't1', 'cf'"), 0);
  ASSERT_EQ(Run("scan 't1', {FILTER => \"PrefixFilter('r') AND ValueFilter(=, 'binary:it''s')\", REVERSED => true}"),
            0)
      << err();
  ASSERT_TRUE(server_.last_scan.has_value());
  EXPECT_TRUE(server_.last_scan->reversed);
  EXPECT_EQ(server_.last_scan->filter,
            Filter::List(Filter::kMustPassAll,
                         {Filter::Prefix("r"), Filter::Value(FilterOp::kEqual, Comparator::Binary("it's"))}));

  // The row prefix is applied after every option, so its range follows REVERSED in any order,
  // and it replaces STARTROW and STOPROW (as HBase's).
  ASSERT_EQ(Run("scan 't1', {ROWPREFIXFILTER => 'b', FILTER => \"PageFilter(2)\", STARTROW => 'x', REVERSED => true}"),
            0)
      << err();
  EXPECT_EQ(server_.last_scan->start_row, "c");
  EXPECT_EQ(server_.last_scan->stop_row, "a");
  EXPECT_EQ(server_.last_scan->filter, Filter::List(Filter::kMustPassAll, {Filter::Prefix("b"), Filter::Page(2)}));
  ASSERT_EQ(Run("scan 't1', {STARTROW => 'x', ROWPREFIXFILTER => 'b', REVERSED => false}"), 0) << err();
  EXPECT_EQ(server_.last_scan->start_row, "b");
  EXPECT_EQ(server_.last_scan->stop_row, "c");
  EXPECT_FALSE(server_.last_scan->reversed);
  EXPECT_FALSE(server_.last_scan->filter.has_value());

  ASSERT_EQ(Run("count 't1', {FILTER => \"FirstKeyOnlyFilter()\"}"), 0) << err();
  EXPECT_EQ(server_.last_scan->filter, Filter::FirstKeyOnly());
  ASSERT_EQ(Run("get 't1', 'r1', {COLUMN => 'cf:q', FILTER => \"KeyOnlyFilter(true)\"}"), 0) << err();
  ASSERT_TRUE(server_.last_get.has_value());
  EXPECT_EQ(server_.last_get->filter, Filter::KeyOnly(true));

  EXPECT_EQ(Run("scan 't1', {FILTER => \"PrefixFilter(a)\"}"), 1);
  EXPECT_EQ(err(), "ERROR: scan: bad FILTER at column 23: filter string: at offset 13: expected a quoted string as "
                   "argument 1 of PrefixFilter, found 'a'\n");
  EXPECT_EQ(Run("get 't1', 'r1', {FILTER => 'Nope()'}"), 1);
  EXPECT_EQ(err(), "ERROR: get: bad FILTER at column 28: filter string: at offset 0: unknown filter 'Nope'\n");
  EXPECT_EQ(Run("scan 't1', {FILTER => 5}"), 1);
  EXPECT_EQ(err(), "ERROR: scan: expected a filter string for FILTER, found the integer 5 at column 23\n");
  EXPECT_EQ(Run("scan 't1', {REVERSED => 'yes'}"), 1);
  EXPECT_EQ(err(), "ERROR: scan: expected true or false for REVERSED, found the string 'yes' at column 25\n");

  // The code is InvalidArgument, as for every bad argument.
  absl::StatusOr<std::vector<Command>> cmds = Parse("scan 't1', {FILTER => \"PageFilter(-1)\"}");
  ASSERT_TRUE(cmds.ok()) << cmds.status();
  std::ostringstream sink;
  absl::Status s = Executor(conn_.get(), OutputFormat::kHuman, &sink, false).Execute((*cmds)[0]);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("expected an integer >= 0 as argument 1 of PageFilter"), std::string_view::npos) << s;

  ASSERT_EQ(Run("help 'scan'"), 0);
  EXPECT_NE(out().find("scan 't1', {REVERSED => true}"), std::string::npos) << out();
  EXPECT_NE(out().find("FILTER => \"(PrefixFilter ('row2')"), std::string::npos) << out();
}

TEST_F(ShellTest, ScanLimitAndRanges) {
  ASSERT_EQ(Run("create 't1', 'cf'; put 't1', 'a', 'cf:q', '1', 1; put 't1', 'b', 'cf:q', '2', 1; "
                "put 't1', 'c', 'cf:q', '3', 1"),
            0);
  ASSERT_EQ(Run("scan 't1', {STARTROW => 'b'}"), 0);
  EXPECT_EQ(out(),
            "ROW                             COLUMN+CELL\n"
            " b                              column=cf:q, timestamp=1, value=2\n"
            " c                              column=cf:q, timestamp=1, value=3\n"
            "2 row(s)\n");
  ASSERT_EQ(Run("scan 't1', {LIMIT => 1}"), 0);
  EXPECT_EQ(out(),
            "ROW                             COLUMN+CELL\n"
            " a                              column=cf:q, timestamp=1, value=1\n"
            "1 row(s)\n");
}

TEST_F(ShellTest, BinaryKeysAndValues) {
  ASSERT_EQ(Run("create 't1', 'cf'; put 't1', \"r\\x00\\x01\", 'cf:q', \"\\xde\\xad\", 1"), 0) << err();
  ASSERT_EQ(server_.tables["t1"].rows.count(std::string("r\0\x01", 3)), 1u);
  ASSERT_EQ(Run("scan 't1'"), 0);
  EXPECT_EQ(out(),
            "ROW                             COLUMN+CELL\n"
            " r\\x00\\x01                      column=cf:q, timestamp=1, value=\\xDE\\xAD\n"
            "1 row(s)\n");
  ASSERT_EQ(Run("get 't1', \"r\\x00\\x01\""), 0);
  EXPECT_EQ(out(), "COLUMN                          CELL\n cf:q                           timestamp=1, "
                   "value=\\xDE\\xAD\n1 row(s)\n");
}

TEST_F(ShellTest, PutForms) {
  ASSERT_EQ(Run("create 't1', 'cf'; put 't1', 'r', 'cf', 'v', 3; put 't1', 7, 'cf:n', 42"), 0) << err();
  const auto& rows = server_.tables["t1"].rows;
  ASSERT_EQ(rows.count("r"), 1u);
  EXPECT_EQ(rows.at("r")[0].qualifier, "");
  EXPECT_EQ(rows.at("r")[0].timestamp, 3);
  ASSERT_EQ(rows.count("7"), 1u);
  EXPECT_EQ(rows.at("7")[0].value, "42");
  ASSERT_TRUE(server_.last_mutation.has_value());
  EXPECT_EQ(server_.last_mutation->mutations[0].timestamp, kLatestTimestamp);

  EXPECT_EQ(Run("put 't1', 'r', 'cf:q'"), 1);
  EXPECT_EQ(err(), "ERROR: wrong number of arguments for 'put' (given 3, expected 4 or 5)\n"
                   "Usage: put 't1', 'r1', 'cf:q', 'value' [, ts]\n");
  EXPECT_EQ(Run("put 't1', 'r', ':q', 'v'"), 1);
  EXPECT_EQ(err(), "ERROR: put: column ':q' has an empty family name\n");
  EXPECT_EQ(Run("put 't1', 'r', 'cf:q', 'v', 'soon'"), 1);
  EXPECT_EQ(err(), "ERROR: put: expected an integer timestamp, found the string 'soon' at column 29\n");
  EXPECT_EQ(Run("put 't1', 'r', 'cf:q', 'v', -1"), 1);
  EXPECT_EQ(err(), "ERROR: put: timestamp -1 is out of range\n");
}

TEST_F(ShellTest, DeleteKinds) {
  ASSERT_EQ(Run("create 't1', 'cf'"), 0);
  using K = CellMutation::Kind;
  struct Case {
    const char* cmd;
    K kind;
    const char* family;
    const char* qualifier;
    int64_t ts;
  };
  for (const Case& c : {Case{"delete 't1', 'r', 'cf:q'", K::kDelete, "cf", "q", kLatestTimestamp},
                        Case{"delete 't1', 'r', 'cf:q', 5", K::kDelete, "cf", "q", 5},
                        Case{"delete 't1', 'r', 'cf'", K::kDeleteFamily, "cf", "", kLatestTimestamp},
                        Case{"deleteall 't1', 'r', 'cf:q', 9", K::kDeleteColumn, "cf", "q", 9},
                        Case{"deleteall 't1', 'r', 'cf'", K::kDeleteFamily, "cf", "", kLatestTimestamp}}) {
    ASSERT_EQ(Run(c.cmd), 0) << c.cmd << ": " << err();
    ASSERT_TRUE(server_.last_mutation.has_value());
    ASSERT_EQ(server_.last_mutation->mutations.size(), 1u) << c.cmd;
    const CellMutation& m = server_.last_mutation->mutations[0];
    EXPECT_EQ(m.kind, c.kind) << c.cmd;
    EXPECT_EQ(m.family, c.family) << c.cmd;
    EXPECT_EQ(m.qualifier, c.qualifier) << c.cmd;
    EXPECT_EQ(m.timestamp, c.ts) << c.cmd;
  }
  ASSERT_EQ(Run("deleteall 't1', 'r'"), 0);
  EXPECT_TRUE(server_.last_mutation->mutations.empty());
  EXPECT_TRUE(server_.last_mutation->deletes_row_when_empty);

  ASSERT_EQ(Run("put 't1', 'r', 'cf:q', 'old', 1; put 't1', 'r', 'cf:q', 'new', 2; delete 't1', 'r', 'cf:q'; "
                "get 't1', 'r'"),
            0);
  EXPECT_EQ(out(), "COLUMN                          CELL\n cf:q                           timestamp=1, value=old\n"
                   "1 row(s)\n");
}

TEST_F(ShellTest, Counters) {
  ASSERT_EQ(Run("create 't1', 'cf'; incr 't1', 'r', 'cf:c'; incr 't1', 'r', 'cf:c', 10; get_counter 't1', 'r', "
                "'cf:c'; get_counter 't1', 'r', 'cf:none'"),
            0)
      << err();
  EXPECT_EQ(out(), "Created table t1\nCOUNTER VALUE = 1\nCOUNTER VALUE = 11\nCOUNTER VALUE = 11\n"
                   "No counter found at specified coordinates\n");
  ASSERT_EQ(Run("incr 't1', 'r', 'cf:c', -20", OutputFormat::kJson), 0);
  EXPECT_EQ(out(), "{\"command\":\"incr\",\"table\":\"t1\",\"row\":\"r\",\"column\":\"cf:c\",\"value\":-9}\n");
  ASSERT_EQ(Run("put 't1', 'r', 'cf:s', 'abc'"), 0);
  EXPECT_EQ(Run("get_counter 't1', 'r', 'cf:s'"), 1);
  EXPECT_EQ(err(), "ERROR: get_counter: the value at r/cf:s is 3 bytes, not an 8-byte counter\n");
}

TEST_F(ShellTest, AppendCommand) {
  ASSERT_EQ(Run("create 't1', 'cf'; append 't1', 'r', 'cf:q', 'ab'; append 't1', 'r', 'cf:q', 'cd'"), 0) << err();
  EXPECT_EQ(out(), "Created table t1\nCURRENT VALUE = ab\nCURRENT VALUE = abcd\n");
}

TEST_F(ShellTest, CountWithInterval) {
  ASSERT_EQ(Run("create 't1', 'cf'; put 't1', 'a', 'cf:q', '1'; put 't1', 'b', 'cf:q', '2'; "
                "put 't1', 'c', 'cf:q', '3'"),
            0);
  ASSERT_EQ(Run("count 't1', {INTERVAL => 2}"), 0) << err();
  EXPECT_EQ(out(), "Current count: 2, row: b\n3 row(s)\n");
  EXPECT_FALSE(server_.last_scan->cache_blocks);
  ASSERT_EQ(Run("count 't1', INTERVAL => 2", OutputFormat::kJson), 0) << err();
  EXPECT_EQ(out(), "{\"command\":\"count\",\"table\":\"t1\",\"count\":3}\n");
}

TEST_F(ShellTest, DescribeListExistsEnableDisableDrop) {
  ASSERT_EQ(Run("create 't1', {NAME => 'cf', TTL => 86400}; create 'other', 'x'"), 0);
  ASSERT_EQ(Run("describe 't1'"), 0);
  EXPECT_EQ(out(),
            "Table t1 is ENABLED\nt1, {REGIONS => 1}\nCOLUMN FAMILIES DESCRIPTION\n"
            "{NAME => 'cf', VERSIONS => '1', MIN_VERSIONS => '0', TTL => '86400 SECONDS (1 DAY)', BLOCKSIZE => "
            "'65536', DATA_BLOCK_ENCODING => 'NONE', COMPRESSION => 'NONE', BLOOMFILTER => 'ROW', CHECKSUM_TYPE => "
            "'CRC32C', BYTES_PER_CHECKSUM => '16384', BLOCKCACHE => 'true', CACHE_ENCODED => 'false'}\n\n1 row(s)\n");
  ASSERT_EQ(Run("list"), 0);
  EXPECT_EQ(out(), "TABLE\nother\nt1\n2 row(s)\n");
  ASSERT_EQ(Run("list 't.*'"), 0);
  EXPECT_EQ(out(), "TABLE\nt1\n1 row(s)\n");
  EXPECT_EQ(Run("list '('"), 1);
  EXPECT_TRUE(err().starts_with("ERROR: list: invalid regular expression '(': ")) << err();
  ASSERT_EQ(Run("exists 't1'; exists 'nope'"), 0);
  EXPECT_EQ(out(), "Table t1 does exist\nTable nope does not exist\n");

  EXPECT_EQ(Run("drop 't1'"), 1);
  EXPECT_EQ(err(), "ERROR: Table t1 is enabled. Disable it first. (table t1 is enabled)\n");
  ASSERT_EQ(Run("disable 't1'; is_enabled 't1'; is_disabled 't1'"), 0) << err();
  EXPECT_EQ(out(), "false\ntrue\n");
  ASSERT_EQ(Run("enable 't1'; disable 't1'; drop 't1'; exists 't1'"), 0) << err();
  EXPECT_EQ(out(), "Table t1 does not exist\n");
  EXPECT_EQ(server_.admin_calls.back(), "drop t1");
}

TEST_F(ShellTest, TruncateRecreatesWithTheSameDescriptor) {
  ASSERT_EQ(Run("create 't1', {NAME => 'cf', VERSIONS => 4}; put 't1', 'r', 'cf:q', 'v'"), 0);
  ASSERT_EQ(Run("truncate 't1'"), 0) << err();
  EXPECT_EQ(out(), "Truncating 't1' table (it may take a while):\nDisabling table...\nTruncating table...\n");
  EXPECT_EQ(server_.admin_calls, (std::vector<std::string>{"create t1", "disable t1", "truncate t1"}));
  EXPECT_TRUE(server_.tables["t1"].rows.empty());
  EXPECT_EQ(server_.tables["t1"].info.families[0].max_versions, 4);
  EXPECT_TRUE(server_.tables["t1"].info.enabled);
  EXPECT_EQ(Run("truncate 'zz'"), 1);
  EXPECT_EQ(err(), "ERROR: Unknown table zz! (table zz does not exist)\n");
}

TEST_F(ShellTest, TruncateKeepsOneRegionAndTruncatePreserveTheBoundaries) {
  ASSERT_EQ(Run("create 't1', 'cf', SPLITS => ['g', 'n']; create 't2', 'cf', SPLITS => ['g', 'n']"), 0) << err();
  ASSERT_EQ(Run("put 't2', 'h', 'cf:q', 'v'; truncate_preserve 't2'; truncate 't1'"), 0) << err();
  EXPECT_EQ(server_.tables["t2"].split_keys, (std::vector<std::string>{"g", "n"}));
  EXPECT_TRUE(server_.tables["t2"].rows.empty());
  EXPECT_TRUE(server_.tables["t1"].split_keys.empty());
  EXPECT_EQ(Run("truncate_preserve 'zz'"), 1);
  EXPECT_EQ(err(), "ERROR: Unknown table zz! (table zz does not exist)\n");
}

TEST_F(ShellTest, FlushCompactStatus) {
  ASSERT_EQ(Run("create 't1', 'cf'; flush 't1'; major_compact 't1'"), 0) << err();
  EXPECT_EQ(server_.admin_calls, (std::vector<std::string>{"create t1", "flush t1", "major_compact t1"}));
  ASSERT_EQ(Run("status"), 0);
  EXPECT_EQ(out(), "1 servers, 0 dead (standalone), version 0.1.0, uptime 1h 2m, 42 requests, 1 tables\n"
                   "block cache 2.0 KiB of 256.0 MiB, resident memory 50.0 MiB\n"
                   "connections 7 accepted / 1 refused, descriptors 40 open of 1024\n"
                   "verbs: off: no RDMA device (fake)\n");
  ASSERT_EQ(Run("status 'detailed'"), 0);
  EXPECT_TRUE(out().ends_with("    t1: ENABLED, memstore 0 B, 2 store files, 0 flushes, 0 compactions\n")) << out();
  EXPECT_EQ(Run("status 'verbose'"), 1);
  EXPECT_EQ(err(), "ERROR: status: the status format must be one of SIMPLE, SUMMARY, DETAILED, REPLICATION, not 'VERBOSE'\n");
}

TEST_F(ShellTest, AFailedOpenTableShowsInStatusListAndDescribeAndAssignReopensIt) {
  ASSERT_EQ(Run("create 't1', 'cf'; create 't2', 'cf'"), 0) << err();
  server_.tables["t1"].info.open_error = "DATA_LOSS: WAL segment x: damaged record at offset 40";
  ASSERT_EQ(Run("status"), 0);
  EXPECT_TRUE(out().ends_with("FAILED_OPEN: t1: DATA_LOSS: WAL segment x: damaged record at offset 40\n")) << out();
  ASSERT_EQ(Run("status 'detailed'"), 0);
  EXPECT_NE(out().find("    t1: FAILED_OPEN, memstore 0 B"), std::string::npos) << out();
  EXPECT_NE(out().find("    t2: ENABLED, memstore 0 B"), std::string::npos) << out();
  ASSERT_EQ(Run("list"), 0);
  EXPECT_EQ(out(), "TABLE\nt1 (FAILED_OPEN)\nt2\n2 row(s)\n") << out();
  ASSERT_EQ(Run("describe 't1'"), 0);
  EXPECT_TRUE(out().starts_with("Table t1 is FAILED_OPEN: DATA_LOSS: WAL segment x: damaged record at offset 40\n"))
      << out();
  ASSERT_EQ(Run("assign 't1'"), 0) << err();
  EXPECT_EQ(server_.admin_calls.back(), "assign t1");
  ASSERT_EQ(Run("describe 't1'"), 0);
  EXPECT_TRUE(out().starts_with("Table t1 is ENABLED\n")) << out();
  EXPECT_EQ(Run("assign 't1'"), 1);  // open now: nothing to reopen
  EXPECT_NE(err().find("table t1 is open"), std::string::npos) << err();
}

TEST_F(ShellTest, StatusShowsVerbsAndItsCounters) {
  server_.verbs = "rxe0 port 1, GID index 1 (RoCE) on 10.0.2.15:4791";
  server_.verbs_enabled = true;
  server_.verbs_endpoints = 3;
  server_.verbs_requests = 1200;
  server_.verbs_connects_accepted = 5;
  server_.verbs_connects_rejected = 1;
  server_.verbs_malformed_frames = 2;
  server_.verbs_sessions = 4;
  ASSERT_EQ(Run("status"), 0) << err();
  EXPECT_TRUE(out().ends_with("verbs: rxe0 port 1, GID index 1 (RoCE) on 10.0.2.15:4791 (enabled)\n"
                              "verbs endpoints 3, requests 1200, connects 5 accepted / 1 rejected, "
                              "2 malformed frames, 4 sessions\n"))
      << out();
  ASSERT_EQ(Run("status", OutputFormat::kJson), 0) << err();
  EXPECT_NE(out().find("\"verbs\":\"rxe0 port 1, GID index 1 (RoCE) on 10.0.2.15:4791\",\"verbs_enabled\":true,"
                       "\"verbs_endpoints\":3,\"verbs_requests\":1200,\"verbs_connects_accepted\":5,"
                       "\"verbs_connects_rejected\":1,\"verbs_malformed_frames\":2,\"verbs_sessions\":4,"
                       "\"connections_accepted\":7,\"connections_refused\":1,\"open_descriptors\":40,"
                       "\"descriptor_limit\":1024,\"tables\":[]}"),
            std::string::npos)
      << out();
}

TEST_F(ShellTest, VerbsDisableAndEnable) {
  server_.verbs = "rxe0 port 1, GID index 1 (RoCE) on 10.0.2.15:4791";
  server_.verbs_enabled = true;
  ASSERT_EQ(Run("verbs_disable"), 0) << err();
  EXPECT_EQ(out(), "Verbs transport disabled: endpoints closed, clients send Get/Put over gRPC\n");
  EXPECT_FALSE(server_.verbs_enabled);
  ASSERT_EQ(Run("status"), 0) << err();
  EXPECT_NE(out().find("verbs: rxe0 port 1, GID index 1 (RoCE) on 10.0.2.15:4791 (disabled: Get/Put take gRPC)\n"),
            std::string::npos)
      << out();
  ASSERT_EQ(Run("verbs_enable", OutputFormat::kJson), 0) << err();
  EXPECT_EQ(out(), "{\"command\":\"verbs_enable\",\"ok\":true}\n");
  EXPECT_TRUE(server_.verbs_enabled);
  EXPECT_EQ(server_.admin_calls, (std::vector<std::string>{"set_verbs off", "set_verbs on"}));

  EXPECT_EQ(Run("verbs_enable 'now'"), 1);
  EXPECT_EQ(err(), "ERROR: wrong number of arguments for 'verbs_enable' (given 1, expected 0)\nUsage: verbs_enable\n");
  EXPECT_EQ(server_.admin_calls.size(), 2u);

  // A server without verbs: the server's FAILED_PRECONDITION, and the script stops there.
  server_.verbs = "off: rdma=off";
  server_.verbs_enabled = false;
  EXPECT_EQ(Run("verbs_disable; list"), 1);
  EXPECT_EQ(err(), "ERROR: FAILED_PRECONDITION: this server serves no verbs transport (off: rdma=off)\n");
  EXPECT_EQ(out(), "");
  server_.fail_next = absl::UnavailableError("connection refused");
  EXPECT_EQ(Run("verbs_enable"), 1);
  EXPECT_EQ(err(), "ERROR: cannot reach the server at 127.0.0.1:16020 (UNAVAILABLE: connection refused)\n");

  ASSERT_EQ(Run("help 'verbs_disable'"), 0);
  EXPECT_TRUE(out().starts_with("Usage: verbs_disable\nSwitches the server's RDMA verbs transport off")) << out();
  ASSERT_EQ(Run("help"), 0);
  EXPECT_NE(out().find("Commands: flush, major_compact, split, merge_region, assign, unassign, move, balancer, verbs_disable, verbs_enable\n"), std::string::npos) << out();
}

TEST_F(ShellTest, ServerErrorsKeepTheirCode) {
  ASSERT_EQ(Run("create 't1', 'cf'"), 0);
  server_.fail_next = absl::UnavailableError("connection refused");
  Command cmd;
  cmd.name = "get";
  Value t, r;
  t.kind = r.kind = Value::Kind::kString;
  t.str = "t1";
  r.str = "r";
  cmd.args = {t, r};
  std::ostringstream out;
  Executor ex(conn_.get(), OutputFormat::kHuman, &out, false);
  absl::Status s = ex.Execute(cmd);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "cannot reach the server at 127.0.0.1:16020 (UNAVAILABLE: connection refused)");
  server_.fail_next = absl::InvalidArgumentError("value too large");
  s = ex.Execute(cmd);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "INVALID_ARGUMENT: value too large");
  EXPECT_EQ(out.str(), "");
}

TEST_F(ShellTest, UnknownCommandsAndHelp) {
  EXPECT_EQ(Run("frobnicate 't1'"), 1);
  EXPECT_EQ(err(), "ERROR: Unknown command 'frobnicate'. Type 'help' for the list of commands.\n");
  ASSERT_EQ(Run("help"), 0);
  EXPECT_NE(out().find("Commands: create, alter, describe, desc, list"), std::string::npos) << out();
  ASSERT_EQ(Run("help 'get'"), 0);
  EXPECT_TRUE(out().starts_with("Usage: get 't1', 'r1'")) << out();
  ASSERT_EQ(Run("help put"), 0);
  EXPECT_TRUE(out().starts_with("Usage: put")) << out();
  EXPECT_EQ(Run("help 'nope'"), 1);
  EXPECT_EQ(err(), "ERROR: no help for 'nope': not a command. Type 'help' for the list of commands.\n");
  ASSERT_EQ(Run("help 'scan'", OutputFormat::kJson), 0);
  EXPECT_TRUE(out().starts_with("{\"command\":\"help\",\"text\":\"Usage: scan 't1'")) << out();
  EXPECT_TRUE(IsCommand("exit"));
  EXPECT_FALSE(IsCommand("nope"));
}

TEST_F(ShellTest, ScriptsStopAtTheFirstError) {
  EXPECT_EQ(Run("create 't1', 'cf'\nput 't9', 'r', 'cf:q', 'v'\nput 't1', 'r', 'cf:q', 'v'"), 1);
  EXPECT_EQ(err(), "ERROR: Unknown table t9! (table t9 does not exist)\n");
  EXPECT_TRUE(server_.tables["t1"].rows.empty());  // the third command never ran
}

TEST_F(ShellTest, SyntaxErrorsRunNothing) {
  EXPECT_EQ(Run("create 't1', 'cf'\nput 't1' 'r'"), 1);
  EXPECT_EQ(err(), "ERROR: syntax error, line 2, column 10: expected ',' or the end of the command (';' or a new "
                   "line), found the string 'r'\n");
  EXPECT_TRUE(server_.tables.empty());
  EXPECT_EQ(Run("put 't1', 'r"), 1);
  EXPECT_EQ(err(), "ERROR: syntax error, column 11: unterminated string (missing closing ')\n");
}

TEST_F(ShellTest, ExitAndQuit) {
  EXPECT_EQ(Run("create 't1', 'cf'; exit; create 't2', 'cf'"), 0);
  EXPECT_EQ(server_.tables.count("t2"), 0u);
  EXPECT_EQ(Run("quit 3"), 3);
  EXPECT_EQ(Run("exit 'x'"), 1);
  EXPECT_EQ(err(), "ERROR: exit takes at most one integer, the exit code\n");
}

TEST_F(ShellTest, InteractiveContinuesAfterErrorsAndJoinsLines) {
  SessionOptions o;
  o.stop_on_error = false;
  o.show_timing = false;
  Session s(conn_.get(), o, &out_, &err_);
  EXPECT_EQ(s.Prompt(), "basalt:001:0> ");
  EXPECT_TRUE(s.AddLine("get 't9', 'r'"));
  EXPECT_EQ(err(), "ERROR: Unknown table t9! (table t9 does not exist)\n");
  EXPECT_TRUE(s.AddLine("put 't1' 'x'"));
  EXPECT_FALSE(s.pending());
  EXPECT_TRUE(s.AddLine("create 't1',"));
  EXPECT_TRUE(s.pending());
  EXPECT_EQ(s.Prompt(), "basalt:004:1* ");
  EXPECT_TRUE(s.AddLine("  {NAME => 'cf',"));
  EXPECT_TRUE(s.AddLine("   VERSIONS => 2}"));
  EXPECT_FALSE(s.pending());
  EXPECT_EQ(server_.tables["t1"].info.families[0].max_versions, 2);
  EXPECT_EQ(s.Prompt(), "basalt:006:0> ");
  EXPECT_TRUE(s.AddLine("put 't1', 'r', 'cf:q', 'multi"));
  EXPECT_TRUE(s.AddLine("line'; get 't1', 'r'"));
  EXPECT_NE(out().find("value=multi\\x0Aline"), std::string::npos) << out();
  EXPECT_FALSE(s.AddLine("exit"));
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.exit_code(), 0);
}

TEST_F(ShellTest, PipedInputStopsAtErrorAndReportsUnfinishedCommands) {
  SessionOptions o;
  o.show_timing = false;
  {
    Session s(conn_.get(), o, &out_, &err_);
    EXPECT_TRUE(s.AddLine("create 't1', 'cf'"));
    EXPECT_FALSE(s.AddLine("get 't9', 'r'"));
    EXPECT_EQ(s.exit_code(), 1);
  }
  err_.str("");
  Session s(conn_.get(), o, &out_, &err_);
  EXPECT_TRUE(s.AddLine("put 't1', 'r',"));
  s.Finish();
  EXPECT_EQ(s.exit_code(), 1);
  EXPECT_EQ(err(), "ERROR: syntax error, column 15: expected a value (a string, an integer, [array] or {hash}), "
                   "found end of input\n");
}

TEST_F(ShellTest, SetQuotaAndListQuotasAsHBasesShell) {
  ASSERT_EQ(Run("set_quota TYPE => THROTTLE, USER => 'bob', LIMIT => '100req/sec'"), 0) << err();
  ASSERT_EQ(Run("set_quota TYPE => THROTTLE, THROTTLE_TYPE => WRITE, USER => 'bob', TABLE => 't1', LIMIT => '10M/sec'"),
            0)
      << err();
  ASSERT_EQ(Run("set_quota TYPE => THROTTLE, NAMESPACE => 'ns', LIMIT => NONE"), 0) << err();
  EXPECT_EQ(server_.admin_calls[server_.admin_calls.size() - 3], "set_quota bob||||100req/sec");
  EXPECT_EQ(server_.admin_calls[server_.admin_calls.size() - 2], "set_quota bob||t1|WRITE|10M/sec");
  EXPECT_EQ(server_.admin_calls.back(), "set_quota |ns|||NONE");
  ASSERT_EQ(Run("list_quotas"), 0) << err();
  EXPECT_NE(out().find(" USER => bob" + std::string(29, ' ') +
                       "TYPE => THROTTLE, THROTTLE_TYPE => , LIMIT => 100req/sec, SCOPE => MACHINE\n"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("2 row(s)"), std::string::npos) << out();
  // What HBase's shell has and Basalt does not, and malformed calls, are refused clearly.
  EXPECT_NE(Run("set_quota TYPE => SPACE, TABLE => 't1', LIMIT => '1G'"), 0);
  EXPECT_NE(err().find("TYPE => SPACE is not supported"), std::string::npos) << err();
  EXPECT_NE(Run("set_quota TYPE => THROTTLE, USER => 'bob'"), 0);
  EXPECT_NE(err().find("needs TYPE => THROTTLE and LIMIT"), std::string::npos) << err();
  EXPECT_NE(Run("set_quota TYPE => THROTTLE, USR => 'bob', LIMIT => '1req/sec'"), 0);
  EXPECT_NE(err().find("unknown key USR"), std::string::npos) << err();
}

TEST_F(ShellTest, SnapshotsAsHBasesShell) {
  ASSERT_EQ(Run("create 't1', 'cf'; create 't2', 'cf'; put 't1', 'r1', 'cf:q', 'v'"), 0) << err();
  ASSERT_EQ(Run("snapshot 't1', 's1'; snapshot 't1', 'nightly-1', {TTL => 86400, SKIP_FLUSH => true}; "
                "snapshot 't2', 's2', {TTL => -1}"),
            0)
      << err();
  EXPECT_EQ(server_.admin_calls.back(), "snapshot t2 s2 0");
  EXPECT_EQ(server_.admin_calls[server_.admin_calls.size() - 2], "snapshot t1 nightly-1 86400");
  ASSERT_EQ(Run("list_snapshots"), 0) << err();
  EXPECT_TRUE(out().starts_with("SNAPSHOT                        TABLE + CREATION TIME + TTL(Sec)\n")) << out();
  EXPECT_NE(out().find(" nightly-1" + std::string(22, ' ') + "t1 (2023-11-14 22:13:20 +0000) 86400, REGIONS => 1, "
                       "FILES => 1, SIZE => 100 B, ONLY => 0 B\n"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find(" s2" + std::string(29, ' ') + "t2 ("), std::string::npos) << out();
  EXPECT_NE(out().find(") FOREVER, "), std::string::npos) << out();
  EXPECT_TRUE(out().ends_with("3 row(s)\n")) << out();
  // By name, and by table then name, each a whole-name regex.
  ASSERT_EQ(Run("list_snapshots 's.*'"), 0) << err();
  EXPECT_TRUE(out().ends_with("2 row(s)\n")) << out();
  ASSERT_EQ(Run("list_table_snapshots 't1'"), 0) << err();
  EXPECT_TRUE(out().ends_with("2 row(s)\n")) << out();
  ASSERT_EQ(Run("list_table_snapshots 't.*', 'n.*'"), 0) << err();
  EXPECT_TRUE(out().ends_with("1 row(s)\n")) << out();
  ASSERT_EQ(Run("list_snapshots 's1'", OutputFormat::kJson), 0) << err();
  EXPECT_EQ(out(),
            "{\"command\":\"list_snapshots\",\"snapshots\":[{\"name\":\"s1\",\"table\":\"t1\","
            "\"created_ms\":1700000000001,\"ttl_seconds\":0,\"regions\":1,\"files\":1,\"bytes\":100,"
            "\"only_bytes\":0}]}\n");
  ASSERT_EQ(Run("delete_snapshot 's1'; list_snapshots"), 0) << err();
  EXPECT_TRUE(out().ends_with("2 row(s)\n")) << out();
  // Refusals: the server's words for a name taken or missing; the shell's for malformed calls.
  EXPECT_NE(Run("snapshot 't1', 's2'"), 0);
  EXPECT_NE(err().find("ALREADY_EXISTS: snapshot 's2' exists"), std::string::npos) << err();
  EXPECT_NE(Run("delete_snapshot 's1'"), 0);
  EXPECT_NE(err().find("NOT_FOUND: no snapshot 's1'"), std::string::npos) << err();
  EXPECT_NE(Run("snapshot 't1', 's3', {MAX_FILESIZE => 10}"), 0);
  EXPECT_NE(err().find("unsupported option MAX_FILESIZE"), std::string::npos) << err();
  EXPECT_NE(Run("snapshot 't1', 's3', {TTL => 'soon'}"), 0);
  EXPECT_NE(err().find("TTL"), std::string::npos) << err();
  EXPECT_NE(Run("list_snapshots '('"), 0);
  EXPECT_NE(err().find("list_snapshots: invalid regular expression"), std::string::npos) << err();
  EXPECT_NE(Run("snapshot 't1'"), 0);
  EXPECT_NE(err().find("wrong number of arguments"), std::string::npos) << err();
}

TEST_F(ShellTest, ReplicationPeersAsHBasesShell) {
  ASSERT_EQ(Run("add_peer 'dr', CLUSTER_KEY => 'zk1,zk2:2181:/hbase'; "
                "add_peer 'move', CLUSTER_KEY => \"zk3:2181:/basalt\", STATE => 'DISABLED', "
                "TABLE_CFS => {'t1' => [], 't2' => ['cf1', 'cf2']}; add_peer 'old', 'zk4:2181:/hbase'"),
            0)
      << err();
  ASSERT_GE(server_.admin_calls.size(), 3u);
  EXPECT_EQ(server_.admin_calls[server_.admin_calls.size() - 3], "add_peer dr zk1,zk2:2181:/hbase");
  EXPECT_EQ(server_.admin_calls[server_.admin_calls.size() - 2],
            "add_peer move zk3:2181:/basalt disabled t1: t2:cf1,cf2,");
  EXPECT_EQ(server_.admin_calls.back(), "add_peer old zk4:2181:/hbase");
  ASSERT_EQ(Run("list_peers"), 0) << err();
  EXPECT_EQ(out(),
            " PEER_ID CLUSTER_KEY STATE TABLE_CFS\n"
            " dr zk1,zk2:2181:/hbase ENABLED \n"
            " move zk3:2181:/basalt DISABLED t1;t2:cf1,cf2\n"
            " old zk4:2181:/hbase ENABLED \n"
            "3 row(s)\n");
  ASSERT_EQ(Run("enable_peer 'move'; disable_peer 'dr'; remove_peer 'old'; status 'replication'"), 0) << err();
  EXPECT_NE(out().find("2 peer(s)\n    SOURCE: PeerID=dr, State=DISABLED, "), std::string::npos) << out();
  EXPECT_NE(out().find("    SOURCE: PeerID=move, State=SHIPPING, "), std::string::npos) << out();
  // enable_table_replication: REPLICATION_SCOPE => 1 on every family; disable: 0.
  ASSERT_EQ(Run("create 't1', 'a', {NAME => 'b', REPLICATION_SCOPE => 0}; enable_table_replication 't1'"), 0) << err();
  absl::StatusOr<TableInfo> t1 = conn_->GetAdmin()->DescribeTable("t1");
  ASSERT_TRUE(t1.ok()) << t1.status();
  using Kept = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(t1->families[0].metadata, (Kept{{"REPLICATION_SCOPE", "1"}}));
  EXPECT_EQ(t1->families[1].metadata, (Kept{{"REPLICATION_SCOPE", "1"}}));
  ASSERT_EQ(Run("disable_table_replication 't1'"), 0) << err();
  EXPECT_EQ(conn_->GetAdmin()->DescribeTable("t1")->families[1].metadata, (Kept{{"REPLICATION_SCOPE", "0"}}));
  // Refusals: the server's for an id taken or missing, the shell's for a malformed call.
  EXPECT_NE(Run("add_peer 'dr', CLUSTER_KEY => 'zk9:2181:/hbase'"), 0);
  EXPECT_NE(err().find("ALREADY_EXISTS"), std::string::npos) << err();
  EXPECT_NE(Run("remove_peer 'old'"), 0);
  EXPECT_NE(err().find("NOT_FOUND"), std::string::npos) << err();
  EXPECT_NE(Run("add_peer 'x', STATE => 'DISABLED'"), 0);
  EXPECT_NE(err().find("CLUSTER_KEY"), std::string::npos) << err();
  EXPECT_NE(Run("add_peer 'x', CLUSTER_KEY => 'zk:2181:/h', STATE => 'PAUSED'"), 0);
  EXPECT_NE(err().find("STATE"), std::string::npos) << err();
  EXPECT_NE(Run("add_peer 'x', CLUSTER_KEY => 'zk:2181:/h', TABLE_CFS => ['t1']"), 0);
  EXPECT_NE(err().find("TABLE_CFS"), std::string::npos) << err();
  EXPECT_NE(Run("add_peer 'x'"), 0);
}

// delete_all_snapshot and delete_table_snapshots: what matches is listed, the user is asked,
// and each deletion reported; "n" deletes nothing, and with nobody to ask they refuse.
TEST_F(ShellTest, ManySnapshotsAreDeletedOnlyWhenTheUserSaysSo) {
  ASSERT_EQ(Run("create 't1', 'cf'; create 't2', 'cf'; snapshot 't1', 'a1'; snapshot 't1', 'a2'; "
                "snapshot 't2', 'a3'; snapshot 't2', 'b1'"),
            0)
      << err();
  EXPECT_NE(Run("delete_all_snapshot 'a.*'"), 0);
  EXPECT_NE(err().find("asks before it deletes 3 snapshot(s)"), std::string::npos) << err();
  std::vector<std::string> questions;
  bool answer = false;
  confirm_ = [&](const std::string& q) {
    questions.push_back(q);
    return answer;
  };
  ASSERT_EQ(Run("delete_all_snapshot 'a.*'"), 0) << err();
  EXPECT_EQ(questions, std::vector<std::string>{"Delete the above 3 snapshots (y/n)?"});
  EXPECT_NE(out().find(" a3 "), std::string::npos) << "the listing first: " << out();
  EXPECT_NE(out().find("No snapshot deleted."), std::string::npos) << out();
  answer = true;
  ASSERT_EQ(Run("delete_table_snapshots 't1'"), 0) << err();
  EXPECT_NE(out().find("Successfully deleted snapshot: a1\nSuccessfully deleted snapshot: a2\n"
                       "2 snapshots successfully deleted.\n"),
            std::string::npos)
      << out();
  ASSERT_EQ(Run("delete_table_snapshots 't.*', 'b.*'"), 0) << err();
  EXPECT_NE(out().find("Successfully deleted snapshot: b1\n1 snapshots successfully deleted."), std::string::npos)
      << out();
  ASSERT_EQ(Run("list_snapshots"), 0) << err();
  EXPECT_NE(out().find(" a3 "), std::string::npos) << out();
  EXPECT_TRUE(out().ends_with("1 row(s)\n")) << out();
  questions.clear();
  ASSERT_EQ(Run("delete_all_snapshot 'zz.*'"), 0) << err();
  EXPECT_NE(out().find("No snapshots matched."), std::string::npos) << out();
  EXPECT_TRUE(questions.empty()) << "asked about nothing";
}

TEST_F(ShellTest, CloneAndRestoreSnapshotsAsHBasesShell) {
  ASSERT_EQ(Run("create 't1', 'cf'; put 't1', 'r1', 'cf:q', 'v'; snapshot 't1', 's1'; put 't1', 'r2', 'cf:q', 'w'"), 0)
      << err();
  ASSERT_EQ(Run("clone_snapshot 's1', 't2'; clone_snapshot 's1', 't3', {RESTORE_ACL => false}"), 0) << err();
  EXPECT_EQ(server_.admin_calls.back(), "clone_snapshot s1 t3");
  ASSERT_EQ(Run("count 't2'"), 0) << err();
  EXPECT_NE(out().find("1 row(s)"), std::string::npos) << out();
  // HBase's rule: restore needs the table disabled.
  EXPECT_NE(Run("restore_snapshot 's1'"), 0);
  EXPECT_NE(err().find("FAILED_PRECONDITION"), std::string::npos) << err();
  ASSERT_EQ(Run("disable 't1'; restore_snapshot 's1'; enable 't1'; count 't1'"), 0) << err();
  EXPECT_NE(out().find("1 row(s)"), std::string::npos) << out();
  EXPECT_NE(Run("clone_snapshot 's1', 't2'"), 0);
  EXPECT_NE(err().find("ALREADY_EXISTS"), std::string::npos) << err();
  ASSERT_EQ(Run("clone_snapshot 's1', 't4', {RESTORE_ACL => true}"), 0) << err();
  EXPECT_EQ(server_.admin_calls.back(), "clone_snapshot s1 t4 restore_acl");
  EXPECT_NE(Run("clone_snapshot 's1', 't5', {RESTORE_ACL => 'maybe'}"), 0);
  EXPECT_NE(err().find("RESTORE_ACL"), std::string::npos) << err();
  EXPECT_EQ(server_.admin_calls.back(), "clone_snapshot s1 t4 restore_acl") << "t5's was refused before any call";
}

}  // namespace
}  // namespace basalt::shell
