#include "src/tools/shell/parser.h"

#include <gtest/gtest.h>

#include "src/tools/shell/lexer.h"

namespace basalt::shell {
namespace {

std::vector<Command> MustParse(std::string_view src) {
  auto r = Parse(src);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : std::vector<Command>{};
}

std::string ParseError(std::string_view src, absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  auto r = Parse(src);
  EXPECT_FALSE(r.ok()) << src;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), code) << r.status();
  return std::string(r.status().message());
}

TEST(LexerTest, TokenKindsAndPositions) {
  auto r = Tokenize("put 't1', -5 => {[()]};\n x");
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<TokenKind> kinds;
  for (const Token& t : *r) kinds.push_back(t.kind);
  using K = TokenKind;
  EXPECT_EQ(kinds, (std::vector<K>{K::kIdent, K::kString, K::kComma, K::kInt, K::kArrow, K::kLBrace, K::kLBracket,
                                   K::kLParen, K::kRParen, K::kRBracket, K::kRBrace, K::kSemicolon, K::kNewline,
                                   K::kIdent, K::kEnd}));
  EXPECT_EQ((*r)[3].number, -5);
  EXPECT_EQ((*r)[1].column, 5);
  EXPECT_EQ((*r)[13].line, 2);
  EXPECT_EQ((*r)[13].column, 2);
}

TEST(LexerTest, Integers) {
  auto r = Tokenize("0 42 -7 +3 1_000_000 9223372036854775807 -9223372036854775808");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].number, 0);
  EXPECT_EQ((*r)[1].number, 42);
  EXPECT_EQ((*r)[2].number, -7);
  EXPECT_EQ((*r)[3].number, 3);
  EXPECT_EQ((*r)[4].number, 1000000);
  EXPECT_EQ((*r)[5].number, INT64_MAX);
  EXPECT_EQ((*r)[6].number, INT64_MIN);

  auto big = Tokenize("put 9223372036854775808");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(big.status().message(), "column 5: integer 9223372036854775808 does not fit in 64 bits");
  auto fl = Tokenize("x 1.5");
  ASSERT_FALSE(fl.ok());
  EXPECT_EQ(fl.status().message(), "column 3: floating-point numbers are not supported; expected an integer");
  auto junk = Tokenize("x 12ab");
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.status().message(), "column 5: unexpected character 'a' in a number");
}

TEST(LexerTest, SingleQuotedStringsAreLiteral) {
  auto r = Tokenize(R"('a\nb' 'it\'s' 'back\\slash' 'x\q' '')");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].text, "a\\nb");
  EXPECT_EQ((*r)[1].text, "it's");
  EXPECT_EQ((*r)[2].text, "back\\slash");
  EXPECT_EQ((*r)[3].text, "x\\q");
  EXPECT_EQ((*r)[4].text, "");
}

TEST(LexerTest, DoubleQuotedEscapes) {
  auto r = Tokenize(R"("a\nb\tc\\d\"e" "\x00\xff\x7" "\101\0" "\u00e9\u{1F600}" "\q\#\s" "it's")");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].text, "a\nb\tc\\d\"e");
  EXPECT_EQ((*r)[1].text, std::string("\x00\xff\x07", 3));
  EXPECT_EQ((*r)[2].text, std::string("A\0", 2));
  EXPECT_EQ((*r)[3].text, "\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ((*r)[4].text, "q# ");
  EXPECT_EQ((*r)[5].text, "it's");
}

TEST(LexerTest, StringErrors) {
  auto bad_hex = Tokenize(R"(put "ab\xZZ")");
  ASSERT_FALSE(bad_hex.ok());
  EXPECT_EQ(bad_hex.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_hex.status().message(), "column 8: invalid escape \\x: expected one or two hex digits");

  auto bad_u = Tokenize(R"("\u12")");
  ASSERT_FALSE(bad_u.ok());
  EXPECT_EQ(bad_u.status().message(), "column 2: invalid escape \\u: expected four hex digits");

  auto open = Tokenize("put 't1', 'r1");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(open.status().message(), "column 11: unterminated string (missing closing ')");

  auto weird = Tokenize("put 't1' @");
  ASSERT_FALSE(weird.ok());
  EXPECT_EQ(weird.status().message(), "column 10: unexpected character '@'");
  auto ctrl = Tokenize("put \x01");
  ASSERT_FALSE(ctrl.ok());
  EXPECT_EQ(ctrl.status().message(), "column 5: unexpected character \\x01");
}

