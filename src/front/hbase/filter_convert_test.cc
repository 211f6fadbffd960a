#include "src/front/hbase/filter_convert.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace basalt::hbase {
namespace {

using google::protobuf::util::MessageDifferencer;

constexpr char kPackage[] = "org.apache.hadoop.hbase.filter.";
constexpr char kUnsupported[] = "is not supported by Basalt's HBase port";
// What a Java '$' at the end becomes (filter_convert.cc).
constexpr std::string_view kEnd = R"((?-i:\r\n|[\n\r]|\xC2\x85|\xE2\x80[\xA8\xA9])?\z)";

template <typename M>
Filter Wrap(const std::string& cls, const M& m) {
  Filter f;
  f.set_name(absl::StrCat(kPackage, cls));
  f.set_serialized_filter(m.SerializePartialAsString());
  return f;
}

template <typename M>
Comparator WrapComparator(const std::string& cls, const M& m) {
  Comparator c;
  c.set_name(absl::StrCat(kPackage, cls));
  c.set_serialized_comparator(m.SerializePartialAsString());
  return c;
}

Comparator Binary(const std::string& v) {
  BinaryComparator b;
  b.mutable_comparable()->set_value(v);
  return WrapComparator("BinaryComparator", b);
}

Comparator BinaryPrefix(const std::string& v) {
  BinaryPrefixComparator b;
  b.mutable_comparable()->set_value(v);
  return WrapComparator("BinaryPrefixComparator", b);
}

constexpr int32_t kDotAll = 0x20, kCaseInsensitive = 0x02, kMultiline = 0x08;

Comparator Regex(const std::string& pattern, int32_t flags = kDotAll, const std::string& charset = "UTF-8",
                 const char* engine = "JAVA") {
  RegexStringComparator r;
  r.set_pattern(pattern);
  r.set_pattern_flags(flags);
  r.set_charset(charset);
  if (engine != nullptr) r.set_engine(engine);
  return WrapComparator("RegexStringComparator", r);
}

Comparator Substring(const std::string& s) {
  SubstringComparator m;
  m.set_substr(s);
  return WrapComparator("SubstringComparator", m);
}

template <typename M>
Filter Compare(const std::string& cls, CompareType op, const Comparator& c) {
  M m;
  m.mutable_compare_filter()->set_compare_op(op);
  *m.mutable_compare_filter()->mutable_comparator() = c;
  return Wrap(cls, m);
}

Filter List(FilterList::Operator op, const std::vector<Filter>& filters) {
  FilterList l;
  l.set_operator_(op);
  for (const Filter& f : filters) *l.add_filters() = f;
  return Wrap("FilterList", l);
}

Filter Prefix(const std::string& p) {
  PrefixFilter m;
  m.set_prefix(p);
  return Wrap("PrefixFilter", m);
}

rpc::Filter Pb(const std::string& text) {
  rpc::Filter f;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &f)) << text;
  return f;
}

void ExpectFilter(const Filter& in, const std::string& want_text) {
  absl::StatusOr<rpc::Filter> got = FilterOf(in);
  ASSERT_TRUE(got.ok()) << in.name() << ": " << got.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*got, Pb(want_text))) << in.name() << " became\n" << got->DebugString();
}

// Refused with InvalidArgument, the message holding `what` (and the class name when `name`).
void ExpectRefused(const Filter& in, const std::string& what, bool name = true) {
  absl::StatusOr<rpc::Filter> got = FilterOf(in);
  ASSERT_FALSE(got.ok()) << in.name() << " became\n" << got->DebugString();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
  const std::string message(got.status().message());
  EXPECT_NE(message.find(what), std::string::npos) << got.status();
  if (name) {
    EXPECT_NE(message.find(in.name()), std::string::npos) << got.status();
  }
}

// ------------------------------------------------------------------ filters one by one

TEST(HBaseFilterConvert, RowFilters) {
  ExpectFilter(Prefix("ab"), "kind: PREFIX prefix: 'ab'");
  ExpectFilter(Prefix(""), "kind: PREFIX");
  ExpectRefused(Wrap("PrefixFilter", PrefixFilter()), "without a prefix");
  ExpectFilter(Compare<RowFilter>("RowFilter", LESS, Binary("row5")),
               "kind: ROW op: FILTER_LESS comparator { kind: BINARY value: 'row5' }");
  ExpectFilter(Compare<RowFilter>("RowFilter", GREATER, BinaryPrefix("r")),
               "kind: ROW op: FILTER_GREATER comparator { kind: BINARY_PREFIX value: 'r' }");
  ExpectFilter(Compare<RowFilter>("RowFilter", NOT_EQUAL, Regex("^u[0-9]+")),
               "kind: ROW op: FILTER_NOT_EQUAL comparator { kind: REGEX value: '^u[0-9]+' }");
}

