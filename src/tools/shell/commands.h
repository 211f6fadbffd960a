// The shell's commands (create, put, get, scan, ...) run against a basalt::Connection, and their
// help. An Executor belongs to one thread (the shell's).
#pragma once

#include <functional>

#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "basalt/client.h"
#include "src/tools/shell/format.h"
#include "src/tools/shell/parser.h"

namespace basalt::shell {

class Executor {
 public:
  // `conn` and `out` must outlive the Executor. `show_timing`: end human output with HBase's
  // "Took 0.0012 seconds" line.
  Executor(Connection* conn, OutputFormat format, std::ostream* out, bool show_timing = true);

  // Runs one command and writes its output. On failure writes nothing more and returns the
  // error with a message ready to print after "ERROR: " (e.g. "Unknown table t9! (...)"),
  // keeping the server's code: NotFound, AlreadyExists, InvalidArgument for bad arguments or an
  // unknown command, Unavailable when the server cannot be reached, ...
  absl::Status Execute(const Command& cmd);

  // The command's outcome without printing it (for tests and embedding).
  absl::StatusOr<Reply> Run(const Command& cmd);

  // How a command asks the user before it deletes many things (delete_all_snapshot); unset,
  // such a command refuses.
  void set_confirm(std::function<bool(const std::string& question)> confirm) { confirm_ = std::move(confirm); }

 private:
  Connection* conn_;
  OutputFormat format_;
  std::ostream* out_;
  bool show_timing_;
  std::function<bool(const std::string&)> confirm_;
};

// Whether `name` is a shell command (exit and quit included).
bool IsCommand(std::string_view name);
// `help` with no argument: the command list; with one: that command's usage and examples.
// NotFound for an unknown command.
absl::StatusOr<std::string> HelpText(std::string_view command = "");
// Every command name, sorted (for completion).
const std::vector<std::string>& CommandNames();

}  // namespace basalt::shell
