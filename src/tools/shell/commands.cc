#include "src/tools/shell/commands.h"

#include <algorithm>
#include <functional>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/coding.h"
#include "absl/time/clock.h"
#include "basalt/family_values.h"
#include "basalt/queue.h"
#include "basalt/transaction.h"
#include "common/status.h"
#include "src/tools/shell/escape.h"

namespace basalt::shell {
namespace {

// ---------------------------------------------------------------------------------------------
// Arguments

struct Ctx {
  Connection* conn;
  const Command& cmd;
  OutputFormat format;
  std::ostream* out;  // for progress lines (count) in human mode; nullptr: none
};

// Where an argument is written: "column C", with " of line L" past the command's first line.
std::string Where(const Ctx& c, const Value& v) {
  std::string at = absl::StrCat("column ", v.column);
  if (c.cmd.line > 1 || v.line != c.cmd.line) absl::StrAppend(&at, " of line ", v.line);
  return at;
}

absl::Status ArgError(const Ctx& c, const Value& v, std::string_view what, std::string_view detail = "") {
  std::string msg = absl::StrCat(AV(c.cmd.name), ": expected ", AV(what), ", found ", v.Describe(), " at ", Where(c, v));
  if (v.kind == Value::Kind::kName) absl::StrAppend(&msg, " (quote it: '", v.str, "')");
  if (!detail.empty()) absl::StrAppend(&msg, " ", AV(detail));
  return absl::InvalidArgumentError(msg);
}

// A byte string argument. Integers are accepted as their decimal text, as the HBase shell
// does with Ruby's to_s (row 1 is the row "1"), when `allow_int`.
absl::StatusOr<std::string> Bytes(const Ctx& c, const Value& v, std::string_view what, bool allow_int = true) {
  if (v.is_string()) return v.str;
  if (allow_int && v.is_int()) return absl::StrCat(v.number);
  return ArgError(c, v, what);
}

// An integer; numeric strings ('3') are accepted as HBase's shell accepts them in hashes.
absl::StatusOr<int64_t> Int(const Ctx& c, const Value& v, std::string_view what) {
  if (v.is_int()) return v.number;
  if (v.is_string() && !v.str.empty()) {
    int64_t n = 0;
    bool neg = v.str[0] == '-';
    size_t i = neg ? 1 : 0;
    bool ok = i < v.str.size();
    for (; ok && i < v.str.size(); ++i) {
      char ch = v.str[i];
      if (ch < '0' || ch > '9' || n > (INT64_MAX - (ch - '0')) / 10) ok = false;
      if (ok) n = n * 10 + (ch - '0');
    }
    if (ok) return neg ? -n : n;
  }
  return ArgError(c, v, what);
}

absl::StatusOr<int64_t> IntInRange(const Ctx& c, const Value& v, std::string_view what, int64_t lo, int64_t hi) {
  BASALT_ASSIGN_OR_RETURN(int64_t n, Int(c, v, what));
  if (n < lo || n > hi) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": ", AV(what), " must be between ", lo, " and ",
                                                   hi, ", not ", n));
  }
  return n;
}

absl::StatusOr<bool> Bool(const Ctx& c, const Value& v, std::string_view what) {
  if (v.kind == Value::Kind::kBool) return v.boolean;
  if (v.is_string()) {
    std::string s = absl::AsciiStrToLower(v.str);
    if (s == "true") return true;
    if (s == "false") return false;
  }
  return ArgError(c, v, what);
}

absl::StatusOr<std::string> Enum(const Ctx& c, const Value& v, std::string_view key,
                                 const std::vector<std::string_view>& allowed) {
  BASALT_ASSIGN_OR_RETURN(std::string s, Bytes(c, v, absl::StrCat("a string for ", AV(key)), false));
  s = absl::AsciiStrToUpper(s);
  for (std::string_view a : allowed) {
    if (s == a) return s;
  }
  std::vector<std::string> names(allowed.begin(), allowed.end());
  return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": ", AV(key), " must be one of ",
                                                 absl::StrJoin(names, ", "), ", not '", ToStringBinary(s), "'"));
}

// The names a family setting takes (basalt/family_values.h).
std::vector<std::string_view> SettingValues(FamilySetting setting) {
  std::vector<std::string_view> names;
  for (const FamilyValue& fv : kFamilyValues) {
    if (fv.setting == setting) names.push_back(fv.name);
  }
  return names;
}

// One of a family setting's values, upper-cased.
absl::StatusOr<std::string> Enum(const Ctx& c, const Value& v, FamilySetting setting) {
  return Enum(c, v, FamilySettingName(setting), SettingValues(setting));
}

// 'cf:q' -> (cf, q); 'cf' -> (cf, nullopt), the whole family; 'cf:' -> (cf, ""), as HBase.
struct ColumnSpec {
  std::string family;
  std::optional<std::string> qualifier;
};

absl::StatusOr<ColumnSpec> Column(const Ctx& c, const Value& v) {
  BASALT_ASSIGN_OR_RETURN(std::string s, Bytes(c, v, "a column ('cf:q' or 'cf')", false));
  ColumnSpec col;
  size_t colon = s.find(':');
  if (colon == std::string::npos) {
    col.family = s;
  } else {
    col.family = s.substr(0, colon);
    col.qualifier = s.substr(colon + 1);
  }
  if (col.family.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(AV(c.cmd.name), ": column '", ToStringBinary(s), "' has an empty family name"));
  }
  return col;
}

// Adds a column to a Get/Scan column list with the client builders' semantics: a whole-family
// entry absorbs the family's qualifiers.
void AddColumnRef(const ColumnSpec& col, std::vector<ColumnRef>* refs) {
  for (ColumnRef& r : *refs) {
    if (r.family != col.family) continue;
    if (!col.qualifier.has_value()) {
      r.qualifiers.clear();
    } else if (!r.qualifiers.empty() &&
               std::find(r.qualifiers.begin(), r.qualifiers.end(), *col.qualifier) == r.qualifiers.end()) {
      r.qualifiers.push_back(*col.qualifier);
    }
    return;
  }
  ColumnRef r;
  r.family = col.family;
  if (col.qualifier.has_value()) r.qualifiers.push_back(*col.qualifier);
  refs->push_back(std::move(r));
}

// A column or an array of columns.
absl::Status AddColumns(const Ctx& c, const Value& v, std::vector<ColumnRef>* refs) {
  if (v.is_array()) {
    for (const Value& item : v.items) {
      BASALT_ASSIGN_OR_RETURN(ColumnSpec col, Column(c, item));
      AddColumnRef(col, refs);
    }
    return absl::OkStatus();
  }
  BASALT_ASSIGN_OR_RETURN(ColumnSpec col, Column(c, v));
  AddColumnRef(col, refs);
  return absl::OkStatus();
}