TEST(HBaseFilterConvert, CellFilters) {
  ExpectFilter(Compare<QualifierFilter>("QualifierFilter", LESS_OR_EQUAL, Binary("q")),
               "kind: QUALIFIER op: FILTER_LESS_OR_EQUAL comparator { kind: BINARY value: 'q' }");
  ExpectFilter(Compare<ValueFilter>("ValueFilter", GREATER_OR_EQUAL, Binary(std::string("\0\xff", 2))),
               R"pb(kind: VALUE op: FILTER_GREATER_OR_EQUAL comparator { kind: BINARY value: '\000\377' })pb");
  ExpectFilter(Compare<ValueFilter>("ValueFilter", EQUAL, Substring("Oops")),
               "kind: VALUE op: FILTER_EQUAL comparator { kind: SUBSTRING value: 'oops' }");
  // A comparator with no value (BinaryComparator(null)): the empty one.
  BinaryComparator empty;
  empty.mutable_comparable();
  ExpectFilter(Compare<ValueFilter>("ValueFilter", EQUAL, WrapComparator("BinaryComparator", empty)),
               "kind: VALUE op: FILTER_EQUAL comparator { kind: BINARY }");

  ColumnPrefixFilter cp;
  cp.set_prefix("col");
  ExpectFilter(Wrap("ColumnPrefixFilter", cp), "kind: COLUMN_PREFIX prefix: 'col'");

  TimestampsFilter ts;
  for (int64_t t : {30, 10, 20}) ts.add_timestamps(t);
  ts.set_can_hint(true);
  ExpectFilter(Wrap("TimestampsFilter", ts), "kind: TIMESTAMPS timestamps: [30, 10, 20]");
  ExpectFilter(Wrap("TimestampsFilter", TimestampsFilter()), "kind: TIMESTAMPS");
  ts.add_timestamps(-1);
  ExpectRefused(Wrap("TimestampsFilter", ts), "timestamp -1 must not be negative");

  KeyOnlyFilter ko;
  ko.set_len_as_val(true);
  ExpectFilter(Wrap("KeyOnlyFilter", ko), "kind: KEY_ONLY len_as_value: true");
  ko.set_len_as_val(false);
  ExpectFilter(Wrap("KeyOnlyFilter", ko), "kind: KEY_ONLY");
  ExpectRefused(Wrap("KeyOnlyFilter", KeyOnlyFilter()), "does not parse");  // len_as_val is required
  ExpectFilter(Wrap("FirstKeyOnlyFilter", FirstKeyOnlyFilter()), "kind: FIRST_KEY_ONLY");
}

