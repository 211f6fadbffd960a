#include "src/base/config.h"

#include <algorithm>
#include <climits>
#include <functional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace basalt::server {
namespace {

struct Setting {
  const char* key;
  const char* default_text;
  const char* help;
  std::function<absl::Status(std::string_view key, std::string_view value, ServerConfig*)> set;
};

const std::vector<Setting>& Settings() {
  static const auto* kSettings = new std::vector<Setting>{
      {"data_dir", "./basalt-data", "directory holding the catalogue and every table's region",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (v.empty()) return BadValue(k, v, "must not be empty");
         c->data_dir = std::string(v);
         return absl::OkStatus();
       }},
      {"rados_pool", "", "a Ceph pool: keep data_dir there (shared storage) instead of on local disk",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->rados_pool = std::string(v);
         return absl::OkStatus();
       }},
      {"ceph_conf", "/etc/ceph/ceph.conf", "the Ceph cluster's configuration file (monitor addresses), with rados_pool",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (v.empty()) return BadValue(k, v, "must not be empty");
         c->ceph_conf = std::string(v);
         return absl::OkStatus();
       }},
      {"rados_namespace", "basalt", "the RADOS namespace holding this installation's files, with rados_pool",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (v.empty()) return BadValue(k, v, "must not be empty");
         c->rados_namespace = std::string(v);
         return absl::OkStatus();
       }},
      {"rados_client", "client.admin", "the Ceph user this server connects as (TYPE.ID), with rados_pool",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (v.find('.') == std::string_view::npos) return BadValue(k, v, "expected TYPE.ID, e.g. client.basalt");
         c->rados_client = std::string(v);
         return absl::OkStatus();
       }},
      {"rados_object_size", "32MiB", "size of each RADOS object a file is cut into (64KiB to 128MiB)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < (64 << 10) || n > (128ull << 20)) return BadValue(k, v, "must be in [64KiB, 128MiB]");
         c->rados_object_size = n;
         return absl::OkStatus();
       }},
      {"rados_op_timeout_s", "30", "seconds before a RADOS operation nobody answers fails (instead of waiting forever)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 1, 3600));
         c->rados_op_timeout_s = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"zookeeper_quorum", "", "ZooKeeper servers HOST:PORT[,HOST:PORT...]: the cluster this region server joins, with cluster=true",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->zookeeper_quorum = std::string(v);
         return absl::OkStatus();
       }},
      {"zookeeper_session_timeout_ms", "4000",
       "a server not heard from by ZooKeeper for this long is taken for dead, fenced, and its regions reopened elsewhere",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 200, 600000));
         c->zookeeper_session_timeout_ms = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"zookeeper_auth_file", "",
       "file holding the cluster daemons' ZooKeeper identity, one line user:password (digest): the nodes they make "
       "may then be changed only by it (required with auth=true on a master)",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->zookeeper_auth_file = std::string(v);
         return absl::OkStatus();
       }},
      {"zookeeper_znode_parent", "/basalt", "the cluster's node in ZooKeeper (as HBase's zookeeper.znode.parent)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (v.size() < 2 || v.front() != '/' || v.back() == '/') return BadValue(k, v, "expected an absolute path such as /basalt");
         c->zookeeper_znode_parent = std::string(v);
         return absl::OkStatus();
       }},
      {"listen", "127.0.0.1:16020", "HOST:PORT to serve gRPC on; port 0 picks a free port",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_RETURN_IF_ERROR(CheckHostPort(k, v));
         c->listen = std::string(v);
         return absl::OkStatus();
       }},
      {"latency_graph_interval_ms", "10000",
       "the status page's latency graph: one p50/p99 point per this many milliseconds, the last 30 shown",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->latency_graph_interval_ms, ParseInt(k, v, 100, 3600 * 1000));
         return absl::OkStatus();
       }},
      {"tls_cert", "", "PEM file of this server's certificate (chain): with tls_key, its gRPC port, TCP path and HBase "
       "port serve TLS",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->tls_cert = std::string(v);
         return absl::OkStatus();
       }},
      {"tls_key", "", "PEM file of the private key of tls_cert",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->tls_key = std::string(v);
         return absl::OkStatus();
       }},
      {"tls_ca", "", "PEM file of the CA whose client certificates are asked for and verified (mutual TLS: the "
                     "certificate's common name is the user); needs tls_cert",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->tls_ca = std::string(v);
         return absl::OkStatus();
       }},
      {"auth", "false", "every call must be authenticated (client certificate or token; needs tls_cert) and is "
                        "authorised against the grants in basalt:acl (HBase's AccessController)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->auth, ParseBool(k, v));
         return absl::OkStatus();
       }},
      {"auth_users_file", "", "the users: lines 'USER TOKEN-SHA256 [GROUP,...]' (the hex SHA-256 of the user's bearer "
                              "token, or - for a user who only presents a certificate); read at start",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->auth_users_file = std::string(v);
         return absl::OkStatus();
       }},
      {"superusers", "", "users and @groups (comma-separated) allowed everything, as HBase's hbase.superuser",
       [](std::string_view k, std::string_view v, ServerConfig* c) { return ParsePrincipals(k, v, &c->superusers); }},
      {"metrics_users", "",
       "with auth: users and @groups (comma-separated) who may read the HTTP port's /metrics, as a Prometheus "
       "scraper; every other page needs global A",
       [](std::string_view k, std::string_view v, ServerConfig* c) { return ParsePrincipals(k, v, &c->metrics_users); }},
      {"log_level", "info", "lines below this level are dropped: debug, info, warning or error",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (absl::Status s = log::ParseLevel(v, &c->log_level); !s.ok()) return BadValue(k, v, s.message());
         return absl::OkStatus();
       }},
      {"log_dir", "", "write the log to basalt-server.log in this directory, rolled past log_max_file_size (empty: "
                      "stderr, for systemd's journal)",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->log_dir = std::string(v);
         return absl::OkStatus();
       }},
      {"log_max_file_size", "64MiB", "the log file is rolled past this size (log_dir only; 5 old files kept)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < 4096) return BadValue(k, v, "must be at least 4KiB");
         c->log_max_file_size = n;
         return absl::OkStatus();
       }},
      {"http_listen", "127.0.0.1:16030",
       "HOST:PORT of the HTTP port (/metrics in the Prometheus text format); port 0 picks a free one; off: none. "
       "The default is skipped with a warning when taken; a value given must bind",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         c->http_listen_set = true;
         if (v == "off" || v.empty()) {
           c->http_listen.clear();
           return absl::OkStatus();
         }
         BASALT_RETURN_IF_ERROR(CheckHostPort(k, v));
         c->http_listen = std::string(v);
         return absl::OkStatus();
       }},
      {"hbase_listen", "",
       "HOST:PORT of the HBase port, for unmodified HBase 2.x clients (hbase.client.bootstrap.servers); port 0 "
       "picks a free one; empty: off. Under tls_cert it is TLS (HBase 2.6's hbase.client.netty.tls.enabled)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (!v.empty()) BASALT_RETURN_IF_ERROR(CheckHostPort(k, v));
         c->hbase_listen = std::string(v);
         return absl::OkStatus();
       }},
      {"hbase_zookeeper_quorum", "",
       "HOST:PORT[,...] of a ZooKeeper where the HBase port is published for HBase clients that look there "
       "(hbase.zookeeper.quorum); empty: not published (clients use hbase.client.bootstrap.servers)",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->hbase_zookeeper_quorum = std::string(v);
         return absl::OkStatus();
       }},
      {"hbase_znode_parent", "/hbase",
       "the znode under which the HBase port's records go (HBase's zookeeper.znode.parent); not Basalt's own parent",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (v.empty() || v[0] != '/' || (v.size() > 1 && v.back() == '/')) return BadValue(k, v, "a znode path such as /hbase");
         c->hbase_znode_parent = std::string(v);
         return absl::OkStatus();
       }},
      {"hbase_port_file", "", "once the HBase port listens, write its port and a newline here (atomically)",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->hbase_port_file = std::string(v);
         return absl::OkStatus();
       }},
      {"port_file", "", "once listening, write the bound port and a newline here (atomically)",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->port_file = std::string(v);
         return absl::OkStatus();
       }},
      {"cluster", "false",
       "a region server of a cluster: serves the regions the active basalt-master assigns (needs zookeeper_quorum "
       "and rados_pool); false: standalone, its own catalogue and meta",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->cluster, ParseBool(k, v));
         return absl::OkStatus();
       }},
      {"cq_threads", "0", "completion queues, each polled by one thread running reads inline (0: one per core)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 1024));
         c->cq_threads = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"handler_threads", "16", "threads running writes and admin calls (writers share an fdatasync); 0: inline on the CQ threads",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 1024));
         c->handler_threads = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"memstore_flush_size", "128MiB", "a region flushes its memstores past this many bytes",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < (64u << 10)) return BadValue(k, v, "must be at least 64KiB");
         c->memstore_flush_size = n;
         return absl::OkStatus();
       }},
      {"block_cache_size", "128MiB", "bytes of the block cache shared by all tables (0: none)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->block_cache_size, ParseBytes(k, v));
         return absl::OkStatus();
       }},
      {"durability", "sync", "default for DURABILITY_DEFAULT requests: sync, async or skip",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->durability, ParseChoice<Durability>(k, v,
                                                                        {{"sync", Durability::kSyncWal},
                                                                         {"sync_wal", Durability::kSyncWal},
                                                                         {"async", Durability::kAsyncWal},
                                                                         {"async_wal", Durability::kAsyncWal},
                                                                         {"skip", Durability::kSkipWal},
                                                                         {"skip_wal", Durability::kSkipWal}},
                                                                        "expected sync, async or skip"));
         return absl::OkStatus();
       }},
      {"wal_recovery", "strict",
       "log damage found at start-up or when a region opens: strict (the region stays FAILED_OPEN, naming what is lost), "
       "point_in_time (replay up to the first damage) or skip_corrupted (replay every intact record)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->wal_recovery,
                                 ParseChoice<WalRecoveryMode>(k, v,
                                                              {{"strict", WalRecoveryMode::kStrict},
                                                               {"point_in_time", WalRecoveryMode::kPointInTime},
                                                               {"skip_corrupted", WalRecoveryMode::kSkipCorrupted}},
                                                              "expected strict, point_in_time or skip_corrupted"));
         return absl::OkStatus();
       }},
      {"wal_roll_size", "64MiB", "the server log starts a new segment past this size (at least 1MiB)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < (1u << 20)) return BadValue(k, v, "must be at least 1MiB");
         c->wal_roll_size = n;
         return absl::OkStatus();
       }},
      {"wal_max_logs", "32",
       "past this many live server log segments, the regions holding the oldest flush (HBase's maxlogs)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 2, 100000));
         c->wal_max_logs = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"replication_max_held_log", "16GiB",
       "server log kept for replication peers that have not shipped it yet, beyond what the regions need; past "
       "it the peer furthest behind loses its place (BROKEN: copy its tables anew), never the server its disk",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < (1u << 20)) return BadValue(k, v, "must be at least 1MiB");
         c->replication_max_held_log = n;
         return absl::OkStatus();
       }},
      {"region_max_size", "10GiB",
       "a region whose largest store passes this splits at its middle (HBase's hbase.hregion.max.filesize; a "
       "table's only region splits past twice memstore_flush_size, as HBase's stepping policy)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < (1u << 20)) return BadValue(k, v, "must be at least 1MiB");
         c->region_max_size = n;
         return absl::OkStatus();
       }},
      {"auto_split", "true", "regions split on their own past the size above (false: only the split command)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->auto_split, ParseBool(k, v));
         return absl::OkStatus();
       }},
      {"enable_echo", "false",
       "serve the Echo service (the benchmarks' bare-gRPC floor); off, it answers FAILED_PRECONDITION",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->enable_echo, ParseBool(k, v));
         return absl::OkStatus();
       }},
      {"echo_max_reply_bytes", "1MiB", "the largest reply Echo sends (at most 16MiB)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n > (16u << 20)) return BadValue(k, v, "must be at most 16MiB");
         c->echo_max_reply_bytes = n;
         return absl::OkStatus();
       }},
      {"max_reply_bytes_in_flight", "256MiB",
       "reply bytes waiting for their clients to read them, on each front end (gRPC, the TCP path, the HBase "
       "port); past it calls get RESOURCE_EXHAUSTED",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < (1u << 20)) return BadValue(k, v, "must be at least 1MiB");
         c->max_reply_bytes_in_flight = n;
         return absl::OkStatus();
       }},
      {"stalled_reply_timeout_ms", "30000",
       "a reply its client has not taken for this long is cancelled, freeing its call slot (scans: scanner_lease_ms); "
       "on the TCP path, the connection is closed",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->stalled_reply_timeout_ms, ParseInt(k, v, 100, 24 * 3600 * 1000));
         return absl::OkStatus();
       }},
      {"scanner_lease_ms", "60000",
       "a scan whose next message its client has not taken for this long is closed (HBase's scanner lease, "
       "hbase.client.scanner.timeout.period)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->scanner_lease_ms, ParseInt(k, v, 100, 24 * 3600 * 1000));
         return absl::OkStatus();
       }},
      {"max_scanners_per_user", "100",
       "scans one user may hold open at once (auth on); past it a new one gets RESOURCE_EXHAUSTED; 0: no cap",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->max_scanners_per_user, ParseInt(k, v, 0, 1000000));
         return absl::OkStatus();
       }},
      {"transaction_timeout_ms", "30000",
       "a transaction neither committed nor aborted this long after it started becomes invalid (its writes are "
       "never seen); a client may ask for another timeout per transaction",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->transaction_timeout_ms, ParseInt(k, v, 100, 24 * 3600 * 1000));
         return absl::OkStatus();
       }},
      {"max_transactions_per_user", "1000",
       "transactions one user may have in progress at once (auth on; each costs every snapshot); 0: no cap",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->max_transactions_per_user, ParseInt(k, v, 0, 1000000));
         return absl::OkStatus();
       }},
      {"rebuild_catalog", "false",
       "when CATALOG is missing beside table directories, rebuild it from each table's TABLEINFO instead of "
       "refusing to start",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->rebuild_catalog, ParseBool(k, v));
         return absl::OkStatus();
       }},
      {"reserved_fds", "64",
       "descriptors kept for files: a connection that would leave fewer free is refused (0: connections may "
       "use every descriptor)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 1 << 20));
         c->reserved_fds = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"max_concurrent_calls", "1000", "calls in flight beyond this get RESOURCE_EXHAUSTED",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 1, 1 << 20));
         c->max_concurrent_calls = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"max_request_bytes", "64MiB", "largest request message gRPC accepts",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < 1024 || n > static_cast<uint64_t>(INT_MAX)) return BadValue(k, v, "must be in [1KiB, 2GiB)");
         c->max_request_bytes = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"scan_rows_per_message", "100", "rows per ScanResponse when the request leaves it 0",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 1, 1 << 24));
         c->scan_rows_per_message = static_cast<uint32_t>(n);
         return absl::OkStatus();
       }},
      {"scan_bytes_per_message", "1MiB", "a ScanResponse is sent once its rows reach this many bytes",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < 1 || n > (1ull << 30)) return BadValue(k, v, "must be in [1, 1GiB]");
         c->scan_bytes_per_message = n;
         return absl::OkStatus();
       }},
      {"rdma", "auto", "verbs transport for Get/Put: auto (when an RDMA device is there), on (fail without one), off",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         using R = TransportChoice;
         BASALT_ASSIGN_OR_RETURN(c->rdma, ParseChoice<R>(k, v,
                                                         {{"auto", R::kAuto},
                                                          {"on", R::kVerbs},
                                                          {"true", R::kVerbs},
                                                          {"1", R::kVerbs},
                                                          {"off", R::kGrpc},
                                                          {"false", R::kGrpc},
                                                          {"0", R::kGrpc}},
                                                         "expected auto, on or off"));
         return absl::OkStatus();
       }},
      {"rdma_listen", "", "IP:PORT of the RDMA interface for rdma_cm (the IP picks the device; port 0: a free one); "
                          "empty: the listen host on a free port",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (!v.empty()) BASALT_RETURN_IF_ERROR(CheckHostPort(k, v));
         c->rdma_listen = std::string(v);
         return absl::OkStatus();
       }},
      {"rdma_device", "", "require rdma_listen's address to be on this RDMA device (ibv_devinfo names it); empty: any",
       [](std::string_view, std::string_view v, ServerConfig* c) -> absl::Status {
         c->rdma_device = std::string(v);
         return absl::OkStatus();
       }},
      {"rdma_device_port", "0", "require the address to be on this port of the device (0: any)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 255));
         c->rdma_device_port = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_gid_index", "-1", "require this GID index to hold the address's RoCE v2 GID (-1: not checked)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, -1, 255));
         c->rdma_gid_index = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_helper_threads", "0", "threads polling the verbs completion queues, Gets inline on them (0: one per core)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 64));
         c->rdma_helper_threads = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_max_endpoints_per_user", "64",
       "verbs endpoints one user may hold open at once (auth on); past it the user's client uses the endpoints it "
       "has; 0: no cap",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 65536));
         c->rdma_max_endpoints_per_user = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_max_sessions_per_user", "1024",
       "unexpired verbs sessions one user may hold (auth on); past it OpenVerbsSession is RESOURCE_EXHAUSTED and "
       "the client stays on gRPC; 0: no cap",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 100000));
         c->rdma_max_sessions_per_user = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_max_endpoints", "128", "verbs endpoints across all clients",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 1, 65536));
         c->rdma_max_endpoints = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_credits", "8", "verbs requests one endpoint may have in flight at once (1..255)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 1, 255));
         c->rdma_credits = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_srq_depth", "0",
       "receive buffers (rdma_message_bytes each) per verbs helper, shared by its endpoints; fewer than "
       "their requests in flight hold requests back when all are in use (0: the endpoints' credits, "
       "at most max(256, rdma_max_endpoints) in all, split across the helpers)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 65536));
         c->rdma_srq_depth = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_message_bytes", "72KiB", "largest verbs message each way; larger calls go over gRPC",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n < 1024 || n > (16u << 20)) return BadValue(k, v, "must be in [1KiB, 16MiB]");
         c->rdma_message_bytes = n;
         return absl::OkStatus();
       }},
      {"rdma_rendezvous_budget", "256MiB",
       "registered memory for large verbs calls at once (rendezvous; 0: none, they go over gRPC)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(uint64_t n, ParseBytes(k, v));
         if (n > (uint64_t{64} << 30)) return BadValue(k, v, "must be in [0, 64GiB]");
         c->rdma_rendezvous_budget = n;
         return absl::OkStatus();
       }},
      {"rdma_spin_us", "50", "microseconds a verbs helper busy-polls before sleeping on its completion channel",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 1000000));
         c->rdma_spin_us = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"rdma_session_ttl_s", "600",
       "seconds a fast-path session token (verbs, and the TCP path's) stays valid for new endpoints and connections",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 1, 86400 * 365));
         c->rdma_session_ttl_s = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"tcp", "true",
       "serve the TCP fast path: Get and Put in verbs frames over TCP, for clients without RDMA (the selector's "
       "choice after verbs); off, they take gRPC",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(c->tcp, ParseBool(k, v));
         return absl::OkStatus();
       }},
      {"tcp_listen", "", "HOST:PORT of the TCP fast path (port 0: a free one); empty: the listen host on a free port",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         if (!v.empty()) BASALT_RETURN_IF_ERROR(CheckHostPort(k, v));
         c->tcp_listen = std::string(v);
         return absl::OkStatus();
       }},
      {"tcp_loop_threads", "0", "the TCP fast path's event loops, Gets served inline on them (0: one per core)",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 64));
         c->tcp_loop_threads = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"tcp_max_connections", "1000", "connections open at once on the TCP fast path; past it one is refused",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 1, 1 << 20));
         c->tcp_max_connections = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"tcp_max_connections_per_user", "64",
       "TCP path connections one user may hold open at once (auth on); past it a connect is refused and the "
       "user's client takes gRPC for that connection's calls; 0: no cap",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 65536));
         c->tcp_max_connections_per_user = static_cast<int>(n);
         return absl::OkStatus();
       }},
      {"tcp_max_sessions_per_user", "1024",
       "unexpired TCP sessions one user may hold (auth on); past it the user's client stays on gRPC; 0: no cap",
       [](std::string_view k, std::string_view v, ServerConfig* c) -> absl::Status {
         BASALT_ASSIGN_OR_RETURN(int64_t n, ParseInt(k, v, 0, 100000));
         c->tcp_max_sessions_per_user = static_cast<int>(n);
         return absl::OkStatus();
       }},
  };
  return *kSettings;
}

}  // namespace

