// basalt-server's settings: a config file of `key = value` lines (`#` starts a comment) and a
// `--key=value` flag for every key; flags override the file (the one parser of flags.h). Parsing
// is pure (no I/O besides reading the config file) so it is unit-tested without a server.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "basalt/transport_choice.h"
#include "basalt/types.h"
#include "common/log.h"
#include "src/base/flags.h"
#include "storage/options.h"

namespace basalt::server {

struct ServerConfig {
  std::string data_dir = "./basalt-data";  // on local disk, or a path in the RADOS namespace
  // Shared storage (common/rados_env.h): with rados_pool set, every file of data_dir lives in
  // that Ceph pool, in the namespace rados_namespace, instead of on local disk.
  std::string rados_pool;
  std::string ceph_conf = "/etc/ceph/ceph.conf";
  std::string rados_namespace = "basalt";
  std::string rados_client = "client.admin";
  uint64_t rados_object_size = 32ull << 20;  // each object of a file
  int rados_op_timeout_s = 30;
  // Cluster membership (src/cluster/cluster_member.h): with a quorum, the server registers in
  // ZooKeeper and stops (exit 3) when its session expires, for a master then fences it.
  std::string zookeeper_quorum;             // HOST:PORT[,HOST:PORT...]; empty: no cluster
  int zookeeper_session_timeout_ms = 4000;
  std::string zookeeper_znode_parent = "/basalt";
  // The daemons' ZooKeeper identity: a file holding "user:password" (digest). Set, the nodes they
  // make may be changed only by it (cluster_member.h ReadZooKeeperIdentity).
  std::string zookeeper_auth_file;
  std::string listen = "127.0.0.1:16020";  // HOST:PORT; port 0 picks a free port
  std::string port_file;                   // when set: the bound port, written atomically
  // The HTTP port (/metrics; docs/DESIGN.md §11): HOST:PORT (port 0: a free one); empty: none. The
  // default, HBase's region server UI port, is left off with a warning when another process
  // holds it; one given explicitly (http_listen_set) must bind, or the server does not start.
  std::string http_listen = "127.0.0.1:16030";
  bool http_listen_set = false;
  // The HBase port (docs/DESIGN.md §15): HBase 2.x clients speak HBase's RPC here; HOST:PORT
  // (port 0: a free one); empty: off. hbase_port_file: once listening, its port is written there.
  std::string hbase_listen;
  std::string hbase_port_file;
  // Where the HBase port's records go for HBase clients that look in ZooKeeper (hbase_zk.h):
  // HOST:PORT[,...]; empty: none (clients use the RPC registry). Its own parent, HBase's /hbase.
  std::string hbase_zookeeper_quorum;
  std::string hbase_znode_parent = "/hbase";
  // A region server of a cluster (docs/DESIGN.md §6): it opens only the regions the active
  // basalt-master assigns it, its log in data_dir/wals/; needs zookeeper_quorum and rados_pool.
  // false: standalone (its own catalogue and meta; with zookeeper_quorum it also registers).
  bool cluster = false;
  int cq_threads = 0;                      // completion queues (read handlers); 0: one per core
  int handler_threads = 16;                // write and admin handler threads
  uint64_t memstore_flush_size = 128ull << 20;
  uint64_t block_cache_size = 128ull << 20;
  Durability durability = Durability::kSyncWal;  // for requests that say DURABILITY_DEFAULT
  // Log damage at start-up or region open (storage/options.h): strict keeps what it may hold
  // closed; the others drop what they must, logged and counted in status.
  WalRecoveryMode wal_recovery = WalRecoveryMode::kStrict;
  uint64_t wal_roll_size = 64ull << 20;  // the server log's segment size
  int wal_max_logs = 32;                 // live segments before the oldest's regions flush
  // Log kept for replication peers beyond what the regions need (src/replication/peers.h): past
  // it the hold of the peer furthest behind is dropped, and that peer is BROKEN (copied anew).
  uint64_t replication_max_held_log = 16ull << 30;
  uint64_t region_max_size = 10ull << 30;  // a region splits past this (its largest store)
  bool auto_split = true;
  bool rebuild_catalog = false;  // a missing CATALOG is rebuilt from each table's TABLEINFO
  bool enable_echo = false;                  // the benchmark-only Echo service
  uint64_t echo_max_reply_bytes = 1ull << 20;  // its largest reply
  uint64_t max_reply_bytes_in_flight = 256ull << 20;  // replies not yet taken by clients, per front end
  int64_t stalled_reply_timeout_ms = 30000;           // a reply not taken for this long is cancelled
  int64_t transaction_timeout_ms = 30000;  // a standalone server's transactions' default timeout
  int64_t scanner_lease_ms = 60000;   // a scan message not taken for this long closes the scan
  int64_t max_scanners_per_user = 100;  // open at once, per user (auth on); 0: no cap
  int64_t max_transactions_per_user = 1000;  // in progress at once, per user (auth on); 0: no cap
  int max_concurrent_calls = 1000;
  int reserved_fds = 64;  // descriptors kept free of connections (acceptor.h)
  int max_request_bytes = 64 << 20;        // gRPC receive cap
  uint32_t scan_rows_per_message = 100;
  uint64_t scan_bytes_per_message = 1ull << 20;
  // The verbs transport (transport/verbs, deploy/RDMA.md).
  // auto: serve verbs when an RDMA device is there; on (kVerbs): start only with verbs; off
  // (kGrpc): never.
  TransportChoice rdma = TransportChoice::kAuto;
  std::string rdma_listen;           // IP:PORT for rdma_cm; empty: the listen host, a free port
  std::string rdma_device;           // the address must be on this device (empty: any)
  int rdma_device_port = 0;          // ... and this port of it (0: any)
  int rdma_gid_index = -1;           // checked to be the address's RoCE v2 GID (-1: not checked)
  int rdma_helper_threads = 0;       // threads polling the verbs completion queues (0: one per core)
  int rdma_max_endpoints = 128;      // verbs endpoints (queue pairs) across all clients
  int rdma_max_endpoints_per_user = 64;   // of one user (auth on); 0: no cap
  int rdma_max_sessions_per_user = 1024;  // unexpired verbs sessions of one user (auth on); 0: no cap
  int rdma_credits = 8;              // verbs requests in flight per endpoint
  // Receive buffers per helper's shared receive queue (0: the endpoints' credits, at most 256
  // in all unless rdma_max_endpoints is more, split across the helpers; fewer: requests past
  // them wait in the client's device until one is free).
  int rdma_srq_depth = 0;
  uint64_t rdma_message_bytes = 72 << 10;  // per endpoint and direction; larger calls take rendezvous
  // Memory the server registers at once for large calls (rendezvous): each pins its request or
  // reply while it travels; a call that finds the budget spent takes gRPC. 0: no rendezvous.
  uint64_t rdma_rendezvous_budget = uint64_t{256} << 20;
  int rdma_spin_us = 50;             // busy-poll before sleeping on the completion channel
  int rdma_session_ttl_s = 600;      // a session token's life (endpoints connect within it)
  // The TCP fast path (src/front/tcp_front.h): Get and Mutate in verbs frames over TCP, for
  // clients without RDMA. tcp_listen: HOST:PORT; empty: the listen host on a free port.
  bool tcp = true;
  std::string tcp_listen;
  int tcp_loop_threads = 0;          // its event loops, Gets inline on them (0: one per core)
  int tcp_max_connections = 1000;
  int tcp_max_connections_per_user = 64;  // open at once, of one user (auth on); 0: no cap
  int tcp_max_sessions_per_user = 1024;  // unexpired TCP sessions of one user (auth on); 0: no cap
  // Security (docs/DESIGN.md §12; src/security/access_control.h). tls_cert and tls_key (PEM files):
  // every gRPC port serves TLS. tls_ca (PEM): client certificates signed by it are asked for and
  // verified (mutual TLS; the certificate's common name is the user). auth: every call must be
  // authenticated (a client certificate, or a token of auth_users_file) and is authorised
  // against the grants in basalt:acl; superusers (users and @groups) may do everything.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  bool auth = false;
  std::string auth_users_file;  // lines "USER TOKEN-SHA256|- [GROUP,...]"
  std::vector<std::string> superusers;
  // With auth: users (and @groups) who may read the HTTP port's /metrics without global A, as a
  // Prometheus scraper's identity (its bearer token or certificate).
  std::vector<std::string> metrics_users;
  // The log (common/log.h): stderr (systemd's journal) or files in log_dir, rolled.
  log::Level log_level = log::Level::kInfo;
  std::string log_dir;
  uint64_t log_max_file_size = 64ull << 20;
  int64_t latency_graph_interval_ms = 10000;  // the status page's latency graph
  // Every key set (by the file or a flag), with its text as given: /conf shows what is in force.
  std::map<std::string, std::string> given;
};

// The settings in force, for /conf (flags.h): each key's text as given, or its default's.
std::vector<SettingInForce> SettingsInForce(const ServerConfig& config);

// Adds the server's settings (only `keys`, when given) to *flags, each writing into *config and
// recording its text in config->given. basalt-master takes the ones it shares from here.
void AddServerFlags(ServerConfig* config, FlagSet* flags, const std::vector<std::string_view>& keys = {});

struct ParsedArgs {
  ServerConfig config;
  bool help = false;  // --help was given: print HelpText() and exit 0
};

// Parses the command line (without argv[0]). Reads --config=FILE first, then applies the other
// flags over it. InvalidArgument naming the key/flag, file and line for an unknown key, a bad
// value, a malformed line or a setting this build cannot serve (cluster without ZooKeeper or RADOS); NotFound
// when the config file cannot be read.
absl::StatusOr<ParsedArgs> ParseCommandLine(const std::vector<std::string>& args);

// Parses config file text (`path` only names it in errors), applying it over *config.
absl::Status ParseConfigText(std::string_view text, const std::string& path, ServerConfig* config);
// Sets one key from its text value. InvalidArgument for an unknown key or a bad value.
absl::Status SetConfigValue(std::string_view key, std::string_view value, ServerConfig* config);

// Checks values that depend on each other, and what cluster mode needs. InvalidArgument.
absl::Status ValidateConfig(const ServerConfig& config);
// The security settings' part of it (basalt-master checks its own with it too).
absl::Status ValidateSecurity(const ServerConfig& config);

// Whether only this host can reach `host` (a listen address's host part): localhost, ::1, 127/8.
inline bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The --help text: usage and every key with its default.
std::string HelpText();

}  // namespace basalt::server
