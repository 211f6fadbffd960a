#include "src/tools/shell/session.h"

#include "absl/strings/str_format.h"
#include "src/tools/shell/parser.h"

namespace basalt::shell {

Session::Session(Connection* conn, const SessionOptions& options, std::ostream* out, std::ostream* err)
    : executor_(conn, options.format, out, options.show_timing), options_(options), err_(err) {
  if (options.confirm) executor_.set_confirm(options.confirm);
}

std::string Session::Prompt() const {
  return absl::StrFormat("basalt:%03d:%d%s ", line_number_, pending() ? 1 : 0, pending() ? "*" : ">");
}

void Session::Fail(int code) {
  if (options_.stop_on_error) {
    done_ = true;
    exit_code_ = code;
  }
}

void Session::ReportSyntaxError(const absl::Status& s) {
  *err_ << "ERROR: syntax error, " << s.message() << "\n";
  err_->flush();
  Fail(1);
}

bool Session::RunCommands(const std::vector<Command>& commands) {
  for (const Command& cmd : commands) {
    if (cmd.name == "exit" || cmd.name == "quit") {
      int code = 0;
      if (!cmd.args.empty()) {
        if (cmd.args.size() > 1 || !cmd.args[0].is_int()) {
          *err_ << "ERROR: " << cmd.name << " takes at most one integer, the exit code\n";
          Fail(1);
          if (done_) return false;
          continue;
        }
        code = static_cast<int>(cmd.args[0].number & 0xFF);
      }
      done_ = true;
      exit_code_ = code;
      return false;
    }
    absl::Status s = executor_.Execute(cmd);
    if (!s.ok()) {
      *err_ << "ERROR: " << s.message() << "\n";
      err_->flush();
      Fail(1);
      if (done_) return false;
    }
  }
  return true;
}

bool Session::RunScript(std::string_view text) {
  if (done_) return false;
  auto commands = Parse(text);
  if (!commands.ok()) {
    ReportSyntaxError(commands.status());
    return !done_;
  }
  return RunCommands(*commands);
}

bool Session::AddLine(std::string_view line) {
  if (done_) return false;
  ++line_number_;
  if (!buffer_.empty()) buffer_.push_back('\n');
  buffer_.append(line);
  auto commands = Parse(buffer_);
  if (!commands.ok()) {
    if (commands.status().code() == absl::StatusCode::kOutOfRange) return true;  // wait for more
    buffer_.clear();
    ReportSyntaxError(commands.status());
    return !done_;
  }
  buffer_.clear();
  return RunCommands(*commands);
}

void Session::Finish() {
  if (done_ || buffer_.empty()) return;
  auto commands = Parse(buffer_);
  buffer_.clear();
  if (!commands.ok()) {
    ReportSyntaxError(commands.status());
    // Interactive input that ends mid-command still ends the shell, with an error code.
    done_ = true;
    exit_code_ = 1;
  }
}

}  // namespace basalt::shell
