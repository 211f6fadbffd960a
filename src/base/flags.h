// One parser of settings for every program (basalt-server, basalt-master, the shell): a table of
// flags, each a key, its default's text, its help and a setter, filled from a command line of
// --key=value and, where the program takes one, a config file of `key = value` lines (`#` starts
// a comment) under the flags. It also writes --help and says what is in force for /conf.
//
//   FlagSet flags("basalt-master", {});
//   flags.Add("balancer_period_ms", "300000", "the balancer runs this often", [&](std::string_view v) {
//     BASALT_ASSIGN_OR_RETURN(config.balancer_period_ms, ParseInt("balancer_period_ms", v, 0, kDay));
//     return absl::OkStatus();
//   });
//   BASALT_RETURN_IF_ERROR(flags.Parse(args));
//
// A key is written with underscores (the server's and master's) or dashes (the shell's); on the
// command line either spelling finds it. Parsing reads no file but the config file, so it is
// unit-tested without a process.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace basalt::server {

struct Flag {
  std::string key;
  std::string default_text;  // shown by --help and /conf; "" is "unset"
  std::string help;
  // Applies the value's text. An error says what was wrong (BadValue); the parser adds where.
  std::function<absl::Status(std::string_view value)> set;
  // Given alone (--key), the flag means this value ("true": a switch); empty: it needs a value.
  std::string bare_value;
  char short_name = 0;  // also -x VALUE (a program with separate values)
};

// A setting in force, for /conf: its text as given, or its default's; a secret's value masked.
struct SettingInForce {
  std::string key;
  std::string value;
  bool given = false;  // set by the file or a flag (else: the default)
};

class FlagSet {
 public:
  struct Syntax {
    bool config_file = true;        // --config=FILE: its lines first, the flags over them
    bool separate_values = false;   // --key VALUE as well as --key=VALUE
    bool positional = false;        // arguments not starting with '-' are kept (positional())
  };
  FlagSet(std::string program, Syntax syntax) : program_(std::move(program)), syntax_(syntax) {}

  void Add(Flag flag) { flags_.push_back(std::move(flag)); }
  void Add(std::string key, std::string default_text, std::string help,
           std::function<absl::Status(std::string_view value)> set, std::string bare_value = "", char short_name = 0) {
    flags_.push_back(Flag{std::move(key), std::move(default_text), std::move(help), std::move(set),
                          std::move(bare_value), short_name});
  }
  // Gives a flag added from another program's table this program's default text and help (the
  // master's listen is another port). False when there is no such flag.
  bool Reword(std::string_view key, std::string default_text, std::string help);

  // Parses a command line (without argv[0]). InvalidArgument naming the flag (or the file and
  // line) for an unknown key, a bad value or a malformed argument; NotFound when the config file
  // cannot be read. After --help nothing else is checked (help() says it was given).
  absl::Status Parse(const std::vector<std::string>& args);
  // A config file's text (`path` only names it in errors), applied over what is set.
  absl::Status ApplyConfigText(std::string_view text, const std::string& path);
  // Sets one key from its text, and records it as given. InvalidArgument for an unknown key or a
  // bad value.
  absl::Status Set(std::string_view key, std::string_view value);

  bool help() const { return help_; }
  const std::vector<std::string>& positional() const { return positional_; }
  bool Given(std::string_view key) const { return given_.contains(std::string(key)); }
  // Every key set (by the file or a flag), with its text as given.
  const std::map<std::string, std::string>& given() const { return given_; }
  // Every flag, in the table's order, with its text in force (secrets masked).
  std::vector<SettingInForce> InForce() const;
  // `usage` (the usage line and what the program is), then every flag with its default.
  std::string Help(std::string_view usage) const;

 private:
  const Flag* Find(std::string_view key) const;

  std::string program_;
  Syntax syntax_;
  std::vector<Flag> flags_;
  std::map<std::string, std::string> given_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// The lines of a config file ('key = value', '#' comments, blank lines), each handed to `set`.
// InvalidArgument naming the file and line for a malformed line or the error `set` returns.
absl::Status ForEachConfigLine(std::string_view text, const std::string& path,
                               const std::function<absl::Status(std::string_view key, std::string_view value)>& set);

// A key whose value is not shown (password, secret, token, keyring, ..._key), as HBase's /conf
// masks its password properties.
bool IsSecretSetting(std::string_view key);

// The value parsers the programs' tables share. Each error is BadValue's.
absl::Status BadValue(std::string_view key, std::string_view value, absl::string_view why);
// OK when `value` is HOST:PORT (SplitHostPort); else BadValue naming the key.
absl::Status CheckHostPort(std::string_view key, std::string_view value);
// A byte size: a plain number, or with a suffix K/KiB, M/MiB, G/GiB (powers of 1024).
absl::StatusOr<uint64_t> ParseBytes(std::string_view key, std::string_view value);
absl::StatusOr<int64_t> ParseInt(std::string_view key, std::string_view value, int64_t min, int64_t max);
absl::StatusOr<double> ParseDouble(std::string_view key, std::string_view value, double min, double max);
absl::StatusOr<bool> ParseBool(std::string_view key, std::string_view value);
// Comma-separated users and @groups (superusers, metrics_users).
absl::Status ParsePrincipals(std::string_view key, std::string_view value, std::vector<std::string>* out);
// One of a fixed set of spellings (case-insensitive), each naming a value; else BadValue saying
// what was `expected`.
template <typename T>
absl::StatusOr<T> ParseChoice(std::string_view key, std::string_view value,
                              std::initializer_list<std::pair<std::string_view, T>> choices, std::string_view expected) {
  std::string lower(value);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (const auto& [name, v] : choices) {
    if (lower == name) return v;
  }
  return BadValue(key, value, absl::string_view(expected.data(), expected.size()));
}

// Splits "HOST:PORT" ("[::1]:PORT" for IPv6). InvalidArgument when malformed.
absl::Status SplitHostPort(std::string_view listen, std::string* host, int* port);

}  // namespace basalt::server