TEST(HBaseFilterConvert, SingleColumnValue) {
  SingleColumnValueFilter m;
  m.set_column_family("cf");
  m.set_column_qualifier("q");
  m.set_compare_op(GREATER);
  *m.mutable_comparator() = Binary("5");
  m.set_filter_if_missing(true);
  m.set_latest_version_only(true);
  ExpectFilter(Wrap("SingleColumnValueFilter", m),
               "kind: SINGLE_COLUMN_VALUE op: FILTER_GREATER comparator { kind: BINARY value: '5' } family: 'cf' "
               "qualifier: 'q' filter_if_missing: true latest_version_only: true");
  // Absent flags are false, as HBase reads them; absent family and qualifier are empty.
  SingleColumnValueFilter bare;
  bare.set_compare_op(EQUAL);
  *bare.mutable_comparator() = Regex("x");
  ExpectFilter(Wrap("SingleColumnValueFilter", bare),
               "kind: SINGLE_COLUMN_VALUE op: FILTER_EQUAL comparator { kind: REGEX value: 'x' }");
  m.set_column_family("\xff");
  ExpectRefused(Wrap("SingleColumnValueFilter", m), "with a column family that is not UTF-8");
  for (const char* family : {"f\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {  // UTF-8
    m.set_column_family(family);
    EXPECT_TRUE(FilterOf(Wrap("SingleColumnValueFilter", m)).ok()) << family;
  }
  // Overlong, a surrogate, above U+10FFFF, cut short, a stray continuation byte.
  for (const char* family : {"\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "a\x80"}) {
    m.set_column_family(family);
    ExpectRefused(Wrap("SingleColumnValueFilter", m), "with a column family that is not UTF-8");
  }
  m.clear_comparator();
  ExpectRefused(Wrap("SingleColumnValueFilter", m), "does not parse");  // the comparator is required
}

TEST(HBaseFilterConvert, Ranges) {
  auto range = [](MultiRowRangeFilter* m, const std::string& start, bool si, const std::string& stop, bool ei) {
    RowRange* r = m->add_row_range_list();
    r->set_start_row(start);
    r->set_start_row_inclusive(si);
    r->set_stop_row(stop);
    r->set_stop_row_inclusive(ei);
  };
  MultiRowRangeFilter m;
  range(&m, "m", false, "p", true);
  range(&m, "a", true, "c", false);
  ExpectFilter(Wrap("MultiRowRangeFilter", m),
               "kind: MULTI_ROW_RANGE ranges { start: 'm' stop: 'p' stop_inclusive: true } "
               "ranges { start: 'a' start_inclusive: true stop: 'c' }");
  range(&m, "", true, "0", false);  // from the first row
  EXPECT_TRUE(FilterOf(Wrap("MultiRowRangeFilter", m)).ok());
  range(&m, "x", true, "", false);  // one of several unbounded above
  ExpectRefused(Wrap("MultiRowRangeFilter", m), "unbounded above");

  MultiRowRangeFilter one;
  range(&one, "x", true, "", false);
  ExpectFilter(Wrap("MultiRowRangeFilter", one), "kind: MULTI_ROW_RANGE ranges { start: 'x' start_inclusive: true }");
  MultiRowRangeFilter row;
  range(&row, "k", true, "k", true);  // one row
  EXPECT_TRUE(FilterOf(Wrap("MultiRowRangeFilter", row)).ok());

  MultiRowRangeFilter overlap;
  range(&overlap, "a", true, "c", false);
  range(&overlap, "b", true, "d", false);
  ExpectRefused(Wrap("MultiRowRangeFilter", overlap), "overlap or touch");
  MultiRowRangeFilter touch;
  range(&touch, "c", true, "d", false);
  range(&touch, "a", true, "c", false);
  ExpectRefused(Wrap("MultiRowRangeFilter", touch), "overlap or touch");
  MultiRowRangeFilter backwards;
  range(&backwards, "b", true, "a", false);
  ExpectRefused(Wrap("MultiRowRangeFilter", backwards), "stops before it starts");
  MultiRowRangeFilter same;
  range(&same, "a", true, "a", false);
  ExpectRefused(Wrap("MultiRowRangeFilter", same), "stops before it starts");
  MultiRowRangeFilter empty;
  range(&empty, "a", false, "a", true);
  ExpectRefused(Wrap("MultiRowRangeFilter", empty), "with an empty row range");
  ExpectRefused(Wrap("MultiRowRangeFilter", MultiRowRangeFilter()), "has no row range");

  ColumnRangeFilter cr;
  cr.set_min_column("b");
  cr.set_min_column_inclusive(true);
  cr.set_max_column("m");
  ExpectFilter(Wrap("ColumnRangeFilter", cr),
               "kind: COLUMN_RANGE min_column: 'b' min_inclusive: true max_column: 'm'");
  ExpectFilter(Wrap("ColumnRangeFilter", ColumnRangeFilter()), "kind: COLUMN_RANGE");
  cr.set_min_column("");  // "" inclusive bounds nothing, as Basalt's ""
  ExpectFilter(Wrap("ColumnRangeFilter", cr), "kind: COLUMN_RANGE min_inclusive: true max_column: 'm'");
  cr.set_min_column_inclusive(false);  // HBase: every qualifier but ""
  ExpectRefused(Wrap("ColumnRangeFilter", cr), "an empty exclusive minimum");
  cr.clear_min_column();
  cr.set_max_column("");
  ExpectRefused(Wrap("ColumnRangeFilter", cr), "an empty maximum");
}

TEST(HBaseFilterConvert, MultipleColumnPrefix) {
  MultipleColumnPrefixFilter m;
  for (const char* p : {"q2", "q1", "q2", "x"}) m.add_sorted_prefixes(p);
  ExpectFilter(Wrap("MultipleColumnPrefixFilter", m),
               "kind: LIST filters { kind: COLUMN_PREFIX prefix: 'q1' } filters { kind: COLUMN_PREFIX prefix: 'q2' } "
               "filters { kind: COLUMN_PREFIX prefix: 'x' }");
  // HBase passes every cell when there is no prefix, as an empty MUST_PASS_ONE list does.
  ExpectFilter(Wrap("MultipleColumnPrefixFilter", MultipleColumnPrefixFilter()), "kind: LIST");
  m.add_sorted_prefixes("q10");
  ExpectRefused(Wrap("MultipleColumnPrefixFilter", m), "with a prefix that begins another");
  MultipleColumnPrefixFilter all;
  all.add_sorted_prefixes("");
  ExpectFilter(Wrap("MultipleColumnPrefixFilter", all), "kind: LIST filters { kind: COLUMN_PREFIX }");
  all.add_sorted_prefixes("a");
  ExpectRefused(Wrap("MultipleColumnPrefixFilter", all), "with a prefix that begins another");
}

TEST(HBaseFilterConvert, Pages) {
  ColumnPaginationFilter cp;
  cp.set_limit(10);
  ExpectFilter(Wrap("ColumnPaginationFilter", cp), "kind: COLUMN_PAGINATION limit: 10");
  cp.set_offset(5);
  ExpectFilter(Wrap("ColumnPaginationFilter", cp), "kind: COLUMN_PAGINATION limit: 10 offset: 5");
  // offset + limit wraps in HBase's int arithmetic: it passes no cell, as limit 0 does.
  cp.set_limit(INT32_MAX);
  cp.set_offset(1);
  ExpectFilter(Wrap("ColumnPaginationFilter", cp), "kind: COLUMN_PAGINATION");
  cp.set_offset(0);
  ExpectFilter(Wrap("ColumnPaginationFilter", cp), "kind: COLUMN_PAGINATION limit: 2147483647");
  cp.set_offset(-1);
  ExpectRefused(Wrap("ColumnPaginationFilter", cp), "must not be negative");
  cp.set_offset(0);
  cp.set_limit(-1);
  ExpectRefused(Wrap("ColumnPaginationFilter", cp), "must not be negative");
  cp.set_limit(3);
  cp.set_column_offset("c");
  ExpectRefused(Wrap("ColumnPaginationFilter", cp), "with a column_offset");

  PageFilter p;
  p.set_page_size(25);
  ExpectFilter(Wrap("PageFilter", p), "kind: PAGE limit: 25");
  p.set_page_size(0);
  ExpectFilter(Wrap("PageFilter", p), "kind: PAGE");
  p.set_page_size(-1);
  ExpectRefused(Wrap("PageFilter", p), "page size -1 must not be negative");
  ExpectRefused(Wrap("PageFilter", PageFilter()), "does not parse");
}

TEST(HBaseFilterConvert, Lists) {
  ExpectFilter(List(FilterList::MUST_PASS_ALL, {}), "kind: LIST must_pass_all: true");
  ExpectFilter(List(FilterList::MUST_PASS_ONE, {}), "kind: LIST");
  ExpectFilter(List(FilterList::MUST_PASS_ONE,
                    {List(FilterList::MUST_PASS_ALL, {Prefix("a"), Wrap("FirstKeyOnlyFilter", FirstKeyOnlyFilter())}),
                     Prefix("b")}),
               "kind: LIST filters { kind: LIST must_pass_all: true filters { kind: PREFIX prefix: 'a' } "
               "filters { kind: FIRST_KEY_ONLY } } filters { kind: PREFIX prefix: 'b' }");
  // One refused member refuses the list, naming the member.
  ExpectRefused(List(FilterList::MUST_PASS_ALL, {Prefix("a"), Wrap("RandomRowFilter", RandomRowFilter())}),
                "filter org.apache.hadoop.hbase.filter.RandomRowFilter is not supported", /*name=*/false);
  FilterList no_op;
  ExpectRefused(Wrap("FilterList", no_op), "does not parse");  // the operator is required

  // As deep as Basalt's own trees (33 levels), not deeper; and a very deep one is refused
  // without recursing all the way.
  Filter f = Prefix("p");
  for (int level = 1; level <= 1000; ++level) {
    f = List(FilterList::MUST_PASS_ALL, {f});
    if (level == 33) {
      EXPECT_TRUE(FilterOf(f).ok());
    } else if (level == 34) {
      ExpectRefused(f, "nested deeper than 32");
    }
  }
  ExpectRefused(f, "nested deeper than 32");
}

// ------------------------------------------------------------------ comparators

TEST(HBaseFilterConvert, ComparatorsAndOperators) {
  ExpectRefused(Compare<ValueFilter>("ValueFilter", NO_OP, Binary("x")), "compare op NO_OP");
  // REGEX and SUBSTRING take = and != only.
  ExpectRefused(Compare<ValueFilter>("ValueFilter", LESS, Regex("x")), "comparing by " + std::string(kPackage) +
                                                                           "RegexStringComparator with LESS");
  ExpectRefused(Compare<ValueFilter>("ValueFilter", GREATER_OR_EQUAL, Substring("x")), "with GREATER_OR_EQUAL");
  ExpectRefused(Compare<RowFilter>("RowFilter", EQUAL, Regex("x", kDotAll, "UTF-8", "JONI")), "with engine JONI");
  ExpectRefused(Compare<RowFilter>("RowFilter", EQUAL, Regex("x", kDotAll, "ISO-8859-1")),
                "with charset ISO-8859-1");
  for (const char* charset : {"", "utf-8", "UTF8"}) {
    EXPECT_TRUE(FilterOf(Compare<RowFilter>("RowFilter", EQUAL, Regex("x", kDotAll, charset))).ok()) << charset;
  }
  EXPECT_TRUE(FilterOf(Compare<RowFilter>("RowFilter", EQUAL, Regex("x", kDotAll, "UTF-8", nullptr))).ok());
  ExpectRefused(Compare<RowFilter>("RowFilter", EQUAL, Regex("x", kMultiline | kDotAll)), "with pattern flags 40");
  // A CompareFilter without a comparator.
  RowFilter bare;
  bare.mutable_compare_filter()->set_compare_op(EQUAL);
  ExpectRefused(Wrap("RowFilter", bare), "has no comparator");

  for (const char* cls : {"LongComparator", "BitComparator", "NullComparator", "BinaryComponentComparator",
                          "BigDecimalComparator"}) {
    Comparator c;
    c.set_name(absl::StrCat(kPackage, cls));
    absl::StatusOr<rpc::Comparator> got = ComparatorOf(c);
    ASSERT_FALSE(got.ok()) << cls;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(), absl::StrCat("comparator ", kPackage, cls, " ", kUnsupported));
    ExpectRefused(Compare<ValueFilter>("ValueFilter", EQUAL, c), std::string(got.status().message()));
  }
  Comparator garbage = Binary("x");
  garbage.set_serialized_comparator("\x0a\x05xy");  // a length past the end
  ExpectRefused(Compare<ValueFilter>("ValueFilter", EQUAL, garbage),
                "comparator org.apache.hadoop.hbase.filter.BinaryComparator: its serialized message does not parse");

  const std::map<CompareType, std::pair<rpc::FilterOp, rpc::CompareOp>> ops = {
      {LESS, {rpc::FILTER_LESS, rpc::LESS}},
      {LESS_OR_EQUAL, {rpc::FILTER_LESS_OR_EQUAL, rpc::LESS_OR_EQUAL}},
      {EQUAL, {rpc::FILTER_EQUAL, rpc::EQUAL}},
      {NOT_EQUAL, {rpc::FILTER_NOT_EQUAL, rpc::NOT_EQUAL}},
      {GREATER_OR_EQUAL, {rpc::FILTER_GREATER_OR_EQUAL, rpc::GREATER_OR_EQUAL}},
      {GREATER, {rpc::FILTER_GREATER, rpc::GREATER}},
  };
  for (const auto& [t, want] : ops) {
    EXPECT_EQ(*FilterOpOf(t), want.first) << CompareType_Name(t);
    EXPECT_EQ(*CheckOpOf(t), want.second) << CompareType_Name(t);
  }
  for (CompareType t : {NO_OP, static_cast<CompareType>(99)}) {
    EXPECT_EQ(FilterOpOf(t).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(CheckOpOf(t).status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(CheckOpOf(NO_OP).status().message(), absl::StrCat("compare op NO_OP ", kUnsupported));
}

// SubstringComparator: SUBSTRING unless 'i' or 'k' needs the characters HBase lower-cases onto them.
TEST(HBaseFilterConvert, Substrings) {
  auto of = [](const std::string& s) { return ComparatorOf(Substring(s)); };
  EXPECT_EQ(of("Error")->kind(), rpc::Comparator::SUBSTRING);
  EXPECT_EQ(of("Error")->value(), "error");
  EXPECT_EQ(of("")->kind(), rpc::Comparator::SUBSTRING);
  EXPECT_EQ(of("a.b*")->value(), "a.b*");
  EXPECT_EQ(of("Kiwi")->kind(), rpc::Comparator::REGEX);
  EXPECT_EQ(of("Kiwi")->value(), R"((?:[kK]|\xE2\x84\xAA)[iI][wW](?:[iI]|\xC4\xB0))");
  EXPECT_EQ(of("i.K 1\t")->value(), R"([iI]\.(?:[kK]|\xE2\x84\xAA)\ 1\x09)");
  absl::StatusOr<rpc::Comparator> accent = of("caf\xc3\xa9");
  EXPECT_EQ(accent.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(accent.status().message(),
            absl::StrCat("comparator ", kPackage, "SubstringComparator with a non-ASCII substring ", kUnsupported));
}

// RegexStringComparator: the Java patterns taken, as RE2's, and those refused, with why.
TEST(HBaseFilterConvert, Regexes) {
  struct Case {
    std::string java;
    int32_t flags;
    std::string re2;  // empty: refused, the message holding `why`
    std::string why;
  };
  const std::string end(kEnd);
  const std::vector<Case> cases = {
      {"", kDotAll, "", ""},
      {"abc", kDotAll, "abc", ""},
      {"^user_[0-9]+$", kDotAll, "^user_[0-9]+" + end, ""},
      {"^(open|closed)$|^x.*$", kDotAll, "^(open|closed)" + end + "|^x.*" + end, ""},
      {"a.*b.+?c", kDotAll, "a.*b.+?c", ""},
      {R"(\d{2,}\w{3}x{1,2}?y?z*?)", kDotAll, R"(\d{2,}\w{3}x{1,2}?y?z*?)", ""},
      {R"((?:a|b)\.\$\\[-a-c\]\t])", kDotAll, R"((?:a|b)\.\$\\[-a-c\]\t])", ""},
      {R"(\Aab\z)", kDotAll, R"(\Aab\z)", ""},
      {R"(x\Q.*$\E+)", kDotAll, R"(x\.\*\$+)", ""},
      {R"(\Qa)", kDotAll, "a", ""},
      {"a]}#", kDotAll, "a]}#", ""},
      {"[a-]", kDotAll, "[a-]", ""},
      {"user", kCaseInsensitive, "(?i)user", ""},
      {"u.*r$", kCaseInsensitive | kDotAll, "(?i)u.*r" + end, ""},
      {"a\n$", kDotAll, "a\n" + end, ""},
      {"a.*\r.*", kDotAll, "a.*\r.*", ""},  // '\r' is fine without '$'
      {"(a.*)$", kDotAll, "(a.*)" + end, ""},
      {"^a.+b$", kDotAll, "^a.+b" + end, ""},
      {"a.+|.+?b|[0-9]+.+c{1,}", kDotAll, "a.+|.+?b|[0-9]+.+c{1,}", ""},
      {R"(\A.+\Qxy\E)", kDotAll, R"(\A.+xy)", ""},
      // Refused.
      {"a.b", kDotAll, "", "'.' other than in .* or .+"},
      {"(a.+)", kDotAll, "", "'.+' inside a group"},
      {"(?:.+){2}", kDotAll, "", "'.+' inside a group"},
      {"a?.+", kDotAll, "", "'.+' inside a group, or next to"},
      {".*.+", kDotAll, "", "'.+' inside a group, or next to"},
      {".+.*", kDotAll, "", "'.+' inside a group, or next to"},
      {".+b?", kDotAll, "", "'.+' inside a group, or next to"},
      {".+b{0,3}", kDotAll, "", "'.+' inside a group, or next to"},
      {".+(b)", kDotAll, "", "'.+' inside a group, or next to"},
      {"a\\Q\\E", kDotAll, "", "an empty \\Q\\E"},
      {"a.?", kDotAll, "", "'.' other than in .* or .+"},
      {"a.*", 0, "", "'.' without DOTALL"},
      {"caf\xc3\xa9", kDotAll, "", "a non-ASCII character"},
      {"[^a]", kDotAll, "", "a negated class"},
      {"[[:alpha:]]", kDotAll, "", "a nested class"},
      {"[a-z&&[^b]]", kDotAll, "", "a class intersection"},
      {"[]a]", kDotAll, "", "a class that starts with ']'"},
      {"[a-c-e]", kDotAll, "", "a '-' in a class"},
      {R"([\d-z])", kDotAll, "", "a class range to or from"},
      {R"([\s])", kDotAll, "", "an escape in a class"},
      {"[abc", kDotAll, "", "an unclosed class"},
      {R"(\s)", kDotAll, "", R"(the escape \s)"},
      {R"(\bword)", kDotAll, "", R"(the escape \b)"},
      {R"(\p{L})", kDotAll, "", R"(the escape \p)"},
      {R"((a)\1)", kDotAll, "", R"(the escape \1)"},
      {"a\\", kDotAll, "", "a trailing '\\'"},
      {"(?=a)", kDotAll, "", "a group (?...) other than (?:...)"},
      {"(?i)a", kDotAll, "", "a group (?...) other than (?:...)"},
      {"a*+", kDotAll, "", "a possessive quantifier"},
      {"*a", kDotAll, "", "a quantifier after no atom"},
      {"^*", kDotAll, "", "a quantifier after no atom"},
      {"a{x}", kDotAll, "", "a '{' that is not"},
      {"a{,2}", kDotAll, "", "a '{' that is not"},
      {"(a", kDotAll, "", "an unbalanced '('"},
      {"a)", kDotAll, "", "an unbalanced ')'"},
      {"a$b", kDotAll, "", "'$' other than at the end"},
      {"(a$)", kDotAll, "", "'$' other than at the end"},
      {"a\r$", kDotAll, "", "'$' in a pattern that matches '\\r'"},
      {R"(a\r?$)", kDotAll, "", "'$' in a pattern that matches '\\r'"},
      {"[\t-\r]x$", kDotAll, "", "'$' in a pattern that matches '\\r'"},
      {"x", 0x01 | kDotAll, "", "with pattern flags 33"},
      {"x", 0x40 | kCaseInsensitive, "", "with pattern flags 66"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<rpc::Comparator> got = ComparatorOf(Regex(c.java, c.flags));
    if (c.re2.empty() && !c.why.empty()) {
      ASSERT_FALSE(got.ok()) << c.java << " became " << got->value();
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(std::string(got.status().message()).find(c.why), std::string::npos) << c.java << ": " << got.status();
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.java << ": " << got.status();
    EXPECT_EQ(got->kind(), rpc::Comparator::REGEX);
    EXPECT_EQ(got->value(), c.re2) << c.java;
  }
}

// ------------------------------------------------------------------ refusals by name

TEST(HBaseFilterConvert, RefusesByName) {
  for (const char* cls :
       {"FamilyFilter", "SingleColumnValueExcludeFilter", "ColumnCountGetFilter", "InclusiveStopFilter",
        "WhileMatchFilter", "SkipFilter", "RandomRowFilter", "DependentColumnFilter", "ColumnValueFilter",
        "FuzzyRowFilter", "FirstKeyValueMatchingQualifiersFilter", "FilterAllFilter", "FilterWrapper"}) {
    Filter f;
    f.set_name(absl::StrCat(kPackage, cls));
    absl::StatusOr<rpc::Filter> got = FilterOf(f);
    ASSERT_FALSE(got.ok()) << cls;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(), absl::StrCat("filter ", kPackage, cls, " ", kUnsupported));
  }
  for (const char* name : {"com.example.MyFilter", "PrefixFilter", "org.apache.hadoop.hbase.filter.", ""}) {
    Filter f = Prefix("a");
    f.set_name(name);
    EXPECT_EQ(FilterOf(f).status().message(), absl::StrCat("filter ", name, " ", kUnsupported));
  }
}

// ------------------------------------------------------------------ what the 2.6.0 jar sent

std::vector<std::pair<std::string, std::string>> ReadJarFilters() {
  std::ifstream in(std::string(BASALT_SOURCE_DIR) + "/tests/hbase/testdata/filters-2.6.0.txt");
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, hex, bytes;
    words >> name >> hex;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    out.emplace_back(name, bytes);
  }
  return out;
}

TEST(HBaseFilterConvert, WhatTheJavaClientSends) {
  const std::string end(kEnd);
  // Each filter's Basalt form (text format), or for a refused one "!" and what the refusal says.
  const std::map<std::string, std::string> want = {
      {"list-prefix-scvf-regex",
       R"pb(kind: LIST must_pass_all: true
            filters { kind: PREFIX prefix: 'user' }
            filters { kind: SINGLE_COLUMN_VALUE op: FILTER_EQUAL family: 'cf' qualifier: 'status'
                      comparator { kind: REGEX
                                   value: '^(open|closed)-[0-9]+'
                                          '(?-i:\\r\\n|[\\n\\r]|\\xC2\\x85|\\xE2\\x80[\\xA8\\xA9])?\\z' }
                      filter_if_missing: true latest_version_only: true })pb"},
      {"page", "kind: PAGE limit: 25"},
      {"column-pagination", "kind: COLUMN_PAGINATION limit: 10 offset: 5"},
      {"key-only", "kind: KEY_ONLY"},
      {"key-only-len", "kind: KEY_ONLY len_as_value: true"},
      {"value-substring", "kind: VALUE op: FILTER_NOT_EQUAL comparator { kind: SUBSTRING value: 'error' }"},
      {"value-substring-ik",
       R"pb(kind: VALUE op: FILTER_EQUAL
            comparator { kind: REGEX value: '(?:[kK]|\\xE2\\x84\\xAA)[iI][wW](?:[iI]|\\xC4\\xB0)' })pb"},
      {"multi-row-range",
       "kind: MULTI_ROW_RANGE ranges { start: 'a' start_inclusive: true stop: 'c' } "
       "ranges { start: 'm' stop: 'p' stop_inclusive: true }"},
      {"qualifier-binary-prefix",
       "kind: QUALIFIER op: FILTER_GREATER_OR_EQUAL comparator { kind: BINARY_PREFIX value: 'col' }"},
      {"nested-lists",
       R"pb(kind: LIST
            filters { kind: LIST must_pass_all: true
                      filters { kind: ROW op: FILTER_LESS comparator { kind: BINARY value: 'row5' } }
                      filters { kind: COLUMN_RANGE min_column: 'a' min_inclusive: true max_column: 'm' }
                      filters { kind: TIMESTAMPS timestamps: [10, 20, 30] } }
            filters { kind: LIST must_pass_all: true filters { kind: FIRST_KEY_ONLY }
                      filters { kind: COLUMN_PREFIX prefix: 'x' } }
            filters { kind: LIST filters { kind: COLUMN_PREFIX prefix: 'q1' }
                      filters { kind: COLUMN_PREFIX prefix: 'q2' } })pb"},
      {"scvf-all-versions",
       "kind: SINGLE_COLUMN_VALUE op: FILTER_GREATER comparator { kind: BINARY value: '5' } family: 'cf' "
       "qualifier: 'n'"},
      {"row-regex-case-insensitive", "kind: ROW op: FILTER_EQUAL comparator { kind: REGEX value: '(?i)^user' }"},
      {"random-row", "!filter org.apache.hadoop.hbase.filter.RandomRowFilter " + std::string(kUnsupported)},
      {"column-pagination-column-offset", "!ColumnPaginationFilter with a column_offset " + std::string(kUnsupported)},
      {"family", "!filter org.apache.hadoop.hbase.filter.FamilyFilter " + std::string(kUnsupported)},
      {"value-long",
       "!filter org.apache.hadoop.hbase.filter.ValueFilter: comparator org.apache.hadoop.hbase.filter.LongComparator " +
           std::string(kUnsupported)},
      {"row-regex-multiline", "!RegexStringComparator with pattern flags 8, beyond"},
      {"while-match", "!filter org.apache.hadoop.hbase.filter.WhileMatchFilter " + std::string(kUnsupported)},
  };
  const auto jar = ReadJarFilters();
  ASSERT_EQ(jar.size(), want.size());
  for (const auto& [name, bytes] : jar) {
    SCOPED_TRACE(name);
    Filter f;
    ASSERT_TRUE(f.ParseFromString(bytes));
    ASSERT_TRUE(want.contains(name));
    const std::string& w = want.at(name);
    if (w[0] == '!') {
      ExpectRefused(f, w.substr(1), /*name=*/false);
    } else {
      ExpectFilter(f, w);
    }
  }
}

// Damaged bytes (cut short, bits flipped, in the outer message or a filter's own) are refused or
// read as something else, and never crash (the sanitizer build runs this too).
TEST(HBaseFilterConvert, DamagedBytesNeverCrash) {
  int damaged = 0, refused = 0;
  auto check = [&](const Filter& f) {
    ++damaged;
    absl::StatusOr<rpc::Filter> got = FilterOf(f);
    if (!got.ok()) {
      ++refused;
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    }
  };
  for (const auto& [name, bytes] : ReadJarFilters()) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (int mask : {0x01, 0x80, 0xff}) {
        std::string b = bytes;
        b[i] = static_cast<char>(b[i] ^ mask);
        Filter f;
        if (f.ParsePartialFromString(b) && f.IsInitialized()) check(f);
      }
      Filter cut;
      if (cut.ParsePartialFromString(bytes.substr(0, i)) && cut.IsInitialized()) check(cut);
    }
    Filter whole;
    ASSERT_TRUE(whole.ParseFromString(bytes));
    const std::string inner = whole.serialized_filter();
    for (size_t i = 0; i < inner.size(); ++i) {
      Filter f = whole;
      f.set_serialized_filter(inner.substr(0, i));
      check(f);
      f.set_serialized_filter(inner.substr(i));
      check(f);
    }
  }
  EXPECT_GT(damaged, 1000);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace basalt::hbase
