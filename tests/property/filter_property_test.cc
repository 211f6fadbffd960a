// Property test of server-side filters and reverse scans (basalt/filter.h, docs/DESIGN.md §13).
// A real basalt-server on loopback holds a table of 6 regions, families "a" (3 versions) and
// "b" (1), with random rows over a small alphabet written with explicit timestamps, deletes of
// every kind (version, column, family, row) and flushes between the writes, so cells live both
// in files and in memstores. Random scans (bounds inside and across regions, forward and
// reversed, column selections, time ranges, versions, limits, 1-3 rows per message) and Gets,
// with random filter trees (depth <= 3, every kind, parameters drawn from the data), are compared
// with a straightforward evaluation of filter.h's rules written here, on the cells an in-memory
// model of the writes says are visible (docs/DESIGN.md §1; the model is checked first against an
// unfiltered scan of every version).
//
// Where filter.h leaves the answer open the cases stay out: one KeyOnly per tree at most (two
// would strip each other's output), no kNoOp, no scan whose start row equals its stop row.
//
// A mismatch is shrunk (list members and scan options dropped while it still fails) and printed
// as C++ (the Scan or Get and its Filter), with the expected and actual rows, the visible cells
// of the rows concerned and the seed.
// Environment: BASALT_PROPERTY_SEED=N (default 1), BASALT_PROPERTY_CASES=M (default 1000).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "re2/re2.h"
#include "tests/integration/integration_util.h"

namespace basalt::testing {
namespace {

constexpr char kTable[] = "filtered";
const std::vector<std::string> kSplitKeys = {"b", "bc", "c", "cb", "d"};
struct FamilyDef {
  std::string name;
  int max_versions;
  std::vector<std::string> qualifiers;
};
const std::vector<FamilyDef>& Families() {  // in name order, as a row's cells are
  static const auto* f = new std::vector<FamilyDef>{{"a", 3, {"q", "qa", "qab", "qb", "r", "rb", "s"}},
                                                    {"b", 1, {"q", "qb", "r", "s"}}};
  return *f;
}
constexpr char kAlphabet[] = "abcd";

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

// ------------------------------------------------------------------ cells and printing

struct Cell {
  std::string family, qualifier;
  int64_t ts = 0;
  std::string value;
  bool operator==(const Cell&) const = default;
};
struct Row {
  std::string key;
  std::vector<Cell> cells;
  bool operator==(const Row&) const = default;
};

std::string Q(std::string_view b) {  // a C++ string literal
  std::string s = "\"";
  for (unsigned char c : b) {
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
      s += static_cast<char>(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      absl::StrAppend(&s, "\\x", std::string(1, kHex[c >> 4]), std::string(1, kHex[c & 15]));
    }
  }
  return s + "\"";
}

std::string RowText(const Row& r) {
  std::string s = absl::StrCat("    ", Q(r.key), ":");
  for (const Cell& c : r.cells) absl::StrAppend(&s, " ", c.family, ":", c.qualifier, "@", c.ts, "=", Q(c.value));
  return s + "\n";
}

std::string RowsText(const std::vector<Row>& rows) {
  std::string s = absl::StrCat("  (", rows.size(), " rows)\n");
  for (const Row& r : rows) s += RowText(r);
  return s;
}

const char* OpName(FilterOp op) {
  switch (op) {
    case FilterOp::kLess: return "FilterOp::kLess";
    case FilterOp::kLessOrEqual: return "FilterOp::kLessOrEqual";
    case FilterOp::kEqual: return "FilterOp::kEqual";
    case FilterOp::kNotEqual: return "FilterOp::kNotEqual";
    case FilterOp::kGreaterOrEqual: return "FilterOp::kGreaterOrEqual";
    case FilterOp::kGreater: return "FilterOp::kGreater";
    case FilterOp::kNoOp: return "FilterOp::kNoOp";
  }
  return "?";
}

std::string ComparatorText(const Comparator& c) {
  switch (c.kind) {
    case Comparator::Kind::kBinary: return absl::StrCat("Comparator::Binary(", Q(c.value), ")");
    case Comparator::Kind::kBinaryPrefix: return absl::StrCat("Comparator::BinaryPrefix(", Q(c.value), ")");
    case Comparator::Kind::kRegex: return absl::StrCat("Comparator::Regex(", Q(c.value), ")");
    case Comparator::Kind::kSubstring: return absl::StrCat("Comparator::Substring(", Q(c.value), ")");
  }
  return "?";
}

const char* Bool(bool b) { return b ? "true" : "false"; }

// The filter as the C++ that builds it (FilterToString's language is not needed for that).
std::string FilterText(const Filter& f) {
  using K = Filter::Kind;
  switch (f.kind) {
    case K::kPrefix: return absl::StrCat("Filter::Prefix(", Q(f.prefix), ")");
    case K::kRow: return absl::StrCat("Filter::Row(", OpName(f.op), ", ", ComparatorText(f.comparator), ")");
    case K::kMultiRowRange: {
      std::string s = "Filter::MultiRowRange({";
      for (size_t i = 0; i < f.ranges.size(); ++i) {
        const RowRange& r = f.ranges[i];
        absl::StrAppend(&s, i ? ", " : "", "{", Q(r.start), ", ", Bool(r.start_inclusive), ", ", Q(r.stop), ", ",
                        Bool(r.stop_inclusive), "}");
      }
      return s + "})";
    }
    case K::kQualifier:
      return absl::StrCat("Filter::Qualifier(", OpName(f.op), ", ", ComparatorText(f.comparator), ")");
    case K::kValue: return absl::StrCat("Filter::Value(", OpName(f.op), ", ", ComparatorText(f.comparator), ")");
    case K::kColumnPrefix: return absl::StrCat("Filter::ColumnPrefix(", Q(f.prefix), ")");
    case K::kColumnRange:
      return absl::StrCat("Filter::ColumnRange(", Q(f.min_column), ", ", Bool(f.min_inclusive), ", ", Q(f.max_column),
                          ", ", Bool(f.max_inclusive), ")");
    case K::kColumnPagination: return absl::StrCat("Filter::ColumnPagination(", f.limit, ", ", f.offset, ")");
    case K::kTimestamps: {
      std::string s = "Filter::Timestamps({";
      for (size_t i = 0; i < f.timestamps.size(); ++i) absl::StrAppend(&s, i ? ", " : "", f.timestamps[i]);
      return s + "})";
    }
    case K::kKeyOnly: return absl::StrCat("Filter::KeyOnly(", Bool(f.len_as_value), ")");
    case K::kFirstKeyOnly: return "Filter::FirstKeyOnly()";
    case K::kSingleColumnValue:
      return absl::StrCat("Filter::SingleColumnValue(", Q(f.family), ", ", Q(f.qualifier), ", ", OpName(f.op), ", ",
                          ComparatorText(f.comparator), ", ", Bool(f.filter_if_missing), ", ",
                          Bool(f.latest_version_only), ")");
    case K::kPage: return absl::StrCat("Filter::Page(", f.limit, ")");
    case K::kList: {
      std::string s = absl::StrCat("Filter::List(", f.must_pass_all ? "Filter::kMustPassAll" : "Filter::kMustPassOne",
                                   ", {");
      for (size_t i = 0; i < f.filters.size(); ++i) absl::StrAppend(&s, i ? ", " : "", FilterText(f.filters[i]));
      return s + "})";
    }
  }
  return "?";
}

// ------------------------------------------------------------------ the data model

// What the writes leave visible (docs/DESIGN.md §1, storage/internal/visibility.h's rules, no
// TTL): per column, the newest max_versions puts by timestamp are kept (a later write of the
// same timestamp replaces the value; deleted puts count), then DeleteFamily and DeleteColumn
// hide puts at or below their timestamp, Delete the put at exactly its timestamp.
class Model {
 public:
  // A write without a timestamp takes the server's clock: later than every explicit one here.
  static constexpr int64_t kServerClock = kLatestTimestamp - 1;

