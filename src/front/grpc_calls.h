// The gRPC front end's call machinery (grpc_server.h), shared by grpc_server.cc (the server's
// start and stop) and grpc_methods.cc (the method table): the server's state (GrpcServer::Impl),
// the call objects on the completion queues (a unary call, a streaming scan) and how a method is
// registered (AddUnary). Private to src/front/.
#pragma once

#include <thread>
#include <vector>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "grpcpp/server_posix.h"
#include "src/base/acceptor.h"
#include "src/security/authorize.h"
#include "src/security/quotas.h"
#include "src/services/server_metrics.h"
#include "transport/grpc/grpc_settings.h"
#include "transport/grpc/stack_arena.h"
#include "src/front/grpc_server.h"

namespace basalt::server {
namespace grpc_internal {


// A call object on a completion queue: its address is the tag of every operation it starts,
// and exactly one operation is outstanding at a time. Proceed runs on the CQ's thread.
class Call {
 public:
  virtual ~Call() = default;
  virtual void Proceed(bool ok) = 0;
};

// Runs tasks on a fixed set of threads (the write and admin handlers). Stop runs what is queued,
// then joins.
class HandlerPool {
 public:
  explicit HandlerPool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~HandlerPool() { Stop(); }
  void Schedule(std::function<void()> task) {
    absl::MutexLock l(&mu_);
    tasks_.push_back(std::move(task));
  }
  void Stop() {
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock l(&mu_);
        mu_.Await(absl::Condition(+[](HandlerPool* p) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return p->stop_ || !p->tasks_.empty();
        }, this));
        if (tasks_.empty()) return;  // stopping, and nothing left to run
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace grpc_internal

struct GrpcServer::Impl {
  Options options;
  DataService* data;
  AdminService* admin;
  ServerCounters* counters;
  std::optional<OpMetrics> scan_metrics;  // a stream counts once, timed to its end

  rpc::Basalt::AsyncService basalt_service;
  rpc::Admin::AsyncService admin_service;
  rpc::Echo::AsyncService echo_service;
  std::unique_ptr<Acceptor> acceptor;  // listens; hands connections to `server`
  std::unique_ptr<grpc::Server> server;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> cqs;
  std::vector<std::thread> threads;
  std::unique_ptr<grpc_internal::HandlerPool> pool;  // writes and admin calls
  std::atomic<bool> shutting_down{false};
  std::atomic<int> unary_in_flight{0};  // in_flight but scans: what Shutdown waits for
  std::atomic<int64_t> reply_bytes{0};  // replies written and not yet taken by their clients
  bool stopped = false;

  // Replies being written, with when they must have been taken by: the stall watchdog cancels
  // those past it (stalled_reply_timeout_ms after a unary reply started, a scan's lease after
  // its message did). A call unregisters (under stall_mu) before it can be deleted, so the
  // watchdog never touches a deleted context.
  absl::Mutex stall_mu;
  std::map<grpc::ServerContext*, std::chrono::steady_clock::time_point> writing ABSL_GUARDED_BY(stall_mu);
  bool stall_stop ABSL_GUARDED_BY(stall_mu) = false;
  std::thread stall_watchdog;
  std::atomic<uint64_t> stalled_cancelled{0};

  // Open scans by user (max_scanners_per_user).
  absl::Mutex scanners_mu;
  std::map<std::string, int, std::less<>> scanners ABSL_GUARDED_BY(scanners_mu);
  // Takes one of `user`'s scanner slots, or says why not.
  absl::Status TakeScanner(const std::string& user) {
    if (user.empty() || options.max_scanners_per_user <= 0) return absl::OkStatus();
    absl::MutexLock l(&scanners_mu);
    int& n = scanners[user];
    if (n >= options.max_scanners_per_user) {
      return absl::ResourceExhaustedError(absl::StrCat("user ", user, " holds ", n,
                                                       " open scanners (max_scanners_per_user ",
                                                       options.max_scanners_per_user, "): close one first"));
    }
    ++n;
    return absl::OkStatus();
  }
  void ReleaseScanner(const std::string& user) {
    if (user.empty() || options.max_scanners_per_user <= 0) return;
    absl::MutexLock l(&scanners_mu);
    auto it = scanners.find(user);
    if (it != scanners.end() && --it->second <= 0) scanners.erase(it);
  }