absl::Status CheckKeys(const Ctx& c, const Value& hash, std::initializer_list<std::string_view> known) {
  for (const auto& [k, v] : hash.entries) {
    if (k.kind != Value::Kind::kName && k.kind != Value::Kind::kString) {
      return ArgError(c, k, "an option name such as LIMIT");
    }
    if (std::find(known.begin(), known.end(), k.str) == known.end()) {
      std::vector<std::string> names(known.begin(), known.end());
      return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": unsupported option ", ToStringBinary(k.str),
                                                     " (supported: ", absl::StrJoin(names, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

// FILTER => "..." in HBase's filter language (ParseFilterString).
absl::StatusOr<Filter> FilterOption(const Ctx& c, const Value& v) {
  BASALT_ASSIGN_OR_RETURN(std::string text, Bytes(c, v, "a filter string for FILTER", false));
  absl::StatusOr<Filter> f = ParseFilterString(text);
  if (!f.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": bad FILTER at ", Where(c, v), ": ",
                                                   f.status().message()));
  }
  return f;
}

// TIMERANGE => [min, max): HBase's half-open time range.
absl::Status TimeRange(const Ctx& c, const Value& v, int64_t* min, int64_t* max) {
  if (!v.is_array() || v.items.size() != 2) return ArgError(c, v, "TIMERANGE => [min, max]");
  BASALT_ASSIGN_OR_RETURN(*min, Int(c, v.items[0], "an integer timestamp"));
  BASALT_ASSIGN_OR_RETURN(*max, Int(c, v.items[1], "an integer timestamp"));
  if (*min < 0 || *max < *min) {
    return absl::InvalidArgumentError(
        absl::StrCat(AV(c.cmd.name), ": TIMERANGE needs 0 <= min <= max, not [", *min, ", ", *max, "]"));
  }
  return absl::OkStatus();
}

absl::Status Timestamp(const Ctx& c, const Value& v, int64_t* ts) {
  BASALT_ASSIGN_OR_RETURN(*ts, Int(c, v, "an integer timestamp"));
  if (*ts < 0 || *ts == kLatestTimestamp) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": timestamp ", *ts, " is out of range"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Errors from the server, in the shell's words (the code is kept).

absl::Status Wrap(const Ctx& c, std::string_view table, const absl::Status& s) {
  if (s.ok()) return s;
  std::string server(s.message());
  std::string t = ToStringBinary(table);
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      if (!table.empty()) return absl::NotFoundError(absl::StrCat("Unknown table ", t, "! (", server, ")"));
      break;
    case absl::StatusCode::kAlreadyExists:
      if (!table.empty()) return absl::AlreadyExistsError(absl::StrCat("Table already exists: ", t, "! (", server, ")"));
      break;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return absl::Status(s.code(), absl::StrCat("cannot reach the server at ",
                                                 c.conn->options().address.empty()
                                                     ? "the cluster of ZooKeeper " + c.conn->options().zookeeper_quorum
                                                     : c.conn->options().address,
                                                 " (",
                                                 absl::StatusCodeToString(s.code()), ": ", server, ")"));
    default:
      break;
  }
  return absl::Status(s.code(), absl::StrCat(absl::StatusCodeToString(s.code()), ": ", server));
}

Reply Done(const Ctx& c, std::string table) {
  Reply r;
  r.command = c.cmd.name;
  r.table = std::move(table);
  return r;
}

// ---------------------------------------------------------------------------------------------
// DDL

absl::StatusOr<FamilySettings> FamilyFromHash(const Ctx& c, const Value& h) {
  BASALT_RETURN_IF_ERROR(CheckKeys(c, h,
                                   {"NAME", "VERSIONS", "MIN_VERSIONS", "TTL", "BLOCKSIZE", "DATA_BLOCK_ENCODING",
                                    "COMPRESSION", "BLOOMFILTER", "CHECKSUM_TYPE", "BYTES_PER_CHECKSUM",
                                    "BLOCKCACHE", "CACHE_ENCODED", "IN_MEMORY", "KEEP_DELETED_CELLS",
                                    "REPLICATION_SCOPE"}));
  FamilySettings f;
  const Value* name = h.Find("NAME");
  if (name == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": a column family hash needs NAME => 'cf' (got ",
                                                   h.ToString(), ")"));
  }
  BASALT_ASSIGN_OR_RETURN(f.name, Bytes(c, *name, "a family name for NAME", false));
  for (const auto& [k, v] : h.entries) {
    const std::string& key = k.str;
    if (key == "NAME") continue;
    if (key == "VERSIONS") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "VERSIONS", 1, INT32_MAX));
      f.max_versions = static_cast<int>(n);
    } else if (key == "MIN_VERSIONS") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "MIN_VERSIONS", 0, INT32_MAX));
      f.min_versions = static_cast<int>(n);
    } else if (key == "TTL") {
      if (v.is_string() && absl::AsciiStrToUpper(v.str) == "FOREVER") {
        f.ttl_seconds = 0;
      } else {
        BASALT_ASSIGN_OR_RETURN(f.ttl_seconds, IntInRange(c, v, "TTL (seconds)", 0, INT32_MAX));
        if (f.ttl_seconds == INT32_MAX) f.ttl_seconds = 0;  // HBase's FOREVER
      }
    } else if (key == "BLOCKSIZE") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "BLOCKSIZE", 1, UINT32_MAX));
      f.block_size = static_cast<uint32_t>(n);
    } else if (key == "DATA_BLOCK_ENCODING") {
      BASALT_ASSIGN_OR_RETURN(f.encoding, Enum(c, v, FamilySetting::kEncoding));
    } else if (key == "COMPRESSION") {
      BASALT_ASSIGN_OR_RETURN(f.compression, Enum(c, v, FamilySetting::kCompression));
    } else if (key == "BLOOMFILTER") {
      BASALT_ASSIGN_OR_RETURN(f.bloom, Enum(c, v, FamilySetting::kBloom));
    } else if (key == "CHECKSUM_TYPE") {
      BASALT_ASSIGN_OR_RETURN(f.checksum, Enum(c, v, FamilySetting::kChecksum));
    } else if (key == "BYTES_PER_CHECKSUM") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "BYTES_PER_CHECKSUM", 1, UINT32_MAX));
      f.bytes_per_checksum = static_cast<uint32_t>(n);
    } else if (key == "BLOCKCACHE") {
      BASALT_ASSIGN_OR_RETURN(f.block_cache, Bool(c, v, "true or false for BLOCKCACHE"));
    } else if (key == "CACHE_ENCODED") {
      BASALT_ASSIGN_OR_RETURN(f.cache_encoded, Bool(c, v, "true or false for CACHE_ENCODED"));
    } else {
      // HBase settings Basalt does not have: accepted at their defaults so HBase scripts run.
      bool is_default = false;
      if (key == "REPLICATION_SCOPE") {
        auto n = Int(c, v, "0");
        is_default = n.ok() && *n == 0;
      } else {
        auto b = Bool(c, v, "false");
        is_default = b.ok() && !*b;
      }
      if (!is_default) {
        return absl::InvalidArgumentError(
            absl::StrCat(AV(c.cmd.name), ": ", key, " => ", v.ToString(), " is not supported by Basalt"));
      }
    }
  }
  return f;
}

