// Server-side filters (HBase's, by name and meaning; docs/DESIGN.md §13): a Filter travels with a
// Get or Scan and the region server evaluates it, so rows and cells it refuses never leave the
// server. Part of the public vocabulary: plain values, no dependency on the rest of Basalt.
//
//   basalt::Scan scan;
//   scan.SetFilter(basalt::Filter::List(basalt::Filter::kMustPassAll, {
//       basalt::Filter::SingleColumnValue("cf", "status", basalt::FilterOp::kEqual,
//                                         basalt::Comparator::Binary("open"), /*filter_if_missing=*/true),
//       basalt::Filter::Page(10)}));
//
// How a read applies a filter, per row (HBase 2's order):
//   1. The row key: Prefix, Row, MultiRowRange and an exhausted Page refuse the whole row.
//   2. Each cell the read sees (not deleted, not expired, in the time range and the column
//      selection), in order (family, qualifier ascending, timestamp descending), goes through
//      the filter BEFORE the read's version count: a version the filter skips does not count,
//      so an older version that passes is returned instead (TimestampsFilter reads an old
//      version; ValueFilter returns the newest version that matches).
//      A "next row" answer ends the row's reading (HBase's NEXT_ROW): FirstKeyOnly after the
//      first cell, ColumnPagination past its page, SingleColumnValue once its column failed
//      (the failing version included; not under a MUST_PASS_ONE list). Filters asked before it in a MUST_PASS_ALL list see
//      none of the row's later cells: as in HBase, SingleColumnValue beside FirstKeyOnly finds
//      its column only when it is the row's first cell.
//   3. The row assembled (rows with no cell left are dropped): SingleColumnValue decides, Page
//      counts, KeyOnly strips the values.
// The filters:
//   Prefix(p)                  rows starting with p. The client narrows the scan to the prefix's
//                              range: never a full scan.
//   Row(op, c)                 rows whose key OP c.
//   MultiRowRange(ranges)      rows in any of the ranges. The client narrows the scan to
//                              [lowest start, highest stop).
//   Qualifier(op, c)           cells whose qualifier OP c.
//   Value(op, c)               cells whose value OP c.
//   ColumnPrefix(p)            cells whose qualifier starts with p.
//   ColumnRange(min, min_inclusive, max, max_inclusive)
//                              cells whose qualifier is in the range (an empty bound: none).
//   ColumnPagination(limit, offset)
//                              per row, the columns numbered offset .. offset+limit-1 (counting
//                              each (family, qualifier) the filter sees, from 0), newest version
//                              of each only.
//   Timestamps(ts...)          cells with one of the timestamps.
//   KeyOnly(len_as_value)      every cell, its value empty (or its length as 4 big-endian bytes).
//   FirstKeyOnly()             the first cell of each row only.
//   SingleColumnValue(family, qualifier, op, c, filter_if_missing, latest_version_only)
//                              whole rows whose column's value OP c: the newest version the read
//                              sees (or any version, latest_version_only false). A row without
//                              the column passes unless filter_if_missing. As in HBase, the
//                              filter sees only the columns the read selects: select the column
//                              (or its family) too.
//   Page(n)                    at most n rows pass it, across the whole scan: the client carries
//                              the count from region to region (HBase counts per region).
//   List(kMustPassAll, fs)     passes what every filter passes; the filters are asked in order
//                              and the first that refuses a cell or row decides (later ones do
//                              not see it: a Page after a SingleColumnValue counts only rows
//                              that passed it). A member's "next column" skips only this
//                              version when a member before it included the cell, so a
//                              SingleColumnValue reading every version still sees the rest.
//   List(kMustPassOne, fs)     passes what any filter passes; every filter sees every cell and
//                              row (no short cut) except those of a row whose key it refused.
// OP is the cell's bytes compared with the comparator's: c's kind decides how.
//   Binary(v)        bytewise, with any op;
//   BinaryPrefix(v)  the cell's first |v| bytes, bytewise, with any op;
//   Regex(pattern)   RE2 syntax, matching anywhere in the bytes (HBase's find()), kEqual or
//                    kNotEqual only;
//   Substring(s)     contains s, ignoring ASCII case (as HBase's), kEqual or kNotEqual only.
// A bad filter (an unknown op for a comparator, a bad regex, a negative count) is refused with
// InvalidArgument before anything is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace basalt {

// HBase's CompareOperator, as filters use it: the cell's bytes OP the comparator's value
// (kLess passes a cell whose value sorts before the comparator's).
enum class FilterOp : uint8_t { kLess, kLessOrEqual, kEqual, kNotEqual, kGreaterOrEqual, kGreater, kNoOp };

struct Comparator {
  enum class Kind : uint8_t { kBinary, kBinaryPrefix, kRegex, kSubstring };
  Kind kind = Kind::kBinary;
  std::string value;

