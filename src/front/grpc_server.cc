#include "src/front/grpc_server.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "src/base/acceptor.h"
#include "src/front/grpc_calls.h"
#include "transport/grpc/grpc_settings.h"

namespace basalt::server {

using grpc_internal::HandlerPool;
using grpc_internal::ScanCall;

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
  // The method table (grpc_methods.cc), pre-armed on every CQ below.
  grpc_internal::AddDataMethods(impl);
  grpc_internal::AddAdminMethods(impl);
  grpc_internal::AddSnapshotMethods(impl);
  grpc_internal::AddNamespaceMethods(impl);
  grpc_internal::AddPeerMethods(impl);
  grpc_internal::AddSecurityMethods(impl);
  grpc_internal::AddEchoMethod(impl);
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

