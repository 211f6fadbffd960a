// The shell's command table (names, arity, usage, help) and the Executor that runs a parsed
// command through it. The commands themselves: commands_admin.cc, commands_data.cc,
// commands_queue.cc.
#include "src/tools/shell/commands.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "basalt/family_values.h"
#include "basalt/queue.h"
#include "common/status.h"
#include "src/tools/shell/escape.h"
#include "src/tools/shell/command_args.h"

namespace basalt::shell {
namespace internal {

template <absl::Status (Admin::*method)(const std::string&)>
absl::StatusOr<Reply> CmdAdminOnTable(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  absl::Status s = (c.conn->GetAdmin().get()->*method)(table);
  if (s.code() == absl::StatusCode::kFailedPrecondition && c.cmd.name == "drop") {
    return absl::FailedPreconditionError(
        absl::StrCat("Table ", ToStringBinary(table), " is enabled. Disable it first. (", s.message(), ")"));
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, table, s));
  return Done(c, table);
}

// truncate and (with `preserve`) truncate_preserve, as HBase's: disable, then the server drops
// it and makes it again with the same descriptor, in one region or in the regions it had (their
// start keys), keeping its grants and quotas (Admin::TruncateTable).
template <bool preserve>
absl::StatusOr<Reply> CmdTruncate(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  std::unique_ptr<Admin> admin = c.conn->GetAdmin();
  auto info = admin->DescribeTable(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, info.status()));
  Reply r = Done(c, table);
  r.messages.push_back(absl::StrCat("Truncating '", ToStringBinary(table), "' table (it may take a while):"));
  if (info->enabled) {
    r.messages.push_back("Disabling table...");
    BASALT_RETURN_IF_ERROR(Wrap(c, table, admin->DisableTable(table)));
  }
  r.messages.push_back("Truncating table...");
  BASALT_RETURN_IF_ERROR(Wrap(c, table, admin->TruncateTable(table, preserve)));
  return r;
}

absl::StatusOr<Reply> CmdHelp(Ctx& c) {
  std::string topic;
  if (!c.cmd.args.empty()) {
    const Value& v = c.cmd.args[0];
    if (v.kind == Value::Kind::kName) {
      topic = v.str;
    } else {
      BASALT_ASSIGN_OR_RETURN(topic, Bytes(c, v, "a command name", false));
    }
  }
  auto text = HelpText(topic);
  if (!text.ok()) return absl::InvalidArgumentError(std::string(text.status().message()));
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kText;
  r.text = *std::move(text);
  return r;
}

