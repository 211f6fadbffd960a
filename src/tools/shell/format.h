// Output of shell commands: a Reply (what a command produced) printed either as HBase shell
// prints it, or as one JSON object per command on its own line. Stateless; safe from any thread.
//
// JSON shapes (every object has "command"; table commands also "table"):
//   get, scan      {"rows":[{"row":"r1","cells":[{"family":"cf","qualifier":"q","timestamp":1,"value":"v"}]}]}
//   incr, get_counter  {"row":"r1","column":"cf:q","value":5}   (value null: no counter there)
//   append         {"row":"r1","column":"cf:q","value":"..."}
//   count          {"count":3}
//   describe       {"enabled":true,"families":[{"NAME":"cf","VERSIONS":1,...}]}   (create's names)
//   list           {"tables":["t1"]}
//   exists         {"exists":true}
//   is_enabled, is_disabled  {"enabled":true}
//   status         {"version":..,"mode":..,...,"verbs":"off: ...","verbs_enabled":false,"verbs_endpoints":0,
//                   ...,"tables":[{"name":..,...}]}
//   help           {"text":"..."}
//   anything else  {"ok":true}
// Byte strings are JSON strings: UTF-8 as is, other bytes as \u00XX (see escape.h).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "basalt/client.h"

namespace basalt::shell {

enum class OutputFormat { kHuman, kJson };

struct Reply {
  enum class Kind { kDone, kRows, kCounter, kAppend, kCount, kDescribe, kList, kExists, kEnabled, kStatus, kText, kRegions, kSnapshots };

  std::string command;
  std::string table;  // empty for commands without one
  Kind kind = Kind::kDone;

  std::vector<std::string> messages;  // human output only, printed first ("Created table t1")

  std::vector<Result> rows;  // kRows
  bool get_layout = false;   // kRows: get's COLUMN/CELL layout (one row) instead of scan's ROW/COLUMN+CELL

  std::string row;                 // kCounter, kAppend
  std::string column;              // kCounter, kAppend: "cf:q"
  std::optional<int64_t> counter;  // kCounter; nullopt: no counter at that cell
  std::string value;               // kAppend: the new value

  uint64_t count = 0;                // kCount
  TableInfo info;                    // kDescribe
  std::vector<std::string> tables;   // kList
  std::set<std::string> failed_open;  // kList: the tables among them that are FAILED_OPEN
  bool flag = false;                 // kExists: exists; kEnabled: enabled
  ServerStatus status;               // kStatus
  bool detailed = false;             // kStatus: per-table lines
  std::string text;                  // kText
  std::vector<RegionStatus> regions;  // kRegions
  std::vector<SnapshotDescription> snapshots;  // kSnapshots
};

// The human rendering, each line ending in '\n', without the "Took" line.
std::string FormatHuman(const Reply& reply);
// One JSON object and a '\n'.
std::string FormatJson(const Reply& reply);
// "Took 0.0012 seconds\n" (HBase prints four decimals).
std::string FormatTook(absl::Duration elapsed);

// HBase's TTL rendering: FOREVER, "30 SECONDS", "90 SECONDS (1 MINUTE 30 SECONDS)".
std::string HumanTtl(int64_t seconds);
// A family in describe's style: {NAME => 'cf', VERSIONS => '1', ...}.
std::string DescribeFamily(const FamilySettings& f);

}  // namespace basalt::shell
