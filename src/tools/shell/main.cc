// basalt: the Basalt shell.
//
//   basalt [--server=HOST:PORT] [--format=human|json] [-e 'cmd; cmd'] [script-file | -]
//   (shell_flags.h)
//
// Reads commands from -e, a script file, or stdin: a terminal gets HBase's interactive prompt
// with line editing and history (libedit, ~/.basalt_history); anything else is read as a
// script. Exit status: 0, or 1 when a script stopped at an error (printed on stderr), or 2 for
// a bad command line.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <editline/readline.h>

#include "absl/strings/str_cat.h"
#include "basalt/client.h"
#include "src/tools/shell/commands.h"
#include "src/tools/shell/session.h"
#include "src/tools/shell/shell_flags.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::shell {
namespace {

// The settings main() fills in beyond the command line: the server from $BASALT_SERVER, and the
// token from --token-file (never on the command line, where ps shows it) or $BASALT_TOKEN.
absl::Status FromEnvironment(ShellFlags* flags) {
  if (flags->server.empty() && flags->zookeeper.empty()) {
    const char* env = std::getenv("BASALT_SERVER");
    flags->server = env != nullptr && *env != '\0' ? env : "127.0.0.1:16020";
  }
  if (!flags->token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(flags->token_file);
    if (!token.ok()) return absl::InvalidArgumentError(absl::StrCat("--token-file ", flags->token_file, " cannot be read"));
    flags->security.token = *std::move(token);
  } else if (const char* env = std::getenv("BASALT_TOKEN"); env != nullptr && *env != '\0') {
    flags->security.token = env;
  }
  return absl::OkStatus();
}

// ---- interactive mode (libedit's readline interface)

char* CompleteCommand(const char* text, int state) {
  static size_t next;
  if (state == 0) next = 0;
  const std::vector<std::string>& names = CommandNames();
  size_t len = std::strlen(text);
  while (next < names.size()) {
    const std::string& name = names[next++];
    if (name.compare(0, len, text) == 0) return strdup(name.c_str());
  }
  return nullptr;
}

char** Complete(const char* text, int start, int /*end*/) {
  rl_attempted_completion_over = 1;  // no file-name completion
  if (start != 0) return nullptr;    // only the command name at the start of a line
  return rl_completion_matches(text, CompleteCommand);
}

int RunInteractive(Session* session, OutputFormat format) {
  std::string history;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    history = std::string(home) + "/.basalt_history";
  }
  using_history();
  stifle_history(1000);
  if (!history.empty()) read_history(history.c_str());
  rl_readline_name = const_cast<char*>("basalt");
  rl_attempted_completion_function = Complete;

  if (format == OutputFormat::kHuman) {
    std::cout << "Basalt Shell\nUse \"help\" to get list of supported commands.\n"
                 "Use \"exit\" to quit this interactive shell.\n";
  }
  while (!session->done()) {
    std::string prompt = session->Prompt();
    char* line = readline(prompt.c_str());
    if (line == nullptr) {  // Ctrl-D
      std::cout << "\n";
      break;
    }
    std::string text(line);
    std::free(line);
    if (text.find_first_not_of(" \t") != std::string::npos) {
      add_history(text.c_str());
      if (!history.empty()) write_history(history.c_str());
    }
    session->AddLine(text);
  }
  session->Finish();
  return session->exit_code();
}

int RunStdinScript(Session* session) {
  std::string line;
  while (!session->done() && std::getline(std::cin, line)) {
    session->AddLine(line);
  }
  session->Finish();
  return session->exit_code();
}

int Main(int argc, char** argv) {
  absl::StatusOr<ParsedShellArgs> parsed = ParseShellCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (parsed.ok() && parsed->help) {
    std::cout << ShellHelpText();
    return 0;
  }
  absl::Status ready = parsed.ok() ? FromEnvironment(&parsed->flags) : parsed.status();
  if (!ready.ok()) {
    std::cerr << "basalt: " << ready.message() << "\n";
    return 2;
  }
  ShellFlags& flags = parsed->flags;

  ConnectionOptions options;
  options.address = flags.server;
  options.zookeeper_quorum = flags.zookeeper;
  options.zookeeper_znode_parent = flags.znode_parent;
  options.timeout = absl::Seconds(flags.timeout_seconds);
  options.transport = flags.transport;
  options.security = flags.security;
  auto conn = Connection::Open(options);
  if (!conn.ok()) {
    std::cerr << "ERROR: cannot connect to " << (flags.zookeeper.empty() ? flags.server : "the cluster of ZooKeeper " + flags.zookeeper)
              << ": " << conn.status().message() << "\n";
    return 1;
  }

  const bool script_input = !flags.execute.empty() || !flags.script.empty() || !isatty(STDIN_FILENO);
  SessionOptions session_options;
  session_options.format = flags.format;
  session_options.stop_on_error = script_input;
  session_options.show_timing = flags.timing;
  // HBase's shell asks on stdin before deleting many snapshots: here too, the terminal's line
  // interactively, else the next line of stdin (none: no).
  session_options.confirm = [script_input](const std::string& question) {
    std::string answer;
    if (!script_input) {
      char* line = readline((question + " ").c_str());
      if (line == nullptr) return false;
      answer = line;
      std::free(line);
    } else {
      std::cout << question << std::endl;
      if (!std::getline(std::cin, answer)) return false;
    }
    return !answer.empty() && (answer[0] == 'y' || answer[0] == 'Y');
  };
  Session session(conn->get(), session_options, &std::cout, &std::cerr);

  if (!flags.execute.empty()) {
    for (const std::string& text : flags.execute) {
      if (!session.RunScript(text)) break;
    }
    return session.exit_code();
  }
  if (!flags.script.empty() && flags.script != "-") {
    std::ifstream in(flags.script, std::ios::binary);
    if (!in) {
      std::cerr << "ERROR: cannot read " << flags.script << ": " << std::strerror(errno) << "\n";
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    session.RunScript(text.str());
    return session.exit_code();
  }
  if (script_input) return RunStdinScript(&session);
  return RunInteractive(&session, flags.format);
}

}  // namespace
}  // namespace basalt::shell

int main(int argc, char** argv) { return basalt::shell::Main(argc, argv); }
