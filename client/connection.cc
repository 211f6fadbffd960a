// Connection::Open and the Connection that owns the shared Core (client.h).
#include <cstdlib>
#include <map>
#include <string>
#include <vector>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/core.h"
#include "common/status.h"
#include "common/tls.h"
#include "transport/tcp/path.h"
#include "transport/verbs/path.h"

namespace basalt {
namespace client_internal {
namespace {

class ConnectionImpl final : public Connection {
  using TransactionMethod = grpc::Status (rpc::Basalt::Stub::*)(grpc::ClientContext*, const rpc::TransactionRequest&,
                                                                rpc::TransactionResponse*);
  absl::Status TransactionCall(TransactionMethod method, std::string_view what, int64_t write_pointer) {
    rpc::TransactionRequest req;
    req.set_write_pointer(write_pointer);
    rpc::TransactionResponse resp;
    return WithContext(core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      return (path->data_stub()->*method)(ctx, req, &resp);
    }), absl::StrCat(AV(what), " ", write_pointer));
  }

 public:
  explicit ConnectionImpl(std::unique_ptr<Core> core) : core_(std::move(core)) {}
  ~ConnectionImpl() override { core_->WaitAsyncIdle(); }

  std::unique_ptr<Table> GetTable(const std::string& name) override { return NewTable(core_.get(), name); }
  std::unique_ptr<Admin> GetAdmin() override { return NewAdmin(core_.get()); }
  std::unique_ptr<BufferedMutator> GetBufferedMutator(const std::string& table,
                                                      const BufferedMutatorOptions& options) override {
    return NewBufferedMutator(core_.get(), table, options);
  }
  const ConnectionOptions& options() const override { return core_->options(); }

  absl::StatusOr<TransactionSnapshot> StartTransaction(absl::Duration timeout) override {
    rpc::StartTransactionRequest req;
    req.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
    rpc::StartTransactionResponse resp;
    BASALT_RETURN_IF_ERROR(WithContext(core_->CallGrpc(true, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      return path->data_stub()->StartTransaction(ctx, req, &resp);
    }), "StartTransaction"));
    TransactionSnapshot t;
    t.write_pointer = resp.transaction().write_pointer();
    t.read_pointer = resp.transaction().read_pointer();
    t.excluded.assign(resp.transaction().excluded().begin(), resp.transaction().excluded().end());
    t.in_progress.assign(resp.transaction().in_progress().begin(), resp.transaction().in_progress().end());
    return t;
  }
  absl::Status CommitTransaction(int64_t write_pointer, const std::vector<uint64_t>& changes) override {
    rpc::CommitTransactionRequest req;
    req.set_write_pointer(write_pointer);
    req.mutable_changes()->Add(changes.begin(), changes.end());
    rpc::CommitTransactionResponse resp;
    return WithContext(core_->CallGrpc(false, [&](GrpcPath* path, grpc::ClientContext* ctx) {
      return path->data_stub()->CommitTransaction(ctx, req, &resp);
    }), absl::StrCat("CommitTransaction ", write_pointer));
  }
  absl::Status AbortTransaction(int64_t write_pointer) override {
    return TransactionCall(&rpc::Basalt::Stub::AbortTransaction, "AbortTransaction", write_pointer);
  }
  absl::Status InvalidateTransaction(int64_t write_pointer) override {
    return TransactionCall(&rpc::Basalt::Stub::InvalidateTransaction, "InvalidateTransaction", write_pointer);
  }
  TransportStats GetTransportStats() const override {
    TransportStats stats;
    const std::map<std::string, TransportStats> all = core_->selector()->AllStats();
    // A field's value when every server has the same, else each server's.
    auto merged = [&all](std::string TransportStats::*field) {
      std::string each;
      bool same = true;
      for (const auto& [server, s] : all) {
        if (s.*field != all.begin()->second.*field) same = false;
        absl::StrAppend(&each, each.empty() ? "" : "; ", server, ": ", s.*field);
      }
      return same ? all.begin()->second.*field : each;
    };
    for (const auto& [server, s] : all) {
      stats.verbs_calls += s.verbs_calls;
      stats.grpc_fallbacks += s.grpc_fallbacks;
      stats.oversized += s.oversized;
      stats.verbs_failures += s.verbs_failures;
      stats.endpoints_created += s.endpoints_created;
      stats.endpoints_open += s.endpoints_open;
      stats.endpoint_waits += s.endpoint_waits;
      stats.verbs_async_calls += s.verbs_async_calls;
      stats.verbs_async_queued += s.verbs_async_queued;
      stats.verbs_async_peak_per_endpoint =
          std::max(stats.verbs_async_peak_per_endpoint, s.verbs_async_peak_per_endpoint);
      stats.sessions += s.sessions;
      stats.tcp_calls += s.tcp_calls;
      stats.tcp_connects += s.tcp_connects;
      stats.tcp_connections_open += s.tcp_connections_open;
      stats.tcp_failures += s.tcp_failures;
      stats.tcp_sessions += s.tcp_sessions;
    }
    if (!all.empty()) {
      stats.path = merged(&TransportStats::path);
      stats.verbs_state = merged(&TransportStats::verbs_state);
      stats.tcp_state = merged(&TransportStats::tcp_state);
    }
    stats.meta_lookups = core_->region_cache().lookups();
    stats.regions_relocated = core_->region_cache().forgotten();
    return stats;
  }
  std::map<std::string, TransportStats> GetServerTransportStats() const override {
    return core_->selector()->AllStats();
  }

 private:
  std::unique_ptr<Core> core_;
};

