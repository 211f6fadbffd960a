#include "src/front/hbase/filter_convert.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt::hbase {
namespace {

constexpr std::string_view kPackage = "org.apache.hadoop.hbase.filter.";
constexpr int kMaxDepth = 32;  // as deep as Basalt's own filter trees may be (services/filters.cc)

// "<what> <name> <detail> is not supported by Basalt's HBase port": Basalt could not do as HBase.
absl::Status Unsupported(absl::string_view what, absl::string_view name, absl::string_view detail = "") {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " ", name, detail.empty() ? "" : " ", detail, " is not supported by Basalt's HBase port"));
}

// "<what> <name>: <detail>": HBase would refuse it too.
absl::Status Invalid(absl::string_view what, absl::string_view name, absl::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat(what, " ", name, ": ", detail));
}

// A filter's or comparator's own message. Parsed without ParseFromString, which logs.
template <typename M>
absl::StatusOr<M> ParseAs(absl::string_view what, absl::string_view name, const std::string& bytes) {
  M m;
  if (!m.ParsePartialFromString(bytes) || !m.IsInitialized()) {
    return Invalid(what, name, "its serialized message does not parse");
  }
  return m;
}

// ------------------------------------------------------------------ RegexStringComparator
//
// filter_convert.h lists the subset of java.util.regex that is translated. Why it is exact: its
// atoms match ASCII characters only, which both sides see alike and in the same order (decoding
// UTF-8 maps each ASCII byte to itself and never swallows one into a malformed sequence), while a
// run of other bytes decodes to a non-empty run of other characters, which only .* and .+ can
// match, on either side; and no two of those runs' matchers meet, so none counts.

constexpr int32_t kCaseInsensitive = 0x02;  // java.util.regex.Pattern's flag bits
constexpr int32_t kDotAll = 0x20;
// Java's '$' without MULTILINE: the end, or before a line terminator that ends the input; RE2's
// \z is the end only, so the terminator is matched (in UTF-8). Case-sensitive: under (?i), RE2
// folds Latin-1 \xC2 onto \xE2.
constexpr std::string_view kJavaEnd = R"((?-i:\r\n|[\n\r]|\xC2\x85|\xE2\x80[\xA8\xA9])?\z)";

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}
// Escaped, these mean themselves in both syntaxes (Java: any non-alphabetic; RE2: punctuation).
bool IsPunct(char c) { return c >= 0x20 && c < 0x7f && !std::isalnum(static_cast<unsigned char>(c)); }

void AppendLiteral(char c, std::string* out) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalnum(u)) {
    out->push_back(c);
  } else if (IsPunct(c)) {
    out->push_back('\\');
    out->push_back(c);
  } else {
    absl::StrAppend(out, "\\x", absl::Hex(u, absl::kZeroPad2));
  }
}

// The character an escape inside or outside a class stands for ('\\' + e), or -1 for \d and \w,
// or -2 when it is outside the subset.
int EscapedChar(char e) {
  if (IsPunct(e)) return e;
  switch (e) {
    case 't': return '\t';
    case 'n': return '\n';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'd':
    case 'w': return -1;
    default: return -2;
  }
}

// One java.util.regex pattern, as RE2's.
class JavaRegex {
 public:
  explicit JavaRegex(std::string_view p) : p_(p) {}

