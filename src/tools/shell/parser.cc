#include "src/tools/shell/parser.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/tools/shell/escape.h"
#include "src/tools/shell/lexer.h"

namespace basalt::shell {

const Value* Value::Find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if ((k.kind == Kind::kName || k.kind == Kind::kString) && k.str == key) return &v;
  }
  return nullptr;
}

std::string Value::Describe() const {
  switch (kind) {
    case Kind::kString: return absl::StrCat("the string ", ToString());
    case Kind::kInt: return absl::StrCat("the integer ", number);
    case Kind::kBool: return boolean ? "true" : "false";
    case Kind::kNil: return "nil";
    case Kind::kName: return absl::StrCat("the name ", str);
    case Kind::kArray: return "an array";
    case Kind::kHash: return "a hash";
  }
  return "?";
}

std::string Value::ToString() const {
  switch (kind) {
    case Kind::kString: return absl::StrCat("'", ToStringBinary(str), "'");
    case Kind::kInt: return absl::StrCat(number);
    case Kind::kBool: return boolean ? "true" : "false";
    case Kind::kNil: return "nil";
    case Kind::kName: return str;
    case Kind::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < items.size(); ++i) absl::StrAppend(&out, i ? ", " : "", items[i].ToString());
      return out + "]";
    }
    case Kind::kHash: {
      std::string out = "{";
      for (size_t i = 0; i < entries.size(); ++i) {
        absl::StrAppend(&out, i ? ", " : "", entries[i].first.ToString(), " => ", entries[i].second.ToString());
      }
      return out + "}";
    }
  }
  return "?";
}

