#include "transport/verbs/path.h"

#include <algorithm>

#include "transport/fast_path.h"
#include "transport/verbs/frame.h"

namespace basalt::verbs {
namespace {

class VerbsPath final : public FastPath<VerbsClient> {
 public:
  VerbsPath(std::string server, GrpcPath* grpc, const VerbsPathOptions& options)
      : FastPath(std::move(server), grpc, options.retry, options.async_threads), options_(options) {}

  PathKind kind() const override { return PathKind::kVerbs; }

  absl::StatusOr<std::unique_ptr<VerbsClient>> OpenClient() override {
    GrpcPath* grpc = grpc_;
    const absl::Duration timeout = options_.client.connect_timeout;
    return VerbsClient::Open([grpc, timeout] { return FetchSession(grpc, timeout, rpc::FAST_PATH_VERBS); },
                             options_.client);
  }

  absl::Status Get(const rpc::GetRequest& req, absl::Time deadline, rpc::GetResponse* resp) override {
    return Run(
        [&](uint64_t id, absl::Span<uint8_t> out, const RemoteBuffer* reply_buffer) {
          return EncodeGetRequest(id, req, out, reply_buffer);
        },
        [&](uint64_t id, absl::Span<const uint8_t> reply, bool* too_large) {
          return DecodeGetReply(reply, id, resp, too_large);
        },
        [&] {
          resp->Clear();
          return grpc_->Get(req, deadline, resp);
        },
        deadline, /*get=*/true);
  }

  absl::Status Mutate(const rpc::MutateRequest& req, absl::Time deadline) override {
    return Run([&](uint64_t id, absl::Span<uint8_t> out, const RemoteBuffer*) {
                 return EncodeMutateRequest(id, req, out);
               },
               [&](uint64_t id, absl::Span<const uint8_t> reply, bool* too_large) {
                 return DecodeMutateReply(reply, id, too_large);
               },
               [&] { return grpc_->Mutate(req, deadline); }, deadline, /*get=*/false);
  }

  // Async calls go out on the client's async endpoints and finish on its poller. Before the
  // client was ever opened they run as a sync call on the small pool (which opens it); so do
  // those too large for a verbs message, where the server takes rendezvous (the sync call
  // does it).
  void GetAsync(const rpc::GetRequest* req, absl::Time deadline, rpc::GetResponse* resp, PathCallback done) override {
    auto grpc_call = [this, req, deadline, resp](PathCallback d) {
      resp->Clear();
      grpc_->GetAsync(req, deadline, resp, std::move(d));
    };
    auto sync_call = [=, this] { return Get(*req, deadline, resp); };
    if (!AsyncReady()) return StartWithoutClient(std::move(grpc_call), std::move(done), std::move(sync_call));
    StartAsync(
        [req](uint64_t id, absl::Span<uint8_t> out) { return EncodeGetRequest(id, *req, out); },
        [resp](uint64_t id, absl::Span<const uint8_t> reply, bool* too_large) {
          return DecodeGetReply(reply, id, resp, too_large);
        },
        std::move(grpc_call), std::move(sync_call), deadline, std::move(done));
  }

  void MutateAsync(const rpc::MutateRequest* req, absl::Time deadline, rpc::MutateResponse* resp,
                   PathCallback done) override {
    auto grpc_call = [this, req, deadline, resp](PathCallback d) {
      grpc_->MutateAsync(req, deadline, resp, std::move(d));
    };
    auto sync_call = [=, this] { return Mutate(*req, deadline); };
    if (!AsyncReady()) return StartWithoutClient(std::move(grpc_call), std::move(done), std::move(sync_call));
    StartAsync([req](uint64_t id, absl::Span<uint8_t> out) { return EncodeMutateRequest(id, *req, out); },
               [](uint64_t id, absl::Span<const uint8_t> reply, bool* too_large) {
                 return DecodeMutateReply(reply, id, too_large);
               },
               std::move(grpc_call), std::move(sync_call), deadline, std::move(done));
  }

  void AddStats(TransportStats* out) const override {
    AddCounters(out, &out->verbs_calls, &out->verbs_state);
    VerbsClient* c = Opened();
    if (c != nullptr) {
      VerbsClientStats s = c->stats();
      out->verbs_async_calls += s.async_calls;
      out->verbs_async_queued += s.async_queued;
      out->verbs_async_peak_per_endpoint = std::max(out->verbs_async_peak_per_endpoint, s.async_peak_per_endpoint);
      out->verbs_failures += s.failures;
      out->endpoints_created += s.endpoints_created;
      out->endpoints_open += s.endpoints_open;
      out->endpoint_waits += s.endpoint_waits;
      out->sessions += s.sessions;
    }
  }

