#include "transport/verbs/path.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "transport/grpc/grpc_settings.h"
#include "transport/verbs/frame.h"

namespace basalt::verbs {
namespace {

// A few threads for the async calls (started on first use).
class AsyncRunner {
 public:
  explicit AsyncRunner(int threads) : want_(std::max(1, threads)) {}
  ~AsyncRunner() {
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
    }
    for (auto& t : threads_) t.join();
  }
  void Run(std::function<void()> task) {
    absl::MutexLock l(&mu_);
    if (threads_.empty()) {
      for (int i = 0; i < want_; ++i) threads_.emplace_back([this] { Loop(); });
    }
    tasks_.push_back(std::move(task));
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock l(&mu_);
        mu_.Await(absl::Condition(
            +[](AsyncRunner* r) ABSL_NO_THREAD_SAFETY_ANALYSIS { return r->stop_ || !r->tasks_.empty(); }, this));
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  const int want_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

int64_t NowNanos() { return absl::GetCurrentTimeNanos(); }

class VerbsPath final : public DataPath {
 public:
  VerbsPath(std::string server, GrpcPath* grpc, const VerbsPathOptions& options)
      : server_(std::move(server)), grpc_(grpc), options_(options), async_(options.async_threads) {}

  PathKind kind() const override { return PathKind::kVerbs; }

  // Opens the client now (the factory's first try).
  absl::Status OpenNow() {
    absl::StatusOr<std::unique_ptr<VerbsClient>> c = VerbsClient::Open(SessionSource(), options_.client);
    if (!c.ok()) return c.status();
    absl::MutexLock l(&mu_);
    client_ = std::move(*c);
    ready_.store(client_.get(), std::memory_order_release);
    return absl::OkStatus();
  }

  void MarkDown(const absl::Status& why) {
    down_until_ns_.store(NowNanos() + absl::ToInt64Nanoseconds(options_.retry), std::memory_order_relaxed);
    absl::MutexLock l(&mu_);
    last_error_ = std::string(why.message());
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
    out->verbs_calls += verbs_calls_.load(std::memory_order_relaxed);
    out->grpc_fallbacks += fallbacks_.load(std::memory_order_relaxed);
    out->oversized += oversized_.load(std::memory_order_relaxed);
    VerbsClient* c = ready_.load(std::memory_order_acquire);
    {
      absl::MutexLock l(&mu_);
      if (NowNanos() < down_until_ns_.load(std::memory_order_relaxed) || c == nullptr) {
        out->verbs_state = absl::StrCat("down: ", last_error_);
      } else {
        out->verbs_state = "up";
      }
    }
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
  VerbsClient::SessionSource SessionSource() {
    GrpcPath* grpc = grpc_;
    absl::Duration timeout = options_.client.connect_timeout;
    return [grpc, timeout]() -> absl::StatusOr<VerbsSession> {
      grpc::ClientContext ctx;
      SetDeadline(&ctx, absl::Now() + timeout);
      rpc::VerbsSessionRequest req;
      req.set_frame_version(kFrameVersion);
      rpc::VerbsSessionResponse resp;
      absl::Status st = FromGrpcStatus(grpc->data_stub()->OpenVerbsSession(&ctx, req, &resp));
      if (!st.ok()) return absl::Status(st.code(), absl::StrCat("OpenVerbsSession: ", st.message()));
      if (resp.frame_version() != kFrameVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("server speaks verbs frame version ", resp.frame_version(), ", this client ", kFrameVersion));
      }
      return SessionFromProto(resp);
    };
  }

  // The client when verbs is up; nullptr while it is down or being opened. Once opened the
  // client stays for the path's life, so a call reads it without a lock.
  VerbsClient* Usable() {
    if (NowNanos() < down_until_ns_.load(std::memory_order_relaxed)) return nullptr;
    if (VerbsClient* c = ready_.load(std::memory_order_acquire); c != nullptr) return c;
    {
      absl::MutexLock l(&mu_);
      if (opening_) return nullptr;
      opening_ = true;
    }
    absl::Status st = OpenNow();
    {
      absl::MutexLock l(&mu_);
      opening_ = false;
    }
    if (!st.ok()) {
      MarkDown(st);
      return nullptr;
    }
    return ready_.load(std::memory_order_acquire);
  }

  // A sync call over verbs; a Get's may carry a reply buffer (VerbsClient::CallWithReplyBuffer).
  template <class Encode, class Decode, class Grpc>
  absl::Status Run(Encode encode, Decode decode, Grpc grpc_call, absl::Time deadline, bool get) {
    VerbsClient* c = Usable();
    if (c == nullptr) {
      fallbacks_.fetch_add(1, std::memory_order_relaxed);
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

  // Whether verbs answered the call; otherwise (too large for a verbs message, or a transport
  // failure, which marks the path down) it goes to gRPC. Counts either.
  bool Answered(const absl::Status& st, bool oversized, bool failed) {
    if (oversized) {
      oversized_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (failed) {
      MarkDown(st);
      fallbacks_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    verbs_calls_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // Whether the client is open and up, for an async call (which must not open it: that blocks).
  // Not from a callback on the poller either: one that waits for another async call (a Get of
  // many rows) would wait for the thread it blocks; that call runs sync on the small pool.
  bool AsyncReady() const {
    return options_.client.max_async_endpoints > 0 && NowNanos() >= down_until_ns_.load(std::memory_order_relaxed) &&
           ready_.load(std::memory_order_acquire) != nullptr && !VerbsClient::OnAsyncPoller();
  }

  // An async call while the client is down goes to gRPC; otherwise (never opened yet, no async
  // endpoints, or on the poller) as a sync call on the small pool, which opens the client.
  template <class GrpcAsync, class Sync>
  void StartWithoutClient(GrpcAsync grpc_call, PathCallback done, Sync sync_call) {
    if (NowNanos() < down_until_ns_.load(std::memory_order_relaxed)) {
      fallbacks_.fetch_add(1, std::memory_order_relaxed);
      return grpc_call(std::move(done));
    }
    RunSync(std::move(sync_call), std::move(done));
  }

  template <class Sync>
  void RunSync(Sync sync_call, PathCallback done) {
    async_.Run([sync_call = std::move(sync_call), done = std::move(done)] { done(sync_call()); });
  }

  // Whether the server takes rendezvous (a sync call may then carry what a message cannot).
  bool TakesRendezvous() const {
    VerbsClient* c = ready_.load(std::memory_order_acquire);
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
    ready_.load(std::memory_order_acquire)->CallAsync(std::move(call));
  }

  const std::string server_;
  GrpcPath* const grpc_;
  const VerbsPathOptions options_;

  mutable absl::Mutex mu_;
  std::unique_ptr<VerbsClient> client_ ABSL_GUARDED_BY(mu_);  // set once
  std::atomic<VerbsClient*> ready_{nullptr};                   // client_, published
  bool opening_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> down_until_ns_{0};

  std::atomic<uint64_t> verbs_calls_{0}, fallbacks_{0}, oversized_{0};
  AsyncRunner async_;  // last: its threads stop before the rest goes
};

bool NoVerbsHere(absl::StatusCode code) {
  return code == absl::StatusCode::kFailedPrecondition || code == absl::StatusCode::kUnimplemented ||
         code == absl::StatusCode::kNotFound || code == absl::StatusCode::kInvalidArgument;
}

}  // namespace

rpc::VerbsSessionResponse SessionToProto(const VerbsSession& s) {
  rpc::VerbsSessionResponse r;
  r.set_address(s.address);
  r.set_port(static_cast<uint32_t>(s.port));
  r.set_token(s.token);
  r.set_key(s.key);
  r.set_ttl_ms(std::max<int64_t>(0, absl::ToInt64Milliseconds(s.expires - absl::Now())));
  r.set_message_bytes(static_cast<uint32_t>(s.message_bytes));
  r.set_rendezvous_bytes(static_cast<uint32_t>(s.rendezvous_bytes));
  r.set_credits(s.credits);
  r.set_frame_version(kFrameVersion);
  return r;
}

VerbsSession SessionFromProto(const rpc::VerbsSessionResponse& r) {
  VerbsSession s;
  s.address = r.address();
  s.port = static_cast<int>(r.port());
  s.token = r.token();
  s.key = r.key();
  s.expires = absl::Now() + absl::Milliseconds(r.ttl_ms());
  s.message_bytes = r.message_bytes();
  s.rendezvous_bytes = r.rendezvous_bytes();
  s.credits = std::max<uint32_t>(1, r.credits());
  return s;
}

VerbsPathFactory MakeVerbsPathFactory(const VerbsPathOptions& options) {
  return [options](const std::string& server, GrpcPath* grpc) -> absl::StatusOr<VerbsPathResult> {
    auto path = std::make_unique<VerbsPath>(server, grpc, options);
    absl::Status st = path->OpenNow();
    if (!st.ok()) {
      if (options.required) return st;
      // No device, or a server that offers no verbs: gRPC alone.
      if (NoVerbsHere(st.code())) return VerbsPathResult{nullptr, std::string(st.message())};
      path->MarkDown(st);  // unreachable for now: tried again after `retry`
    }
    return VerbsPathResult{std::move(path), ""};
  };
}

}  // namespace basalt::verbs
