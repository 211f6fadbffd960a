// ParseFilterString and FilterToString (client/include/basalt/client.h): HBase's filter language
// (org.apache.hadoop.hbase.filter.ParseFilter) to and from basalt::Filter. Apart from the rest of
// the client, so the shell library uses it without the gRPC client. Stateless; thread-safe.
//
// Grammar (tokens may be separated by whitespace):
//   expr    := and ('OR' and)*
//   and     := primary ('AND' primary)*
//   primary := '(' expr ')' | NAME '(' [arg (',' arg)*] ')'
//   arg     := 'quoted string' | word (integer, true, false) | op (< <= = != >= >)
// A chain of one operator is one List; a parenthesised expression is its own node, so
// "(A AND B) AND C" keeps its inner List (FilterToString relies on that for the round trip).
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "common/status.h"

namespace basalt {
namespace {

// The filters by name: the argument counts they take (min, max, in steps of `step`) and the usage
// that errors show.
struct Syntax {
  Filter::Kind kind;
  std::string_view name;
  size_t min_args, max_args, step;
  std::string_view usage;
};
constexpr size_t kAny = ~size_t{0};
constexpr Syntax kSyntax[] = {
    {Filter::Kind::kPrefix, "PrefixFilter", 1, 1, 1, "('prefix')"},
    {Filter::Kind::kRow, "RowFilter", 2, 2, 1, "(op, 'type:value')"},
    {Filter::Kind::kMultiRowRange, "MultiRowRangeFilter", 0, kAny, 4,
     "('start', startInclusive, 'stop', stopInclusive, ...)"},
    {Filter::Kind::kQualifier, "QualifierFilter", 2, 2, 1, "(op, 'type:value')"},
    {Filter::Kind::kValue, "ValueFilter", 2, 2, 1, "(op, 'type:value')"},
    {Filter::Kind::kColumnPrefix, "ColumnPrefixFilter", 1, 1, 1, "('prefix')"},
    {Filter::Kind::kColumnRange, "ColumnRangeFilter", 4, 4, 1, "('min', minInclusive, 'max', maxInclusive)"},
    {Filter::Kind::kColumnPagination, "ColumnPaginationFilter", 2, 2, 1, "(limit, offset)"},
    {Filter::Kind::kTimestamps, "TimestampsFilter", 0, kAny, 1, "(ts, ...)"},
    {Filter::Kind::kKeyOnly, "KeyOnlyFilter", 0, 1, 1, "() or (lenAsValue)"},
    {Filter::Kind::kFirstKeyOnly, "FirstKeyOnlyFilter", 0, 0, 1, "()"},
    {Filter::Kind::kSingleColumnValue, "SingleColumnValueFilter", 4, 6, 2,
     "('family', 'qualifier', op, 'type:value'[, filterIfMissing, latestVersionOnly])"},
    {Filter::Kind::kPage, "PageFilter", 1, 1, 1, "(pageSize)"},
};

// Indexed by FilterOp.
constexpr std::string_view kOps[] = {"<", "<=", "=", "!=", ">=", ">", "NO_OP"};
// Indexed by Comparator::Kind.
constexpr std::string_view kComparators[] = {"binary", "binaryprefix", "regexstring", "substring"};
// names[i], or "?" for a value out of the enum's range.
template <size_t N>
std::string_view NameOf(const std::string_view (&names)[N], size_t i) {
  return i < N ? names[i] : "?";
}

// Nesting of parentheses beyond this is refused, so no input exhausts the stack.
constexpr int kMaxDepth = 100;

struct Token {
  enum class Kind { kLParen, kRParen, kComma, kString, kOp, kWord, kEnd };
  Kind kind;
  size_t offset;
  std::string text;  // kString: the bytes between the quotes, unescaped; kOp, kWord: as written
};

bool IsSpace(char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); }
bool IsOpChar(char ch) { return ch == '<' || ch == '>' || ch == '=' || ch == '!'; }
// Ends a word or an op.
bool IsDelimiter(char ch) { return IsSpace(ch) || ch == '(' || ch == ')' || ch == ',' || ch == '\''; }

// Bytes for a message: escaped, and cut after 40.
std::string Shown(std::string_view s) {
  std::string e = absl::CHexEscape(AV(s.substr(0, 40)));
  return s.size() > 40 ? e + "..." : e;
}

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Token::Kind::kLParen: return "'('";
    case Token::Kind::kRParen: return "')'";
    case Token::Kind::kComma: return "','";
    case Token::Kind::kString: return absl::StrCat("the string '", Shown(t.text), "'");
    case Token::Kind::kOp:
    case Token::Kind::kWord: return absl::StrCat("'", Shown(t.text), "'");
    case Token::Kind::kEnd: break;
  }
  return "the end of the filter string";
}