absl::Status ValidateOptions(const ConnectionOptions& o) {
  if (o.address.empty() == o.zookeeper_quorum.empty()) {
    return absl::InvalidArgumentError(
        "give either the server's address or the cluster's zookeeper_quorum (not both, not neither)");
  }
  if (!o.address.empty()) BASALT_RETURN_IF_ERROR(ValidateAddress(o.address));
  if (o.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("connection timeout must be positive, got ", absl::FormatDuration(o.timeout)));
  }
  if (o.max_attempts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_attempts must be at least 1, got ", o.max_attempts));
  }
  if (o.initial_backoff < absl::ZeroDuration() || o.max_backoff < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("backoff durations must not be negative");
  }
  if (o.channels < 1 || o.channels > 256) {
    return absl::InvalidArgumentError(absl::StrCat("channels must be in 1..256, got ", o.channels));
  }
  if (o.verbs_async_endpoints < 0 || o.verbs_async_endpoints > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbs_async_endpoints must be in 0..4096, got ", o.verbs_async_endpoints));
  }
  if (o.verbs_async_credits < 1 || o.verbs_async_credits > 255) {
    return absl::InvalidArgumentError(
        absl::StrCat("verbs_async_credits must be in 1..255, got ", o.verbs_async_credits));
  }
  if (o.verbs_max_endpoints < 1 || o.verbs_max_endpoints > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("verbs_max_endpoints must be in 1..4096, got ", o.verbs_max_endpoints));
  }
  if (o.tcp_connections < 1 || o.tcp_connections > 64) {
    return absl::InvalidArgumentError(absl::StrCat("tcp_connections must be in 1..64, got ", o.tcp_connections));
  }
  if (o.verbs_spin < absl::ZeroDuration() || o.verbs_retry < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("verbs_spin and verbs_retry must not be negative");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace client_internal

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const ConnectionOptions& options) {
  using namespace client_internal;
  BASALT_RETURN_IF_ERROR(WithContext(ValidateOptions(options), "Connection::Open"));
  // gRPC notices the outcome of a reconnect attempt made while no call polls the channel only
  // on its backup poller, every 5 s by default: after a server restart every call kept failing
  // for 5–10 s (seen in the restart integration test). Poll every 100 ms instead. gRPC reads
  // this when it initialises, so it takes effect when no gRPC object exists yet (the usual
  // case: the first Connection of a process); an explicit setting in the environment wins.
  ::setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "100", /*overwrite=*/0);
  SelectorOptions so;
  so.grpc_channels = options.channels;
  absl::StatusOr<ChannelSecurity> security = MakeChannelSecurity(options.security);
  if (!security.ok()) return WithContext(security.status(), "Connection::Open");
  so.security = *std::move(security);
  if (options.transport == TransportChoice::kAuto || options.transport == TransportChoice::kVerbs) {
    verbs::VerbsPathOptions vo;
    vo.client.max_endpoints = options.verbs_max_endpoints;
    vo.client.max_async_endpoints = options.verbs_async_endpoints;
    vo.client.async_credits = options.verbs_async_credits;
    vo.client.spin = options.verbs_spin;
    vo.client.connect_timeout = std::min(options.timeout, absl::Seconds(5));
    vo.retry = options.verbs_retry;
    vo.required = options.transport == TransportChoice::kVerbs;
    so.verbs_factory = verbs::MakeVerbsPathFactory(vo);
  }
  if (options.transport == TransportChoice::kAuto || options.transport == TransportChoice::kTcp) {
    tcp::TcpPathOptions to;
    to.client.connections = options.tcp_connections;
    if (!options.security.tls_ca.empty()) {
      // The TCP path is TLS where gRPC is: the same CA, client certificate and server name.
      const ClientSecurity& sec = options.security;
      absl::StatusOr<std::shared_ptr<TlsContext>> tls = TlsContext::Client(sec.tls_ca, sec.tls_cert, sec.tls_key);
      if (!tls.ok()) return WithContext(tls.status(), "Connection::Open: the TCP path's TLS");
      to.client.tls = *std::move(tls);
      to.client.tls_server_name = sec.tls_server_name;
    }
    to.client.connect_timeout = std::min(options.timeout, absl::Seconds(5));
    to.retry = options.verbs_retry;
    to.required = options.transport == TransportChoice::kTcp;
    so.tcp_factory = tcp::MakeTcpPathFactory(to);
  }
  // A cluster: ZooKeeper names the server holding meta.
  std::string server = options.address;
  std::unique_ptr<ZooKeeper> zk;
  if (!options.zookeeper_quorum.empty()) {
    ZooKeeper::Options zo;
    zo.quorum = options.zookeeper_quorum;
    zo.session_timeout = absl::Seconds(10);
    zo.connect_timeout = options.timeout;
    absl::StatusOr<std::unique_ptr<ZooKeeper>> connected = ZooKeeper::Connect(zo);
    if (!connected.ok()) return WithContext(connected.status(), "Connection::Open");
    zk = *std::move(connected);
    absl::StatusOr<std::string> meta = MetaServerFromZooKeeper(zk.get(), options.zookeeper_znode_parent);
    if (!meta.ok()) return WithContext(meta.status(), "Connection::Open");
    server = *std::move(meta);
  }
  // A standalone server's paths open now (so a required verbs path that cannot be had fails
  // here); a cluster's open with their first call, and the master, which serves no Get or Put of
  // a user table, is never asked for verbs.
  std::vector<std::string> open_now;
  if (zk == nullptr) open_now.push_back(server);
  absl::StatusOr<std::unique_ptr<NetworkSelector>> selector = NewNetworkSelector(so, open_now);
  if (!selector.ok()) return WithContext(selector.status(), absl::StrCat("Connection::Open ", server));
  return std::unique_ptr<Connection>(std::make_unique<ConnectionImpl>(
      std::make_unique<Core>(options, std::move(*selector), std::move(server), std::move(zk))));
}

}  // namespace basalt
