#include "src/master/master_config.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt::master {
namespace {

// The master's table: the shared keys from the server's (in this order), with the master's
// defaults and words, then its own.
void AddMasterFlags(MasterConfig* c, server::FlagSet* flags) {
  c->server.listen = "127.0.0.1:16000";
  c->server.http_listen = "127.0.0.1:16010";
  server::AddServerFlags(&c->server, flags,
                         {"zookeeper_quorum", "zookeeper_session_timeout_ms", "zookeeper_znode_parent",
                          "zookeeper_auth_file", "listen", "port_file", "data_dir", "rados_pool", "ceph_conf",
                          "rados_namespace", "rados_client", "http_listen", "tls_cert", "tls_key", "tls_ca", "auth",
                          "auth_users_file", "superusers", "metrics_users", "log_level", "log_dir",
                          "log_max_file_size", "hbase_listen", "hbase_port_file", "hbase_znode_parent"});
  flags->Reword("zookeeper_quorum", "", "ZooKeeper servers HOST:PORT[,HOST:PORT...] (required)");
  flags->Reword("zookeeper_session_timeout_ms", "4000", "a master not heard from this long loses its place to a backup");
  flags->Reword("zookeeper_auth_file", "",
                "file holding the daemons' ZooKeeper identity, one line user:password (digest): the nodes the cluster "
                "makes may then be changed only by it. Required with auth=true, which also refuses nodes open to "
                "anyone");
  flags->Reword("listen", "127.0.0.1:16000", "HOST:PORT to serve gRPC on once active (port 0: any free port)");
  flags->Reword("port_file", "", "once active and serving: write the bound port and a newline here (atomically)");
  flags->Reword("data_dir", "./basalt-data", "the region servers' data_dir (a path in the RADOS namespace)");
  flags->Reword("rados_pool", "", "the cluster's Ceph pool (the catalogue, meta and every region live there)");
  flags->Reword("rados_namespace", "basalt", "the RADOS namespace the region servers use");
  flags->Reword("rados_client", "client.admin", "the Ceph user to connect as (it needs to blocklist clients)");
  flags->Reword("http_listen", "127.0.0.1:16010",
                "HOST:PORT of the HTTP port (/ status page, /metrics, /status.json, /conf, /logs; HBase's master UI "
                "port); port 0: a free one; off: none. The default is skipped with a warning when taken; a value given "
                "must bind");
  flags->Reword("tls_cert", "", "PEM file of this master's certificate: TLS on its port, and its identity to the region servers");
  flags->Reword("tls_ca", "", "PEM file of the CA of the cluster's certificates (clients', region servers')");
  flags->Reword("superusers", "", "users and @groups allowed everything (include the region servers' certificate name)");
  flags->Reword("log_dir", "", "write the log to basalt-master.log in this directory, rolled (empty: stderr)");
  flags->Reword("hbase_listen", "",
                "HOST:PORT of the HBase port once active, for unmodified HBase 2.x clients: MasterService, the "
                "registry and hbase:meta, whose regions name the region servers' HBase ports (their hbase_listen); "
                "the cluster's records are published in ZooKeeper under hbase_znode_parent; empty: off");
  flags->Reword("hbase_port_file", "", "once the HBase port listens (active): write its port and a newline here");
  flags->Reword("hbase_znode_parent", "/hbase",
                "the znode in zookeeper_quorum under which the HBase records go (HBase's zookeeper.znode.parent)");
  flags->Add("name", "", "how this master is known (default HOST:PID)", [c](std::string_view v) {
    c->name = std::string(v);
    return absl::OkStatus();
  });
  flags->Add("balancer_period_ms", "300000",
             "the balancer runs on its own this often (0: only when asked; HBase: 5 min)",
             [c](std::string_view v) -> absl::Status {
               BASALT_ASSIGN_OR_RETURN(c->balancer_period_ms,
                                       server::ParseInt("balancer_period_ms", v, 0, int64_t{7} * 86400 * 1000));
               return absl::OkStatus();
             });
}

}  // namespace

absl::StatusOr<ParsedMasterArgs> ParseMasterCommandLine(const std::vector<std::string>& args) {
  ParsedMasterArgs out;
  server::FlagSet flags("basalt-master", {});
  AddMasterFlags(&out.config, &flags);
  BASALT_RETURN_IF_ERROR(flags.Parse(args));
  out.help = flags.help();
  if (out.help) return out;
  const server::ServerConfig& s = out.config.server;
  if (s.zookeeper_quorum.empty()) {
    return absl::InvalidArgumentError("zookeeper_quorum is required: the masters' election and the cluster live there");
  }
  BASALT_RETURN_IF_ERROR(server::ValidateSecurity(s));
  if (s.auth && s.zookeeper_auth_file.empty()) {
    return absl::InvalidArgumentError(
        "auth=true needs zookeeper_auth_file (the cluster's ZooKeeper identity): without it every node of the cluster "
        "in ZooKeeper can be changed or deleted by anyone who reaches ZooKeeper");
  }
  if (!s.hbase_listen.empty() && s.hbase_znode_parent == s.zookeeper_znode_parent) {
    return absl::InvalidArgumentError(absl::StrCat("hbase_znode_parent ", s.hbase_znode_parent,
                                                   " is the cluster's own zookeeper_znode_parent: give HBase's another"));
  }
  out.in_force = flags.InForce();
  return out;
}

std::string MasterHelpText() {
  MasterConfig scratch;
  server::FlagSet flags("basalt-master", {});
  AddMasterFlags(&scratch, &flags);
  return flags.Help(
      "usage: basalt-master [--config=FILE] --zookeeper_quorum=HOST:PORT [--key=value ...]\n\n"
      "One active master among any number (elected in ZooKeeper): it tracks the live region servers\n"
      "and fences each one that dies, places and balances regions. Settings come from FILE (lines\n"
      "'key = value', '#' comments) and flags; flags override the file.\n\n");
}

}  // namespace basalt::master