  // The RE2 pattern, or an error saying what in the Java pattern is outside the subset.
  absl::StatusOr<std::string> ToRe2(bool case_insensitive, bool dot_all) {
    if (!IsAscii(p_)) return Outside("a non-ASCII character");
    std::string out = case_insensitive ? "(?i)" : "";
    int depth = 0;
    bool quantifiable = false;  // the last token takes a quantifier
    bool solid = true;          // the last token is the start, '|', '^', \A or an ASCII atom that must match
    enum { kNoPlus, kPlus, kPlusAtom } plus = kNoPlus;  // after .+ (kPlus), then an ASCII atom (kPlusAtom)
    bool dot = false, end = false;
    for (size_t i = 0; i < p_.size();) {
      const char c = p_[i];
      const char next = i + 1 < p_.size() ? p_[i + 1] : '\0';
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!quantifiable) return Outside("a quantifier after no atom");
        bool optional = false;
        BASALT_ASSIGN_OR_RETURN(const size_t n, Quantifier(i, &optional));
        if (optional && plus == kPlusAtom) return Outside(kPlusRule);
        solid = solid && !optional;
        plus = kNoPlus;
        quantifiable = false;
        out.append(p_.substr(i, n));
        i += n;
        continue;
      }
      if (plus == kPlusAtom) plus = kNoPlus;
      Token t = Token::kAscii;
      size_t n = 1;
      switch (c) {
        case '\\':
          if (next == 'Q') {  // \Q...\E (or to the end): literal, each character escaped
            size_t stop = p_.find("\\E", i + 2);
            if (stop == std::string_view::npos) stop = p_.size();
            if (stop == i + 2) return Outside("an empty \\Q\\E");
            for (char q : p_.substr(i + 2, stop - i - 2)) {
              cr_ = cr_ || q == '\r';
              AppendLiteral(q, &out);
            }
            n = std::min(stop + 2, p_.size()) - i;
            break;
          }
          if (i + 1 == p_.size()) return Outside("a trailing '\\'");
          if (next == 'A' || next == 'z') {
            t = next == 'A' ? Token::kStart : Token::kOther;
          } else if (const int e = EscapedChar(next); e == -2) {
            return Outside(absl::StrCat("the escape \\", std::string(1, next)));
          } else {
            cr_ = cr_ || e == '\r';
          }
          n = 2;
          out.append(p_.substr(i, 2));
          break;
        case '[': {
          BASALT_ASSIGN_OR_RETURN(const size_t close, Class(i, &out));
          n = close - i + 1;
          break;
        }
        case '.': {
          if (next != '*' && next != '+') return Outside("'.' other than in .* or .+");
          bool optional = false;
          BASALT_ASSIGN_OR_RETURN(const size_t q, Quantifier(i + 1, &optional));
          if (next == '+' && (depth != 0 || !solid)) return Outside(kPlusRule);
          t = next == '+' ? Token::kPlus : Token::kOther;
          dot = true;
          n = 1 + q;
          out.append(p_.substr(i, n));
          break;
        }
        case '(':
          if (next == '?' && p_.substr(i, 3) != "(?:") return Outside("a group (?...) other than (?:...)");
          n = next == '?' ? 3 : 1;
          out.append(p_.substr(i, n));
          ++depth;
          t = Token::kOther;
          break;
        case ')':
          if (depth-- == 0) return Outside("an unbalanced ')'");
          out.push_back(c);
          t = Token::kClose;
          break;
        case '|':
        case '^':
          out.push_back(c);
          t = c == '|' ? Token::kBar : Token::kStart;
          break;
        case '$':
          if (depth != 0 || (i + 1 != p_.size() && next != '|')) {
            return Outside("'$' other than at the end of the pattern or of a top-level alternative");
          }
          out.append(kJavaEnd);
          end = true;
          t = Token::kEnd;
          break;
        default:  // a literal, ']' and '}' included (both syntaxes read them so)
          cr_ = cr_ || c == '\r';
          out.push_back(c);
      }
      if (plus == kPlus) {
        if (t != Token::kAscii && t != Token::kBar && t != Token::kEnd) return Outside(kPlusRule);
        plus = t == Token::kAscii ? kPlusAtom : kNoPlus;
      }
      if (t == Token::kPlus) plus = kPlus;
      quantifiable = t == Token::kAscii || t == Token::kClose;
      solid = t == Token::kAscii || t == Token::kStart || t == Token::kBar;
      i += n;
    }
    if (depth != 0) return Outside("an unbalanced '('");
    if (dot && !dot_all) return Outside("'.' without DOTALL");
    if (end && cr_) return Outside("'$' in a pattern that matches '\\r' other than through .* or .+");
    return out;
  }

 private:
  // What a token is, for the rules on .+ and quantifiers.
  enum class Token {
    kAscii,  // a literal, an escape, a class: one ASCII character
    kStart,  // ^ or \A
    kBar,    // |
    kEnd,    // $
    kPlus,   // .+
    kClose,  // )
    kOther,  // (, .*, \z
  };
  // .+ stands for one character or more, RE2's for one byte or more. They agree on a run between
  // two places that are characters' edges on both sides, but not on, say, (?:.+){2} over one
  // two-byte character.
  static constexpr char kPlusRule[] =
      "'.+' inside a group, or next to something other than a character or class that must match, '^', '$', '|' "
      "or an end";

  static absl::Status Outside(std::string_view what) { return absl::InvalidArgumentError(AV(what)); }

  // The length of the quantifier at p_[i] (a lazy '?' included); *optional when it allows none.
  absl::StatusOr<size_t> Quantifier(size_t i, bool* optional) {
    size_t last = i;
    *optional = p_[i] == '*' || p_[i] == '?';
    if (p_[i] == '{') {
      last = p_.find('}', i);
      if (last == std::string_view::npos || !IsRepetition(p_.substr(i + 1, last - i - 1))) {
        return Outside("a '{' that is not {n}, {n,} or {n,m}");
      }
      *optional = p_[i + 1] == '0';
    }
    if (last + 1 < p_.size() && p_[last + 1] == '+') return Outside("a possessive quantifier");
    if (last + 1 < p_.size() && p_[last + 1] == '?') ++last;  // lazy
    return last - i + 1;
  }

  static bool IsRepetition(std::string_view s) {  // "n", "n," or "n,m"
    const size_t comma = s.find(',');
    auto digits = [](std::string_view d) {
      return !d.empty() && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (comma == std::string_view::npos) return digits(s);
    const std::string_view max = s.substr(comma + 1);
    return digits(s.substr(0, comma)) && (max.empty() || digits(max));
  }

  // One class item at p_[*i] (a character or an escape); advances *i past it. Its character, or
  // -1 for \d and \w.
  absl::StatusOr<int> ClassItem(size_t* i, std::string* out) {
    const char c = p_[*i];
    if (c == '[') return Outside("a nested class or [:...:]");
    if (c == '&' && *i + 1 < p_.size() && p_[*i + 1] == '&') return Outside("a class intersection &&");
    if (c != '\\') {
      out->push_back(c);
      ++*i;
      return static_cast<int>(static_cast<unsigned char>(c));
    }
    const int e = *i + 1 < p_.size() ? EscapedChar(p_[*i + 1]) : -2;
    if (e == -2) return Outside("an escape in a class other than punctuation, \\d \\w \\t \\n \\r \\f");
    out->append(p_.substr(*i, 2));
    *i += 2;
    return e;
  }

  // The class at p_[open] == '['; writes it, returns the index of its ']'.
  absl::StatusOr<size_t> Class(size_t open, std::string* out) {
    size_t i = open + 1;
    if (i < p_.size() && p_[i] == '^') return Outside("a negated class [^...]");
    if (i < p_.size() && p_[i] == ']') return Outside("a class that starts with ']'");
    out->push_back('[');
    while (i < p_.size() && p_[i] != ']') {
      if (p_[i] == '-' && i != open + 1 && i + 1 < p_.size() && p_[i + 1] != ']') {
        return Outside("a '-' in a class other than first, last or in a range");
      }
      BASALT_ASSIGN_OR_RETURN(const int lo, ClassItem(&i, out));
      int hi = lo;
      if (i + 1 < p_.size() && p_[i] == '-' && p_[i + 1] != ']') {  // a range
        out->push_back('-');
        ++i;
        BASALT_ASSIGN_OR_RETURN(hi, ClassItem(&i, out));
        if (lo < 0 || hi < 0) return Outside("a class range to or from \\d or \\w");
        if (hi < lo) return Outside("a class range that ends before it starts");
      }
      cr_ = cr_ || (lo <= '\r' && '\r' <= hi);
    }
    if (i >= p_.size()) return Outside("an unclosed class");
    out->push_back(']');
    return i;
  }

  const std::string_view p_;
  bool cr_ = false;  // an atom other than .* or .+ can match '\r'
};