void AddServerFlags(ServerConfig* config, FlagSet* flags, const std::vector<std::string_view>& keys) {
  for (const Setting& st : Settings()) {
    if (!keys.empty() && std::find(keys.begin(), keys.end(), std::string_view(st.key)) == keys.end()) continue;
    Flag f;
    f.key = st.key;
    f.default_text = st.default_text;
    f.help = st.help;
    f.set = [&st, config](std::string_view value) {
      BASALT_RETURN_IF_ERROR(st.set(st.key, value, config));
      config->given[st.key] = std::string(value);
      return absl::OkStatus();
    };
    // A bare --cluster means true.
    if (std::string_view(st.key) == "cluster") f.bare_value = "true";
    flags->Add(std::move(f));
  }
}

absl::Status SetConfigValue(std::string_view key, std::string_view value, ServerConfig* config) {
  FlagSet flags("basalt-server", {});
  AddServerFlags(config, &flags, {key});
  return flags.Set(key, value);
}

absl::Status ParseConfigText(std::string_view text, const std::string& path, ServerConfig* config) {
  FlagSet flags("basalt-server", {});
  AddServerFlags(config, &flags);
  return flags.ApplyConfigText(text, path);
}

absl::Status ValidateConfig(const ServerConfig& config) {
  if (config.cluster && (config.zookeeper_quorum.empty() || config.rados_pool.empty())) {
    return absl::InvalidArgumentError(
        "cluster=true needs zookeeper_quorum (to find the master) and rados_pool (the shared storage every server opens "
        "regions from)");
  }
  if (!config.cluster && !config.zookeeper_quorum.empty()) {
    return absl::InvalidArgumentError(
        "zookeeper_quorum is for a region server of a cluster (--cluster); a standalone server keeps its own meta");
  }
  if (config.cluster && !config.hbase_zookeeper_quorum.empty()) {
    return absl::InvalidArgumentError(
        "hbase_zookeeper_quorum on a cluster's region server: the active basalt-master publishes the cluster's "
        "HBase records (its hbase_listen); a region server's HBase port is named in hbase:meta");
  }
  if (!config.hbase_zookeeper_quorum.empty() && config.hbase_listen.empty()) {
    return absl::InvalidArgumentError("hbase_zookeeper_quorum publishes the HBase port: it needs hbase_listen");
  }
  if (!config.hbase_zookeeper_quorum.empty() && !config.zookeeper_auth_file.empty()) {
    return absl::InvalidArgumentError(
        "hbase_zookeeper_quorum with zookeeper_auth_file: HBase clients read the records without an identity");
  }
  std::string host;
  int port;
  BASALT_RETURN_IF_ERROR(SplitHostPort(config.listen, &host, &port));
  return ValidateSecurity(config);
}

