// The gRPC front end of basalt-server: one grpc::Server carrying the Basalt, Admin and Echo
// services, served asynchronously. handler_threads threads each poll their own
// ServerCompletionQueue, on which a request is pre-armed for every method; a handler runs
// inline on the polling thread that received the call (measured on the 2-vCPU machine: an
// async CQ server with inline handlers beat the sync and callback servers, issue 5). Scan is a
// server-streaming state machine (one batch written at a time; a failed write means the client
// went away, and the scan stops).
//
// Admission: calls the server has taken and not finished (streams included) are counted; past
// max_concurrent_calls a new call fails at once with RESOURCE_EXHAUSTED "server busy: N calls
// in flight". Calls still queued inside gRPC for a free handler thread are not counted.
//
// Thread-safety: Start and Shutdown from one thread; the services are called from the
// handler threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "proto/basalt.grpc.pb.h"
#include "src/server/service.h"

namespace basalt::server {

class GrpcServer {
 public:
  struct Options {
    std::string listen = "127.0.0.1:0";
    int handler_threads = 4;
    int max_concurrent_calls = 1000;
    int max_request_bytes = 64 << 20;
  };

  // The services and counters must outlive the server.
  GrpcServer(const Options& options, DataService* data, AdminService* admin, ServerCounters* counters);
  // Shuts down (with no grace) if Shutdown was not called.
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Binds and starts serving. Unavailable when the address cannot be bound.
  absl::Status Start();
  int port() const { return port_; }

  // Stops accepting calls, lets calls in flight finish until `grace` has passed (then cancels
  // them), shuts down and drains the completion queues, and joins the handler threads.
  void Shutdown(std::chrono::milliseconds grace);

  // For the call objects (grpc_server.cc).
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace basalt::server