// ------------------------------------------------------------------ comparators

rpc::Comparator MakeComparator(rpc::Comparator::Kind kind, std::string value) {
  rpc::Comparator c;
  c.set_kind(kind);
  c.set_value(std::move(value));
  return c;
}

template <typename M, rpc::Comparator::Kind kKind>
absl::StatusOr<rpc::Comparator> BytesComparatorOf(const Comparator& c) {
  BASALT_ASSIGN_OR_RETURN(M m, ParseAs<M>("comparator", c.name(), c.serialized_comparator()));
  return MakeComparator(kKind, m.comparable().value());
}

absl::StatusOr<rpc::Comparator> RegexComparatorOf(const Comparator& c) {
  BASALT_ASSIGN_OR_RETURN(RegexStringComparator m,
                          ParseAs<RegexStringComparator>("comparator", c.name(), c.serialized_comparator()));
  if (m.has_engine() && m.engine() != "JAVA") {
    return Unsupported("comparator", c.name(), absl::StrCat("with engine ", m.engine()));
  }
  // HBase decodes the value with this charset ("": UTF-8); the subset assumes UTF-8's.
  std::string charset = m.charset();
  std::transform(charset.begin(), charset.end(), charset.begin(),
                 [](char ch) { return static_cast<char>(std::toupper(static_cast<unsigned char>(ch))); });
  if (!charset.empty() && charset != "UTF-8" && charset != "UTF8") {
    return Unsupported("comparator", c.name(), absl::StrCat("with charset ", m.charset()));
  }
  if ((m.pattern_flags() & ~(kDotAll | kCaseInsensitive)) != 0) {
    return Unsupported("comparator", c.name(),
                       absl::StrCat("with pattern flags ", m.pattern_flags(), ", beyond DOTALL and CASE_INSENSITIVE,"));
  }
  absl::StatusOr<std::string> re2 =
      JavaRegex(m.pattern()).ToRe2((m.pattern_flags() & kCaseInsensitive) != 0, (m.pattern_flags() & kDotAll) != 0);
  if (!re2.ok()) return Unsupported("comparator", c.name(), absl::StrCat("whose pattern has ", re2.status().message()));
  return MakeComparator(rpc::Comparator::REGEX, *std::move(re2));
}

