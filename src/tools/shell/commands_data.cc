// The shell's data commands: put, delete, get, scan, count, incr, get_counter, append.
#include "src/tools/shell/command_args.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"
#include "src/tools/shell/escape.h"

namespace basalt::shell::internal {

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

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace basalt::shell::internal
