#include "src/front/grpc_server.h"

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

namespace basalt::server {
namespace {

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

}  // namespace

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
  std::unique_ptr<HandlerPool> pool;  // writes and admin calls
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
    while (cq->Next(&tag, &ok)) static_cast<Call*>(tag)->Proceed(ok);
  }
};

namespace {

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
QuotaCall QuotaCallOf(const rpc::GetRequest& r) { return QuotaCall{{}, r.table(), false, 1, 0}; }
template <class Req>
QuotaCall WriteCall(const Req& r, int64_t count) {
  return QuotaCall{{}, r.table(), true, count, static_cast<int64_t>(r.ByteSizeLong())};
}
QuotaCall QuotaCallOf(const rpc::MutateRequest& r) { return WriteCall(r, 1); }
// A batch counts as many writes as it has rows (HBase's multi counts each action).
QuotaCall QuotaCallOf(const rpc::BatchMutateRequest& r) { return WriteCall(r, std::max(1, r.rows_size())); }
QuotaCall QuotaCallOf(const rpc::IncrementRequest& r) { return WriteCall(r, 1); }
QuotaCall QuotaCallOf(const rpc::AppendRequest& r) { return WriteCall(r, 1); }
QuotaCall QuotaCallOf(const rpc::CheckAndMutateRequest& r) { return WriteCall(r, 1); }

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

}  // namespace

GrpcServer::GrpcServer(const Options& options, DataService* data, AdminService* admin, ServerCounters* counters)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->data = data;
  impl_->admin = admin;
  impl_->counters = counters;
  if (kCountCalls && options.metrics != nullptr) {
    impl_->scan_metrics = MakeOpMetrics(options.metrics, "Scan", "grpc", /*timed=*/true);
  }
}

GrpcServer::~GrpcServer() { Shutdown(std::chrono::milliseconds(0)); }

absl::Status GrpcServer::Start() {
  Impl* impl = impl_.get();
  grpc::ServerBuilder builder;
  ApplyServerSettings(&builder, impl->options.max_request_bytes);
  // Responses may be as large as the client accepts (a scan message holds at least one row).
  builder.SetMaxSendMessageSize(std::max(impl->options.max_request_bytes, kMaxGrpcMessageBytes));
  int tls_port = 0;
  if (impl->options.tls != nullptr) {
    // TLS: gRPC listens itself (it takes no accepted socket with TLS credentials).
    builder.AddListeningPort(impl->options.listen, impl->options.tls, &tls_port);
  } else {
    // Basalt accepts connections itself (acceptor.h: gRPC 1.51's listener stops for good on
    // EMFILE) and hands them to the server, which has no listening port of its own.
    Acceptor::Options aopts;
    aopts.listen = impl->options.listen;
    aopts.reserved_fds = impl->options.reserved_fds;
    aopts.log = impl->options.log;
    aopts.accepted = &impl->counters->connections_accepted;
    aopts.refused = &impl->counters->connections_refused;
    absl::StatusOr<std::unique_ptr<Acceptor>> acceptor = Acceptor::Listen(aopts);
    if (!acceptor.ok()) {
      impl->stopped = true;
      return acceptor.status();
    }
    impl->acceptor = std::move(*acceptor);
    port_ = impl->acceptor->port();
  }
  builder.RegisterService(&impl->basalt_service);
  builder.RegisterService(&impl->admin_service);
  builder.RegisterService(&impl->echo_service);
  const int cq_threads = impl->options.cq_threads > 0
                             ? impl->options.cq_threads
                             : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 0; i < cq_threads; ++i) impl->cqs.push_back(builder.AddCompletionQueue());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr) {
    for (auto& cq : impl->cqs) cq->Shutdown();
    for (auto& cq : impl->cqs) impl->Poll(cq.get());
    impl->acceptor.reset();
    impl->stopped = true;
    return impl->options.tls != nullptr
               ? absl::UnavailableError(absl::StrCat("the TLS gRPC server could not listen on ", impl->options.listen,
                                                     " (taken, or not an address of this host)"))
               : absl::InternalError(absl::StrCat("the gRPC server for ", impl->options.listen, " did not start"));
  }
  if (impl->options.tls != nullptr) port_ = tls_port;

  auto& methods = impl->methods;
  DataService* d = impl->data;
  AdminService* a = impl->admin;
  AccessController* ac = impl->options.access;
  auto* bs = &impl->basalt_service;
  auto* as = &impl->admin_service;
  auto* es = &impl->echo_service;
  // Reads run inline on the CQ threads; writes (which wait for the log's fdatasync) and admin
  // calls (flushes, compactions) run on the handler pool, so they never hold up reads and many
  // writers can share one fdatasync. HBase splits its call queues the same way.
  // Each method is counted under its name (basalt_requests_total{op="get"}); the data service's
  // (handler d) are timed too, as the handler's type says at compile time. `authz` is what the
  // caller needs (authorize.h).