absl::StatusOr<rpc::Comparator> SubstringComparatorOf(const Comparator& c) {
  BASALT_ASSIGN_OR_RETURN(SubstringComparator m,
                          ParseAs<SubstringComparator>("comparator", c.name(), c.serialized_comparator()));
  std::string s = m.substr();
  if (!IsAscii(s)) return Unsupported("comparator", c.name(), "with a non-ASCII substring");
  std::transform(s.begin(), s.end(), s.begin(),
                 [](char ch) { return static_cast<char>(std::tolower(static_cast<unsigned char>(ch))); });
  if (s.find_first_of("ik") == std::string::npos) return MakeComparator(rpc::Comparator::SUBSTRING, std::move(s));
  std::string re;  // each letter in either case; 'k' also as U+212A; a final 'i' also as U+0130
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (ch == 'k') {
      re.append(R"((?:[kK]|\xE2\x84\xAA))");
    } else if (ch == 'i' && i + 1 == s.size()) {
      re.append(R"((?:[iI]|\xC4\xB0))");
    } else if (ch >= 'a' && ch <= 'z') {
      re.append({'[', ch, static_cast<char>(ch - 'a' + 'A'), ']'});
    } else {
      AppendLiteral(ch, &re);
    }
  }
  return MakeComparator(rpc::Comparator::REGEX, std::move(re));
}

