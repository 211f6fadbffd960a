// Tokens of the shell's language: the subset of Ruby that HBase shell commands are written in
// (`put 't1', "r\x001", 'cf:q', 'v'`, `{NAME => 'cf', VERSIONS => 3}`, `['cf:a', 'cf:b']`).
// Stateless functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt::shell {

enum class TokenKind {
  kIdent,      // name, NAME, true, false, nil, exists? (Ruby method names may end in ? or !)
  kString,     // 'single' or "double" quoted; text holds the decoded bytes
  kInt,        // decimal integer, optional sign and _ separators; number holds the value
  kComma,      // ,
  kSemicolon,  // ;
  kNewline,    // end of a line (a command separator unless the command is visibly unfinished)
  kArrow,      // =>
  kLBrace,     // {
  kRBrace,     // }
  kLBracket,   // [
  kRBracket,   // ]
  kLParen,     // (
  kRParen,     // )
  kEnd,        // end of input
};

// Human name of a token kind for error messages ("','", "a string", "end of input").
std::string_view TokenKindName(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;    // identifier name, decoded string bytes, or the source of the token
  int64_t number = 0;  // kInt only
  int line = 1;        // 1-based position of the token's first character
  int column = 1;
};

// Splits `source` into tokens ending with kEnd. `#` starts a comment to the end of the line.
//
// Strings: 'single' quotes are literal except \\ and \'. "Double" quotes understand \n \t \r
// \0 \a \b \e \f \v \s \\ \" \' \xN(N) \NNN (octal) \uXXXX \u{X...}; any other escaped
// character stands for itself (as Ruby). Either kind may span lines.
//
// Errors: InvalidArgument naming line and column ("line 1, column 9: ..."), or OutOfRange
// when the input ends inside a string (the caller may read another line and try again).
absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source);

// "line L, column C" for messages; only "column C" when the input is a single line.
std::string Position(int line, int column, bool multiline);
// Whether positions in `source` are reported with their line (it has more than one line).
bool IsMultiline(std::string_view source);

}  // namespace basalt::shell