// create's table options (HBase's shell): SPLITS => ['g', 'n'], or NUMREGIONS => 16 with
// SPLITALGO => 'HexStringSplit' or 'UniformSplit'; MAX_FILESIZE => bytes; TRANSACTIONAL => true.
absl::Status TableOptionsFromHash(Ctx& c, const Value& h, std::vector<std::string>* split_keys, TableInfo* info) {
  const Value* splits = h.Find("SPLITS");
  const Value* num = h.Find("NUMREGIONS");
  const Value* algo = h.Find("SPLITALGO");
  for (const auto& [k, v] : h.entries) {
    if (k.str != "SPLITS" && k.str != "NUMREGIONS" && k.str != "SPLITALGO" && k.str != "MAX_FILESIZE" &&
        k.str != "TRANSACTIONAL") {
      return absl::InvalidArgumentError(
          absl::StrCat("create: table option ", ToStringBinary(k.str),
                       " is not supported (SPLITS, NUMREGIONS, SPLITALGO, MAX_FILESIZE and TRANSACTIONAL are); a "
                       "family is 'cf' or {NAME => 'cf', ...}"));
    }
  }
  if (const Value* tx = h.Find("TRANSACTIONAL"); tx != nullptr) {
    // Basalt's: the table is written and read in transactions (docs/DESIGN.md §7).
    BASALT_ASSIGN_OR_RETURN(info->transactional, Bool(c, *tx, "true or false for TRANSACTIONAL"));
    if (splits == nullptr && num == nullptr && algo == nullptr && h.Find("MAX_FILESIZE") == nullptr) {
      return absl::OkStatus();
    }
  }
  if (const Value* max = h.Find("MAX_FILESIZE"); max != nullptr) {
    // HBase's shell takes the number or its string.
    int64_t n = 0;
    if (max->is_int()) {
      n = max->number;
    } else if (!max->is_string() || !absl::SimpleAtoi(max->str, &n)) {
      return ArgError(c, *max, "a size in bytes: MAX_FILESIZE => 10737418240");
    }
    if (n <= 0) return ArgError(c, *max, "a size in bytes above 0");
    info->max_file_size = static_cast<uint64_t>(n);
    if (splits == nullptr && num == nullptr && algo == nullptr) return absl::OkStatus();
  }
  if (splits != nullptr && (num != nullptr || algo != nullptr)) {
    return absl::InvalidArgumentError("create: give SPLITS, or NUMREGIONS with SPLITALGO, not both");
  }
  if (splits != nullptr) {
    if (!splits->is_array()) return ArgError(c, *splits, "an array of split keys: SPLITS => ['g', 'n']");
    for (const Value& k : splits->items) {
      BASALT_ASSIGN_OR_RETURN(std::string key, Bytes(c, k, "a split key", false));
      split_keys->push_back(std::move(key));
    }
    return absl::OkStatus();
  }
  if (num == nullptr || algo == nullptr) {
    return absl::InvalidArgumentError(
        "create: NUMREGIONS and SPLITALGO go together: {NUMREGIONS => 16, SPLITALGO => 'HexStringSplit'}");
  }
  if (!num->is_int()) return ArgError(c, *num, "a number of regions");
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, *algo, "HexStringSplit or UniformSplit", false));
  if (num->number < 2 || num->number > 1000) {
    return absl::InvalidArgumentError(absl::StrCat("create: NUMREGIONS of ", num->number, " (2 to 1000)"));
  }
  absl::StatusOr<std::vector<std::string>> keys = SplitKeysFor(name, static_cast<int>(num->number));
  if (!keys.ok()) return absl::InvalidArgumentError(absl::StrCat("create: ", keys.status().message()));
  *split_keys = *std::move(keys);
  return absl::OkStatus();
}

absl::StatusOr<Reply> CmdCreate(Ctx& c) {
  const auto& a = c.cmd.args;
  TableInfo info;
  BASALT_ASSIGN_OR_RETURN(info.name, Bytes(c, a[0], "a table name", false));
  std::vector<std::string> split_keys;
  for (size_t i = 1; i < a.size(); ++i) {
    if (a[i].is_string()) {
      FamilySettings f;
      f.name = a[i].str;
      info.families.push_back(std::move(f));
    } else if (a[i].is_hash()) {
      if (a[i].Find("NAME") == nullptr && !a[i].entries.empty()) {
        BASALT_RETURN_IF_ERROR(TableOptionsFromHash(c, a[i], &split_keys, &info));
        continue;
      }
      BASALT_ASSIGN_OR_RETURN(FamilySettings f, FamilyFromHash(c, a[i]));
      info.families.push_back(std::move(f));
    } else {
      return ArgError(c, a[i], "a column family ('cf' or {NAME => 'cf', ...})");
    }
  }
  if (info.families.empty()) {
    return absl::InvalidArgumentError("create: a table needs at least one column family: create 't1', 'cf'");
  }
  for (size_t i = 0; i < info.families.size(); ++i) {
    if (info.families[i].name.empty() || info.families[i].name.find(':') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("create: invalid family name '",
                                                     ToStringBinary(info.families[i].name),
                                                     "' (it must be non-empty and have no ':')"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (info.families[j].name == info.families[i].name) {
        return absl::InvalidArgumentError(
            absl::StrCat("create: family '", ToStringBinary(info.families[i].name), "' is given twice"));
      }
    }
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, info.name, c.conn->GetAdmin()->CreateTable(info, split_keys)));
  Reply r = Done(c, info.name);
  r.messages.push_back(absl::StrCat("Created table ", ToStringBinary(info.name)));
  return r;
}

absl::StatusOr<std::string> TableArg(const Ctx& c) { return Bytes(c, c.cmd.args[0], "a table name", false); }

absl::StatusOr<Reply> CmdDescribe(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  auto info = c.conn->GetAdmin()->DescribeTable(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, info.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kDescribe;
  r.info = *std::move(info);
  if (r.info.name.empty()) r.info.name = table;
  return r;
}

absl::StatusOr<Reply> CmdListRegions(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  auto regions = c.conn->GetAdmin()->ListRegions(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, regions.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kRegions;
  r.regions = *std::move(regions);
  return r;
}

absl::StatusOr<Reply> CmdList(Ctx& c) {
  std::optional<std::regex> pattern;
  if (!c.cmd.args.empty()) {
    BASALT_ASSIGN_OR_RETURN(std::string re, Bytes(c, c.cmd.args[0], "a regular expression", false));
    // std::regex reports a bad pattern by throwing; check it here, where it is our input.
    try {
      pattern.emplace(re, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(absl::StrCat("list: invalid regular expression '", re, "': ", e.what()));
    }
  }
  auto tables = c.conn->GetAdmin()->ListTables();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", tables.status()));
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kList;
  for (const TableInfo& t : *tables) {
    if (pattern.has_value()) {
      bool match = false;
      try {  // matching may throw on a pathological pattern (error_complexity, error_stack)
        match = std::regex_match(t.name, *pattern);
      } catch (const std::regex_error& e) {
        return absl::InvalidArgumentError(absl::StrCat("list: cannot match the regular expression: ", e.what()));
      }
      if (!match) continue;
    }
    r.tables.push_back(t.name);
    if (!t.open_error.empty()) r.failed_open.insert(t.name);
  }
  std::sort(r.tables.begin(), r.tables.end());
  return r;
}

absl::StatusOr<Reply> CmdExists(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  auto info = c.conn->GetAdmin()->DescribeTable(table);
  if (!info.ok() && info.status().code() != absl::StatusCode::kNotFound) {
    return Wrap(c, table, info.status());
  }
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kExists;
  r.flag = info.ok();
  return r;
}

absl::StatusOr<Reply> CmdIsEnabled(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  auto info = c.conn->GetAdmin()->DescribeTable(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, info.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kEnabled;
  r.flag = info->enabled;
  return r;
}

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

// split 't1' | split 't1', 'row' | split 'REGIONNAME' [, 'row'] | split 'ENCODED' [, 'row'].
absl::StatusOr<Reply> CmdSplit(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[0], "a table or region name"));
  std::string row;
  if (c.cmd.args.size() > 1) {
    BASALT_ASSIGN_OR_RETURN(row, Bytes(c, c.cmd.args[1], "a split row"));
  }
  const std::string table = name.substr(0, name.find(','));
  BASALT_RETURN_IF_ERROR(Wrap(c, table, c.conn->GetAdmin()->Split(name, row)));
  return Done(c, table);
}

// merge_region 'ENCODED_A', 'ENCODED_B' (or full region names).
absl::StatusOr<Reply> CmdMergeRegion(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string a, Bytes(c, c.cmd.args[0], "a region name"));
  BASALT_ASSIGN_OR_RETURN(std::string b, Bytes(c, c.cmd.args[1], "a region name"));
  BASALT_RETURN_IF_ERROR(Wrap(c, a.substr(0, a.find(',')), c.conn->GetAdmin()->MergeRegions(a, b)));
  return Done(c, a);
}

// move 'ENCODED_REGIONNAME' [, 'SERVER_NAME'], as HBase's (a cluster's master only).
absl::StatusOr<Reply> CmdMove(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string region, Bytes(c, c.cmd.args[0], "a region name"));
  std::string server;
  if (c.cmd.args.size() > 1) {
    BASALT_ASSIGN_OR_RETURN(server, Bytes(c, c.cmd.args[1], "a server name"));
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->Move(region, server)));
  return Done(c, "");
}

