#include "src/tools/shell/format.h"

#include <gtest/gtest.h>

namespace basalt::shell {
namespace {

Reply RowsReply(bool get_layout) {
  Reply r;
  r.command = get_layout ? "get" : "scan";
  r.table = "t1";
  r.kind = Reply::Kind::kRows;
  r.get_layout = get_layout;
  r.rows.emplace_back("r1", std::vector<KeyValue>{{"cf", "q", 1700000000000, "v"}, {"cf", "q2", 5, "x\ty"}});
  if (!get_layout) r.rows.emplace_back(std::string("r\x00\xff", 3), std::vector<KeyValue>{{"cf", "", 7, ""}});
  return r;
}

TEST(FormatHumanTest, Scan) {
  EXPECT_EQ(FormatHuman(RowsReply(false)),
            "ROW                             COLUMN+CELL\n"
            " r1                             column=cf:q, timestamp=1700000000000, value=v\n"
            " r1                             column=cf:q2, timestamp=5, value=x\\x09y\n"
            " r\\x00\\xFF                      column=cf:, timestamp=7, value=\n"
            "2 row(s)\n");
}

TEST(FormatHumanTest, Get) {
  EXPECT_EQ(FormatHuman(RowsReply(true)),
            "COLUMN                          CELL\n"
            " cf:q                           timestamp=1700000000000, value=v\n"
            " cf:q2                          timestamp=5, value=x\\x09y\n"
            "1 row(s)\n");
  Reply empty;
  empty.command = "get";
  empty.kind = Reply::Kind::kRows;
  empty.get_layout = true;
  empty.rows.emplace_back();
  EXPECT_EQ(FormatHuman(empty), "COLUMN                          CELL\n0 row(s)\n");
}

TEST(FormatHumanTest, LongRowKeyKeepsOneSpace) {
  Reply r;
  r.kind = Reply::Kind::kRows;
  r.rows.emplace_back(std::string(40, 'k'), std::vector<KeyValue>{{"f", "q", 1, "v"}});
  EXPECT_EQ(FormatHuman(r), "ROW                             COLUMN+CELL\n " + std::string(40, 'k') +
                                " column=f:q, timestamp=1, value=v\n1 row(s)\n");
}

TEST(FormatHumanTest, CountersListExistsMessages) {
  Reply r;
  r.kind = Reply::Kind::kCounter;
  r.counter = -3;
  EXPECT_EQ(FormatHuman(r), "COUNTER VALUE = -3\n");
  r.counter.reset();
  EXPECT_EQ(FormatHuman(r), "No counter found at specified coordinates\n");

  Reply l;
  l.kind = Reply::Kind::kList;
  l.tables = {"a", "b"};
  EXPECT_EQ(FormatHuman(l), "TABLE\na\nb\n2 row(s)\n");

  Reply e;
  e.kind = Reply::Kind::kExists;
  e.table = "t1";
  e.flag = true;
  EXPECT_EQ(FormatHuman(e), "Table t1 does exist\n");
  e.flag = false;
  EXPECT_EQ(FormatHuman(e), "Table t1 does not exist\n");

  Reply d;
  d.messages = {"Created table t1"};
  EXPECT_EQ(FormatHuman(d), "Created table t1\n");

  Reply c;
  c.kind = Reply::Kind::kCount;
  c.count = 12;
  EXPECT_EQ(FormatHuman(c), "12 row(s)\n");

  Reply en;
  en.kind = Reply::Kind::kEnabled;
  en.command = "is_disabled";
  en.flag = true;
  EXPECT_EQ(FormatHuman(en), "false\n");
  en.command = "is_enabled";
  EXPECT_EQ(FormatHuman(en), "true\n");
}

TEST(FormatHumanTest, Describe) {
  Reply r;
  r.kind = Reply::Kind::kDescribe;
  r.info.name = "t1";
  r.info.enabled = false;
  FamilySettings f;
  f.name = "cf";
  f.max_versions = 3;
  f.ttl_seconds = 90;
  f.encoding = "FAST_DIFF";
  r.info.families.push_back(f);
  EXPECT_EQ(FormatHuman(r),
            "Table t1 is DISABLED\nt1\nCOLUMN FAMILIES DESCRIPTION\n"
            "{NAME => 'cf', VERSIONS => '3', MIN_VERSIONS => '0', TTL => '90 SECONDS (1 MINUTE 30 SECONDS)', "
            "BLOCKSIZE => '65536', DATA_BLOCK_ENCODING => 'FAST_DIFF', COMPRESSION => 'NONE', BLOOMFILTER => 'ROW', "
            "CHECKSUM_TYPE => 'CRC32C', BYTES_PER_CHECKSUM => '16384', BLOCKCACHE => 'true', "
            "CACHE_ENCODED => 'false'}\n\n1 row(s)\n");
}

TEST(FormatHumanTest, StatusVerbsLines) {
  Reply r;
  r.command = "status";
  r.kind = Reply::Kind::kStatus;
  r.status.version = "1";
  r.status.mode = "standalone";
  const std::string head =
      "1 servers, 0 dead (standalone), version 1, uptime 0s, 0 requests, 0 tables\n"
      "block cache 0 B of 0 B, resident memory 0 B\n";
  EXPECT_EQ(FormatHuman(r), head + "verbs: off\n");  // a server that does not report verbs
  r.status.verbs = "off: no RDMA device (No such file or directory): load an HCA driver";
  EXPECT_EQ(FormatHuman(r), head + "verbs: off: no RDMA device (No such file or directory): load an HCA driver\n");
  r.status.verbs = "mlx5_0 port 1, GID index 3 (RoCE) on 192.168.1.10:40000";
  r.status.verbs_enabled = true;
  r.status.verbs_endpoints = 7;
  r.status.verbs_requests = 9;
  r.status.verbs_connects_accepted = 8;
  r.status.verbs_sessions = 2;
  EXPECT_EQ(FormatHuman(r), head +
                                "verbs: mlx5_0 port 1, GID index 3 (RoCE) on 192.168.1.10:40000 (enabled)\n"
                                "verbs endpoints 7, requests 9, connects 8 accepted / 0 rejected, 0 malformed "
                                "frames, 2 sessions\n");
  r.status.verbs_enabled = false;
  r.detailed = true;
  r.status.tables.push_back(TableStatus{"t", true, 0, 0, 0, 0});
  const std::string h = FormatHuman(r);
  EXPECT_NE(h.find("(RoCE) on 192.168.1.10:40000 (disabled: Get/Put take gRPC)\nverbs endpoints 7,"),
            std::string::npos)
      << h;
  EXPECT_TRUE(h.ends_with("    t: ENABLED, memstore 0 B, 0 store files, 0 flushes, 0 compactions\n")) << h;
}

TEST(FormatHumanTest, StatusOfAClustersMaster) {
  Reply r;
  r.command = "status";
  r.kind = Reply::Kind::kStatus;
  r.status.version = "1";
  r.status.mode = "master";
  r.status.dead_servers = 1;
  r.status.backup_masters = {"m2"};
  RegionServerLoad a;
  a.name = "h:1,7";
  a.regions = 2;
  a.region_names = {"t,,1", "t,m,2"};
  a.requests = 5;
  RegionServerLoad b;
  b.name = "h:2,8";
  b.regions = 1;
  b.region_names = {"t,x,3"};
  b.error = "region server h:2: Deadline Exceeded";
  r.status.servers = {a, b};
  std::string h = FormatHuman(r);
  EXPECT_TRUE(h.starts_with("1 active master, 1 backup masters, 2 servers, 1 dead, 1.5000 average load\n"
                            "master: version 1, uptime 0s, 0 tables\n"))
      << h;
  EXPECT_EQ(h.find("h:1,7"), std::string::npos) << h;  // servers only in 'detailed'
  r.detailed = true;
  h = FormatHuman(r);
  EXPECT_TRUE(h.ends_with("backup masters: m2\n"
                          "    h:1,7: 2 regions, 5 requests, memstore 0 B, 0 store files, resident memory 0 B, uptime 0s\n"
                          "        t,,1\n"
                          "        t,m,2\n"
                          "    h:2,8: 1 region (load unknown: region server h:2: Deadline Exceeded)\n"
                          "        t,x,3\n"))
      << h;
  const std::string j = FormatJson(r);
  EXPECT_NE(j.find("\"dead_servers\":1,\"backup_masters\":[\"m2\"],\"servers\":[{\"name\":\"h:1,7\""), std::string::npos)
      << j;
  EXPECT_NE(j.find("\"region_names\":[\"t,,1\",\"t,m,2\"]"), std::string::npos) << j;
}

TEST(FormatHumanTest, Ttl) {
  EXPECT_EQ(HumanTtl(0), "FOREVER");
  EXPECT_EQ(HumanTtl(2147483647), "FOREVER");
  EXPECT_EQ(HumanTtl(59), "59 SECONDS");
  EXPECT_EQ(HumanTtl(60), "60 SECONDS (1 MINUTE)");
  EXPECT_EQ(HumanTtl(86400), "86400 SECONDS (1 DAY)");
  EXPECT_EQ(HumanTtl(2 * 86400 + 3600 + 1), "176401 SECONDS (2 DAYS 1 HOUR 1 SECOND)");
}

TEST(FormatHumanTest, Took) {
  EXPECT_EQ(FormatTook(absl::Microseconds(1234)), "Took 0.0012 seconds\n");
  EXPECT_EQ(FormatTook(absl::Seconds(2)), "Took 2.0000 seconds\n");
}

TEST(FormatJsonTest, RowsOfGetAndScan) {
  EXPECT_EQ(FormatJson(RowsReply(true)),
            "{\"command\":\"get\",\"table\":\"t1\",\"rows\":[{\"row\":\"r1\",\"cells\":["
            "{\"family\":\"cf\",\"qualifier\":\"q\",\"timestamp\":1700000000000,\"value\":\"v\"},"
            "{\"family\":\"cf\",\"qualifier\":\"q2\",\"timestamp\":5,\"value\":\"x\\ty\"}]}]}\n");
  EXPECT_EQ(FormatJson(RowsReply(false)),
            "{\"command\":\"scan\",\"table\":\"t1\",\"rows\":[{\"row\":\"r1\",\"cells\":["
            "{\"family\":\"cf\",\"qualifier\":\"q\",\"timestamp\":1700000000000,\"value\":\"v\"},"
            "{\"family\":\"cf\",\"qualifier\":\"q2\",\"timestamp\":5,\"value\":\"x\\ty\"}]},"
            "{\"row\":\"r\\u0000\\u00ff\",\"cells\":[{\"family\":\"cf\",\"qualifier\":\"\",\"timestamp\":7,"
            "\"value\":\"\"}]}]}\n");
  Reply empty;
  empty.command = "get";
  empty.table = "t1";
  empty.kind = Reply::Kind::kRows;
  empty.get_layout = true;
  empty.rows.emplace_back();
  EXPECT_EQ(FormatJson(empty), "{\"command\":\"get\",\"table\":\"t1\",\"rows\":[]}\n");
}

TEST(FormatJsonTest, OtherReplies) {
  Reply done;
  done.command = "put";
  done.table = "t1";
  done.messages = {"not in json"};
  EXPECT_EQ(FormatJson(done), "{\"command\":\"put\",\"table\":\"t1\",\"ok\":true}\n");

  Reply c;
  c.command = "incr";
  c.table = "t1";
  c.kind = Reply::Kind::kCounter;
  c.row = "r1";
  c.column = "cf:q";
  c.counter = 5;
  EXPECT_EQ(FormatJson(c), "{\"command\":\"incr\",\"table\":\"t1\",\"row\":\"r1\",\"column\":\"cf:q\",\"value\":5}\n");
  c.counter.reset();
  EXPECT_EQ(FormatJson(c),
            "{\"command\":\"incr\",\"table\":\"t1\",\"row\":\"r1\",\"column\":\"cf:q\",\"value\":null}\n");

  Reply l;
  l.command = "list";
  l.kind = Reply::Kind::kList;
  l.tables = {"a", "b\"c"};
  EXPECT_EQ(FormatJson(l), "{\"command\":\"list\",\"tables\":[\"a\",\"b\\\"c\"]}\n");

  Reply n;
  n.command = "count";
  n.table = "t";
  n.kind = Reply::Kind::kCount;
  n.count = 3;
  EXPECT_EQ(FormatJson(n), "{\"command\":\"count\",\"table\":\"t\",\"count\":3}\n");

  Reply e;
  e.command = "exists";
  e.table = "t";
  e.kind = Reply::Kind::kExists;
  EXPECT_EQ(FormatJson(e), "{\"command\":\"exists\",\"table\":\"t\",\"exists\":false}\n");

  Reply h;
  h.command = "help";
  h.kind = Reply::Kind::kText;
  h.text = "a\nb";
  EXPECT_EQ(FormatJson(h), "{\"command\":\"help\",\"text\":\"a\\nb\"}\n");
}

TEST(FormatJsonTest, DescribeAndStatus) {
  Reply r;
  r.command = "describe";
  r.table = "t1";
  r.kind = Reply::Kind::kDescribe;
  r.info.name = "t1";
  FamilySettings f;
  f.name = "cf";
  r.info.families.push_back(f);
  EXPECT_EQ(FormatJson(r),
            "{\"command\":\"describe\",\"table\":\"t1\",\"enabled\":true,\"families\":[{\"NAME\":\"cf\","
            "\"VERSIONS\":1,\"MIN_VERSIONS\":0,\"TTL\":0,\"BLOCKSIZE\":65536,\"DATA_BLOCK_ENCODING\":\"NONE\","
            "\"COMPRESSION\":\"NONE\",\"BLOOMFILTER\":\"ROW\",\"CHECKSUM_TYPE\":\"CRC32C\","
            "\"BYTES_PER_CHECKSUM\":16384,\"BLOCKCACHE\":true,\"CACHE_ENCODED\":false}]}\n");

  Reply s;
  s.command = "status";
  s.kind = Reply::Kind::kStatus;
  s.status.version = "1";
  s.status.mode = "standalone";
  s.status.tables.push_back(TableStatus{"t", true, 1, 2, 3, 4});
  EXPECT_EQ(FormatJson(s),
            "{\"command\":\"status\",\"version\":\"1\",\"mode\":\"standalone\",\"uptime_seconds\":0,"
            "\"requests\":0,\"block_cache_bytes\":0,\"block_cache_capacity\":0,\"resident_bytes\":0,"
            "\"verbs\":\"\",\"verbs_enabled\":false,\"verbs_endpoints\":0,\"verbs_requests\":0,"
            "\"verbs_connects_accepted\":0,\"verbs_connects_rejected\":0,\"verbs_malformed_frames\":0,"
            "\"verbs_sessions\":0,\"connections_accepted\":0,\"connections_refused\":0,\"open_descriptors\":0,"
            "\"descriptor_limit\":0,"
            "\"tables\":[{\"name\":\"t\",\"enabled\":true,\"memstore_bytes\":1,\"store_files\":2,\"flushes\":3,"
            "\"compactions\":4,\"failed_open\":false,\"error\":\"\",\"log_truncated_bytes\":0,\"log_skipped_records\":0,"
            "\"log_skipped_bytes\":0}]}\n");
}

}  // namespace
}  // namespace basalt::shell