  void Apply(const RowMutationsBase& m) {
    if (m.mutations.empty() && m.deletes_row_when_empty) {
      for (const FamilyDef& f : Families()) marks_[{m.row, f.name}].push_back({CellMutation::Kind::kDeleteFamily, "", kServerClock});
      return;
    }
    for (const CellMutation& c : m.mutations) {
      const int64_t ts = c.timestamp == kLatestTimestamp ? kServerClock : c.timestamp;
      switch (c.kind) {
        case CellMutation::Kind::kPut: puts_[{m.row, c.family}][c.qualifier][ts] = c.value; break;
        case CellMutation::Kind::kDeleteRow:
          for (const FamilyDef& f : Families()) marks_[{m.row, f.name}].push_back({CellMutation::Kind::kDeleteFamily, "", ts});
          break;
        default: marks_[{m.row, c.family}].push_back({c.kind, c.qualifier, ts}); break;
      }
    }
  }

  // Every visible cell of the row, in (family, qualifier, timestamp descending) order.
  std::vector<Cell> Visible(const std::string& row) const {
    std::vector<Cell> out;
    for (const FamilyDef& f : Families()) {
      auto it = puts_.find({row, f.name});
      if (it == puts_.end()) continue;
      auto mk = marks_.find({row, f.name});
      for (const auto& [qualifier, versions] : it->second) {
        int kept = 0;
        for (auto v = versions.rbegin(); v != versions.rend() && kept < f.max_versions; ++v, ++kept) {
          if (mk == marks_.end() || !Hidden(mk->second, qualifier, v->first)) out.push_back({f.name, qualifier, v->first, v->second});
        }
      }
    }
    return out;
  }
  // Rows with a visible cell, ascending.
  std::vector<std::string> Rows() const {
    std::set<std::string> keys;
    for (const auto& [key, cols] : puts_) keys.insert(key.first);
    std::vector<std::string> out;
    for (const auto& k : keys) {
      if (!Visible(k).empty()) out.push_back(k);
    }
    return out;
  }

