// A shell session: feeds script text or input lines to the parser and runs the commands, with
// HBase shell's error policy. Scripts (-e, a file, piped stdin) stop at the first error, which
// goes to stderr, and the shell exits 1; interactively the error is printed and the shell goes
// on. `exit` / `quit` end the session (`exit 3`: exit code 3). One thread.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "basalt/client.h"
#include "src/tools/shell/commands.h"
#include "src/tools/shell/format.h"

namespace basalt::shell {

struct SessionOptions {
  OutputFormat format = OutputFormat::kHuman;
  bool stop_on_error = true;  // false: interactive
  bool show_timing = true;    // "Took 0.0012 seconds" after human output
  // Asks the user yes or no (Executor::set_confirm); unset: commands that ask refuse.
  std::function<bool(const std::string& question)> confirm;
};

class Session {
 public:
  // `conn`, `out` and `err` must outlive the Session.
  Session(Connection* conn, const SessionOptions& options, std::ostream* out, std::ostream* err);

  // Parses all of `text` first (a syntax error runs nothing), then runs its commands in order.
  // Returns false when the session is over (exit, or an error while stop_on_error).
  bool RunScript(std::string_view text);

  // One line of input (without its '\n'). Runs every command the line completes; keeps an
  // unfinished command (open bracket or string, trailing ',') for the next line. Returns false
  // when the session is over.
  bool AddLine(std::string_view line);
  // End of input: an unfinished command is a syntax error.
  void Finish();

  bool pending() const { return !buffer_.empty(); }
  bool done() const { return done_; }
  int exit_code() const { return exit_code_; }
  // irb's prompt as HBase shows it: "basalt:001:0> ", or "basalt:002:1* " inside an unfinished
  // command. The number counts input lines.
  std::string Prompt() const;

 private:
  // Runs parsed commands; false when the session is over.
  bool RunCommands(const std::vector<Command>& commands);
  void ReportSyntaxError(const absl::Status& s);
  void Fail(int code);

  Executor executor_;
  SessionOptions options_;
  std::ostream* err_;
  std::string buffer_;  // lines of an unfinished command
  int line_number_ = 1;
  bool done_ = false;
  int exit_code_ = 0;
};

}  // namespace basalt::shell