namespace {

// ---------------------------------------------------------------------------------------------
// The command table

struct Spec {
  const char* name;
  const char* group;
  size_t min_args;
  size_t max_args;  // SIZE_MAX: any number
  const char* usage;
  std::string help;
  absl::StatusOr<Reply> (*run)(Ctx&);
};

// "NAME (V1, V2, ...)" for a family setting, from basalt/family_values.h.
std::string SettingHelp(FamilySetting s) {
  std::vector<std::string> names;
  for (std::string_view n : SettingValues(s)) names.emplace_back(n);
  return absl::StrCat(AV(FamilySettingName(s)), " (", absl::StrJoin(names, ", "), ")");
}

constexpr size_t kAny = SIZE_MAX;

const std::vector<Spec>& Specs() {
  static const std::vector<Spec> specs = {
      {"help", "general", 0, 1, "help ['command']",
       "Lists the commands, or shows one command's usage: help 'get'.", CmdHelp},
      {"status", "general", 0, 1, "status ['simple' | 'summary' | 'detailed' | 'replication']",
       "Shows the server's state, its verbs transport included; 'detailed' adds a line per table and,\n"
       "from a cluster's master, each region server with its load and regions; 'replication' each\n"
       "replication peer's shipping (state, age of the last edit shipped, log not shipped yet).",
       CmdStatus},
      {"exit", "general", 0, 1, "exit [code]", "Leaves the shell (a script stops here with the given exit code).",
       nullptr},
      {"quit", "general", 0, 1, "quit [code]", "Same as exit.", nullptr},

      {"create", "ddl", 1, kAny,
       "create 't1', 'cf1' [, 'cf2', ...]  |  create 't1', {NAME => 'cf', VERSIONS => 3, ...} [, {...}]\n"
       "  [, SPLITS => ['k1', 'k2', ...]  |  , {NUMREGIONS => n, SPLITALGO => 'HexStringSplit' | 'UniformSplit'}]\n"
       "  [, MAX_FILESIZE => bytes]",
       absl::StrCat("Creates a table with the given column families. Family settings: VERSIONS (1), MIN_VERSIONS (0),\n"
                    "TTL (seconds or 'FOREVER'), BLOCKSIZE (65536), ",
                    SettingHelp(FamilySetting::kEncoding), ",\n", SettingHelp(FamilySetting::kCompression), ", ",
                    SettingHelp(FamilySetting::kBloom), ",\n", SettingHelp(FamilySetting::kChecksum),
                    ", BYTES_PER_CHECKSUM (16384), BLOCKCACHE (true),\n"
                    "CACHE_ENCODED (false). Examples:\n"
       "  create 't1', 'cf'\n"
       "  create 't1', {NAME => 'cf', VERSIONS => 3, TTL => 86400, COMPRESSION => 'SNAPPY'}\n"
       "  create 't1', NAME => 'cf', DATA_BLOCK_ENCODING => 'FAST_DIFF'\n"
       "Pre-splitting, as HBase's shell: SPLITS gives the row keys where regions start (here 4 regions:\n"
       "[, g), [g, n), [n, t), [t, )); NUMREGIONS with SPLITALGO cuts the key space evenly, for row keys\n"
       "of 8 hex digits (HexStringSplit) or of uniformly random bytes (UniformSplit):\n"
       "  create 't1', 'cf', SPLITS => ['g', 'n', 't']\n"
       "  create 't1', 'cf', {NUMREGIONS => 16, SPLITALGO => 'HexStringSplit'}\n"
       "MAX_FILESIZE => bytes sets the size past which the table's regions split on their own (HBase's;\n"
       "the server's region_max_size, 10 GiB, by default; a table's only region splits early, past twice\n"
       "the memstore flush size):\n"
       "  create 't1', 'cf', MAX_FILESIZE => 1073741824\n"
       "Settings Basalt has none for are kept and shown back, as HBase's (IN_MEMORY, REPLICATION_SCOPE,\n"
       "METADATA and CONFIGURATION of a family or of the table); the server refuses the few it would not\n"
       "honour (KEEP_DELETED_CELLS => true, ...):\n"
       "  create 't1', {NAME => 'cf', IN_MEMORY => true}, METADATA => {'OWNER' => 'ops'}"),
       CmdCreate},
      {"alter", "ddl", 2, kAny,
       "alter 't1', NAME => 'cf', VERSIONS => 5  |  alter 't1', 'cf2'  |  alter 't1', 'delete' => 'cf'\n"
       "  |  alter 't1', NAME => 'cf', METHOD => 'delete'  |  alter 't1', MAX_FILESIZE => bytes",
       "Changes a table's families, as HBase's alter: a family named with settings gets them (its other\n"
       "settings stay), a new one is added, 'delete' drops one; several changes may follow each other.\n"
       "The table's regions reopen with the new families one after another (clients retry meanwhile):\n"
       "  alter 't1', {NAME => 'cf', VERSIONS => 5, TTL => 86400}, {NAME => 'cf2'}\n"
       "METADATA => {...} and CONFIGURATION => {...} set kept settings (a change of those alone reopens\n"
       "no region):\n"
       "  alter 't1', METADATA => {'OWNER' => 'ops'}",
       CmdAlter},
      {"describe", "ddl", 1, 1, "describe 't1'",
       "Shows a table's state, its region count and its families' settings.", CmdDescribe},
      {"desc", "ddl", 1, 1, "desc 't1'", "Same as describe.", CmdDescribe},
      {"list", "ddl", 0, 1, "list ['regex']", "Lists the tables, or those whose whole name matches the regex.",
       CmdList},
      {"list_regions", "ddl", 1, 1, "list_regions 't1'",
       "Lists a table's regions in row order: the server serving each, its name (table,start key,id.encoded\n"
       "name.), its rows [START_KEY, END_KEY) (an empty END_KEY: to the end), SIZE (bytes of its block files;\n"
       "memstores not counted), REQ (reads and writes since it opened), STOREFILES and STATE. The regions also\n"
       "are rows of the system table basalt:meta: scan 'basalt:meta'.",
       CmdListRegions},
      {"exists", "ddl", 1, 1, "exists 't1'", "Says whether a table exists.", CmdExists},
      {"is_enabled", "ddl", 1, 1, "is_enabled 't1'", "true if the table is enabled.", CmdIsEnabled},
      {"is_disabled", "ddl", 1, 1, "is_disabled 't1'", "true if the table is disabled.", CmdIsEnabled},
      {"disable", "ddl", 1, 1, "disable 't1'", "Disables a table (needed before drop).",
       CmdAdminOnTable<&Admin::DisableTable>},
      {"enable", "ddl", 1, 1, "enable 't1'", "Enables a disabled table.", CmdAdminOnTable<&Admin::EnableTable>},
      {"drop", "ddl", 1, 1, "drop 't1'", "Deletes a disabled table and all its data.",
       CmdAdminOnTable<&Admin::DropTable>},
      {"truncate", "ddl", 1, 1, "truncate 't1'",
       "Disables, drops and re-creates a table with the same families and settings, in one region.",
       CmdTruncate<false>},
      {"truncate_preserve", "ddl", 1, 1, "truncate_preserve 't1'",
       "As truncate, but the table is created again with the region boundaries it had (HBase's).",
       CmdTruncate<true>},

      {"put", "dml", 4, 5, "put 't1', 'r1', 'cf:q', 'value' [, ts]",
       "Writes a cell; without ts the server's clock sets the timestamp. Binary bytes in \"double\n"
       "quotes\": put 't1', \"r\\x00\\x01\", 'cf:q', \"\\xff\"",
       CmdPut},
      {"get", "dml", 2, kAny,
       "get 't1', 'r1' [, 'cf:q' | 'cf' | ['cf:q', 'cf2'] | {COLUMN => ..., VERSIONS => n, TIMERANGE => [min, max],"
       " TIMESTAMP => ts, FILTER => \"...\"}]",
       "Reads a row (a column 'cf' alone means the whole family). TIMERANGE is [min, max). FILTER is in\n"
       "HBase's filter language (see help 'scan'). Examples:\n"
       "  get 't1', 'r1'\n"
       "  get 't1', 'r1', 'cf:a', 'cf:b'\n"
       "  get 't1', 'r1', {COLUMN => 'cf:a', VERSIONS => 3, TIMERANGE => [0, 1700000000000]}\n"
       "  get 't1', 'r1', {FILTER => \"ValueFilter(=, 'binary:abc')\"}",
       CmdGet},
      {"scan", "dml", 1, 2,
       "scan 't1' [, {STARTROW => 'a', STOPROW => 'z', ROWPREFIXFILTER => 'p', LIMIT => n, COLUMNS => [...],"
       " VERSIONS => n, TIMERANGE => [min, max], TIMESTAMP => ts, CACHE => n, CACHE_BLOCKS => bool,"
       " FILTER => \"...\", REVERSED => bool}]",
       "Reads rows in order; STARTROW is inclusive, STOPROW exclusive. REVERSED => true reads them in\n"
       "descending order, from STARTROW (inclusive) down to STOPROW (exclusive). ROWPREFIXFILTER reads the\n"
       "rows starting with the prefix, in either order, in place of STARTROW and STOPROW (as HBase's).\n"
       "FILTER is evaluated by the server, in HBase's filter language: PrefixFilter('p'), RowFilter(op, 'cmp'),\n"
       "QualifierFilter, ValueFilter, ColumnPrefixFilter('p'), ColumnRangeFilter('min', bool, 'max', bool),\n"
       "ColumnPaginationFilter(limit, offset), TimestampsFilter(ts, ...), KeyOnlyFilter(), FirstKeyOnlyFilter(),\n"
       "SingleColumnValueFilter('cf', 'q', op, 'cmp'[, filterIfMissing, latestVersionOnly]), PageFilter(n),\n"
       "MultiRowRangeFilter('start', bool, 'stop', bool, ...), joined by AND and OR, with parentheses; op is\n"
       "one of < <= = != >= >, cmp one of 'binary:bytes', 'binaryprefix:bytes', 'regexstring:re',\n"
       "'substring:s'; '' is a quote inside quotes. Examples:\n"
       "  scan 't1'\n"
       "  scan 't1', {STARTROW => 'a', STOPROW => 'n', COLUMNS => ['cf:q'], LIMIT => 10}\n"
       "  scan 't1', {FILTER => \"(PrefixFilter ('row2') AND (QualifierFilter (>=, 'binary:xyz'))) AND\n"
       "                        (TimestampsFilter ( 123, 456))\"}\n"
       "  scan 't1', {REVERSED => true}\n"
       "The system table basalt:meta (HBase's hbase:meta) has a row per region, 'table,start key,id', with\n"
       "info:startkey, info:endkey, info:id, info:encoded, info:state (OPEN, CLOSED, FAILED_OPEN, or SPLIT and\n"
       "MERGED for old regions kept until nothing reads their files) and info:server; clients find regions\n"
       "through it. The regions of t1:\n"
       "  scan 'basalt:meta', {STARTROW => 't1,', STOPROW => 't1-'}",
       CmdScan},
      {"delete", "dml", 3, 4, "delete 't1', 'r1', 'cf:q' [, ts]",
       "Deletes the newest version of a column, or exactly the version at ts. A family alone ('cf')\n"
       "deletes every cell of the family (at or below ts).",
       CmdDelete},
      {"deleteall", "dml", 2, 4, "deleteall 't1', 'r1' [, 'cf:q' | 'cf' [, ts]]",
       "Deletes a whole row, or every version of a column (or family) at or below ts.", CmdDelete},
      {"incr", "dml", 3, 4, "incr 't1', 'r1', 'cf:q' [, n]",
       "Adds n (default 1) to a counter (an 8-byte big-endian long) and prints the new value.", CmdIncr},
      {"get_counter", "dml", 3, 3, "get_counter 't1', 'r1', 'cf:q'", "Prints a counter's value.", CmdGetCounter},
      {"append", "dml", 4, 4, "append 't1', 'r1', 'cf:q', 'value'",
       "Appends bytes to a cell's value and prints the result.", CmdAppend},
      {"count", "dml", 1, 2, "count 't1' [, {INTERVAL => 1000, CACHE => n, STARTROW => .., STOPROW => .., FILTER => \"...\"}]",
       "Counts rows, printing progress every INTERVAL rows.", CmdCount},

      {"create_queue", "queues", 1, 2, "create_queue 'q' [, {PARTITIONS => 12, SALT_BUCKETS => 4}]",
       "Creates a transactional queue (Basalt's, after CDAP's on HBase): a table pre-split into SALT_BUCKETS\n"
       "regions; each consumer group's events spread over PARTITIONS partitions. Then queue_configure it.",
       CmdCreateQueue},
      {"queue_configure", "queues", 1, kAny,
       "queue_configure 'q', {NAME => 'g', SIZE => 2 [, PARTITIONING => 'ROUND_ROBIN' | 'HASH' | 'FIFO']}, ...",
       "Sets the queue's consumer groups, in one transaction: each event goes to one consumer of every group.\n"
       "A group named before keeps its events (a resize); a new one sees events from now on; one left out\n"
       "is removed. HASH partitions by the events' KEY; FIFO lets every consumer take from every partition.\n"
       "  queue_configure 'q', {NAME => 'counter', SIZE => 2}, {NAME => 'indexer', SIZE => 3, PARTITIONING => 'HASH'}",
       CmdQueueConfigure},
      {"enqueue", "queues", 2, kAny, "enqueue 'q', 'payload' [, 'payload', ...] [, {KEY => 'k'}]",
       "Enqueues events in one transaction (for every consumer group); KEY is their partitioning key.",
       CmdEnqueue},
      {"dequeue", "queues", 3, 4, "dequeue 'q', 'group', consumer [, max]",
       "Takes up to max (default 10) events for one consumer of a group and commits at once, printing them\n"
       "(row: partition:write pointer:counter). Each event is dequeued once per group.",
       CmdDequeue},
      {"queue_status", "queues", 1, 2, "queue_status 'q' [, {INTERVAL => 1000}]",
       "Per group and consumer: entries left (DEPTH), the oldest one's age (LAG_MS), entries consumed, and\n"
       "consumed and enqueued per second over INTERVAL milliseconds.",
       CmdQueueStatus},

      {"flush", "tools", 1, 1, "flush 't1'", "Writes the table's memstores to block files.",
       CmdAdminOnTable<&Admin::Flush>},
      {"major_compact", "tools", 1, 1, "major_compact 't1'",
       "Rewrites each store into one file, dropping deleted, expired and surplus versions.",
       CmdAdminOnTable<&Admin::MajorCompact>},
      {"split", "tools", 1, 2, "split 't1' [, 'splitrow']  |  split 'REGIONNAME' [, 'splitrow']  |  split 'ENCODED_REGIONNAME'",
       "Splits a table's regions, or one region, in two without copying data (as HBase's split). Without a\n"
       "split row each region splits at the middle of its largest store (a region with too little data stays\n"
       "whole); with one, the region holding that row splits there. The daughters read the parent's files\n"
       "until their compactions rewrite them (at once, in the background); until then they cannot split\n"
       "again. Names come from list_regions. Examples:\n"
       "  split 't1'\n"
       "  split 't1', 'm'\n"
       "  split 't1,,1700000000000', 'g'",
       CmdSplit},
      {"merge_region", "tools", 2, 2, "merge_region 'ENCODED_REGIONNAME', 'ENCODED_REGIONNAME'",
       "Merges two adjacent regions into one without copying data (as HBase's merge_region); full region\n"
       "names work too. The merged region reads both regions' files until its compaction rewrites them.\n"
       "Names come from list_regions. Example:\n"
       "  merge_region '2a7c1f0e9b3d4c5a', '8e1d2c3b4a596877'",
       CmdMergeRegion},
      {"assign", "tools", 1, 1, "assign 'ENCODED_REGIONNAME' | assign 't1'",
       "Opens a region that unassign closed, or one that is FAILED_OPEN, on a server the master picks\n"
       "(HBase's assign; a cluster's master only). Given a table, reopens every FAILED_OPEN region of it\n"
       "once its files are repaired ('status' and 'describe' say why it failed). Examples:\n"
       "  assign '2a7c1f0e9b3d4c5a'\n"
       "  assign 't1'",
       CmdAssign},
      {"unassign", "tools", 1, 2, "unassign 'ENCODED_REGIONNAME' [, true]",
       "Closes a region where it is, flushing, and leaves it closed (HBase 2's unassign): calls on its\n"
       "rows wait and are retried until their deadline, and neither the balancer, a joining server nor\n"
       "a new master opens it, until assign (or enable). The force flag is accepted, as HBase's, and\n"
       "changes nothing. A cluster's master only. Example:\n"
       "  unassign '2a7c1f0e9b3d4c5a'",
       CmdUnassign},
      {"move", "tools", 1, 2, "move 'ENCODED_REGIONNAME' [, 'SERVER_NAME']",
       "Moves a region to a region server of the cluster (as HBase's move; SERVER_NAME is host:port or\n"
       "host:port,startcode as status 'detailed' lists them; without it the master picks one). The region\n"
       "closes where it is, flushing, and opens there; calls on it meanwhile wait and are retried.\n"
       "A cluster's master only. Example:\n"
       "  move '2a7c1f0e9b3d4c5a', '10.0.0.7:16020'",
       CmdMove},
      {"balancer", "tools", 0, 0, "balancer",
       "Runs the balancer once (as HBase's, by region count): regions move from the servers holding the\n"
       "most to those holding the fewest until no two differ by more than one. Prints true when it moved\n"
       "regions. The master also runs it on its own (basalt-master --balancer_period_ms, 5 minutes).",
       CmdBalancer},
      {"snapshot", "snapshots", 2, 3, "snapshot 't1', 'snapshot1' [, {TTL => seconds}]",
       "Takes a snapshot of a table (HBase's): each region's memstore is flushed and its block files are\n"
       "named again under the snapshot, no byte copied, so it takes a time that grows with the table's\n"
       "files, not their size, and holds every write acknowledged before it. Writes go on meanwhile.\n"
       "It outlives the table's compactions, truncate and drop. TTL deletes it once that old (-1 or 0:\n"
       "kept until deleted); SKIP_FLUSH is accepted and changes nothing. Needs A on the table.\n"
       "  snapshot 't1', 't1-before-migration'\n"
       "  snapshot 't1', 'nightly', {TTL => 604800}",
       CmdSnapshot},
      {"list_snapshots", "snapshots", 0, 1, "list_snapshots ['regex']",
       "Lists the snapshots, or those whose whole name matches the regex (HBase's): each one's table,\n"
       "creation time and TTL, its regions, files and their SIZE, and ONLY, the bytes no table or other\n"
       "snapshot shares with it (what deleting it frees).\n"
       "  list_snapshots 'nightly.*'",
       CmdListSnapshots},
      {"list_table_snapshots", "snapshots", 1, 2, "list_table_snapshots 'table regex' [, 'snapshot regex']",
       "Lists the snapshots of the tables whose whole name matches the first regex (HBase's).\n"
       "  list_table_snapshots 't1'",
       CmdListSnapshots},
      {"clone_snapshot", "snapshots", 2, 3, "clone_snapshot 'snapshot1', 'new_table' [, {RESTORE_ACL => true}]",
       "Makes a new table holding exactly the snapshot's rows, with its families and region boundaries\n"
       "(HBase's). No byte is copied: its regions' files are the snapshot's, named again, until its\n"
       "compactions rewrite them. Writes to it never change the snapshot. Needs global A (or be the\n"
       "snapshot's owner and clone it under its table's own name). RESTORE_ACL => true gives the new table\n"
       "the grants the snapshot's table had when it was taken.\n"
       "  clone_snapshot 't1-before-migration', 't1_copy'",
       CmdCloneSnapshot},
      {"restore_snapshot", "snapshots", 1, 2, "restore_snapshot 'snapshot1' [, {RESTORE_ACL => true}]",
       "Puts the snapshot's table back as the snapshot holds it, families and regions too (HBase's): the\n"
       "table must be disabled, and stays so until enable. What it held since is gone. A table dropped\n"
       "since comes back enabled. Needs global A (or be the snapshot's owner with A on the table).\n"
       "RESTORE_ACL => true gives again the grants the table had when the snapshot was taken.\n"
       "  disable 't1'; restore_snapshot 't1-before-migration'; enable 't1'",
       CmdRestoreSnapshot},
      {"delete_snapshot", "snapshots", 1, 1, "delete_snapshot 'snapshot1'",
       "Deletes a snapshot; the bytes only it held are freed. Needs global A.", CmdDeleteSnapshot},
      {"delete_all_snapshot", "snapshots", 1, 1, "delete_all_snapshot 'regex'",
       "Deletes every snapshot whose whole name matches the regex, after listing them and asking (HBase's):\n"
       "the answer is read from the terminal, or from stdin in a script (`echo y | basalt -e ...`; in a\n"
       "script read from stdin, its next line). Each deletion is reported; one that fails does not stop\n"
       "the others, and the command then fails.\n"
       "  delete_all_snapshot 'nightly-2026-0[1-6].*'",
       CmdDeleteSnapshots},
      {"delete_table_snapshots", "snapshots", 1, 2, "delete_table_snapshots 'table regex' [, 'snapshot regex']",
       "Deletes the snapshots of the tables whose whole name matches the first regex (and whose own name\n"
       "matches the second), after listing them and asking, as delete_all_snapshot (HBase's).\n"
       "  delete_table_snapshots 't1', 'nightly.*'",
       CmdDeleteSnapshots},
      {"add_peer", "replication", 2, 2,
       "add_peer 'id', CLUSTER_KEY => 'zk1,zk2:2181:/hbase' [, STATE => 'DISABLED'] [, TABLE_CFS => {'t1' => [], 't2' => ['cf1']}]",
       "Adds a replication peer (HBase's): a cluster, Basalt's or HBase's, that this server's log's edits\n"
       "are shipped to, found through its ZooKeeper (its region servers under <parent>/rs). It gets the\n"
       "edits made from now on of the families with REPLICATION_SCOPE => 1 (enable_table_replication),\n"
       "of TABLE_CFS's tables only when given. Added DISABLED, its edits are kept and shipped once it is\n"
       "enabled: copy what existed first (snapshot and export), then enable_peer. A standalone server's;\n"
       "needs global A.\n"
       "  add_peer 'dr', CLUSTER_KEY => 'zk-b1,zk-b2,zk-b3:2181:/hbase'",
       CmdAddPeer},
      {"remove_peer", "replication", 1, 1, "remove_peer 'id'",
       "Removes a replication peer: nothing more is shipped to it, and the log it held is let go.", CmdPeerSwitch},
      {"enable_peer", "replication", 1, 1, "enable_peer 'id'",
       "Ships to the peer again, from where it stopped (every edit since it was disabled or added).", CmdPeerSwitch},
      {"disable_peer", "replication", 1, 1, "disable_peer 'id'",
       "Stops shipping to the peer; its edits are kept for it (up to replication_max_held_log).", CmdPeerSwitch},
      {"list_peers", "replication", 0, 0, "list_peers",
       "Lists the replication peers: id, cluster key, state and TABLE_CFS (status 'replication' shows how\n"
       "far each has shipped).",
       CmdListPeers},
      {"enable_table_replication", "replication", 1, 1, "enable_table_replication 't1'",
       "Sets REPLICATION_SCOPE => 1 on every family of the table, so its edits are shipped to the peers.\n"
       "The table must exist on each peer, with the same families (create it there, or clone a snapshot).",
       CmdTableReplication},
      {"disable_table_replication", "replication", 1, 1, "disable_table_replication 't1'",
       "Sets REPLICATION_SCOPE => 0 on every family of the table: its edits are no longer shipped.",
       CmdTableReplication},
      {"grant", "security", 2, 5, "grant 'user' | '@group', 'RWXCA' [, '@namespace' | 't1' [, 'cf' [, 'q']]]",
       "Grants permissions (as HBase's AccessController): R read, W write, X exec, C create/alter/drop,\n"
       "A admin; on everything (no scope), a namespace ('@default' holds every user table), a table, a\n"
       "family or a column. It replaces what the user held at exactly that scope, at once and for good\n"
       "(kept in basalt:acl). Needs A on the scope. Examples:\n"
       "  grant 'bob', 'RW', 't1'\n"
       "  grant 'bob', 'W', 't1', 'cf'\n"
       "  grant '@ops', 'C', '@default'",
       CmdGrant},
      {"revoke", "security", 1, 4, "revoke 'user' | '@group' [, '@namespace' | 't1' [, 'cf' [, 'q']]]",
       "Removes what the user holds at exactly that scope (as HBase's). Example:\n"
       "  revoke 'bob', 't1'",
       CmdRevoke},
      {"set_quota", "quotas", 1, 1,
       "set_quota TYPE => THROTTLE, USER => 'u' | NAMESPACE => 'ns' | TABLE => 't' [, THROTTLE_TYPE => READ | WRITE], "
       "LIMIT => '10req/sec' | NONE",
       "Limits the rate of calls or bytes of a user, namespace or table (a user's may be on one table or\n"
       "namespace), as HBase's set_quota: each server refuses calls past it with RESOURCE_EXHAUSTED\n"
       "saying how long to wait. LIMIT is N req or N B, K, M, G per sec, min, hour or day; NONE removes.\n"
       "Needs global A.\n"
       "  set_quota TYPE => THROTTLE, USER => 'bob', LIMIT => '100req/sec'\n"
       "  set_quota TYPE => THROTTLE, THROTTLE_TYPE => WRITE, USER => 'bob', TABLE => 't1', LIMIT => '10M/sec'\n"
       "  set_quota TYPE => THROTTLE, TABLE => 't1', LIMIT => '1000req/sec'\n"
       "  set_quota TYPE => THROTTLE, USER => 'bob', LIMIT => NONE",
       CmdSetQuota},
      {"list_quotas", "quotas", 0, 0, "list_quotas", "Lists every quota. Needs global A.\n  list_quotas",
       CmdListQuotas},
      {"create_namespace", "namespace", 1, 2, "create_namespace 'ns' [, {'key' => 'value', ...}]",
       "Makes a namespace: its tables are named 'ns:t' (a table named without one is in 'default').\n"
       "Settings are kept as given. Needs global A.\n"
       "  create_namespace 'app'\n"
       "  create 'app:events', 'e'",
       CmdCreateNamespace},
      {"alter_namespace", "namespace", 2, 2,
       "alter_namespace 'ns', {METHOD => 'set', 'key' => 'value'} | {METHOD => 'unset', NAME => 'key'}",
       "Sets or removes a namespace's settings. Needs global A.", CmdAlterNamespace},
      {"describe_namespace", "namespace", 1, 1, "describe_namespace 'ns'",
       "Shows a namespace and its settings. Needs A on it.", CmdDescribeNamespace},
      {"drop_namespace", "namespace", 1, 1, "drop_namespace 'ns'",
       "Drops a namespace that holds no table ('default', 'basalt' and 'hbase' stay). Needs global A.",
       CmdDropNamespace},
      {"list_namespace", "namespace", 0, 1, "list_namespace ['regex']",
       "Lists the namespaces you hold A on (all, to a global admin), or those whose whole name matches.",
       CmdListNamespace},
      {"list_namespace_tables", "namespace", 1, 1, "list_namespace_tables 'ns'",
       "Lists a namespace's tables, by their names within it. Needs A on it.", CmdListNamespaceTables},
      {"user_permission", "security", 0, 1, "user_permission ['@namespace' | 't1']",
       "Lists the grants on everything, or at or below a namespace or table. Needs A there (anyone may\n"
       "see their own with the Admin API). Example:\n"
       "  user_permission 't1'",
       CmdUserPermission},
      {"whoami", "security", 0, 0, "whoami", "Shows the user the server takes this shell for, and their groups.",
       CmdWhoAmI},
      {"verbs_disable", "tools", 0, 0, "verbs_disable",
       "Switches the server's RDMA verbs transport off (Basalt's own; HBase has none): its endpoints\n"
       "are disconnected and clients send Get/Put over gRPC, e.g. for NIC maintenance. Fails with\n"
       "FAILED_PRECONDITION on a server that serves no verbs transport (see 'status').",
       CmdVerbsSwitch},
      {"verbs_enable", "tools", 0, 0, "verbs_enable",
       "Switches the server's RDMA verbs transport back on after verbs_disable; connected clients go\n"
       "back to it at their next verbs retry (ConnectionOptions::verbs_retry, 5 s by default).",
       CmdVerbsSwitch},
  };
  return specs;
}

const Spec* FindSpec(std::string_view name) {
  for (const Spec& s : Specs()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string ArityText(const Spec& s) {
  if (s.max_args == kAny) return absl::StrCat(s.min_args, " or more");
  if (s.min_args == s.max_args) return absl::StrCat(s.min_args);
  if (s.max_args == s.min_args + 1) return absl::StrCat(s.min_args, " or ", s.max_args);
  return absl::StrCat(s.min_args, " to ", s.max_args);
}

}  // namespace
}  // namespace internal

using internal::ArityText;
using internal::Ctx;
using internal::FindSpec;
using internal::Spec;
using internal::Specs;

bool IsCommand(std::string_view name) { return FindSpec(name) != nullptr; }

const std::vector<std::string>& CommandNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Spec& s : Specs()) v.push_back(s.name);
    std::sort(v.begin(), v.end());
    return v;
  }();
  return names;
}