 private:
  struct Mark {
    CellMutation::Kind kind;
    std::string qualifier;
    int64_t ts;
  };
  static bool Hidden(const std::vector<Mark>& marks, const std::string& qualifier, int64_t ts) {
    for (const Mark& m : marks) {
      if (m.kind == CellMutation::Kind::kDeleteFamily && ts <= m.ts) return true;
      if (m.qualifier != qualifier) continue;
      if (m.kind == CellMutation::Kind::kDeleteColumn && ts <= m.ts) return true;
      if (m.kind == CellMutation::Kind::kDelete && ts == m.ts) return true;
    }
    return false;
  }
  // (row, family) -> qualifier -> timestamp -> value
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::map<int64_t, std::string>>> puts_;
  std::map<std::pair<std::string, std::string>, std::vector<Mark>> marks_;
};

// ------------------------------------------------------------------ the reference evaluator

// filter.h's comparison: the cell's bytes OP the comparator's value.
bool Compares(FilterOp op, const Comparator& c, const RE2* re, std::string_view bytes) {
  int cmp = 0;  // sign of (cell bytes) - (comparator value); for Regex/Substring 0 means "found"
  switch (c.kind) {
    case Comparator::Kind::kBinary: cmp = bytes.compare(c.value); break;
    case Comparator::Kind::kBinaryPrefix: cmp = bytes.substr(0, c.value.size()).compare(c.value); break;
    case Comparator::Kind::kRegex: cmp = RE2::PartialMatch(bytes, *re) ? 0 : 1; break;
    case Comparator::Kind::kSubstring: {
      auto lower = [](std::string_view s) {
        std::string l(s);
        for (char& ch : l) {
          if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
        }
        return l;
      };
      cmp = lower(bytes).find(lower(c.value)) != std::string::npos ? 0 : 1;
      break;
    }
  }
  switch (op) {
    case FilterOp::kLess: return cmp < 0;
    case FilterOp::kLessOrEqual: return cmp <= 0;
    case FilterOp::kEqual: return cmp == 0;
    case FilterOp::kNotEqual: return cmp != 0;
    case FilterOp::kGreaterOrEqual: return cmp >= 0;
    case FilterOp::kGreater: return cmp > 0;
    case FilterOp::kNoOp: return false;
  }
  return false;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool InRange(const RowRange& r, const std::string& row) {
  const bool above = r.start.empty() || row > r.start || (r.start_inclusive && row == r.start);
  const bool below = r.stop.empty() || row < r.stop || (r.stop_inclusive && row == r.stop);
  return above && below;
}

// A filter's answer for one cell. kNextRow refuses the cell and, reaching the root, ends the
// row's reading (filter.h, stage 2); filter.h gives no other answer a visible effect.
enum class Answer { kInclude, kSkip, kNextRow };

Answer Includes(bool b) { return b ? Answer::kInclude : Answer::kSkip; }

// One node of a filter tree with its state, evaluated per row in filter.h's three stages:
// RefuseRowKey, then CellAnswer for each cell the read sees (before the version count) until
// the root answers kNextRow, then RefuseRow on the assembled row. List ALL asks its members in
// order and the first refusal is its answer; List ONE asks every member that did not refuse the
// row key, about every cell: it includes what one includes, and answers kNextRow only when all
// of them do. `decisive`: no MUST_PASS_ONE list above (a SingleColumnValue's refusal drops the row).
class RefFilter {
 public:
  RefFilter(const Filter& f, bool decisive) : f_(f), decisive_(decisive) {
    for (const Filter& k : f.filters) kids_.push_back(std::make_unique<RefFilter>(k, decisive && f.must_pass_all));
    if (f.comparator.kind == Comparator::Kind::kRegex) {
      RE2::Options o;
      o.set_encoding(RE2::Options::EncodingLatin1);  // "matching anywhere in the bytes"
      o.set_log_errors(false);
      re_ = std::make_unique<RE2>(f.comparator.value, o);
    }
  }

  void Reset() {  // before each row; a Page's count carries on
    key_refused_ = false;
    column_ = -1;
    last_family_.clear();
    last_qualifier_.clear();
    seen_cell_ = found_ = matched_ = false;
    for (auto& k : kids_) k->Reset();
  }

  bool RefuseRowKey(const std::string& row) {
    key_refused_ = DecideRowKey(row);
    return key_refused_;
  }

  Answer CellAnswer(const Cell& c) {
    using K = Filter::Kind;
    switch (f_.kind) {
      case K::kQualifier: return Includes(Compares(f_.op, f_.comparator, re_.get(), c.qualifier));
      case K::kValue: return Includes(Compares(f_.op, f_.comparator, re_.get(), c.value));
      case K::kColumnPrefix: return Includes(StartsWith(c.qualifier, f_.prefix));
      case K::kColumnRange: {
        const bool above = f_.min_column.empty() || c.qualifier > f_.min_column ||
                           (f_.min_inclusive && c.qualifier == f_.min_column);
        const bool below = f_.max_column.empty() || c.qualifier < f_.max_column ||
                           (f_.max_inclusive && c.qualifier == f_.max_column);
        return Includes(above && below);
      }
      case K::kColumnPagination: {  // "next row" past its page
        const bool older = column_ >= 0 && c.family == last_family_ && c.qualifier == last_qualifier_;
        if (!older) {
          ++column_;
          last_family_ = c.family;
          last_qualifier_ = c.qualifier;
        }
        if (column_ >= f_.offset + f_.limit) return Answer::kNextRow;
        return Includes(!older && column_ >= f_.offset);
      }
      case K::kTimestamps:
        return Includes(std::find(f_.timestamps.begin(), f_.timestamps.end(), c.ts) != f_.timestamps.end());
      case K::kFirstKeyOnly:  // "next row" after the first cell
        if (seen_cell_) return Answer::kNextRow;
        seen_cell_ = true;
        return Answer::kInclude;
      case K::kSingleColumnValue:
        // "Next row" once its column failed (the failing version itself too, as HBase's NEXT_ROW),
        // when decisive and deciding by the newest version; else every cell passes.
        if (c.family == f_.family && c.qualifier == f_.qualifier && !(f_.latest_version_only && found_)) {
          found_ = true;
          matched_ = matched_ || Compares(f_.op, f_.comparator, re_.get(), c.value);
        }
        return decisive_ && f_.latest_version_only && found_ && !matched_ ? Answer::kNextRow : Answer::kInclude;
      case K::kList:
        if (f_.must_pass_all) {
          for (auto& k : kids_) {
            const Answer a = k->CellAnswer(c);
            if (a != Answer::kInclude) return a;
          }
          return Answer::kInclude;
        } else {
          bool any = false, all_next_row = true;
          for (auto& k : kids_) {
            if (k->key_refused_) continue;
            const Answer a = k->CellAnswer(c);
            any = any || a == Answer::kInclude;
            all_next_row = all_next_row && a == Answer::kNextRow;
          }
          return any ? Answer::kInclude : all_next_row ? Answer::kNextRow : Answer::kSkip;
        }
      default: return Answer::kInclude;  // Prefix, Row, MultiRowRange, KeyOnly, Page
    }
  }

  bool RefuseRow(std::vector<Cell>* cells) {
    using K = Filter::Kind;
    switch (f_.kind) {
      case K::kSingleColumnValue: return found_ ? !matched_ : f_.filter_if_missing;
      case K::kPage: return ++page_rows_ > f_.limit;
      case K::kKeyOnly:
        for (Cell& c : *cells) {
          if (f_.len_as_value) {
            const uint32_t n = static_cast<uint32_t>(c.value.size());
            c.value = std::string{static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                                  static_cast<char>(n)};
          } else {
            c.value.clear();
          }
        }
        return false;
      case K::kList:
        if (f_.must_pass_all) {
          for (auto& k : kids_) {
            if (k->RefuseRow(cells)) return true;
          }
          return false;
        } else {
          bool all = true;
          for (auto& k : kids_) {
            if (!k->key_refused_ && !k->RefuseRow(cells)) all = false;
          }
          return all;
        }
      default: return false;
    }
  }

 private:
  bool DecideRowKey(const std::string& row) {
    using K = Filter::Kind;
    switch (f_.kind) {
      case K::kPrefix: return !StartsWith(row, f_.prefix);
      case K::kRow: return !Compares(f_.op, f_.comparator, re_.get(), row);
      case K::kMultiRowRange:
        return std::none_of(f_.ranges.begin(), f_.ranges.end(), [&](const RowRange& r) { return InRange(r, row); });
      case K::kPage: return page_rows_ >= f_.limit;
      case K::kList:
        if (f_.must_pass_all) {
          for (auto& k : kids_) {
            if (k->RefuseRowKey(row)) return true;
          }
          return false;
        } else {
          bool all = true;
          for (auto& k : kids_) {
            if (!k->RefuseRowKey(row)) all = false;
          }
          return all;
        }
      default: return false;
    }
  }

  const Filter& f_;
  const bool decisive_;
  std::vector<std::unique_ptr<RefFilter>> kids_;
  std::unique_ptr<RE2> re_;
  int64_t page_rows_ = 0;  // Page: rows it passed or refused at the row stage, over the read
  // Per row:
  bool key_refused_ = false;
  int64_t column_ = -1;  // ColumnPagination: the column number of the last cell seen
  std::string last_family_, last_qualifier_;
  bool seen_cell_ = false;            // FirstKeyOnly
  bool found_ = false, matched_ = false;  // SingleColumnValue
};

// ------------------------------------------------------------------ cases

struct Case {
  bool is_get = false;
  std::string row;          // Get
  std::string start, stop;  // Scan
  bool reversed = false;
  uint64_t limit = 0;
  uint32_t caching = 0;
  std::vector<ColumnRef> columns;
  int64_t min_ts = 0, max_ts = kLatestTimestamp;
  int max_versions = 1;
  std::optional<Filter> filter;
};

std::string CaseText(const Case& c) {
  std::string s = c.is_get ? absl::StrCat("Get(", Q(c.row), ")") : "Scan()";
  if (!c.is_get) {
    if (!c.start.empty()) absl::StrAppend(&s, ".WithStartRow(", Q(c.start), ")");
    if (!c.stop.empty()) absl::StrAppend(&s, ".WithStopRow(", Q(c.stop), ")");
    if (c.reversed) s += ".SetReversed(true)";
  }
  for (const ColumnRef& r : c.columns) {
    if (r.qualifiers.empty()) absl::StrAppend(&s, ".AddFamily(", Q(r.family), ")");
    for (const auto& q : r.qualifiers) absl::StrAppend(&s, ".AddColumn(", Q(r.family), ", ", Q(q), ")");
  }
  if (c.min_ts != 0 || c.max_ts != kLatestTimestamp) {
    absl::StrAppend(&s, ".SetTimeRange(", c.min_ts, ", ",
                    c.max_ts == kLatestTimestamp ? std::string("kLatestTimestamp") : absl::StrCat(c.max_ts), ")");
  }
  if (c.max_versions != 1) absl::StrAppend(&s, ".SetMaxVersions(", c.max_versions, ")");
  if (c.limit != 0) absl::StrAppend(&s, ".SetLimit(", c.limit, ")");
  if (c.caching != 0) absl::StrAppend(&s, ".SetCaching(", c.caching, ")");
  if (c.filter) absl::StrAppend(&s, "\n      .SetFilter(", FilterText(*c.filter), ")");
  return s;
}

bool Selected(const Case& c, const Cell& cell) {
  if (cell.ts < c.min_ts || (c.max_ts != kLatestTimestamp && cell.ts >= c.max_ts)) return false;
  if (c.columns.empty()) return true;
  for (const ColumnRef& r : c.columns) {
    if (r.family != cell.family) continue;
    return r.qualifiers.empty() ||
           std::find(r.qualifiers.begin(), r.qualifiers.end(), cell.qualifier) != r.qualifiers.end();
  }
  return false;
}

// The rows of a case, in the order it reads them.
std::vector<std::string> RowsOf(const Case& c, const Model& model) {
  std::vector<std::string> rows;
  for (const std::string& r : model.Rows()) {
    if (c.is_get) {
      if (r == c.row) rows.push_back(r);
    } else if (!c.reversed) {
      if (r >= c.start && (c.stop.empty() || r < c.stop)) rows.push_back(r);
    } else {
      if ((c.start.empty() || r <= c.start) && (c.stop.empty() || r > c.stop)) rows.push_back(r);
    }
  }
  if (c.reversed && !c.is_get) std::reverse(rows.begin(), rows.end());
  return rows;
}

// What filter.h says the case returns.
std::vector<Row> Expected(const Case& c, const Model& model) {
  std::optional<RefFilter> filter;
  if (c.filter) filter.emplace(*c.filter, /*decisive=*/true);
  std::vector<Row> out;
  for (const std::string& key : RowsOf(c, model)) {
    if (c.limit != 0 && out.size() >= c.limit) break;
    std::vector<Cell> seen;
    for (Cell& cell : model.Visible(key)) {
      if (Selected(c, cell)) seen.push_back(std::move(cell));
    }
    if (seen.empty()) continue;
    if (filter) {
      filter->Reset();
      if (filter->RefuseRowKey(key)) continue;
    }
    Row row{key, {}};
    int versions = 0;
    for (const Cell& cell : seen) {
      const Answer a = filter ? filter->CellAnswer(cell) : Answer::kInclude;
      if (a == Answer::kNextRow) break;
      if (a == Answer::kSkip) continue;
      const bool same_column = !row.cells.empty() && row.cells.back().family == cell.family &&
                               row.cells.back().qualifier == cell.qualifier;
      versions = same_column ? versions + 1 : 1;
      if (versions <= c.max_versions) row.cells.push_back(cell);
    }
    if (row.cells.empty()) continue;
    if (filter && filter->RefuseRow(&row.cells)) continue;
    out.push_back(std::move(row));
  }
  return out;
}

// ------------------------------------------------------------------ random generation

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Int(0, static_cast<int>(v.size()) - 1)]; }
  std::mt19937_64& rng() { return rng_; }