// unassign 'REGION' [, force]: HBase 2's (force, accepted as HBase's, changes nothing: the close
// always flushes).
absl::StatusOr<Reply> CmdUnassign(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string region, Bytes(c, c.cmd.args[0], "a region name"));
  if (c.cmd.args.size() > 1) BASALT_RETURN_IF_ERROR(Bool(c, c.cmd.args[1], "true or false for force").status());
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->Unassign(region)));
  return Done(c, "");
}

// assign 'REGION' (HBase's) | assign 't1' (Basalt's: every FAILED_OPEN region of a table).
absl::StatusOr<Reply> CmdAssign(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[0], "a region or table name"));
  std::unique_ptr<Admin> admin = c.conn->GetAdmin();
  if (admin->DescribeTable(name).ok()) {
    BASALT_RETURN_IF_ERROR(Wrap(c, name, admin->AssignTable(name)));
    return Done(c, name);
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, "", admin->AssignRegion(name)));
  return Done(c, "");
}

// balancer: runs the balancer once; prints true when it moved regions (HBase prints whether it ran).
absl::StatusOr<Reply> CmdBalancer(Ctx& c) {
  absl::StatusOr<BalanceResult> done = c.conn->GetAdmin()->Balance();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", done.status()));
  Reply r = Done(c, "");
  r.messages.push_back(done->moves > 0 ? "true" : "false");
  r.messages.push_back(done->moves > 0 ? absl::StrCat(done->moves, " region(s) moved", done->reason.empty() ? "" : "; ",
                                                      done->reason)
                                       : done->reason);
  return r;
}

// The scope arguments of grant, revoke and user_permission from args[first]: none (global),
// '@ns', or 'table' [, 'family' [, 'qualifier']], as HBase's shell takes them.
absl::Status ScopeArgs(const Ctx& c, size_t first, Permission* p) {
  if (c.cmd.args.size() <= first) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(std::string name, Bytes(c, c.cmd.args[first], "'@namespace' or a table name", false));
  if (!name.empty() && name[0] == '@') {
    if (c.cmd.args.size() > first + 1) {
      return ArgError(c, c.cmd.args[first + 1], "nothing after a namespace", "(a family needs a table)");
    }
    p->ns = name.substr(1);
    return absl::OkStatus();
  }
  p->table = name;
  if (c.cmd.args.size() > first + 1) {
    BASALT_ASSIGN_OR_RETURN(p->family, Bytes(c, c.cmd.args[first + 1], "a column family", false));
  }
  if (c.cmd.args.size() > first + 2) {
    BASALT_ASSIGN_OR_RETURN(p->qualifier, Bytes(c, c.cmd.args[first + 2], "a column qualifier"));
  }
  return absl::OkStatus();
}

// HBase's way of printing a scope in user_permission: "namespace,table,family,qualifier".
std::string ScopeText(const Permission& p) {
  const std::string ns = !p.ns.empty() ? p.ns : p.table.empty() ? "" : (p.table.find(':') != std::string::npos
                                                                           ? p.table.substr(0, p.table.find(':'))
                                                                           : "default");
  return absl::StrCat(ns, ",", p.table.empty() ? (p.ns.empty() ? "basalt:acl" : "") : ToStringBinary(p.table), ",",
                      p.family, ",", ToStringBinary(p.qualifier));
}

// HBase's names of the actions: READ,WRITE,EXEC,CREATE,ADMIN.
std::string ActionNames(std::string_view letters) {
  std::vector<std::string> names;
  for (char ch : letters) {
    switch (ch) {
      case 'R': names.push_back("READ"); break;
      case 'W': names.push_back("WRITE"); break;
      case 'X': names.push_back("EXEC"); break;
      case 'C': names.push_back("CREATE"); break;
      case 'A': names.push_back("ADMIN"); break;
      default: names.push_back(std::string(1, ch)); break;
    }
  }
  return absl::StrJoin(names, ",");
}

// grant 'user', 'RWXCA' [, '@ns' | 'table' [, 'family' [, 'qualifier']]]
absl::StatusOr<Reply> CmdGrant(Ctx& c) {
  Permission p;
  BASALT_ASSIGN_OR_RETURN(p.principal, Bytes(c, c.cmd.args[0], "a user or @group", false));
  BASALT_ASSIGN_OR_RETURN(p.actions, Bytes(c, c.cmd.args[1], "permissions (letters of RWXCA)", false));
  BASALT_RETURN_IF_ERROR(ScopeArgs(c, 2, &p));
  BASALT_RETURN_IF_ERROR(Wrap(c, p.table, c.conn->GetAdmin()->Grant(p)));
  return Done(c, p.table);
}

// revoke 'user' [, '@ns' | 'table' [, 'family' [, 'qualifier']]]
absl::StatusOr<Reply> CmdRevoke(Ctx& c) {
  Permission p;
  BASALT_ASSIGN_OR_RETURN(p.principal, Bytes(c, c.cmd.args[0], "a user or @group", false));
  BASALT_RETURN_IF_ERROR(ScopeArgs(c, 1, &p));
  BASALT_RETURN_IF_ERROR(Wrap(c, p.table, c.conn->GetAdmin()->Revoke(p)));
  return Done(c, p.table);
}

// user_permission ['@ns' | 'table'], printed as HBase's shell prints it.
absl::StatusOr<Reply> CmdUserPermission(Ctx& c) {
  Permission scope;
  BASALT_RETURN_IF_ERROR(ScopeArgs(c, 0, &scope));
  absl::StatusOr<std::vector<Permission>> perms = c.conn->GetAdmin()->UserPermissions(scope);
  BASALT_RETURN_IF_ERROR(Wrap(c, scope.table, perms.status()));
  Reply r = Done(c, scope.table);
  r.messages.push_back(absl::StrCat(absl::StrFormat("%-24s", "User"), " Namespace,Table,Family,Qualifier:Permission"));
  for (const Permission& p : *perms) {
    r.messages.push_back(absl::StrCat(" ", absl::StrFormat("%-23s", p.principal), " ", ScopeText(p),
                                      ": [Permission: actions=", ActionNames(p.actions), "]"));
  }
  r.messages.push_back(absl::StrCat(perms->size(), " row(s)"));
  return r;
}

// A word HBase's shell writes as a constant (THROTTLE, READ, NONE) or a string, upper-cased.
absl::StatusOr<std::string> Word(const Ctx& c, const Value& v, std::string_view key) {
  if (v.kind == Value::Kind::kName || v.is_string()) return absl::AsciiStrToUpper(v.str);
  return ArgError(c, v, absl::StrCat("a word for ", AV(key)));
}