struct ComparatorClass {
  std::string_view name;  // without kPackage
  absl::StatusOr<rpc::Comparator> (*convert)(const Comparator&);
};

constexpr ComparatorClass kComparators[] = {
    {"BinaryComparator", BytesComparatorOf<BinaryComparator, rpc::Comparator::BINARY>},
    {"BinaryPrefixComparator", BytesComparatorOf<BinaryPrefixComparator, rpc::Comparator::BINARY_PREFIX>},
    {"RegexStringComparator", RegexComparatorOf},
    {"SubstringComparator", SubstringComparatorOf},
};

// ------------------------------------------------------------------ filters

absl::StatusOr<rpc::Filter> Convert(const Filter& f, int depth);

// A compare filter's op and comparator on `out`, REGEX and SUBSTRING taking = and != only.
absl::Status SetComparison(const Filter& f, CompareType op, const Comparator& comparator, rpc::Filter* out) {
  absl::StatusOr<rpc::FilterOp> fop = FilterOpOf(op);
  if (!fop.ok()) return Invalid("filter", f.name(), fop.status().message());
  absl::StatusOr<rpc::Comparator> c = ComparatorOf(comparator);
  if (!c.ok()) return Invalid("filter", f.name(), c.status().message());
  if ((c->kind() == rpc::Comparator::REGEX || c->kind() == rpc::Comparator::SUBSTRING) &&
      *fop != rpc::FILTER_EQUAL && *fop != rpc::FILTER_NOT_EQUAL) {
    return Unsupported("filter", f.name(),
                       absl::StrCat("comparing by ", comparator.name(), " with ", CompareType_Name(op)));
  }
  out->set_op(*fop);
  *out->mutable_comparator() = *std::move(c);
  return absl::OkStatus();
}

rpc::Filter NewFilter(rpc::Filter::Kind kind) {
  rpc::Filter out;
  out.set_kind(kind);
  return out;
}

// RowFilter, QualifierFilter and ValueFilter: a CompareFilter each.
template <typename M, rpc::Filter::Kind kKind>
absl::StatusOr<rpc::Filter> CompareFilterOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(M m, ParseAs<M>("filter", f.name(), f.serialized_filter()));
  if (!m.compare_filter().has_comparator()) return Invalid("filter", f.name(), "it has no comparator");
  rpc::Filter out = NewFilter(kKind);
  BASALT_RETURN_IF_ERROR(SetComparison(f, m.compare_filter().compare_op(), m.compare_filter().comparator(), &out));
  return out;
}

absl::StatusOr<rpc::Filter> ListOf(const Filter& f, int depth) {
  BASALT_ASSIGN_OR_RETURN(FilterList m, ParseAs<FilterList>("filter", f.name(), f.serialized_filter()));
  if (depth > kMaxDepth) return Unsupported("filter", f.name(), absl::StrCat("nested deeper than ", kMaxDepth));
  rpc::Filter out = NewFilter(rpc::Filter::LIST);
  out.set_must_pass_all(m.operator_() == FilterList::MUST_PASS_ALL);
  for (const Filter& child : m.filters()) {
    BASALT_ASSIGN_OR_RETURN(*out.add_filters(), Convert(child, depth + 1));
  }
  return out;
}

absl::StatusOr<rpc::Filter> PrefixOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(PrefixFilter m, ParseAs<PrefixFilter>("filter", f.name(), f.serialized_filter()));
  if (!m.has_prefix()) return Unsupported("filter", f.name(), "without a prefix");
  rpc::Filter out = NewFilter(rpc::Filter::PREFIX);
  out.set_prefix(m.prefix());
  return out;
}

