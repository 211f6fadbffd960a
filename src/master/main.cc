// basalt-master: joins the masters' election in ZooKeeper; the active one serves the catalogue and
// basalt:meta, places regions on the region servers, and fences and recovers each server that
// dies (src/master/master.h). Runs until SIGTERM or SIGINT.
// Exit codes: 0 clean stop, 1 start-up failure (or, once active, its storage or port failed),
// 2 bad settings, 3 its ZooKeeper session expired or its lease lapsed, or it found itself fenced
// (another master has taken over).
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status.h"
#include "src/master/master.h"
#include "src/security/auth.h"
#include "src/base/config.h"
#include "src/base/http_front.h"
#include "src/base/notify.h"
#include "src/services/server_metrics.h"
#include "src/front/status_page.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::master {
namespace {

struct Flag {
  const char* key;
  const char* default_value;
  const char* help;
};
constexpr Flag kFlags[] = {
    {"zookeeper_quorum", "", "ZooKeeper servers HOST:PORT[,HOST:PORT...] (required)"},
    {"zookeeper_session_timeout_ms", "4000", "a master not heard from this long loses its place to a backup"},
    {"zookeeper_znode_parent", "/basalt", "the cluster's node in ZooKeeper"},
    {"zookeeper_auth_file", "",
     "file holding the daemons' ZooKeeper identity, one line user:password (digest): the nodes the cluster makes may "
     "then be changed only by it. Required with auth=true, which also refuses nodes open to anyone"},
    {"name", "", "how this master is known (default HOST:PID)"},
    {"listen", "127.0.0.1:16000", "HOST:PORT to serve gRPC on once active (port 0: any free port)"},
    {"port_file", "", "once active and serving: write the bound port and a newline here (atomically)"},
    {"data_dir", "./basalt-data", "the region servers' data_dir (a path in the RADOS namespace)"},
    {"rados_pool", "", "the cluster's Ceph pool (the catalogue, meta and every region live there)"},
    {"ceph_conf", "/etc/ceph/ceph.conf", "the Ceph cluster's configuration file"},
    {"rados_namespace", "basalt", "the RADOS namespace the region servers use"},
    {"rados_client", "client.admin", "the Ceph user to connect as (it needs to blocklist clients)"},
    {"balancer_period_ms", "300000", "the balancer runs on its own this often (0: only when asked; HBase: 5 min)"},
    {"http_listen", "127.0.0.1:16010",
     "HOST:PORT of the HTTP port (/ status page, /metrics, /status.json, /conf, /logs; HBase's master UI port); port 0: "
     "a free one; off: none. The default is skipped with a warning when taken; a value given must bind"},
    {"tls_cert", "", "PEM file of this master's certificate: TLS on its port, and its identity to the region servers"},
    {"tls_key", "", "PEM file of the private key of tls_cert"},
    {"tls_ca", "", "PEM file of the CA of the cluster's certificates (clients', region servers')"},
    {"auth", "false", "every call authenticated and authorised against basalt:acl (needs tls_cert)"},
    {"auth_users_file", "", "the users: lines 'USER TOKEN-SHA256 [GROUP,...]'"},
    {"superusers", "", "users and @groups allowed everything (include the region servers' certificate name)"},
    {"metrics_users", "", "with auth: users and @groups who may read /metrics (a Prometheus scraper); the other pages "
                          "need global A"},
    {"log_level", "info", "lines below this level are dropped: debug, info, warning or error"},
    {"log_dir", "", "write the log to basalt-master.log in this directory, rolled (empty: stderr)"},
    {"log_max_file_size", "67108864", "the log file is rolled past this many bytes (log_dir only; 5 old files kept)"},
};

void PrintHelp() {
  std::cout << "usage: basalt-master [--config=FILE] --zookeeper_quorum=HOST:PORT [--key=value ...]\n\n"
               "One active master among any number (elected in ZooKeeper): it tracks the live region servers\n"
               "and fences each one that dies, places and balances regions. Settings come from FILE (lines\n"
               "'key = value', '#' comments) and flags; flags override the file:\n";
  for (const Flag& f : kFlags) {
    std::cout << "  --" << f.key << " (default '" << f.default_value << "'): " << f.help << "\n";
  }
}

int Run(int argc, char** argv) {
  std::map<std::string, std::string> v;
  for (const Flag& f : kFlags) v[f.key] = f.default_value;
  std::map<std::string, std::string> flags;
  std::string config;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      PrintHelp();
      return 0;
    }
    const size_t eq = a.find('=');
    const std::string key = eq == std::string::npos ? "" : a.substr(2, eq - 2);
    if (a.rfind("--", 0) != 0 || eq == std::string::npos || (!v.contains(key) && key != "config")) {
      std::cerr << "basalt-master: unexpected argument '" << a << "' (flags are --key=value; see --help)\n";
      return 2;
    }
    (key == "config" ? config : flags[key]) = a.substr(eq + 1);
  }
  // The file first, the flags over it (as basalt-server's).
  if (!config.empty()) {
    std::ifstream in(config, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    absl::Status read = !in ? absl::NotFoundError(absl::StrCat("cannot read config file ", config))
                            : server::ForEachConfigLine(text.str(), config, [&](std::string_view key, std::string_view value) {
                                if (!v.contains(std::string(key))) {
                                  return absl::InvalidArgumentError(absl::StrCat("unknown setting '", AV(key), "'"));
                                }
                                v[std::string(key)] = std::string(value);
                                return absl::OkStatus();
                              });
    if (!read.ok()) {
      std::cerr << "basalt-master: " << read.message() << "\n";
      return 2;
    }
  }
  for (const auto& [key, value] : flags) v[key] = value;
  std::set<std::string> given;  // set by the file or a flag: /conf marks the others as defaults
  for (const auto& [key, value] : v) {
    for (const Flag& f : kFlags) {
      if (key == f.key && value != f.default_value) given.insert(key);
    }
  }
  for (const auto& [key, value] : flags) given.insert(key);
  log::Options lo;
  lo.program = "basalt-master";
  uint64_t log_max = 0;
  if (!log::ParseLevel(v["log_level"], &lo.level).ok() || !absl::SimpleAtoi(v["log_max_file_size"], &log_max) ||
      log_max < 4096) {
    std::cerr << "basalt-master: --log_level must be debug, info, warning or error and --log_max_file_size a number "
                 "of bytes >= 4096\n";
    return 2;
  }
  lo.dir = v["log_dir"];
  lo.max_file_bytes = log_max;
  if (absl::Status s = log::Configure(lo); !s.ok()) {
    std::cerr << "basalt-master: " << s.message() << "\n";
    return 1;
  }
  int session_ms = 0;
  if (v["zookeeper_quorum"].empty() || !absl::SimpleAtoi(v["zookeeper_session_timeout_ms"], &session_ms) ||
      session_ms < 200) {
    std::cerr << "basalt-master: --zookeeper_quorum is required and --zookeeper_session_timeout_ms must be >= 200\n";
    return 2;
  }
  int64_t balancer_ms = 0;
  if (!absl::SimpleAtoi(v["balancer_period_ms"], &balancer_ms) || balancer_ms < 0) {
    std::cerr << "basalt-master: --balancer_period_ms must be a number of milliseconds >= 0, not '"
              << v["balancer_period_ms"] << "'\n";
    return 2;
  }
  basalt::DisableMutexDeadlockDetection();
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<RadosEnv> rados;
  if (!v["rados_pool"].empty()) {
    RadosEnvOptions ro;
    ro.ceph_conf = v["ceph_conf"];
    ro.pool = v["rados_pool"];
    ro.root = v["rados_namespace"];
    ro.client_name = v["rados_client"];
    absl::StatusOr<std::unique_ptr<RadosEnv>> env = RadosEnv::Connect(ro);
    if (!env.ok()) {
      log::Error(std::string(env.status().message()));
      return 1;
    }
    rados = *std::move(env);
    // Fenced by the master that took over: this one is deposed (common/rados_env.h).
    SetFencedHandler(+[](std::string_view what) {
      log::Error(absl::StrCat("fenced by the master that took over (", AV(what), "): stopping now"));
      std::_Exit(3);
    });
  }
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  // /metrics: the gRPC calls once active, and the process.
  metrics::Registry registry;
  server::RegisterProcessMetrics(&registry, std::chrono::steady_clock::now());
  Master::Options mo;
  mo.metrics = &registry;
  mo.log = [](std::string_view line) { log::Info(line); };
  mo.name = v["name"].empty() ? absl::StrCat(host, ":", ::getpid()) : v["name"];
  mo.zk.quorum = v["zookeeper_quorum"];
  mo.zk.session_timeout = absl::Milliseconds(session_ms);
  mo.paths.parent = v["zookeeper_znode_parent"];
  mo.rados = rados.get();
  mo.listen = v["listen"];
  mo.port_file = v["port_file"];
  mo.data_dir = v["data_dir"];
  mo.balancer_period = absl::Milliseconds(balancer_ms);
  // Security: the same settings, and the same checks, as basalt-server's (config.h).
  {
    server::ServerConfig sc;
    absl::Status parsed = absl::OkStatus();
    for (const char* key :
         {"tls_cert", "tls_key", "tls_ca", "auth", "auth_users_file", "superusers", "metrics_users",
          "zookeeper_auth_file"}) {
      if (parsed.ok()) parsed = server::SetConfigValue(key, v[key], &sc);
    }
    if (parsed.ok()) parsed = server::ValidateSecurity(sc);
    if (parsed.ok() && !sc.tls_cert.empty()) {
      absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tls =
          server::ServerTlsCredentials(sc.tls_cert, sc.tls_key, sc.tls_ca);
      parsed = tls.status();
      if (tls.ok()) mo.tls = *std::move(tls);
      absl::StatusOr<ChannelSecurity> client = server::OwnChannelSecurity(sc);
      if (parsed.ok()) parsed = client.status();
      if (client.ok()) mo.client = *std::move(client);
    }
    if (!parsed.ok()) {
      std::cerr << "basalt-master: " << parsed.message() << "\n";
      return 2;
    }
    if (parsed.ok() && !sc.zookeeper_auth_file.empty()) {
      absl::StatusOr<std::string> identity = server::ReadZooKeeperIdentity(sc.zookeeper_auth_file);
      parsed = identity.status();
      if (identity.ok()) mo.zk.digest = *std::move(identity);
    }
    if (parsed.ok() && sc.auth && mo.zk.digest.empty()) {
      parsed = absl::InvalidArgumentError(
          "auth=true needs zookeeper_auth_file (the cluster's ZooKeeper identity): without it every node of the "
          "cluster in ZooKeeper can be changed or deleted by anyone who reaches ZooKeeper");
    }
    if (!parsed.ok()) {
      std::cerr << "basalt-master: " << parsed.message() << "\n";
      return 2;
    }
    mo.auth = sc.auth;
    mo.users_file = sc.auth_users_file;
    mo.superusers = sc.superusers;
    mo.metrics_users = sc.metrics_users;
    mo.http_tls_cert = sc.tls_cert;
    mo.http_tls_key = sc.tls_key;
    mo.http_tls_ca = sc.tls_ca;
  }
  // As basalt-server says it: a master reachable from other hosts in plain text, or open to all.
  std::string listen_host;
  int listen_port = 0;
  if (server::SplitHostPort(mo.listen, &listen_host, &listen_port).ok() && !server::IsLoopbackHost(listen_host)) {
    if (mo.tls == nullptr) {
      log::Warning(absl::StrCat("serving without TLS on ", mo.listen,
                                ", which is not a loopback address: calls cross the network in plain text (set "
                                "tls_cert and tls_key)"));
    }
    if (!mo.auth) {
      log::Warning(absl::StrCat("serving without authentication on ", mo.listen,
                                ": anyone who reaches it may create and drop tables, move regions and read meta (set "
                                "auth=true)"));
    }
  }
  absl::StatusOr<std::unique_ptr<Master>> master = Master::Start(mo);
  if (!master.ok()) {
    log::Error(std::string(master.status().message()));
    return 1;
  }
  // The HTTP port: up as soon as the master is (a backup's page names the active master).
  std::vector<server::SettingInForce> conf;
  for (const Flag& f : kFlags) {
    server::SettingInForce e{f.key, v[f.key], given.contains(f.key)};
    if (server::IsSecretSetting(e.key) && !e.value.empty()) e.value = "******";
    conf.push_back(std::move(e));
  }
  // The master the pages show: replaced when a backup joins the election again.
  struct Current {
    absl::Mutex mu;
    Master* master ABSL_GUARDED_BY(mu) = nullptr;
  } current;
  {
    absl::MutexLock l(&current.mu);
    current.master = master->get();
  }
  std::unique_ptr<server::HttpFront> http;
  absl::Cleanup stop_http = [&http] { http.reset(); };  // before the master goes
  if (v["http_listen"] != "off" && !v["http_listen"].empty()) {
    auto page = [&current] {
      server::StatusPageData d;
      d.now = absl::Now();
      {
        absl::ReaderMutexLock l(&current.mu);
        current.master->FillPage(&d);
      }
      d.log = log::Recent(200);
      return d;
    };
    server::HttpFront::Options hopts;
    hopts.listen = v["http_listen"];
    hopts.routes = server::StatusRoutes(&registry, page, [conf] { return conf; });
    hopts.tls_cert = mo.http_tls_cert;
    hopts.tls_key = mo.http_tls_key;
    hopts.tls_ca = mo.http_tls_ca;
    hopts.authorize = [&current](const server::HttpCaller& caller, const server::HttpFront::Route& route) {
      absl::ReaderMutexLock l(&current.mu);
      return current.master->AuthorizeHttp(caller, route);
    };
    hopts.log = [](std::string_view line) { log::Warning(line); };
    absl::StatusOr<std::unique_ptr<server::HttpFront>> started = server::HttpFront::Start(std::move(hopts));
    if (started.ok()) {
      http = *std::move(started);
      std::cout << "basalt-master: status on " << (http->tls() ? "https://" : "http://") << http->address() << "/"
                << std::endl;
    } else if (given.contains("http_listen")) {
      log::Error(std::string(started.status().message()));
      return 1;
    } else {
      std::cout << "basalt-master: status page off: " << started.status().message() << std::endl;
    }
  }
  // In the election (active, or a backup ready to take over): systemd's Type=notify unit is started.
  if (absl::Status s = server::NotifySystemd((*master)->active() ? "READY=1\nSTATUS=active master"
                                                                 : "READY=1\nSTATUS=backup master");
      !s.ok()) {
    log::Warning(std::string(s.message()));
  }
  // SIGTERM and SIGINT stop it; so does a failure to serve once active (checked every 100 ms).
  const timespec tick{0, 100 * 1000 * 1000};
  for (;;) {
    const int sig = sigtimedwait(&sigs, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      log::Info(absl::StrCat(sig == SIGTERM ? "SIGTERM" : "SIGINT", ", stopping"));
      server::NotifySystemd("STOPPING=1").IgnoreError();
      http.reset();
      master->reset();
      return 0;
    }
    if (absl::Status f = (*master)->fatal(); !f.ok()) {
      log::Error(absl::StrCat("stopping: ", f.message()));
      std::_Exit(1);  // its session ends with the process: a backup takes over
    }
    // A backup whose session expired (ZooKeeper or this host starved for the session timeout)
    // held nothing: it is replaced at once rather than leaving the cluster without a backup
    // until its unit restarts it (an HBase backup master aborts there).
    if ((*master)->expired_backup()) {
      absl::MutexLock l(&current.mu);
      master->reset();
      absl::StatusOr<std::unique_ptr<Master>> again = Master::Start(mo);
      if (!again.ok()) {
        log::Error(absl::StrCat("joining the election again: ", again.status().message(), "; stopping now"));
        std::_Exit(3);
      }
      master = *std::move(again);
      current.master = master->get();
    }
  }
}

}  // namespace
}  // namespace basalt::master

int main(int argc, char** argv) { return basalt::master::Run(argc, argv); }
