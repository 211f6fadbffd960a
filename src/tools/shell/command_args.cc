// The shell commands' arguments: checked and converted, with errors naming where they are.
#include "src/tools/shell/command_args.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "basalt/family_values.h"
#include "common/status.h"
#include "src/tools/shell/escape.h"

namespace basalt::shell::internal {

// ---------------------------------------------------------------------------------------------
// Arguments

// Where an argument is written: "column C", with " of line L" past the command's first line.
std::string Where(const Ctx& c, const Value& v) {
  std::string at = absl::StrCat("column ", v.column);
  if (c.cmd.line > 1 || v.line != c.cmd.line) absl::StrAppend(&at, " of line ", v.line);
  return at;
}

absl::Status ArgError(const Ctx& c, const Value& v, std::string_view what, std::string_view detail) {
  std::string msg = absl::StrCat(AV(c.cmd.name), ": expected ", AV(what), ", found ", v.Describe(), " at ", Where(c, v));
  if (v.kind == Value::Kind::kName) absl::StrAppend(&msg, " (quote it: '", v.str, "')");
  if (!detail.empty()) absl::StrAppend(&msg, " ", AV(detail));
  return absl::InvalidArgumentError(msg);
}

// A byte string argument. Integers are accepted as their decimal text, as the HBase shell
// does with Ruby's to_s (row 1 is the row "1"), when `allow_int`.
absl::StatusOr<std::string> Bytes(const Ctx& c, const Value& v, std::string_view what, bool allow_int) {
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

absl::StatusOr<NamePattern> NamePattern::Arg(const Ctx& c, size_t i) {
  NamePattern p;
  if (i >= c.cmd.args.size()) return p;
  BASALT_ASSIGN_OR_RETURN(std::string re, Bytes(c, c.cmd.args[i], "a regular expression", false));
  // std::regex reports a bad pattern by throwing; check it here, where it is our input.
  try {
    p.re_.emplace(re, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": invalid regular expression '", re, "': ", e.what()));
  }
  return p;
}

absl::StatusOr<bool> NamePattern::Matches(const Ctx& c, const std::string& name) const {
  if (!re_.has_value()) return true;
  try {  // matching may throw on a pathological pattern (error_complexity, error_stack)
    return std::regex_match(name, *re_);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(AV(c.cmd.name), ": cannot match the regular expression: ", e.what()));
  }
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

absl::StatusOr<std::string> TableArg(const Ctx& c) { return Bytes(c, c.cmd.args[0], "a table name", false); }

}  // namespace basalt::shell::internal