TEST(LexerTest, CommentsAndMultilineStrings) {
  auto r = Tokenize("list # everything\n'a\nb'");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[1].kind, TokenKind::kNewline);
  EXPECT_EQ((*r)[2].text, "a\nb");
  EXPECT_EQ((*r)[2].line, 2);
}

TEST(ParserTest, SimpleCommands) {
  auto cmds = MustParse("list");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].name, "list");
  EXPECT_TRUE(cmds[0].args.empty());

  cmds = MustParse("put 't1', 'r1', 'cf:q', 'value', 1700000000000");
  ASSERT_EQ(cmds.size(), 1u);
  ASSERT_EQ(cmds[0].args.size(), 5u);
  EXPECT_EQ(cmds[0].args[0].str, "t1");
  EXPECT_EQ(cmds[0].args[2].str, "cf:q");
  EXPECT_TRUE(cmds[0].args[4].is_int());
  EXPECT_EQ(cmds[0].args[4].number, 1700000000000);
  EXPECT_EQ(cmds[0].args[4].column, 34);
  EXPECT_EQ(cmds[0].source, "put 't1', 'r1', 'cf:q', 'value', 1700000000000");
}

TEST(ParserTest, SeparatorsAndBlankLines) {
  auto cmds = MustParse("\n; create 't1', 'cf';put 't1','r','cf:a','1'\n\n  scan 't1' ;\n# done\n");
  ASSERT_EQ(cmds.size(), 3u);
  EXPECT_EQ(cmds[0].name, "create");
  EXPECT_EQ(cmds[0].source, "create 't1', 'cf'");
  EXPECT_EQ(cmds[1].name, "put");
  EXPECT_EQ(cmds[2].name, "scan");
  EXPECT_EQ(cmds[2].line, 4);
  EXPECT_EQ(cmds[2].column, 3);
  EXPECT_EQ(cmds[2].source, "scan 't1'");
  EXPECT_TRUE(MustParse("").empty());
  EXPECT_TRUE(MustParse(" ;; # nothing").empty());
}

TEST(ParserTest, HashesAndArrays) {
  auto cmds = MustParse(
      "create 't1', {NAME => 'cf', VERSIONS => 3, TTL => 60, BLOCKCACHE => true, 'COMPRESSION' => \"SNAPPY\"}");
  ASSERT_EQ(cmds.size(), 1u);
  ASSERT_EQ(cmds[0].args.size(), 2u);
  const Value& h = cmds[0].args[1];
  ASSERT_TRUE(h.is_hash());
  ASSERT_EQ(h.entries.size(), 5u);
  EXPECT_EQ(h.entries[0].first.kind, Value::Kind::kName);
  EXPECT_EQ(h.Find("NAME")->str, "cf");
  EXPECT_EQ(h.Find("VERSIONS")->number, 3);
  EXPECT_EQ(h.Find("BLOCKCACHE")->kind, Value::Kind::kBool);
  EXPECT_TRUE(h.Find("BLOCKCACHE")->boolean);
  EXPECT_EQ(h.Find("COMPRESSION")->str, "SNAPPY");
  EXPECT_EQ(h.Find("MISSING"), nullptr);

  cmds = MustParse("scan 't1', {COLUMNS => ['cf:q', 'cf2'], TIMERANGE => [0, 100], LIMIT => 10, X => nil, Y => {}}");
  const Value& s = cmds[0].args[1];
  ASSERT_TRUE(s.Find("COLUMNS")->is_array());
  EXPECT_EQ(s.Find("COLUMNS")->items.size(), 2u);
  EXPECT_EQ(s.Find("COLUMNS")->items[1].str, "cf2");
  EXPECT_EQ(s.Find("TIMERANGE")->items[1].number, 100);
  EXPECT_EQ(s.Find("X")->kind, Value::Kind::kNil);
  EXPECT_TRUE(s.Find("Y")->is_hash());
  EXPECT_TRUE(s.Find("Y")->entries.empty());

  cmds = MustParse("get 't', 'r', [], ['a',]");
  EXPECT_TRUE(cmds[0].args[2].items.empty());
  EXPECT_EQ(cmds[0].args[3].items.size(), 1u);
}

