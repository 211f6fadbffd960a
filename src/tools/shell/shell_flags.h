// The shell's command line (the one parser of src/base/flags.h, in the shell's syntax: --key VALUE
// as well as --key=VALUE, -e, switches, and a script file):
//
//   basalt [--server=HOST:PORT | --zookeeper=QUORUM] [--format=human|json] [-e 'cmd; cmd'] [script-file | -]
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "basalt/client.h"
#include "src/tools/shell/format.h"

namespace basalt::shell {

struct ShellFlags {
  std::string server;  // empty: $BASALT_SERVER, else 127.0.0.1:16020 (main.cc)
  std::string zookeeper;
  std::string znode_parent = "/basalt";
  OutputFormat format = OutputFormat::kHuman;
  std::vector<std::string> execute;
  std::string script;  // a file, or "-" for stdin
  double timeout_seconds = 30;
  bool timing = true;
  TransportChoice transport = TransportChoice::kAuto;
  ClientSecurity security;  // its token is read by main.cc (--token-file, else $BASALT_TOKEN)
  std::string token_file;
};

struct ParsedShellArgs {
  ShellFlags flags;
  bool help = false;  // print ShellHelpText() and exit 0
};

// The command line without argv[0]. InvalidArgument naming the flag for an unknown one, a bad
// value, two scripts, or -e with a script, or --server with --zookeeper.
absl::StatusOr<ParsedShellArgs> ParseShellCommandLine(const std::vector<std::string>& args);

std::string ShellHelpText();

}  // namespace basalt::shell
