// The shell's commands in parts, internal to the shell: what each command is given (Ctx), the
// argument helpers every command uses (command_args.cc), and the commands, by group:
// commands_admin.cc (tables, regions, security, quotas, status), commands_data.cc (put, get,
// scan, ...) and commands_queue.cc; commands.cc holds the command table and the Executor.
#pragma once

#include <functional>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "basalt/client.h"
#include "basalt/family_values.h"
#include "src/tools/shell/commands.h"
#include "src/tools/shell/format.h"
#include "src/tools/shell/parser.h"

namespace basalt::shell::internal {

// What a command runs with.
struct Ctx {
  Connection* conn;
  const Command& cmd;
  OutputFormat format;
  std::ostream* out;  // for progress lines (count) in human mode; nullptr: none
  // Asks the user a yes/no question (delete_all_snapshot's); nullptr: there is no one to ask.
  const std::function<bool(const std::string& question)>* confirm = nullptr;
};

// Where an argument is written: "column C", with " of line L" past the command's first line.
std::string Where(const Ctx& c, const Value& v);
// InvalidArgument: the command wants `what` there (and why not, `detail`).
absl::Status ArgError(const Ctx& c, const Value& v, std::string_view what, std::string_view detail = "");
// A byte string argument. Integers are accepted as their decimal text, as the HBase shell
// does with Ruby's to_s (row 1 is the row "1"), when `allow_int`.
absl::StatusOr<std::string> Bytes(const Ctx& c, const Value& v, std::string_view what, bool allow_int = true);
// An integer; numeric strings ('3') are accepted as HBase's shell accepts them in hashes.
absl::StatusOr<int64_t> Int(const Ctx& c, const Value& v, std::string_view what);
absl::StatusOr<int64_t> IntInRange(const Ctx& c, const Value& v, std::string_view what, int64_t lo, int64_t hi);
absl::StatusOr<bool> Bool(const Ctx& c, const Value& v, std::string_view what);
// One of `allowed` (upper-cased) for the hash key `key`.
absl::StatusOr<std::string> Enum(const Ctx& c, const Value& v, std::string_view key,
                                 const std::vector<std::string_view>& allowed);
// The names a family setting takes (basalt/family_values.h).
std::vector<std::string_view> SettingValues(FamilySetting setting);
// One of a family setting's values, upper-cased.
absl::StatusOr<std::string> Enum(const Ctx& c, const Value& v, FamilySetting setting);
// 'cf:q' -> (cf, q); 'cf' -> (cf, nullopt), the whole family; 'cf:' -> (cf, ""), as HBase.
struct ColumnSpec {
  std::string family;
  std::optional<std::string> qualifier;
};
absl::StatusOr<ColumnSpec> Column(const Ctx& c, const Value& v);
// Adds a column to a Get/Scan column list with the client builders' semantics: a whole-family
// entry absorbs the family's qualifiers.
void AddColumnRef(const ColumnSpec& col, std::vector<ColumnRef>* refs);
// A column or an array of columns.
absl::Status AddColumns(const Ctx& c, const Value& v, std::vector<ColumnRef>* refs);
// InvalidArgument naming a key of `hash` not in `known`.
absl::Status CheckKeys(const Ctx& c, const Value& hash, std::initializer_list<std::string_view> known);
// FILTER => "..." in HBase's filter language (ParseFilterString).
absl::StatusOr<Filter> FilterOption(const Ctx& c, const Value& v);
// TIMERANGE => [min, max): HBase's half-open time range.
absl::Status TimeRange(const Ctx& c, const Value& v, int64_t* min, int64_t* max);
absl::Status Timestamp(const Ctx& c, const Value& v, int64_t* ts);
// A name pattern (list's, list_snapshots'), a regular expression the whole name must match.
class NamePattern {
 public:
  // The pattern in argument `i`, or one matching every name when there are fewer arguments.
  static absl::StatusOr<NamePattern> Arg(const Ctx& c, size_t i);
  absl::StatusOr<bool> Matches(const Ctx& c, const std::string& name) const;