absl::Status ValidateSecurity(const ServerConfig& config) {
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return absl::InvalidArgumentError("tls_cert and tls_key go together: give both, or neither (plain text)");
  }
  if (!config.tls_ca.empty() && config.tls_cert.empty()) {
    return absl::InvalidArgumentError("tls_ca (client certificates) needs the server's own tls_cert and tls_key");
  }
  if (config.auth && config.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "auth=true needs TLS (tls_cert, tls_key): certificates and tokens are never taken over plain text");
  }
  if (config.auth && !config.hbase_listen.empty() && config.tls_ca.empty()) {
    return absl::InvalidArgumentError(
        "hbase_listen with auth=true needs tls_ca: the HBase port knows its users by their client certificates "
        "(HBase's TLS), and tokens are not taken there");
  }
  if (config.auth && config.tls_ca.empty() && config.auth_users_file.empty()) {
    return absl::InvalidArgumentError(
        "auth=true needs a way to authenticate: tls_ca (client certificates) or auth_users_file (tokens), or both");
  }
  return absl::OkStatus();
}

absl::StatusOr<ParsedArgs> ParseCommandLine(const std::vector<std::string>& args) {
  ParsedArgs out;
  FlagSet flags("basalt-server", {});
  AddServerFlags(&out.config, &flags);
  BASALT_RETURN_IF_ERROR(flags.Parse(args));
  out.help = flags.help();
  if (out.help) return out;
  BASALT_RETURN_IF_ERROR(ValidateConfig(out.config));
  return out;
}

std::vector<SettingInForce> SettingsInForce(const ServerConfig& config) {
  // The texts as given, set again on a scratch copy: the table says which keys there are.
  ServerConfig scratch;
  FlagSet flags("basalt-server", {});
  AddServerFlags(&scratch, &flags);
  for (const auto& [key, value] : config.given) flags.Set(key, value).IgnoreError();
  return flags.InForce();
}

std::string HelpText() {
  ServerConfig scratch;
  FlagSet flags("basalt-server", {});
  AddServerFlags(&scratch, &flags);
  return flags.Help(
      "usage: basalt-server [--config=FILE] [--key=value ...]\n"
      "\n"
      "Basalt region server (standalone: also the master). Settings come from FILE\n"
      "(lines 'key = value', '#' comments) and flags; flags override the file.\n"
      "Sizes take K/KiB, M/MiB, G/GiB suffixes. Exit code 2 on a bad setting.\n"
      "\n");
}

}  // namespace basalt::server