  // The data filters are drawn from: visible rows and cells, and every value written.
  void SetPools(std::vector<std::string> rows, std::vector<Cell> cells, std::vector<std::string> values) {
    rows_ = std::move(rows);
    cells_ = std::move(cells);
    values_ = std::move(values);
    if (values_.empty()) values_.push_back("x");
    if (cells_.empty()) cells_.push_back({"a", "q", 1, "x"});
  }

  std::string RandomKey() {
    std::string k;
    for (int n = Int(1, 3); n > 0; --n) k += kAlphabet[Int(0, 3)];
    return k;
  }
  std::string Prefix(const std::string& s) { return s.substr(0, Int(0, static_cast<int>(s.size()))); }
  std::string RowLike() {
    switch (Int(0, 9)) {
      case 0: case 1: case 2: case 3: return Pick(rows_);
      case 4: case 5: return Prefix(Pick(rows_));
      case 6: return Pick(kSplitKeys);
      default: return RandomKey();
    }
  }
  std::string QualifierLike() {
    const FamilyDef& f = Pick(Families());
    switch (Int(0, 5)) {
      case 0: return Prefix(Pick(f.qualifiers));
      case 1: return Pick(std::vector<std::string>{"p", "qaa", "qc", "ra", "t", "z"});
      default: return Pick(f.qualifiers);
    }
  }
  std::string ValueLike() {
    switch (Int(0, 5)) {
      case 0: return Prefix(Pick(values_));
      case 1: return RandomValue();
      default: return Pick(values_);
    }
  }
  std::string RandomValue() {
    static const char kChars[] = "xyzXY";
    std::string v;
    for (int n = Int(0, 3); n > 0; --n) v += kChars[Int(0, 4)];
    return v;
  }
  int64_t Timestamp() { return Int(1, 8); }