#define BASALT_ARM_(svc, Method, Req, Resp)                                                      \
  [svc](grpc::ServerContext* ctx, Req* req, grpc::ServerAsyncResponseWriter<Resp>* w,          \
        grpc::ServerCompletionQueue* cq, void* tag) { svc->Request##Method(ctx, req, w, cq, cq, tag); }
#define BASALT_UNARY_(svc, handler, Method, Req, Resp, on_pool, authz)                                          \
  AddUnary<Req, Resp>(                                                                                           \
      impl, &methods, BASALT_ARM_(svc, Method, Req, Resp),                                                       \
      [handler](const Identity&, const grpc::ServerContext&, const Req& req, Resp* resp) {                      \
        return handler->Method(req, resp);                                                                       \
      },                                                                                                         \
      authz, on_pool, #Method, std::is_same_v<decltype(handler), DataService*>)
#define BASALT_BY_REQUEST_ [ac](const Identity& id, auto* req) { return Authorize(*ac, id, req); }
#define BASALT_TABLE_ADMIN_(Method) \
  [ac](const Identity& id, auto* req) { return AuthorizeTableAdmin(*ac, id, #Method, *req); }
#define BASALT_GLOBAL_ADMIN_(Method) \
  [ac](const Identity& id, auto*) { return AuthorizeGlobalAdmin(*ac, id, #Method); }
  BASALT_UNARY_(bs, d, Get, rpc::GetRequest, rpc::GetResponse, false, BASALT_BY_REQUEST_);
  // A transactional write names its transaction by write pointer: the writer must be its owner
  // (TransactionManager::CheckWriter), or anyone could write into another user's transaction.
  // Checked after the quotas: on a cluster's region server it asks the master.
#define BASALT_TX_WRITER_(Req)                                                                     \
  [ac, d](const Identity& id, const Req& req) -> absl::Status {                                    \
    if (req.transaction() == 0) return absl::OkStatus();                                           \
    return d->CheckWriter(TxCaller{id.user, ac->Holds(id, kPermAdmin, PermScope{})}, req.transaction()); \
  }
  BASALT_UNARY_(bs, d, Mutate, rpc::MutateRequest, rpc::MutateResponse, true, BASALT_BY_REQUEST_)->check =
      BASALT_TX_WRITER_(rpc::MutateRequest);
  BASALT_UNARY_(bs, d, BatchMutate, rpc::BatchMutateRequest, rpc::BatchMutateResponse, true, BASALT_BY_REQUEST_)
      ->check = BASALT_TX_WRITER_(rpc::BatchMutateRequest);
#undef BASALT_TX_WRITER_
  BASALT_UNARY_(bs, d, Increment, rpc::IncrementRequest, rpc::IncrementResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(bs, d, Append, rpc::AppendRequest, rpc::AppendResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(bs, d, CheckAndMutate, rpc::CheckAndMutateRequest, rpc::CheckAndMutateResponse, true,
                BASALT_BY_REQUEST_);
  // Transactions (docs/DESIGN.md §12): starting one needs W somewhere (Tephra has no permissions of its
  // own); it belongs to its caller, and only that user, or one with global A, commits, aborts or
  // invalidates it (TxCaller). What it reads and writes is authorised table by table.
#define BASALT_TX_(Method, Req, Resp, authz)                                                             \
  AddUnary<Req, Resp>(                                                                                    \
      impl, &methods, BASALT_ARM_(bs, Method, Req, Resp),                                                 \
      [d, ac](const Identity& id, const grpc::ServerContext&, const Req& req, Resp* resp) {               \
        return d->Method(TxCaller{id.user, ac == nullptr || ac->Holds(id, kPermAdmin, PermScope{})}, req, resp); \
      },                                                                                                  \
      authz, true, #Method, true)
#define BASALT_ANY_CALLER_ [](const Identity&, auto*) { return absl::OkStatus(); }
  BASALT_TX_(StartTransaction, rpc::StartTransactionRequest, rpc::StartTransactionResponse,
             [ac](const Identity& id, auto*) { return AuthorizeStartTransaction(ac, id); });
  BASALT_TX_(CommitTransaction, rpc::CommitTransactionRequest, rpc::CommitTransactionResponse, BASALT_ANY_CALLER_);
  BASALT_TX_(AbortTransaction, rpc::TransactionRequest, rpc::TransactionResponse, BASALT_ANY_CALLER_);
  BASALT_TX_(InvalidateTransaction, rpc::TransactionRequest, rpc::TransactionResponse, BASALT_ANY_CALLER_);
#undef BASALT_ANY_CALLER_
#undef BASALT_TX_
  BASALT_UNARY_(bs, d, CheckTransactionWriter, rpc::TransactionWriterRequest, rpc::TransactionResponse, true,
                BASALT_GLOBAL_ADMIN_(CheckTransactionWriter));
  BASALT_UNARY_(as, a, CreateTable, rpc::CreateTableRequest, rpc::CreateTableResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, ModifyTable, rpc::ModifyTableRequest, rpc::AdminResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, DescribeTable, rpc::TableRequest, rpc::DescribeTableResponse, true,
                BASALT_TABLE_ADMIN_(DescribeTable));
  BASALT_UNARY_(as, a, DisableTable, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(DisableTable));
  BASALT_UNARY_(as, a, EnableTable, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(EnableTable));
  BASALT_UNARY_(as, a, DropTable, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(DropTable));
  BASALT_UNARY_(as, a, Flush, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(Flush));
  BASALT_UNARY_(as, a, MajorCompact, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(MajorCompact));
  BASALT_UNARY_(as, a, AssignTable, rpc::TableRequest, rpc::AdminResponse, true, BASALT_TABLE_ADMIN_(AssignTable));
  BASALT_UNARY_(as, a, ListRegions, rpc::TableRequest, rpc::ListRegionsResponse, true,
                BASALT_TABLE_ADMIN_(ListRegions));
  BASALT_UNARY_(as, a, Split, rpc::SplitRequest, rpc::AdminResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, Merge, rpc::MergeRequest, rpc::AdminResponse, true, BASALT_BY_REQUEST_);
  BASALT_UNARY_(as, a, Status, rpc::StatusRequest, rpc::StatusResponse, true, BASALT_GLOBAL_ADMIN_(Status));
  BASALT_UNARY_(as, a, SetVerbs, rpc::SetVerbsRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(SetVerbs));
  BASALT_UNARY_(as, a, Move, rpc::MoveRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(Move));
  BASALT_UNARY_(as, a, Balance, rpc::BalanceRequest, rpc::BalanceResponse, true, BASALT_GLOBAL_ADMIN_(Balance));
  BASALT_UNARY_(as, a, Unassign, rpc::RegionRequest, rpc::AdminResponse, true, BASALT_GLOBAL_ADMIN_(Unassign));
  BASALT_UNARY_(as, a, AssignRegion, rpc::RegionRequest, rpc::AdminResponse, true,
                BASALT_GLOBAL_ADMIN_(AssignRegion));
  BASALT_UNARY_(as, a, OpenRegion, rpc::OpenRegionRequest, rpc::OpenRegionResponse, true,
                BASALT_GLOBAL_ADMIN_(OpenRegion));
  BASALT_UNARY_(as, a, CloseRegion, rpc::CloseRegionRequest, rpc::AdminResponse, true,
                BASALT_GLOBAL_ADMIN_(CloseRegion));
  BASALT_UNARY_(as, a, RegionOperation, rpc::RegionOpRequest, rpc::RegionOpResponse, true,
                BASALT_GLOBAL_ADMIN_(RegionOperation));
  BASALT_UNARY_(as, a, HostedRegions, rpc::HostedRegionsRequest, rpc::HostedRegionsResponse, true,
                BASALT_GLOBAL_ADMIN_(HostedRegions));
  // A verbs session is issued to its caller (its endpoints act as them, verbs_front.cc): under
  // auth, only to one who may read or write something.
  AddUnary<rpc::VerbsSessionRequest, rpc::VerbsSessionResponse>(
      impl, &methods, BASALT_ARM_(bs, OpenVerbsSession, rpc::VerbsSessionRequest, rpc::VerbsSessionResponse),
      [a](const Identity& id, const grpc::ServerContext&, const rpc::VerbsSessionRequest& req,
          rpc::VerbsSessionResponse* resp) { return a->OpenVerbsSession(id, req, resp); },
      [ac](const Identity& id, rpc::VerbsSessionRequest*) -> absl::Status {
        if (ac->HasAnywhere(id, kPermRead | kPermWrite)) return absl::OkStatus();
        return ac->CheckGlobal(id, "OpenVerbsSession", kPermRead | kPermWrite);  // denied, and said so
      },
      /*on_pool=*/false, "OpenVerbsSession");
  // Tables the caller holds nothing on are left out of the list.
  AddUnary<rpc::ListTablesRequest, rpc::ListTablesResponse>(
      impl, &methods, BASALT_ARM_(as, ListTables, rpc::ListTablesRequest, rpc::ListTablesResponse),
      [a, ac](const Identity& id, const grpc::ServerContext&, const rpc::ListTablesRequest& req,
              rpc::ListTablesResponse* resp) -> absl::Status {
        BASALT_RETURN_IF_ERROR(a->ListTables(req, resp));
        if (ac == nullptr || !ac->enabled()) return absl::OkStatus();
        auto* tables = resp->mutable_tables();
        tables->erase(std::remove_if(tables->begin(), tables->end(),
                                     [&](const rpc::DescribeTableResponse& t) {
                                       return !ac->HasAnyOn(id, t.table().name());
                                     }),
                      tables->end());
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/true, "ListTables");
  // Access control: the controller checks A on the scope itself.
  AddUnary<rpc::GrantRequest, rpc::AdminResponse>(
      impl, &methods, BASALT_ARM_(as, Grant, rpc::GrantRequest, rpc::AdminResponse),
      [ac](const Identity& id, const grpc::ServerContext&, const rpc::GrantRequest& req, rpc::AdminResponse*) {
        if (ac == nullptr) return absl::FailedPreconditionError("this server keeps no permissions");
        PermGrant g;
        g.principal = req.principal();
        g.scope = ScopeFromProto(req.scope());
        BASALT_ASSIGN_OR_RETURN(g.perms, ParsePerms(req.permissions()));
        return ac->Grant(id, g);
      },
      nullptr, /*on_pool=*/true, "Grant");
  AddUnary<rpc::RevokeRequest, rpc::AdminResponse>(
      impl, &methods, BASALT_ARM_(as, Revoke, rpc::RevokeRequest, rpc::AdminResponse),
      [ac](const Identity& id, const grpc::ServerContext&, const rpc::RevokeRequest& req, rpc::AdminResponse*) {
        if (ac == nullptr) return absl::FailedPreconditionError("this server keeps no permissions");
        return ac->Revoke(id, req.principal(), ScopeFromProto(req.scope()));
      },
      nullptr, /*on_pool=*/true, "Revoke");
  AddUnary<rpc::UserPermissionRequest, rpc::UserPermissionResponse>(
      impl, &methods, BASALT_ARM_(as, UserPermissions, rpc::UserPermissionRequest, rpc::UserPermissionResponse),
      [ac](const Identity& id, const grpc::ServerContext&, const rpc::UserPermissionRequest& req,
           rpc::UserPermissionResponse* resp) -> absl::Status {
        if (ac == nullptr) return absl::FailedPreconditionError("this server keeps no permissions");
        BASALT_ASSIGN_OR_RETURN(std::vector<PermGrant> grants,
                                ac->List(id, ScopeFromProto(req.scope()), req.principal()));
        for (const PermGrant& g : grants) {
          rpc::UserPermission* p = resp->add_permissions();
          p->set_principal(g.principal);
          *p->mutable_scope() = ScopeToProto(g.scope);
          p->set_permissions(PermString(g.perms));
        }
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/true, "UserPermissions");
  AddUnary<rpc::WhoAmIRequest, rpc::WhoAmIResponse>(
      impl, &methods, BASALT_ARM_(as, WhoAmI, rpc::WhoAmIRequest, rpc::WhoAmIResponse),
      [ac, authn = impl->options.authn](const Identity& id, const grpc::ServerContext& ctx, const rpc::WhoAmIRequest&,
                                        rpc::WhoAmIResponse* resp) {
        resp->set_user(id.user);
        for (const std::string& g : id.groups) resp->add_groups(g);
        resp->set_superuser(id.superuser);
        resp->set_authentication(std::string(authn != nullptr ? Authenticator::Method(ctx) : "none"));
        resp->set_auth_enabled(ac != nullptr && ac->enabled());
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/false, "WhoAmI");
  // Quotas: set and listed by holders of global A (HBase's set_quota and list_quotas need it).
  Quotas* quotas = impl->options.quotas;
  AddUnary<rpc::SetQuotaRequest, rpc::AdminResponse>(
      impl, &methods, BASALT_ARM_(as, SetQuota, rpc::SetQuotaRequest, rpc::AdminResponse),
      [quotas](const Identity& id, const grpc::ServerContext&, const rpc::SetQuotaRequest& req,
               rpc::AdminResponse*) -> absl::Status {
        if (quotas == nullptr) return absl::FailedPreconditionError("this server keeps no quotas");
        BASALT_RETURN_IF_ERROR(SetQuota(quotas, req));
        AccessController::Audit(absl::StrCat("set_quota by ", id.user.empty() ? "(anyone)" : id.user, ": ",
                                             QuotaSubject{req.user(), req.namespace_(), req.table()}.ToString(),
                                             req.throttle().empty() ? "" : ", THROTTLE_TYPE => ", req.throttle(),
                                             ", LIMIT => ", req.limit()));
        return absl::OkStatus();
      },
      BASALT_GLOBAL_ADMIN_(SetQuota), /*on_pool=*/true, "SetQuota");
  AddUnary<rpc::ListQuotasRequest, rpc::ListQuotasResponse>(
      impl, &methods, BASALT_ARM_(as, ListQuotas, rpc::ListQuotasRequest, rpc::ListQuotasResponse),
      [quotas](const Identity&, const grpc::ServerContext&, const rpc::ListQuotasRequest&,
               rpc::ListQuotasResponse* resp) -> absl::Status {
        if (quotas == nullptr) return absl::FailedPreconditionError("this server keeps no quotas");
        ListQuotas(*quotas, resp);
        return absl::OkStatus();
      },
      BASALT_GLOBAL_ADMIN_(ListQuotas), /*on_pool=*/true, "ListQuotas");
#undef BASALT_GLOBAL_ADMIN_
#undef BASALT_TABLE_ADMIN_
#undef BASALT_BY_REQUEST_
#undef BASALT_UNARY_
#undef BASALT_ARM_
  const bool echo_on = impl->options.enable_echo;
  const uint32_t max_reply = impl->options.echo_max_reply_bytes;
  AddUnary<rpc::EchoRequest, rpc::EchoResponse>(
      impl, &methods,
      [es](grpc::ServerContext* ctx, rpc::EchoRequest* req, grpc::ServerAsyncResponseWriter<rpc::EchoResponse>* w,
           grpc::ServerCompletionQueue* cq, void* tag) { es->RequestEcho(ctx, req, w, cq, cq, tag); },
      [echo_on, max_reply](const Identity&, const grpc::ServerContext&, const rpc::EchoRequest& req,
                           rpc::EchoResponse* resp) -> absl::Status {
        if (!echo_on) {
          return absl::FailedPreconditionError(
              "Echo is off: it is for benchmarks; start basalt-server with --enable_echo=true (or run basalt-bench "
              "with --no_floor)");
        }
        if (req.reply_size() > max_reply) {
          return absl::InvalidArgumentError(
              absl::StrCat("reply_size ", req.reply_size(), " exceeds echo_max_reply_bytes (", max_reply, ")"));
        }
        resp->mutable_payload()->assign(req.reply_size(), 'x');
        return absl::OkStatus();
      },
      nullptr, /*on_pool=*/false);
  impl->armers.push_back([impl](grpc::ServerCompletionQueue* cq) { ScanCall::Arm(impl, cq); });

  for (auto& cq : impl->cqs) {
    for (auto& arm : impl->armers) arm(cq.get());
  }
  // handler_threads 0: no pool, every handler runs inline (a pool without threads would queue
  // writes and admin calls forever).
  if (impl->options.handler_threads > 0) impl->pool = std::make_unique<HandlerPool>(impl->options.handler_threads);
  impl->stall_watchdog = std::thread([impl] { impl->StallWatchdog(); });
  for (auto& cq : impl->cqs) {
    grpc::ServerCompletionQueue* q = cq.get();
    impl->threads.emplace_back([impl, q] { impl->Poll(q); });
  }
  grpc::Server* server = impl->server.get();
  if (impl->acceptor != nullptr) {
    impl->acceptor->Start([server](int fd) { grpc::AddInsecureChannelFromFd(server, fd); });
  }
  return absl::OkStatus();
}

std::function<void(std::function<void()>)> GrpcServer::Scheduler() {
  HandlerPool* pool = impl_->pool.get();
  if (pool == nullptr) return {};
  return [pool](std::function<void()> task) { pool->Schedule(std::move(task)); };
}

void GrpcServer::Shutdown(std::chrono::milliseconds grace) {
  Impl* impl = impl_.get();
  if (impl->stopped) return;
  impl->stopped = true;
  impl->shutting_down.store(true, std::memory_order_release);
  if (impl->acceptor != nullptr) impl->acceptor->Stop();  // no new connections
  if (impl->server != nullptr) {
    // Wait for the calls in flight ourselves (the CQ threads keep running, so they finish),
    // then shut gRPC down with an immediate deadline. Handing gRPC the grace period instead
    // made every shutdown take ~4–5 s while any client kept an idle connection open: gRPC
    // waits out its deadline for connections, not just calls. Scans are not waited for: the
    // client reopens a broken stream after its last row (client.h), and a client that had
    // paused its scanner made every shutdown wait out the whole grace.
    const auto until = std::chrono::steady_clock::now() + grace;
    while (impl->unary_in_flight.load(std::memory_order_acquire) > 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // Refuses new calls, fails the pre-armed requests (their tags come back not ok) and
    // cancels whatever is still running.
    impl->server->Shutdown(std::chrono::system_clock::now());
    // A cancelled scan still finishes its stream (its write fails, then it starts a Finish):
    // wait for every admitted call's last operation, so that none starts on a shut-down queue
    // (gRPC asserts: a SIGTERM during a client's scan aborted the server, rarely).
    const auto drained = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (impl->counters->calls_in_flight.load(std::memory_order_acquire) > 0 &&
           std::chrono::steady_clock::now() < drained) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // Handlers still queued or running finish their calls (cancelled ones complete at once)
  // before the queues shut down: nothing may start an operation on a shut-down queue.
  if (impl->pool != nullptr) impl->pool->Stop();
  for (auto& cq : impl->cqs) cq->Shutdown();
  for (auto& t : impl->threads) t.join();
  impl->threads.clear();
  {
    absl::MutexLock l(&impl->stall_mu);
    impl->stall_stop = true;
  }
  if (impl->stall_watchdog.joinable()) impl->stall_watchdog.join();
  // Every tag has been drained (Next returned false): no call object is left.
  impl->server.reset();
  impl->cqs.clear();
}

}  // namespace basalt::server