  void WriteStarted(grpc::ServerContext* ctx) { WriteStarted(ctx, options.stalled_reply_timeout_ms); }
  void WriteStarted(grpc::ServerContext* ctx, int64_t timeout_ms) {
    absl::MutexLock l(&stall_mu);
    writing.emplace(ctx, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms));
  }
  void WriteDone(grpc::ServerContext* ctx) {
    absl::MutexLock l(&stall_mu);
    writing.erase(ctx);
  }
  void StallWatchdog() {
    const int64_t shortest = std::min(options.stalled_reply_timeout_ms, options.scanner_lease_ms);
    absl::MutexLock l(&stall_mu);
    while (!stall_stop) {
      stall_mu.AwaitWithTimeout(absl::Condition(&stall_stop), absl::Milliseconds(std::max<int64_t>(10, shortest / 4)));
      const auto now = std::chrono::steady_clock::now();
      for (auto it = writing.begin(); it != writing.end();) {
        if (now < it->second) {
          ++it;
          continue;
        }
        it->first->TryCancel();  // the pending write completes (not ok) and the call ends
        stalled_cancelled.fetch_add(1, std::memory_order_relaxed);
        it = writing.erase(it);
      }
    }
  }
  // Takes `bytes` from the reply budget, or says why not.
  grpc::Status ChargeReply(int64_t bytes) {
    const int64_t before = reply_bytes.fetch_add(bytes, std::memory_order_acq_rel);
    if (before > 0 && before + bytes > options.max_reply_bytes_in_flight) {
      reply_bytes.fetch_sub(bytes, std::memory_order_acq_rel);
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("server busy: ", before, " bytes of replies wait for their clients to read them "
                                       "(max_reply_bytes_in_flight ", options.max_reply_bytes_in_flight, ")"));
    }
    return grpc::Status::OK;
  }
  void UnchargeReply(int64_t bytes) { reply_bytes.fetch_sub(bytes, std::memory_order_acq_rel); }

  // Method descriptors (type-erased), shared by every call of the method.
  std::vector<std::shared_ptr<void>> methods;
  // Every method's arming function, run once per CQ at start and again whenever a call arrives.
  std::vector<std::function<void(grpc::ServerCompletionQueue*)>> armers;

  // Counts a new call and admits it, or returns RESOURCE_EXHAUSTED. Each Admit is paired with
  // one Release when the call's last operation completes.
  grpc::Status Admit() {
    counters->requests.fetch_add(1, std::memory_order_relaxed);
    const int n = counters->calls_in_flight.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (n > options.max_concurrent_calls) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, absl::StrCat("server busy: ", n - 1, " calls in flight"));
    }
    if (options.admit) return ToGrpcStatus(options.admit());
    return grpc::Status::OK;
  }
  void Release() { counters->calls_in_flight.fetch_sub(1, std::memory_order_acq_rel); }
  // The caller, when calls are authenticated (else OK, *id left empty).
  grpc::Status Authenticate(const grpc::ServerContext& ctx, Identity* id) const {
    if (options.authn == nullptr) return grpc::Status::OK;
    absl::StatusOr<Identity> who = options.authn->Authenticate(ctx);
    if (!who.ok()) return ToGrpcStatus(who.status());
    *id = *std::move(who);
    return grpc::Status::OK;
  }
  bool authorizing() const { return options.access != nullptr && options.access->enabled(); }
  bool accepting() const { return !shutting_down.load(std::memory_order_acquire); }

  void Poll(grpc::ServerCompletionQueue* cq) {
    void* tag;
    bool ok;
    while (cq->Next(&tag, &ok)) static_cast<grpc_internal::Call*>(tag)->Proceed(ok);
  }
};