absl::Status ErrorAt(size_t offset, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("filter string: at offset ", offset, ": ", AV(what)));
}

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    const char ch = text[i];
    const size_t start = i;
    if (IsSpace(ch)) {
      ++i;
    } else if (ch == '(' || ch == ')' || ch == ',') {
      tokens.push_back({ch == '(' ? Token::Kind::kLParen : ch == ')' ? Token::Kind::kRParen : Token::Kind::kComma,
                        start, std::string(1, ch)});
      ++i;
    } else if (ch == '\'') {
      std::string bytes;
      for (++i;;) {
        const size_t quote = text.find('\'', i);
        if (quote == std::string_view::npos) {
          return ErrorAt(start, "unterminated quoted string (a quote inside one is written '')");
        }
        bytes.append(text.substr(i, quote - i));
        i = quote + 1;
        if (i == text.size() || text[i] != '\'') break;  // the closing quote
        bytes.push_back('\'');                           // '' is one quote
        ++i;
      }
      tokens.push_back({Token::Kind::kString, start, std::move(bytes)});
    } else {
      // A run of op characters, or of anything else up to a delimiter: "<=", "true", "-12".
      const bool op = IsOpChar(ch);
      while (i < text.size() && !IsDelimiter(text[i]) && IsOpChar(text[i]) == op) ++i;
      tokens.push_back({op ? Token::Kind::kOp : Token::Kind::kWord, start, std::string(text.substr(start, i - start))});
    }
  }
  tokens.push_back({Token::Kind::kEnd, text.size(), ""});
  return tokens;
}

// One filter as written: its syntax, where its name starts, and its argument tokens.
struct Call {
  const Syntax* syntax;
  size_t offset;
  std::vector<Token> args;
};

absl::Status ArgError(const Call& c, size_t i, std::string_view expected) {
  return ErrorAt(c.args[i].offset, absl::StrCat("expected ", AV(expected), " as argument ", i + 1, " of ",
                                                AV(c.syntax->name), ", found ", Describe(c.args[i])));
}

absl::StatusOr<std::string> StringArg(const Call& c, size_t i) {
  if (c.args[i].kind != Token::Kind::kString) return ArgError(c, i, "a quoted string");
  return c.args[i].text;
}

absl::StatusOr<bool> BoolArg(const Call& c, size_t i) {
  if (c.args[i].kind == Token::Kind::kWord) {
    const std::string s = absl::AsciiStrToLower(c.args[i].text);
    if (s == "true" || s == "false") return s == "true";
  }
  return ArgError(c, i, "true or false");
}

// HBase's counts and timestamps are never negative.
absl::StatusOr<int64_t> CountArg(const Call& c, size_t i) {
  int64_t n = 0;
  if (c.args[i].kind != Token::Kind::kWord || !absl::SimpleAtoi(AV(c.args[i].text), &n)) {
    return ArgError(c, i, "an integer");
  }
  if (n < 0) return ArgError(c, i, "an integer >= 0");
  return n;
}

absl::StatusOr<FilterOp> OpArg(const Call& c, size_t i) {
  if (c.args[i].kind == Token::Kind::kOp) {
    for (size_t k = 0; k < static_cast<size_t>(FilterOp::kNoOp); ++k) {
      if (c.args[i].text == kOps[k]) return static_cast<FilterOp>(k);
    }
  }
  return ArgError(c, i, "a compare operator (<, <=, =, !=, >=, >)");
}