// set_quota TYPE => THROTTLE, USER => 'u' [, TABLE => 't' | NAMESPACE => 'ns'] [, THROTTLE_TYPE =>
// READ | WRITE], LIMIT => '10req/sec' | NONE; or TABLE or NAMESPACE alone in place of USER.
absl::StatusOr<Reply> CmdSetQuota(Ctx& c) {
  const Value& h = c.cmd.args[0];
  if (!h.is_hash()) return ArgError(c, h, "TYPE => THROTTLE, USER => 'u1', LIMIT => '10req/sec'");
  Quota q;
  bool typed = false, limited = false;
  for (const Value::Entry& e : h.entries) {
    const std::string key = absl::AsciiStrToUpper(e.first.str);
    if (key == "TYPE") {
      BASALT_ASSIGN_OR_RETURN(std::string type, Word(c, e.second, key));
      if (type != "THROTTLE") {
        return absl::InvalidArgumentError(absl::StrCat(
            "set_quota: TYPE => ", type, " is not supported: Basalt's quotas are THROTTLE (request and byte rates)"));
      }
      typed = true;
    } else if (key == "USER") {
      BASALT_ASSIGN_OR_RETURN(q.user, Bytes(c, e.second, "a user name for USER", false));
    } else if (key == "TABLE") {
      BASALT_ASSIGN_OR_RETURN(q.table, Bytes(c, e.second, "a table name for TABLE", false));
    } else if (key == "NAMESPACE") {
      BASALT_ASSIGN_OR_RETURN(q.ns, Bytes(c, e.second, "a namespace for NAMESPACE", false));
    } else if (key == "THROTTLE_TYPE") {
      BASALT_ASSIGN_OR_RETURN(q.throttle, Word(c, e.second, key));
    } else if (key == "LIMIT") {
      BASALT_ASSIGN_OR_RETURN(q.limit, Word(c, e.second, key));
      if (q.limit != "NONE") q.limit = e.second.str;  // as written: '10M/sec'
      limited = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("set_quota: unknown key ", e.first.str, " (TYPE, USER, TABLE, NAMESPACE, THROTTLE_TYPE, LIMIT)"));
    }
  }
  if (!typed || !limited) {
    return absl::InvalidArgumentError("set_quota: needs TYPE => THROTTLE and LIMIT => '10req/sec' (or NONE)");
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, q.table, c.conn->GetAdmin()->SetQuota(q)));
  return Done(c, q.table);
}

// list_quotas: every quota, printed as HBase's list_quotas prints it.
absl::StatusOr<Reply> CmdListQuotas(Ctx& c) {
  absl::StatusOr<std::vector<Quota>> quotas = c.conn->GetAdmin()->ListQuotas();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", quotas.status()));
  Reply r = Done(c, "");
  r.messages.push_back(absl::StrCat(absl::StrFormat("%-40s", "OWNER"), " QUOTAS"));
  for (const Quota& q : *quotas) {
    std::vector<std::string> owner;
    if (!q.user.empty()) owner.push_back(absl::StrCat("USER => ", q.user));
    if (!q.ns.empty()) owner.push_back(absl::StrCat("NAMESPACE => ", q.ns));
    if (!q.table.empty()) owner.push_back(absl::StrCat("TABLE => ", ToStringBinary(q.table)));
    r.messages.push_back(absl::StrCat(" ", absl::StrFormat("%-39s", absl::StrJoin(owner, ", ")),
                                      " TYPE => THROTTLE, THROTTLE_TYPE => ", q.throttle, ", LIMIT => ", q.limit,
                                      ", SCOPE => MACHINE"));
  }
  r.messages.push_back(absl::StrCat(quotas->size(), " row(s)"));
  return r;
}

// whoami: the user the server takes this connection for, and their groups (HBase's whoami).
absl::StatusOr<Reply> CmdWhoAmI(Ctx& c) {
  absl::StatusOr<Identity> id = c.conn->GetAdmin()->WhoAmI();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", id.status()));
  Reply r = Done(c, "");
  if (!id->auth_enabled && id->user.empty()) {
    r.messages.push_back("(the server does not authenticate: auth=false)");
    return r;
  }
  r.messages.push_back(absl::StrCat(id->user, " (", id->authentication, id->superuser ? ", superuser" : "", ")"));
  r.messages.push_back(absl::StrCat("    groups: ", absl::StrJoin(id->groups, " ")));
  return r;
}

// truncate and (with `preserve`) truncate_preserve, as HBase's: disable, drop and create again
// with the same descriptor, in one region or in the regions it had (their start keys).
template <bool preserve>
absl::StatusOr<Reply> CmdTruncate(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  std::unique_ptr<Admin> admin = c.conn->GetAdmin();
  auto info = admin->DescribeTable(table);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, info.status()));
  std::vector<std::string> split_keys;
  if (preserve) {
    auto regions = admin->ListRegions(table);
    BASALT_RETURN_IF_ERROR(Wrap(c, table, regions.status()));
    for (const RegionStatus& region : *regions) {
      if (!region.start_key.empty()) split_keys.push_back(region.start_key);
    }
  }
  Reply r = Done(c, table);
  r.messages.push_back(absl::StrCat("Truncating '", ToStringBinary(table), "' table (it may take a while):"));
  if (info->enabled) {
    r.messages.push_back("Disabling table...");
    BASALT_RETURN_IF_ERROR(Wrap(c, table, admin->DisableTable(table)));
  }
  r.messages.push_back("Truncating table...");
  BASALT_RETURN_IF_ERROR(Wrap(c, table, admin->DropTable(table)));
  TableInfo fresh = *std::move(info);
  fresh.name = table;
  fresh.enabled = true;
  absl::Status created = admin->CreateTable(fresh, split_keys);
  if (!created.ok()) {
    return absl::Status(created.code(),
                        absl::StrCat("truncate: table ", ToStringBinary(table),
                                     " was dropped but could not be created again: ",
                                     absl::StatusCodeToString(created.code()), ": ", created.message()));
  }
  return r;
}

absl::StatusOr<Reply> CmdStatus(Ctx& c) {
  bool detailed = false;
  if (!c.cmd.args.empty()) {
    BASALT_ASSIGN_OR_RETURN(std::string kind, Enum(c, c.cmd.args[0], "the status format",
                                                   {"SIMPLE", "SUMMARY", "DETAILED"}));
    detailed = kind == "DETAILED";
  }
  auto s = c.conn->GetAdmin()->Status();
  BASALT_RETURN_IF_ERROR(Wrap(c, "", s.status()));
  Reply r = Done(c, "");
  r.kind = Reply::Kind::kStatus;
  r.status = *std::move(s);
  r.detailed = detailed;
  return r;
}

// verbs_disable / verbs_enable: the server's verbs transport off for NIC maintenance (its
// endpoints are disconnected and clients send Get/Put over gRPC), then on again.
absl::StatusOr<Reply> CmdVerbsSwitch(Ctx& c) {
  const bool enable = c.cmd.name == "verbs_enable";
  BASALT_RETURN_IF_ERROR(Wrap(c, "", c.conn->GetAdmin()->SetVerbs(enable)));
  Reply r = Done(c, "");
  r.messages.push_back(enable ? "Verbs transport enabled: clients go back to it at their next verbs retry"
                              : "Verbs transport disabled: endpoints closed, clients send Get/Put over gRPC");
  return r;
}

// ---------------------------------------------------------------------------------------------
// DML

