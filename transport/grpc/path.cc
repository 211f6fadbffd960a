#include "transport/grpc/path.h"

#include <functional>
#include <utility>

#include "transport/grpc/grpc_settings.h"

namespace basalt {

const char* PathKindName(PathKind k) {
  switch (k) {
    case PathKind::kGrpc: return "grpc";
    case PathKind::kVerbs: return "verbs";
    case PathKind::kTcp: return "tcp";
  }
  return "?";
}

void SetDeadline(grpc::ClientContext* ctx, absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return;
  ctx->set_deadline(absl::ToChronoTime(deadline));
}

std::unique_ptr<GrpcPath> GrpcPath::Open(const std::string& target, int channels, const ChannelSecurity& security) {
  std::unique_ptr<GrpcPath> path(new GrpcPath());
  path->target_ = target;
  if (channels < 1) channels = 1;
  path->channels_.resize(channels);
  for (int i = 0; i < channels; i++) {
    Channel& c = path->channels_[i];
    c.channel = CreateBasaltChannel(target, security, i);
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

void GrpcAsync(absl::Time deadline,
               const std::function<void(grpc::ClientContext* ctx, std::function<void(grpc::Status)> on_done)>& start,
               PathCallback done) {
  struct Call {
    grpc::ClientContext ctx;
    PathCallback done;
  };
  auto* call = new Call{.ctx = {}, .done = std::move(done)};
  SetDeadline(&call->ctx, deadline);
  start(&call->ctx, [call](grpc::Status s) {
    PathCallback done = std::move(call->done);
    delete call;
    done(FromGrpcStatus(s));
  });
}

void GrpcPath::GetAsync(const rpc::GetRequest* req, absl::Time deadline, rpc::GetResponse* resp,
                        PathCallback done) {
  rpc::Basalt::Stub* stub = data_stub();
  GrpcAsync(
      deadline,
      [&](grpc::ClientContext* ctx, std::function<void(grpc::Status)> on_done) {
        stub->async()->Get(ctx, req, resp, std::move(on_done));
      },
      std::move(done));
}

void GrpcPath::MutateAsync(const rpc::MutateRequest* req, absl::Time deadline, rpc::MutateResponse* resp,
                           PathCallback done) {
  rpc::Basalt::Stub* stub = data_stub();
  GrpcAsync(
      deadline,
      [&](grpc::ClientContext* ctx, std::function<void(grpc::Status)> on_done) {
        stub->async()->Mutate(ctx, req, resp, std::move(on_done));
      },
      std::move(done));
}

}  // namespace basalt