namespace grpc_internal {


template <class Req, class Resp>
using ArmFn = std::function<void(grpc::ServerContext*, Req*, grpc::ServerAsyncResponseWriter<Resp>*,
                                 grpc::ServerCompletionQueue*, void*)>;
template <class Req, class Resp>
using HandleFn = std::function<absl::Status(const Identity&, const grpc::ServerContext&, const Req&, Resp*)>;
// What the caller needs to make the call (authorize.h); it may narrow the request (a read of
// what the caller may read). Empty: nothing.
template <class Req>
using AuthorizeFn = std::function<absl::Status(const Identity&, Req*)>;

// What each data call asks of the quotas (quotas.h). Its request's bytes count on a write.
inline QuotaCall QuotaCallOf(const rpc::GetRequest& r) { return QuotaCall{{}, r.table(), false, 1, 0}; }
template <class Req>
QuotaCall WriteCall(const Req& r, int64_t count) {
  return QuotaCall{{}, r.table(), true, count, static_cast<int64_t>(r.ByteSizeLong())};
}
inline QuotaCall QuotaCallOf(const rpc::MutateRequest& r) { return WriteCall(r, 1); }
// A batch counts as many writes as it has rows (HBase's multi counts each action).
inline QuotaCall QuotaCallOf(const rpc::BatchMutateRequest& r) { return WriteCall(r, std::max(1, r.rows_size())); }
inline QuotaCall QuotaCallOf(const rpc::IncrementRequest& r) { return WriteCall(r, 1); }
inline QuotaCall QuotaCallOf(const rpc::AppendRequest& r) { return WriteCall(r, 1); }
inline QuotaCall QuotaCallOf(const rpc::CheckAndMutateRequest& r) { return WriteCall(r, 1); }

// A unary call: waits for a request, runs the handler inline, finishes, deletes itself.
template <class Req, class Resp>
class UnaryCall final : public Call {
 public:
  struct Method {
    ArmFn<Req, Resp> arm;
    HandleFn<Req, Resp> handle;
    AuthorizeFn<Req> authorize;
    // What a data call asks of the quotas (quotas.h); empty: the method has none.
    std::function<QuotaCall(const Req&)> quota;
    // Checked after the quotas, when authorising (a check that may cost a call elsewhere:
    // a transactional write's writer); empty: none.
    std::function<absl::Status(const Identity&, const Req&)> check;
    bool on_pool = false;  // run on the handler pool, not inline on the CQ thread
    std::optional<OpMetrics> metrics;  // where the calls are counted, if they are
  };

  static void Arm(GrpcServer::Impl* impl, const Method* m, grpc::ServerCompletionQueue* cq) {
    auto* c = new UnaryCall(impl, m, cq);
    m->arm(&c->ctx_, &c->req_, &c->responder_, cq, c);
  }

  void Proceed(bool ok) override {
    if (finishing_) {
      impl_->WriteDone(&ctx_);
      impl_->UnchargeReply(charged_);
      impl_->unary_in_flight.fetch_sub(1, std::memory_order_acq_rel);
      impl_->Release();
      delete this;
      return;
    }
    if (!ok) {  // the server is shutting down: this request was never matched with a call
      delete this;
      return;
    }
    if (impl_->accepting()) Arm(impl_, method_, cq_);  // the next call of this method
    finishing_ = true;
    impl_->unary_in_flight.fetch_add(1, std::memory_order_acq_rel);
    grpc::Status admitted = impl_->Admit();
    if (admitted.ok()) admitted = impl_->Authenticate(ctx_, &identity_);
    if (!admitted.ok()) {
      impl_->WriteStarted(&ctx_);
      responder_.FinishWithError(admitted, this);
      return;
    }
    if (method_->on_pool && impl_->pool != nullptr) {
      impl_->pool->Schedule([this] { Handle(); });
    } else {
      Handle();
    }
  }

 private:
  // Runs the handler and finishes the call (on the CQ thread or a pool thread; the call has no
  // other operation outstanding meanwhile).
  void Handle() {
    // The reply is built on the stack's arena (Finish serialises it before returning).
    StackArena<> arena;
    Resp& resp = *arena.Create<Resp>();
    const std::chrono::steady_clock::time_point start = kCountCalls && method_->metrics.has_value()
                                                            ? std::chrono::steady_clock::now()
                                                            : std::chrono::steady_clock::time_point();
    absl::Status s = impl_->authorizing() && method_->authorize ? method_->authorize(identity_, &req_)
                                                                 : absl::OkStatus();
    Quotas* quotas = method_->quota ? impl_->options.quotas : nullptr;
    Quotas::Ticket ticket;
    bool read = false;
    if (s.ok() && quotas != nullptr && !quotas->empty()) {
      QuotaCall q = method_->quota(req_);
      q.user = identity_.user;
      read = !q.write;
      s = quotas->Admit(q, &ticket);
    }
    if (s.ok() && method_->check && impl_->authorizing()) s = method_->check(identity_, req_);
    if (s.ok()) s = method_->handle(identity_, ctx_, req_, &resp);
    grpc::Status charged;
    size_t reply_bytes = 0;
    if (s.ok()) {
      // The serialised reply stays in memory until the client takes it: count it.
      reply_bytes = resp.ByteSizeLong();
      if (read) quotas->Settle(ticket, static_cast<int64_t>(reply_bytes));
      charged = impl_->ChargeReply(static_cast<int64_t>(reply_bytes));
      if (charged.ok()) charged_ = static_cast<int64_t>(reply_bytes);
    }
    if (kCountCalls && method_->metrics.has_value()) {
      method_->metrics->Record(s.ok() && charged.ok(), MicrosSince(start), req_.ByteSizeLong(), reply_bytes);
    }
    impl_->WriteStarted(&ctx_);
    if (!s.ok()) {
      responder_.FinishWithError(ToGrpcStatus(s), this);
    } else if (!charged.ok()) {
      responder_.FinishWithError(charged, this);
    } else {
      responder_.Finish(resp, grpc::Status::OK, this);
    }
  }

