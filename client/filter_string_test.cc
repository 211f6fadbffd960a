// HBase's filter language (ParseFilterString, FilterToString) and row prefixes (SetRowPrefix,
// RowPrefixSuccessor): every filter from HBase-style strings, precedence, quoting, exact errors,
// round trips of random filter trees, and random input that must never crash.
#include <climits>
#include <random>
#include <string>
#include <vector>

#include "basalt/client.h"
#include "gtest/gtest.h"

namespace basalt {
namespace {

Filter Parsed(std::string_view text) {
  absl::StatusOr<Filter> f = ParseFilterString(text);
  EXPECT_TRUE(f.ok()) << text << ": " << f.status();
  return f.ok() ? *f : Filter();
}

TEST(ParseFilterString, EveryFilter) {
  using C = Comparator;
  const struct {
    std::string text;
    Filter want;
  } cases[] = {
      {"PrefixFilter('row2')", Filter::Prefix("row2")},
      {"RowFilter(<=, 'binary:abc')", Filter::Row(FilterOp::kLessOrEqual, C::Binary("abc"))},
      {"RowFilter(<, 'binary:a:b')", Filter::Row(FilterOp::kLess, C::Binary("a:b"))},
      {"QualifierFilter (>=, 'binaryprefix:xyz')", Filter::Qualifier(FilterOp::kGreaterOrEqual, C::BinaryPrefix("xyz"))},
      {"QualifierFilter(>, 'binary:')", Filter::Qualifier(FilterOp::kGreater, C::Binary(""))},
      {"ValueFilter(=, 'regexstring:^a.*z$')", Filter::Value(FilterOp::kEqual, C::Regex("^a.*z$"))},
      {"ValueFilter(!=, 'substring:Foo')", Filter::Value(FilterOp::kNotEqual, C::Substring("Foo"))},
      {"ColumnPrefixFilter('c')", Filter::ColumnPrefix("c")},
      {"ColumnRangeFilter('a', true, 'c', FALSE)", Filter::ColumnRange("a", true, "c", false)},
      {"ColumnRangeFilter('', false, '', True)", Filter::ColumnRange("", false, "", true)},
      {"ColumnPaginationFilter(10, 5)", Filter::ColumnPagination(10, 5)},
      {"TimestampsFilter(123, 456)", Filter::Timestamps({123, 456})},
      {"TimestampsFilter()", Filter::Timestamps({})},
      {"KeyOnlyFilter()", Filter::KeyOnly()},
      {"KeyOnlyFilter(true)", Filter::KeyOnly(true)},
      {"FirstKeyOnlyFilter()", Filter::FirstKeyOnly()},
      {"SingleColumnValueFilter('cf', 'q', =, 'binary:x')",
       Filter::SingleColumnValue("cf", "q", FilterOp::kEqual, C::Binary("x"))},
      {"SingleColumnValueFilter('cf', 'q', !=, 'substring:x', true, false)",
       Filter::SingleColumnValue("cf", "q", FilterOp::kNotEqual, C::Substring("x"), true, false)},
      {"PageFilter(10)", Filter::Page(10)},
      {"PageFilter(0)", Filter::Page(0)},
      {"MultiRowRangeFilter('a', true, 'b', false, 'c', false, '', true)",
       Filter::MultiRowRange({{"a", true, "b", false}, {"c", false, "", true}})},
      {"MultiRowRangeFilter()", Filter::MultiRowRange({})},
      {" \tPageFilter ( 9223372036854775807 ) \n", Filter::Page(INT64_MAX)},
  };
  for (const auto& c : cases) EXPECT_EQ(Parsed(c.text), c.want) << c.text;
}

TEST(ParseFilterString, AndBindsTighterThanOrAndChainsFlatten) {
  const Filter a = Filter::Prefix("a"), b = Filter::Page(1), c = Filter::FirstKeyOnly();
  const std::string A = "PrefixFilter('a')", B = "PageFilter(1)", C = "FirstKeyOnlyFilter()";
  using F = Filter;
  EXPECT_EQ(Parsed(A + " AND " + B + " AND " + C), F::List(F::kMustPassAll, {a, b, c}));
  EXPECT_EQ(Parsed(A + " OR " + B + " OR " + C), F::List(F::kMustPassOne, {a, b, c}));
  EXPECT_EQ(Parsed(A + " OR " + B + " AND " + C), F::List(F::kMustPassOne, {a, F::List(F::kMustPassAll, {b, c})}));
  EXPECT_EQ(Parsed(A + " AND " + B + " OR " + C), F::List(F::kMustPassOne, {F::List(F::kMustPassAll, {a, b}), c}));
  EXPECT_EQ(Parsed("(" + A + " OR " + B + ") AND " + C),
            F::List(F::kMustPassAll, {F::List(F::kMustPassOne, {a, b}), c}));
  // A parenthesised chain stays a node of its own, even under the same operator.
  EXPECT_EQ(Parsed("(" + A + " AND " + B + ")AND(" + C + ")"),
            F::List(F::kMustPassAll, {F::List(F::kMustPassAll, {a, b}), c}));
  EXPECT_EQ(Parsed("((" + A + "))"), a);
  // HBase's shell example.
  EXPECT_EQ(Parsed("(PrefixFilter ('row2') AND (QualifierFilter (>=, 'binary:xyz'))) AND (TimestampsFilter ( 123, "
                   "456))"),
            F::List(F::kMustPassAll,
                    {F::List(F::kMustPassAll, {F::Prefix("row2"), F::Qualifier(FilterOp::kGreaterOrEqual,
                                                                                Comparator::Binary("xyz"))}),
                     F::Timestamps({123, 456})}));
  const std::string deep = std::string(100, '(') + B + std::string(100, ')');
  EXPECT_EQ(Parsed(deep), b);
}

TEST(ParseFilterString, Quotes) {
  EXPECT_EQ(Parsed("PrefixFilter('it''s')"), Filter::Prefix("it's"));
  EXPECT_EQ(Parsed("PrefixFilter('''')"), Filter::Prefix("'"));
  EXPECT_EQ(Parsed("PrefixFilter('')"), Filter::Prefix(""));
  EXPECT_EQ(Parsed(std::string("PrefixFilter('a\0(),\xff b')", 24)), Filter::Prefix(std::string("a\0(),\xff b", 8)));
  EXPECT_EQ(FilterToString(Filter::Prefix("it's")), "PrefixFilter('it''s')");
}

TEST(FilterToString, HBaseSyntax) {
  using F = Filter;
  EXPECT_EQ(FilterToString(F::List(F::kMustPassOne, {F::Prefix("a"), F::List(F::kMustPassAll, {
                                                                          F::ColumnRange("a", true, "b", false),
                                                                          F::KeyOnly(true)})})),
            "PrefixFilter('a') OR (ColumnRangeFilter('a', true, 'b', false) AND KeyOnlyFilter(true))");
  EXPECT_EQ(FilterToString(F::SingleColumnValue("cf", "q", FilterOp::kLess, Comparator::BinaryPrefix("v"))),
            "SingleColumnValueFilter('cf', 'q', <, 'binaryprefix:v')");
  EXPECT_EQ(FilterToString(F::SingleColumnValue("cf", "q", FilterOp::kEqual, Comparator::Regex("x"), true)),
            "SingleColumnValueFilter('cf', 'q', =, 'regexstring:x', true, true)");
  EXPECT_EQ(FilterToString(F::Timestamps({1, 2})), "TimestampsFilter(1, 2)");
  EXPECT_EQ(FilterToString(F::MultiRowRange({{"a", true, "b", false}})), "MultiRowRangeFilter('a', true, 'b', false)");
  EXPECT_EQ(FilterToString(F::ColumnPagination(3, 4)), "ColumnPaginationFilter(3, 4)");
  EXPECT_EQ(FilterToString(F::Value(FilterOp::kNotEqual, Comparator::Substring("s"))), "ValueFilter(!=, 'substring:s')");
  // What the language cannot say (client.h): a List of one filter is that filter; an empty List.
  EXPECT_EQ(FilterToString(F::List(F::kMustPassAll, {F::List(F::kMustPassOne, {F::Page(2)})})), "PageFilter(2)");
  EXPECT_EQ(FilterToString(F::List(F::kMustPassAll, {F::List(F::kMustPassOne, {F::Page(2), F::Page(3)}),
                                                      F::List(F::kMustPassOne, {F::FirstKeyOnly()})})),
            "(PageFilter(2) OR PageFilter(3)) AND FirstKeyOnlyFilter()");
  EXPECT_EQ(FilterToString(F::List(F::kMustPassAll, {})), "()");
  EXPECT_EQ(ParseFilterString("()").status().code(), absl::StatusCode::kInvalidArgument);
}

// A random string: bytes biased to the language's quote and the comparator's colon.
std::string RandomBytes(std::mt19937& rng) {
  std::string s(rng() % 7, '\0');
  for (char& ch : s) {
    const uint32_t r = rng() % 10;
    ch = r == 0 ? '\'' : r == 1 ? ':' : static_cast<char>(rng());
  }
  return s;
}

int64_t RandomCount(std::mt19937& rng) {
  switch (rng() % 4) {
    case 0: return 0;
    case 1: return INT64_MAX;
    default: return static_cast<int64_t>((uint64_t{rng()} << 31) ^ rng()) & INT64_MAX;
  }
}

Filter RandomFilter(std::mt19937& rng, int depth) {
  auto op = [&] { return static_cast<FilterOp>(rng() % 6); };
  auto b = [&] { return rng() % 2 == 0; };
  auto compare = [&](Filter::Kind k) {
    Comparator c{static_cast<Comparator::Kind>(rng() % 4), RandomBytes(rng)};
    FilterOp o = c.kind == Comparator::Kind::kRegex || c.kind == Comparator::Kind::kSubstring
                     ? (b() ? FilterOp::kEqual : FilterOp::kNotEqual)
                     : op();
    return k == Filter::Kind::kRow         ? Filter::Row(o, c)
           : k == Filter::Kind::kQualifier ? Filter::Qualifier(o, c)
           : k == Filter::Kind::kValue     ? Filter::Value(o, c)
                                           : Filter::SingleColumnValue(RandomBytes(rng), RandomBytes(rng), o, c, b(), b());
  };
  const auto kind = static_cast<Filter::Kind>(rng() % (depth < 3 ? 16 : 13));  // 13..15: a List
  switch (kind) {
    case Filter::Kind::kPrefix: return Filter::Prefix(RandomBytes(rng));
    case Filter::Kind::kColumnPrefix: return Filter::ColumnPrefix(RandomBytes(rng));
    case Filter::Kind::kRow:
    case Filter::Kind::kQualifier:
    case Filter::Kind::kValue:
    case Filter::Kind::kSingleColumnValue: return compare(kind);
    case Filter::Kind::kMultiRowRange: {
      std::vector<RowRange> ranges(rng() % 3);
      for (RowRange& r : ranges) r = {RandomBytes(rng), b(), RandomBytes(rng), b()};
      return Filter::MultiRowRange(std::move(ranges));
    }
    case Filter::Kind::kColumnRange: return Filter::ColumnRange(RandomBytes(rng), b(), RandomBytes(rng), b());
    case Filter::Kind::kColumnPagination: return Filter::ColumnPagination(RandomCount(rng), RandomCount(rng));
    case Filter::Kind::kTimestamps: {
      std::vector<int64_t> ts(rng() % 4);
      for (int64_t& t : ts) t = RandomCount(rng);
      return Filter::Timestamps(std::move(ts));
    }
    case Filter::Kind::kKeyOnly: return Filter::KeyOnly(b());
    case Filter::Kind::kFirstKeyOnly: return Filter::FirstKeyOnly();
    case Filter::Kind::kPage: return Filter::Page(RandomCount(rng));
    default: {  // Lists of two or more: the language has no List of one or none
      std::vector<Filter> children(2 + rng() % 3);
      for (Filter& c : children) c = RandomFilter(rng, depth + 1);
      return Filter::List(b(), std::move(children));
    }
  }
}

TEST(FilterToString, RandomTreesRoundTrip) {
  std::mt19937 rng(20240601);
  for (int i = 0; i < 3000; ++i) {
    const Filter f = RandomFilter(rng, 0);
    const std::string text = FilterToString(f);
    absl::StatusOr<Filter> back = ParseFilterString(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    ASSERT_EQ(*back, f) << text << " read back as " << FilterToString(*back);
  }
}

TEST(ParseFilterString, ErrorsSayWhereAndWhat) {
  const struct {
    std::string text;
    std::string message;  // a part of it
  } cases[] = {
      {"", "filter string: at offset 0: expected a filter name or '(', found the end of the filter string"},
      {"   ", "at offset 3: expected a filter name or '('"},
      {"Foo('a')", "filter string: at offset 0: unknown filter 'Foo'"},
      {"prefixFilter('a')", "unknown filter 'prefixFilter'"},
      {"PrefixFilter", "at offset 12: expected '(' after PrefixFilter, found the end"},
      {"PrefixFilter('a'", "at offset 16: expected ',' or ')' after an argument of PrefixFilter, found the end"},
      {"PrefixFilter(a)", "at offset 13: expected a quoted string as argument 1 of PrefixFilter, found 'a'"},
      {"PrefixFilter('a', 'b')", "at offset 0: PrefixFilter does not take 2 arguments; it takes PrefixFilter('prefix')"},
      {"PrefixFilter(,)", "at offset 13: expected an argument or ')' of PrefixFilter, found ','"},
      {"PrefixFilter('a',)", "at offset 17: expected an argument of PrefixFilter, found ')'"},
      {"PrefixFilter('abc", "at offset 13: unterminated quoted string"},
      {"PrefixFilter('a''", "at offset 13: unterminated quoted string"},
      {"SingleColumnValueFilter('f', 'q', =, 'binary:v', true)",
       "at offset 0: SingleColumnValueFilter does not take 5 arguments"},
      {"SingleColumnValueFilter('f', 'q', = 'binary:v')",
       "at offset 36: expected ',' or ')' after an argument of SingleColumnValueFilter, found the string 'binary:v'"},
      {"SingleColumnValueFilter('f', 'q', =, 'binary:v', 1, true)",
       "at offset 49: expected true or false as argument 5 of SingleColumnValueFilter, found '1'"},
      {"PageFilter(-1)", "at offset 11: expected an integer >= 0 as argument 1 of PageFilter, found '-1'"},
      {"PageFilter(x)", "expected an integer as argument 1 of PageFilter"},
      {"PageFilter(99999999999999999999)", "expected an integer as argument 1 of PageFilter"},
      {"PageFilter('1')", "expected an integer as argument 1 of PageFilter, found the string '1'"},
      {"ColumnPaginationFilter(1, -2)", "expected an integer >= 0 as argument 2 of ColumnPaginationFilter"},
      {"TimestampsFilter(1, -5)", "expected an integer >= 0 as argument 2 of TimestampsFilter"},
      {"RowFilter(<, 'regexstring:a')", "at offset 13: a regexstring comparator takes = or != only, not <"},
      {"ValueFilter(>=, 'substring:a')", "a substring comparator takes = or != only, not >="},
      {"RowFilter(=>, 'binary:a')", "at offset 10: expected a compare operator (<, <=, =, !=, >=, >) as argument 1"},
      {"RowFilter('=', 'binary:a')", "expected a compare operator"},
      {"RowFilter(=, 'binar:a')", "at offset 13: expected a comparator 'type:value'"},
      {"RowFilter(=, 'nocolon')", "expected a comparator 'type:value'"},
      {"RowFilter(=, binary:a)", "expected a comparator 'type:value' (type binary, binaryprefix, regexstring or "
                                 "substring) as argument 2 of RowFilter, found 'binary:a'"},
      {"RowFilter(=)", "RowFilter does not take 1 argument; it takes RowFilter(op, 'type:value')"},
      {"ColumnRangeFilter('a', yes, 'b', false)", "expected true or false as argument 2 of ColumnRangeFilter"},
      {"MultiRowRangeFilter('a', true, 'b')", "MultiRowRangeFilter does not take 3 arguments"},
      {"MultiRowRangeFilter('a', true, 'b', false, 'c')", "MultiRowRangeFilter does not take 5 arguments"},
      {"KeyOnlyFilter(1)", "expected true or false as argument 1 of KeyOnlyFilter"},
      {"FirstKeyOnlyFilter(true)", "FirstKeyOnlyFilter does not take 1 argument"},
      {"SKIP ValueFilter(=, 'binary:0')", "at offset 0: SKIP is not supported"},
      {"PageFilter(1) AND WHILE RowFilter(=, 'binary:a')", "at offset 18: WHILE is not supported"},
      {"PrefixFilter('a') AND", "at offset 21: expected a filter name or '(', found the end"},
      {"PrefixFilter('a') and PageFilter(1)",
       "at offset 18: expected AND, OR or the end of the filter string, found 'and'"},
      {"AND PageFilter(1)", "at offset 0: expected a filter name or '(', found 'AND'"},
      {"(PrefixFilter('a')", "at offset 18: expected AND, OR or ')', found the end"},
      {"PrefixFilter('a'))", "at offset 17: expected AND, OR or the end of the filter string, found ')'"},
      {"()", "at offset 1: expected a filter name or '(', found ')'"},
      {"'x'", "expected a filter name or '(', found the string 'x'"},
      {std::string(101, '(') + "PageFilter(1)" + std::string(101, ')'), "at offset 100: more than 100 nested '('"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Filter> f = ParseFilterString(c.text);
    ASSERT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(f.status().message().find(c.message), std::string_view::npos)
        << c.text << "\n  got: " << f.status().message() << "\n want: " << c.message;
  }
}

// Random input never crashes: it parses, or fails with InvalidArgument; what parses prints back
// to an equal filter.
TEST(ParseFilterString, RandomInputNeverCrashes) {
  const std::vector<std::string> pieces = {
      "(", ")", ",", "'", "''", " ", "AND ", " OR ", "SKIP", "PrefixFilter", "PageFilter", "TimestampsFilter",
      "SingleColumnValueFilter", "MultiRowRangeFilter", "KeyOnlyFilter", "=", "<=", "!", "'binary:", "'regexstring:",
      "true", "-1", "12", "'a'", "PrefixFilter('x')", "\xff", std::string(1, '\0')};
  std::mt19937 rng(7);
  int parsed = 0;
  for (int i = 0; i < 6000; ++i) {
    std::string text;
    if (i % 2 == 0) {
      text = RandomBytes(rng) + RandomBytes(rng) + RandomBytes(rng);
    } else {
      for (uint32_t n = rng() % 24; n > 0; --n) text += pieces[rng() % pieces.size()];
    }
    absl::StatusOr<Filter> f = ParseFilterString(text);
    if (!f.ok()) {
      ASSERT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << text;
      continue;
    }
    ++parsed;
    absl::StatusOr<Filter> back = ParseFilterString(FilterToString(*f));
    ASSERT_TRUE(back.ok()) << text;
    ASSERT_EQ(*back, *f) << text;
  }
  EXPECT_GT(parsed, 0);
  EXPECT_EQ(ParseFilterString(std::string(100000, '(')).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RowPrefix, Successor) {
  EXPECT_EQ(RowPrefixSuccessor(""), "");
  EXPECT_EQ(RowPrefixSuccessor("a"), "b");
  EXPECT_EQ(RowPrefixSuccessor("a\xff"), "b");
  EXPECT_EQ(RowPrefixSuccessor("ab\xff\xff"), "ac");
  EXPECT_EQ(RowPrefixSuccessor("\xff\xff"), "");
  EXPECT_EQ(RowPrefixSuccessor(std::string("a\0", 2)), std::string("a\x01", 2));
}

TEST(RowPrefix, ForwardScanIsTheRange) {
  Scan s;
  s.WithStartRow("x").WithStopRow("y").SetRowPrefix("a\xff");
  EXPECT_EQ(s.start_row, "a\xff");
  EXPECT_EQ(s.stop_row, "b");
  EXPECT_FALSE(s.filter.has_value());
  s.SetRowPrefix("\xff\xff");
  EXPECT_EQ(s.start_row, "\xff\xff");
  EXPECT_EQ(s.stop_row, "");
  s.SetRowPrefix("");
  EXPECT_EQ(s.start_row, "");
  EXPECT_EQ(s.stop_row, "");
}

TEST(RowPrefix, ReversedScanAddsThePrefixFilter) {
  Scan s;
  s.SetReversed(true).SetRowPrefix("b");
  EXPECT_EQ(s.start_row, "c");
  EXPECT_EQ(s.stop_row, "a");
  EXPECT_EQ(s.filter, Filter::Prefix("b"));

  Scan t;
  t.SetReversed(true).SetFilter(Filter::Page(3)).SetRowPrefix(std::string("a\0", 2));
  EXPECT_EQ(t.start_row, std::string("a\x01", 2));
  EXPECT_EQ(t.stop_row, "a");  // exactly the row below "a\0"
  EXPECT_EQ(t.filter, Filter::List(Filter::kMustPassAll, {Filter::Prefix(std::string("a\0", 2)), Filter::Page(3)}));

  Scan u;
  u.SetReversed(true).SetRowPrefix("\xff\xff");
  EXPECT_EQ(u.start_row, "");  // from the last row
  EXPECT_EQ(u.stop_row, "\xff\xfe");
  EXPECT_EQ(u.filter, Filter::Prefix("\xff\xff"));

  Scan all;
  all.SetReversed(true).SetRowPrefix("");
  EXPECT_EQ(all.start_row, "");
  EXPECT_EQ(all.stop_row, "");
  EXPECT_FALSE(all.filter.has_value());
}

}  // namespace
}  // namespace basalt