absl::StatusOr<std::string> HelpText(std::string_view command) {
  if (!command.empty()) {
    const Spec* s = FindSpec(command);
    if (s == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("no help for '", AV(command), "': not a command. Type 'help' for the list of commands."));
    }
    return absl::StrCat("Usage: ", s->usage, "\n", s->help, "\n");
  }
  std::string out =
      "Basalt shell: HBase shell commands over Basalt.\n"
      "Type 'help \"COMMAND\"' for a command's usage, e.g. help 'get'.\n\n"
      "COMMAND GROUPS:\n";
  for (const char* group : {"general", "ddl", "namespace", "dml", "queues", "snapshots", "replication", "tools", "security", "quotas"}) {
    std::vector<std::string> names;
    for (const Spec& s : Specs()) {
      if (std::string_view(s.group) == group) names.push_back(s.name);
    }
    absl::StrAppend(&out, "  Group name: ", group, "\n  Commands: ", absl::StrJoin(names, ", "), "\n\n");
  }
  out +=
      "SHELL USAGE:\n"
      "Commands are 'name arg, arg, ...', several per line separated by ';'. Quote table, row and column\n"
      "names: 'single' quotes are literal, \"double\" quotes understand \\n \\t \\\\ \\\" and \\xNN for binary\n"
      "bytes. Options go in hashes, {KEY => value, ...}, lists in arrays, ['a', 'b'].\n"
      "Output shows bytes as HBase's Bytes.toStringBinary does: printable ASCII as is, others as \\xNN.\n"
      "Start with --format=json for one JSON object per command.\n";
  return out;
}