  UnaryCall(GrpcServer::Impl* impl, const Method* m, grpc::ServerCompletionQueue* cq)
      : impl_(impl), method_(m), cq_(cq), responder_(&ctx_) {}

  GrpcServer::Impl* impl_;
  const Method* method_;
  grpc::ServerCompletionQueue* cq_;
  grpc::ServerContext ctx_;
  Req req_;
  grpc::ServerAsyncResponseWriter<Resp> responder_;
  bool finishing_ = false;
  int64_t charged_ = 0;  // reply bytes taken from the budget
  Identity identity_;    // the caller (empty when authentication is off)
};

// A streaming scan: request -> (write batch)* -> finish. One operation outstanding at a time.
class ScanCall final : public Call {
 public:
  static void Arm(GrpcServer::Impl* impl, grpc::ServerCompletionQueue* cq) {
    auto* c = new ScanCall(impl, cq);
    impl->basalt_service.RequestScan(&c->ctx_, &c->req_, &c->writer_, cq, cq, c);
  }

  void Proceed(bool ok) override {
    switch (state_) {
      case State::kRequested: {
        if (!ok) {
          delete this;
          return;
        }
        if (impl_->accepting()) Arm(impl_, cq_);
        if (kCountCalls && impl_->scan_metrics.has_value()) start_ = std::chrono::steady_clock::now();
        grpc::Status admitted = impl_->Admit();
        if (admitted.ok()) admitted = impl_->Authenticate(ctx_, &identity_);
        if (!admitted.ok()) return Finish(admitted);
        if (impl_->authorizing()) {
          absl::Status allowed = Authorize(*impl_->options.access, identity_, &req_);
          if (!allowed.ok()) return Finish(ToGrpcStatus(allowed));
        }
        if (absl::Status taken = impl_->TakeScanner(identity_.user); !taken.ok()) return Finish(ToGrpcStatus(taken));
        holds_scanner_ = true;
        if (Quotas* q = impl_->options.quotas; q != nullptr && !q->empty()) {
          // One read when it opens (HBase counts each next call; a stream has none), and the
          // bytes of every message it sends.
          QuotaCall call;
          call.user = identity_.user;
          call.table = req_.table();
          absl::Status admitted_by_quota = q->Admit(call, &ticket_);
          if (!admitted_by_quota.ok()) return Finish(ToGrpcStatus(admitted_by_quota));
          quotas_ = q;
        }
        absl::StatusOr<std::unique_ptr<ScanCursor>> cursor = impl_->data->OpenScan(req_);
        if (!cursor.ok()) return Finish(ToGrpcStatus(cursor.status()));
        cursor_ = *std::move(cursor);
        // A disabled table cancels the stream: a pending write to a client that stopped
        // reading would otherwise hold the table (and Enable, Drop) until the deadline.
        cursor_->CancelOnClose([this] { ctx_.TryCancel(); });
        return WriteNext();
      }
      case State::kWriting:
        impl_->WriteDone(&ctx_);
        impl_->UnchargeReply(charged_);
        charged_ = 0;
        // A failed write: the client cancelled or went away, stalled past the watchdog's
        // timeout (or the server is cancelling calls past its shutdown grace). Stop reading rows.
        if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "scan cancelled"));
        return WriteNext();
      case State::kFinishing:
        impl_->WriteDone(&ctx_);
        impl_->UnchargeReply(charged_);
        cursor_.reset();  // lets go of the table
        if (holds_scanner_) impl_->ReleaseScanner(identity_.user);
        impl_->Release();
        delete this;
        return;
    }
  }

 private:
  enum class State { kRequested, kWriting, kFinishing };

  ScanCall(GrpcServer::Impl* impl, grpc::ServerCompletionQueue* cq) : impl_(impl), cq_(cq), writer_(&ctx_) {}

  void WriteNext() {
    resp_.Clear();
    bool done = false;
    absl::Status s = cursor_->Next(&resp_, &done);
    if (!s.ok()) return Finish(ToGrpcStatus(s));
    if (resp_.rows_size() == 0 && resp_.page_rows().empty()) return Finish(grpc::Status::OK);
    const int64_t bytes = static_cast<int64_t>(resp_.ByteSizeLong());
    if (grpc::Status charged = impl_->ChargeReply(bytes); !charged.ok()) return Finish(charged);
    charged_ = bytes;
    sent_ += static_cast<uint64_t>(bytes);
    if (quotas_ != nullptr) quotas_->Settle(ticket_, bytes);
    impl_->WriteStarted(&ctx_, impl_->options.scanner_lease_ms);  // the lease: taken within it, or closed
    if (done) {
      Count(true);
      state_ = State::kFinishing;
      writer_.WriteAndFinish(resp_, grpc::WriteOptions(), grpc::Status::OK, this);
      return;
    }
    state_ = State::kWriting;
    writer_.Write(resp_, this);
  }

  // The stream's one count: when its last message or its status is handed to gRPC.
  void Count(bool ok) {
    if (kCountCalls && impl_->scan_metrics.has_value()) {
      impl_->scan_metrics->Record(ok, MicrosSince(start_), req_.ByteSizeLong(), sent_);
    }
  }

  void Finish(const grpc::Status& s) {
    Count(s.ok());
    state_ = State::kFinishing;
    impl_->WriteStarted(&ctx_);
    writer_.Finish(s, this);
  }

  GrpcServer::Impl* impl_;
  grpc::ServerCompletionQueue* cq_;
  grpc::ServerContext ctx_;
  rpc::ScanRequest req_;
  rpc::ScanResponse resp_;
  grpc::ServerAsyncWriter<rpc::ScanResponse> writer_;
  std::unique_ptr<ScanCursor> cursor_;
  State state_ = State::kRequested;
  int64_t charged_ = 0;  // the message being written, taken from the reply budget
  std::chrono::steady_clock::time_point start_;
  uint64_t sent_ = 0;  // bytes of the messages written
  Identity identity_;
  bool holds_scanner_ = false;  // one of its user's max_scanners_per_user
  Quotas* quotas_ = nullptr;    // set when quotas admitted it: its messages' bytes are settled
  Quotas::Ticket ticket_;
};