// Well-formed UTF-8 (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF), as a
// proto3 string field must be.
bool IsUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto byte = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
    const unsigned char c = byte(0);
    // The sequence's length and the range of its second byte (the others are 0x80..0xBF).
    size_t n = 1;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0x80) {
      if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
      } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
      } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
      } else {
        return false;
      }
      if (byte(1) < lo || byte(1) > hi) return false;
      for (size_t k = 2; k < n; ++k) {
        if ((byte(k) & 0xC0) != 0x80) return false;
      }
    }
    i += n;
  }
  return true;
}

absl::StatusOr<rpc::Filter> SingleColumnValueOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(SingleColumnValueFilter m,
                          ParseAs<SingleColumnValueFilter>("filter", f.name(), f.serialized_filter()));
  // HBase reads an absent family or qualifier as null, which matches only an empty one: as "".
  if (!IsUtf8(m.column_family())) return Unsupported("filter", f.name(), "with a column family that is not UTF-8");
  rpc::Filter out = NewFilter(rpc::Filter::SINGLE_COLUMN_VALUE);
  BASALT_RETURN_IF_ERROR(SetComparison(f, m.compare_op(), m.comparator(), &out));
  out.set_family(m.column_family());
  out.set_qualifier(m.column_qualifier());
  out.set_filter_if_missing(m.filter_if_missing());
  out.set_latest_version_only(m.latest_version_only());
  return out;
}

// HBase's ranges hold ordered, each non-empty (start < stop, or start = stop both inclusive). Of
// those, HBase 2.6 finds exactly the rows in a range (forward and reversed) when the ranges are
// apart (each stop below the next start) and only a lone range is unbounded above.
absl::StatusOr<rpc::Filter> MultiRowRangeOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(MultiRowRangeFilter m,
                          ParseAs<MultiRowRangeFilter>("filter", f.name(), f.serialized_filter()));
  if (m.row_range_list().empty()) return Invalid("filter", f.name(), "it has no row range");
  rpc::Filter out = NewFilter(rpc::Filter::MULTI_ROW_RANGE);
  std::vector<const RowRange*> sorted;
  for (const RowRange& r : m.row_range_list()) {
    const bool bounded = !r.start_row().empty() && !r.stop_row().empty();
    if (bounded && (r.start_row() > r.stop_row() || (r.start_row() == r.stop_row() && !r.stop_row_inclusive()))) {
      return Invalid("filter", f.name(), "a row range stops before it starts");
    }
    if (bounded && r.start_row() == r.stop_row() && !r.start_row_inclusive()) {
      return Unsupported("filter", f.name(), "with an empty row range");
    }
    rpc::RowRange* o = out.add_ranges();
    o->set_start(r.start_row());
    o->set_start_inclusive(r.start_row_inclusive());
    o->set_stop(r.stop_row());
    o->set_stop_inclusive(r.stop_row_inclusive());
    sorted.push_back(&r);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const RowRange* a, const RowRange* b) { return a->start_row() < b->start_row(); });
  bool apart = sorted.size() == 1 || !sorted.back()->stop_row().empty();
  for (size_t i = 0; i + 1 < sorted.size(); ++i) {
    apart = apart && !sorted[i]->stop_row().empty() && sorted[i]->stop_row() < sorted[i + 1]->start_row();
  }
  if (!apart) {
    return Unsupported("filter", f.name(), "with row ranges that overlap or touch, or several, one unbounded above");
  }
  return out;
}

absl::StatusOr<rpc::Filter> ColumnPrefixOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(ColumnPrefixFilter m, ParseAs<ColumnPrefixFilter>("filter", f.name(), f.serialized_filter()));
  rpc::Filter out = NewFilter(rpc::Filter::COLUMN_PREFIX);
  out.set_prefix(m.prefix());
  return out;
}

