// The gRPC path to one server: Get and Mutate as unary calls (sync and callback API) over one
// or more channels, and the stubs for everything no DataPath carries (scans, batches, admin).
//
// Thread-safety: safe to use from many threads.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/basalt.grpc.pb.h"
#include "transport/grpc/grpc_settings.h"
#include "transport/path.h"

namespace basalt {

// gRPC to one server over `channels` channels (separate TCP connections), calls spread
// round-robin. Also hands out stubs for the operations no DataPath carries.
class GrpcPath final : public DataPath {
 public:
  // Dials lazily (the first call connects).
  static std::unique_ptr<GrpcPath> Open(const std::string& target, int channels,
                                        const ChannelSecurity& security = {});

  PathKind kind() const override { return PathKind::kGrpc; }
  absl::Status Get(const rpc::GetRequest& req, absl::Time deadline, rpc::GetResponse* resp) override;
  absl::Status Mutate(const rpc::MutateRequest& req, absl::Time deadline) override;
  void GetAsync(const rpc::GetRequest* req, absl::Time deadline, rpc::GetResponse* resp,
                PathCallback done) override;
  void MutateAsync(const rpc::MutateRequest* req, absl::Time deadline, rpc::MutateResponse* resp,
                   PathCallback done) override;

  // The next channel's stubs (round-robin).
  rpc::Basalt::Stub* data_stub();
  rpc::Admin::Stub* admin_stub();
  rpc::Echo::Stub* echo_stub();
  const std::string& target() const { return target_; }

 private:
  struct Channel {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<rpc::Basalt::Stub> data;
    std::unique_ptr<rpc::Admin::Stub> admin;
    std::unique_ptr<rpc::Echo::Stub> echo;
  };
  GrpcPath() = default;
  Channel& Next();

  std::string target_;
  std::vector<Channel> channels_;
  std::atomic<uint32_t> next_{0};
};

// Sets a context's deadline from an absl::Time (InfiniteFuture: none).
void SetDeadline(grpc::ClientContext* ctx, absl::Time deadline);

// Starts a gRPC callback-API call: start(ctx, on_done) issues it; `done` gets its status.
// The context lives until the call completes.
void GrpcAsync(absl::Time deadline,
               const std::function<void(grpc::ClientContext* ctx, std::function<void(grpc::Status)> on_done)>& start,
               PathCallback done);

}  // namespace basalt