  // A comparator biased to `like` (rows, qualifiers or values) and an op valid for it.
  std::pair<FilterOp, Comparator> Comparison(const std::function<std::string()>& like) {
    static const std::vector<FilterOp> kOps = {FilterOp::kLess,     FilterOp::kLessOrEqual,    FilterOp::kEqual,
                                               FilterOp::kNotEqual, FilterOp::kGreaterOrEqual, FilterOp::kGreater};
    const FilterOp eq_ne = Chance(0.7) ? FilterOp::kEqual : FilterOp::kNotEqual;
    switch (Int(0, 19)) {
      case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8:
        return {Pick(kOps), Comparator::Binary(like())};
      case 9: case 10: case 11: case 12: return {Pick(kOps), Comparator::BinaryPrefix(Prefix(like()))};
      case 13: case 14: case 15: case 16: return {eq_ne, Comparator::Regex(Regex(like()))};
      default: {
        std::string s = like();
        const int from = Int(0, static_cast<int>(s.size()));
        s = s.substr(from, Int(0, static_cast<int>(s.size()) - from));
        for (char& ch : s) {
          if (Chance(0.4)) ch = static_cast<char>(ch >= 'a' ? ch - 'a' + 'A' : ch - 'A' + 'a');
        }
        return {eq_ne, Comparator::Substring(s)};
      }
    }
  }
  std::string Regex(const std::string& s) {
    if (s.empty()) return Chance(0.5) ? "^$" : ".";
    const int n = static_cast<int>(s.size());
    switch (Int(0, 7)) {
      case 0: return "^" + s.substr(0, Int(1, n));
      case 1: return s.substr(Int(0, n - 1)) + "$";
      case 2: {
        std::string r = s;
        r[Int(0, n - 1)] = '.';
        return r;
      }
      case 3: return absl::StrCat("[", s.substr(0, 1), Chance(0.5) ? "b" : "Y", "]");
      case 4: return s.substr(0, 1) + "+" + s.substr(1);
      case 5: return "^" + s + "$";
      case 6: return absl::StrCat("(", s, "|", Chance(0.5) ? "c" : "z", ")");
      default: return "(?i)" + s;
    }
  }

  Filter Leaf(bool* key_only_used, std::optional<Filter::Kind> only = std::nullopt) {
    using K = Filter::Kind;
    static const std::vector<std::pair<K, int>> kWeights = {
        {K::kPrefix, 8},  {K::kRow, 8},          {K::kMultiRowRange, 6}, {K::kQualifier, 8},
        {K::kValue, 10},  {K::kColumnPrefix, 6}, {K::kColumnRange, 6},   {K::kColumnPagination, 6},
        {K::kTimestamps, 7}, {K::kKeyOnly, 4},   {K::kFirstKeyOnly, 4},  {K::kSingleColumnValue, 12},
        {K::kPage, 6}};
    int total = 0;
    for (const auto& [k, w] : kWeights) total += w;
    int x = Int(0, total - 1);
    K kind = K::kPage;
    for (const auto& [k, w] : kWeights) {
      if (x < w) {
        kind = k;
        break;
      }
      x -= w;
    }
    // At most one KeyOnly per tree: two would strip each other's output, which filter.h leaves open.
    if (kind == K::kKeyOnly && *key_only_used) kind = K::kValue;
    if (only) kind = *only;
    auto rows = [this] { return RowLike(); };
    auto quals = [this] { return QualifierLike(); };
    auto values = [this] { return ValueLike(); };
    switch (kind) {
      case K::kPrefix: return Filter::Prefix(Prefix(RowLike()));
      case K::kRow: {
        auto [op, c] = Comparison(rows);
        return Filter::Row(op, c);
      }
      case K::kMultiRowRange: {
        std::vector<RowRange> ranges;
        for (int n = Int(1, 3); n > 0; --n) {
          RowRange r{Chance(0.2) ? "" : RowLike(), Chance(0.6), Chance(0.2) ? "" : RowLike(), Chance(0.4)};
          if (!r.start.empty() && !r.stop.empty() && r.start > r.stop) std::swap(r.start, r.stop);
          ranges.push_back(r);
        }
        return Filter::MultiRowRange(ranges);
      }
      case K::kQualifier: {
        auto [op, c] = Comparison(quals);
        return Filter::Qualifier(op, c);
      }
      case K::kValue: {
        auto [op, c] = Comparison(values);
        return Filter::Value(op, c);
      }
      case K::kColumnPrefix: return Filter::ColumnPrefix(Prefix(QualifierLike()));
      case K::kColumnRange: {
        std::string lo = Chance(0.2) ? "" : QualifierLike(), hi = Chance(0.2) ? "" : QualifierLike();
        if (!lo.empty() && !hi.empty() && lo > hi) std::swap(lo, hi);
        return Filter::ColumnRange(lo, Chance(0.6), hi, Chance(0.5));
      }
      case K::kColumnPagination: return Filter::ColumnPagination(Chance(0.1) ? 0 : Int(1, 3), Int(0, 3));
      case K::kTimestamps: {
        std::vector<int64_t> ts;
        for (int n = Chance(0.03) ? 0 : Int(1, 3); n > 0; --n) ts.push_back(Int(0, 9));
        return Filter::Timestamps(ts);
      }
      case K::kKeyOnly: *key_only_used = true; return Filter::KeyOnly(Chance(0.4));
      case K::kFirstKeyOnly: return Filter::FirstKeyOnly();
      case K::kSingleColumnValue: {  // mostly a column some row has, compared with one of its versions
        const FamilyDef& f = Chance(0.7) ? Families()[0] : Families()[1];
        const Cell cell =
            Chance(0.7) ? Pick(cells_) : Cell{f.name, Chance(0.85) ? Pick(f.qualifiers) : QualifierLike(), 0, ""};
        auto [op, c] = Comparison([&] { return Chance(0.6) ? cell.value : ValueLike(); });
        return Filter::SingleColumnValue(cell.family, cell.qualifier, op, c, Chance(0.5), Chance(0.6));
      }
      case K::kPage: return Filter::Page(Chance(0.05) ? 0 : Int(1, 6));
      default: break;
    }
    return Filter::FirstKeyOnly();
  }

  // Depth 1 is the root; lists nest down to depth 3.
  Filter Tree(int depth, bool* key_only_used) {
    if (depth < 3 && Chance(depth == 1 ? 0.45 : 0.3)) {
      std::vector<Filter> kids;
      const bool all = Chance(0.5);
      // HBase's usual shape, a row condition then cell filters: a SingleColumnValue that must see
      // the cells the filters after it refuse.
      if (all && Chance(0.3)) kids.push_back(Leaf(key_only_used, Filter::Kind::kSingleColumnValue));
      for (int n = Int(1, 3); n > 0; --n) kids.push_back(Tree(depth + 1, key_only_used));
      return Filter::List(all, std::move(kids));
    }
    return Leaf(key_only_used);
  }