  static Comparator Binary(std::string v) { return {Kind::kBinary, std::move(v)}; }
  static Comparator BinaryPrefix(std::string v) { return {Kind::kBinaryPrefix, std::move(v)}; }
  static Comparator Regex(std::string pattern) { return {Kind::kRegex, std::move(pattern)}; }
  static Comparator Substring(std::string s) { return {Kind::kSubstring, std::move(s)}; }
  bool operator==(const Comparator&) const = default;
};

// One range of MultiRowRangeFilter. An empty start: from the first row; an empty stop: to the end.
struct RowRange {
  std::string start;
  bool start_inclusive = true;
  std::string stop;
  bool stop_inclusive = false;
  bool operator==(const RowRange&) const = default;
};

// A filter tree: `kind` says which fields mean something.
struct Filter {
  enum class Kind : uint8_t {
    kPrefix,
    kRow,
    kMultiRowRange,
    kQualifier,
    kValue,
    kColumnPrefix,
    kColumnRange,
    kColumnPagination,
    kTimestamps,
    kKeyOnly,
    kFirstKeyOnly,
    kSingleColumnValue,
    kPage,
    kList,
  };
  static constexpr bool kMustPassAll = true;
  static constexpr bool kMustPassOne = false;

  Kind kind = Kind::kKeyOnly;
  FilterOp op = FilterOp::kEqual;  // Row, Qualifier, Value, SingleColumnValue
  Comparator comparator;           // Row, Qualifier, Value, SingleColumnValue
  std::string prefix;              // Prefix, ColumnPrefix
  std::string family, qualifier;   // SingleColumnValue
  bool filter_if_missing = false;  // SingleColumnValue
  bool latest_version_only = true; // SingleColumnValue
  std::string min_column, max_column;  // ColumnRange ("" : unbounded)
  bool min_inclusive = true, max_inclusive = false;
  int64_t limit = 0, offset = 0;   // ColumnPagination; limit is Page's page size too
  std::vector<int64_t> timestamps; // Timestamps
  std::vector<RowRange> ranges;    // MultiRowRange
  bool len_as_value = false;       // KeyOnly
  bool must_pass_all = true;       // List
  std::vector<Filter> filters;     // List

  static Filter Prefix(std::string p) {
    Filter f(Kind::kPrefix);
    f.prefix = std::move(p);
    return f;
  }
  static Filter Row(FilterOp op, Comparator c) { return Compare(Kind::kRow, op, std::move(c)); }
  static Filter Qualifier(FilterOp op, Comparator c) { return Compare(Kind::kQualifier, op, std::move(c)); }
  static Filter Value(FilterOp op, Comparator c) { return Compare(Kind::kValue, op, std::move(c)); }
  static Filter MultiRowRange(std::vector<RowRange> ranges) {
    Filter f(Kind::kMultiRowRange);
    f.ranges = std::move(ranges);
    return f;
  }
  static Filter ColumnPrefix(std::string p) {
    Filter f(Kind::kColumnPrefix);
    f.prefix = std::move(p);
    return f;
  }
  static Filter ColumnRange(std::string min, bool min_inclusive, std::string max, bool max_inclusive) {
    Filter f(Kind::kColumnRange);
    f.min_column = std::move(min);
    f.min_inclusive = min_inclusive;
    f.max_column = std::move(max);
    f.max_inclusive = max_inclusive;
    return f;
  }
  static Filter ColumnPagination(int64_t limit, int64_t offset) {
    Filter f(Kind::kColumnPagination);
    f.limit = limit;
    f.offset = offset;
    return f;
  }
  static Filter Timestamps(std::vector<int64_t> ts) {
    Filter f(Kind::kTimestamps);
    f.timestamps = std::move(ts);
    return f;
  }
  static Filter KeyOnly(bool len_as_value = false) {
    Filter f(Kind::kKeyOnly);
    f.len_as_value = len_as_value;
    return f;
  }
  static Filter FirstKeyOnly() { return Filter(Kind::kFirstKeyOnly); }
  static Filter SingleColumnValue(std::string family, std::string qualifier, FilterOp op, Comparator c,
                                  bool filter_if_missing = false, bool latest_version_only = true) {
    Filter f = Compare(Kind::kSingleColumnValue, op, std::move(c));
    f.family = std::move(family);
    f.qualifier = std::move(qualifier);
    f.filter_if_missing = filter_if_missing;
    f.latest_version_only = latest_version_only;
    return f;
  }
  static Filter Page(int64_t page_size) {
    Filter f(Kind::kPage);
    f.limit = page_size;
    return f;
  }
  static Filter List(bool must_pass_all, std::vector<Filter> filters) {
    Filter f(Kind::kList);
    f.must_pass_all = must_pass_all;
    f.filters = std::move(filters);
    return f;
  }

  Filter() = default;
  explicit Filter(Kind k) : kind(k) {}
  bool operator==(const Filter&) const = default;

 private:
  static Filter Compare(Kind k, FilterOp op, Comparator c) {
    Filter f(k);
    f.op = op;
    f.comparator = std::move(c);
    return f;
  }
};

}  // namespace basalt