TEST(ParserTest, BracelessTrailingHash) {
  auto cmds = MustParse("create 't1', NAME => 'cf', VERSIONS => 5");
  ASSERT_EQ(cmds[0].args.size(), 2u);
  EXPECT_TRUE(cmds[0].args[1].is_hash());
  EXPECT_EQ(cmds[0].args[1].Find("VERSIONS")->number, 5);

  cmds = MustParse("get 't1', 'r1', COLUMN => 'cf:q', VERSIONS => 2; list");
  ASSERT_EQ(cmds.size(), 2u);
  ASSERT_EQ(cmds[0].args.size(), 3u);
  EXPECT_EQ(cmds[0].args[2].Find("COLUMN")->str, "cf:q");
}

TEST(ParserTest, ParenthesizedArguments) {
  auto cmds = MustParse("get('t1', 'r1')\ncount('t1')\nlist()\nscan('t1',\n  STARTROW => 'a',\n)");
  ASSERT_EQ(cmds.size(), 4u);
  EXPECT_EQ(cmds[0].args.size(), 2u);
  EXPECT_EQ(cmds[1].args.size(), 1u);
  EXPECT_TRUE(cmds[2].args.empty());
  EXPECT_EQ(cmds[3].args[1].Find("STARTROW")->str, "a");
}

TEST(ParserTest, ContinuationLines) {
  auto cmds = MustParse("put 't1',\n  'r1',\n  'cf:q', 'v'\ncreate 't2', {\n NAME => 'cf',\n VERSIONS =>\n 2\n}\n");
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0].args.size(), 4u);
  EXPECT_EQ(cmds[1].args[1].Find("VERSIONS")->number, 2);
  EXPECT_EQ(cmds[1].line, 4);
  EXPECT_EQ(cmds[0].source, "put 't1',\n  'r1',\n  'cf:q', 'v'");
}

TEST(ParserTest, BinaryRowsInDoubleQuotes) {
  auto cmds = MustParse(R"(put 't1', "row\x00\x01", 'cf:q', "\xde\xad")");
  EXPECT_EQ(cmds[0].args[1].str, std::string("row\0\x01", 5));
  EXPECT_EQ(cmds[0].args[3].str, "\xde\xad");
  EXPECT_EQ(cmds[0].args[1].ToString(), "'row\\x00\\x01'");
}

TEST(ParserTest, ErrorsSayWhatWasExpectedAndWhere) {
  EXPECT_EQ(ParseError("put 't1' 'r1'"), "column 10: expected ',' or the end of the command (';' or a new line), "
                                         "found the string 'r1'");
  EXPECT_EQ(ParseError("'t1'"), "column 1: expected a command name, found the string 't1'");
  EXPECT_EQ(ParseError("put 't1', , 'x'"), "column 11: expected a value (a string, an integer, [array] or {hash}), "
                                           "found ','");
  EXPECT_EQ(ParseError("create 't1', {NAME 'cf'}"), "column 20: expected '=>', found the string 'cf'");
  EXPECT_EQ(ParseError("scan 't1', {LIMIT => 1 STARTROW => 'a'}"), "column 24: expected ',' or '}', found 'STARTROW'");
  EXPECT_EQ(ParseError("get 't', ['a' 'b']"), "column 15: expected ',' or ']', found the string 'b'");
  EXPECT_EQ(ParseError("list\nget('t1' 'r')"), "line 2, column 10: expected ',' or ')', found the string 'r'");
  EXPECT_EQ(ParseError("put 't1', ]"), "column 11: expected a value (a string, an integer, [array] or {hash}), "
                                       "found ']'");
  EXPECT_EQ(ParseError("list\n  )"), "line 2, column 3: expected a command name, found ')'");
}

TEST(ParserTest, UnfinishedInputIsOutOfRange) {
  for (const char* src : {"put 't1',", "put 't1', 'r1", "create 't1', {NAME => 'cf',", "scan 't1', {", "get 't1', [",
                          "get('t1'", "create 't1', NAME =>", "put \"abc"}) {
    auto r = Parse(src);
    ASSERT_FALSE(r.ok()) << src;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange) << src << ": " << r.status();
  }
  // A finished command followed by an unfinished one is still unfinished as a whole.
  EXPECT_EQ(Parse("list\nput 't1',").status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ParseError("put 't1',", absl::StatusCode::kOutOfRange),
            "column 10: expected a value (a string, an integer, [array] or {hash}), found end of input");
}

TEST(ParserTest, ValueToString) {
  auto cmds = MustParse("x {A => ['a', 1, true, nil], 'b' => -2}");
  EXPECT_EQ(cmds[0].args[0].ToString(), "{A => ['a', 1, true, nil], 'b' => -2}");
  EXPECT_EQ(cmds[0].args[0].Describe(), "a hash");
}

}  // namespace
}  // namespace basalt::shell