// Registers a unary method: its descriptor lives as long as the server (in `methods`), and an
// armer that pre-arms it on a CQ.
template <class Req, class Resp>
typename UnaryCall<Req, Resp>::Method* AddUnary(GrpcServer::Impl* impl, std::vector<std::shared_ptr<void>>* methods,
                                                ArmFn<Req, Resp> arm, HandleFn<Req, Resp> handle,
                                                AuthorizeFn<Req> authorize, bool on_pool, std::string_view name = {},
                                                bool timed = false) {
  using C = UnaryCall<Req, Resp>;
  auto m = std::make_shared<typename C::Method>();
  m->arm = std::move(arm);
  m->handle = std::move(handle);
  m->authorize = std::move(authorize);
  if constexpr (requires(const Req& r) { QuotaCallOf(r); }) {
    m->quota = [](const Req& r) { return QuotaCallOf(r); };
  }
  m->on_pool = on_pool;
  if (kCountCalls && impl->options.metrics != nullptr && !name.empty()) {
    m->metrics = MakeOpMetrics(impl->options.metrics, name, "grpc", timed);
  }
  typename C::Method* raw = m.get();  // the caller may add to it before Start arms it
  methods->push_back(std::move(m));
  impl->armers.push_back([impl, raw](grpc::ServerCompletionQueue* cq) { C::Arm(impl, raw, cq); });
  return raw;
}

// The method table, by service (grpc_methods.cc): each adds its methods to impl->methods and
// their armers to impl->armers.
void AddDataMethods(GrpcServer::Impl* impl);
void AddAdminMethods(GrpcServer::Impl* impl);
void AddSnapshotMethods(GrpcServer::Impl* impl);
void AddNamespaceMethods(GrpcServer::Impl* impl);
void AddPeerMethods(GrpcServer::Impl* impl);
void AddSecurityMethods(GrpcServer::Impl* impl);
void AddEchoMethod(GrpcServer::Impl* impl);

}  // namespace grpc_internal
}  // namespace basalt::server