absl::StatusOr<Reply> CmdPut(Ctx& c) {
  const auto& a = c.cmd.args;
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string row, Bytes(c, a[1], "a row key"));
  BASALT_ASSIGN_OR_RETURN(ColumnSpec col, Column(c, a[2]));
  BASALT_ASSIGN_OR_RETURN(std::string value, Bytes(c, a[3], "a value"));
  int64_t ts = kLatestTimestamp;
  if (a.size() > 4) BASALT_RETURN_IF_ERROR(Timestamp(c, a[4], &ts));
  Put put(row);
  CellMutation m;
  m.kind = CellMutation::Kind::kPut;
  m.family = col.family;
  m.qualifier = col.qualifier.value_or("");
  m.timestamp = ts;
  m.value = std::move(value);
  put.mutations.push_back(std::move(m));
  BASALT_RETURN_IF_ERROR(Wrap(c, table, c.conn->GetTable(table)->Put(put)));
  return Done(c, table);
}

// delete: the newest version of a column, or exactly the version at ts. deleteall: every
// version at or below ts; without a column the whole row. A family alone: all its cells <= ts.
absl::StatusOr<Reply> CmdDelete(Ctx& c) {
  const auto& a = c.cmd.args;
  const bool all = c.cmd.name == "deleteall";
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string row, Bytes(c, a[1], "a row key"));
  Delete del(row);
  if (a.size() > 2) {
    BASALT_ASSIGN_OR_RETURN(ColumnSpec col, Column(c, a[2]));
    int64_t ts = kLatestTimestamp;
    if (a.size() > 3) BASALT_RETURN_IF_ERROR(Timestamp(c, a[3], &ts));
    CellMutation m;
    m.family = col.family;
    m.timestamp = ts;
    if (!col.qualifier.has_value()) {
      m.kind = CellMutation::Kind::kDeleteFamily;
    } else {
      m.kind = all ? CellMutation::Kind::kDeleteColumn : CellMutation::Kind::kDelete;
      m.qualifier = *col.qualifier;
    }
    del.mutations.push_back(std::move(m));
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, table, c.conn->GetTable(table)->Delete(del)));
  return Done(c, table);
}

// get's options: a column, several columns, an array of them, or hashes of options.
absl::Status GetOptions(const Ctx& c, Get* get) {
  const auto& a = c.cmd.args;
  bool have_timestamp = false, have_range = false;
  for (size_t i = 2; i < a.size(); ++i) {
    if (!a[i].is_hash()) {
      BASALT_RETURN_IF_ERROR(AddColumns(c, a[i], &get->columns));
      continue;
    }
    BASALT_RETURN_IF_ERROR(CheckKeys(c, a[i], {"COLUMN", "COLUMNS", "VERSIONS", "TIMERANGE", "TIMESTAMP",
                                               "CACHE_BLOCKS", "FILTER"}));
    for (const auto& [k, v] : a[i].entries) {
      if (k.str == "COLUMN" || k.str == "COLUMNS") {
        BASALT_RETURN_IF_ERROR(AddColumns(c, v, &get->columns));
      } else if (k.str == "VERSIONS") {
        BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "VERSIONS", 1, INT32_MAX));
        get->max_versions = static_cast<int>(n);
      } else if (k.str == "TIMERANGE") {
        BASALT_RETURN_IF_ERROR(TimeRange(c, v, &get->min_ts, &get->max_ts));
        have_range = true;
      } else if (k.str == "TIMESTAMP") {
        int64_t ts;
        BASALT_RETURN_IF_ERROR(Timestamp(c, v, &ts));
        get->min_ts = ts;
        get->max_ts = ts + 1;
        have_timestamp = true;
      } else if (k.str == "CACHE_BLOCKS") {
        BASALT_ASSIGN_OR_RETURN(get->cache_blocks, Bool(c, v, "true or false for CACHE_BLOCKS"));
      } else if (k.str == "FILTER") {
        BASALT_ASSIGN_OR_RETURN(get->filter, FilterOption(c, v));
      }
    }
  }
  if (have_timestamp && have_range) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": give TIMESTAMP or TIMERANGE, not both"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Reply> CmdGet(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string row, Bytes(c, c.cmd.args[1], "a row key"));
  Get get(row);
  BASALT_RETURN_IF_ERROR(GetOptions(c, &get));
  auto result = c.conn->GetTable(table)->Get(get);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, result.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kRows;
  r.get_layout = true;
  if (result->row().empty()) result->set_row(row);
  r.rows.push_back(*std::move(result));
  return r;
}

absl::Status ScanOptions(const Ctx& c, const Value& h, Scan* scan, uint64_t* interval) {
  BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"STARTROW", "STOPROW", "ENDROW", "ROWPREFIXFILTER", "LIMIT", "COLUMN",
                                          "COLUMNS", "VERSIONS", "TIMERANGE", "TIMESTAMP", "CACHE", "CACHE_BLOCKS",
                                          "INTERVAL", "FILTER", "REVERSED"}));
  bool have_timestamp = false, have_range = false;
  std::optional<std::string> prefix;  // applied last: its range depends on REVERSED
  for (const auto& [k, v] : h.entries) {
    const std::string& key = k.str;
    if (key == "STARTROW") {
      BASALT_ASSIGN_OR_RETURN(scan->start_row, Bytes(c, v, "a row key for STARTROW"));
    } else if (key == "STOPROW" || key == "ENDROW") {
      BASALT_ASSIGN_OR_RETURN(scan->stop_row, Bytes(c, v, absl::StrCat("a row key for ", key)));
    } else if (key == "ROWPREFIXFILTER") {
      BASALT_ASSIGN_OR_RETURN(prefix, Bytes(c, v, "a row prefix for ROWPREFIXFILTER"));
    } else if (key == "LIMIT") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "LIMIT", 0, INT64_MAX));
      scan->limit = static_cast<uint64_t>(n);
    } else if (key == "COLUMN" || key == "COLUMNS") {
      BASALT_RETURN_IF_ERROR(AddColumns(c, v, &scan->columns));
    } else if (key == "VERSIONS") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "VERSIONS", 1, INT32_MAX));
      scan->max_versions = static_cast<int>(n);
    } else if (key == "TIMERANGE") {
      BASALT_RETURN_IF_ERROR(TimeRange(c, v, &scan->min_ts, &scan->max_ts));
      have_range = true;
    } else if (key == "TIMESTAMP") {
      int64_t ts;
      BASALT_RETURN_IF_ERROR(Timestamp(c, v, &ts));
      scan->min_ts = ts;
      scan->max_ts = ts + 1;
      have_timestamp = true;
    } else if (key == "CACHE") {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "CACHE", 1, UINT32_MAX));
      scan->caching = static_cast<uint32_t>(n);
    } else if (key == "CACHE_BLOCKS") {
      BASALT_ASSIGN_OR_RETURN(scan->cache_blocks, Bool(c, v, "true or false for CACHE_BLOCKS"));
    } else if (key == "FILTER") {
      BASALT_ASSIGN_OR_RETURN(scan->filter, FilterOption(c, v));
    } else if (key == "REVERSED") {
      BASALT_ASSIGN_OR_RETURN(scan->reversed, Bool(c, v, "true or false for REVERSED"));
    } else if (key == "INTERVAL") {
      if (interval == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": INTERVAL is an option of count"));
      }
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, v, "INTERVAL", 1, INT64_MAX));
      *interval = static_cast<uint64_t>(n);
    }
  }
  if (have_timestamp && have_range) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": give TIMESTAMP or TIMERANGE, not both"));
  }
  if (prefix.has_value()) scan->SetRowPrefix(*prefix);
  return absl::OkStatus();
}