  void Read(Case* c) {
    switch (Int(0, 9)) {
      case 0: case 1: case 2: case 3: break;
      case 4: case 5: c->columns.push_back({Pick(Families()).name, {}}); break;
      case 6: c->columns = {{"a", {}}, {"b", {Pick(Families()[1].qualifiers)}}}; break;
      default:
        for (int n = Int(1, 3); n > 0; --n) {
          const FamilyDef& f = Pick(Families());
          const std::string q = Pick(f.qualifiers);
          auto it = std::find_if(c->columns.begin(), c->columns.end(), [&](const ColumnRef& r) { return r.family == f.name; });
          if (it == c->columns.end()) {
            c->columns.push_back({f.name, {q}});
          } else if (std::find(it->qualifiers.begin(), it->qualifiers.end(), q) == it->qualifiers.end()) {
            it->qualifiers.push_back(q);
          }
        }
    }
    if (Chance(0.25)) {
      c->min_ts = Int(0, 6);
      c->max_ts = Chance(0.3) ? kLatestTimestamp : Int(static_cast<int>(c->min_ts) + 1, 9);
    }
    c->max_versions = Pick(std::vector<int>{1, 1, 2, 3, 5});
  }

  Case Scan(double p_reversed, double p_filter) {
    Case c;
    c.reversed = Chance(p_reversed);
    if (Chance(0.65)) c.start = RowLike();
    if (Chance(0.65)) c.stop = RowLike();
    if (!c.start.empty() && !c.stop.empty()) {
      if (c.reversed ? c.start < c.stop : c.start > c.stop) std::swap(c.start, c.stop);
      if (c.start == c.stop) c.stop.clear();  // start == stop: HBase's get-scan, not what this tests
    }
    Read(&c);
    if (Chance(0.2)) c.limit = Int(1, 6);
    if (Chance(0.4)) c.caching = Int(1, 3);
    bool key_only = false;
    if (Chance(p_filter)) c.filter = Tree(1, &key_only);
    return c;
  }

  Case Get(double p_filter) {
    Case c;
    c.is_get = true;
    c.row = Chance(0.85) ? Pick(rows_) : RandomKey();
    Read(&c);
    bool key_only = false;
    if (Chance(p_filter)) c.filter = Tree(1, &key_only);
    return c;
  }

 private:
  std::mt19937_64 rng_;
  std::vector<std::string> rows_, values_;
  std::vector<Cell> cells_;
};

// One-step simplifications of a filter tree: a list replaced by a member, a member dropped.
std::vector<Filter> Simpler(const Filter& f) {
  std::vector<Filter> out;
  if (f.kind != Filter::Kind::kList) return out;
  for (const Filter& k : f.filters) out.push_back(k);
  for (size_t i = 0; i < f.filters.size(); ++i) {
    if (f.filters.size() > 1) {
      Filter g = f;
      g.filters.erase(g.filters.begin() + static_cast<std::ptrdiff_t>(i));
      out.push_back(std::move(g));
    }
    for (Filter& s : Simpler(f.filters[i])) {
      Filter g = f;
      g.filters[i] = std::move(s);
      out.push_back(std::move(g));
    }
  }
  return out;
}

std::vector<Case> SimplerCases(const Case& c) {
  std::vector<Case> out;
  if (c.filter) {
    for (Filter& f : Simpler(*c.filter)) {
      Case d = c;
      d.filter = std::move(f);
      out.push_back(std::move(d));
    }
  }
  auto add = [&](auto change) {
    Case d = c;
    change(d);
    out.push_back(std::move(d));
  };
  if (c.limit != 0) add([](Case& d) { d.limit = 0; });
  if (c.caching != 0) add([](Case& d) { d.caching = 0; });
  if (c.min_ts != 0 || c.max_ts != kLatestTimestamp) add([](Case& d) { d.min_ts = 0, d.max_ts = kLatestTimestamp; });
  for (size_t i = 0; i < c.columns.size(); ++i) {
    add([i](Case& d) { d.columns.erase(d.columns.begin() + static_cast<std::ptrdiff_t>(i)); });
  }
  if (c.max_versions != 1) add([](Case& d) { d.max_versions = 1; });
  if (!c.start.empty()) add([](Case& d) { d.start.clear(); });
  if (!c.stop.empty()) add([](Case& d) { d.stop.clear(); });
  if (c.reversed) add([](Case& d) { d.reversed = false, d.start.clear(), d.stop.clear(); });
  return out;
}

// ------------------------------------------------------------------ the fixture

class FilterProperty : public ServerTest {
 protected:
  void SetUp() override {
    seed_ = EnvU64("BASALT_PROPERTY_SEED", 1);
    cases_ = EnvU64("BASALT_PROPERTY_CASES", 1000);
    gen_ = std::make_unique<Gen>(seed_);
    StartServer();
    TableInfo t;
    t.name = kTable;
    for (const FamilyDef& f : Families()) t.families.push_back(FamilySettings{.name = f.name, .max_versions = f.max_versions});
    absl::Status s = conn_->GetAdmin()->CreateTable(t, kSplitKeys);
    ASSERT_TRUE(s.ok()) << s;
    table_ = conn_->GetTable(kTable);
    ASSERT_NO_FATAL_FAILURE(Load());
  }