Executor::Executor(Connection* conn, OutputFormat format, std::ostream* out, bool show_timing)
    : conn_(conn), format_(format), out_(out), show_timing_(show_timing) {}

absl::StatusOr<Reply> Executor::Run(const Command& cmd) {
  const Spec* spec = FindSpec(cmd.name);
  if (spec == nullptr || spec->run == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("Unknown command '", cmd.name, "'. Type 'help' for the list of commands."));
  }
  if (cmd.args.size() < spec->min_args || cmd.args.size() > spec->max_args) {
    return absl::InvalidArgumentError(absl::StrCat("wrong number of arguments for '", cmd.name, "' (given ",
                                                   cmd.args.size(), ", expected ", ArityText(*spec),
                                                   ")\nUsage: ", spec->usage));
  }
  Ctx ctx{conn_, cmd, format_, out_, confirm_ ? &confirm_ : nullptr};
  return spec->run(ctx);
}

absl::Status Executor::Execute(const Command& cmd) {
  absl::Time start = absl::Now();
  BASALT_ASSIGN_OR_RETURN(Reply reply, Run(cmd));
  if (format_ == OutputFormat::kJson) {
    *out_ << FormatJson(reply);
  } else {
    *out_ << FormatHuman(reply);
    if (show_timing_) *out_ << FormatTook(absl::Now() - start);
  }
  out_->flush();
  return absl::OkStatus();
}

}  // namespace basalt::shell