// Runs `scan`, calling on_row for each row; stops after scan.limit rows if the server does not.
absl::Status RunScan(Ctx& c, const std::string& table, const Scan& scan,
                     const std::function<void(Result)>& on_row) {
  std::unique_ptr<Table> t = c.conn->GetTable(table);
  auto scanner = t->GetScanner(scan);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, scanner.status()));
  uint64_t n = 0;
  while (scan.limit == 0 || n < scan.limit) {
    Result row;
    auto more = (*scanner)->Next(&row);
    BASALT_RETURN_IF_ERROR(Wrap(c, table, more.status()));
    if (!*more) break;
    ++n;
    on_row(std::move(row));
  }
  (*scanner)->Close();
  return absl::OkStatus();
}

absl::StatusOr<Reply> CmdScan(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  Scan scan;
  if (c.cmd.args.size() > 1) {
    if (!c.cmd.args[1].is_hash()) return ArgError(c, c.cmd.args[1], "a hash of scan options {STARTROW => ...}");
    BASALT_RETURN_IF_ERROR(ScanOptions(c, c.cmd.args[1], &scan, nullptr));
  }
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kRows;
  BASALT_RETURN_IF_ERROR(RunScan(c, table, scan, [&](Result row) { r.rows.push_back(std::move(row)); }));
  return r;
}

absl::StatusOr<Reply> CmdCount(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  Scan scan;
  scan.cache_blocks = false;  // as HBase's count: a full pass should not flush the cache
  uint64_t interval = 1000;
  if (c.cmd.args.size() > 1) {
    if (!c.cmd.args[1].is_hash()) return ArgError(c, c.cmd.args[1], "a hash of options {INTERVAL => n}");
    BASALT_RETURN_IF_ERROR(ScanOptions(c, c.cmd.args[1], &scan, &interval));
  }
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kCount;
  BASALT_RETURN_IF_ERROR(RunScan(c, table, scan, [&](Result row) {
    ++r.count;
    if (c.out != nullptr && c.format == OutputFormat::kHuman && r.count % interval == 0) {
      *c.out << "Current count: " << r.count << ", row: " << ToStringBinary(row.row()) << "\n";
      c.out->flush();
    }
  }));
  return r;
}

absl::StatusOr<Reply> CmdIncr(Ctx& c) {
  const auto& a = c.cmd.args;
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string row, Bytes(c, a[1], "a row key"));
  BASALT_ASSIGN_OR_RETURN(ColumnSpec col, Column(c, a[2]));
  int64_t amount = 1;
  if (a.size() > 3) {
    BASALT_ASSIGN_OR_RETURN(amount, Int(c, a[3], "an integer increment"));
  }
  auto v = c.conn->GetTable(table)->IncrementColumnValue(row, col.family, col.qualifier.value_or(""), amount);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, v.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kCounter;
  r.row = row;
  r.column = absl::StrCat(col.family, ":", col.qualifier.value_or(""));
  r.counter = *v;
  return r;
}

absl::StatusOr<Reply> CmdGetCounter(Ctx& c) {
  const auto& a = c.cmd.args;
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string row, Bytes(c, a[1], "a row key"));
  BASALT_ASSIGN_OR_RETURN(ColumnSpec col, Column(c, a[2]));
  const std::string qualifier = col.qualifier.value_or("");
  Get get(row);
  get.columns.push_back(ColumnRef{col.family, {qualifier}});
  auto result = c.conn->GetTable(table)->Get(get);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, result.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kCounter;
  r.row = row;
  r.column = absl::StrCat(col.family, ":", qualifier);
  for (const KeyValue& kv : result->cells()) {
    if (kv.family != col.family || kv.qualifier != qualifier) continue;
    // A counter is HBase's Bytes.toBytes(long): 8 bytes, big-endian.
    if (kv.value.size() != 8) {
      return absl::FailedPreconditionError(absl::StrCat("get_counter: the value at ", ToStringBinary(row), "/",
                                                        ToStringBinary(r.column), " is ", kv.value.size(),
                                                        " bytes, not an 8-byte counter"));
    }
    r.counter = static_cast<int64_t>(DecodeFixed64BE(kv.value.data()));
    break;
  }
  return r;
}

absl::StatusOr<Reply> CmdAppend(Ctx& c) {
  const auto& a = c.cmd.args;
  BASALT_ASSIGN_OR_RETURN(std::string table, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string row, Bytes(c, a[1], "a row key"));
  BASALT_ASSIGN_OR_RETURN(ColumnSpec col, Column(c, a[2]));
  BASALT_ASSIGN_OR_RETURN(std::string value, Bytes(c, a[3], "a value"));
  Append app(row);
  app.columns.push_back(Append::Column{col.family, col.qualifier.value_or(""), value});
  auto result = c.conn->GetTable(table)->Append(app);
  BASALT_RETURN_IF_ERROR(Wrap(c, table, result.status()));
  Reply r = Done(c, table);
  r.kind = Reply::Kind::kAppend;
  r.row = row;
  r.column = absl::StrCat(col.family, ":", col.qualifier.value_or(""));
  for (const KeyValue& kv : result->cells()) {
    if (kv.family == col.family && kv.qualifier == col.qualifier.value_or("")) {
      r.value = kv.value;
      break;
    }
  }
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

// ---------------------------------------------------------------------------------------------
// Queues (basalt/queue.h): Basalt's, after CDAP's transactional queue on HBase.

absl::StatusOr<Partitioning> PartitioningArg(const Ctx& c, const Value& v) {
  BASALT_ASSIGN_OR_RETURN(std::string p, Enum(c, v, "PARTITIONING", {"ROUND_ROBIN", "HASH", "FIFO"}));
  if (p == "HASH") return Partitioning::kHash;
  if (p == "FIFO") return Partitioning::kFifo;
  return Partitioning::kRoundRobin;
}

const char* PartitioningText(Partitioning p) {
  switch (p) {
    case Partitioning::kHash: return "HASH";
    case Partitioning::kFifo: return "FIFO";
    default: return "ROUND_ROBIN";
  }
}

absl::StatusOr<Reply> CmdCreateQueue(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  QueueOptions o;
  if (c.cmd.args.size() > 1) {
    const Value& h = c.cmd.args[1];
    if (!h.is_hash()) return ArgError(c, h, "a hash: {PARTITIONS => 12, SALT_BUCKETS => 4}");
    BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"PARTITIONS", "SALT_BUCKETS"}));
    if (const Value* v = h.Find("PARTITIONS")) {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, *v, "PARTITIONS", 1, 4096));
      o.partitions = static_cast<int>(n);
    }
    if (const Value* v = h.Find("SALT_BUCKETS")) {
      BASALT_ASSIGN_OR_RETURN(int64_t n, IntInRange(c, *v, "SALT_BUCKETS", 1, 255));
      o.salt_buckets = static_cast<int>(n);
    }
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, name, CreateQueue(c.conn, name, o)));
  Reply r = Done(c, name);
  r.messages.push_back(absl::StrCat("Created queue ", ToStringBinary(name), " (", o.partitions, " partitions, ",
                                    o.salt_buckets, " salt buckets)"));
  return r;
}