absl::StatusOr<rpc::Filter> MultipleColumnPrefixOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(MultipleColumnPrefixFilter m,
                          ParseAs<MultipleColumnPrefixFilter>("filter", f.name(), f.serialized_filter()));
  // HBase tests a qualifier against the greatest prefix not above it only.
  std::vector<std::string> prefixes(m.sorted_prefixes().begin(), m.sorted_prefixes().end());
  std::sort(prefixes.begin(), prefixes.end());
  prefixes.erase(std::unique(prefixes.begin(), prefixes.end()), prefixes.end());
  for (size_t i = 0; i + 1 < prefixes.size(); ++i) {
    if (prefixes[i + 1].starts_with(prefixes[i])) {
      return Unsupported("filter", f.name(), "with a prefix that begins another");
    }
  }
  rpc::Filter out = NewFilter(rpc::Filter::LIST);
  out.set_must_pass_all(false);
  for (std::string& p : prefixes) {
    rpc::Filter* c = out.add_filters();
    c->set_kind(rpc::Filter::COLUMN_PREFIX);
    c->set_prefix(std::move(p));
  }
  return out;
}

absl::StatusOr<rpc::Filter> ColumnRangeOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(ColumnRangeFilter m, ParseAs<ColumnRangeFilter>("filter", f.name(), f.serialized_filter()));
  // HBase reads a present "" as a bound: "" inclusive below bounds nothing, the others would.
  if ((m.has_min_column() && m.min_column().empty() && !m.min_column_inclusive()) ||
      (m.has_max_column() && m.max_column().empty())) {
    return Unsupported("filter", f.name(), "with an empty maximum or an empty exclusive minimum");
  }
  rpc::Filter out = NewFilter(rpc::Filter::COLUMN_RANGE);
  out.set_min_column(m.min_column());
  out.set_min_inclusive(m.min_column_inclusive());
  out.set_max_column(m.max_column());
  out.set_max_inclusive(m.max_column_inclusive());
  return out;
}

absl::StatusOr<rpc::Filter> ColumnPaginationOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(ColumnPaginationFilter m,
                          ParseAs<ColumnPaginationFilter>("filter", f.name(), f.serialized_filter()));
  if (m.has_column_offset()) return Unsupported("filter", f.name(), "with a column_offset");
  if (m.limit() < 0 || m.offset() < 0) {
    return Invalid("filter", f.name(),
                   absl::StrCat("limit ", m.limit(), " and offset ", m.offset(), " must not be negative"));
  }
  rpc::Filter out = NewFilter(rpc::Filter::COLUMN_PAGINATION);
  // HBase ends each row once its count of columns reaches offset + limit, a Java int that wraps.
  if (int64_t{m.limit()} + m.offset() <= INT32_MAX) {
    out.set_limit(m.limit());
    out.set_offset(m.offset());
  }
  return out;
}

absl::StatusOr<rpc::Filter> TimestampsOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(TimestampsFilter m, ParseAs<TimestampsFilter>("filter", f.name(), f.serialized_filter()));
  rpc::Filter out = NewFilter(rpc::Filter::TIMESTAMPS);
  for (int64_t ts : m.timestamps()) {
    if (ts < 0) return Invalid("filter", f.name(), absl::StrCat("timestamp ", ts, " must not be negative"));
    out.add_timestamps(ts);
  }
  return out;
}

absl::StatusOr<rpc::Filter> KeyOnlyOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(KeyOnlyFilter m, ParseAs<KeyOnlyFilter>("filter", f.name(), f.serialized_filter()));
  rpc::Filter out = NewFilter(rpc::Filter::KEY_ONLY);
  out.set_len_as_value(m.len_as_val());
  return out;
}

absl::StatusOr<rpc::Filter> FirstKeyOnlyOf(const Filter& f, int) {
  BASALT_RETURN_IF_ERROR(ParseAs<FirstKeyOnlyFilter>("filter", f.name(), f.serialized_filter()).status());
  return NewFilter(rpc::Filter::FIRST_KEY_ONLY);
}

