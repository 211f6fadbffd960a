#include "src/tools/shell/lexer.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt::shell {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src), multiline_(IsMultiline(src)) {}

  absl::StatusOr<std::vector<Token>> Run() {
    std::vector<Token> tokens;
    while (true) {
      SkipBlanksAndComments();
      Token t;
      t.line = line_;
      t.column = column_;
      if (AtEnd()) {
        t.kind = TokenKind::kEnd;
        tokens.push_back(std::move(t));
        return tokens;
      }
      char c = Peek();
      if (c == '\n') {
        Advance();
        t.kind = TokenKind::kNewline;
        t.text = "\\n";
      } else if (c == '\'' || c == '"') {
        BASALT_RETURN_IF_ERROR(LexString(&t));
      } else if (IsDigit(c) || ((c == '-' || c == '+') && IsDigit(PeekAt(1)))) {
        BASALT_RETURN_IF_ERROR(LexInt(&t));
      } else if (IsIdentStart(c)) {
        size_t start = pos_;
        while (!AtEnd() && IsIdentChar(Peek())) Advance();
        if (!AtEnd() && (Peek() == '?' || Peek() == '!')) Advance();
        t.kind = TokenKind::kIdent;
        t.text = std::string(src_.substr(start, pos_ - start));
      } else if (c == '=' && PeekAt(1) == '>') {
        Advance();
        Advance();
        t.kind = TokenKind::kArrow;
        t.text = "=>";
      } else {
        switch (c) {
          case ',': t.kind = TokenKind::kComma; break;
          case ';': t.kind = TokenKind::kSemicolon; break;
          case '{': t.kind = TokenKind::kLBrace; break;
          case '}': t.kind = TokenKind::kRBrace; break;
          case '[': t.kind = TokenKind::kLBracket; break;
          case ']': t.kind = TokenKind::kRBracket; break;
          case '(': t.kind = TokenKind::kLParen; break;
          case ')': t.kind = TokenKind::kRParen; break;
          default:
            return Error(line_, column_, absl::StrCat("unexpected character ", Describe(c)));
        }
        t.text = std::string(1, c);
        Advance();
      }
      tokens.push_back(std::move(t));
    }
  }

 private:
  bool AtEnd() const { return pos_ >= src_.size(); }
  char Peek() const { return src_[pos_]; }
  char PeekAt(size_t k) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  char Advance() {
    char c = src_[pos_++];
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    return c;
  }

  static std::string Describe(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u <= 0x7E) return absl::StrCat("'", std::string(1, c), "'");
    static const char kHex[] = "0123456789ABCDEF";
    return absl::StrCat("\\x", std::string(1, kHex[u >> 4]), std::string(1, kHex[u & 15]));
  }

  absl::Status Error(int line, int column, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(Position(line, column, multiline_), ": ", AV(what)));
  }

  void SkipBlanksAndComments() {
    while (!AtEnd()) {
      char c = Peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        Advance();
      } else if (c == '\\' && PeekAt(1) == '\n') {  // explicit line continuation
        Advance();
        Advance();
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n') Advance();
      } else {
        return;
      }
    }
  }

  absl::Status LexInt(Token* t) {
    size_t start = pos_;
    bool negative = false;
    if (Peek() == '-' || Peek() == '+') negative = Advance() == '-';
    // Accumulate as a negative number so that INT64_MIN fits.
    int64_t value = 0;
    bool overflow = false;
    while (!AtEnd() && (IsDigit(Peek()) || (Peek() == '_' && IsDigit(PeekAt(1))))) {
      char c = Advance();
      if (c == '_') continue;
      int d = c - '0';
      if (value < (std::numeric_limits<int64_t>::min() + d) / 10) overflow = true;
      if (!overflow) value = value * 10 - d;
    }
    if (!AtEnd() && (Peek() == '.' && IsDigit(PeekAt(1)))) {
      return Error(t->line, t->column, "floating-point numbers are not supported; expected an integer");
    }
    if (!AtEnd() && IsIdentChar(Peek())) {
      return Error(line_, column_, absl::StrCat("unexpected character ", Describe(Peek()), " in a number"));
    }
    if (!negative && value == std::numeric_limits<int64_t>::min()) overflow = true;
    if (overflow) {
      return Error(t->line, t->column,
                   absl::StrCat("integer ", AV(src_.substr(start, pos_ - start)), " does not fit in 64 bits"));
    }
    t->kind = TokenKind::kInt;
    t->number = negative ? value : -value;
    t->text = std::string(src_.substr(start, pos_ - start));
    return absl::OkStatus();
  }

  absl::Status LexString(Token* t) {
    const char quote = Advance();
    t->kind = TokenKind::kString;
    std::string out;
    while (true) {
      if (AtEnd()) {
        return absl::OutOfRangeError(absl::StrCat(Position(t->line, t->column, multiline_),
                                                  ": unterminated string (missing closing ", std::string(1, quote),
                                                  ")"));
      }
      int esc_line = line_, esc_column = column_;
      char c = Advance();
      if (c == quote) break;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (AtEnd()) continue;  // reported as unterminated on the next turn
      char e = Advance();
      if (quote == '\'') {
        if (e != '\\' && e != '\'') out.push_back('\\');
        out.push_back(e);
        continue;
      }
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'e': out.push_back('\x1b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case 's': out.push_back(' '); break;
        case '\n': break;  // backslash-newline: the line continues
        case 'x': {
          int v = AtEnd() ? -1 : HexValue(Peek());
          if (v < 0) return Error(esc_line, esc_column, "invalid escape \\x: expected one or two hex digits");
          Advance();
          if (!AtEnd() && HexValue(Peek()) >= 0) v = v * 16 + HexValue(Advance());
          out.push_back(static_cast<char>(v));
          break;
        }
        case 'u': {
          uint32_t cp = 0;
          if (!AtEnd() && Peek() == '{') {
            Advance();
            int digits = 0;
            while (!AtEnd() && HexValue(Peek()) >= 0 && digits < 6) {
              cp = cp * 16 + HexValue(Advance());
              ++digits;
            }
            if (digits == 0 || AtEnd() || Peek() != '}') {
              return Error(esc_line, esc_column, "invalid escape \\u{...}: expected 1 to 6 hex digits and '}'");
            }
            Advance();
          } else {
            for (int i = 0; i < 4; ++i) {
              if (AtEnd() || HexValue(Peek()) < 0) {
                return Error(esc_line, esc_column, "invalid escape \\u: expected four hex digits");
              }
              cp = cp * 16 + HexValue(Advance());
            }
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return Error(esc_line, esc_column, "invalid escape \\u: not a Unicode code point");
          }
          AppendUtf8(cp, &out);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0';
            for (int i = 0; i < 2 && !AtEnd() && Peek() >= '0' && Peek() <= '7'; ++i) v = v * 8 + (Advance() - '0');
            out.push_back(static_cast<char>(v & 0xFF));
          } else {
            out.push_back(e);  // \\ \" \' \# and anything else: the character itself
          }
      }
    }
    t->text = std::move(out);
    return absl::OkStatus();
  }

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  const bool multiline_;
};

}  // namespace

std::string_view TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kIdent: return "a name";
    case TokenKind::kString: return "a string";
    case TokenKind::kInt: return "an integer";
    case TokenKind::kComma: return "','";
    case TokenKind::kSemicolon: return "';'";
    case TokenKind::kNewline: return "end of line";
    case TokenKind::kArrow: return "'=>'";
    case TokenKind::kLBrace: return "'{'";
    case TokenKind::kRBrace: return "'}'";
    case TokenKind::kLBracket: return "'['";
    case TokenKind::kRBracket: return "']'";
    case TokenKind::kLParen: return "'('";
    case TokenKind::kRParen: return "')'";
    case TokenKind::kEnd: return "end of input";
  }
  return "?";
}

std::string Position(int line, int column, bool multiline) {
  if (multiline) return absl::StrCat("line ", line, ", column ", column);
  return absl::StrCat("column ", column);
}

bool IsMultiline(std::string_view source) {
  size_t nl = source.find('\n');
  return nl != std::string_view::npos && nl + 1 < source.size();
}

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source) { return Lexer(source).Run(); }

}  // namespace basalt::shell
