#include "src/tools/shell/shell_flags.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "src/base/flags.h"

namespace basalt::shell {
namespace {

using server::BadValue;
using server::FlagSet;

FlagSet::Syntax ShellSyntax() {
  FlagSet::Syntax s;
  s.config_file = false;
  s.separate_values = true;
  s.positional = true;
  return s;
}

// A flag whose value is a file or a name, which may not be empty.
std::function<absl::Status(std::string_view)> NonEmpty(std::string key, std::string* out) {
  return [key, out](std::string_view v) {
    if (v.empty()) return BadValue(key, v, "must not be empty");
    *out = std::string(v);
    return absl::OkStatus();
  };
}

void AddShellFlags(ShellFlags* f, FlagSet* flags) {
  flags->Add("server", "", "server to talk to, HOST:PORT (default: $BASALT_SERVER, else 127.0.0.1:16020)",
             NonEmpty("server", &f->server));
  flags->Add("zookeeper", "",
             "a cluster instead, HOST:PORT[,HOST:PORT...]: its ZooKeeper names the server (as hbase.zookeeper.quorum)",
             NonEmpty("zookeeper", &f->zookeeper));
  flags->Add("znode-parent", "/basalt", "the cluster's node in ZooKeeper", [f](std::string_view v) {
    if (v.empty() || v[0] != '/') return BadValue("znode-parent", v, "expected a path such as /basalt");
    f->znode_parent = std::string(v);
    return absl::OkStatus();
  });
  flags->Add("format", "human", "human (as HBase's shell prints) or json (one JSON object per command)",
             [f](std::string_view v) -> absl::Status {
               BASALT_ASSIGN_OR_RETURN(f->format, server::ParseChoice<OutputFormat>(
                                                      "format", v, {{"human", OutputFormat::kHuman}, {"json", OutputFormat::kJson}},
                                                      "expected human or json"));
               return absl::OkStatus();
             });
  flags->Add(
      "execute", "", "run these commands ('cmd; cmd'; may repeat) and exit",
      [f](std::string_view v) {
        f->execute.emplace_back(v);
        return absl::OkStatus();
      },
      "", 'e');
  flags->Add("timeout", "30", "deadline of each call in seconds, retries included", [f](std::string_view v) {
    absl::StatusOr<double> s = server::ParseDouble("timeout", v, 0.001, 86400);
    if (!s.ok()) return s.status();
    f->timeout_seconds = *s;
    return absl::OkStatus();
  });
  flags->Add("transport", "auto",
             "auto (Get/Put over RDMA verbs when offered, else the TCP fast path), grpc, verbs, tcp",
             [f](std::string_view v) -> absl::Status {
               BASALT_ASSIGN_OR_RETURN(f->transport, server::ParseChoice<TransportChoice>(
                                                         "transport", v,
                                                         {{"auto", TransportChoice::kAuto},
                                                          {"grpc", TransportChoice::kGrpc},
                                                          {"verbs", TransportChoice::kVerbs},
                                                          {"tcp", TransportChoice::kTcp}},
                                                         "expected auto, grpc, verbs or tcp"));
               return absl::OkStatus();
             });
  flags->Add(
      "no-timing", "false", "leave out the 'Took N seconds' lines",
      [f](std::string_view v) {
        absl::StatusOr<bool> b = server::ParseBool("no-timing", v);
        if (!b.ok()) return b.status();
        f->timing = !*b;
        return absl::OkStatus();
      },
      "true");
  flags->Add("tls-ca", "", "talk TLS, checking the server's certificate against this CA (PEM file)",
             NonEmpty("tls-ca", &f->security.tls_ca));
  flags->Add("tls-cert", "", "a client certificate (PEM file): mutual TLS, its common name the user",
             NonEmpty("tls-cert", &f->security.tls_cert));
  flags->Add("tls-key", "", "the private key of --tls-cert (PEM file)", NonEmpty("tls-key", &f->security.tls_key));
  flags->Add("tls-server-name", "", "the name the server's certificate carries, when not the --server host",
             NonEmpty("tls-server-name", &f->security.tls_server_name));
  flags->Add("token-file", "", "authenticate with the token in this file (default: $BASALT_TOKEN); needs --tls-ca",
             NonEmpty("token-file", &f->token_file));
}

}  // namespace

absl::StatusOr<ParsedShellArgs> ParseShellCommandLine(const std::vector<std::string>& args) {
  ParsedShellArgs out;
  FlagSet flags("basalt", ShellSyntax());
  AddShellFlags(&out.flags, &flags);
  BASALT_RETURN_IF_ERROR(flags.Parse(args));
  out.help = flags.help();
  if (out.help) return out;
  ShellFlags& f = out.flags;
  if (flags.positional().size() > 1) return absl::InvalidArgumentError("only one script file may be given");
  if (!flags.positional().empty()) f.script = flags.positional()[0];
  if (!f.execute.empty() && !f.script.empty()) return absl::InvalidArgumentError("give -e or a script file, not both");
  if (!f.server.empty() && !f.zookeeper.empty()) {
    return absl::InvalidArgumentError("give --server or --zookeeper, not both");
  }
  return out;
}

std::string ShellHelpText() {
  ShellFlags scratch;
  FlagSet flags("basalt", ShellSyntax());
  AddShellFlags(&scratch, &flags);
  return flags.Help(
      "Usage: basalt [options] [script-file | -]\n"
      "With no -e and no file, commands come from stdin: interactively with a prompt when it is a\n"
      "terminal, else as a script. A script stops at its first error and the shell exits 1.\n"
      "Options are --key=VALUE or --key VALUE:\n");
}

}  // namespace basalt::shell