  // Writes random rows: puts, a flush, more puts and deletes of every kind, perhaps a flush,
  // whole-row deletes at the server's clock, then puts those deletes hide.
  void Load() {
    Gen& g = *gen_;
    std::vector<std::string> keys;
    for (char a : std::string(kAlphabet)) {
      keys.push_back(std::string(1, a));
      for (char b : std::string(kAlphabet)) {
        keys.push_back(std::string{a, b});
        for (char c : std::string(kAlphabet)) keys.push_back(std::string{a, b, c});
      }
    }
    std::shuffle(keys.begin(), keys.end(), g.rng());
    keys.resize(48);
    std::sort(keys.begin(), keys.end());
    std::vector<std::string> values;
    auto puts = [&](const std::string& row, int n) {
      RowMutationsBase m(row);
      m.durability = Durability::kAsyncWal;
      std::set<std::tuple<std::string, std::string, int64_t>> seen;
      for (; n > 0; --n) {
        const FamilyDef& f = g.Chance(0.7) ? Families()[0] : Families()[1];
        const std::string q = g.Pick(f.qualifiers);
        const int64_t ts = g.Timestamp();
        if (!seen.insert({f.name, q, ts}).second) continue;  // one write per cell per mutation
        values.push_back(g.RandomValue());
        m.mutations.push_back({CellMutation::Kind::kPut, f.name, q, ts, values.back()});
      }
      return m;
    };
    std::vector<RowMutationsBase> batch;
    for (const auto& k : keys) batch.push_back(puts(k, g.Int(2, 7)));
    ASSERT_NO_FATAL_FAILURE(Write(batch));
    absl::Status s = conn_->GetAdmin()->Flush(kTable);
    ASSERT_TRUE(s.ok()) << s;

    batch.clear();
    for (const auto& k : keys) {
      if (g.Chance(0.6)) batch.push_back(puts(k, g.Int(1, 4)));
      if (!g.Chance(0.45)) continue;
      RowMutationsBase d(k);
      d.durability = Durability::kAsyncWal;
      const FamilyDef& f = g.Chance(0.7) ? Families()[0] : Families()[1];
      const std::string q = g.Pick(f.qualifiers);
      switch (g.Int(0, 9)) {
        case 0: case 1: case 2: case 3:
          d.mutations.push_back({CellMutation::Kind::kDelete, f.name, q, g.Timestamp(), ""});
          break;
        case 4: case 5: case 6:
          d.mutations.push_back({CellMutation::Kind::kDeleteColumn, f.name, q, g.Int(1, 6), ""});
          break;
        case 7: case 8:
          d.mutations.push_back({CellMutation::Kind::kDeleteFamily, f.name, "", g.Int(1, 5), ""});
          break;
        default:
          d.mutations.push_back({CellMutation::Kind::kDeleteRow, "", "", g.Int(1, 4), ""});
          break;
      }
      batch.push_back(std::move(d));
    }
    ASSERT_NO_FATAL_FAILURE(Write(batch));
    if (g.Chance(0.5)) {
      s = conn_->GetAdmin()->Flush(kTable);
      ASSERT_TRUE(s.ok()) << s;
    }
    // Two rows deleted whole at the server's clock; later puts with older timestamps stay hidden.
    const std::string gone = g.Pick(keys);
    batch.assign({basalt::Delete(gone), basalt::Delete(g.Pick(keys))});
    ASSERT_NO_FATAL_FAILURE(Write(batch));
    batch.clear();
    batch.push_back(puts(gone, 2));
    for (int i = 0; i < 6; ++i) batch.push_back(puts(g.Pick(keys), g.Int(1, 3)));
    ASSERT_NO_FATAL_FAILURE(Write(batch));

    std::vector<Cell> visible;
    for (const std::string& r : model_.Rows()) {
      for (Cell& c : model_.Visible(r)) visible.push_back(std::move(c));
    }
    g.SetPools(model_.Rows(), std::move(visible), values);
    // The model must agree with the server before it judges filters: every version, no filter.
    Case all;
    all.max_versions = 10;
    absl::StatusOr<std::vector<Row>> got = Run(all);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<Row> want = Expected(all, model_);
    ASSERT_EQ(*got, want) << "the model disagrees with an unfiltered scan of every version (seed " << seed_
                          << ")\nexpected:\n" << RowsText(want) << "actual:\n" << RowsText(*got);
    size_t cells = 0;
    for (const Row& r : want) cells += r.cells.size();
    std::cout << "seed " << seed_ << ": " << want.size() << " rows, " << cells << " visible cells\n";
  }

  void Write(const std::vector<RowMutationsBase>& batch) {
    for (const auto& m : batch) model_.Apply(m);
    absl::StatusOr<std::vector<absl::Status>> r = table_->Batch(batch);
    ASSERT_TRUE(r.ok()) << r.status();
    for (const absl::Status& s : *r) ASSERT_TRUE(s.ok()) << s;
  }

  absl::StatusOr<std::vector<Row>> Run(const Case& c) {
    auto convert = [](const std::string& key, const Result& r) {
      Row row{key, {}};
      for (const KeyValue& kv : r.cells()) row.cells.push_back({kv.family, kv.qualifier, kv.timestamp, kv.value});
      return row;
    };
    std::vector<Row> rows;
    if (c.is_get) {
      basalt::Get get(c.row);
      for (const ColumnRef& r : c.columns) {
        if (r.qualifiers.empty()) get.AddFamily(r.family);
        for (const auto& q : r.qualifiers) get.AddColumn(r.family, q);
      }
      get.SetTimeRange(c.min_ts, c.max_ts).SetMaxVersions(c.max_versions);
      if (c.filter) get.SetFilter(*c.filter);
      absl::StatusOr<Result> r = table_->Get(get);
      if (!r.ok()) return r.status();
      if (!r->empty()) rows.push_back(convert(r->row(), *r));
      return rows;
    }
    basalt::Scan scan;
    scan.WithStartRow(c.start).WithStopRow(c.stop).SetReversed(c.reversed);
    for (const ColumnRef& r : c.columns) {
      if (r.qualifiers.empty()) scan.AddFamily(r.family);
      for (const auto& q : r.qualifiers) scan.AddColumn(r.family, q);
    }
    scan.SetTimeRange(c.min_ts, c.max_ts).SetMaxVersions(c.max_versions).SetLimit(c.limit).SetCaching(c.caching);
    if (c.filter) scan.SetFilter(*c.filter);
    absl::StatusOr<std::unique_ptr<ResultScanner>> scanner = table_->GetScanner(scan);
    if (!scanner.ok()) return scanner.status();
    Result r;
    for (;;) {
      absl::StatusOr<bool> more = (*scanner)->Next(&r);
      if (!more.ok()) return more.status();
      if (!*more) break;
      rows.push_back(convert(r.row(), r));
    }
    return rows;
  }

  // Empty when the server answers as filter.h says; else what differs.
  std::optional<std::string> Check(const Case& c) {
    absl::StatusOr<std::vector<Row>> got = Run(c);
    std::vector<Row> want = Expected(c, model_);
    if (got.ok() && *got == want) return std::nullopt;
    if (!got.ok()) return absl::StrCat("  expected", RowsText(want), "  actual: error ", got.status().ToString(), "\n");
    std::string s;
    if (want.size() + got->size() <= 16) {
      s = absl::StrCat("  expected", RowsText(want), "  actual", RowsText(*got));
    } else {  // only the rows that differ
      std::map<std::string, const Row*> w, g;
      for (const Row& r : want) w[r.key] = &r;
      for (const Row& r : *got) g[r.key] = &r;
      s = absl::StrCat("  ", want.size(), " rows expected, ", got->size(), " returned; those that differ:\n");
      for (const auto* side : {&w, &g}) {
        s += side == &w ? "  expected\n" : "  actual\n";
        for (const auto& [key, row] : *side) {
          const auto& other = side == &w ? g : w;
          auto it = other.find(key);
          if (it == other.end() || !(*it->second == *row)) s += RowText(*row);
        }
      }
      std::vector<std::string> wk, gk;
      for (const Row& r : want) wk.push_back(r.key);
      for (const Row& r : *got) gk.push_back(r.key);
      std::vector<std::string> ws = wk, gs = gk;
      std::sort(ws.begin(), ws.end());
      std::sort(gs.begin(), gs.end());
      if (ws == gs && wk != gk) s += "  (the same rows in another order)\n";
    }
    // The visible cells of the rows the case reads, to rebuild the data with plain puts.
    std::vector<std::string> rows = RowsOf(c, model_);
    if (rows.size() > 12) {  // only those returned differently
      std::map<std::string, std::pair<const Row*, const Row*>> both;
      for (const Row& r : want) both[r.key].first = &r;
      for (const Row& r : *got) both[r.key].second = &r;
      rows.clear();
      for (const auto& [key, p] : both) {
        if (p.first == nullptr || p.second == nullptr || !(*p.first == *p.second)) rows.push_back(key);
      }
    }
    s += "  visible cells of those rows:\n";
    for (const std::string& k : rows) s += RowText(Row{k, model_.Visible(k)});
    return s;
  }

