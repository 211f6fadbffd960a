// Parser of HBase shell commands: `name arg, arg, ...` (or `name(arg, ...)`), several per line
// separated by ';' or newlines. Arguments are strings, integers, true/false/nil, bare names
// (HBase's constants such as NAME or VERSIONS, used as hash keys), arrays `[...]` and hashes
// `{KEY => value, ...}`; as in Ruby, a hash that ends the argument list may omit its braces
// (`create 't1', NAME => 'cf', VERSIONS => 3`). A command continues on the next line after
// ',', '=>', or an open bracket. Stateless functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt::shell {

struct Value {
  enum class Kind { kString, kInt, kBool, kNil, kName, kArray, kHash };
  struct Entry;  // a hash's key => value (below: a pair would need Value complete here)

  Kind kind = Kind::kNil;
  std::string str;            // kString: the bytes; kName: the name
  int64_t number = 0;         // kInt
  bool boolean = false;       // kBool
  std::vector<Value> items;   // kArray
  std::vector<Entry> entries;  // kHash, in source order
  int line = 1;
  int column = 1;

  bool is_string() const { return kind == Kind::kString; }
  bool is_int() const { return kind == Kind::kInt; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_hash() const { return kind == Kind::kHash; }
  // kHash: the value under a key written as NAME, 'NAME' or "NAME"; nullptr if absent.
  const Value* Find(std::string_view key) const;
  // A short description for messages: "a string", "an integer", "the name r1", "a hash", ...
  std::string Describe() const;
  // Source-like rendering: 'text' (binary bytes as \xNN), 42, true, [..], {K => v}.
  std::string ToString() const;
};

struct Value::Entry {
  Value first;   // the key
  Value second;  // the value
};

struct Command {
  std::string name;
  std::vector<Value> args;
  int line = 1;
  int column = 1;
  std::string source;  // the command's text as written (for messages)
};

// Parses a whole script. Errors: InvalidArgument "line L, column C: expected X, found Y" (only
// "column C" for single-line input); OutOfRange when the input ends in the middle of a command
// (an open string, bracket or paren, or a trailing ',' or '=>'), so an interactive caller can
// read another line and parse again.
absl::StatusOr<std::vector<Command>> Parse(std::string_view source);

}  // namespace basalt::shell