 private:
  // A sync call over verbs; a Get's may carry a reply buffer (VerbsClient::CallWithReplyBuffer).
  template <class Encode, class Decode, class Grpc>
  absl::Status Run(Encode encode, Decode decode, Grpc grpc_call, absl::Time deadline, bool get) {
    VerbsClient* c = Usable();
    if (c == nullptr) {
      CountFallback();
      return grpc_call();
    }
    bool oversized = false;
    bool too_large = false;
    bool failed = false;
    // Whether the request is too large for verbs is the client's to say: it may still go by
    // rendezvous after the encoder found it too large for a message.
    auto decoder = [&](uint64_t id, absl::Span<const uint8_t> reply) { return decode(id, reply, &too_large); };
    const absl::Status st =
        get ? c->CallWithReplyBuffer(encode, decoder, deadline, &failed, &oversized)
            : c->Call([&](uint64_t id, absl::Span<uint8_t> out) { return encode(id, out, nullptr); }, decoder,
                      deadline, &failed, &oversized);
    if (!Answered(st, oversized || too_large, failed)) return grpc_call();
    return st;
  }

  // Whether the client is open and up, for an async call (which must not open it: that blocks).
  // Not from a callback on the poller either: one that waits for another async call (a Get of
  // many rows) would wait for the thread it blocks; that call runs sync on the small pool.
  bool AsyncReady() const {
    return options_.client.max_async_endpoints > 0 && !Down() && Opened() != nullptr && !VerbsClient::OnAsyncPoller();
  }

  // An async call while the client is down goes to gRPC; otherwise (never opened yet, no async
  // endpoints, or on the poller) as a sync call on the small pool, which opens the client.
  template <class GrpcAsync, class Sync>
  void StartWithoutClient(GrpcAsync grpc_call, PathCallback done, Sync sync_call) {
    if (Down()) {
      CountFallback();
      return grpc_call(std::move(done));
    }
    RunSync(std::move(sync_call), std::move(done));
  }

  // Whether the server takes rendezvous (a sync call may then carry what a message cannot).
  bool TakesRendezvous() const {
    VerbsClient* c = Opened();
    return c != nullptr && c->rendezvous_max() > 0;
  }

  // One async call on the client's async endpoints; its Done runs on the client's poller.
  template <class EncodeFn, class DecodeFn, class GrpcAsync, class Sync>
  class Call final : public AsyncCall {
   public:
    Call(VerbsPath* path, EncodeFn encode, DecodeFn decode, GrpcAsync grpc_call, Sync sync_call, PathCallback done)
        : path_(path),
          encode_(std::move(encode)),
          decode_(std::move(decode)),
          grpc_call_(std::move(grpc_call)),
          sync_call_(std::move(sync_call)),
          done_(std::move(done)) {}
    absl::StatusOr<size_t> Encode(uint64_t id, absl::Span<uint8_t> out) override {
      absl::StatusOr<size_t> n = encode_(id, out);
      oversized_ = !n.ok() && n.status().code() == absl::StatusCode::kResourceExhausted;
      return n;
    }
    absl::Status Decode(uint64_t id, absl::Span<const uint8_t> reply) override {
      return decode_(id, reply, &too_large_);
    }
    void Done(absl::Status status, bool transport_failed) override {
      // Too large for a message (the request, or a Get's reply): by rendezvous, as a sync call
      // off the poller, which counts it itself.
      if ((oversized_ || too_large_) && !transport_failed && path_->TakesRendezvous()) {
        return path_->RunSync(std::move(sync_call_), std::move(done_));
      }
      if (!path_->Answered(status, oversized_ || too_large_, transport_failed)) return grpc_call_(std::move(done_));
      done_(std::move(status));
    }

   private:
    VerbsPath* const path_;
    EncodeFn encode_;
    DecodeFn decode_;
    GrpcAsync grpc_call_;
    Sync sync_call_;
    PathCallback done_;
    bool oversized_ = false;
    bool too_large_ = false;
  };

  template <class EncodeFn, class DecodeFn, class GrpcAsync, class Sync>
  void StartAsync(EncodeFn encode, DecodeFn decode, GrpcAsync grpc_call, Sync sync_call, absl::Time deadline,
                  PathCallback done) {
    auto call = std::make_unique<Call<EncodeFn, DecodeFn, GrpcAsync, Sync>>(
        this, std::move(encode), std::move(decode), std::move(grpc_call), std::move(sync_call), std::move(done));
    call->deadline = deadline;
    Opened()->CallAsync(std::move(call));
  }

  const VerbsPathOptions options_;
};

}  // namespace

FastPathFactory MakeVerbsPathFactory(const VerbsPathOptions& options) {
  return MakeFastPathFactory<VerbsPath>(options);
}

}  // namespace basalt::verbs