  // Runs `cases_` cases from `make`; each mismatch fails the test, the first few are shrunk
  // and printed in full.
  void RunCases(const std::string& what, const std::function<Case()>& make) {
    const auto start = std::chrono::steady_clock::now();
    int mismatches = 0, nonempty = 0, filtered = 0, reversed = 0, gets = 0;
    for (uint64_t i = 0; i < cases_; ++i) {
      Case c = make();
      gets += c.is_get;
      reversed += c.reversed;
      const std::vector<Row> want = Expected(c, model_);
      nonempty += !want.empty();
      if (c.filter) {
        Case plain = c;
        plain.filter.reset();
        filtered += Expected(plain, model_) != want;
      }
      std::optional<std::string> diff = Check(c);
      if (!diff) continue;
      if (++mismatches > 5) continue;
      Case small = c;
      int steps = 0;
      for (bool progress = true; progress && steps < 200;) {
        progress = false;
        for (Case& d : SimplerCases(small)) {
          if (std::optional<std::string> dd = Check(d)) {
            small = std::move(d);
            diff = std::move(dd);
            progress = true;
            ++steps;
            break;
          }
        }
      }
      ADD_FAILURE() << what << ": seed " << seed_ << " case " << i << " disagrees with filter.h\n  case:   "
                    << CaseText(c) << "\n  shrunk (" << steps << " steps): " << CaseText(small) << "\n"
                    << *diff;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << what << ": seed " << seed_ << ", " << cases_ << " cases (" << gets << " gets, " << reversed
              << " reversed scans) in " << secs << " s: " << nonempty << " expect rows, " << filtered
              << " changed by their filter; " << mismatches << " mismatches\n";
    EXPECT_EQ(mismatches, 0) << what << ": seed " << seed_;
  }

  uint64_t seed_ = 1, cases_ = 1000;
  std::unique_ptr<Gen> gen_;
  Model model_;
  std::unique_ptr<Table> table_;
};

// No filter, forward: the model and the read path agree (what the filtered cases build on).
TEST_F(FilterProperty, UnfilteredScansAndGetsMatchTheModel) {
  RunCases("unfiltered", [this] { return gen_->Chance(0.25) ? gen_->Get(0) : gen_->Scan(0, 0); });
}

// No filter, reversed: rows in descending order from start_row (inclusive) down to stop_row.
TEST_F(FilterProperty, ReversedScansMatchTheModel) {
  RunCases("reversed", [this] { return gen_->Scan(1, 0); });
}

// Random filter trees on scans (either direction) and Gets against filter.h's rules.
TEST_F(FilterProperty, FilteredScansAndGetsMatchTheReference) {
  RunCases("filtered", [this] { return gen_->Chance(0.2) ? gen_->Get(0.95) : gen_->Scan(0.5, 0.95); });
}

// filter.h: a bad filter is refused with InvalidArgument before anything is read, at any depth.
TEST_F(FilterProperty, BadFiltersAreRefusedWithInvalidArgument) {
  const std::vector<Filter> bad = {
      Filter::Value(FilterOp::kLess, Comparator::Regex("x")),
      Filter::Row(FilterOp::kGreater, Comparator::Substring("a")),
      Filter::Qualifier(FilterOp::kEqual, Comparator::Regex("(")),
      Filter::Page(-1),
      Filter::ColumnPagination(-1, 0),
      Filter::ColumnPagination(1, -1),
      Filter::List(Filter::kMustPassOne,
                   {Filter::Prefix("a"), Filter::List(Filter::kMustPassAll, {Filter::Value(FilterOp::kGreaterOrEqual,
                                                                                           Comparator::Substring("x"))})}),
  };
  for (const Filter& f : bad) {
    SCOPED_TRACE(FilterText(f));
    absl::StatusOr<Result> g = table_->Get(basalt::Get(gen_->Pick(model_.Rows())).SetFilter(f));
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << g.status();
    for (bool reversed : {false, true}) {
      absl::StatusOr<std::unique_ptr<ResultScanner>> s =
          table_->GetScanner(basalt::Scan().SetReversed(reversed).SetFilter(f));
      EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
    }
  }
}

// A regex filter bomb (docs/DESIGN.md §12): each regex comparator compiles to megabytes, so one request
// carrying many, or one huge one, could take the server's memory. Refused before anything is
// compiled or read; a request within the bounds still works.
TEST_F(FilterProperty, RegexFilterBombsAreRefused) {
  std::vector<Filter> many;
  for (int i = 0; i < 17; ++i) many.push_back(Filter::Value(FilterOp::kNotEqual, Comparator::Regex("(a|b)*c{1,100}")));
  std::vector<Filter> sixteen(many.begin(), many.begin() + 16);
  const std::vector<std::pair<Filter, std::string>> bombs = {
      {Filter::List(Filter::kMustPassAll, many), "at most 16 regex comparators"},
      {Filter::Value(FilterOp::kEqual, Comparator::Regex(std::string(5000, 'a'))), "at most 4096 are taken"},
      // 276 bytes that compile to 222,004 instructions (accepted by RE2's default 8 MiB budget).
      {Filter::Value(FilterOp::kEqual, Comparator::Regex([] {
         const std::string unit = "(?:[a-f]+x[0-9]+y\\w\\s[^z]" + std::string(60, 'q') + "){1000}";
         return unit + unit + unit;
       }())),
       "pattern too large"},
  };
  for (const auto& [f, why] : bombs) {
    absl::StatusOr<Result> g = table_->Get(basalt::Get(gen_->Pick(model_.Rows())).SetFilter(f));
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << g.status();
    EXPECT_NE(g.status().message().find(why), std::string::npos) << g.status();
  }
  absl::StatusOr<Result> ok =
      table_->Get(basalt::Get(gen_->Pick(model_.Rows())).SetFilter(Filter::List(Filter::kMustPassAll, sixteen)));
  EXPECT_TRUE(ok.ok()) << ok.status();
}

}  // namespace
}  // namespace basalt::testing
