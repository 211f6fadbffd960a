// HBase's filters and comparators, as the 2.x Java client sends them with a Get, a Scan or a
// checkAndMutate, turned into Basalt's own (rpc::Filter, rpc::Comparator; their meaning is in
// client/include/basalt/filter.h). Pure functions of their input; safe from any thread.
//
// What maps, when Basalt evaluates it exactly as HBase 2.6 does (class names are HBase's
// org.apache.hadoop.hbase.filter.*):
//   FilterList                  LIST (MUST_PASS_ALL: must_pass_all), its filters converted in turn
//   PrefixFilter                PREFIX
//   RowFilter                   ROW         op, comparator
//   QualifierFilter             QUALIFIER   op, comparator
//   ValueFilter                 VALUE       op, comparator
//   SingleColumnValueFilter     SINGLE_COLUMN_VALUE  family, qualifier, op, comparator,
//                               filter_if_missing, latest_version_only (flags absent: false, a
//                               family or qualifier absent: empty, as HBase reads them)
//   MultiRowRangeFilter         MULTI_ROW_RANGE  ranges
//   ColumnPrefixFilter          COLUMN_PREFIX
//   MultipleColumnPrefixFilter  LIST (MUST_PASS_ONE) of one COLUMN_PREFIX per prefix; none: an
//                               empty list, which passes every cell (HBase's)
//   ColumnRangeFilter           COLUMN_RANGE  (an absent bound: none)
//   ColumnPaginationFilter      COLUMN_PAGINATION  limit, offset. When offset + limit overflows
//                               a Java int, HBase passes no cell: limit 0, offset 0 says so.
//   TimestampsFilter            TIMESTAMPS (can_hint only makes HBase seek: dropped)
//   KeyOnlyFilter               KEY_ONLY  len_as_value
//   FirstKeyOnlyFilter          FIRST_KEY_ONLY
//   PageFilter                  PAGE  limit = page_size. HBase counts a page per region, and so
//                               does Basalt's filter as long as each region's scan starts anew.
// Comparators:
//   BinaryComparator            BINARY
//   BinaryPrefixComparator      BINARY_PREFIX
//   RegexStringComparator       REGEX, for patterns java.util.regex and RE2 agree on (below)
//   SubstringComparator         SUBSTRING for an ASCII substring without 'i' or 'k'. With either,
//                               a REGEX: HBase lower-cases the value as Unicode text, where
//                               U+212A (Kelvin sign) becomes 'k' and U+0130 'i' + U+0307, and
//                               Basalt's SUBSTRING folds ASCII only.
//   REGEX and SUBSTRING take EQUAL or NOT_EQUAL only (HBase's other operators give them odd
//   meanings through compareTo's 0 or 1).
// A RegexStringComparator maps when its engine is JAVA, its charset UTF-8 and its flags at most
// DOTALL | CASE_INSENSITIVE, and its pattern keeps to a subset on which java.util.regex over the
// value decoded from UTF-8 and RE2 over the value's bytes (Basalt's REGEX) find the same:
//   ASCII only; literal characters; escaped punctuation; \d \w \t \n \r \f \A \z; \Q...\E;
//   classes [...] of those, not negated, not nested, without && and without ranges to \d or \w;
//   '.' only as .* or .+ and with DOTALL (a run of characters is then a run of bytes), .+ outside
//   groups and between two of: the pattern's start or end, '|', '^', '$' and a character or class
//   that must match (else it could count bytes: (?:.+){2} over one two-byte character); groups
//   ( ) and (?: ); |; ^; quantifiers * + ? {n} {n,} {n,m}, greedy or lazy; and '$' at the end of
//   the pattern or of a top-level alternative, in a pattern that matches '\r' only through .* or
//   .+. Java's '$' also matches before a line terminator that ends the value (\n, \r\n, \r,
//   U+0085, U+2028, U+2029): the REGEX spells that out.
//   Checked against the 2.6.0 jar's RegexStringComparator and SubstringComparator on a million
//   random pattern and value pairs (UTF-8, malformed bytes, line terminators), with no difference.
//
// What is refused, with InvalidArgument naming the HBase class (and why, where it is not plain):
//   filters Basalt has no counterpart for: FamilyFilter, SingleColumnValueExcludeFilter,
//   ColumnCountGetFilter, InclusiveStopFilter (its meaning depends on the scan's direction, which
//   a filter does not know), WhileMatchFilter, SkipFilter, RandomRowFilter, DependentColumnFilter,
//   ColumnValueFilter, FuzzyRowFilter, FirstKeyValueMatchingQualifiersFilter, FilterAllFilter and
//   any other class; comparators LongComparator, BitComparator, NullComparator,
//   BinaryComponentComparator, BigDecimalComparator and any other;
//   what HBase itself refuses: a message that does not parse or lacks a required field, a
//   negative page size, limit, offset or timestamp, an invalid or missing row range;
//   what would differ: compare op NO_OP; ColumnPaginationFilter with a column_offset;
//   PrefixFilter without a prefix (HBase then passes no row); a SingleColumnValueFilter family
//   that is not UTF-8 (Basalt's filter carries it as a string); ColumnRangeFilter with an empty
//   maximum, or an empty exclusive minimum (HBase reads "" as a bound, Basalt as none);
//   MultipleColumnPrefixFilter with one prefix a prefix of another (HBase then misses columns);
//   MultiRowRangeFilter ranges that are empty, overlap or touch, or several ranges one of which
//   is unbounded above (HBase 2.6 mishandles these, in reversed scans especially); and regexes
//   outside the subset above; a FilterList nested deeper than 32.
//
// Not refused, yet not exact (Basalt's evaluator, services/filters.cc, has no seek): in a
// MUST_PASS_ALL list HBase skips the cells that a member's seek, next-column or next-row answer
// passes over (ColumnPrefixFilter, ColumnRangeFilter, MultipleColumnPrefixFilter, TimestampsFilter
// give them), so a SingleColumnValueFilter or ColumnPaginationFilter before that member never sees
// them; Basalt's list shows them to it.
//
// checkAndMutate: HBase compares the value the client GIVES with the stored one (LESS holds when
// given < stored), and so does Basalt's rpc::CompareOp (basalt.proto); CheckOpOf maps the names
// one to one. HBase's special case of an empty given value (it matches a missing or empty cell
// for every operator but NOT_EQUAL) is Basalt's too (DataService's ConditionHolds).
#pragma once

#include "absl/status/statusor.h"
#include "proto/basalt.pb.h"
#include "proto/hbase/hbase_client.pb.h"

namespace basalt::hbase {

// The Basalt filter that `filter` (serialized_filter parsed by its name, FilterLists in turn)
// means, or InvalidArgument naming the class that Basalt cannot evaluate exactly as HBase.
absl::StatusOr<rpc::Filter> FilterOf(const Filter& filter);

// The Basalt comparator that `c` means, or InvalidArgument naming its class. Which operators a
// comparator takes is the filter's business (FilterOf checks it).
absl::StatusOr<rpc::Comparator> ComparatorOf(const Comparator& c);

// A filter's operator: the cell's bytes OP the comparator's (HBase's CompareFilter). NO_OP, which
// makes HBase drop every row or cell, is refused.
absl::StatusOr<rpc::FilterOp> FilterOpOf(CompareType t);

// A checkAndMutate condition's operator, the given value OP the stored one, as in HBase. NO_OP is
// refused.
absl::StatusOr<rpc::CompareOp> CheckOpOf(CompareType t);

}  // namespace basalt::hbase
