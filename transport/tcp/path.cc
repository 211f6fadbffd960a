#include "transport/tcp/path.h"

#include <memory>
#include <string>

#include "transport/fast_path.h"
#include "transport/grpc/path.h"
#include "transport/verbs/frame.h"

namespace basalt::tcp {
namespace {

// The host of a gRPC target "host:port" / "[v6]:port", dialled when the server's session names
// a wildcard address.
std::string HostOf(const std::string& target) {
  if (!target.empty() && target[0] == '[') {
    const size_t end = target.find(']');
    return end == std::string::npos ? target : target.substr(1, end - 1);
  }
  const size_t colon = target.rfind(':');
  return colon == std::string::npos ? target : target.substr(0, colon);
}

class TcpPath final : public FastPath<TcpClient> {
 public:
  TcpPath(std::string server, GrpcPath* grpc, const TcpPathOptions& options)
      : FastPath(std::move(server), grpc, options.retry, options.async_threads), options_(options) {}

  PathKind kind() const override { return PathKind::kTcp; }

  absl::StatusOr<std::unique_ptr<TcpClient>> OpenClient() override {
    GrpcPath* grpc = grpc_;
    const absl::Duration timeout = options_.client.connect_timeout;
    return TcpClient::Open([grpc, timeout] { return verbs::FetchSession(grpc, timeout, rpc::FAST_PATH_TCP); },
                           HostOf(server_), options_.client);
  }

  absl::Status Get(const rpc::GetRequest& req, absl::Time deadline, rpc::GetResponse* resp) override {
    return Run([&](uint64_t id, absl::Span<uint8_t> out) { return verbs::EncodeGetRequest(id, req, out); },
               [&](uint64_t id, absl::Span<const uint8_t> reply, bool* too_large) {
                 return verbs::DecodeGetReply(reply, id, resp, too_large);
               },
               [&] {
                 resp->Clear();
                 return grpc_->Get(req, deadline, resp);
               },
               deadline);
  }

  absl::Status Mutate(const rpc::MutateRequest& req, absl::Time deadline) override {
    return Run([&](uint64_t id, absl::Span<uint8_t> out) { return verbs::EncodeMutateRequest(id, req, out); },
               [&](uint64_t id, absl::Span<const uint8_t> reply, bool* too_large) {
                 return verbs::DecodeMutateReply(reply, id, too_large);
               },
               [&] { return grpc_->Mutate(req, deadline); }, deadline);
  }

  void GetAsync(const rpc::GetRequest* req, absl::Time deadline, rpc::GetResponse* resp, PathCallback done) override {
    StartAsync([req](uint64_t id, absl::Span<uint8_t> out) { return verbs::EncodeGetRequest(id, *req, out); },
               [resp](uint64_t id, absl::Span<const uint8_t> reply, bool* too_large) {
                 return verbs::DecodeGetReply(reply, id, resp, too_large);
               },
               [this, req, deadline, resp](PathCallback d) {
                 resp->Clear();
                 grpc_->GetAsync(req, deadline, resp, std::move(d));
               },
               [=, this] { return Get(*req, deadline, resp); }, deadline, std::move(done));
  }

  void MutateAsync(const rpc::MutateRequest* req, absl::Time deadline, rpc::MutateResponse* resp,
                   PathCallback done) override {
    StartAsync([req](uint64_t id, absl::Span<uint8_t> out) { return verbs::EncodeMutateRequest(id, *req, out); },
               [](uint64_t id, absl::Span<const uint8_t> reply, bool* too_large) {
                 return verbs::DecodeMutateReply(reply, id, too_large);
               },
               [this, req, deadline, resp](PathCallback d) { grpc_->MutateAsync(req, deadline, resp, std::move(d)); },
               [=, this] { return Mutate(*req, deadline); }, deadline, std::move(done));
  }

  void AddStats(TransportStats* out) const override {
    AddCounters(out, &out->tcp_calls, &out->tcp_state);
    if (TcpClient* c = Opened(); c != nullptr) {
      const TcpClientStats s = c->stats();
      out->tcp_connects += s.connects;
      out->tcp_connections_open += s.connections_open;
      out->tcp_failures += s.failures;
      out->tcp_sessions += s.sessions;
    }
  }

 private:
  template <class Encode, class Decode, class Grpc>
  absl::Status Run(Encode encode, Decode decode, Grpc grpc_call, absl::Time deadline) {
    TcpClient* c = TcpClient::OnReaderThread() ? nullptr : Usable();
    if (c == nullptr) {
      CountFallback();
      return grpc_call();
    }
    bool too_large = false, failed = false, oversized = false;
    const absl::Status st =
        c->Call(encode, [&](uint64_t id, absl::Span<const uint8_t> reply) { return decode(id, reply, &too_large); },
                deadline, &failed, &oversized);
    if (!Answered(st, oversized || too_large, failed)) return grpc_call();
    return st;
  }

  // One async call; its Done runs on the connection's reader thread.
  template <class EncodeFn, class DecodeFn, class GrpcAsync>
  class Call final : public TcpCall {
   public:
    Call(TcpPath* path, EncodeFn encode, DecodeFn decode, GrpcAsync grpc_call, PathCallback done)
        : path_(path), encode_(std::move(encode)), decode_(std::move(decode)), grpc_call_(std::move(grpc_call)),
          done_(std::move(done)) {}
    absl::StatusOr<size_t> Encode(uint64_t id, absl::Span<uint8_t> out) override {
      absl::StatusOr<size_t> n = encode_(id, out);
      oversized_ = !n.ok() && n.status().code() == absl::StatusCode::kResourceExhausted;
      return n;
    }
    void Done(uint64_t id, absl::Span<const uint8_t> reply, absl::Status status, bool transport_failed) override {
      bool too_large = false;
      if (status.ok()) status = decode_(id, reply, &too_large);
      if (!path_->Answered(status, oversized_ || too_large, transport_failed)) return grpc_call_(std::move(done_));
      done_(std::move(status));
    }

   private:
    TcpPath* const path_;
    EncodeFn encode_;
    DecodeFn decode_;
    GrpcAsync grpc_call_;
    PathCallback done_;
    bool oversized_ = false;
  };

  // An async call: on TCP when the client is open and up; over gRPC while the path is down; as
  // a sync call on the small pool before the client was ever opened (which opens it), or when
  // made from a reader thread.
  template <class EncodeFn, class DecodeFn, class GrpcAsync, class Sync>
  void StartAsync(EncodeFn encode, DecodeFn decode, GrpcAsync grpc_call, Sync sync_call, absl::Time deadline,
                  PathCallback done) {
    if (Down()) {
      CountFallback();
      return grpc_call(std::move(done));
    }
    // From a reader thread (an async call's callback) the call runs on the pool: a reader that
    // became its connection's sender could block in send while no one reads the replies.
    TcpClient* c = Opened();
    if (c == nullptr || TcpClient::OnReaderThread()) return RunSync(std::move(sync_call), std::move(done));
    auto call = std::make_unique<Call<EncodeFn, DecodeFn, GrpcAsync>>(this, std::move(encode), std::move(decode),
                                                                      std::move(grpc_call), std::move(done));
    call->deadline = deadline;
    c->CallAsync(std::move(call));
  }

  const TcpPathOptions options_;
};

}  // namespace

FastPathFactory MakeTcpPathFactory(const TcpPathOptions& options) {
  return MakeFastPathFactory<TcpPath>(options);
}

}  // namespace basalt::tcp