absl::StatusOr<Reply> CmdQueueConfigure(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  std::vector<ConsumerGroup> groups;
  for (size_t i = 1; i < c.cmd.args.size(); ++i) {
    const Value& h = c.cmd.args[i];
    if (!h.is_hash()) return ArgError(c, h, "a group: {NAME => 'g', SIZE => 2, PARTITIONING => 'HASH'}");
    BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"NAME", "SIZE", "PARTITIONING"}));
    ConsumerGroup g;
    const Value* n = h.Find("NAME");
    if (n == nullptr) return absl::InvalidArgumentError("queue_configure: each group needs a NAME");
    BASALT_ASSIGN_OR_RETURN(g.name, Bytes(c, *n, "a group name", false));
    if (const Value* v = h.Find("SIZE")) {
      BASALT_ASSIGN_OR_RETURN(int64_t size, IntInRange(c, *v, "SIZE", 1, 4096));
      g.size = static_cast<int>(size);
    }
    if (const Value* v = h.Find("PARTITIONING")) {
      BASALT_ASSIGN_OR_RETURN(g.partitioning, PartitioningArg(c, *v));
    }
    groups.push_back(std::move(g));
  }
  BASALT_RETURN_IF_ERROR(Wrap(c, name, ConfigureQueue(c.conn, name, groups)));
  BASALT_ASSIGN_OR_RETURN(QueueConfig config, DescribeQueue(c.conn, name));
  Reply r = Done(c, name);
  r.kind = Reply::Kind::kText;
  for (const auto& [g, id] : config.groups) {
    absl::StrAppend(&r.text, "group ", g.name, ": ", g.size, g.size == 1 ? " consumer" : " consumers", ", ",
                    PartitioningText(g.partitioning), "\n");
  }
  if (config.groups.empty()) r.text = "no consumer groups\n";
  return r;
}

absl::StatusOr<Reply> CmdEnqueue(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  std::vector<QueueEvent> events;
  std::string key;
  for (size_t i = 1; i < c.cmd.args.size(); ++i) {
    const Value& v = c.cmd.args[i];
    if (v.is_hash() && i + 1 == c.cmd.args.size()) {
      BASALT_RETURN_IF_ERROR(CheckKeys(c, v, {"KEY"}));
      if (const Value* k = v.Find("KEY")) {
        BASALT_ASSIGN_OR_RETURN(key, Bytes(c, *k, "a partitioning key"));
      }
      continue;
    }
    BASALT_ASSIGN_OR_RETURN(std::string payload, Bytes(c, v, "an event's payload"));
    events.push_back(QueueEvent{std::move(payload), ""});
  }
  if (events.empty()) return absl::InvalidArgumentError("enqueue: give at least one event: enqueue 'q', 'payload'");
  for (QueueEvent& e : events) e.key = key;
  TransactionContext tx(c.conn);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, tx.Start()));
  QueueProducer producer(c.conn, name);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, producer.Enqueue(&tx, events)));
  BASALT_RETURN_IF_ERROR(Wrap(c, name, tx.Commit()));
  Reply r = Done(c, name);
  r.messages.push_back(absl::StrCat("Enqueued ", events.size(), events.size() == 1 ? " event" : " events"));
  return r;
}

absl::StatusOr<Reply> CmdDequeue(Ctx& c) {
  const auto& a = c.cmd.args;
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  BASALT_ASSIGN_OR_RETURN(std::string group, Bytes(c, a[1], "a consumer group name", false));
  BASALT_ASSIGN_OR_RETURN(int64_t instance, IntInRange(c, a[2], "the consumer", 0, 4095));
  int64_t max = 10;
  if (a.size() > 3) {
    BASALT_ASSIGN_OR_RETURN(max, IntInRange(c, a[3], "the most events", 1, 100000));
  }
  TransactionContext tx(c.conn);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, tx.Start()));
  QueueConsumer consumer(c.conn, name, group, static_cast<int>(instance));
  absl::StatusOr<std::vector<DequeuedEvent>> events = consumer.Dequeue(&tx, static_cast<int>(max));
  BASALT_RETURN_IF_ERROR(Wrap(c, name, events.status()));
  // The shell's processing is printing them: the dequeue commits now.
  BASALT_RETURN_IF_ERROR(Wrap(c, name, tx.Commit()));
  Reply r = Done(c, name);
  r.kind = Reply::Kind::kRows;
  for (const DequeuedEvent& e : *events) {
    std::vector<KeyValue> cells;
    cells.push_back(KeyValue{"event", "payload", e.write_pointer, e.payload});
    if (!e.key.empty()) cells.push_back(KeyValue{"event", "key", e.write_pointer, e.key});
    r.rows.emplace_back(absl::StrFormat("%d:%d:%d", e.partition, e.write_pointer, e.counter), std::move(cells));
  }
  return r;
}

absl::StatusOr<Reply> CmdQueueStatus(Ctx& c) {
  BASALT_ASSIGN_OR_RETURN(std::string name, TableArg(c));
  int64_t interval_ms = 1000;
  if (c.cmd.args.size() > 1) {
    const Value& h = c.cmd.args[1];
    if (!h.is_hash()) return ArgError(c, h, "a hash: {INTERVAL => 1000}");
    BASALT_RETURN_IF_ERROR(CheckKeys(c, h, {"INTERVAL"}));
    if (const Value* v = h.Find("INTERVAL")) {
      BASALT_ASSIGN_OR_RETURN(interval_ms, IntInRange(c, *v, "INTERVAL (ms)", 0, 600000));
    }
  }
  // Two looks INTERVAL apart: the rates are what changed between them.
  absl::StatusOr<std::vector<GroupStatus>> before = GetQueueStatus(c.conn, name);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, before.status()));
  const absl::Time t0 = absl::Now();
  if (interval_ms > 0) absl::SleepFor(absl::Milliseconds(interval_ms));
  absl::StatusOr<std::vector<GroupStatus>> after = GetQueueStatus(c.conn, name);
  BASALT_RETURN_IF_ERROR(Wrap(c, name, after.status()));
  const double secs = std::max(1e-3, absl::ToDoubleSeconds(absl::Now() - t0));
  Reply r = Done(c, name);
  r.kind = Reply::Kind::kText;
  r.text = absl::StrFormat("%-16s %8s %10s %10s %12s %12s %12s\n", "GROUP", "CONSUMER", "DEPTH", "LAG_MS",
                           "CONSUMED", "CONSUMED/S", "ENQUEUED/S");
  for (const GroupStatus& g : *after) {
    const GroupStatus* old = nullptr;
    for (const GroupStatus& b : *before) {
      if (b.group.name == g.group.name) old = &b;
    }
    for (const ConsumerStatus& cs : g.consumers) {
      double consumed_rate = 0, enqueued_rate = 0;
      if (old != nullptr) {
        for (const ConsumerStatus& o : old->consumers) {
          if (o.instance != cs.instance) continue;
          consumed_rate = (static_cast<double>(cs.consumed) - static_cast<double>(o.consumed)) / secs;
          enqueued_rate = (static_cast<double>(cs.depth + cs.consumed) - static_cast<double>(o.depth + o.consumed)) / secs;
        }
      }
      absl::StrAppend(&r.text,
                      absl::StrFormat("%-16s %8s %10d %10d %12d %12.1f %12.1f\n", g.group.name,
                                      g.group.partitioning == Partitioning::kFifo ? "all" : absl::StrCat(cs.instance),
                                      cs.depth, cs.oldest_age_ms, cs.consumed, consumed_rate, enqueued_rate));
    }
  }
  return r;
}

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
      {"status", "general", 0, 1, "status ['simple' | 'summary' | 'detailed']",
       "Shows the server's state, its verbs transport included; 'detailed' adds a line per table and,\n"
       "from a cluster's master, each region server with its load and regions.", CmdStatus},
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
       "  create 't1', 'cf', MAX_FILESIZE => 1073741824"),
       CmdCreate},
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
  for (const char* group : {"general", "ddl", "dml", "queues", "tools", "security"}) {
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
  Ctx ctx{conn_, cmd, format_, out_};
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