namespace {

class Parser {
 public:
  Parser(std::string_view source, std::vector<Token> tokens)
      : source_(source), tokens_(std::move(tokens)), multiline_(IsMultiline(source)) {
    // Byte offset of each line's start, to cut a command's source text out.
    line_starts_.push_back(0);
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  absl::StatusOr<std::vector<Command>> Run() {
    std::vector<Command> commands;
    while (true) {
      while (At(TokenKind::kSemicolon) || At(TokenKind::kNewline)) Next();
      if (At(TokenKind::kEnd)) return commands;
      BASALT_ASSIGN_OR_RETURN(Command c, ParseCommand());
      commands.push_back(std::move(c));
    }
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  bool At(TokenKind k) const { return Peek().kind == k; }
  const Token& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  void SkipNewlines() {
    while (At(TokenKind::kNewline)) Next();
  }

  static std::string Found(const Token& t) {
    switch (t.kind) {
      case TokenKind::kIdent: return absl::StrCat("'", t.text, "'");
      case TokenKind::kString: return absl::StrCat("the string '", ToStringBinary(t.text), "'");
      case TokenKind::kInt: return absl::StrCat("the integer ", t.text);
      default: return std::string(TokenKindName(t.kind));
    }
  }

  // "expected X, found Y" at the current token; OutOfRange if the input simply ended.
  absl::Status Expected(std::string_view what) const {
    const Token& t = Peek();
    std::string msg = absl::StrCat(Position(t.line, t.column, multiline_), ": expected ", AV(what), ", found ", Found(t));
    if (t.kind == TokenKind::kEnd) return absl::OutOfRangeError(msg);
    return absl::InvalidArgumentError(msg);
  }

  size_t Offset(const Token& t) const {
    size_t line = static_cast<size_t>(t.line - 1);
    return line < line_starts_.size() ? line_starts_[line] + t.column - 1 : source_.size();
  }

  absl::StatusOr<Command> ParseCommand() {
    if (!At(TokenKind::kIdent)) return Expected("a command name");
    const Token& name = Next();
    Command cmd;
    cmd.name = name.text;
    cmd.line = name.line;
    cmd.column = name.column;
    size_t begin = Offset(name);
    if (At(TokenKind::kLParen)) {
      Next();
      SkipNewlines();
      if (!At(TokenKind::kRParen)) {
        BASALT_RETURN_IF_ERROR(ParseArgs(&cmd.args, /*in_parens=*/true));
        SkipNewlines();
      }
      if (!At(TokenKind::kRParen)) return Expected("',' or ')'");
      Next();
    } else if (!AtCommandEnd()) {
      BASALT_RETURN_IF_ERROR(ParseArgs(&cmd.args, /*in_parens=*/false));
    }
    if (!AtCommandEnd()) return Expected("',' or the end of the command (';' or a new line)");
    size_t end = Offset(Peek());
    if (end > source_.size()) end = source_.size();
    std::string_view text = source_.substr(begin, end > begin ? end - begin : 0);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
    cmd.source = std::string(text);
    return cmd;
  }

  bool AtCommandEnd() const {
    return At(TokenKind::kSemicolon) || At(TokenKind::kNewline) || At(TokenKind::kEnd);
  }

  // arg {, arg}; an argument followed by '=>' starts a brace-less hash that takes the rest.
  absl::Status ParseArgs(std::vector<Value>* args, bool in_parens) {
    while (true) {
      if (in_parens) SkipNewlines();
      BASALT_ASSIGN_OR_RETURN(Value v, ParseValue());
      if (At(TokenKind::kArrow)) {
        Value hash;
        hash.kind = Value::Kind::kHash;
        hash.line = v.line;
        hash.column = v.column;
        BASALT_RETURN_IF_ERROR(ParsePairsAfterKey(std::move(v), &hash, in_parens));
        args->push_back(std::move(hash));
        return absl::OkStatus();
      }
      args->push_back(std::move(v));
      if (in_parens) SkipNewlines();
      if (!At(TokenKind::kComma)) return absl::OkStatus();
      Next();
      SkipNewlines();
    }
  }

  // Having read `key` (the current token is '=>'), reads `=> value {, key => value}`.
  absl::Status ParsePairsAfterKey(Value key, Value* hash, bool allow_newlines) {
    while (true) {
      if (!At(TokenKind::kArrow)) return Expected("'=>'");
      Next();
      SkipNewlines();
      BASALT_ASSIGN_OR_RETURN(Value value, ParseValue());
      hash->entries.push_back({std::move(key), std::move(value)});
      if (allow_newlines) SkipNewlines();
      if (!At(TokenKind::kComma)) return absl::OkStatus();
      Next();
      SkipNewlines();
      if (allow_newlines && (At(TokenKind::kRBrace) || At(TokenKind::kRParen))) return absl::OkStatus();
      BASALT_ASSIGN_OR_RETURN(key, ParseValue());
    }
  }

  absl::StatusOr<Value> ParseValue() {
    const Token& t = Peek();
    Value v;
    v.line = t.line;
    v.column = t.column;
    switch (t.kind) {
      case TokenKind::kString:
        v.kind = Value::Kind::kString;
        v.str = t.text;
        Next();
        return v;
      case TokenKind::kInt:
        v.kind = Value::Kind::kInt;
        v.number = t.number;
        Next();
        return v;
      case TokenKind::kIdent:
        if (t.text == "true" || t.text == "false") {
          v.kind = Value::Kind::kBool;
          v.boolean = t.text == "true";
        } else if (t.text == "nil") {
          v.kind = Value::Kind::kNil;
        } else {
          v.kind = Value::Kind::kName;
          v.str = t.text;
        }
        Next();
        return v;
      case TokenKind::kLBracket: {
        Next();
        v.kind = Value::Kind::kArray;
        SkipNewlines();
        while (!At(TokenKind::kRBracket)) {
          BASALT_ASSIGN_OR_RETURN(Value item, ParseValue());
          v.items.push_back(std::move(item));
          SkipNewlines();
          if (At(TokenKind::kComma)) {
            Next();
            SkipNewlines();
          } else if (!At(TokenKind::kRBracket)) {
            return Expected("',' or ']'");
          }
        }
        Next();
        return v;
      }
      case TokenKind::kLBrace: {
        Next();
        v.kind = Value::Kind::kHash;
        SkipNewlines();
        if (!At(TokenKind::kRBrace)) {
          BASALT_ASSIGN_OR_RETURN(Value key, ParseValue());
          BASALT_RETURN_IF_ERROR(ParsePairsAfterKey(std::move(key), &v, /*allow_newlines=*/true));
          if (!At(TokenKind::kRBrace)) return Expected("',' or '}'");
        }
        Next();
        return v;
      }
      default:
        return Expected("a value (a string, an integer, [array] or {hash})");
    }
  }

  std::string_view source_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  const bool multiline_;
  std::vector<size_t> line_starts_;
};

}  // namespace

absl::StatusOr<std::vector<Command>> Parse(std::string_view source) {
  BASALT_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  return Parser(source, std::move(tokens)).Run();
}

}  // namespace basalt::shell