// 'type:value'; regexstring and substring compare only with = and != (as HBase's CompareFilter).
absl::StatusOr<Comparator> ComparatorArg(const Call& c, size_t i, FilterOp op) {
  const std::string_view s = c.args[i].text;
  const size_t colon = s.find(':');
  if (c.args[i].kind == Token::Kind::kString && colon != std::string_view::npos) {
    for (size_t k = 0; k < std::size(kComparators); ++k) {
      if (s.substr(0, colon) != kComparators[k]) continue;
      Comparator cmp{static_cast<Comparator::Kind>(k), std::string(s.substr(colon + 1))};
      if ((cmp.kind == Comparator::Kind::kRegex || cmp.kind == Comparator::Kind::kSubstring) &&
          op != FilterOp::kEqual && op != FilterOp::kNotEqual) {
        return ErrorAt(c.args[i].offset, absl::StrCat("a ", AV(kComparators[k]), " comparator takes = or != only, not ",
                                                      AV(kOps[static_cast<size_t>(op)])));
      }
      return cmp;
    }
  }
  return ArgError(c, i, "a comparator 'type:value' (type binary, binaryprefix, regexstring or substring)");
}

absl::StatusOr<Filter> Build(const Call& c) {
  const size_t n = c.args.size();
  if (n < c.syntax->min_args || n > c.syntax->max_args || (n - c.syntax->min_args) % c.syntax->step != 0) {
    return ErrorAt(c.offset, absl::StrCat(AV(c.syntax->name), " does not take ", n, " argument", n == 1 ? "" : "s",
                                          "; it takes ", AV(c.syntax->name), AV(c.syntax->usage)));
  }
  Filter f(c.syntax->kind);
  switch (f.kind) {
    case Filter::Kind::kPrefix:
    case Filter::Kind::kColumnPrefix: {
      BASALT_ASSIGN_OR_RETURN(f.prefix, StringArg(c, 0));
      break;
    }
    case Filter::Kind::kRow:
    case Filter::Kind::kQualifier:
    case Filter::Kind::kValue: {
      BASALT_ASSIGN_OR_RETURN(f.op, OpArg(c, 0));
      BASALT_ASSIGN_OR_RETURN(f.comparator, ComparatorArg(c, 1, f.op));
      break;
    }
    case Filter::Kind::kMultiRowRange:
      for (size_t i = 0; i < n; i += 4) {
        RowRange r;
        BASALT_ASSIGN_OR_RETURN(r.start, StringArg(c, i));
        BASALT_ASSIGN_OR_RETURN(r.start_inclusive, BoolArg(c, i + 1));
        BASALT_ASSIGN_OR_RETURN(r.stop, StringArg(c, i + 2));
        BASALT_ASSIGN_OR_RETURN(r.stop_inclusive, BoolArg(c, i + 3));
        f.ranges.push_back(std::move(r));
      }
      break;
    case Filter::Kind::kColumnRange: {
      BASALT_ASSIGN_OR_RETURN(f.min_column, StringArg(c, 0));
      BASALT_ASSIGN_OR_RETURN(f.min_inclusive, BoolArg(c, 1));
      BASALT_ASSIGN_OR_RETURN(f.max_column, StringArg(c, 2));
      BASALT_ASSIGN_OR_RETURN(f.max_inclusive, BoolArg(c, 3));
      break;
    }
    case Filter::Kind::kColumnPagination: {
      BASALT_ASSIGN_OR_RETURN(f.limit, CountArg(c, 0));
      BASALT_ASSIGN_OR_RETURN(f.offset, CountArg(c, 1));
      break;
    }
    case Filter::Kind::kTimestamps:
      for (size_t i = 0; i < n; ++i) {
        BASALT_ASSIGN_OR_RETURN(int64_t ts, CountArg(c, i));
        f.timestamps.push_back(ts);
      }
      break;
    case Filter::Kind::kKeyOnly:
      if (n == 1) {
        BASALT_ASSIGN_OR_RETURN(f.len_as_value, BoolArg(c, 0));
      }
      break;
    case Filter::Kind::kFirstKeyOnly:
    case Filter::Kind::kList:
      break;
    case Filter::Kind::kSingleColumnValue: {
      BASALT_ASSIGN_OR_RETURN(f.family, StringArg(c, 0));
      BASALT_ASSIGN_OR_RETURN(f.qualifier, StringArg(c, 1));
      BASALT_ASSIGN_OR_RETURN(f.op, OpArg(c, 2));
      BASALT_ASSIGN_OR_RETURN(f.comparator, ComparatorArg(c, 3, f.op));
      if (n == 6) {
        BASALT_ASSIGN_OR_RETURN(f.filter_if_missing, BoolArg(c, 4));
        BASALT_ASSIGN_OR_RETURN(f.latest_version_only, BoolArg(c, 5));
      }
      break;
    }
    case Filter::Kind::kPage: {
      BASALT_ASSIGN_OR_RETURN(f.limit, CountArg(c, 0));
      break;
    }
  }
  return f;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<Filter> Parse() {
    BASALT_ASSIGN_OR_RETURN(Filter f, Chain(/*all=*/false, 0));
    if (Peek().kind != Token::Kind::kEnd) return Expected("AND, OR or the end of the filter string");
    return f;
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() { return tokens_[pos_ == tokens_.size() - 1 ? pos_ : pos_++]; }
  bool PeekWord(std::string_view w) const { return Peek().kind == Token::Kind::kWord && Peek().text == w; }
  absl::Status Expected(std::string_view what) const {
    return ErrorAt(Peek().offset, absl::StrCat("expected ", AV(what), ", found ", Describe(Peek())));
  }

  // An OR chain of AND chains (all false), or an AND chain of primaries (all true), at `depth`
  // parentheses.
  absl::StatusOr<Filter> Chain(bool all, int depth) {
    std::vector<Filter> operands;
    do {
      if (!operands.empty()) Next();  // the operator
      BASALT_ASSIGN_OR_RETURN(Filter f, all ? Primary(depth) : Chain(true, depth));
      operands.push_back(std::move(f));
    } while (PeekWord(all ? "AND" : "OR"));
    if (operands.size() == 1) return std::move(operands[0]);
    return Filter::List(all, std::move(operands));
  }

  absl::StatusOr<Filter> Primary(int depth) {
    if (Peek().kind == Token::Kind::kLParen) {
      if (depth == kMaxDepth) return ErrorAt(Peek().offset, absl::StrCat("more than ", kMaxDepth, " nested '('"));
      Next();
      BASALT_ASSIGN_OR_RETURN(Filter f, Chain(/*all=*/false, depth + 1));
      if (Peek().kind != Token::Kind::kRParen) return Expected("AND, OR or ')'");
      Next();
      return f;
    }
    if (Peek().kind != Token::Kind::kWord || PeekWord("AND") || PeekWord("OR")) {
      return Expected("a filter name or '('");
    }
    const Token& name = Next();
    if (name.text == "SKIP" || name.text == "WHILE") {
      return ErrorAt(name.offset, absl::StrCat(name.text, " is not supported"));
    }
    Call call{nullptr, name.offset, {}};
    for (const Syntax& s : kSyntax) {
      if (name.text == s.name) call.syntax = &s;
    }
    if (call.syntax == nullptr) return ErrorAt(name.offset, absl::StrCat("unknown filter '", Shown(name.text), "'"));
    const std::string of = absl::StrCat(" of ", AV(call.syntax->name));
    if (Peek().kind != Token::Kind::kLParen) return Expected(absl::StrCat("'(' after ", AV(call.syntax->name)));
    Next();
    if (Peek().kind == Token::Kind::kRParen) {
      Next();
      return Build(call);
    }
    while (true) {
      const Token::Kind k = Peek().kind;
      if (k != Token::Kind::kString && k != Token::Kind::kWord && k != Token::Kind::kOp) {
        return Expected(absl::StrCat(call.args.empty() ? "an argument or ')'" : "an argument", of));
      }
      call.args.push_back(Next());
      if (Peek().kind == Token::Kind::kRParen) break;
      if (Peek().kind != Token::Kind::kComma) return Expected(absl::StrCat("',' or ')' after an argument", of));
      Next();
    }
    Next();
    return Build(call);
  }

  std::vector<Token> tokens_;  // ends with kEnd
  size_t pos_ = 0;
};

void AppendQuoted(std::string_view bytes, std::string* out) {
  out->push_back('\'');
  for (char ch : bytes) {
    if (ch == '\'') out->push_back('\'');
    out->push_back(ch);
  }
  out->push_back('\'');
}

std::string_view BoolName(bool b) { return b ? "true" : "false"; }

// f without the Lists of one filter around it (they mean what their filter means).
const Filter& Unwrap(const Filter& f) {
  const Filter* p = &f;
  while (p->kind == Filter::Kind::kList && p->filters.size() == 1) p = &p->filters[0];
  return *p;
}

void Render(const Filter& filter, std::string* out) {
  const Filter& f = Unwrap(filter);
  if (f.kind == Filter::Kind::kList) {
    if (f.filters.empty()) out->append("()");
    for (size_t i = 0; i < f.filters.size(); ++i) {
      if (i > 0) out->append(f.must_pass_all ? " AND " : " OR ");
      const bool list = Unwrap(f.filters[i]).kind == Filter::Kind::kList;
      if (list) out->push_back('(');
      Render(f.filters[i], out);
      if (list) out->push_back(')');
    }
    return;
  }
  for (const Syntax& s : kSyntax) {
    if (s.kind == f.kind) out->append(s.name);
  }
  out->push_back('(');
  std::vector<std::string> args;
  auto op = [&] { args.emplace_back(NameOf(kOps, static_cast<size_t>(f.op))); };
  auto str = [&](std::string_view s) { AppendQuoted(s, &args.emplace_back()); };
  auto range = [&](std::string_view lo, bool lo_inclusive, std::string_view hi, bool hi_inclusive) {
    str(lo);
    args.emplace_back(BoolName(lo_inclusive));
    str(hi);
    args.emplace_back(BoolName(hi_inclusive));
  };
  auto comparator = [&] {
    str(absl::StrCat(AV(NameOf(kComparators, static_cast<size_t>(f.comparator.kind))), ":", f.comparator.value));
  };
  switch (f.kind) {
    case Filter::Kind::kPrefix:
    case Filter::Kind::kColumnPrefix:
      str(f.prefix);
      break;
    case Filter::Kind::kRow:
    case Filter::Kind::kQualifier:
    case Filter::Kind::kValue:
      op();
      comparator();
      break;
    case Filter::Kind::kMultiRowRange:
      for (const RowRange& r : f.ranges) range(r.start, r.start_inclusive, r.stop, r.stop_inclusive);
      break;
    case Filter::Kind::kColumnRange:
      range(f.min_column, f.min_inclusive, f.max_column, f.max_inclusive);
      break;
    case Filter::Kind::kColumnPagination:
      args = {absl::StrCat(f.limit), absl::StrCat(f.offset)};
      break;
    case Filter::Kind::kTimestamps:
      for (int64_t ts : f.timestamps) args.push_back(absl::StrCat(ts));
      break;
    case Filter::Kind::kKeyOnly:
      if (f.len_as_value) args.emplace_back("true");
      break;
    case Filter::Kind::kFirstKeyOnly:
    case Filter::Kind::kList:
      break;
    case Filter::Kind::kSingleColumnValue:
      str(f.family);
      str(f.qualifier);
      op();
      comparator();
      if (f.filter_if_missing || !f.latest_version_only) {
        args.emplace_back(BoolName(f.filter_if_missing));
        args.emplace_back(BoolName(f.latest_version_only));
      }
      break;
    case Filter::Kind::kPage:
      args.push_back(absl::StrCat(f.limit));
      break;
  }
  for (size_t i = 0; i < args.size(); ++i) absl::StrAppend(out, i > 0 ? ", " : "", args[i]);
  out->push_back(')');
}

}  // namespace

absl::StatusOr<Filter> ParseFilterString(std::string_view text) {
  BASALT_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(text));
  return Parser(std::move(tokens)).Parse();
}

std::string FilterToString(const Filter& f) {
  std::string out;
  Render(f, &out);
  return out;
}

}  // namespace basalt
