// basalt: the Basalt shell.
//
//   basalt [--server=HOST:PORT] [--format=human|json] [-e 'cmd; cmd'] [script-file | -]
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

#include "absl/strings/numbers.h"
#include "basalt/client.h"
#include "src/tools/shell/commands.h"
#include "src/tools/shell/session.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::shell {
namespace {

constexpr char kUsage[] =
    "Usage: basalt [options] [script-file | -]\n"
    "  --server=HOST:PORT    server to talk to (default: $BASALT_SERVER, else 127.0.0.1:16020)\n"
    "  --zookeeper=HOST:PORT[,HOST:PORT...]\n"
    "                        a cluster instead: its ZooKeeper names the server (as hbase.zookeeper.quorum)\n"
    "  --znode-parent=PATH   the cluster's node in ZooKeeper (default /basalt)\n"
    "  --format=human|json   output as HBase's shell prints it (default), or one JSON object per command\n"
    "  -e, --execute=CMDS    run these commands ('cmd; cmd'; may repeat) and exit\n"
    "  --timeout=SECONDS     deadline of each call, retries included (default 30)\n"
    "  --transport=MODE      auto (Get/Put over RDMA verbs when offered, the default), grpc, verbs\n"
    "  --no-timing           leave out the 'Took N seconds' lines\n"
    "  --tls-ca=FILE         talk TLS, checking the server's certificate against this CA (PEM)\n"
    "  --tls-cert=FILE, --tls-key=FILE\n"
    "                        a client certificate and its key (PEM): mutual TLS, its common name the user\n"
    "  --token-file=FILE     authenticate with the token in this file (default: $BASALT_TOKEN); needs --tls-ca\n"
    "  --tls-server-name=NAME  the name the server's certificate carries, when not the --server host\n"
    "  -h, --help            this help\n"
    "With no -e and no file, commands come from stdin: interactively with a prompt when it is a\n"
    "terminal, else as a script. A script stops at its first error and the shell exits 1.\n";

struct Flags {
  std::string server;
  std::string zookeeper;
  std::string znode_parent = "/basalt";
  OutputFormat format = OutputFormat::kHuman;
  std::vector<std::string> execute;
  std::string script;  // a file, or "-" for stdin
  double timeout_seconds = 30;
  bool timing = true;
  TransportChoice transport = TransportChoice::kAuto;
  ClientSecurity security;
  std::string token_file;
};

// Parses argv; returns false (after printing why) for a bad command line.
bool ParseFlags(int argc, char** argv, Flags* flags, bool* help) {
  auto value_of = [&](int* i, std::string_view arg, std::string_view name, std::string* out) -> int {
    // 1: matched and *out set; 0: not this flag; -1: missing value.
    if (arg == name) {
      if (*i + 1 >= argc) return -1;
      *out = argv[++*i];
      return 1;
    }
    if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
      *out = std::string(arg.substr(name.size() + 1));
      return 1;
    }
    return 0;
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string v;
    int m;
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return true;
    } else if (arg == "--no-timing") {
      flags->timing = false;
    } else if ((m = value_of(&i, arg, "--server", &v)) != 0) {
      if (m < 0 || v.empty()) return std::cerr << "basalt: --server needs HOST:PORT\n", false;
      flags->server = v;
    } else if ((m = value_of(&i, arg, "--zookeeper", &v)) != 0) {
      if (m < 0 || v.empty()) return std::cerr << "basalt: --zookeeper needs HOST:PORT[,HOST:PORT...]\n", false;
      flags->zookeeper = v;
    } else if ((m = value_of(&i, arg, "--znode-parent", &v)) != 0) {
      if (m < 0 || v.empty() || v[0] != '/') return std::cerr << "basalt: --znode-parent needs a path such as /basalt\n", false;
      flags->znode_parent = v;
    } else if ((m = value_of(&i, arg, "--format", &v)) != 0) {
      if (m > 0 && v == "human") {
        flags->format = OutputFormat::kHuman;
      } else if (m > 0 && v == "json") {
        flags->format = OutputFormat::kJson;
      } else {
        return std::cerr << "basalt: --format must be human or json\n", false;
      }
    } else if ((m = value_of(&i, arg, "-e", &v)) != 0 || (m = value_of(&i, arg, "--execute", &v)) != 0) {
      if (m < 0) return std::cerr << "basalt: -e needs commands\n", false;
      flags->execute.push_back(v);
    } else if ((m = value_of(&i, arg, "--timeout", &v)) != 0) {
      if (m < 0 || !absl::SimpleAtod(v, &flags->timeout_seconds) || flags->timeout_seconds <= 0) {
        return std::cerr << "basalt: --timeout needs a number of seconds\n", false;
      }
    } else if ((m = value_of(&i, arg, "--transport", &v)) != 0) {
      if (m > 0 && v == "auto") {
        flags->transport = TransportChoice::kAuto;
      } else if (m > 0 && v == "grpc") {
        flags->transport = TransportChoice::kGrpc;
      } else if (m > 0 && v == "verbs") {
        flags->transport = TransportChoice::kVerbs;
      } else {
        return std::cerr << "basalt: --transport must be auto, grpc or verbs\n", false;
      }
    } else if ((m = value_of(&i, arg, "--tls-ca", &v)) != 0) {
      if (m < 0 || v.empty()) return std::cerr << "basalt: --tls-ca needs a value\n", false;
      flags->security.tls_ca = v;
    } else if ((m = value_of(&i, arg, "--tls-cert", &v)) != 0) {
      if (m < 0 || v.empty()) return std::cerr << "basalt: --tls-cert needs a value\n", false;
      flags->security.tls_cert = v;
    } else if ((m = value_of(&i, arg, "--tls-key", &v)) != 0) {
      if (m < 0 || v.empty()) return std::cerr << "basalt: --tls-key needs a value\n", false;
      flags->security.tls_key = v;
    } else if ((m = value_of(&i, arg, "--tls-server-name", &v)) != 0) {
      if (m < 0 || v.empty()) return std::cerr << "basalt: --tls-server-name needs a value\n", false;
      flags->security.tls_server_name = v;
    } else if ((m = value_of(&i, arg, "--token-file", &v)) != 0) {
      if (m < 0 || v.empty()) return std::cerr << "basalt: --token-file needs a value\n", false;
      flags->token_file = v;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return std::cerr << "basalt: unknown option " << arg << "\n" << kUsage, false;
    } else if (flags->script.empty()) {
      flags->script = std::string(arg);
    } else {
      return std::cerr << "basalt: only one script file may be given\n", false;
    }
  }
  if (!flags->execute.empty() && !flags->script.empty()) {
    std::cerr << "basalt: give -e or a script file, not both\n";
    return false;
  }
  if (!flags->server.empty() && !flags->zookeeper.empty()) {
    std::cerr << "basalt: give --server or --zookeeper, not both\n";
    return false;
  }
  if (flags->server.empty() && flags->zookeeper.empty()) {
    const char* env = std::getenv("BASALT_SERVER");
    flags->server = env != nullptr && *env != '\0' ? env : "127.0.0.1:16020";
  }
  // The token: from a file (never on the command line, where ps shows it), else the environment.
  if (!flags->token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(flags->token_file);
    if (!token.ok()) return std::cerr << "basalt: --token-file " << flags->token_file << " cannot be read\n", false;
    flags->security.token = *std::move(token);
  } else if (const char* env = std::getenv("BASALT_TOKEN"); env != nullptr && *env != '\0') {
    flags->security.token = env;
  }
  return true;
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
  Flags flags;
  bool help = false;
  if (!ParseFlags(argc, argv, &flags, &help)) return 2;
  if (help) {
    std::cout << kUsage;
    return 0;
  }

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