absl::StatusOr<rpc::Filter> PageOf(const Filter& f, int) {
  BASALT_ASSIGN_OR_RETURN(PageFilter m, ParseAs<PageFilter>("filter", f.name(), f.serialized_filter()));
  if (m.page_size() < 0) {
    return Invalid("filter", f.name(), absl::StrCat("page size ", m.page_size(), " must not be negative"));
  }
  rpc::Filter out = NewFilter(rpc::Filter::PAGE);
  out.set_limit(m.page_size());
  return out;
}

struct FilterClass {
  std::string_view name;  // without kPackage
  absl::StatusOr<rpc::Filter> (*convert)(const Filter&, int depth);
};

constexpr FilterClass kFilters[] = {
    {"FilterList", ListOf},
    {"PrefixFilter", PrefixOf},
    {"RowFilter", CompareFilterOf<RowFilter, rpc::Filter::ROW>},
    {"QualifierFilter", CompareFilterOf<QualifierFilter, rpc::Filter::QUALIFIER>},
    {"ValueFilter", CompareFilterOf<ValueFilter, rpc::Filter::VALUE>},
    {"SingleColumnValueFilter", SingleColumnValueOf},
    {"MultiRowRangeFilter", MultiRowRangeOf},
    {"ColumnPrefixFilter", ColumnPrefixOf},
    {"MultipleColumnPrefixFilter", MultipleColumnPrefixOf},
    {"ColumnRangeFilter", ColumnRangeOf},
    {"ColumnPaginationFilter", ColumnPaginationOf},
    {"TimestampsFilter", TimestampsOf},
    {"KeyOnlyFilter", KeyOnlyOf},
    {"FirstKeyOnlyFilter", FirstKeyOnlyOf},
    {"PageFilter", PageOf},
};

// The entry for HBase's class `name`, or null.
template <typename Entry, size_t N>
const Entry* Find(const Entry (&table)[N], std::string_view name) {
  if (!name.starts_with(kPackage)) return nullptr;
  name.remove_prefix(kPackage.size());
  for (const Entry& e : table) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

absl::StatusOr<rpc::Filter> Convert(const Filter& f, int depth) {
  const FilterClass* c = Find(kFilters, f.name());
  if (c == nullptr) return Unsupported("filter", f.name());
  return c->convert(f, depth);
}

absl::Status NoSuchOp(CompareType t) {
  return absl::InvalidArgumentError(absl::StrCat(
      "compare op ", CompareType_IsValid(t) ? CompareType_Name(t) : absl::StrCat(static_cast<int>(t)),
      " is not supported by Basalt's HBase port"));
}

}  // namespace

absl::StatusOr<rpc::FilterOp> FilterOpOf(CompareType t) {
  switch (t) {
    case LESS: return rpc::FILTER_LESS;
    case LESS_OR_EQUAL: return rpc::FILTER_LESS_OR_EQUAL;
    case EQUAL: return rpc::FILTER_EQUAL;
    case NOT_EQUAL: return rpc::FILTER_NOT_EQUAL;
    case GREATER_OR_EQUAL: return rpc::FILTER_GREATER_OR_EQUAL;
    case GREATER: return rpc::FILTER_GREATER;
    default: return NoSuchOp(t);
  }
}

absl::StatusOr<rpc::CompareOp> CheckOpOf(CompareType t) {
  switch (t) {
    case LESS: return rpc::LESS;
    case LESS_OR_EQUAL: return rpc::LESS_OR_EQUAL;
    case EQUAL: return rpc::EQUAL;
    case NOT_EQUAL: return rpc::NOT_EQUAL;
    case GREATER_OR_EQUAL: return rpc::GREATER_OR_EQUAL;
    case GREATER: return rpc::GREATER;
    default: return NoSuchOp(t);
  }
}

absl::StatusOr<rpc::Filter> FilterOf(const Filter& filter) { return Convert(filter, 0); }

absl::StatusOr<rpc::Comparator> ComparatorOf(const Comparator& c) {
  const ComparatorClass* k = Find(kComparators, c.name());
  if (k == nullptr) return Unsupported("comparator", c.name());
  return k->convert(c);
}

}  // namespace basalt::hbase
