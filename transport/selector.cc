#include "transport/selector.h"

#include <chrono>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt {

const char* PathKindName(PathKind k) {
  switch (k) {
    case PathKind::kGrpc: return "grpc";
    case PathKind::kVerbs: return "verbs";
  }
  return "?";
}

void SetDeadline(grpc::ClientContext* ctx, absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return;
  ctx->set_deadline(absl::ToChronoTime(deadline));
}

// ---------------------------------------------------------------------------------------------
// GrpcPath

std::unique_ptr<GrpcPath> GrpcPath::Open(const std::string& target, int channels) {
  std::unique_ptr<GrpcPath> path(new GrpcPath());
  path->target_ = target;
  if (channels < 1) channels = 1;
  path->channels_.resize(channels);
  for (int i = 0; i < channels; i++) {
    Channel& c = path->channels_[i];
    c.channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), ClientChannelArguments(i));
    c.data = rpc::Basalt::NewStub(c.channel);
    c.admin = rpc::Admin::NewStub(c.channel);
    c.echo = rpc::Echo::NewStub(c.channel);
  }
  return path;
}

GrpcPath::Channel& GrpcPath::Next() {
  if (channels_.size() == 1) return channels_[0];
  return channels_[next_.fetch_add(1, std::memory_order_relaxed) % channels_.size()];
}

rpc::Basalt::Stub* GrpcPath::data_stub() { return Next().data.get(); }
rpc::Admin::Stub* GrpcPath::admin_stub() { return Next().admin.get(); }
rpc::Echo::Stub* GrpcPath::echo_stub() { return Next().echo.get(); }

absl::Status GrpcPath::Get(const rpc::GetRequest& req, absl::Time deadline, rpc::GetResponse* resp) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  return FromGrpcStatus(data_stub()->Get(&ctx, req, resp));
}

absl::Status GrpcPath::Mutate(const rpc::MutateRequest& req, absl::Time deadline) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  rpc::MutateResponse resp;
  return FromGrpcStatus(data_stub()->Mutate(&ctx, req, &resp));
}

namespace {
// The context of one callback-API call; deleted when the call completes.
struct AsyncCall {
  grpc::ClientContext ctx;
  PathCallback done;
};
}  // namespace

void GrpcPath::GetAsync(const rpc::GetRequest* req, absl::Time deadline, rpc::GetResponse* resp,
                        PathCallback done) {
  auto* call = new AsyncCall{.ctx = {}, .done = std::move(done)};
  SetDeadline(&call->ctx, deadline);
  data_stub()->async()->Get(&call->ctx, req, resp, [call](grpc::Status s) {
    PathCallback done = std::move(call->done);
    delete call;
    done(FromGrpcStatus(s));
  });
}

void GrpcPath::MutateAsync(const rpc::MutateRequest* req, absl::Time deadline, rpc::MutateResponse* resp,
                           PathCallback done) {
  auto* call = new AsyncCall{.ctx = {}, .done = std::move(done)};
  SetDeadline(&call->ctx, deadline);
  data_stub()->async()->Mutate(&call->ctx, req, resp, [call](grpc::Status s) {
    PathCallback done = std::move(call->done);
    delete call;
    done(FromGrpcStatus(s));
  });
}

// ---------------------------------------------------------------------------------------------
// The selector

namespace {

absl::Status NoVerbsFactory() {
  return absl::FailedPreconditionError("verbs transport requested but no verbs path factory was given");
}

class DefaultSelector final : public NetworkSelector {
 public:
  explicit DefaultSelector(const SelectorOptions& options) : options_(options) {}

  absl::Status AddServer(const std::string& server) {
    auto paths = std::make_unique<ServerPaths>();
    paths->grpc = GrpcPath::Open(server, options_.grpc_channels);
    if (options_.policy != PathPolicy::kGrpcOnly) {
      if (!options_.verbs_factory) {
        if (options_.policy == PathPolicy::kVerbsOnly) return NoVerbsFactory();
      } else {
        absl::StatusOr<std::unique_ptr<DataPath>> verbs = options_.verbs_factory(server, paths->grpc.get());
        if (verbs.ok()) {
          paths->verbs = std::move(*verbs);
        } else {
          paths->verbs_off = std::string(verbs.status().message());
        }
        if (!verbs.ok() && options_.policy == PathPolicy::kVerbsOnly) {
          return absl::Status(verbs.status().code(),
                              absl::StrCat("verbs path to ", server, ": ", verbs.status().message()));
        }
      }
    }
    servers_.emplace(server, std::move(paths));
    return absl::OkStatus();
  }

  absl::StatusOr<DataPath*> Select(OpKind op, const std::string& server) override {
    ServerPaths* p = Lookup(server);
    if (p == nullptr) return UnknownServer(server);
    if (op != OpKind::kOther && p->verbs != nullptr) {
      if (options_.policy == PathPolicy::kVerbsOnly ||
          NowNanos() >= p->verbs_down_until_ns.load(std::memory_order_relaxed)) {
        return p->verbs.get();
      }
    }
    return p->grpc.get();
  }

  absl::StatusOr<TransportStats> Stats(const std::string& server) override {
    ServerPaths* p = Lookup(server);
    if (p == nullptr) return UnknownServer(server);
    TransportStats s;
    if (p->verbs != nullptr) {
      p->verbs->AddStats(&s);
    } else if (!p->verbs_off.empty()) {
      s.verbs_state = "off: " + p->verbs_off;
    }
    return s;
  }

  absl::StatusOr<GrpcPath*> Grpc(const std::string& server) override {
    ServerPaths* p = Lookup(server);
    if (p == nullptr) return UnknownServer(server);
    return p->grpc.get();
  }

  void ReportFailure(const std::string& server, const DataPath* path, const absl::Status& status) override {
    if (path == nullptr || path->kind() != PathKind::kVerbs || status.code() != absl::StatusCode::kUnavailable) {
      return;
    }
    ServerPaths* p = Lookup(server);
    if (p == nullptr) return;
    p->verbs_down_until_ns.store(NowNanos() + absl::ToInt64Nanoseconds(options_.verbs_retry),
                                          std::memory_order_relaxed);
  }

 private:
  struct ServerPaths {
    std::unique_ptr<GrpcPath> grpc;
    std::unique_ptr<DataPath> verbs;  // null: gRPC only
    std::string verbs_off;            // why there is no verbs path
    std::atomic<int64_t> verbs_down_until_ns{0};
  };

  ServerPaths* Lookup(const std::string& server) {
    auto it = servers_.find(server);
    return it == servers_.end() ? nullptr : it->second.get();
  }
  static absl::Status UnknownServer(const std::string& server) {
    return absl::NotFoundError(absl::StrCat("network selector: unknown server ", server));
  }

  static int64_t NowNanos() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  const SelectorOptions options_;
  std::map<std::string, std::unique_ptr<ServerPaths>, std::less<>> servers_;  // fixed after creation
};

}  // namespace

absl::StatusOr<std::unique_ptr<NetworkSelector>> NewNetworkSelector(const SelectorOptions& options,
                                                                    const std::vector<std::string>& servers) {
  auto selector = std::make_unique<DefaultSelector>(options);
  for (const std::string& s : servers) {
    absl::Status st = selector->AddServer(s);
    if (!st.ok()) return st;
  }
  return std::unique_ptr<NetworkSelector>(std::move(selector));
}

}  // namespace basalt