 private:
  std::optional<std::regex> re_;
};
// Errors from the server, in the shell's words (the code is kept).
absl::Status Wrap(const Ctx& c, std::string_view table, const absl::Status& s);
// The reply of a command on `table` that shows nothing but its time.
Reply Done(const Ctx& c, std::string table);
// The command's first argument, a table name.
absl::StatusOr<std::string> TableArg(const Ctx& c);

// The commands (the command table, commands.cc, names them).
absl::StatusOr<Reply> CmdCreate(Ctx& c);
absl::StatusOr<Reply> CmdAlter(Ctx& c);
absl::StatusOr<Reply> CmdDescribe(Ctx& c);
absl::StatusOr<Reply> CmdListRegions(Ctx& c);
absl::StatusOr<Reply> CmdList(Ctx& c);
absl::StatusOr<Reply> CmdExists(Ctx& c);
absl::StatusOr<Reply> CmdIsEnabled(Ctx& c);
absl::StatusOr<Reply> CmdSplit(Ctx& c);
absl::StatusOr<Reply> CmdMergeRegion(Ctx& c);
absl::StatusOr<Reply> CmdMove(Ctx& c);
absl::StatusOr<Reply> CmdUnassign(Ctx& c);
absl::StatusOr<Reply> CmdAssign(Ctx& c);
absl::StatusOr<Reply> CmdBalancer(Ctx& c);
absl::StatusOr<Reply> CmdGrant(Ctx& c);
absl::StatusOr<Reply> CmdRevoke(Ctx& c);
absl::StatusOr<Reply> CmdUserPermission(Ctx& c);
absl::StatusOr<Reply> CmdSetQuota(Ctx& c);
absl::StatusOr<Reply> CmdListQuotas(Ctx& c);
absl::StatusOr<Reply> CmdCreateNamespace(Ctx& c);
absl::StatusOr<Reply> CmdAlterNamespace(Ctx& c);
absl::StatusOr<Reply> CmdDescribeNamespace(Ctx& c);
absl::StatusOr<Reply> CmdDropNamespace(Ctx& c);
absl::StatusOr<Reply> CmdListNamespace(Ctx& c);
absl::StatusOr<Reply> CmdListNamespaceTables(Ctx& c);
absl::StatusOr<Reply> CmdWhoAmI(Ctx& c);
absl::StatusOr<Reply> CmdStatus(Ctx& c);
absl::StatusOr<Reply> CmdVerbsSwitch(Ctx& c);
absl::StatusOr<Reply> CmdSnapshot(Ctx& c);
absl::StatusOr<Reply> CmdAddPeer(Ctx& c);
absl::StatusOr<Reply> CmdPeerSwitch(Ctx& c);
absl::StatusOr<Reply> CmdListPeers(Ctx& c);
absl::StatusOr<Reply> CmdReplicationStatus(Ctx& c);
absl::StatusOr<Reply> CmdTableReplication(Ctx& c);
absl::StatusOr<Reply> CmdListSnapshots(Ctx& c);
absl::StatusOr<Reply> CmdDeleteSnapshot(Ctx& c);
absl::StatusOr<Reply> CmdDeleteSnapshots(Ctx& c);
absl::StatusOr<Reply> CmdCloneSnapshot(Ctx& c);
absl::StatusOr<Reply> CmdRestoreSnapshot(Ctx& c);
absl::StatusOr<Reply> CmdPut(Ctx& c);
absl::StatusOr<Reply> CmdDelete(Ctx& c);
absl::StatusOr<Reply> CmdGet(Ctx& c);
absl::StatusOr<Reply> CmdScan(Ctx& c);
absl::StatusOr<Reply> CmdCount(Ctx& c);
absl::StatusOr<Reply> CmdIncr(Ctx& c);
absl::StatusOr<Reply> CmdGetCounter(Ctx& c);
absl::StatusOr<Reply> CmdAppend(Ctx& c);
absl::StatusOr<Reply> CmdCreateQueue(Ctx& c);
absl::StatusOr<Reply> CmdQueueConfigure(Ctx& c);
absl::StatusOr<Reply> CmdEnqueue(Ctx& c);
absl::StatusOr<Reply> CmdDequeue(Ctx& c);
absl::StatusOr<Reply> CmdQueueStatus(Ctx& c);
absl::StatusOr<Reply> CmdHelp(Ctx& c);

}  // namespace basalt::shell::internal
